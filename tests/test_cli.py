import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_alg_json_keys():
    res = run("alg", "--link", "phase_retrieval", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert abs(data["delta_alg"] - 0.5) < 1e-12
    assert data["easy_dim"] == 0 and data["hard_dim"] == 1 and data["generative_exponent"] == 2


def test_alg_json_inf_and_zero():
    assert json.loads(run("alg", "--link", "parity3", "--json").output)["delta_alg"] == "inf"
    assert json.loads(run("alg", "--link", "sign", "--json").output)["delta_alg"] == 0


def test_alg_table():
    res = run("alg", "--link", "abs")
    assert res.exit_code == 0 and "delta_alg" in res.output and "0.5" in res.output


def test_hermite_table_and_json():
    res = run("hermite", "--activation", "gelu", "--order", "8")
    assert res.exit_code == 0 and "3/(8*sqrt(pi))" in res.output
    data = json.loads(run("hermite", "--link", "he3", "--order", "4", "--json").output)
    assert data["information_exponent"] == 3
    assert data["coefficients"]["z"][3]["value"] == pytest.approx(1.0)


def test_catalog_lists_both_tables():
    res = run("catalog")
    assert res.exit_code == 0 and "gelu" in res.output and "parity3" in res.output
    data = json.loads(run("catalog", "--json").output)
    assert "relu" in data["activations"] and "mixed" in data["links"]


@pytest.mark.parametrize("args, fragment", [
    (("alg", "--link", "__import__('os')"), "unknown function '__import__'"),
    (("alg", "--link", "z**"), "syntax error"),
    (("alg", "--link", "nosuchlink"), "unknown link 'nosuchlink'"),
    (("alg", "--link", "z1**2 + w"), "unknown symbol 'w'"),
    (("hermite", "--activation", "bogus"), "unknown activation 'bogus'"),
    (("hermite", "--activation", "foo(x)"), "unknown function 'foo'"),
    (("hermite",), "exactly one of --activation or --link"),
    (("alg", "--link", "Abs(z1) + z2"), "kinks"),
])
def test_errors_are_one_line_with_exit_code_2(args, fragment):
    res = run(*args)
    assert res.exit_code == 2
    assert fragment in res.output
    assert "Traceback" not in res.output
    assert len([line for line in res.output.strip().splitlines() if line.strip()]) <= 3


def test_spectral_threshold_json():
    data = json.loads(run("spectral", "--link", "phase_retrieval", "--json").output)
    assert abs(data["delta_T"] - 0.5) < 1e-8


def test_spectral_delta_json_and_plot(tmp_path):
    png = tmp_path / "s.png"
    res = run("spectral", "-l", "phase_retrieval", "-d", "2", "--plot", str(png), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert len(data["bulk_edges"]) == 2
    assert data["outliers"][0]["z"] == pytest.approx(0.5, abs=1e-8)
    assert 0 < data["outliers"][0]["overlap2"] < 1
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("args, fragment", [
    (("spectral", "-l", "phase_retrieval", "-p", "y + q"), "unknown symbol 'q'"),
    (("spectral", "-l", "phase_retrieval", "-d", "-1"), "must be a finite number in"),
    (("spectral", "-l", "phase_retrieval", "-d", "inf"), "must be a finite number in"),
    (("spectral", "-l", "phase_retrieval", "-d", "1e-300"), "must be a finite number in"),
    (("spectral", "-l", "phase_retrieval", "--search-max", "inf"), "must be a finite number in"),
    (("spectral", "-l", "noisy_phase_retrieval", "-p", "1/y"), "pole"),
    (("spectral", "-l", "phase_retrieval", "--plot", "x.png"), "--plot needs --delta"),
])
def test_spectral_errors(args, fragment):
    res = run(*args)
    assert res.exit_code != 0
    assert fragment in res.output
    assert "Traceback" not in res.output


def test_validate_writes_report(tmp_path):
    out = tmp_path / "rep"
    res = run("validate", "-a", "tanh", "-l", "abs", "--dims", "40,60", "--delta", "2,10", "--trials", "2",
              "--t0", "5", "--c", "1", "--hessian", "--report", str(out))
    assert res.exit_code == 0, res.output
    text = (out / "report.md").read_text()
    assert "successes / trials" in text and "Predicted delta_alg: 0.5" in text and "lowest (overlap2)" in text
    assert (out / "success.png").stat().st_size > 1000


def test_validate_width_two(tmp_path):
    # m = 2 neurons: same scan, the width printed in the report's setup line, Hessian probe of the
    # 2d x 2d Hessian
    out = tmp_path / "rep"
    res = run("validate", "-a", "tanh", "-l", "abs", "--dims", "40", "--delta", "2,10", "--trials", "2", "--m", "2",
              "--t0", "5", "--c", "1", "--hessian", "--report", str(out))
    assert res.exit_code == 0, res.output
    text = (out / "report.md").read_text()
    assert "m = 2" in text and "successes / trials" in text and "lowest (overlap2)" in text


@pytest.mark.parametrize("args, fragment", [
    (("validate", "-a", "tanh", "-l", "abs", "--delta", "a:b"), "start:stop:step"),
    (("validate", "-a", "relu", "-l", "abs", "--hessian"), "no classical second derivative"),
    (("validate", "-a", "tanh", "-l", "abs", "--dims", "x"), "comma-separated integers"),
])
def test_validate_errors(args, fragment):
    res = run(*args)
    assert res.exit_code == 2 and fragment in res.output and "Traceback" not in res.output


def test_dmft_json_steps(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run("dmft", "-a", "tanh", "-l", "abs", "-d", "4", "--eta", "0.2", "-T", "4", "--paths", "2000", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [s["t"] for s in data["steps"]] == [0, 1, 2, 3, 4]
    assert {"norm2", "overlap_init", "train_loss", "test_loss", "norm2_err"} <= set(data["steps"][0])
    again = run("dmft", "-a", "tanh", "-l", "abs", "-d", "4", "--eta", "0.2", "-T", "4", "--paths", "2000", "--json")
    assert json.loads(again.output)["steps"] == data["steps"]  # served from the cache
    assert list(tmp_path.glob("dmft-*.json"))


def _quad_dmft_with(*option):
    """`thresholds dmft --json` of a short quad run, plain and with ``option``."""
    args = ("dmft", "-a", "quad", "-l", "phase_retrieval", "-d", "4", "--eta", "0.05", "-T", "20", "--paths", "2000",
            "--json")
    return json.loads(run(*args).stdout), json.loads(run(*args, *option).stdout)


def test_dmft_own_term_option(tmp_path, monkeypatch):
    """--own-term reaches the DMFT (dmft eq. (6e)): recorded in the setup, the law changes from step 2 on (the first
    response sums enter the fields at step 1, their own terms from step 2), and pathwise refuses it in one line."""
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    plain, own = _quad_dmft_with("--own-term")
    assert plain["setup"]["own_term"] is False and own["setup"]["own_term"] is True
    assert own["steps"][0]["norm2"] == plain["steps"][0]["norm2"]
    assert own["steps"][-1]["train_loss"] != plain["steps"][-1]["train_loss"]
    bad = run("dmft", "-a", "tanh", "-l", "abs", "-d", "4", "-T", "3", "--paths", "200", "--response", "pathwise",
              "--own-term")
    assert bad.exit_code != 0 and "own-term" in bad.output and "Traceback" not in bad.output, bad.output


def test_dmft_response_noise_option(tmp_path, monkeypatch):
    """--response-noise reaches the DMFT (dmft eq. (6c)): the setup records it, the law changes, 0 is the plain run;
    with a back-end other than sources it is a one-line error."""
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    plain, noisy = _quad_dmft_with("--response-noise", "3")
    assert plain["setup"]["response_noise"] == 0 and noisy["setup"]["response_noise"] == 3
    assert noisy["steps"][-1]["norm2"] != plain["steps"][-1]["norm2"]
    assert noisy["steps"][0]["norm2"] == plain["steps"][0]["norm2"]
    bad = run("dmft", "-a", "tanh", "-l", "abs", "-d", "4", "-T", "3", "--paths", "200", "--response", "pathwise",
              "--response-noise", "1")
    assert bad.exit_code != 0 and "sources" in bad.output and "Traceback" not in bad.output


def test_dmft_divergence_is_one_line():
    res = run("dmft", "-a", "cubic", "-l", "phase_retrieval", "-d", "4", "--eta", "2", "-T", "50",
              "--paths", "2000", "--no-cache")
    assert res.exit_code == 3 and "diverged at step" in res.output and "Traceback" not in res.output


def test_hessian_scan_json(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run("hessian", "-a", "linear", "-l", "abs", "-d", "2,4", "--eta", "0.2", "-T", "3", "--paths", "2000",
              "--replicas", "2", "--json")
    assert res.exit_code == 0, res.output
    scan = json.loads(res.stdout)["scan"]
    assert [s["setup"]["delta"] for s in scan] == [2.0, 4.0]
    assert scan[1]["bulk_edges"][0] == pytest.approx(0.25, abs=1e-9)  # Marchenko-Pastur for linear sigma
    bad = run("hessian", "-a", "relu", "-l", "abs", "-d", "4", "--eta", "0.2", "-T", "3")
    assert bad.exit_code == 2 and "second derivative" in bad.output


def test_validate_sigterm_writes_partial_report(tmp_path):
    # a batch job is stopped with SIGTERM (background shells ignore SIGINT): the partial
    # report must still be written and the exit code must say "interrupted"
    import signal
    import subprocess
    import sys
    import time
    report = tmp_path / "rep"
    proc = subprocess.Popen([sys.executable, "-m", "cli", "validate", "-a", "tanh", "-l", "abs", "--dims", "60",
                             "--delta", "1:40:1", "--trials", "50", "--report", str(report)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(Path(__file__).parent.parent))
    try:
        # the first stderr line is printed once the handler is installed, just before the first run
        # (waiting for it instead of a fixed delay keeps the test independent of the machine's load)
        first = proc.stderr.readline()
        assert b"GD runs" in first, first
        time.sleep(5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # never leave the scan running when an assertion fails
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert (report / "report.md").exists(), out


def test_table_marks_links_without_one_hard_direction(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run("table", "--links", "staircase", "--activations", "gelu", "--json")
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)["rows"][0]
    assert row["link"] == "staircase" and "no hard direction" in row["unsupported"]


def test_nn_with_two_hard_directions_and_two_neurons(tmp_path, monkeypatch):
    # the (m r_H) x (m r_H) = 4 x 4 outlier matrix end to end on a small finite-d law
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run("nn", "-a", "gelu", "-l", "product", "--m", "2", "--law", "gd", "--law-d", "80", "-T", "8", "--eta",
              "0.05", "--replicas", "2", "--search-max", "2", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["setup"]["m"] == 2 and out["setup"]["link"] == "product"
    assert all(math.isfinite(v) for e in out["evaluations"] for v in e["indicator"])


def test_dmft_json_reports_easy_overlaps(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run("dmft", "-a", "gelu", "-l", "mixed", "-d", "4", "--eta", "0.2", "-T", "5", "--paths", "2000",
              "--replicas", "2", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["easy_basis"] == [[1.0, 0.0]]
    last = data["steps"][-1]
    assert len(last["signal"]) == 1 and last["signal"][0][0] > 0.1  # M(5) ~ 0.35: the easy direction is learned
    # replica mean of M^2 against the square of the replica mean of M: equal up to the replica spread
    assert last["easy_overlap"] == pytest.approx(last["signal"][0][0] ** 2, rel=0.02)


def test_validate_refuses_a_link_without_hard_direction(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run("validate", "-a", "gelu", "-l", "staircase", "--dims", "50", "--delta", "2", "--trials", "1",
              "--report", str(tmp_path / "r"))
    assert res.exit_code == 2 and "no hard direction" in res.output and "Traceback" not in res.output


def test_json_output_is_strict_json():
    res = run("alg", "--link", "z", "--json")  # lambda_max(F) is nan for an easy link
    assert res.exit_code == 0, res.output

    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")
    data = json.loads(res.output, parse_constant=refuse)
    assert data["delta_alg"] == 0 and data["lambda_max_F"] is None


def test_error_messages_are_plain_short_text():
    res = run("alg", "--link", "[bold red]zz:b:")
    assert res.exit_code == 2 and "[bold red]zz:b:" in res.output and "\U0001f171" not in res.output
    res = run("alg", "--link", "a" * 100_000)
    assert res.exit_code == 2 and len(res.output) < 500 and res.output.count("\n") <= 1


@pytest.mark.parametrize("args, fragment, code", [
    (("dmft", "-a", "tanh", "-l", "abs", "-d", "4", "--eta", "0.2", "-T", "3", "--seed", "-1"), "--seed", 2),
    (("dmft", "-a", "tanh", "-l", "abs", "-d", "4", "--eta", "0.2", "-T", "3", "--rho0", "nan"), "finite", 2),
    (("hessian", "-a", "tanh", "-l", "abs", "-d", "1:1e9:1", "--eta", "0.2", "-T", "3"), "at most 1000", 2),
    (("nn", "-a", "quad", "--scan", "rho0=1:2:1000000000"), "at most 1000", 2),
    (("validate", "-a", "gelu", "-l", "phase_retrieval", "--t0", "-1e9", "--dims", "20", "--delta", "2",
      "--trials", "1", "--report", "{tmp}/r"), "at least one step", 2),
    (("validate", "-a", "gelu", "-l", "phase_retrieval", "--eta", "nan", "--dims", "20", "--delta", "2",
      "--trials", "1", "--report", "{tmp}/r"), "finite", 2),
    (("spectral", "-l", "phase_retrieval", "-d", "2", "--plot", "/dev/full"), "cannot write", 2),
    (("spectral", "-l", "phase_retrieval", "-d", "2", "--plot", "{tmp}/no/such/folder.png"), "cannot write", 2),
    (("table", "--activations", ""), "at least one name", 2),
    (("nn", "-a", "quad", "--law", "gd", "--edge-d", "1000"), "edge_d applies to the DMFT law", 2),
    (("nn", "-a", "quad", "--law", "gd", "--own-term"), "own_term applies to the DMFT law", 2),
    (("nn", "-a", "quad", "--law", "gd", "--settled-labels"), "settled_labels applies to the DMFT law", 2),
    (("nn", "-a", "quad", "--m", "2", "--a", "1,2", "--law", "dmft", "--settled-labels"), "depends on the direction", 2),
    (("dmft", "-a", "quad", "-l", "phase_retrieval", "-d", "2", "-T", "3", "--label-cap", "0.1"), "keeps", 2),
])
def test_bad_option_values_are_one_line_errors(args, fragment, code, tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert res.exit_code == code and fragment in res.output and "Traceback" not in res.output, res.output


def test_gd_divergence_in_validate_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = run("validate", "-a", "gelu", "-l", "phase_retrieval", "--eta", "5", "--dims", "20", "--delta", "2",
              "--trials", "1", "--report", str(tmp_path / "r"))
    assert res.exit_code == 3 and "diverged" in res.output and "lower the step size" in res.output


def test_one_option_vocabulary_with_the_old_spellings_accepted_for_one_release():
    from cli import DEPRECATED, modernize
    args, notes = modernize(["validate", "--d", "40,60", "--deltas=2,10", "--", "--d"])
    assert args == ["validate", "--dims", "40,60", "--delta=2,10", "--", "--d"]
    assert len(notes) == 2 and all("deprecated" in n for n in notes)
    # the new spellings exist on the commands that take dimensions or sample ratios, the old ones do not
    for command in ("validate", "grok"):
        text = run(command, "--help").output
        assert "--dims" in text and "--delta" in text and "--d " not in text and "--deltas" not in text
    assert set(DEPRECATED.values()) == {"--dims", "--delta"}
    # an old spelling still runs (the bad value proves the option reached the command), with the note on stderr
    res = CliRunner().invoke(main, ["validate", "-a", "tanh", "-l", "abs", "--d", "x"])
    assert res.exit_code == 2 and "--dims 'x'" in res.stderr and "--d is deprecated" in res.stderr, res.stderr


def test_commands_share_the_training_defaults():
    # a default `validate` run lands in the default `table`: the same eta, rho0, a, b, weight decay
    from thresholds.problem import Problem
    defaults = Problem("gelu")
    for command in ("validate", "nn", "table", "grok", "dmft", "hessian"):
        params = {p.name: p.default for p in main.commands[command].params}
        assert (params["eta"], params["rho0"], params["a_"], params["b_"], params["weight_decay"]) == \
            (defaults.eta, defaults.rho0, defaults.a, defaults.b, defaults.weight_decay), command


def test_tables_at_80_columns_split_instead_of_cutting_values(monkeypatch):
    import cli
    from rich.console import Console
    from rich.table import Table
    narrow = Console(width=80, record=True, emoji=False)
    monkeypatch.setattr(cli, "console", narrow)
    values = [f"{v:.6g} (+- 1.2e-05)" for v in (0.723451, 1.43052, 0.98765, 1.5, 0.91)]
    table = Table(title="five value columns")
    for col in ("t", "||theta||^2", "<theta^t,theta^0>", "train loss", "test loss", "|M|^2 (easy overlap)"):
        table.add_column(col)
    table.add_row("400", *values)
    cli.print_table(table)
    text = narrow.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text and all(v in text for v in values)  # every value whole, on one line
    assert text.count("400") >= 2  # the key column is repeated in every part


def test_nn_edge_d_takes_data_sets_of_the_stated_sample_size(tmp_path, monkeypatch):
    """`nn --law dmft --edge-d D`: the setup records D, the notes say how many data sets of n = delta D paths the
    plain indicator averages, and it differs from the run on all paths (the DMFT law is the same, cached once)."""
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    base = ["nn", "-a", "quad", "--eta", "0.05", "-T", "16", "--law", "dmft", "--paths", "8000", "--replicas", "2",
            "--source-tol", "1e-3", "--search-max", "8", "--json"]
    plain, cut = run(*base, "--edge-d", "0"), run(*base, "--edge-d", "20")
    assert plain.exit_code == 0 and cut.exit_code == 0, cut.output
    p, c = json.loads(plain.stdout), json.loads(cut.stdout)
    assert c["setup"]["edge_d"] == 20 and p["setup"]["edge_d"] == 0
    ip = {e["delta"]: e["indicator"][-1] for e in p["evaluations"]}
    both = [(ip[e["delta"]], e["indicator"][-1]) for e in c["evaluations"] if e["delta"] in ip]
    assert both and all(abs(a - b) > 1e-9 for a, b in both)
    assert not any("use at least" in n for n in c["notes"])
    far = run(*base, "--edge-d", "2000")  # n = delta * 2000 samples: more than the 4000 paths of a replica
    assert far.exit_code == 0 and any("use at least" in n for n in json.loads(far.stdout)["notes"])


def test_nn_dmft_law_defaults_to_the_unbiased_basis_and_the_edge_of_law_d(tmp_path, monkeypatch):
    """`nn --law dmft` without --source-tol / --edge-d / --paths: the truncated source basis (1e-3), the plain
    indicator over data sets of n = delta * LAW_D paths, and auto paths (NNSetup.paths_at: 4 data sets per
    replica), so that it answers the question of the GD law; explicit values are kept."""
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    base = ["nn", "-a", "quad", "--eta", "0.05", "-T", "8", "--law", "dmft", "--replicas", "2", "--law-d", "50",
            "--search-max", "8", "--json"]
    res = run(*base)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["setup"]["source_tol"] == 1e-3 and out["setup"]["edge_d"] == 50 and out["setup"]["paths"] == 0
    delta = out["path_check"]["delta"]   # auto paths: 20000, or 4 data sets of n = 50 delta per replica
    assert out["path_check"]["paths"] == max(20000, 2 * 4 * round(50 * delta))
    assert not any("use at least" in n for n in out["notes"])
    res = run(*base, "--paths", "4000", "--source-tol", "0", "--edge-d", "0")
    assert res.exit_code == 0, res.output
    setup = json.loads(res.stdout)["setup"]
    assert (setup["paths"], setup["source_tol"], setup["edge_d"]) == (4000, 0.0, 0)
    res = run(*base, "--paths", "8")
    assert res.exit_code == 2 and "--paths must be 0 (auto) or at least 16" in res.output and "Traceback" not in res.output


def test_dmft_label_cap_option(tmp_path, monkeypatch):
    """--label-cap reaches the DMFT (dmft eq. (10d)): recorded in the setup, the law changes (its labels past the cap
    are redrawn), and the notes count the rejected paths; 0 is the plain run."""
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    plain, capped = _quad_dmft_with("--label-cap", "3")
    assert plain["setup"]["label_cap"] == 0 and capped["setup"]["label_cap"] == 3
    assert capped["steps"][-1]["train_loss"] != plain["steps"][-1]["train_loss"]
    assert any("labels conditioned on y <= 3" in n for n in capped["notes"])
    assert not any("labels conditioned" in n for n in plain["notes"])

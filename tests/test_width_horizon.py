import json

import pytest
from click.testing import CliRunner

from tests.test_settle import settle_line
from validation.width_horizon import finite_d_brackets, gather, main, table


def gd_run(m, delta, d, *z, steps=(600, 30000)):
    """A validation.settled_hessian record of one run: z_H at each checkpoint (nan: no hard outlier)."""
    return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": m, "delta": delta, "d": d, "seed": 0,
            "period_two": False, "points": [{"step": s, "z_H": v} for s, v in zip(steps, z)]}


def test_the_width_table_reads_the_last_checkpoint_and_each_d_alone():
    # width 2: the d = inf indicator changes sign between 35 and 40 at step 100 (-0.01, +0.01: 37.5) and at 35 at
    # step 200; GD at d = 200 bounded at 10 (an outlier at step 600 only, |z_H| 0.001: L = 0 and a tail far below
    # log sqrt(200)) and staying at 20; at d = 400 staying at 20, nothing below
    lines = [settle_line(30.0, 880000, [(100, -0.03, 0.001), (200, -0.02, 0.001)]),
             settle_line(35.0, 880000, [(100, -0.01, 0.001), (200, 0.0, 0.001)]),
             settle_line(40.0, 880000, [(100, 0.01, 0.001), (200, 0.02, 0.001)])]
    rows = [gd_run(2, 10.0, 200, -0.001, float("nan")), gd_run(2, 20.0, 200, -0.05, -0.04),
            gd_run(2, 20.0, 400, -0.05, -0.04), gd_run(4, 6.0, 200, -0.05, -0.04)]
    assert finite_d_brackets(rows, 2) == {200: (10.0, 20.0), 400: (None, 20.0)}
    widths = gather({2: lines}, rows, 400)
    assert [w.m for w in widths] == [2, 4]                       # a width with GD runs only has no d = inf column
    two, four = widths
    assert two.deltas == [30.0, 35.0, 40.0] and [s for s, _ in two.by_step] == [100, 200]
    assert two.by_step[0][1].value == pytest.approx(37.5) and two.last[1].value == pytest.approx(35.0)
    assert four.last is None and four.brackets == {200: (None, 6.0)}
    text = table(widths, 400)
    name = "Hessian verdicts of GD's first phase"
    assert text[0].endswith(f"| {name}, d = 200 | {name}, d = 400 |")
    assert text[2].startswith("| 2 | 35.00 [") and text[2].endswith("| 200 | 30, 35, 40 | [10, 20] | <= 20 |")
    assert text[3] == "| 4 | - | - | - | <= 6 | - |"


def test_the_command_writes_the_table_and_the_figure_and_refuses_bad_input(tmp_path):
    settle = tmp_path / "s.jsonl"
    settle.write_text("".join(json.dumps(settle_line(delta, 880000, [(100, f, 0.001), (200, f + 0.01, 0.001)])) + "\n"
                              for delta, f in ((30.0, -0.02), (40.0, 0.02))))
    runs = tmp_path / "r.jsonl"
    runs.write_text(json.dumps(gd_run(2, 20.0, 200, -0.05, -0.04)) + "\n")
    png, md = tmp_path / "f.png", tmp_path / "t.md"
    res = CliRunner().invoke(main, ["--settle", f"2={settle}", "--settled", str(runs), "--out", str(png),
                                    "--markdown", str(md)])
    assert res.exit_code == 0, res.output
    assert png.stat().st_size > 10000 and md.read_text().splitlines()[2].startswith("| 2 | 32.50 [")   # -0.01 -> +0.03
    for args, words in ((["--settle", "two=x"], "expected M=FILE"), (["--settle", f"2={tmp_path / 'no'}"], "no such"),
                        (["--settle", f"2={settle}", "--settle", f"2={settle}"], "one file per width"),
                        (["--settle", f"2={runs}"], "not a validation.settle record"),
                        (["--settled", str(settle)], "not a validation.settled_hessian record"),
                        ([], "nothing to show")):
        res = CliRunner().invoke(main, args)
        assert res.exit_code != 0 and words in res.output and "Traceback" not in res.output, (args, res.output)
    broken = tmp_path / "broken.jsonl"   # the fields there, a checkpoint without its cut
    broken.write_text(json.dumps({"delta": 30.0, "paths": 1, "replicas": 1, "checkpoints": [{"step": 1}]}) + "\n"
                      + json.dumps({"delta": 40.0, "paths": 1, "replicas": 1, "checkpoints": [{"step": 1}]}) + "\n")
    res = CliRunner().invoke(main, ["--settle", f"2={broken}"])
    assert res.exit_code != 0 and "malformed" in res.output and "Traceback" not in res.output, res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    res = CliRunner().invoke(main, ["--settled", str(bad)])
    assert res.exit_code != 0 and "not a records file" in res.output


def test_the_detached_rule_reads_gd_brackets_from_the_lowest_eigenvalue_alone(tmp_path):
    # width 4 at d = 400, two deltas: at 10 the hard eigenvalue -0.04 stays but has bulk eigenvalues below it at both
    # checkpoints; at 20 it is the lowest at both.  Eq. (1): <= 10; eq. (1'): [10, 20], and the header says so
    def run(delta, lowest_is_hard):
        vals, ovs = ([-0.06, -0.05, 0.2], [0.3, 0.0, 0.0]) if lowest_is_hard else ([-0.09, -0.05, 0.2], [0.0, 0.1, 0.0])
        pts = [{"step": s, "eigenvalues": vals, "overlaps": ovs, "z_H": vals[0] if lowest_is_hard else -0.05}
               for s in (600, 30000)]
        return {**gd_run(4, delta, 400), "points": pts}
    rows = [run(10.0, False), run(20.0, True)]
    assert gather({}, rows, 400)[0].brackets == {400: (None, 10.0)}
    assert gather({}, rows, 400, "detached")[0].brackets == {400: (10.0, 20.0)}
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(main, ["--settled", str(path), "--rule", "detached"])
    assert res.exit_code == 0, res.output
    header = res.output.splitlines()[0]
    assert header.endswith("| Hessian verdicts of GD's first phase, outlier left of the bulk, d = 400 |")
    assert res.output.splitlines()[2] == "| 4 | - | - | - | [10, 20] |"
    no_spectra = tmp_path / "z.jsonl"   # records without the spectra eq. (1') reads
    no_spectra.write_text(json.dumps(gd_run(4, 10.0, 400, -0.05, -0.05)) + "\n")
    res = CliRunner().invoke(main, ["--settled", str(no_spectra), "--rule", "detached"])
    assert res.exit_code != 0 and "malformed" in res.output and "Traceback" not in res.output, res.output


def _release(m, delta, d, learned, t1=10000, seed=0):
    return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": m, "delta": delta, "d": d, "seed": seed,
            "t1": t1, "steps": 30000, "scale": 1.0, "learned": learned}


def test_released_brackets_are_where_half_the_runs_learn(tmp_path):
    from validation.width_horizon import released_bracket
    # 12: 2 of 5 learn, 16: 4 of 5, 20: 5 of 5 -> [12, 16]; a delta above the crossing with fewer than half learned
    # moves high up past it; nothing learned -> no high end; every delta learned -> no low end
    runs = [_release(1, 12.0, 400, k < 2, seed=k) for k in range(5)] + \
           [_release(1, 16.0, 400, k < 4, seed=k) for k in range(5)] + [_release(1, 20.0, 400, True)]
    assert released_bracket(runs) == (12.0, 16.0)
    assert released_bracket(runs + [_release(1, 24.0, 400, False), _release(1, 28.0, 400, True)]) == (24.0, 28.0)
    assert released_bracket([_release(1, 8.0, 400, False)]) == (None, None)
    assert released_bracket([_release(1, 8.0, 400, True), _release(1, 4.0, 400, True)]) == (None, 4.0)
    # the table and the figure: a released column per d, only the runs released at --release-t1 with scale 1
    rows = runs + [_release(1, 12.0, 800, False), _release(1, 16.0, 800, True), _release(2, 8.0, 800, True),
                   _release(1, 8.0, 400, True, t1=600), {**_release(1, 8.0, 400, True), "scale": 0.0}]
    path = tmp_path / "rel.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    png = tmp_path / "f.png"
    res = CliRunner().invoke(main, ["--released", str(path), "--out", str(png)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].endswith("| GD released at t1 = 10000, d = 400 | GD released at t1 = 10000, d = 800 |")
    assert lines[2] == "| 1 | - | - | - | [12, 16] | [12, 16] |" and lines[3] == "| 2 | - | - | - | - | <= 8 |"
    assert png.stat().st_size > 10000
    res = CliRunner().invoke(main, ["--released", str(path), "--release-t1", "600"])
    assert res.exit_code == 0 and res.output.splitlines()[2] == "| 1 | - | - | - | <= 8 |"
    res = CliRunner().invoke(main, ["--released", str(tmp_path / "none.jsonl")])
    assert res.exit_code != 0 and "no such file" in res.output and "Traceback" not in res.output

import math

import numpy as np
import pytest

from validation.settled_hessian import bulk_low, hard_outlier, log_growth, run_one, summary
from validation.simulate import hessian_probe, hessian_spectrum


def test_log_growth_integrates_a_power_law_exactly():
    # eq. (2) on z_H = -c t^-p: L(t_k) = eta c (t_k^(1-p) - t_1^(1-p)) / (1 - p), tail eta c t_K^(1-p) / (p - 1)
    eta, c, p = 0.05, 2.0, 1.5
    t = np.array([100.0, 300.0, 1000.0, 5000.0])
    L, tail = log_growth(t, -c * t ** -p, eta)
    assert L == pytest.approx(eta * c * (t ** (1 - p) - t[0] ** (1 - p)) / (1 - p), rel=1e-12)
    assert tail == pytest.approx(eta * c * t[-1] ** (1 - p) / (p - 1), rel=1e-12)
    # p = 1: a logarithm, and a tail that diverges; p < 1 too
    L, tail = log_growth(t, -c / t, eta)
    assert L[-1] == pytest.approx(eta * c * math.log(t[-1] / t[0]), rel=1e-12) and math.isinf(tail)
    assert math.isinf(log_growth(t, -c * t ** -0.5, eta)[1])
    # a constant outlier grows linearly in t
    L, _ = log_growth(t, [-0.1] * 4, eta)
    assert L == pytest.approx(eta * 0.1 * (t - t[0]), rel=1e-12)


def test_log_growth_without_an_outlier_adds_nothing():
    L, tail = log_growth([10, 20, 40], [-0.2, math.nan, -0.1], 0.1)
    assert list(L) == [0.0, 0.0, 0.0] and math.isnan(tail)
    L, tail = log_growth([10, 20, 40], [-0.2, -0.2, math.nan], 0.1)
    assert L[1] == pytest.approx(0.1 * 0.2 * 10) and L[2] == L[1] and math.isnan(tail)


def test_hard_outlier_and_bulk_low_read_the_overlaps():
    vals, ovs = [-0.3, -0.2, -0.1, 0.0, 0.5], [0.01, 0.4, 0.3, 0.9, 0.0]
    assert hard_outlier(vals, ovs) == (-0.2, 0.4)
    assert bulk_low(vals, ovs) == -0.3
    assert all(math.isnan(v) for v in hard_outlier([-0.1, 0.2], [0.0, 0.9]))   # the hard weight is at 0.2 > 0


def test_detached_rule_counts_only_a_hard_eigenvalue_left_of_the_bulk():
    from thresholds.errors import ThresholdsError
    vals, ovs = [-0.3, -0.2, -0.1, 0.0, 0.5], [0.01, 0.4, 0.3, 0.9, 0.0]
    assert all(math.isnan(v) for v in hard_outlier(vals, ovs, "detached"))   # -0.2 has -0.3 of the bulk below it
    assert hard_outlier([-0.4] + vals, [0.06] + ovs, "detached") == (-0.4, 0.06)
    assert all(math.isnan(v) for v in hard_outlier([0.1, 0.2], [0.9, 0.9], "detached"))   # not negative
    with pytest.raises(ThresholdsError, match="unknown rule"):
        hard_outlier(vals, ovs, "lowest")


def test_under_rule_turns_an_in_bulk_outlier_into_none_and_the_verdict_with_it(tmp_path, capsys):
    # a run whose hard eigenvalue -0.05 stays (R = eta |z| t grows from 3 to 150) but sits above a bulk eigenvalue
    # at the second checkpoint: by eq. (1') it has an outlier at the first checkpoint alone, grows by L = 0 < log
    # sqrt(200) and is bounded; the record itself keeps eq. (1)'s z_H
    from validation import records
    from validation.settled_hessian import main, under_rule, verdict

    def point(step, vals, ovs):
        return {"step": step, "eigenvalues": vals, "overlaps": ovs, "z_H": hard_outlier(vals, ovs)[0],
                "overlap2": hard_outlier(vals, ovs)[1], "train_loss": 0.9, "lambda_B": bulk_low(vals, ovs),
                "negative": sum(v < 0 for v in vals)}
    rec = {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": 4, "delta": 20.0, "d": 200, "seed": 0,
           "period_two": False, "points": [point(600, [-0.05, -0.01, 0.2], [0.3, 0.0, 0.0]),
                                           point(30000, [-0.08, -0.05, 0.1], [0.001, 0.12, 0.0])]}
    assert verdict(rec) == "stays"
    (det,) = under_rule([rec], "detached")
    assert [p["z_H"] for p in det["points"]][0] == -0.05 and math.isnan(det["points"][1]["z_H"])
    assert verdict(det) == "bounded" and rec["points"][1]["z_H"] == -0.05
    assert under_rule([rec], "weighted") == [rec]
    out = tmp_path / "r.jsonl"
    records.append(out, rec)
    main(["--summary", str(out), "--brackets"])
    assert capsys.readouterr().out.splitlines()[-1].endswith("| 20: 1 / 0 / 0 | <= 20 |")
    main(["--summary", str(out), "--brackets", "--rule", "detached"])
    assert capsys.readouterr().out.splitlines()[-1].endswith("| 20: 0 / 0 / 1 | - |")
    late = {**rec, "points": rec["points"][::-1]}   # the detached outlier at the last checkpoint alone: undecided
    late["points"] = [{**p, "step": s} for p, s in zip(late["points"], (600, 30000))]
    records.append(out, {**late, "delta": 30.0})
    main(["--summary", str(out), "--brackets", "--rule", "detached"])
    assert capsys.readouterr().out.splitlines()[-1].endswith("| 20: 0 / 0 / 1; 30: 0 / 0 / 0 (1 ?) | - |")


def test_hessian_spectrum_from_preactivations_is_the_probe_and_its_dense_blocks_agree_with_lanczos():
    rng = np.random.default_rng(5)
    n, d, m = 400, 30, 3
    X = rng.standard_normal((n, d))
    y = X[:, 0] ** 2
    Theta = rng.standard_normal((d, m)) / np.sqrt(d)
    a, b = np.array([1.0, -0.5, 2.0]), np.array([0.1, 0.0, -0.3])
    probe = hessian_probe(X, y, Theta, "gelu", a=a, b=b, count=4, dense_below=10_000)
    spec = hessian_spectrum(X, y, X @ Theta, "gelu", a=a, b=b, count=4, dense_below=10_000)
    lanczos = hessian_spectrum(X, y, X @ Theta, "gelu", a=a, b=b, count=4, dense_below=0)
    assert spec == probe
    for key in ("lowest", "highest"):
        for (v1, o1), (v2, o2) in zip(spec[key], lanczos[key]):
            assert v1 == pytest.approx(v2, abs=1e-7)
            assert o1 == pytest.approx(o2, abs=1e-5)
    # the count of negative eigenvalues against a plain NumPy matrix (entries of THEORY.md section 2)
    from thresholds.catalog import get_activation
    act = get_activation("gelu")
    U = X @ Theta + b
    s1, s2 = act.numpy(1)(U), act.numpy(2)(U)
    f = np.mean(a * act.numpy(0)(U), axis=1)
    H = np.zeros((d * m, d * m))
    for i in range(n):
        W = np.outer(a * s1[i], a * s1[i]) / m - np.diag((y[i] - f[i]) * a * s2[i])
        H += np.kron(np.outer(X[i], X[i]), W) / n       # index (coordinate, neuron), as v.reshape(d, m)
    vals = np.linalg.eigvalsh(H)
    assert spec["negative"] == int(np.sum(vals < 0))
    assert spec["lowest"][0][0] == pytest.approx(vals[0], abs=1e-10)


def test_one_gd_run_records_sorted_spectra_and_its_table():
    rec = run_one("quad", "phase_retrieval", 0.05, 2, 2.0, 40, [20, 80], seed=0)
    assert [p["step"] for p in rec["points"]] == [20, 80]
    for p in rec["points"]:
        assert np.all(np.diff(p["eigenvalues"]) >= -1e-12)
        assert all(0.0 <= o <= 1.0 + 1e-12 for o in p["overlaps"])
        assert p["negative"] >= sum(v < 0 for v in p["eigenvalues"])
        assert p["loss_decay"] > 0          # evaluation eq. (5) on GD's falling train loss
        assert (p["z_H"], p["overlap2"]) == pytest.approx(hard_outlier(p["eigenvalues"], p["overlaps"]), nan_ok=True)
    # the train loss of the first phase falls (complement GD on labels it cannot predict)
    assert rec["points"][1]["train_loss"] < rec["points"][0]["train_loss"]
    lines = summary([rec, {**rec, "seed": 1}])
    assert len(lines) == 2 + 2 + 1 and "| 80 |" in lines[3] and "tail past 80" in lines[4]


def test_cached_loss_decays_reads_the_head_of_a_cached_dmft_run():
    from thresholds import cache
    from thresholds.dmft import DMFTSetup, solve_dmft
    from thresholds.evaluation import loss_decay
    from validation.settled_hessian import cached_loss_decays
    with cache.empty():
        res = solve_dmft(DMFTSetup("quad", "phase_retrieval", delta=3.0, eta=0.05, steps=40, m=2, paths=2000,
                                   replicas=2, response="sources", source_tol=1e-3), cache=True)
        (row,) = cached_loss_decays("quad", 0.05)
        assert cached_loss_decays("gelu", 0.05) == [] and cached_loss_decays("quad", 0.1) == []
    assert (row["m"], row["delta"], row["steps"], row["paths"]) == (2, 3.0, 40, 2000) and not row["settled_labels"]
    assert row["a"] == loss_decay(res.train_loss) and row["loss"] == res.train_loss[-1]


def test_run_resumes_only_runs_with_the_same_checkpoints(tmp_path):
    from validation import records
    from validation.settled_hessian import run
    out = tmp_path / "r.jsonl"
    run("quad", "phase_retrieval", 0.05, [2], [2.0], [30], [10, 20], 1, out, log=lambda s: None)
    run("quad", "phase_retrieval", 0.05, [2], [2.0], [30], [20, 10], 1, out, log=lambda s: None)   # done already
    assert len(records.read(out)) == 1
    run("quad", "phase_retrieval", 0.05, [2], [2.0], [30], [10, 40], 1, out, log=lambda s: None)   # other checkpoints
    assert [[p["step"] for p in r["points"]] for r in records.read(out)] == [[10, 20], [10, 40]]


def test_first_seed_runs_the_same_gd_run_as_the_full_list(tmp_path):
    from validation import records
    from validation.settled_hessian import main
    both, alone = tmp_path / "both.jsonl", tmp_path / "alone.jsonl"
    common = ["-a", "quad", "--eta", "0.05", "--m", "2", "--delta", "2", "--dims", "30", "--steps", "10,20"]
    main(common + ["--seeds", "2", "--out", str(both)])
    main(common + ["--seeds", "1", "--first-seed", "1", "--out", str(alone)])
    (second,) = records.read(alone)
    first, twin = records.read(both)
    assert (first["seed"], twin["seed"], second["seed"]) == (0, 1, 1)
    assert second["points"] == twin["points"] and second["points"] != first["points"]


def test_settled_bracket_reads_which_outliers_stay():
    from validation.settled_hessian import settled_bracket, verdict

    def rec(delta, *z, steps=(600, 30000), period_two=False, d=200):
        return {"eta": 0.05, "delta": delta, "d": d, "period_two": period_two,
                "points": [{"step": s, "z_H": v} for s, v in zip(steps, z)]}
    nan = math.nan
    # |z_H| 0.015 -> 1e-4 over 600 -> 30000: p = log(150) / log(50) = 1.28, L = eta 0.015 600 (1 - 50^(1 - p)) /
    # (p - 1) = 1.07 and a tail eta 1e-4 30000 / (p - 1) = 0.54: 1.6 < log sqrt(200) = 2.65, bounded
    rows = [rec(1.5, -0.005, -1e-6), rec(1.5, -0.004, nan), rec(2.0, -0.015, -1e-4), rec(2.0, -0.015, -5e-5),
            rec(2.5, -0.04, -0.015), rec(2.5, -0.04, -0.01), rec(3.0, -0.1, -0.07), rec(3.0, -0.1, nan, period_two=True)]
    assert [verdict(r) for r in rows[:7]] == ["bounded"] * 4 + ["stays"] * 3
    assert settled_bracket(rows) == (2.0, 2.5)     # the orbit is left out
    rows[3] = rec(2.0, -0.015, -0.001)              # one run of delta 2 keeps its outlier: undecided there
    assert settled_bracket(rows) == (1.5, 2.5)
    assert settled_bracket(rows[:2]) == (1.5, None) and settled_bracket(rows[4:6]) == (None, 2.5)
    # |z_H| 0.015 -> 2e-4: p = 1.10, the tail eta 2e-4 30000 / 0.10 = 2.9 takes the growth past log sqrt(200); at
    # d = 10^6 (log sqrt(d) = 6.9) the same run is bounded
    assert verdict(rec(2.0, -0.015, -2e-4)) == "escapes" and verdict(rec(2.0, -0.015, -2e-4, d=10**6)) == "bounded"
    # an outlier gone by the last checkpoint after growing by e^12.6 over 600 -> 10^4 (p = 0.33): GD escapes first
    late = rec(2.0, -0.05, -0.02, nan, steps=(600, 10000, 30000))
    assert verdict(late) == "escapes"
    assert settled_bracket([late, rec(1.5, -0.004, nan)]) == (1.5, 2.0)
    assert verdict(rec(2.0, nan, -0.01)) == "?"     # an outlier that appears only at the end


def test_tables_keep_runs_with_other_checkpoints_apart():
    # two runs of one setup with different checkpoints: two rows, eq. (2) of each on its own steps (a constant z_H
    # gives L = eta |z| (t_K - t_1))
    from validation.settled_hessian import compact, summary

    def rec(steps, seed):
        return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": 2, "delta": 30.0, "d": 400,
                "seed": seed, "period_two": False,
                "points": [{"step": s, "z_H": -0.01, "overlap2": 0.3, "train_loss": 0.9, "lambda_B": 0.001,
                            "negative": 1} for s in steps]}
    rows = [rec([600, 3000], 0), rec([600, 3000, 100000], 1)]
    lines = [x for x in compact(rows) if x.startswith("| 2 |")]
    assert [x.split(" | ")[3] for x in lines] == ["600-3000", "600-100000"]
    assert [x.split(" | ")[9] for x in lines] == [f"{0.1 * 0.01 * 2400:.2f}", f"{0.1 * 0.01 * 99400:.2f}"]
    assert all(x.endswith("| 1 / 0 / 0 |") for x in lines)
    assert sum("tail past" in x for x in summary(rows)) == 2


def test_brackets_table_reads_each_d_alone():
    # one width at two d: at d = 200 delta 2 is bounded and 2.5 stays ([2, 2.5]); at d = 400 delta 2 stays (<= 2)
    from validation.settled_hessian import brackets

    def rec(delta, d, *z):
        return {"activation": "quad", "link": "phase_retrieval", "eta": 0.05, "m": 4, "delta": delta, "d": d,
                "period_two": False,
                "points": [{"step": s, "z_H": v} for s, v in zip((600, 30000), z)]}
    rows = [rec(2.0, 200, -0.015, -1e-4), rec(2.5, 200, -0.04, -0.015), rec(2.0, 400, -0.04, -0.02)]
    lines = brackets(rows)
    assert lines[2:] == ["| 4 | 200 | 600-30000 | 2: 0 / 0 / 1; 2.5: 1 / 0 / 0 | [2, 2.5] |",
                         "| 4 | 400 | 600-30000 | 2: 1 / 0 / 0 | <= 2 |"]

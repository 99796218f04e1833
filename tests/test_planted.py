"""A planted hard overlap: the d = inf DMFT from an informed start (thresholds.dmft, eq. (7)) against GD
started from the same overlap, and the refusals."""

import math

import numpy as np
import pytest

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.errors import UnsupportedError
from validation.simulate import GDSetup, run_gd


def test_gd_starts_from_the_planted_overlap():
    res = run_gd(GDSetup("quad", "phase_retrieval", 3.0, 300, 0.05, 0, complement=False, planted=0.3, seed=1,
                         test_loss=False))
    assert res.hard_overlap[0] == pytest.approx(0.09, rel=1e-12)
    mixed = run_gd(GDSetup("gelu", "mixed", 3.0, 300, 0.05, 0, complement=False, planted=-0.2, seed=1,
                           test_loss=False))
    assert mixed.hard_overlap[0] == pytest.approx(0.04, rel=1e-12)  # the easy coordinate keeps its draw


def test_planted_dmft_follows_gd_through_the_escape():
    """quad / phase retrieval, delta 5, eta 0.05, M_H(0) = 0.2: the hard fraction rises from 0.04 to about
    0.75 by step 25 and 0.98 by step 50.  DMFT (4 x 10k paths) against GD at d = 1000 (4 seeds): within
    4 combined standard errors plus 0.02 for the O(d^-1/2) finite-size effects (at d = 2000 the same
    numbers were 0.742 +- 0.038 against 0.748 +- 0.029 for the DMFT at step 25)."""
    T = 50
    res = solve_dmft(DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, T, paths=40000, replicas=4, planted=0.2))
    assert res.hard_overlap[0] == pytest.approx(0.04)
    assert res.hard_fraction[0] == pytest.approx(0.04 / 1.04)
    runs = [run_gd(GDSetup("quad", "phase_retrieval", 5.0, 1000, 0.05, T, complement=False, planted=0.2, seed=s,
                           test_loss=False)) for s in range(4)]
    frac = np.array([r.hard_overlap / r.norm2 for r in runs])
    for t in (10, 25, 50):
        gd, gd_se = frac[:, t].mean(), frac[:, t].std(ddof=1) / 2
        tol = 4 * np.hypot(gd_se, res.hard_fraction_err[t]) + 0.02
        assert abs(res.hard_fraction[t] - gd) < tol, (t, res.hard_fraction[t], gd, tol)
    assert res.hard_fraction[25] > 0.5 > res.hard_fraction[10]  # the escape happens in this window
    norm = np.array([r.norm2 for r in runs])[:, T]
    assert abs(res.norm2[T] - norm.mean()) < 4 * np.hypot(norm.std(ddof=1) / 2, res.norm2_err[T]) + 0.02
    steps = res.to_json()["steps"]
    assert steps[T]["hard_fraction"] == pytest.approx(res.hard_fraction[T])


def test_planted_overlap_refusals():
    with pytest.raises(UnsupportedError, match="sources"):
        solve_dmft(DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5, paths=400, replicas=2, planted=0.1,
                             response="pathwise"))
    with pytest.raises(UnsupportedError, match="no hard direction"):
        solve_dmft(DMFTSetup("gelu", "noisy_linear", 5.0, 0.05, 5, paths=400, replicas=2, planted=0.1))
    with pytest.raises(Exception, match="finite"):
        solve_dmft(DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5, paths=400, replicas=2, planted=float("nan")))


def test_critical_overlap_brackets_the_escape():
    """thresholds.planted: the bisection returns a bracket whose upper end escapes by the horizon and whose
    lower end does not (the runs it made say so), narrower than the requested ratio; eq. (2) is 2 Phi_bar."""
    from scipy.stats import norm
    from thresholds.planted import QUARTILE, critical_overlap, success_probability
    from thresholds.problem import Problem
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=40)
    qc = critical_overlap(problem, 5.0, 40, low=0.02, high=0.5, ratio=1.3, paths=8000)
    fracs = dict(qc.runs)
    assert fracs[qc.high] > 0.5 >= fracs[qc.low]
    assert qc.high / qc.low <= 1.3 and qc.low < qc.value < qc.high
    assert all((f > 0.5) == (q >= qc.high) for q, f in qc.runs)  # monotone in q0 on the runs made
    assert success_probability(0.05, 1.2, 400) == pytest.approx(2 * norm.sf(20 * 0.05 / 1.2))
    assert success_probability(QUARTILE * 1.3 / math.sqrt(800), 1.3, 800) == pytest.approx(0.5)


def test_planted_runs_have_their_own_cache_keys():
    plain = DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5)
    assert "planted" not in plain.cache_key()       # the keys of the versions before the planted start
    planted = DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5, planted=0.1, planted_step=2)
    assert planted.cache_key()["planted"] == 0.1 and planted.cache_key()["planted_step"] == 2


def test_finite_d_crossing_of_a_known_law(monkeypatch):
    """predict() on a synthetic q_c(delta) = 0.4 exp(-delta/2) (bracket +-10%) and s = 1.3 +- 0.05: eq. (3) has
    the closed-form root delta = 2 log(0.4 sqrt(d) / (s Q)); the grid, its refinement and the range ends
    (q_c low with s + s.e., q_c high with s - s.e.) must reproduce it to the interpolation error
    (h^2/8 |f''/f'| < 0.005 at resolution 0.05)."""
    from thresholds import planted
    from thresholds.problem import Problem

    calls = []

    def fake_qc(problem, delta, steps, **kw):
        calls.append(delta)
        q = 0.4 * math.exp(-delta / 2)
        return planted.CriticalOverlap(delta, steps, q / 1.1, q * 1.1, [])

    monkeypatch.setattr(planted, "critical_overlap", fake_qc)
    monkeypatch.setattr(planted, "spread", lambda problem, delta, **kw: (1.3, 0.05))
    res = planted.predict(Problem("quad", eta=0.05, steps=100), [1600, 400], start=8.0, resolution=0.05)
    Q = planted.QUARTILE
    deltas = [p.delta for p in res.points]

    def tol(x):  # the interpolation bound h^2/8 |f''/f'| = h^2/16 for this law, h the interval around x
        h = min(b for b in deltas if b >= x) - max(a for a in deltas if a <= x)
        return h * h / 16 + 1e-3

    for c in res.crossings:
        root = lambda q, s: 2 * math.log(q * math.sqrt(c.d) / (s * Q))  # noqa: E731
        assert c.found
        assert c.value == pytest.approx(root(0.4, 1.3), abs=min(tol(c.value), 0.01))
        assert c.low == pytest.approx(root(0.4 / 1.1, 1.35), abs=tol(c.low))
        assert c.high == pytest.approx(root(0.44, 1.25), abs=tol(c.high))
    assert [c.d for c in res.crossings] == [400, 1600]
    assert len(set(calls)) == len(calls) == len(res.points)  # every delta computed once
    out = res.to_json()
    assert out["horizon_steps"] == 100 and len(out["crossings"]) == 2 and out["crossings"][0]["d"] == 400
    # a d whose crossing lies beyond the search range is reported as not found, with the side
    far = planted.predict(Problem("quad", eta=0.05, steps=100), [10**9], start=8.0, search_max=20.0)
    assert not far.crossings[0].found and "above" in far.crossings[0].note


def test_finite_d_prediction_end_to_end():
    """The real pieces at a short horizon (quad / phase retrieval, eta 0.05, 40 steps; small path counts):
    every crossing is bracketed by two computed deltas within the resolution, sits inside its range, and
    rises with d (the root of a lower level of the interpolated sqrt(d) q_c / s comes later)."""
    from thresholds.planted import QUARTILE, predict
    from thresholds.problem import Problem

    res = predict(Problem("quad", eta=0.05, steps=40), [40, 160], start=5.0, resolution=0.3, paths=4000,
                  spread_paths=8000, tstar=20)
    pts = res.points
    assert all(p.q_low < p.q_high and p.s > 0 for p in pts)
    for c in res.crossings:
        assert c.found and c.low <= c.value <= c.high
        a = max((p for p in pts if p.delta <= c.value), key=lambda p: p.delta)
        b = min((p for p in pts if p.delta >= c.value), key=lambda p: p.delta)
        assert math.sqrt(c.d) * a.q / a.s >= QUARTILE >= math.sqrt(c.d) * b.q / b.s
        assert b.delta / a.delta <= 1.3 + 1e-9
    assert res.crossings[0].value <= res.crossings[1].value


def test_finite_d_prediction_refusals():
    from thresholds.errors import ThresholdsError
    from thresholds.planted import predict
    from thresholds.problem import Problem
    with pytest.raises(UnsupportedError):
        predict(Problem("quad", m=2), [400])
    with pytest.raises(UnsupportedError):
        predict(Problem("quad", sphere=True), [400])
    with pytest.raises(ThresholdsError):
        predict(Problem("quad"), [400], start=100.0)


def test_nn_dims_cli(tmp_path):
    """`thresholds nn --dims`: the finite-d crossings in the JSON ("finite_d": d, value, low, high) next to
    delta_NN, and one-line refusals where the prediction is not derived."""
    import json

    from click.testing import CliRunner

    from cli import main
    env = {"THRESHOLDS_CACHE": str(tmp_path)}
    base = ["nn", "-a", "quad", "--eta", "0.05", "-T", "30", "--law", "dmft", "--paths", "400", "--replicas", "2",
            "--search-max", "6"]
    res = CliRunner().invoke(main, base + ["--dims", "60", "--finite-paths", "2000", "--finite-start", "4",
                                           "--json"], env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    (row,) = out["finite_d"]
    assert row["d"] == 60 and row["found"] and row["low"] <= row["value"] <= row["high"]
    pred = out["finite_d_prediction"]
    assert pred["horizon_steps"] == 30 and pred["tstar"] == 30 and len(pred["points"]) >= 2
    assert "delta_nn" in out and "escape_finite_d" in out
    for extra, text in ((["--m", "2"], "one neuron"), (["--finite-start", "9"], "inside the search range")):
        bad = CliRunner().invoke(main, base + ["--dims", "60"] + extra, env=env)
        assert bad.exit_code == 2 and text in bad.output and "Traceback" not in bad.output, bad.output

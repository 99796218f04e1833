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


GROWTH = 4.0  # G(t_map, 0) of the synthetic amplitude law below


def _fake_spread(problem, delta, **kw):
    from types import SimpleNamespace
    return 1.3, 0.05, SimpleNamespace(growth=np.full(200, GROWTH))


def _fake_bracket(delta, steps, low, high, grown=1.0):
    """A CriticalOverlap whose run at ``low`` stays and at ``high`` escapes (a 0 / inf end has no run), with
    amplitudes |M_H(t_map)| = ``grown`` q0 G (grown > 1: the run's own noise helped it)."""
    from thresholds import planted
    runs = [(q, f) for q, f in ((low, 0.2), (high, 0.9)) if 0 < q < math.inf]
    return planted.CriticalOverlap(delta, steps, low, high, runs, {q: grown * q * GROWTH for q, _ in runs})


def test_effective_bracket_reads_each_runs_own_overlap():
    """Eq. (4): the bracket in effective overlaps is |M_H(t_map)| / G of the bracketing runs; a run that its
    noise grew 20% beyond G moves the bracket up by 20%; one-sided brackets keep their open end."""
    qc = _fake_bracket(5.0, 100, 0.05, 0.06, grown=1.2)
    assert qc.effective(GROWTH) == pytest.approx((0.06, 0.072))
    assert _fake_bracket(5.0, 100, 0.0, 0.01).effective(GROWTH) == (0.0, pytest.approx(0.01))
    assert _fake_bracket(5.0, 100, 0.3, math.inf).effective(GROWTH) == (pytest.approx(0.3), math.inf)
    saturated = _fake_bracket(5.0, 100, 0.3, 0.4, grown=0.7)
    saturated.amplitudes[0.4] = None  # past the linear fraction at t_map: q_eff = q0
    assert saturated.effective(GROWTH) == (pytest.approx(0.21), 0.4)


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
        return _fake_bracket(delta, steps, q / 1.1, q * 1.1)

    monkeypatch.setattr(planted, "critical_overlap", fake_qc)
    monkeypatch.setattr(planted, "spread", _fake_spread)
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


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One cache for the CLI tests below: `table` finds the search and the DMFT runs of `nn`."""
    return str(tmp_path_factory.mktemp("planted-cache"))


CLI_BASE = ["-a", "quad", "--eta", "0.05", "-T", "30", "--law", "dmft", "--paths", "400", "--replicas", "2",
            "--search-max", "6"]
CLI_FINITE = ["--dims", "80,40", "--finite-paths", "2000", "--finite-start", "4", "--finite-method", "planted"]


def test_nn_dims_cli(shared_cache):
    """`thresholds nn --dims` end to end (quad / phase retrieval, eta 0.05, a 30-step horizon, small path
    counts): the JSON has "finite_d" (d, value, low, high) next to delta_NN; every crossing is bracketed by
    two computed deltas within the resolution (1.12), sits inside its range and rises with d (the root of a
    lower level of the interpolated sqrt(d) q_c / s comes later); one-line refusals where the prediction
    is not derived."""
    import json

    from click.testing import CliRunner

    from cli import main
    from thresholds.planted import QUARTILE
    env = {"THRESHOLDS_CACHE": shared_cache}
    res = CliRunner().invoke(main, ["nn"] + CLI_BASE + CLI_FINITE + ["--json"], env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert "delta_nn" in out and "escape_finite_d" in out
    pred = out["finite_d_prediction"]
    assert pred["horizon_steps"] == 30 and pred["tstar"] == 30 and pred["source_tol"] == 0.0
    pts = [(p["delta"], math.sqrt(p["q_c_low"] * p["q_c_high"]) / p["s"]) for p in pred["points"]]
    assert all(p["q_c_low"] < p["q_c_high"] and p["s"] > 0 for p in pred["points"])
    assert [r["d"] for r in out["finite_d"]] == [40, 80]
    for row in out["finite_d"]:
        assert row["found"] and row["low"] <= row["value"]
        # the grid stops at --search-max 6, so an upper end may lie beyond it, which the note must say
        assert row["value"] <= row["high"] if row["high"] is not None else "upper end" in row["note"]
        a = max((p for p in pts if p[0] <= row["value"]), key=lambda p: p[0])
        b = min((p for p in pts if p[0] >= row["value"]), key=lambda p: p[0])
        assert math.sqrt(row["d"]) * a[1] >= QUARTILE >= math.sqrt(row["d"]) * b[1]
        assert b[0] / a[0] <= 1.12 + 1e-9
    assert out["finite_d"][0]["value"] <= out["finite_d"][1]["value"]
    for extra, text in ((["--sphere", "--finite-start", "4"], "sphere"),
                        (["--m", "2", "--a", "1,-1", "--finite-start", "4", "--finite-method", "planted"],
                         "one a and one b"),   # thresholds.modes' refusal ('auto' is forced, which takes per-neuron a)
                        (["--finite-start", "9"], "inside the search range")):
        bad = CliRunner().invoke(main, ["nn"] + CLI_BASE + ["--dims", "60"] + extra, env=env)
        assert bad.exit_code == 2 and text in bad.output and "Traceback" not in bad.output, bad.output


def test_table_dims_shows_prediction_and_fixed_horizon_simulation(shared_cache, monkeypatch):
    """`table --dims`: the finite-d prediction per m = 1 row next to the crossing at that d of a cached
    validation at the same fixed horizon; a validation under the default horizon rule is another entry."""
    import json

    from click.testing import CliRunner

    from cli import main
    from thresholds.nn import NNSetup
    from thresholds.store import cached_validation, store_validation
    monkeypatch.setenv("THRESHOLDS_CACHE", shared_cache)
    args = ["table", "--activations", "quad"] + CLI_BASE[2:] + ["--workers", "0"] + CLI_FINITE
    setup = NNSetup("quad", eta=0.05, steps=30)
    store_validation(setup, None, None, "r.md", t0=30 * 0.05, c=0.0, crossings={40: (3.1, 0.2)})
    assert cached_validation(setup) is None  # the default rule (t0 = 50, c = 10) has no entry
    res = CliRunner().invoke(main, args + ["--json"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)["rows"]
    assert [fd["d"] for fd in row["finite_d"]] == [40, 80]
    assert row["finite_d"][0]["simulated"] == [3.1, 0.2] and row["finite_d"][1]["simulated"] is None
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0 and "3.1 +- 0.2" in text.output, text.output


def test_one_sided_critical_overlap_enters_the_grid(monkeypatch):
    """A delta where the planted DMFT escapes from every overlap tried (q_c only bounded above) enters with
    its bound, the bracket ending on it is refined to a third of the resolution, and the crossing stays
    that of the closed form where the bracketing deltas have a two-sided q_c (as in the test above)."""
    from thresholds import planted
    from thresholds.problem import Problem

    def fake_qc(problem, delta, steps, **kw):
        if delta >= 7.0:
            assert kw.get("bounded")
            return _fake_bracket(delta, steps, 0.0, 0.01 / 16)
        q = 0.4 * math.exp(-delta / 2)
        return _fake_bracket(delta, steps, q / 1.1, q * 1.1)

    monkeypatch.setattr(planted, "critical_overlap", fake_qc)
    monkeypatch.setattr(planted, "spread", _fake_spread)
    res = planted.predict(Problem("quad", eta=0.05, steps=100), [400, 1600], start=8.0, resolution=0.05)
    assert res.points[-1].bounded and res.points[-1].q == 0.01 / 16
    Q = planted.QUARTILE
    for c in res.crossings:
        assert c.found and c.value == pytest.approx(2 * math.log(0.4 * math.sqrt(c.d) / (1.3 * Q)), abs=0.02)
    assert res.to_json()["points"][-1]["q_c_low"] == 0.0
    # at a d where the bound 0.01/16 does not decide the sign, the crossing is reported as not resolved
    far = planted.predict(Problem("quad", eta=0.05, steps=100), [10**8], start=8.0, search_max=9.0)
    assert not far.crossings[0].found and "not resolved" in far.crossings[0].note


def test_the_finite_d_prediction_takes_the_truncated_source_basis(shared_cache, monkeypatch):
    """`nn --dims --finite-source-tol` hands the tolerance to every horizon-long planted run and records it."""
    import json

    from click.testing import CliRunner

    import thresholds.planted as planted
    from cli import main
    seen = []
    real = planted.planted_run

    def spy(*args, **kw):
        seen.append(kw.get("source_tol"))
        return real(*args, **kw)
    monkeypatch.setattr(planted, "planted_run", spy)
    res = CliRunner().invoke(main, ["nn"] + CLI_BASE + CLI_FINITE + ["--finite-source-tol", "1e-3", "--json"],
                             env={"THRESHOLDS_CACHE": shared_cache})
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["finite_d_prediction"]["source_tol"] == 1e-3
    assert seen and set(seen) == {1e-3}

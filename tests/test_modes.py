"""Width m: per-neuron planted overlaps in the DMFT, the modes of thresholds.modes and their eqs. (1)-(6)."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from thresholds import modes
from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.errors import ThresholdsError, UnsupportedError
from thresholds.planted import QUARTILE, DeltaPoint, crossing, spread
from thresholds.problem import Problem


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5])
def test_mode_directions_are_normalized_and_orthogonal(m):
    dirs = modes.directions(m)
    for v in dirs.values():
        assert len(v) == m and np.sum(np.square(v)) / m == pytest.approx(1.0)
    if m > 1:
        assert sum(dirs["anti"]) == pytest.approx(0.0, abs=1e-12)
        assert np.dot(dirs["anti"], dirs["sym"]) == pytest.approx(0.0, abs=1e-12)
        assert modes.degrees("anti", m) == m - 1
    assert modes.degrees("sym", m) == 1


def test_per_neuron_planted_overlap():
    """A tuple of equal entries is the scalar start on the same paths; a tuple sets each neuron's overlap;
    a tuple of zeros keeps the hard rows and moves them by the Monte Carlo forcing alone."""
    base = dict(paths=2000, replicas=2, m=2)
    scalar = solve_dmft(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 8, planted=0.1, **base))
    pair = solve_dmft(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 8, planted=(0.1, 0.1), **base))
    assert np.allclose(scalar.hard_fraction, pair.hard_fraction, rtol=1e-12)
    anti = solve_dmft(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 8, planted=(0.1, -0.1), **base))
    assert anti.hard_signal.shape == (2, 9, 1, 2)
    assert np.allclose(anti.hard_signal[:, 0, 0], [[0.1, -0.1]] * 2)
    zero = solve_dmft(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 8, planted=(0.0, 0.0), **base))
    assert np.all(zero.hard_signal[:, 0] == 0)
    forced = np.abs(zero.hard_signal[:, 8]).max()
    assert 0 < forced < 0.5   # O(N^-1/2), small against ||theta|| = 1; its law: test_mode_spread_at_m1_...
    with pytest.raises(ThresholdsError, match="m = 2 finite numbers"):
        solve_dmft(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 8, planted=(0.1, 0.1, 0.1), **base))


def test_antisymmetric_start_follows_gd():
    """quad / phase retrieval, m = 2, delta 3, eta 0.05: from M_H = (0.3, -0.3) the planted DMFT (4 x 10k
    paths) against GD at d = 1000 with the same per-neuron start (4 seeds) at steps 10, 25, 50: within 4
    combined standard errors plus 0.02 for the O(d^-1/2) finite-size effects (the tolerance of the m = 1
    planted test)."""
    from validation.simulate import GDSetup, run_gd
    T, start = 50, (0.3, -0.3)
    res = solve_dmft(DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, T, paths=40000, replicas=4, m=2,
                               planted=start))
    runs = [run_gd(GDSetup("quad", "phase_retrieval", 3.0, 1000, 0.05, T, m=2, complement=False, planted=start,
                           seed=s, test_loss=False)) for s in range(4)]
    frac = np.array([r.hard_overlap / r.norm2 for r in runs])
    assert frac[0, 0] == pytest.approx(res.hard_fraction[0], rel=1e-2)
    for t in (10, 25, 50):
        gd, gd_se = frac[:, t].mean(), frac[:, t].std(ddof=1) / 2
        tol = 4 * np.hypot(gd_se, res.hard_fraction_err[t]) + 0.02
        assert abs(res.hard_fraction[t] - gd) < tol, (t, res.hard_fraction[t], gd, tol)
    assert res.hard_fraction[T] > 2 * res.hard_fraction[0]   # the start grows in this window


def test_mode_spread_at_m1_matches_the_pathwise_forcing_law():
    """Eqs. (2)-(4) at m = 1 (sources DMFT: antithetic growth, forced variance over 128 replicas) against
    thresholds.planted.spread (pathwise kernels K_M, K_F, thresholds.forcing): two routes to the same s.
    quad / phase retrieval, delta 5, eta 0.05, t* = 20.  G within 4 combined s.e. plus 2% (the pathwise
    law has its own 1/N bias at 20k paths), s within 3 combined s.e."""
    pr = Problem("quad", "phase_retrieval", eta=0.05, steps=20)
    sp = modes.mode_spreads(pr, 5.0, tstar=20, paths=2000, replicas=128, growth_paths=5000, growth_replicas=4,
                            cache=False)["sym"]
    s, s_err, amp = spread(pr, 5.0, tstar=20, paths=20000, replicas=4, cache=False, law=True)
    for t in (5, 10, 20):
        tol = 4 * math.hypot(sp.growth_err[t], amp.growth_err[t]) + 0.02 * amp.growth[t]
        assert abs(sp.growth[t] - amp.growth[t]) < tol, (t, sp.growth[t], amp.growth[t])
    assert abs(sp.s - s) < 3 * math.hypot(sp.s_err, s_err), (sp.s, sp.s_err, s, s_err)
    assert sp.s > pr.rho0   # the forcing adds to the initial overlap


def test_width_point_combines_the_modes():
    """Eq. (5) against the tail of a sampled Gaussian norm, and eq. (6) reducing to planted's f_d for one
    mode with one degree of freedom."""
    one = DeltaPoint(5.0, 0.04, 0.05, 1.2, 0.0)
    alone = modes.WidthPoint(5.0, {"sym": one})
    for d in (100, 400, 1600):
        assert alone.margin(d) == pytest.approx(one.margin(d), abs=1e-9)
    anti = DeltaPoint(5.0, 0.02, 0.025, 1.0, 0.0, dof=3)
    both = modes.WidthPoint(5.0, {"sym": one, "anti": anti})
    rng = np.random.default_rng(0)
    d = 400
    x = rng.standard_normal((200_000, 3))
    p_anti = np.mean(np.linalg.norm(x, axis=1) > math.sqrt(d) * anti.q / anti.s)
    assert anti.probability(d) == pytest.approx(p_anti, abs=0.005)
    p = 1 - (1 - one.probability(d)) * (1 - p_anti)
    assert both.probability(d) == pytest.approx(p, abs=0.005)
    assert both.margin(d) == pytest.approx(norm.isf(both.probability(d) / 2) - QUARTILE)
    assert both.dominant is anti
    # a second mode only adds escapes: the crossing moves down
    deltas = [1.5, 2.0, 3.0, 4.0, 5.0, 6.0]
    single = [modes.WidthPoint(t, {"sym": DeltaPoint(t, 0.3 / t, 0.3 / t, 1.2, 0.0)}) for t in deltas]
    double = [modes.WidthPoint(t, {"sym": DeltaPoint(t, 0.3 / t, 0.3 / t, 1.2, 0.0),
                                   "anti": DeltaPoint(t, 0.3 / t, 0.3 / t, 1.2, 0.0)}) for t in deltas]
    low, high = crossing(double, 100), crossing(single, 100)
    assert low.found and high.found and low.value < high.value


def test_width_prediction_refusals():
    with pytest.raises(UnsupportedError, match="one a and one b"):
        modes.predict(Problem("quad", "phase_retrieval", eta=0.05, steps=10, m=2, a=(1.0, -1.0)), [200])
    with pytest.raises(UnsupportedError, match="sphere"):
        modes.predict(Problem("quad", "phase_retrieval", eta=0.05, steps=10, m=2, sphere=True), [200])
    with pytest.raises(ThresholdsError, match="dimension"):
        modes.predict(Problem("quad", "phase_retrieval", eta=0.05, steps=10, m=2), [])
    from click.testing import CliRunner

    from cli import main
    bad = CliRunner().invoke(main, ["nn", "-a", "quad", "--m", "inf", "--dims", "200"])
    assert bad.exit_code == 2 and "finite width" in bad.output and "Traceback" not in bad.output, bad.output



def test_width_prediction_of_a_known_law(monkeypatch):
    """modes.predict at m = 3 on synthetic laws: q_c,sym = 0.5 exp(-delta/2), q_c,anti = 0.3 exp(-delta/2)
    (brackets +-5%), s_sym = 1.0, s_anti = 1.2.  The crossing must be the root of eq. (5) = 1/2 (brentq on
    the exact P with chi tails of 1 and 2 degrees of freedom) within the interpolation error, every delta
    computed once, and each mode planted along its own direction."""
    from scipy.optimize import brentq
    from scipy.stats import chi

    from thresholds import planted
    calls, seen = [], set()

    def fake_spreads(problem, delta, **kw):
        return {mode: modes.ModeSpread(mode, delta, 50, np.full(60, 4.0), np.zeros(60), np.zeros(60),
                                       np.zeros(60), s, 0.0)
                for mode, s in (("sym", 1.0), ("anti", 1.2))}

    def fake_qc(problem, delta, steps, *, direction, **kw):
        mode = "sym" if all(v == 1 for v in direction) else "anti"
        seen.add((mode, tuple(direction)))
        calls.append((mode, delta))
        q = (0.5 if mode == "sym" else 0.3) * math.exp(-delta / 2)
        low, high = q / 1.05, q * 1.05
        return planted.CriticalOverlap(delta, steps, low, high, [(low, 0.2), (high, 0.9)],
                                       {low: low * 4.0, high: high * 4.0})

    monkeypatch.setattr(modes, "mode_spreads", fake_spreads)
    monkeypatch.setattr(modes, "critical_overlap", fake_qc)
    res = modes.predict(Problem("quad", eta=0.05, steps=100, m=3), [400, 1600], start=4.0, resolution=0.05)

    def P(delta, d):
        qs = 0.5 * math.exp(-delta / 2) / 1.0
        qa = 0.3 * math.exp(-delta / 2) / 1.2
        return 1 - (1 - chi.sf(math.sqrt(d) * qs, 1)) * (1 - chi.sf(math.sqrt(d) * qa, 2))

    deltas = [p.delta for p in res.points]
    for c in res.crossings:
        root = brentq(lambda x: P(x, c.d) - 0.5, 0.5, 30)
        h = min(b for b in deltas if b >= c.value) - max(a for a in deltas if a <= c.value)
        assert c.found and c.value == pytest.approx(root, abs=h * h / 4 + 2e-3), (c, root)
        assert c.low < c.value < c.high
    assert len(set(calls)) == len(calls) == 2 * len(res.points)
    assert seen == {(mode, tuple(v)) for mode, v in modes.directions(3).items()}
    assert res.to_json()["points"][0]["modes"]["anti"]["dof"] == 2


@pytest.mark.slow
def test_nn_dims_cli_at_width_two(tmp_path):
    """`thresholds nn --m 2 --dims` end to end (quad / phase retrieval, eta 0.05, a 30-step horizon, small
    path counts): every computed delta has both modes, each with a q_c bracket, s > 0 and k_v; each crossing
    is found, bracketed by computed deltas within the resolution and rises with d."""
    import json

    from click.testing import CliRunner

    from cli import main
    env = {"THRESHOLDS_CACHE": str(tmp_path)}
    args = ["nn", "-a", "quad", "--eta", "0.05", "-T", "30", "--m", "2", "--law", "dmft", "--paths", "400",
            "--replicas", "2", "--search-max", "12", "--dims", "40,20", "--finite-paths", "2000",
            "--finite-start", "3", "--json"]
    res = CliRunner().invoke(main, args, env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    pred = out["finite_d_prediction"]
    for p in pred["points"]:
        assert set(p["modes"]) == {"sym", "anti"}
        for mode, q in p["modes"].items():
            assert q["q_c_low"] < q["q_c_high"] and q["s"] > 0 and q["dof"] == 1   # m - 1 = 1
    pts = {p["delta"]: p for p in pred["points"]}
    rows = out["finite_d"]
    assert [r["d"] for r in rows] == [20, 40] and all(r["found"] for r in rows), rows
    for r in rows:
        below = max(d for d in pts if d <= r["value"])
        above = min(d for d in pts if d >= r["value"])
        assert above / below <= 1.12 + 1e-9
    assert rows[0]["value"] <= rows[1]["value"]

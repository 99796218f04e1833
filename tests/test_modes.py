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
    if m > 1:   # one neuron's start lies in the plane of the two modes
        one = np.asarray(dirs["sym"]) / m + math.sqrt(m - 1) / m * np.asarray(dirs["anti"])
        assert np.allclose(one, np.eye(m)[0], atol=1e-12)
        assert sum(dirs["anti"]) == pytest.approx(0.0, abs=1e-12)
        assert np.dot(dirs["anti"], dirs["sym"]) == pytest.approx(0.0, abs=1e-12)
    for phi in (modes.ANGLES if m > 1 else (0.0,)):
        u = modes.start_direction(m, phi, 1.1, 0.9)
        assert np.sum(np.square(u)) / m == pytest.approx(1.0)   # a start of unit hard overlap
    assert modes.start_direction(m, 0.0, 1.1, 0.9) == (1.0,) * m


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


def _sampled_probability(m, d, rc, n, rng, samples=400_000):
    """Eq. (6) by sampling: sqrt(d) (a_s, a_a) = (s_s Z_0, s_a Z_1..m-1) in whitened coordinates, escape when
    rho n(phi) > sqrt(d) r_c(phi) at the angle phi of (|Z_0|, |Z_1..|)."""
    z = rng.standard_normal((samples, m))
    x, y = np.abs(z[:, 0]), np.linalg.norm(z[:, 1:], axis=1)
    phi, rho = np.arctan2(y, x), np.linalg.norm(z, axis=1)
    return float(np.mean(rho * n(phi) > math.sqrt(d) * rc(phi)))


@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_width_point_probability_against_sampling(m):
    """Eqs. (5)-(6) against direct sampling of the whitened Gaussian start, with r_c and n varying with the
    angle (linear between the computed angles, as the point interpolates them); m = 1 is planted eq. (2),
    and eq. (7) its margin."""
    rng = np.random.default_rng(m)
    angles = modes.ANGLES if m > 1 else (0.0,)
    rc = {phi: 0.05 + 0.02 * phi for phi in angles}
    n = {phi: 1.1 - 0.1 * math.sin(phi) for phi in angles}
    point = modes.WidthPoint(5.0, m, {phi: DeltaPoint(5.0, rc[phi], rc[phi], n[phi], 0.0, dof=m) for phi in angles},
                             grid=721)
    ratio = lambda phi: np.interp(phi, angles, [rc[p] / n[p] for p in angles])  # noqa: E731
    for d in (100, 400, 1600):
        sampled = _sampled_probability(m, d, ratio, lambda phi: np.ones_like(phi), rng)
        assert point.probability(d) == pytest.approx(sampled, abs=0.004), (m, d)
        assert point.margin(d) == pytest.approx(norm.isf(point.probability(d) / 2) - QUARTILE)
    if m == 1:
        one = point.angles[0.0]
        assert point.margin(400) == pytest.approx(one.margin(400), abs=1e-9)


def test_width_prediction_refusals():
    with pytest.raises(UnsupportedError, match="one a and one b"):
        modes.predict(Problem("quad", "phase_retrieval", eta=0.05, steps=10, m=2, a=(1.0, -1.0)), [200])
    with pytest.raises(UnsupportedError, match="sphere"):
        modes.predict(Problem("quad", "phase_retrieval", eta=0.05, steps=10, m=2, sphere=True), [200])
    with pytest.raises(ThresholdsError, match="dimension"):
        modes.predict(Problem("quad", "phase_retrieval", eta=0.05, steps=10, m=2), [])
    for link, counts in [("z1**2 + z2**2", "2 hard and 0 easy"), ("mixed", "1 hard and 1 easy")]:
        for m in (1, 2):  # both predictors: refused before any DMFT run, with the link's latent structure
            assert counts in modes.any_refusal(Problem("quad", link, eta=0.05, steps=10, m=m))
            with pytest.raises(UnsupportedError, match="one hard direction"):
                modes.prediction(Problem("quad", link, eta=0.05, steps=10, m=m), [200])
    assert modes.any_refusal(Problem("quad", "Abs(z)", eta=0.05, steps=10, m=2)) == ""
    from click.testing import CliRunner

    from cli import main
    bad = CliRunner().invoke(main, ["nn", "-a", "quad", "--m", "inf", "--dims", "200"])
    assert bad.exit_code == 2 and "finite width" in bad.output and "Traceback" not in bad.output, bad.output



def test_width_prediction_of_a_known_law(monkeypatch):
    """modes.predict at m = 3 on synthetic laws: r_c(phi) = c(phi) exp(-delta/2) with c = 0.5, 0.4, 0.3 at
    phi = 0, pi/4, pi/2 (brackets +-5%), s_sym = 1.0, s_anti = 1.2.  The crossing must be the root of eq. (6)
    = 1/2 computed here by adaptive quadrature (scipy.integrate.quad, f(phi) = sin(phi) at m = 3) within the
    interpolation error; every (delta, angle) computed once; each angle planted along u(phi)."""
    from scipy.integrate import quad
    from scipy.optimize import brentq
    from scipy.stats import chi

    from thresholds import planted
    calls = []
    c = dict(zip(modes.ANGLES, (0.5, 0.4, 0.3)))
    spreads = {"sym": 1.0, "anti": 1.2}

    def fake_spreads(problem, delta, **kw):
        return {mode: modes.ModeSpread(mode, delta, 50, np.full(60, 4.0), np.zeros(60), np.zeros(60),
                                       np.zeros(60), s, 0.0) for mode, s in spreads.items()}

    def fake_qc(problem, delta, steps, *, direction, reading, **kw):
        phi = next(p for p in modes.ANGLES
                   if np.allclose(direction, modes.start_direction(3, p, spreads["sym"], spreads["anti"])))
        calls.append((phi, delta))
        q = c[phi] * math.exp(-delta / 2)
        low, high = q / 1.05, q * 1.05
        return planted.CriticalOverlap(delta, steps, low, high, [(low, 0.2), (high, 0.9)], {low: low, high: high})

    monkeypatch.setattr(modes, "mode_spreads", fake_spreads)
    monkeypatch.setattr(modes, "critical_overlap", fake_qc)
    res = modes.predict(Problem("quad", eta=0.05, steps=100, m=3), [400, 1600], start=4.0, resolution=0.05)

    def n(phi):
        return math.hypot(spreads["sym"] * math.cos(phi), spreads["anti"] * math.sin(phi))

    def P(delta, d):
        x = [math.sqrt(d) * c[p] * math.exp(-delta / 2) / n(p) for p in modes.ANGLES]
        return quad(lambda phi: math.sin(phi) * chi.sf(np.interp(phi, modes.ANGLES, x), 3), 0, math.pi / 2,
                    points=modes.ANGLES[1:2])[0]

    deltas = [p.delta for p in res.points]
    for cr in res.crossings:
        root = brentq(lambda x: P(x, cr.d) - 0.5, 0.5, 30)
        h = min(b for b in deltas if b >= cr.value) - max(a for a in deltas if a <= cr.value)
        assert cr.found and cr.value == pytest.approx(root, abs=h * h / 4 + 2e-3), (cr, root)
        assert cr.low < cr.value < cr.high
    assert len(set(calls)) == len(calls) == 3 * len(res.points)
    assert {phi for phi, _ in calls} == set(modes.ANGLES)
    first = res.to_json()["points"][0]
    assert len(first["angles"]) == 3 and all(q["dof"] == 3 for q in first["angles"].values())
    calls.clear()   # one delta with the angles in another order: the same point
    back = modes.width_point(Problem("quad", eta=0.05, steps=100, m=3), 4.0, angles=modes.ANGLES[::-1])
    assert [phi for phi, _ in calls] == list(modes.ANGLES[::-1])
    again = modes.width_point(Problem("quad", eta=0.05, steps=100, m=3), 4.0)
    assert back.margin(400) == pytest.approx(again.margin(400), rel=1e-12)


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
            "--finite-start", "3", "--finite-method", "planted", "--json"]   # 'auto' is forced at every m
    res = CliRunner().invoke(main, args, env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    pred = out["finite_d_prediction"]
    for p in pred["points"]:
        assert len(p["angles"]) == 3
        for q in p["angles"].values():
            assert q["q_c_low"] < q["q_c_high"] and q["s"] > 0 and q["dof"] == 2
    pts = {p["delta"]: p for p in pred["points"]}
    rows = out["finite_d"]
    assert [r["d"] for r in rows] == [20, 40] and all(r["found"] for r in rows), rows
    for r in rows:
        below = max(d for d in pts if d <= r["value"])
        above = min(d for d in pts if d >= r["value"])
        assert above / below <= 1.12 + 1e-9
    assert rows[0]["value"] <= rows[1]["value"]


def test_width_summary_reads_the_prediction_json():
    """validation.width_planted: a prediction's JSON read back gives the library's P at the computed deltas
    and an interpolated P between them; outside them, nan."""
    from thresholds.planted import FiniteDPrediction
    from validation.width_planted import probability
    pts = [modes.WidthPoint(t, 2, {phi: DeltaPoint(t, 0.3 / t, 0.33 / t, 0.9 + 0.02 * phi, 0.01, dof=2)
                                   for phi in modes.ANGLES}) for t in (3.0, 4.0)]
    pred = FiniteDPrediction(Problem("quad", eta=0.05, steps=100, m=2), pts, [], 2000, 500, 50).to_json()
    for p in pts:
        assert probability(pred, 400, p.delta) == pytest.approx(p.probability(400), rel=1e-9)
    mid = probability(pred, 400, 3.5)
    assert pts[0].probability(400) < mid < pts[1].probability(400)
    assert math.isnan(probability(pred, 400, 5.0))


def test_antisymmetric_directions_of_the_direction_check():
    """validation.anti_direction: 'single' is the modes' own antisymmetric direction; 'pairs' is another unit
    vector of the antisymmetric subspace (sum 0, (1/m)|v|^2 = 1), orthogonal to the symmetric mode."""
    from validation.anti_direction import direction
    for m in (2, 4, 6):
        assert direction("single", m) == modes.directions(m)["anti"]
        v = np.array(direction("pairs", m))
        assert abs(v.sum()) < 1e-12 and np.isclose(v @ v / m, 1.0)
    with pytest.raises(SystemExit):
        direction("pairs", 3)

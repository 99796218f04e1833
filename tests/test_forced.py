"""The finite-n hard forcing of the planted DMFT (thresholds.dmft eq. (7b)) and the forced trials built on it
(thresholds.forced): the forcing's scale exactly and its variance against a quadrature, with and without the
paths' own Monte Carlo forcing, cache keys, records and refusals."""

import math

import numpy as np
import pytest

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.errors import ThresholdsError, UnsupportedError
from thresholds import cache
from thresholds.forced import (CURVES, initial_gram, initial_overlap, paths_for, points, run_trial, source_tol_for,
                               trial_setup)
from thresholds.problem import Problem

ETA = 0.1


def _first_step(activation, link, paths, seed, forcing_n, forcing_seed=0):
    """M_H(1) of a planted run (M_H(0) = 1e-9) with the forcing of n = forcing_n samples (0: none)."""
    setup = DMFTSetup(activation, link, 4.0, ETA, 1, paths=paths, replicas=1, seed=seed, planted=1e-9,
                      forcing_n=forcing_n, forcing_seed=forcing_seed)
    return float(solve_dmft(setup, cache=False).hard_signal[0, 1, 0, 0])


def test_forcing_scale_on_the_same_paths_is_exact():
    # same paths, same w_p: M_H(1) - M_H(1)|no forcing = eta f, and f scales as sqrt(1/(n omega) - 1)
    N, n1, n2 = 4000, 1000, 2000
    for k in range(5):
        base = _first_step("quad", "phase_retrieval", N, 0, 0)
        f1 = _first_step("quad", "phase_retrieval", N, 0, n1, k) - base
        f2 = _first_step("quad", "phase_retrieval", N, 0, n2, k) - base
        assert f1 / f2 == pytest.approx(math.sqrt((1 / n1 - 1 / N) / (1 / n2 - 1 / N)), rel=1e-6)
    # n = N: the paths' own forcing is already that of n samples, nothing is added
    assert _first_step("quad", "phase_retrieval", N, 0, N, 3) == pytest.approx(base, abs=1e-15)


def _e_g2_psi2():
    """E[g^2 psi(0)^2] for tanh, y = |g|, rho0 = 1: u ~ N(0, 1) independent of g, psi = (|g| - tanh u) tanh'(u),
    by a 2-d Gauss-Hermite rule (an independent route to the DMFT's paths)."""
    x, w = np.polynomial.hermite_e.hermegauss(120)
    w = w / w.sum()
    g, u = x[:, None], x[None, :]
    psi = (np.abs(g) - np.tanh(u)) / np.cosh(u) ** 2
    return float(w @ (g**2 * psi**2) @ w)


def test_forcing_variance_against_quadrature():
    # paths and forcing drawn anew per run: Var M_H(1) = eta^2 E[g^2 psi^2] / n with eq. (7b) (own + added),
    # and eta^2 E[g^2 psi^2] / N from the paths' own forcing alone; n = N / 2, so a forcing that ignored the
    # paths' own part would give 1.5 times the first, outside the band below
    K, N, n = 200, 40_000, 20_000
    E = _e_g2_psi2()
    from scipy.stats import chi2
    lo, hi = chi2.ppf(1e-4, K - 1) / (K - 1), chi2.ppf(1 - 1e-4, K - 1) / (K - 1)   # 0.69, 1.40
    both = np.var([_first_step("tanh", "Abs(z)", N, k, n, k) for k in range(K)], ddof=1)
    own = np.var([_first_step("tanh", "Abs(z)", N, k, 0) for k in range(K)], ddof=1)
    assert lo < both / (ETA**2 * E / n) < hi
    assert lo < own / (ETA**2 * E / N) < hi


def _e_g2_psi_pair():
    """(E[g^2 psi_1^2], E[g^2 psi_1 psi_2]) at m = 2 for tanh, y = |g|, a = 1, b = 0, rho0 = 1: u_1, u_2 iid
    N(0, 1) independent of g, psi_j = (|g| - (tanh u_1 + tanh u_2) / 2) tanh'(u_j), by a 3-d Gauss-Hermite rule."""
    x, w = np.polynomial.hermite_e.hermegauss(60)
    w = w / w.sum()
    g, u1, u2 = x[:, None, None], x[None, :, None], x[None, None, :]
    r = np.abs(g) - (np.tanh(u1) + np.tanh(u2)) / 2
    p1, p2 = r / np.cosh(u1) ** 2, r / np.cosh(u2) ** 2
    W = w[:, None, None] * w[None, :, None] * w[None, None, :]
    return float(np.sum(W * g**2 * p1 * p1)), float(np.sum(W * g**2 * p1 * p2))


def test_forcing_of_two_neurons_is_one_sample_set():
    # eq. (1m): at m = 2 the two hard gradients are means over the same n samples, so their first-step forcings
    # have Var = eta^2 E[g^2 psi_1^2] / n and Cov = eta^2 E[g^2 psi_1 psi_2] / n (here Cov / Var = 0.78); a forcing
    # drawn per neuron would give Cov = the paths' own part alone (N = 4 n: a quarter), outside the bands below
    K, N, n = 200, 20_000, 5_000
    v11, v12 = _e_g2_psi_pair()
    pairs = []
    for k in range(K):
        setup = DMFTSetup("tanh", "Abs(z)", 4.0, ETA, 1, m=2, paths=N, replicas=1, seed=k, planted=(1e-9, 1e-9),
                          forcing_n=n, forcing_seed=k)
        pairs.append(solve_dmft(setup, cache=False).hard_signal[0, 1, 0, :])
    cov = np.cov(np.array(pairs).T) / (ETA**2 / n)
    var_se = v11 * math.sqrt(2 / K)               # Gaussian: s.e. of a sample variance, and of a covariance
    cov_se = math.sqrt((v11 * v11 + v12 * v12) / K)
    assert abs(cov[0, 0] - v11) < 4 * var_se and abs(cov[1, 1] - v11) < 4 * var_se
    assert abs(cov[0, 1] - v12) < 4 * cov_se and abs(cov[0, 1] - v12 * n / N) > 4 * cov_se


def test_cache_key_and_refusals():
    plain = DMFTSetup("quad", "phase_retrieval", 4.0, ETA, 10, planted=0.1)
    assert "forcing_n" not in plain.cache_key() and "forcing_seed" not in plain.cache_key()
    forced = DMFTSetup("quad", "phase_retrieval", 4.0, ETA, 10, planted=0.1, forcing_n=100.0, forcing_seed=3)
    assert forced.cache_key()["forcing_n"] == 100.0 and forced.cache_key()["forcing_seed"] == 3
    with pytest.raises(UnsupportedError, match="planted"):
        DMFTSetup("quad", "phase_retrieval", 4.0, ETA, 10, forcing_n=100.0).validate()
    with pytest.raises(ThresholdsError, match="forcing_n"):
        DMFTSetup("quad", "phase_retrieval", 4.0, ETA, 10, planted=0.1, forcing_n=-1.0).validate()
    with pytest.raises(ThresholdsError, match="at least"):
        solve_dmft(DMFTSetup("quad", "phase_retrieval", 4.0, ETA, 2, paths=100, replicas=1, planted=0.1,
                             forcing_n=400.0), cache=False)


def test_trial_setup():
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=30)
    s = trial_setup(problem, 5.0, 400, 7, paths=4000)
    assert s.forcing_n == 2000.0 and s.seed == 7 and s.forcing_seed == 7 and s.replicas == 1
    assert s.planted == pytest.approx(initial_overlap(7) / 20.0)
    assert initial_overlap(7) == trial_setup(problem, 6.0, 800, 7, paths=8000).planted * math.sqrt(800)
    xi = [initial_overlap(k) for k in range(2000)]
    assert abs(np.mean(xi)) < 0.1 and abs(np.std(xi) - 1) < 0.05
    with pytest.raises(ThresholdsError, match="at least"):
        trial_setup(problem, 5.0, 400, 0, paths=1000)
    # width m: one xi per neuron (eq. (1m)), neuron 1's the m = 1 one; the same forcing seed for all
    wide = trial_setup(Problem("quad", "phase_retrieval", eta=0.05, steps=30, m=3), 5.0, 400, 7, paths=4000)
    assert len(wide.planted) == 3 and wide.planted[0] == pytest.approx(s.planted)
    assert list(wide.planted) == pytest.approx([v / 20.0 for v in initial_overlap(7, 3)])
    assert len(set(wide.planted)) == 3 and wide.forcing_seed == 7 and wide.forcing_n == 2000.0
    with pytest.raises(ThresholdsError, match="sphere"):
        trial_setup(Problem("quad", "phase_retrieval", sphere=True), 5.0, 400, 0, paths=4000)
    with pytest.raises(ThresholdsError, match="hard and"):
        trial_setup(Problem("quad", "z1**2 + z2**2"), 5.0, 400, 0, paths=4000)
    # eq. (4c): float32 path arrays on the truncated basis, float64 with every source or when asked for
    assert s.path_dtype == "float32" and s.cache_key()["path_dtype"] == "float32"
    assert trial_setup(problem, 5.0, 400, 7, paths=4000, source_tol=0.0).path_dtype == "float64"
    assert "path_dtype" not in trial_setup(problem, 5.0, 400, 7, paths=4000, path_dtype="float64").cache_key()


def test_paths_per_sample():
    # eq. (4): max(n, 2500 m, 1250 m^2) at source tolerance 1e-3 (m < 8); eq. (4b): max(n, 10000 m) at 1e-2 (m >= 8);
    # eq. (4e): max(n, 4000 delta) at m = 1
    assert paths_for(5.0, 400) == 20_000 and paths_for(7.0, 3200) == 28_000 and paths_for(5.0, 400, m=2) == 5_000
    assert paths_for(5.0, 8000) == 40_000 and paths_for(5.25, 200) == 21_000    # n above 4000 delta; 4000 delta
    assert paths_for(5.0, 400, m=4) == 20_000 and paths_for(3.5, 800, m=8) == 80_000
    assert paths_for(3.5, 800, m=8, source_tol=1e-3) == 80_000 and paths_for(3.5, 800, m=4, source_tol=1e-2) == 40_000
    assert paths_for(3.5, 800, m=16) == 160_000 and paths_for(3.5, 800, m=8, source_tol=3e-3) == 80_000
    assert paths_for(25.0, 4000, m=8) == 100_000               # n above 10000 m
    assert [source_tol_for(m) for m in (1, 2, 4, 7, 8, 16)] == [1e-3] * 4 + [1e-2] * 2
    assert paths_for(6.0, 400) == 24_000 and paths_for(7.0, 400) == 28_000
    assert paths_for(5.0, 400, 4000) == 4000
    assert paths_for(5.0, 400, per_sample=1) == 2000           # the paths are the samples: no rounding up
    assert paths_for(5.5, 401, per_sample=1) == 2206           # ceil(2205.5)
    assert paths_for(5.0, 400, per_sample=2.5) == 5000
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=30)
    assert trial_setup(problem, 5.5, 401, 0, paths=paths_for(5.5, 401, per_sample=1)).paths == 2206
    assert trial_setup(problem, 5.0, 400, 0).paths == 20_000   # the default is eq. (4e) at m = 1
    assert trial_setup(Problem("quad", "phase_retrieval", eta=0.05, steps=30, m=3), 5.0, 400, 0).paths == 11250   # 1250 m^2
    wide = trial_setup(Problem("quad", "phase_retrieval", eta=0.05, steps=30, m=8), 3.5, 800, 0)
    assert (wide.paths, wide.source_tol) == (80_000, 1e-2)    # eq. (4b)
    assert trial_setup(Problem("quad", "phase_retrieval", eta=0.05, steps=30, m=8), 3.5, 800, 0,
                       source_tol=1e-3).paths == 80_000
    from validation.forced_trials import check_paths
    rows = [{"d": 400, "delta": 5.0, "paths": 2500}, {"d": 400, "delta": 6.0, "paths": 20_000}]
    check_paths(rows)                                            # one count per point: fine
    with pytest.raises(ValueError, match="d = 400, delta = 5"):
        check_paths(rows + [{"d": 400, "delta": 5.0, "paths": 20_000}])
    for bad in (0.5, float("nan"), float("inf"), "2"):
        with pytest.raises(ThresholdsError, match="paths per sample"):
            paths_for(5.0, 400, per_sample=bad)
    with pytest.raises(ThresholdsError, match="not both"):
        paths_for(5.0, 400, 4000, per_sample=1)


def test_trial_cache_keeps_curves_not_the_run(monkeypatch, tmp_path):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=40, m=2)
    first = run_trial(problem, 3.0, 200, 1, paths=600, every=10)
    (entry,) = tmp_path.glob("forced-*.json")
    assert not list(tmp_path.glob("dmft-*")) and entry.stat().st_size < 20_000
    setup = trial_setup(problem, 3.0, 200, 1, paths=600)
    direct = solve_dmft(setup, cache=False)
    # the trial's run skips C and Cpsi (kernels=False) and takes C(t, t) by its own product: the same curves
    # up to the rounding of that product
    assert np.allclose(cache.load("forced", setup.cache_key())["hard_fraction"], direct.hard_fraction,
                       rtol=1e-13, atol=0)
    assert run_trial(problem, 3.0, 200, 1, paths=600, every=10).hard_fraction == first.hard_fraction
    # an entry of the wrong shape (another horizon's curves under this key) is a miss, recomputed and replaced
    cache.store("forced", setup.cache_key(), {name: np.zeros(7) for name in CURVES})
    assert run_trial(problem, 3.0, 200, 1, paths=600, every=10).hard_fraction == first.hard_fraction
    assert cache.load("forced", setup.cache_key())["norm2"].shape == (41,)


@pytest.mark.parametrize("m", [1, 2])
def test_curves_without_the_two_time_kernels(m):
    # solve_dmft(kernels=False) on the sources back-end: C and Cpsi None, every per-step curve that of the full
    # run (C(t, t) from its own product, so equal up to rounding); the other back-ends refuse it
    setup = DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 30, m=m, paths=3000, replicas=2,
                      planted=0.1 if m == 1 else (0.1, -0.05), source_tol=1e-3, forcing_n=600.0, forcing_seed=3)
    full, lean = solve_dmft(setup, cache=False), solve_dmft(setup, cache=False, kernels=False)
    assert lean.C is None and lean.Cpsi is None and full.C is not None
    for name in ("norm2", "overlap_init", "train_loss", "hard_overlap", "hard_fraction", "test_loss"):
        a, b = np.asarray(getattr(full, name)), np.asarray(getattr(lean, name))
        assert np.allclose(a, b, rtol=1e-13, atol=0, equal_nan=True), name
    with pytest.raises(ThresholdsError, match="sources"):
        solve_dmft(DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 5, response="pathwise"), kernels=False)


def test_initial_gram_of_the_bulk():
    # eq. (3): W / d with W ~ Wishart(d - 1, I_m): mean (d - 1) / d on the diagonal, off-diagonal variance
    # (d - 1) / d^2; the same draw for the same trial, and the DMFT starts from it (dmft eq. (7c)): C(0) = G
    m, d, K = 3, 50, 2000
    grams = np.array([np.reshape(initial_gram(k, m, d), (m, m)) for k in range(K)])
    assert np.allclose(grams.mean(axis=0), np.eye(m) * (d - 1) / d, atol=5 * math.sqrt(2 / d / K))
    assert np.var(grams[:, 0, 1]) == pytest.approx((d - 1) / d**2, rel=0.15)
    assert initial_gram(4, m, d) == initial_gram(4, m, d) and initial_gram(4, m, d) != initial_gram(5, m, d)
    g = initial_gram(4, 2, 200)
    setup = DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 3, m=2, paths=2000, replicas=1, planted=(0.0, 0.1),
                      source_tol=1e-3, initial_gram=g)
    res = solve_dmft(setup, cache=False)
    assert res.norm2[0] == pytest.approx((g[0] + g[3] + 0.01) / 2, rel=1e-12)
    assert res.overlap_init[0] == pytest.approx((g[0] + g[3]) / 2, rel=1e-12)   # <theta^0, theta^0> off the hard part
    assert "initial_gram" in setup.cache_key() and "initial_gram" not in DMFTSetup("quad", "phase_retrieval",
                                                                                    3.0, 0.05, 3).cache_key()
    assert trial_setup(Problem("quad", "phase_retrieval", m=2), 3.0, 200, 4, paths=4000, gram=True).initial_gram == g
    with pytest.raises(ThresholdsError, match="positive definite"):
        DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 3, m=2, initial_gram=(1.0, 2.0, 2.0, 1.0)).validate()
    with pytest.raises(ThresholdsError, match="m\\^2 = 4"):
        DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 3, m=2, initial_gram=(1.0, 0.0, 0.0)).validate()


def test_points_count_successes_per_point():
    rows = [{"d": 400, "delta": 5.0, "success": s} for s in (True, False, True)] + \
           [{"d": 200, "delta": 5.0, "success": False}]
    pts = points(rows)
    assert [(p.d, p.delta, p.successes, p.trials) for p in pts] == [(200, 5.0, 0, 1), (400, 5.0, 2, 3)]
    assert pts[1].rate == pytest.approx(2 / 3) and pts[1].se == pytest.approx(math.sqrt(2 / 9 / 3))


def _logistic_stub(center, width=0.8):
    """A trial function with a known success curve: trial j at delta escapes when (pi(j) + 1/2) / 40 lies below
    p(delta) = 1 / (1 + exp(-(delta - center(d)) / width)), pi a fixed permutation of the 40 strata (stratified,
    so the rates of the 40 follow p closely; permuted, as eq. (2s) permutes them, so that the first trials are
    not the easiest ones)."""
    calls = []
    pi = np.random.default_rng(0).permutation(40)

    def run(delta, d, j, n_paths):
        calls.append((delta, d, j, n_paths))
        p = 1 / (1 + math.exp(-(delta - center(d)) / width))
        return (pi[j] + 0.5) / 40 < p
    return run, calls


def test_predict_finds_a_known_crossing_per_d():
    from thresholds.forced import predict
    run, calls = _logistic_stub(lambda d: 6.0 + math.log2(d / 200))
    pred = predict(Problem("quad", "phase_retrieval", eta=0.05, steps=600), [200, 800], trials=40, start=8.0,
                   run=run)
    # The stub's 40 trials are one per stratum, so the rates of all 40 follow p exactly (the fixed design below
    # is held to 0.15); with eq. (2p) the deltas away from the crossing see only the first 10, a random subset of
    # the strata, whose rate scatters like a draw: the crossing is held to two of its own standard errors
    for c, true in zip(pred.crossings, (6.0, 8.0)):
        assert c.found and c.low < c.value < c.high
        assert abs(c.value - true) < 2 * (c.high - c.low) / 2
    # every d rests on at least four deltas, bracketing 1/2, with the rates of the stub
    for d in (200, 800):
        pts = [p for p in pred.points if p.d == d]
        assert len(pts) >= 4 and min(p.rate for p in pts) < 0.5 < max(p.rate for p in pts)
    # eq. (2p): trials 0..9 (the pilot) at every delta, 0..39 at the two deltas around each crossing (common
    # random numbers: a prefix of the same trials everywhere); paths of eq. (4e), max(n, 4000 delta) at m = 1
    for d, c in zip((200, 800), pred.crossings):
        ran = {}
        for delta, dd, j, _ in calls:
            if dd == d:
                ran.setdefault(delta, []).append(j)
        assert all(sorted(js) == list(range(len(js))) and len(js) in (10, 40) for js in ran.values())
        full = sorted(delta for delta, js in ran.items() if len(js) == 40)
        assert len(full) >= 2 and any(a <= c.value <= b for a, b in zip(full, full[1:]))   # more when it moved
        assert len(calls) == len(set(calls))   # no trial run twice
    assert pred.pilot == 10 and pred.to_json()["pilot"] == 10
    assert all(n == max(math.ceil(4000 * delta - 1e-9), math.ceil(delta * d - 1e-9)) for delta, d, _, n in calls)
    assert pred.to_json()["crossings"][0]["d"] == 200
    # pilot = trials: the fixed design, trials 0..39 at every delta, and the same crossing within its s.e.
    run, calls = _logistic_stub(lambda d: 6.0 + math.log2(d / 200))
    fixed = predict(Problem("quad", "phase_retrieval", eta=0.05, steps=600), [200, 800], trials=40, start=8.0,
                    run=run, pilot=40)
    assert all(p.trials == 40 for p in fixed.points) and len(calls) == 40 * len(fixed.points)
    for a, true in zip(fixed.crossings, (6.0, 8.0)):
        assert abs(a.value - true) < 0.15
    with pytest.raises(ThresholdsError, match="pilot"):
        predict(Problem("quad", "phase_retrieval", eta=0.05, steps=600), [200], trials=40, run=run, pilot=41)


def test_predict_halves_the_grid_step_where_the_fit_collapses():
    # eq. (2q): a success curve far steeper than the grid (width 0.1 against steps of 15%) leaves 0 / 40 and 40 / 40
    # at the two grid deltas about the crossing, a collapsed fit; the design then runs 40 trials at the geometric
    # midpoint of the gap (7.46: 16 / 40, one rate inside (0, 1), still collapsed) and again inside the new gap
    # (7.726: 36 / 40), where two rates inside (0, 1) resolve the crossing (thresholds.crossing eq. (6))
    from thresholds.crossing import collapsed_gap
    from thresholds.forced import grid_delta, halving_at, predict
    run, calls = _logistic_stub(lambda d: 7.5, width=0.1)
    pred = predict(Problem("quad", "phase_retrieval", eta=0.05, steps=600), [200], trials=40, start=8.0, run=run)
    (c,) = pred.crossings
    pts = {p.delta: (p.successes, p.trials) for p in pred.points}
    assert pts[6.957] == (0, 40) and pts[8.0] == (40, 40)
    assert pts[grid_delta(8.0, 1.15, -0.5)] == (16, 40) and pts[grid_delta(8.0, 1.15, -0.25)] == (36, 40)
    assert c.found and abs(c.value - 7.5) < 0.05 and (c.high - c.value) < (7.726 - 7.46) / math.sqrt(12)
    assert collapsed_gap(list(pts), [v[0] for v in pts.values()], [v[1] for v in pts.values()]) is None
    assert len(calls) == len(set(calls))
    # a resolved fit asks for nothing; a collapsed one for the midpoint in grid index
    assert halving_at([-1, 0], [[False] * 40, [True] * 40], 8.0, 1.15) == [-0.5]
    assert halving_at([-1, 0], [[False] * 30 + [True] * 10, [True] * 30 + [False] * 10], 8.0, 1.15) == []
    # a rate of exactly 1/2 inside the gap (quad, m = 8, rho0 = 0.5, d = 400: 0/10, 20/40, 40/40, 10/10): the gap
    # spans two grid steps, and both get their midpoint
    half = [[False] * 10, [False] * 20 + [True] * 20, [True] * 40, [True] * 10]
    assert halving_at([-1, 0, 1, 2], half, 3.2, 1.15) == [-0.5, 0.5]


def test_predict_reports_a_crossing_outside_the_search_range():
    from thresholds.forced import predict
    run, _ = _logistic_stub(lambda d: 50.0)
    pred = predict(Problem("quad", "phase_retrieval", eta=0.05, steps=600), [400], trials=40, start=8.0,
                   search_max=12.0, run=run)
    (c,) = pred.crossings
    assert not c.found and math.isnan(c.value) and "above" in c.note


def test_predict_end_to_end_on_a_short_horizon(monkeypatch, tmp_path):
    # the real forced DMFT at 40 steps and d = 25 (quad, eta 0.05): the trials run, are cached, and a second
    # call reads them back with the same result without solving again (counted, not timed: a 40-step trial
    # takes about as long as a cache read on a loaded machine)
    from thresholds import forced
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=40)
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))   # an empty cache of its own
    solved = []
    real = forced.solve_dmft
    monkeypatch.setattr(forced, "solve_dmft", lambda setup, **kw: solved.append(setup) or real(setup, **kw))
    first = forced.predict(problem, [25], trials=4, start=8.0, factor=2.0, paths=2000)
    runs = len(solved)
    again = forced.predict(problem, [25], trials=4, start=8.0, factor=2.0, paths=2000)
    assert [(p.delta, p.successes) for p in first.points] == [(p.delta, p.successes) for p in again.points]
    assert runs == 4 * len(first.points) and len(solved) == runs   # every trial solved once, then read back
    assert all(p.trials == 4 for p in first.points) and len(first.points) >= 2
    assert first.strata == 4 and first.to_json()["strata"] == 4   # eq. (2s) over the trials of a delta


def test_stratified_initial_overlaps():
    # eq. (2s): in every block of K trials one |xi|^2 per chi-square stratum ((j + U) / K, j = pi(k mod K)), at m = 1
    # (a sign) and m = 3 (a direction); strata = 0 is the iid stream; the same trial gives the same xi
    from scipy.stats import chi2
    K = 40
    for m in (1, 3):
        for block in (0, 1):
            ks = range(block * K, (block + 1) * K)
            q = [float(np.sum(np.square(initial_overlap(k, m, K)))) for k in ks]
            strata = [int(chi2.cdf(v, m) * K) for v in q]
            assert sorted(strata) == list(range(K)) and strata != list(range(K))   # every stratum, permuted
    signs = [initial_overlap(k, 1, K) > 0 for k in range(4 * K)]
    assert 0.35 < np.mean(signs) < 0.65
    assert initial_overlap(7, 1, K) == initial_overlap(7, 1, K) != initial_overlap(7, 1, 0) == initial_overlap(7)
    s = trial_setup(Problem("quad", "phase_retrieval", eta=0.05, steps=30), 5.0, 400, 7, paths=4000, strata=K)
    assert s.planted == pytest.approx(initial_overlap(7, 1, K) / 20.0) and s.seed == 7 and s.forcing_seed == 7


def test_nn_dims_forced_cli(tmp_path):
    """`thresholds nn --dims --finite-method forced` end to end on a 30-step horizon (quad, eta 0.05, small
    path counts): JSON "finite_d" rows with the forced method's record, each found crossing inside its range
    and its points' rates bracketing 1/2; the same at m = 2, where --finite-method auto is forced; a one-line refusal
    with --sphere."""
    import json

    from click.testing import CliRunner

    from cli import main
    env = {"THRESHOLDS_CACHE": str(tmp_path)}
    base = ["-a", "quad", "--eta", "0.05", "-T", "30", "--law", "dmft", "--paths", "400", "--replicas", "2",
            "--search-max", "40"]
    res = CliRunner().invoke(main, ["nn"] + base + ["--dims", "20", "--finite-method", "forced", "--finite-trials",
                                                    "6", "--finite-paths", "2000", "--finite-start", "6", "--json"],
                             env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    pred = out["finite_d_prediction"]
    assert pred["method"].startswith("forced") and pred["trials"] == 6 and pred["horizon_steps"] == 30
    assert pred["pilot"] == 4 and {p["trials"] for p in pred["points"]} <= {4, 6}   # eq. (2p): max(4, 6 / 4)
    (row,) = out["finite_d"]
    rates = [p["successes"] / p["trials"] for p in pred["points"]]
    if row["found"]:
        assert row["low"] < row["value"] < row["high"] and min(rates) < 0.5 < max(rates)
    else:
        assert row["note"]
    # width 2 (eq. (1m)) with the default --finite-method (auto: forced at every width), in this process: its own
    # records, a crossing inside its range or a note
    res = CliRunner().invoke(main, ["nn"] + base + ["--m", "2", "--dims", "20",
                                                    "--finite-trials", "4", "--finite-paths", "2000",
                                                    "--finite-start", "6", "--workers", "0", "--json"], env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["finite_d_prediction"]["trials"] == 4 and out["setup"]["m"] == 2
    assert out["finite_d_prediction"]["method"].startswith("forced")
    (row,) = out["finite_d"]
    assert (row["low"] < row["value"] < row["high"]) if row["found"] else row["note"]
    bad = CliRunner().invoke(main, ["nn"] + base + ["--sphere", "--dims", "20", "--finite-method", "forced"], env=env)
    assert bad.exit_code == 2 and "sphere" in bad.output and "Traceback" not in bad.output, bad.output
    for order in (["--finite-trials", "8", "--finite-pilot", "9"], ["--finite-pilot", "9", "--finite-trials", "8"]):
        bad = CliRunner().invoke(main, ["nn"] + base + ["--dims", "20", "--finite-method", "forced"] + order, env=env)
        assert bad.exit_code == 2 and "more than --finite-trials 8" in bad.output and "Traceback" not in bad.output


def test_growth_summary_reads_the_threshold_of_gd_runs():
    # synthetic growth records: success exactly when |A(25)| > 4, so the AUC at 25 is 1 and the table shows the
    # largest failure and the smallest success as effective overlaps |A(25)| / (sqrt(d) G(25, 0))
    from validation.planted_diagnostics import auc, growth_summary
    rows = []
    for k, a25 in enumerate([1.0, 3.0, 3.9, 4.1, 6.0, -5.0, -2.0]):
        rows.append({"check": "growth", "activation": "quad", "delta": 5.0, "d": 400, "t": [0, 25, 50],
                     "hard": [0.1 * k, a25, 2 * a25], "success": abs(a25) > 4})
    pred = {("quad", 5.0): {"growth_t_map": 4.0, "t_map": 25, "q_eff_low": 0.05, "q_eff_high": 0.06}}
    (line,) = growth_summary(rows, pred)[2:]
    assert "| 3/7 |" in line and "/ 1.00 / 1.00 |" in line
    assert f"{3.9 / 80:.4f}, {4.1 / 80:.4f}" in line and "[0.0500, 0.0600]" in line
    assert auc([1, 2, 3, 4], [False, True, False, True]) == pytest.approx(0.75)
    assert math.isnan(auc([1, 2], [True, True]))


def test_paired_crossing_counts_common_random_numbers():
    # thresholds.crossing.paired_crossing: when each trial has one critical delta (outcomes nested across the
    # deltas, as with common random numbers) the rates move together and the bootstrap over trials gives a larger
    # s.e. than the binomial one of the logistic fit (mean ratio about 1.5); with fresh trials per delta the
    # two agree (about 1.1); the crossing itself is the logistic one
    from thresholds.crossing import logistic_crossing, paired_crossing
    rng = np.random.default_rng(1)
    K, deltas = 40, [4.5, 5.5, 6.5, 7.5]
    nested, fresh = [], []
    for _ in range(6):
        c_k = rng.normal(6.0, 1.5, K)
        for out, acc in (([[dl > c for c in c_k] for dl in deltas], nested),
                         ([[dl > c for c in rng.normal(6.0, 1.5, K)] for dl in deltas], fresh)):
            c, se = paired_crossing(deltas, out, resamples=100)
            c0, se0 = logistic_crossing(deltas, [sum(o) for o in out], [K] * 4)
            assert c == c0 and se >= se0
            acc.append(se / se0)
    assert np.mean(nested) > 1.3 and np.mean(fresh) < 1.2
    assert paired_crossing(deltas, [[False] * K] * 4) == (None, None)


def test_paired_crossing_of_a_sequential_design():
    # eq. (2p) of thresholds.forced: trial k observed at delta i when k < len(outcomes[i]).  Lists of one length
    # give the rectangular bootstrap draw for draw (a plain NumPy reference of it here); ragged lists give the
    # logistic crossing of their counts, and the bootstrap resamples trials with the deltas where they were seen
    from thresholds.crossing import logistic_crossing, paired_crossing
    rng = np.random.default_rng(3)
    deltas = [2.6, 3.0, 3.5, 4.0]
    c_k = 3.2 + 0.3 * rng.logistic(size=40)
    out = [[dl > c for c in c_k] for dl in deltas]
    c, se = paired_crossing(deltas, out, resamples=60, seed=5)
    ref = np.random.default_rng(5)
    arr = np.asarray(out)
    boot = [logistic_crossing(deltas, arr[:, ref.integers(0, 40, 40)].sum(axis=1), [40] * 4)[0] for _ in range(60)]
    c0, se0 = logistic_crossing(deltas, arr.sum(axis=1), [40] * 4)
    low, high = np.percentile([b for b in boot if b is not None], [16, 84])
    assert c == c0 and se == max(se0, float(high - low) / 2)   # eq. (5) of thresholds.crossing
    ragged = [out[0][:10], out[1], out[2], out[3][:10]]
    c, se = paired_crossing(deltas, ragged, resamples=60)
    c1, se1 = logistic_crossing(deltas, [sum(o) for o in ragged], [10, 40, 40, 10])
    assert c == c1 and se >= se1 and abs(c - 3.2) < 3 * se
    # rates that fall with delta (a pilot of few trials can show them): a crossing in the gap, not an error
    assert logistic_crossing([1.0, 2.0], [6, 4], [10, 10]) == (1.5, pytest.approx(1 / math.sqrt(12)))
    # the rates, not the counts, decide whether 1/2 is bracketed: 15/40 lies below it and 6/10 above
    assert logistic_crossing([1.0, 2.0], [15, 6], [40, 10])[0] is not None
    assert logistic_crossing([1.0, 2.0], [15, 4], [40, 10]) == (None, None)
    # collapsed_gap names the gap whose midpoint a collapsed fit reports, and None where the fit resolves
    from thresholds.crossing import collapsed_gap
    steep = ([2.0, 2.5, 3.0, 3.5, 4.0], [0, 1, 40, 40, 40], [40] * 5)   # one rate strictly between 0 and 1
    assert collapsed_gap(*steep) == (2.5, 3.0)
    assert logistic_crossing(*steep) == (2.75, pytest.approx(0.5 / math.sqrt(12)))
    assert collapsed_gap([1.0, 2.0], [6, 4], [10, 10]) == (1.0, 2.0)
    assert collapsed_gap(deltas, arr.sum(axis=1), [40] * 4) is None
    assert collapsed_gap([1.0, 2.0], [15, 4], [40, 10]) is None   # nothing bracketed


def test_paired_crossing_spread_ignores_a_resample_that_runs_off_the_grid():
    # eq. (5) of thresholds.crossing on the forced trials of gelu m = 2, rho0 = 0.5, d = 800
    # (validation/reports/conventions/settings_width.jsonl): a shallow rate curve, one resample of 200 whose
    # logistic fit puts its crossing near 386.  The standard deviation of the resampled crossings is then
    # about 27; eq. (5) stays at the scale of the resamples' bulk, which a plain NumPy reference computes
    # here, and above the binomial s.e. of the logistic fit
    from thresholds.crossing import logistic_crossing, paired_crossing
    deltas = [5.595, 6.435, 7.4, 8.51]
    rows = ["0100000101", "0010000100100100100001010010001110000101",
            "0111111101010100010001000001111000110001", "1111110100011111011101110001101010101101"]
    out = [[ch == "1" for ch in r] for r in rows]
    c, se = paired_crossing(deltas, out)
    c0, se0 = logistic_crossing(deltas, [r.count("1") for r in rows], [len(r) for r in rows])
    assert c == c0 and 7.0 < c < 8.0
    ref = np.random.default_rng(0)
    seen = np.array([[k < len(r) for k in range(40)] for r in rows])
    arr = np.array([[k < len(r) and r[k] == "1" for k in range(40)] for r in rows])
    boot = []
    for _ in range(200):
        pick = ref.integers(0, 40, 40)
        n = seen[:, pick].sum(axis=1)
        boot.append(logistic_crossing(deltas, arr[:, pick].sum(axis=1), n)[0])
    boot = np.array([b for b in boot if b is not None])
    assert boot.max() > 100 and np.std(boot, ddof=1) > 10          # the resample off the grid
    assert se == pytest.approx(max(se0, (np.percentile(boot, 84) - np.percentile(boot, 16)) / 2))
    assert se0 <= se < 0.5


def test_forced_figure_draws_the_d_inf_theory_from_nn_json(tmp_path):
    """forced_trials --plot --delta-nn: delta_NN with the edge of n = delta D samples is a point at d = D (files
    without edge_d or without a crossing are skipped), the first G-clipped crossing the horizontal line."""
    import json

    from validation.forced_trials import figure, nn_theory

    def nn_json(name, edge_d, value, found=True, clipped=None):
        res = {"setup": {"edge_d": edge_d, "steps": 2000}, "found": found, "delta_nn": value,
               "delta_nn_low": value - 0.3, "delta_nn_high": value + 0.4,
               "delta_nn_clipped": {"value": clipped, "found": clipped is not None}}
        (tmp_path / name).write_text(json.dumps(res))
        return tmp_path / name

    files = [nn_json("a.json", 4000, 12.0), nn_json("b.json", 0, 11.0, clipped=10.5),
             nn_json("c.json", 1000, 11.2, clipped=10.7), nn_json("d.json", 250, 64.0, found=False)]
    theory, clipped, horizons = nn_theory(files)
    assert theory == [(1000, 11.2, 11.2 - 0.3, 11.2 + 0.4), (4000, 12.0, 12.0 - 0.3, 12.0 + 0.4)]
    assert clipped == (10.5, 2000) and horizons == {2000}
    rows = [{"d": 400, "delta": delta, "trial": k, "success": k < 10 * i, "paths": 2500}
            for i, delta in enumerate((4.0, 5.0, 6.0, 7.0)) for k in range(30)]
    out = tmp_path / "fig.png"
    figure(out, Problem("quad", "phase_retrieval", eta=0.05, steps=600), rows, nn_results=files)
    assert out.stat().st_size > 10_000


def test_width_growth_routes_start_from_the_same_planted_overlaps():
    """validation.width_growth: GD, the forced trial and the d = inf DMFT start from eq. (1), so every route's
    hard part at step 0 is q^2 (per neuron); the summary reports mean +- s.e. over a route's runs."""
    from validation.width_growth import dmft_run, gd_run, start, summarize

    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=3, m=2)
    assert start(2, 0.1) == (0.1, -0.1)
    with pytest.raises(ValueError):
        start(17, 0.1)
    ramp = np.array(start(4, 0.1, ramp=True))   # eq. (1r): unequal sizes, the same signs and hard part q^2
    assert np.all(np.sign(ramp) == np.sign(start(4, 0.1))) and np.mean(ramp**2) == pytest.approx(0.01, rel=1e-12)
    assert np.all(np.diff(np.abs(ramp)) > 0) and abs(ramp[-1]) == pytest.approx(7 * abs(ramp[0]))
    runs = [gd_run(problem, 3.0, 60, 0.1, seed=1), dmft_run(problem, 3.0, 0.1, 0, d=60, paths=500),
            dmft_run(problem, 3.0, 0.1, 0, paths=500), gd_run(problem, 3.0, 60, 0.1, seed=1, ramp=True),
            dmft_run(problem, 3.0, 0.1, 0, paths=500, ramp=True)]
    assert [r["route"] for r in runs] == ["gd", "forced", "dmft", "gd", "dmft"]
    for r in runs:
        assert len(r["hard"]) == 4 and r["hard"][0] == pytest.approx(0.01, abs=1e-12)
    assert runs[3]["hard"][1] != runs[0]["hard"][1] and runs[4]["hard"][1] != runs[2]["hard"][1]
    rows = summarize([{**runs[0], "hard": [0.01, 0.2, 0.3, 0.4]}, {**runs[0], "seed": 2, "hard": [0.01, 0.4, 0.3, 0.6]}],
                     steps=(0, 3))
    assert rows[2].startswith("| GD, d = 60 | 2 | 0.0100 +- 0.0000 | 0.5000 +- 0.1000 |")


def test_width_forcing_is_the_hard_gradient_of_the_complement_run():
    """validation.width_forcing eq. (2): its plain NumPy GD gives F_j(1) = (1/n) sum_i z_i psi_ij^0 and F_j(5) on
    validation.simulate's pre-activations (the complement run; with eq. (1) run_gd's planted start, at step 0),
    with a plain NumPy psi (quad: (y - mean_j u_j^2) 2 u_j), and the centred estimate of eq. (3); and the moments of
    eqs. (4)-(5), the per-sample a_ij = s_j z_i Psi_ij and scaling modes b_ij = sum_s psi_ij^s w_ij^s, on the same
    pre-activations."""
    from numpy.polynomial.hermite_e import hermevander

    from validation.simulate import GDSetup, run_gd
    from validation.width_forcing import SPLIT_DEGREE, forcing_run, moments, ratios
    from validation.width_growth import SIGNS, start

    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=5, m=3)
    signs = np.array(SIGNS[:3], float)
    for clamp in (0.0, 0.4):
        rec = forcing_run(problem, 3.0, 40, seed=7, clamp=clamp, split=True)
        res = run_gd(GDSetup.from_problem(problem, 3.0, 40, complement=not clamp, seed=7, test_loss=False,
                                          planted=start(3, clamp) if clamp else 0.0),
                     snapshots=range(5))
        (X, y), z, n = res.data, res.data[0][:, 0], len(res.data[1])
        U = [res.snapshots[t] for t in range(5)]
        psi = [(y - (u**2).mean(axis=1))[:, None] * 2 * u for u in U]
        np.testing.assert_allclose(rec["F"]["1"], z @ psi[0] / n, rtol=1e-10)
        zc = z[:, None] * psi[0] - (z[:, None] * psi[0]).mean(axis=0)
        signed = zc @ signs / 3
        np.testing.assert_allclose(rec["cov"]["1"]["diag"], np.diag(zc.T @ zc) / n**2, rtol=1e-10)
        assert rec["cov"]["1"]["mean"] == pytest.approx((zc.mean(axis=1) @ zc.mean(axis=1)) / n**2, rel=1e-10)
        assert rec["cov"]["1"]["signed"] == pytest.approx(signed @ signed / n**2, rel=1e-10)
        if not clamp:   # the complement run is GD itself at every step
            np.testing.assert_allclose(rec["F"]["5"], z @ sum(psi) / n, rtol=1e-9)
        # eqs. (4)-(5): run_gd holds the clamp at step 0 only; the complement run at every step
        bulk = [u - np.outer(z, start(3, clamp)) for u in U]        # the pre-activation less the held hard part
        t = 1 if clamp else 5
        a = z[:, None] * sum(psi[:t]) * signs
        b = sum(p * w for p, w in zip(psi[:t], bulk))
        got = rec["split"][str(t)]
        H = hermevander(z, SPLIT_DEGREE)
        np.testing.assert_allclose(got["Ha"], H.T @ a / n, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got["H"], H.mean(axis=0), rtol=1e-12)
        for key, want in (("a2", (a * a).mean(0)), ("b", b.mean(0)), ("b2", (b * b).mean(0)), ("ab", (a * b).mean(0))):
            np.testing.assert_allclose(got[key], want, rtol=1e-9, atol=1e-14)
    # the ratios on four hand-made records: per-neuron variance 4/3, of the mean 2/3, against eq. (3) = I / 2
    rows = [{"F": {"1": list(v)}, "cov": {"1": moments(0.5 * np.eye(2))}} for v in ([1, 1], [-1, -1], [1, -1], [-1, 1])]
    r = ratios(rows, 1, 2)
    assert r["diag"] == pytest.approx(4 / 3 / 0.5) and r["mean"] == pytest.approx(2 / 3 / 0.25)
    assert r["mean_corr"] == pytest.approx(1.0)


def test_width_forcing_split_ratios_against_a_direct_reference():
    """split_ratios (eqs. (4)-(5) from per-data-set moments) against the same quantities computed from the
    per-sample arrays: a pooled least-squares phi and variances over data sets, on synthetic data sets whose
    rest partly cancels phi-bar (so that cov is negative and every ratio is away from 1)."""
    from numpy.polynomial.hermite_e import hermevander

    from validation.width_forcing import SPLIT_DEGREE, split_moments, split_ratios

    rng = np.random.default_rng(3)
    n, m, sets = 300, 3, 12
    rows, per = [], []
    for _ in range(sets):
        z = rng.standard_normal(n)
        base = z**2 - 1 + 0.3 * z**3
        e = 0.5 * rng.standard_normal((n, m)) - 0.6 * base.mean()     # the rest leans against phi-bar
        a = base[:, None] + e
        b = rng.standard_normal((n, m)) + 0.4 * a
        rows.append({"n": n, "split": {"1": split_moments(z, a, b)}})
        per.append((z, a, b))
    got = split_ratios(rows, 1)
    zz = np.concatenate([np.repeat(z, m) for z, _, _ in per])
    c = np.linalg.lstsq(hermevander(zz, SPLIT_DEGREE), np.concatenate([a.ravel() for _, a, _ in per]), rcond=None)[0]
    phi = [hermevander(z, SPLIT_DEGREE) @ c for z, _, _ in per]
    F = np.array([a.mean(0) for _, a, _ in per])
    pbar = np.array([p.mean() for p in phi])
    ebar = F - pbar[:, None]
    pred = np.mean([a.var(0).mean() / n for _, a, _ in per])
    rest_pred = np.mean([(a - p[:, None]).var(0).mean() / n for (_, a, _), p in zip(per, phi)])
    B = np.concatenate([b.ravel() for _, _, b in per])
    A = np.concatenate([a.ravel() for _, a, _ in per])
    beta = np.polyfit(B, A, 1)[0]
    given = np.mean([(a - beta * b).var(0).mean() / n for _, a, b in per])
    bbar = np.array([b.mean(0) for _, _, b in per])
    sa = [a.mean(1) for _, a, _ in per]
    sb = [b.mean(1) for _, _, b in per]
    sbeta = np.polyfit(np.concatenate(sb), np.concatenate(sa), 1)[0]
    sF = np.array([v.mean() for v in sa])
    want_signed = {"signed_total": sF.var(ddof=1) / np.mean([v.var() / n for v in sa]),
                   "signed_given_b": sF.var(ddof=1) / np.mean([(x - sbeta * y).var() / n for x, y in zip(sa, sb)])}
    want = {**want_signed, "total": F.var(0, ddof=1).mean() / pred, "rest": ebar.var(0, ddof=1).mean() / rest_pred,
            "cov": 2 * np.mean([np.cov(pbar, ebar[:, j])[0, 1] for j in range(m)]) / pred,
            "phi_share": np.mean([p.var() / n for p in phi]) / pred, "given_b": F.var(0, ddof=1).mean() / given,
            "pinned": bbar.var(0, ddof=1).mean() / np.mean([b.var(0).mean() / n for _, _, b in per])}
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-8), key
    assert got["cov"] < -0.1 and got["total"] < 0.9


def test_a_sweep_never_adds_a_trial_in_the_other_precision(tmp_path):
    # records of float64 trials (before thresholds.forced eq. (4c)); a default (float32) sweep over the same trial
    # would count it twice, so it stops with a one-line error; in float64 it skips the trial as done
    from validation import records
    from validation.forced_trials import main, records_path, sweep
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=30)
    path = records_path(problem, tmp_path)
    records.append(path, {"delta": 5.0, "d": 400, "trial": 0, "steps": 30, "xi": 0.1, "hard_fraction": [0.0, 0.1],
                          "every": 25, "paths": 20000, "source_tol": 1e-3, "success": False})
    with pytest.raises(ThresholdsError, match="float64"):
        sweep(problem, [400], [5.0], 1, path=path, log=lambda s: None)
    sweep(problem, [400], [5.0], 1, path=path, log=lambda s: None, path_dtype="float64")
    assert len(records.read(path)) == 1
    with pytest.raises(SystemExit, match="--path-dtype float64"):
        main(["-a", "quad", "--eta", "0.05", "--steps", "30", "--dims", "400", "--delta", "5", "--trials", "1",
              "--out", str(tmp_path)])


def test_refine_at_and_the_replay_of_records():
    # eq. (2p)'s refinement step picks the deltas on either side of the crossing that lack trials; the replay of
    # validation.design_check runs it on a fixed grid: with the pilot equal to the trials it is the fixed design,
    # with a pilot it refines the pair around the crossing and uses fewer trials
    from thresholds.crossing import paired_crossing
    from thresholds.forced import refine_at
    from validation.design_check import replay
    assert refine_at([1.0, 2.0, 3.0, 4.0], [10, 10, 10, 10], 2.5, 40) == [1, 2]
    assert refine_at([1.0, 2.0, 3.0, 4.0], [10, 40, 10, 10], 2.5, 40) == [2]
    assert refine_at([1.0, 2.0, 3.0, 4.0], [10, 40, 40, 10], 2.5, 40) == []
    assert refine_at([1.0, 2.0], [10, 10], 0.5, 40) == [0] and refine_at([1.0, 2.0], [10, 10], 2.0, 40) == [1]
    rng = np.random.default_rng(2)
    c_k = 3.0 + 0.3 * rng.logistic(size=40)
    deltas = [2.0, 2.5, 3.0, 3.5, 4.0]
    out = [[dl > c for c in c_k] for dl in deltas]
    assert replay(deltas, out, 40, 40) == (*paired_crossing(deltas, out), 200)
    c, se, used = replay(deltas, out, 40, 10)
    assert used == 3 * 10 + 2 * 40 and abs(c - 3.0) < 3 * se


def test_trial_ends_once_its_hard_fraction_passes_half():
    # eq. (2e) / dmft eq. (7e): the run ends at the first step above 1/2 and is the full run's up to there; a
    # trial that stays below runs to the horizon; the outcome is the full run's
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=200)
    ended = 0
    for delta, k in ((8.0, 0), (8.0, 1), (8.0, 3), (6.0, 0)):
        full = run_trial(problem, delta, 200, k, cache=False, every=1, paths=2500)   # the cases of eq. (4)'s paths
        short = run_trial(problem, delta, 200, k, cache=False, every=1, stop=True, paths=2500)
        assert short.success == full.success
        above = [t for t, h in enumerate(full.hard_fraction) if h > 0.5]
        assert short.ended == (above[0] if above else None)
        assert len(short.hard_fraction) == (above[0] + 1 if above else 201)
        assert np.allclose(short.hard_fraction, full.hard_fraction[: len(short.hard_fraction)], rtol=1e-13, atol=0)
        ended += short.ended is not None
        assert ("ended" in short.to_json()) == (short.ended is not None)
    assert ended == 3   # three of the four pass 1/2 before step 200
    setup = trial_setup(problem, 8.0, 200, 0)
    for bad in ({"kernels": True}, {"kernels": False, "setup": DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 5)}):
        with pytest.raises(ThresholdsError, match="eq. \\(7e\\)"):
            solve_dmft(bad.get("setup", setup), kernels=bad["kernels"], stop_above=0.5)


def test_ended_trials_in_the_cache(monkeypatch, tmp_path):
    # an ended run (eq. (2e)) is stored under its own key: a whole-run request does not take it, and an ended
    # request takes a whole run's entry
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=200)
    short = run_trial(problem, 8.0, 200, 1, every=1, stop=True)
    assert short.ended is not None and len(list(tmp_path.glob("forced-*.json"))) == 1
    assert run_trial(problem, 8.0, 200, 1, every=1, stop=True).hard_fraction == short.hard_fraction
    full = run_trial(problem, 8.0, 200, 1, every=1)
    assert full.ended is None and len(full.hard_fraction) == 201 and len(list(tmp_path.glob("forced-*.json"))) == 2
    for entry in tmp_path.glob("forced-*.json"):
        entry.unlink()
    run_trial(problem, 8.0, 200, 1, every=1)
    again = run_trial(problem, 8.0, 200, 1, every=1, stop=True)   # read from the whole run's entry
    assert again.ended is None and again.success and len(list(tmp_path.glob("forced-*.json"))) == 1
    # an ended entry whose hard fraction does not end above 1/2 is a miss
    setup = trial_setup(problem, 8.0, 200, 2)
    cache.store("forced", {**setup.cache_key(), "stop_above": 0.5}, {name: np.full(30, 0.1) for name in CURVES})
    assert run_trial(problem, 8.0, 200, 2, every=1, stop=True).final > 0.5


def test_committed_trials_stay_above_half_once_there():
    # the premise of eq. (2e): in every committed record of a whole run, a trial whose hard fraction passed 1/2
    # at a kept step ends above it
    import glob
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "validation" / "reports"
    passed = 0
    for path in sorted(glob.glob(str(root / "**" / "*.jsonl"), recursive=True)):
        for line in Path(path).read_text().splitlines():
            rec = json.loads(line) if line.strip() else None
            if not (isinstance(rec, dict) and isinstance(rec.get("hard_fraction"), list) and "success" in rec):
                continue
            if rec.get("ended") is None and max(rec["hard_fraction"]) > 0.5:
                passed += 1
                assert rec["success"] and rec["hard_fraction"][-1] > 0.5, (path, rec["delta"], rec["trial"])
    assert passed >= 3800


def test_orthogonal_sources_are_an_option_of_a_trial():
    """dmft eq. (6g) in a forced trial: off by default (eq. (4d)), in the run's cache key and in its record when on,
    the path count unchanged."""
    wide = Problem("quad", "phase_retrieval", eta=0.05, steps=30, m=8)
    plain, orth = trial_setup(wide, 3.5, 800, 0), trial_setup(wide, 3.5, 800, 0, source_orth=True)
    assert not plain.source_orth and orth.source_orth and orth.paths == plain.paths == 80_000
    assert "source_orth" not in plain.cache_key() and orth.cache_key()["source_orth"] is True
    small = Problem("quad", "phase_retrieval", eta=0.05, steps=10, m=2)
    tr = run_trial(small, 3.0, 200, 0, paths=2000, source_orth=True, cache=False)
    assert tr.to_json()["source_orth"] is True and len(tr.hard_fraction) == 2 and 0 < tr.final < 1
    assert "source_orth" not in run_trial(small, 3.0, 200, 0, paths=2000, cache=False).to_json()


def test_paired_against_counts_discordant_trials_and_the_paired_shift():
    """validation.forced_trials --against: two records of the same trials, the second escaping at every delta
    where the first does plus one more trial per delta; the difference is negative and its discordant counts are
    exact."""
    from validation.forced_trials import paired_against
    deltas, K = (4.0, 5.0, 6.0), 40
    base = {4.0: 8, 5.0: 20, 6.0: 32}     # trials 0 .. k - 1 escape

    def rows(extra):
        return [{"d": 200, "delta": x, "trial": k, "success": k < base[x] + extra} for x in deltas for k in range(K)]
    lines = paired_against(rows(0), rows(4) + [{"d": 200, "delta": 7.0, "trial": 0, "success": True}], resamples=200)
    assert len(lines) == 3
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:3] == ["200", "40", "4, 5, 6"]     # delta 7 is in one record only
    assert cells[8] == "0 / 12"
    assert float(cells[7].split()[0]) < 0

"""The finite-n hard forcing of the planted DMFT (thresholds.dmft eq. (7b)) and the forced trials built on it
(thresholds.forced): the forcing's scale exactly and its variance against a quadrature, with and without the
paths' own Monte Carlo forcing, cache keys, records and refusals."""

import math

import numpy as np
import pytest

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.errors import ThresholdsError, UnsupportedError
from thresholds.forced import initial_overlap, points, trial_setup
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
    with pytest.raises(ThresholdsError, match="one neuron"):
        trial_setup(Problem("quad", "phase_retrieval", m=2), 5.0, 400, 0, paths=4000)
    with pytest.raises(ThresholdsError, match="hard and"):
        trial_setup(Problem("quad", "z1**2 + z2**2"), 5.0, 400, 0, paths=4000)


def test_points_count_successes_per_point():
    rows = [{"d": 400, "delta": 5.0, "success": s} for s in (True, False, True)] + \
           [{"d": 200, "delta": 5.0, "success": False}]
    pts = points(rows)
    assert [(p.d, p.delta, p.successes, p.trials) for p in pts] == [(200, 5.0, 0, 1), (400, 5.0, 2, 3)]
    assert pts[1].rate == pytest.approx(2 / 3) and pts[1].se == pytest.approx(math.sqrt(2 / 9 / 3))

"""The law of the hard component in the first steps (thresholds.forcing): eqs. (1)-(3) against a direct
simulation of the linear recursion, and the d = inf law against finite-d GD tangents."""

import math

import numpy as np
import pytest

from thresholds.dmft import DMFTSetup
from thresholds.forcing import amplitude_law, propagator, variance


def test_propagator_and_variance_against_the_recursion():
    # M(t+1) = M(t) + eta sum_r KM(t,r) M(r) + eta phi_t, M(0) = rho0 xi, phi ~ N(0, KF/delta), simulated
    rng = np.random.default_rng(0)
    T, eta, delta, rho0 = 12, 0.1, 3.0, 0.8
    KM = np.tril(rng.normal(0.5, 0.3, (T, T)))
    L = rng.normal(size=(T, T))
    KF = L @ L.T / T + np.eye(T)
    G = propagator(KM, eta)
    V = variance(G, KF, eta, delta, rho0)
    n = 400_000
    M = np.zeros((T + 1, n))
    M[0] = rho0 * rng.standard_normal(n)
    phi = (np.linalg.cholesky(KF / delta) @ rng.standard_normal((T, n)))
    for t in range(T):
        M[t + 1] = M[t] + eta * KM[t, : t + 1] @ M[: t + 1] + eta * phi[t]
    assert np.allclose(M.var(axis=1), V, rtol=0.01)
    # the unforced part: G(t, 0) is the growth of the initial overlap
    free = np.zeros(T + 1)
    free[0] = 1.0
    for t in range(T):
        free[t + 1] = free[t] + eta * KM[t, : t + 1] @ free[: t + 1]
    assert np.allclose(G[:, 0], free, rtol=1e-12)


SEEDS = 40


@pytest.mark.parametrize("delta", [5.0])
def test_amplitude_law_matches_finite_d_tangents(delta):
    """quad / phase retrieval, eta 0.05, 25 steps.  d = inf law (pathwise DMFT, 4 x 40k paths) against 40
    finite-d runs at d = 400 of the forced tangent (validation.tangent_check, eq. (2)): the growth of the
    initial overlap G(25, 0) (finite d: exp(Lambda(25)), mean over runs) and the standard deviation of the
    forced part A - xi G (runs with the same data and zero initial hard overlap).  Tolerance: 3 standard
    errors of the 40-run estimates plus 15% for d = 400: the finite-d growth is below the d = inf one and
    rises slowly with d (median exp(Lambda(25)) 3.9, 4.3, 4.6, 4.8 at d = 200, 800, 1600, 3200; mean 4.5 +- 0.2
    at d = 400) against 4.53 +- 0.07 at d = inf.  Fewer paths bias the d = inf growth upward (5.5 +- 0.3
    with 4 x 10k: G is a product of noisy kernels); validation/reports/forcing has more steps and d."""
    from validation.tangent_check import draw, run
    T, eta, d = 25, 0.05, 400
    law = amplitude_law(DMFTSetup("quad", "phase_retrieval", delta, eta, T, paths=160000, replicas=4,
                                  response="pathwise"))
    growth, forced = [], []
    for seed in range(SEEDS):
        fns, X, y, th = draw("quad", "phase_retrieval", delta, d, 1, 500 + seed)
        th[0] = 0.0
        res = run(1, delta, seed, data=(fns, X, y, th), eta=eta, steps=T)
        growth.append(math.exp(res.lam[T]))
        forced.append(res.forced[T, 0] * math.sqrt(d))
    growth, forced = np.array(growth), np.array(forced)
    g_inf = law.growth[T]
    assert abs(growth.mean() - g_inf) < 3 * growth.std(ddof=1) / math.sqrt(SEEDS) + 0.15 * g_inf + 3 * law.growth_err[T]
    sd_inf = math.sqrt(law.variance[T] - law.growth[T] ** 2)   # rho0 = 1
    sd = forced.std()
    assert abs(sd - sd_inf) < 3 * sd / math.sqrt(2 * SEEDS) + 0.15 * sd_inf
    assert 0.2 < law.forced[T] < 0.6  # the forcing carries a real share of the spread at step 25

"""The m -> inf sector equations (thresholds.meanfield) against the m x m engine (thresholds.stieltjes_m)."""

import numpy as np
import pytest
from scipy import optimize

from thresholds.catalog import get_activation
from thresholds.hessian import hessian_weight_m
from thresholds.meanfield import PopulationLaw, kappa_sym, lowest_outlier, sector_matrices, sectors
from thresholds.stieltjes import z_of_alpha
from thresholds.stieltjes_m import MatrixLaw, S_matrix, solve_alpha


def test_kappa_sym_is_exact_at_finite_width():
    # (1/M) 1^T K 1 with K = (I + W alpha/delta)^{-1} W, W = diag(D) + v v^T/M, alpha = a1 I + (a2/M) 1 1^T
    rng = np.random.default_rng(3)
    for M in (2, 5, 11):
        D, v = rng.normal(size=(4, M)), rng.normal(size=(4, M))
        a1, a2, delta = 0.3, -0.2, 2.5
        alpha = a1 * np.eye(M) + a2 / M * np.ones((M, M))
        direct = [np.linalg.solve(np.eye(M) + (np.diag(d) + np.outer(w, w) / M) @ alpha / delta,
                                  np.diag(d) + np.outer(w, w) / M).sum() / M for d, w in zip(D, v)]
        assert kappa_sym(D, v, a1, a2, delta) == pytest.approx(direct, rel=1e-11, abs=1e-12)


def _population(m, n=2000, seed=1):
    """An exchangeable first-phase-like law: u_j = common + own noise + a function of y (not of g's sign)."""
    r = np.random.default_rng(seed)
    g = r.normal(size=n)
    y = g**2
    U = 0.5 * r.normal(size=(n, 1)) + 0.9 * r.normal(size=(n, m)) + 0.3 * (y[:, None] - 1)
    return U, y, g


def test_sectors_are_the_wide_limit_of_the_matrix_engine():
    """At a fixed z below the bulk, the m x m engine's S restricted to the symmetric mix (1/sqrt m) and
    averaged over the m - 1 others tends to S_S and S_A; the antisymmetric error falls like 1/m."""
    act, delta = get_activation("tanh"), 3.0
    errs = {}
    for m in (4, 8, 16):
        U, y, g = _population(m)
        law = PopulationLaw.from_samples(act, 1.5, 0.1, U, y, g)
        res = sectors(law, delta)
        z = res.z0 - 0.3
        a1 = optimize.brentq(lambda a: z_of_alpha(law.pooled, delta, a) - z, 1e-9, res.alpha1)
        S_A, S_S, a_s = sector_matrices(law, delta, a1)
        full = MatrixLaw(hessian_weight_m(act, 1.5, 0.1, U, y), g**2, np.full(y.size, 1.0 / y.size))
        alpha = solve_alpha(full, delta, z)[0]
        S = S_matrix(full, delta, alpha)
        one = np.ones(m) / np.sqrt(m)
        sym, sym_alpha = one @ S @ one, one @ alpha @ one
        anti = (np.trace(S) - sym) / (m - 1)
        errs[m] = (abs(S_A[0, 0] - anti), abs(S_S[0, 0] - sym), abs(a_s - sym_alpha))
    assert errs[16][0] < 0.4 * errs[4][0] and errs[16][0] < 0.05, errs
    assert errs[16][1] < 0.01 and errs[16][2] < 1e-3, errs
    assert errs[4][0] > 0.02  # the finite-width correction is real: the test would see a wrong 1/m term


def test_sector_outlier_is_a_root_and_psd_weights_have_none():
    rng = np.random.default_rng(5)
    n, M, delta = 3000, 12, 10.0
    g = rng.normal(size=n)
    # D negative where g_H^2 is large, bounded below, bulk above 0: a negative hard outlier in the
    # antisymmetric sector
    D = np.maximum(1 - g[:, None] ** 2, -1.0) * (1 + 0.3 * rng.normal(size=(n, M))) + 0.5
    v = 1 + 0.2 * rng.normal(size=(n, M))
    law = PopulationLaw(D, v, g**2, np.full(n, 1.0 / n))
    res = sectors(law, delta)
    assert res.antisymmetric > 0 and res.left_edge > 0 and res.z0 == 0
    z = lowest_outlier(law, delta, "antisymmetric", res)
    assert z < res.z0
    a1 = optimize.brentq(lambda a: z_of_alpha(law.pooled, delta, a) - z, 1e-9, res.alpha1)
    assert abs(np.linalg.eigvalsh(sector_matrices(law, delta, a1)[0])[0]) < 1e-8
    psd = sectors(PopulationLaw(np.abs(D), v, g**2, law.w), delta)
    assert psd.antisymmetric < 0 and psd.symmetric < 0 and psd.indicator < 0


def test_nn_evaluation_at_m_inf(tmp_path, monkeypatch):
    """--m inf through thresholds.nn: the indicator is the larger sector's, the sectors are recorded, finite
    widths keep their cache keys, and the DMFT law is refused."""
    from thresholds.errors import UnsupportedError
    from thresholds.nn import NNSetup
    from thresholds.store import setup_fields
    from validation.gd_law import evaluate
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    setup = NNSetup("gelu", m=4, mean_field=True, law_d=80, replicas=2, steps=40)
    ev = evaluate(setup, 6.0, final_only=True)
    anti, _, sym, _ = ev.sectors[-1]
    # per replica the indicator is max(antisymmetric, symmetric); the mean of a max is >= the max of means
    assert len(ev.sectors) == 1 and max(anti, sym) - 1e-12 <= ev.indicator[-1] <= max(anti, sym) + abs(anti - sym)
    assert "mean_field" in setup_fields(setup) and "mean_field" not in setup_fields(NNSetup("gelu", m=4))
    for bad in (NNSetup("gelu", m=4, mean_field=True, law="dmft"), NNSetup("gelu", m=1, mean_field=True)):
        with pytest.raises(UnsupportedError):
            bad.validate()
    from validation.gd_law import escape_times
    with pytest.raises(UnsupportedError, match="grok covers finite widths"):
        escape_times(setup, 6.0, [1000])


def test_population_law_rejects_bad_input():
    from thresholds.errors import DivergenceError, ThresholdsError
    D, v, g, w = np.zeros((5, 3)), np.ones((5, 3)), np.ones(5), np.full(5, 0.2)
    with pytest.raises(DivergenceError, match="non-finite"):
        PopulationLaw(D, np.where(D == 0, np.nan, v), g, w)
    with pytest.raises(ThresholdsError, match="sum to 1"):
        PopulationLaw(D, v, g, w * 2)
    with pytest.raises(ThresholdsError, match="at least 2 neurons"):
        PopulationLaw(D[:, :1], v[:, :1], g, w)
    with pytest.raises(ThresholdsError, match="must be"):
        PopulationLaw(D, v[:, :2], g, w)

import numpy as np
import pytest

from thresholds.dmft import DMFTSetup
from thresholds.errors import NotDifferentiableError
from thresholds.hessian import hessian_spectrum, hessian_weight


def test_hessian_weight_is_minus_psi_prime():
    # quad: f = u^2, psi = (y - u^2) 2u, psi' = 2y - 6u^2, G = -psi' = 6u^2 - 2y
    u = np.array([-1.0, 0.3, 2.0])
    y = np.array([0.5, 1.0, 4.0])
    assert np.allclose(hessian_weight("quad", 1.0, 0.0, u, y), 6 * u**2 - 2 * y)


def test_linear_activation_hessian_is_marchenko_pastur():
    # sigma linear: G = a^2 = 1 for every sample, H = X^T X / n: MP edges, no outlier
    res = hessian_spectrum(DMFTSetup("linear", "abs", delta=4.0, eta=0.2, steps=3, paths=4000, replicas=2),
                           cache=False)
    assert res.left_edge == pytest.approx(0.25, abs=1e-9) and res.right_edge == pytest.approx(2.25, abs=1e-9)
    assert res.settled and res.outliers == [] and res.negative_outlier is False


def test_hessian_needs_second_derivative():
    with pytest.raises(NotDifferentiableError):
        hessian_spectrum(DMFTSetup("relu", "abs", delta=4.0, eta=0.2, steps=3, paths=400, replicas=2))


def test_sample_quantile_is_the_median_of_the_minimum():
    """Eq. (5): (1 - q)^n = 1/2; the median of the minimum of n uniforms is that q."""
    from thresholds.hessian import sample_quantile
    for n in (1, 7, 1000, 1e6):
        assert n * np.log1p(-sample_quantile(n)) == pytest.approx(-np.log(2), rel=1e-12)
    mins = np.random.default_rng(1).random((4001, 50)).min(axis=1)
    assert np.median(mins) == pytest.approx(sample_quantile(50), rel=0.05)


def _pr_sample(N, seed=0):
    """Phase retrieval at t = 0 (u independent of g, y = g^2): G = 6 u^2 - 2 y is unbounded below."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(N)
    return rng.standard_normal(N) * 0.8, g * g, g


def test_tail_cut_gives_the_indicator_of_n_samples():
    """Two routes to the indicator of a data set of n samples: one large law cut at the extreme of n
    samples (eq. (5)), and the mean of the plain indicators of disjoint n-sample subsets.  They agree
    within 3 s.e., while the plain large law (its own, far lower, minimum) is many s.e. away."""
    from thresholds.catalog import get_activation
    from thresholds.hessian import ENGINES
    act, setup = get_activation("quad"), DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=1000, replicas=2)
    N, n = 200_000, 1000
    u, y, g = _pr_sample(N)
    one = ENGINES["scalar"]
    cut = one(act, setup, 16.0, u, y, g, np.full(N, 1 / N), False, tail_n=n).indicator
    plain = one(act, setup, 16.0, u, y, g, np.full(N, 1 / N), False).indicator
    subs = np.array([one(act, setup, 16.0, u[k:k + n], y[k:k + n], g[k:k + n], np.full(n, 1 / n), False).indicator
                     for k in range(0, N, n)])
    mean, se = subs.mean(), subs.std(ddof=1) / np.sqrt(subs.size)
    assert abs(cut - mean) < 3 * se
    assert abs(plain - mean) > 10 * se


def test_tail_cut_beyond_the_paths_is_the_plain_law():
    """A cut at more samples than the law has keeps its minimum: the plain indicator, with a note."""
    from thresholds.laws import FirstPhaseLaw, ReplicaLaw
    from thresholds.hessian import spectra_of_law
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=2000, replicas=2)
    law = FirstPhaseLaw({10: [ReplicaLaw(*_pr_sample(1000, s), np.full(1000, 1e-3)) for s in (0, 1)]})
    plain = spectra_of_law(setup, law, outliers="none")[10]
    far = spectra_of_law(setup, law, outliers="none", edge_d=10**6)[10]
    near = spectra_of_law(setup, law, outliers="none", edge_d=10)[10]
    assert far.negative_indicator == plain.negative_indicator and "poorly resolved" in far.notes[-1]
    assert abs(near.negative_indicator - plain.negative_indicator) > 0.1 and "poorly" not in near.notes[-1]
    assert "n = 160 samples" in near.notes[-1]


def test_median_unbiased_cut_is_numpys_type_8_quantile():
    # validation.tail_edge's second estimator of the eq. (5) cut against numpy's "median_unbiased" quantile
    # (Hyndman & Fan type 8), from the tail (a rank below the minimum) to the middle of the sample
    from validation.tail_edge import _median_unbiased_cut
    rng = np.random.default_rng(0)
    for K, q in [(1000, 3e-3), (48_000, 6.3e-5), (100, 0.2), (50, 1e-3)]:
        G = rng.normal(size=K)
        cut = _median_unbiased_cut(G, q)
        assert cut.min() == pytest.approx(np.quantile(G, q, method="median_unbiased"), abs=1e-12)
        assert np.array_equal(cut, np.maximum(G, cut.min()))


def test_the_cut_records_weighted_route_is_the_scalar_engines():
    # validation.tail_edge composes the plain indicator from the engine's pieces so that both cut estimators share
    # one route; with the weighted quantile it is the scalar engine's indicator under eq. (5) (no sphere shift)
    from thresholds.catalog import get_activation
    from thresholds.hessian import ENGINES, sample_quantile
    from validation.tail_edge import _cut_indicator
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=1000, replicas=2)
    u, y, g = _pr_sample(20_000)
    n = 3000
    engine = ENGINES["scalar"](get_activation("quad"), setup, 16.0, u, y, g, np.full(u.size, 1 / u.size), False,
                               tail_n=n).indicator
    assert _cut_indicator(setup, u, y, g, sample_quantile(n), "weighted") == pytest.approx(engine, rel=1e-12)

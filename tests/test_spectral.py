import math

import numpy as np
import pytest

from thresholds.alg import delta_alg
from thresholds.errors import DivergenceError, ExpressionError, ThresholdsError, UnsupportedError
from thresholds.outlier import spectrum
from thresholds.spectral import get_preprocessing, link_ynodes, spectral, weight_law
from thresholds.catalog import get_link
from thresholds.stieltjes import WeightLaw, bulk_edges, density


def mp_law():
    return WeightLaw.from_nodes(np.array([1.0]), np.array([1.0]), np.array([1.0]))


@pytest.mark.parametrize("delta", [0.5, 2.0, 4.0])
def test_marchenko_pastur_edges_and_density(delta):
    law = mp_law()
    left, right = bulk_edges(law, delta)
    assert right.z == pytest.approx((1 + delta ** -0.5) ** 2, rel=1e-13)
    assert left.z == pytest.approx((1 - delta ** -0.5) ** 2, rel=1e-12, abs=1e-13)
    xs = np.linspace(left.z, right.z, 20001)
    rho = density(law, delta, xs)
    lam = 1 / delta
    exact = np.sqrt(np.clip((right.z - xs) * (xs - left.z), 0, None)) / (2 * np.pi * lam * xs)
    assert np.max(np.abs(rho - exact)) < 1e-6
    # continuous part has mass min(1, delta); an atom at 0 carries the rest
    assert np.trapezoid(rho, xs) == pytest.approx(min(1.0, delta), abs=2e-3)


def test_density_integrates_to_one_for_a_two_point_law():
    law = WeightLaw.from_nodes(np.array([-1.0, 2.0]), np.array([0.3, 0.7]), np.array([1.0, 1.0]))
    left, right = bulk_edges(law, 3.0)
    xs = np.linspace(left.z, right.z, 40001)
    assert np.trapezoid(density(law, 3.0, xs), xs) == pytest.approx(1.0, abs=2e-3)


@pytest.mark.parametrize("link", ["phase_retrieval", "abs"])
def test_optimal_preprocessing_reaches_delta_alg(link):
    # consistency check against the independent formula 1/E[(E[g^2|y]-1)^2]
    res = spectral(link, "optimal")
    exact = delta_alg(link).delta_alg
    assert abs(res.delta_T.value - exact) < 1e-8
    assert res.delta_T.error < 1e-8


def test_mondelli_montanari_preprocessing_reaches_half():
    res = spectral("phase_retrieval", "mm")
    assert abs(res.delta_T.value - 0.5) < 1e-8


def test_outlier_merges_with_edge_at_threshold():
    res = spectral("phase_retrieval", "Min(y, 3)")
    d_t = res.delta_T.value
    assert 0.5 < d_t < 2.0  # a suboptimal preprocessing needs more samples than delta_alg
    above = spectral("phase_retrieval", "Min(y, 3)", delta=d_t * 1.01)
    below = spectral("phase_retrieval", "Min(y, 3)", delta=d_t * 0.99)
    assert not [o for o in below.outliers if o["side"] == "right"]
    (out,) = [o for o in above.outliers if o["side"] == "right"]
    assert 0 < out["overlap2"] < 0.05  # overlap vanishes continuously at the transition
    assert out["z"] - above.bulk_edges[1] < 1e-2 * above.bulk_edges[1]


def test_outlier_and_overlap_converge_in_quadrature_level():
    res = spectral("phase_retrieval", "optimal", delta=2.0)
    (out,) = res.outliers
    assert out["z_error"] < 1e-8 * abs(out["z"]) and out["overlap2_error"] < 1e-8
    assert 0 < out["overlap2"] < 1
    assert res.edge_kinds[0] == "none" and math.isinf(res.bulk_edges[0]) and res.bulk_edges[0] < 0


def test_unbounded_preprocessing_has_no_right_edge():
    # T(y) = y with y = g^2 is unbounded above: the bulk edge diverges, no outlier separates
    res = spectral("phase_retrieval", "y")
    assert math.isinf(res.delta_T.value)


def test_multi_index_spectrum_has_two_equal_outliers():
    res = spectral("product", "y**2/(1 + y**2)", delta=6.0, level=5)
    right = [o for o in res.outliers if o["side"] == "right"]
    assert len(right) >= 1
    assert all(0 < o["overlap2"] <= 1 for o in right)


def test_samples_law_and_infinite_second_moment():
    rng = np.random.default_rng(0)
    g = rng.standard_normal(20000)
    law = WeightLaw.from_samples(g**2, g)
    assert np.isfinite(bulk_edges(law, 3.0)[1].z)
    with pytest.raises(DivergenceError, match="infinite second moment"):
        WeightLaw.from_samples(np.concatenate([[-1e9, 1e9], g]), np.concatenate([[0.0, 0.0], g]))


@pytest.mark.parametrize("call, error, fragment", [
    (lambda: spectral("phase_retrieval", "y + w"), ExpressionError, "unknown symbol 'w'"),
    (lambda: spectral("phase_retrieval", "2"), ExpressionError, "does not depend on y"),
    (lambda: spectral("noisy_phase_retrieval", "1/y"), DivergenceError, "pole at y = 0"),
    (lambda: spectral("phase_retrieval", "optimal", delta=0.0), ThresholdsError, "delta must be > 0"),
    (lambda: spectral("phase_retrieval", "optimal", delta=-1.0), ThresholdsError, "delta must be > 0"),
    (lambda: spectral("product", "optimal"), UnsupportedError, "single-index"),
])
def test_bad_input(call, error, fragment):
    with pytest.raises(error, match=fragment):
        call()


def test_spectrum_api_on_nodes():
    nodes = link_ynodes(get_link("phase_retrieval"), level=5)
    law = weight_law(nodes, get_preprocessing("optimal"), 3.0, with_mp=True)
    spec = spectrum(law, 3.0, dps=30)
    (out,) = spec.outliers
    assert abs(float(out.z_mp) - out.z) < 1e-12

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

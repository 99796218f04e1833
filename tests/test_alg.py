import math

import mpmath
import pytest

from thresholds.alg import delta_alg
from thresholds.errors import UnsupportedError


@pytest.mark.parametrize("link", ["phase_retrieval", "abs"])
def test_half_for_phase_retrieval_and_abs(link):
    res = delta_alg(link)
    assert res.hard_dim == 1 and res.easy_dim == 0
    assert abs(res.delta_alg - 0.5) < 1e-12
    assert res.error < 1e-12
    assert res.generative_exponent == 2


@pytest.mark.parametrize("link", ["sign", "he3", "relu", "noisy_linear"])
def test_easy_single_index_links(link):
    res = delta_alg(link)
    assert res.easy_dim == 1 and res.hard_dim == 0 and res.delta_alg == 0.0
    assert res.generative_exponent == 1


def test_parity3_is_infinite():
    res = delta_alg("parity3")
    assert res.hard_dim == 3 and math.isinf(res.delta_alg)
    assert res.generative_exponent == 3
    assert res.to_json()["delta_alg"] == "inf"


def test_mixed_has_one_easy_and_one_hard_direction():
    res = delta_alg("mixed")
    assert (res.easy_dim, res.hard_dim) == (1, 1)
    assert res.easy_basis == [[1.0, 0.0]] and res.hard_basis == [[0.0, 1.0]]
    assert abs(res.delta_alg - 0.5) <= max(res.error, 1e-7)


def test_rotated_mixed_link_is_found_in_rotated_basis():
    res = delta_alg("(z1+z2)/sqrt(2) + ((z1-z2)/sqrt(2))**2")
    assert (res.easy_dim, res.hard_dim) == (1, 1)
    s = 1 / math.sqrt(2)
    assert res.easy_basis[0] == pytest.approx([s, s], abs=1e-6)
    assert abs(res.delta_alg - 0.5) <= max(res.error, 1e-7)


def test_staircase_is_all_easy():
    res = delta_alg("staircase")
    assert res.hard_dim == 0 and res.easy_dim == 2 and res.delta_alg == 0.0


def test_sum_of_squares_is_one():
    # G(y) = (y/2 - 1) I since E[z_i^2 | y] = y/2, so lambda_max(F) = Var(y)/4 = 1 (y ~ chi2_2)
    res = delta_alg("sum_of_squares")
    assert res.hard_dim == 2
    assert abs(res.delta_alg - 1.0) <= res.error
    assert res.error < 1e-6


def test_product_matches_bessel_closed_form():
    # y = z1 z2 has density K0(|y|)/pi and E[z1^2 | y] = |y| K1(|y|)/K0(|y|), E[z1 z2 | y] = y.
    # G = (a - 1) I + y sigma_x has fixed eigenvectors (1, +-1)/sqrt 2, so
    # lambda_max(F) = E[(a - 1)^2] + E[y^2] = 1 + E[(a - 1)^2].
    with mpmath.workdps(25):
        f = lambda y: (y * mpmath.besselk(1, y) / mpmath.besselk(0, y) - 1) ** 2 \
            * 2 * mpmath.besselk(0, y) / mpmath.pi  # noqa: E731
        exact = float(1 / (1 + mpmath.quad(f, [0, 1, mpmath.inf])))
    res = delta_alg("product")
    assert res.hard_dim == 2
    assert abs(res.delta_alg - exact) <= res.error
    assert res.error < 1e-6


def test_noisy_phase_retrieval_decreases_to_half():
    values = [delta_alg(f"z**2 + {s}*eps").delta_alg for s in ("0.5", "0.2", "0.05", "0.01")]
    assert values[0] == pytest.approx(delta_alg("noisy_phase_retrieval").delta_alg)
    assert all(v > 0.5 for v in values)
    assert all(a > b for a, b in zip(values, values[1:]))
    assert values[-1] - 0.5 < 1e-4


def test_unsupported_kinked_multi_index_link():
    with pytest.raises(UnsupportedError, match="kinks"):
        delta_alg("Abs(z1) + z2**2")


def test_precision_argument_is_validated():
    with pytest.raises(ValueError, match="dps"):
        delta_alg("abs", dps=5)


def test_link_depending_on_its_easy_direction_only():
    # y = sign(z1 + z2): (z1+z2)/sqrt2 is easy; the orthogonal direction does not enter y at all,
    # so F = 0 on it (no sample size recovers it)
    res = delta_alg("sign(z1 + z2)")
    assert (res.easy_dim, res.hard_dim) == (1, 1) and math.isinf(res.delta_alg)


def test_scaled_discrete_link_is_handled():
    assert math.isinf(delta_alg("-2*sign(z1*z2*z3)").delta_alg)


def test_rotation_drops_eigensolver_rounding():
    # entries of an eigenvector basis that are zero up to rounding (1e-17, 1e-12) become exact zeros:
    # a float or spurious surd there leaves a cross term that the level-set engine cannot integrate
    import numpy as np
    import sympy as sp
    from thresholds.alg import _rotation_substitution
    z1, z2 = sp.symbols("z1 z2", real=True)
    subs = _rotation_substitution([z1, z2], np.array([[-9.4e-18, -1.0], [-1.0, 1e-12]]))
    assert subs == {z1: -z2, z2: -z1}
    half = _rotation_substitution([z1, z2], np.array([[0.7071067811865476, 0.7071067811865475],
                                                      [-0.7071067811865475, 0.7071067811865476]]))
    assert sp.expand(half[z1] - sp.sqrt(2) / 2 * (z1 + z2)) == 0


@pytest.mark.parametrize("link", ["z**2", "3*tanh(z**2)", "log(1 + z**2)", "atan(z**2)", "z**2/(1 + z**2)"])
def test_every_strictly_monotone_function_of_z_squared_has_delta_alg_one_half(link):
    # E[g^2 | y] = z^2 exactly, so E_y[(E[g^2|y] - 1)^2] = E[(z^2 - 1)^2] = 2.  The even links' critical
    # point z = 0 lies on the scan grid, and 3 tanh(z^2) saturates: both once gave delta_alg = inf.
    res = delta_alg(link)
    assert res.hard_dim == 1 and abs(res.delta_alg - 0.5) <= max(3 * res.error, 1e-12), (res.delta_alg, res.error)
    assert res.error < 1e-6


@pytest.mark.parametrize("link", ["z + z**3", "tanh(z)", "atan(z)", "exp(z)", "sinh(z)"])
def test_every_strictly_monotone_function_of_z_is_easy(link):
    res = delta_alg(link)
    assert (res.easy_dim, res.hard_dim, res.delta_alg) == (1, 0, 0.0)


def test_an_unresolved_link_is_an_error_not_an_answer():
    # y = exp(64 z) spans e^{+-2560}: the y-quadrature does not resolve it; its error estimate says so
    from thresholds.errors import ConvergenceError
    with pytest.raises(ConvergenceError, match="did not converge"):
        delta_alg("exp(64*z)")

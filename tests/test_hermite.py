import math

import mpmath
import pytest
import sympy as sp

from thresholds.catalog import X, get_activation
from thresholds.gaussian import expect_exact
from thresholds.hermite import activation_hermite, hermite_coefficients, information_exponent, link_hermite


def test_hermite_basis_is_orthogonal_exactly():
    for j in range(7):
        for k in range(7):
            val = expect_exact(sp.hermite_prob(j, X) * sp.hermite_prob(k, X), X)
            assert val == (math.factorial(k) if j == k else 0)


def test_polynomial_reconstruction_is_exact():
    expr = 3 * X**5 - X**2 + 7
    coeffs = hermite_coefficients(expr, X, 6)
    rebuilt = sum(sp.Rational(c.exact) * sp.hermite_prob(c.k, X) for c in coeffs)
    assert sp.expand(rebuilt - expr) == 0


@pytest.mark.parametrize("name", ["gelu", "relu", "leaky_relu", "erf", "cubic"])
def test_exact_coefficients_match_quadrature(name):
    act = get_activation(name)
    f = act.mpmath(0)
    for c in activation_hermite(name, 6):
        assert c.exact is not None
        with mpmath.workdps(30):
            num = mpmath.quad(lambda t: f(t) * mpmath.hermite(c.k, t / mpmath.sqrt(2))
                              * 2 ** (-mpmath.mpf(c.k) / 2) * mpmath.npdf(t), [-mpmath.inf, 0, mpmath.inf])
            assert abs(num / mpmath.factorial(c.k) - c.value) < 1e-14


def test_numeric_coefficients_carry_error_and_parseval():
    coeffs = activation_hermite("tanh", 12, dps=20)
    assert all(c.exact is None and c.error < 1e-15 for c in coeffs)
    assert coeffs[0].value == pytest.approx(0.0, abs=1e-15)  # odd function
    assert coeffs[1].value == pytest.approx(0.6057055096, abs=1e-9)
    # Parseval: sum k! c_k^2 approaches E[tanh(G)^2] from below
    with mpmath.workdps(20):
        second = float(mpmath.quad(lambda t: mpmath.tanh(t) ** 2 * mpmath.npdf(t), [-mpmath.inf, 0, mpmath.inf]))
    partial = sum(math.factorial(c.k) * c.value**2 for c in coeffs)
    assert partial <= second + 1e-14
    assert second - partial < 1e-3


def test_link_coefficients_per_latent_variable():
    coeffs = link_hermite("mixed", 3)  # z1 + z2**2
    assert [c.value for c in coeffs["z1"]] == pytest.approx([1.0, 1.0, 0.0, 0.0])
    assert [c.value for c in coeffs["z2"]] == pytest.approx([1.0, 0.0, 1.0, 0.0])
    noisy = link_hermite("noisy_phase_retrieval", 2)["z"]
    assert [c.value for c in noisy] == pytest.approx([1.0, 0.0, 1.0])


@pytest.mark.parametrize("link, expected", [
    ("phase_retrieval", 2), ("abs", 2), ("sign", 1), ("he3", 3), ("product", 2),
    ("mixed", 1), ("parity3", 3), ("staircase", 1), ("z**4 - 6*z**2 + 3", 4),
])
def test_information_exponents(link, expected):
    assert information_exponent(link) == expected

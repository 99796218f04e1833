import mpmath
import pytest
import sympy as sp

from thresholds.catalog import X, lambdify_mpmath
from thresholds.errors import DivergenceError
from thresholds.gaussian import expect_exact, expect_numeric, incomplete_moment, kinks


def _quad_error(expr, exact, breakpoints=(0,)):
    """|exact - quadrature| computed at 40 digits."""
    f = lambdify_mpmath([X], expr)
    with mpmath.workdps(40):
        pts = [-mpmath.inf] + list(breakpoints) + [mpmath.inf]
        num = mpmath.quad(lambda t: f(t) * mpmath.npdf(t), pts)
        return abs(mpmath.mpf(str(sp.N(exact, 45))) - num)


@pytest.mark.parametrize("n", range(7))
@pytest.mark.parametrize("a,b", [(-1, 2), (0, sp.oo), (-sp.oo, sp.Rational(1, 3))])
def test_incomplete_moments(n, a, b):
    exact = incomplete_moment(n, a, b)
    assert not exact.has(sp.Float)  # stays exact
    with mpmath.workdps(40):
        num = mpmath.quad(lambda t: t**n * mpmath.npdf(t),
                          [mpmath.mpf(str(sp.N(a, 50))) if a != -sp.oo else -mpmath.inf,
                           mpmath.mpf(str(sp.N(b, 50))) if b != sp.oo else mpmath.inf])
        assert abs(mpmath.mpf(str(sp.N(exact, 45))) - num) < mpmath.mpf(10) ** -30


@pytest.mark.parametrize("expr", [
    X**4 * sp.erf(X / 3), X**3 * sp.erf(2 * X), X * sp.exp(-X**2) * sp.erf(X), X**2 * sp.exp(-X**2 / 5),
    sp.Max(X, 0) * (X**3 - 3 * X), sp.Abs(X) * X**2, sp.Max(X, X / 10), sp.sign(X) * X**3,
    X * (1 + sp.erf(X / sp.sqrt(2))) / 2 * (X**2 - 1),
])
def test_exact_expectations_match_quadrature(expr):
    exact = expect_exact(expr, X)
    assert exact is not None
    assert _quad_error(expr, exact, kinks(expr, X) or [0]) < 1e-28


def test_exact_gives_none_outside_closed_families():
    assert expect_exact(sp.tanh(X), X) is None
    assert expect_exact(sp.erf(X)**2, X) is None


def test_divergent_expectation_is_reported():
    with pytest.raises(DivergenceError):
        expect_exact(sp.exp(X**2), X)
    with pytest.raises(DivergenceError):
        expect_numeric(lambda t: mpmath.exp(t * t), dps=20)


@pytest.mark.parametrize("dps", [20, 30, 50])
def test_numeric_error_estimate_bounds_true_error(dps):
    f = lambdify_mpmath([X], sp.tanh(X)**2)
    res = expect_numeric(f, dps=dps)
    # reference: the same integral at much higher precision
    with mpmath.workdps(dps + 40):
        ref = mpmath.quad(lambda t: mpmath.tanh(t)**2 * mpmath.npdf(t), [-mpmath.inf, 0, mpmath.inf])
        assert abs(res.value - ref) <= res.error
        assert res.error < mpmath.mpf(10) ** (-dps + 5)


def test_density_integrates_to_one_and_kinks_found():
    assert expect_exact(sp.Integer(1) + 0 * X, X) == 1
    assert kinks(sp.Max(X - 1, 0) + sp.Abs(X + 2), X) == [-2.0, 1.0]

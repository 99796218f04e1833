import pytest
import sympy as sp

from thresholds.errors import ExpressionError
from thresholds.expr import parse_expression

x = sp.Symbol("x", real=True)


def test_parses_whitelisted_expression_exactly():
    expr = parse_expression("x*erf(x) + 0.5*x**2 - pi", ["x"])
    assert expr == x * sp.erf(x) + sp.Rational(1, 2) * x**2 - sp.pi


def test_decimal_literals_are_exact_rationals():
    assert parse_expression("0.1", []) == sp.Rational(1, 10)
    assert parse_expression("1e-3*x", ["x"]) == x / 1000


def test_phi_is_gaussian_cdf():
    expr = parse_expression("Phi(x)", ["x"])
    assert sp.simplify(expr - (1 + sp.erf(x / sp.sqrt(2))) / 2) == 0


@pytest.mark.parametrize("text, fragment", [
    ("__import__('os')", "unknown function '__import__'"),
    ("x.real", "Attribute is not allowed"),
    ("x**", "syntax error"),
    ("foo(x)", "unknown function 'foo'"),
    ("y + 1", "unknown symbol 'y'"),
    ("x ^ 2", "use '**'"),
    ("x**10**10", "exceeds the limit"),
    ("exp(x, 2)", "takes 1 argument"),
    ("(lambda: 1)()", "only calls of whitelisted functions"),
    ("'abc'", "is not a number"),
    ("x < 1", "Compare is not allowed"),
    ("x[0]", "Subscript is not allowed"),
    ("exp(x=1)", "takes no keyword arguments"),
    ("", "empty"),
    ("1/0", "division by zero"),
    ("x**x", "exponents must be numbers"),
    ("x" + "+x" * 300, "longer than"),
    ("exp", "used without arguments"),
])
def test_rejections_name_the_problem(text, fragment):
    with pytest.raises(ExpressionError) as info:
        parse_expression(text, ["x"])
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message

"""Whitelist parser for user expressions.

A user expression such as ``"x*erf(x)"`` or ``"z1**2 - z2 + 0.5*eps"`` is
parsed with :mod:`ast` (parsing only: nothing is evaluated) and every node is
checked against a whitelist before a SymPy expression is built from it node by
node.  Allowed: integer and decimal literals (kept exact as rationals), the
operators ``+ - * / **`` and unary ``-``/``+``, the names listed in
``allowed_symbols``, the constants ``pi`` and ``E``, and calls to the
functions in :data:`FUNCTIONS` with the documented number of arguments.
Anything else (attributes, subscripts, strings, keywords, lambdas,
comparisons, ``__import__`` ...) raises :class:`ExpressionError` naming the
offending piece.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable

import sympy as sp

from .errors import ExpressionError

MAX_LENGTH = 400
MAX_POWER = 64  # largest |integer exponent| accepted, against x**10**10 style input
MAX_DEPTH = 40
MAX_LITERAL = 1e300  # largest |number| in an expression, literal or computed (float64 ends near 1.8e308)


def _phi_cdf(t):
    """Standard Gaussian CDF Phi(t) = (1 + erf(t/sqrt 2)) / 2."""
    return (1 + sp.erf(t / sp.sqrt(2))) / 2


def _phi_pdf(t):
    """Standard Gaussian density phi(t) = exp(-t^2/2) / sqrt(2 pi)."""
    return sp.exp(-t**2 / 2) / sp.sqrt(2 * sp.pi)


# name -> (number of arguments, builder).  Builders return SymPy expressions.
FUNCTIONS: dict[str, tuple[int, Callable]] = {
    "exp": (1, sp.exp),
    "log": (1, sp.log),
    "sqrt": (1, sp.sqrt),
    "sin": (1, sp.sin),
    "cos": (1, sp.cos),
    "tan": (1, sp.tan),
    "sinh": (1, sp.sinh),
    "cosh": (1, sp.cosh),
    "tanh": (1, sp.tanh),
    "atan": (1, sp.atan),
    "arctan": (1, sp.atan),
    "erf": (1, sp.erf),
    "erfc": (1, sp.erfc),
    "Abs": (1, sp.Abs),
    "abs": (1, sp.Abs),
    "sign": (1, sp.sign),
    "Heaviside": (1, lambda t: sp.Heaviside(t, sp.Rational(1, 2))),
    "step": (1, lambda t: sp.Heaviside(t, sp.Rational(1, 2))),
    "Max": (2, sp.Max),
    "max": (2, sp.Max),
    "Min": (2, sp.Min),
    "min": (2, sp.Min),
    "relu": (1, lambda t: sp.Max(t, 0)),
    "sigmoid": (1, lambda t: 1 / (1 + sp.exp(-t))),
    "softplus": (1, lambda t: sp.log(1 + sp.exp(t))),
    "Phi": (1, _phi_cdf),
    "phi": (1, _phi_pdf),
}

CONSTANTS = {"pi": sp.pi, "E": sp.E}


def _sym(name: str) -> sp.Symbol:
    """All user symbols are real (latent Gaussians, noise, pre-activations)."""
    return sp.Symbol(name, real=True)


class _Builder:
    def __init__(self, text: str, symbols: dict[str, sp.Symbol]):
        self.text = text
        self.symbols = symbols

    def fail(self, why: str):
        raise ExpressionError(f"invalid expression {self.text!r}: {why}")

    def build(self, node: ast.AST, depth: int = 0):
        try:
            return self._build(node, depth)
        except ExpressionError:
            raise
        except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:  # raised inside SymPy
            self.fail(f"cannot be evaluated ({type(exc).__name__}: {exc})")

    def _build(self, node: ast.AST, depth: int):
        if depth > MAX_DEPTH:
            self.fail("nested too deeply")
        if isinstance(node, ast.Expression):
            return self.build(node.body, depth + 1)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                self.fail(f"literal {node.value!r} is not a number")
            if isinstance(node.value, int):
                if abs(node.value) > MAX_LITERAL:
                    self.fail(f"literal larger than {MAX_LITERAL:.0e}")
                return sp.Integer(node.value)
            if not abs(node.value) <= MAX_LITERAL:
                self.fail(f"literal {node.value!r} is larger than {MAX_LITERAL:.0e}")
            # exact decimal: 0.5 -> 1/2, so that expectations stay exact
            return sp.Rational(repr(node.value))
        if isinstance(node, ast.Name):
            if node.id in self.symbols:
                return self.symbols[node.id]
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            if node.id in FUNCTIONS:
                self.fail(f"function {node.id!r} used without arguments")
            allowed = ", ".join(sorted(self.symbols)) or "none"
            self.fail(f"unknown symbol {node.id!r} (allowed symbols: {allowed}; constants: pi, E)")
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            self.fail(f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node, ast.BinOp):
            return self._binop(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        self.fail(f"{type(node).__name__} is not allowed")

    def _binop(self, node: ast.BinOp, depth: int):
        """+ - * / ** of two whitelisted subexpressions (numeric exponents within MAX_POWER)."""
        if isinstance(node.op, ast.BitXor):
            self.fail("'^' is not a power here; use '**'")
        left = self.build(node.left, depth + 1)
        right = self.build(node.right, depth + 1)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            if right == 0:
                self.fail("division by zero")
            return left / right
        if isinstance(node.op, ast.Pow):
            if right.is_number and right.is_real and abs(float(right)) > MAX_POWER:
                self.fail(f"exponent {right} exceeds the limit {MAX_POWER}")
            if not right.is_number:
                self.fail("exponents must be numbers")
            if left.is_number and left.is_real and left != 0:
                # |left**right| from logarithms, before SymPy builds a number of millions of digits
                magnitude = float(right) * float(sp.log(abs(left), 10).evalf(15))
                if magnitude > 300:
                    self.fail(f"the number {left}**{right} is larger than {MAX_LITERAL:.0e}")
            return left**right
        self.fail(f"operator {type(node.op).__name__} is not allowed")

    def _call(self, node: ast.Call, depth: int):
        """A whitelisted function called by name with its number of positional arguments."""
        if not isinstance(node.func, ast.Name):
            self.fail("only calls of whitelisted functions by name are allowed")
        name = node.func.id
        if name not in FUNCTIONS:
            known = ", ".join(sorted(FUNCTIONS))
            self.fail(f"unknown function {name!r} (known: {known})")
        if node.keywords:
            self.fail(f"{name}() takes no keyword arguments")
        nargs, builder = FUNCTIONS[name]
        if len(node.args) != nargs:
            self.fail(f"{name}() takes {nargs} argument(s), got {len(node.args)}")
        args = [self.build(a, depth + 1) for a in node.args]
        try:
            return builder(*args)
        except (ArithmeticError, ValueError, TypeError) as exc:  # e.g. Max of a complex number
            self.fail(f"{name}({', '.join(map(str, args))}) is not defined ({exc})")


def parse_expression(text: str, allowed_symbols: Iterable[str]) -> sp.Expr:
    """Parse ``text`` into a SymPy expression using only whitelisted pieces.

    ``allowed_symbols`` lists the free symbol names the caller accepts (e.g.
    ``["x"]`` for an activation).  Symbols are created ``real=True``.
    Raises :class:`ExpressionError` with a one-line reason on any failure.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expression must be a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise ExpressionError("invalid expression '': empty")
    if len(stripped) > MAX_LENGTH:
        raise ExpressionError(f"invalid expression: longer than {MAX_LENGTH} characters")
    bad = next((c for c in stripped if not (" " <= c <= "~")), None)
    if bad is not None:  # Python would fold some letters (NFKC: a full-width z is z) and reject others
        raise ExpressionError(f"invalid expression {stripped.encode('ascii', 'backslashreplace').decode()!r}: "
                              f"character {bad.encode('ascii', 'backslashreplace').decode()} (only printable "
                              "ASCII is allowed)")
    try:
        tree = ast.parse(stripped, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"invalid expression {stripped!r}: syntax error ({exc.msg})") from None
    symbols = {name: _sym(name) for name in allowed_symbols}
    expr = _Builder(stripped, symbols).build(tree)
    if expr.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise ExpressionError(f"invalid expression {stripped!r}: not finite")
    if any(abs(n) > MAX_LITERAL for n in expr.atoms(sp.Number)):
        raise ExpressionError(f"invalid expression {stripped!r}: a number larger than {MAX_LITERAL:.0e}")
    return expr

"""Expectations under a standard Gaussian G ~ N(0, 1) (weight exp(-x^2/2)/sqrt(2 pi)).

Two routes, both for a function of one real variable:

* :func:`expect_exact` closes ``E[f(G)]`` in SymPy for the families that
  have closed forms: piecewise polynomials on intervals (relu, |x|, sign,
  leaky relu, polynomials), via the incomplete moments
  ``M_n(a, b) = int_a^b x^n phi(x) dx``, which obey
  ``M_n = (n-1) M_{n-2} + a^{n-1} phi(a) - b^{n-1} phi(b)`` (integration by
  parts); and on the whole line, terms ``x^n erf(c x)^e exp(-a x^2)``
  (e in {0, 1}: gelu, erf and their derivatives), via Stein's identity
  ``E[Y h(Y)] = E[h'(Y)]``, which gives
  ``I_n(c) = E[Y^n erf(cY)] = (n-1) I_{n-2}(c) + (2c/sqrt(pi)) E[Y^{n-1} exp(-c^2 Y^2)]``,
  ``I_0 = 0``, ``I_1 = 2c / sqrt(pi (1 + 2c^2))``, and
  ``E[Y^m exp(-b Y^2)] = (m-1)!! (1 + 2b)^{-(m+1)/2}`` for even m.
  Returns None when the expression is outside these families.
* :func:`expect_numeric` integrates with mpmath's tanh-sinh quadrature at the
  requested decimal precision, split at the kinks of the function, and
  returns the value with an error estimate (the larger of the quadrature's
  own estimate and the change between two precisions).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .errors import ConvergenceError, DivergenceError

SQRT2PI = sp.sqrt(2 * sp.pi)


def _phi(t):
    if t in (sp.oo, -sp.oo):
        return sp.Integer(0)
    return sp.exp(-t**2 / 2) / SQRT2PI


def _Phi(t):
    if t == sp.oo:
        return sp.Integer(1)
    if t == -sp.oo:
        return sp.Integer(0)
    return (1 + sp.erf(t / sp.sqrt(2))) / 2


def incomplete_moment(n: int, a, b):
    """Exact ``int_a^b x^n phi(x) dx`` (a, b may be +-oo), phi the N(0,1) density."""
    a, b = sp.S(a), sp.S(b)
    if n == 0:
        return _Phi(b) - _Phi(a)
    if n == 1:
        return _phi(a) - _phi(b)
    edge = sp.Integer(0)
    if a != -sp.oo:
        edge += a**(n - 1) * _phi(a)
    if b != sp.oo:
        edge -= b**(n - 1) * _phi(b)
    return (n - 1) * incomplete_moment(n - 2, a, b) + edge


def _double_factorial_odd(m: int):
    """(m-1)!! = E[Y^m] for even m >= 0."""
    return sp.factorial2(m - 1) if m > 0 else sp.Integer(1)


def _exp_moment(m: int, b):
    """E[Y^m exp(-b Y^2)], Y ~ N(0,1), b > -1/2."""
    if m % 2:
        return sp.Integer(0)
    return _double_factorial_odd(m) * (1 + 2 * b) ** (-sp.Rational(m + 1, 2))


def _erf_moment(n: int, c):
    """I_n(c) = E[Y^n erf(c Y)], Y ~ N(0,1), by Stein's identity (module docstring)."""
    if n % 2 == 0:
        return sp.Integer(0)
    if n == 1:
        return 2 * c / sp.sqrt(sp.pi * (1 + 2 * c**2))
    return (n - 1) * _erf_moment(n - 2, c) + 2 * c / sp.sqrt(sp.pi) * _exp_moment(n - 1, c**2)


def _whole_line_term(term, x):
    """E[term(G)] for term = const * x^n * erf(c x)^e * exp(-a x^2); None otherwise."""
    coeff, n, c, a = sp.Integer(1), 0, None, sp.Integer(0)
    for factor in sp.Mul.make_args(term):
        if not factor.has(x):
            coeff *= factor
        elif factor == x:
            n += 1
        elif factor.is_Pow and factor.base == x and factor.exp.is_Integer and factor.exp > 0:
            n += int(factor.exp)
        elif isinstance(factor, sp.erf) and c is None:
            ratio = sp.simplify(factor.args[0] / x)
            if ratio.has(x):
                return None
            c = ratio
        elif isinstance(factor, sp.exp) or (factor.is_Pow and factor.base == sp.E):
            arg = sp.expand(factor.args[0] if isinstance(factor, sp.exp) else factor.exp)
            poly = sp.Poly(arg, x) if arg.is_polynomial(x) else None
            if poly is None or poly.degree() != 2 or poly.coeff_monomial(x) != 0 \
                    or poly.coeff_monomial(1) != 0:
                return None
            a += -poly.coeff_monomial(x**2)
        else:
            return None
    if a.is_number and a <= -sp.Rational(1, 2):
        raise DivergenceError("Gaussian expectation diverges: integrand grows like exp(x^2/2) or faster")
    s = 1 / sp.sqrt(1 + 2 * a)  # exp(-a x^2) phi(x) = s * (density of N(0, s^2))
    if c is None:
        return coeff * s**(n + 1) * _exp_moment(n, 0)
    return coeff * s**(n + 1) * _erf_moment(n, c * s)


def intervals_of(expr, x):
    """Split a piecewise expression into [(piece, a, b)] over disjoint intervals."""
    pw = sp.piecewise_fold(expr.rewrite(sp.Piecewise))
    if not isinstance(pw, sp.Piecewise):
        return [(pw, -sp.oo, sp.oo)]
    covered = sp.EmptySet
    out = []
    for piece, cond in pw.args:
        region = (cond.as_set() if cond is not sp.true else sp.S.Reals) - covered
        covered = covered | region
        for interval in (region.args if isinstance(region, sp.Union) else [region]):
            if isinstance(interval, sp.Interval):
                out.append((piece, interval.start, interval.end))
            elif interval in (sp.EmptySet,) or isinstance(interval, sp.FiniteSet):
                continue  # points have Gaussian measure zero
            else:
                return None
    return out


def expect_exact(expr, x):
    """Exact E[expr(G)] with G ~ N(0, 1) as a SymPy expression, or None.

    Convention: the Gaussian weight is exp(-x^2/2)/sqrt(2 pi).  ``expr`` may
    contain other symbols as parameters only when it is a polynomial in x.
    """
    expr = sp.expand(expr)
    if not expr.has(x):
        return expr
    if expr.is_polynomial(x):
        poly = sp.Poly(expr, x)
        return sp.expand(sum(coef * _exp_moment(m, 0) for (m,), coef in poly.terms()))
    if expr.has(sp.Piecewise, sp.Abs, sp.sign, sp.Heaviside, sp.Max, sp.Min):
        if expr.free_symbols - {x}:
            return None
        pieces = intervals_of(expr, x)
        if pieces is None:
            return None
        total = sp.Integer(0)
        for piece, a, b in pieces:
            piece = sp.expand(piece)
            if not piece.is_polynomial(x):
                return None
            for (m,), coef in sp.Poly(piece, x).terms():
                total += coef * incomplete_moment(m, a, b)
        return sp.simplify(total)
    total = sp.Integer(0)
    for term in sp.Add.make_args(expr):
        value = _whole_line_term(term, x)
        if value is None:
            return None
        total += value
    return sp.simplify(total)


def kinks(expr, x) -> list:
    """Real points where ``expr`` may be non-smooth (zeros of the arguments of
    Abs, sign, Heaviside, and of a - b in Max(a, b) / Min(a, b))."""
    points = set()
    for atom in expr.atoms(sp.Abs, sp.sign, sp.Heaviside, sp.Max, sp.Min):
        args = atom.args
        target = args[0] - args[1] if isinstance(atom, (sp.Max, sp.Min)) and len(args) == 2 else args[0]
        if not target.has(x):
            continue
        try:
            for root in sp.solve(target, x):
                if root.is_real:
                    points.add(float(root))
        except (NotImplementedError, TypeError):
            continue
    return sorted(points)


@dataclass(frozen=True)
class NumericExpectation:
    """Result of a numerical Gaussian expectation.

    value: the estimate (mpmath mpf); error: an upper estimate of |error|;
    dps: decimal digits used; breakpoints: where the line was split.
    """

    value: object
    error: object
    dps: int
    breakpoints: tuple


def expect_numeric(func_mp, *, dps: int = 30, breakpoints=(), extra_dps: int = 10) -> NumericExpectation:
    """E[f(G)], G ~ N(0,1), by mpmath tanh-sinh quadrature split at ``breakpoints``.

    ``func_mp`` is an mpmath-callable of one argument.  The error estimate is
    the larger of mpmath's own estimate and the difference between the
    results at ``dps`` and ``dps + extra_dps``.  Raises DivergenceError on a
    non-finite result.
    """
    import mpmath

    def at(prec):
        with mpmath.workdps(prec):
            pts = [-mpmath.inf] + [mpmath.mpf(p) for p in sorted(set(breakpoints))] + [mpmath.inf]
            norm = 1 / mpmath.sqrt(2 * mpmath.pi)
            value, err = mpmath.quad(lambda t: func_mp(t) * mpmath.exp(-t * t / 2) * norm, pts,
                                     error=True)
            return value, err

    import mpmath as _m
    with _m.workdps(dps):
        # a Gaussian expectation is finite only if f(t) phi(t) decays in both tails
        for sign in (-1, 1):
            near = abs(func_mp(sign * _m.mpf(30))) * _m.npdf(30)
            far = abs(func_mp(sign * _m.mpf(60))) * _m.npdf(60)
            if not (_m.isfinite(near) and _m.isfinite(far)) or (far > 1e-100 and far >= near):
                raise DivergenceError("Gaussian expectation diverges: f(t) phi(t) does not decay "
                                      f"as t -> {'+' if sign > 0 else '-'}inf")
    try:
        v1, e1 = at(dps)
        v2, e2 = at(dps + extra_dps)
    except ZeroDivisionError:  # the integrand is evaluated on a pole (1/(x - 1) at x = 1)
        raise DivergenceError("Gaussian expectation diverges: the integrand has a pole on the real line") from None
    if not (_m.isfinite(v1) and _m.isfinite(v2)):
        raise DivergenceError("Gaussian expectation is not finite")
    scale = max(abs(v2), _m.mpf(1))
    error = max(abs(v2 - v1), e2, _m.mpf(10) ** (-dps) * scale)
    if error > _m.mpf(10) ** (-dps // 3) * scale:
        raise ConvergenceError(
            f"Gaussian expectation did not converge (estimate {_m.nstr(v2, 6)} +- {_m.nstr(error, 2)})")
    return NumericExpectation(v2, error, dps, tuple(sorted(set(breakpoints))))

"""Hermite expansions of activations and links (probabilists' convention).

Convention: He_k are the probabilists' Hermite polynomials (He_0 = 1,
He_1 = x, He_2 = x^2 - 1, ...), orthogonal under the standard Gaussian
weight exp(-x^2/2)/sqrt(2 pi) with E[He_j He_k] = k! delta_jk.  The
coefficients are normalized so that

    f(x) = sum_k c_k He_k(x),      c_k = E[f(G) He_k(G)] / k!,   G ~ N(0, 1),

(so E[f(G)^2] = sum_k k! c_k^2).  For a link the coefficient along latent
variable z_i averages the other latent variables and the noise.  The
*information exponent* of a link is the smallest order j >= 1 at which some
Hermite coefficient E[h(g) He_alpha(g)], |alpha| = j, is non-zero.

Values are exact (SymPy, :func:`thresholds.gaussian.expect_exact`) when the
integral closes; otherwise mpmath quadrature at ``dps`` digits (single
variable) or the float64 level-set engine (several variables), each with an
error estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import sympy as sp

from .alg import hermite_multi
from .catalog import Activation, Link, X, get_activation, get_link, lambdify_mpmath
from .gaussian import expect_exact, expect_numeric, kinks
from .levelset import LevelSetGram


@dataclass(frozen=True)
class HermiteCoefficient:
    """c_k = E[f(G) He_k(G)]/k! with its provenance.

    ``exact`` is the closed form (a SymPy string) or None; ``error`` bounds
    |value - c_k| (0 for exact values, which are printed to ``dps`` digits).
    """

    k: int
    value: float
    exact: str | None
    error: float
    method: str

    def to_json(self) -> dict:
        return {"k": self.k, "value": self.value, "exact": self.exact, "error": self.error,
                "method": self.method}


def expect_exact_multi(expr, variables):
    """Iterated exact Gaussian expectation over ``variables`` (None if any step fails)."""
    out = sp.expand(expr)
    for v in variables:
        if not out.has(v):
            continue
        out = expect_exact(out, v)
        if out is None:
            return None
    return sp.simplify(out)


def _exact_coefficient(k, exact, dps):
    with mpmath.workdps(dps):
        value = float(sp.N(exact, dps))
    return HermiteCoefficient(k, value, str(exact), 0.0, "exact")


def hermite_coefficients(expr, var, order: int, *, dps: int = 30) -> list[HermiteCoefficient]:
    """c_0..c_order of a function of one variable ``var`` (see module docstring)."""
    if order < 0 or order > 60:
        raise ValueError("order must be between 0 and 60")
    out = []
    breaks = kinks(expr, var) or [0.0]
    f_mp = None
    for k in range(order + 1):
        integrand = expr * sp.hermite_prob(k, var)
        exact = expect_exact(integrand, var)
        if exact is not None:
            out.append(_exact_coefficient(k, exact / sp.factorial(k), dps))
            continue
        if f_mp is None:
            f_mp = lambdify_mpmath([var], expr)
        with mpmath.workdps(dps + 5):
            def fk(t, k=k):
                # probabilists' He_k(t) = 2^{-k/2} H_k(t / sqrt 2) (mpmath's hermite is the physicists' H_k)
                return f_mp(t) * mpmath.hermite(k, t / mpmath.sqrt(2)) * mpmath.mpf(2) ** (-mpmath.mpf(k) / 2)

            res = expect_numeric(fk, dps=dps, breakpoints=breaks)
            fact = mpmath.factorial(k)
            out.append(HermiteCoefficient(k, float(res.value / fact), None, float(res.error / fact),
                                          f"mpmath quadrature ({dps} digits)"))
    return out


def activation_hermite(spec: str | Activation, order: int, *, dps: int = 30) -> list[HermiteCoefficient]:
    """Hermite coefficients c_0..c_order of an activation (name or expression in x)."""
    act = get_activation(spec) if isinstance(spec, str) else spec
    return hermite_coefficients(act.expr, X, order, dps=dps)


def link_hermite(spec: str | Link, order: int, *, dps: int = 30) -> dict[str, list[HermiteCoefficient]]:
    """Per latent variable z_i: c_j = E[h He_j(z_i)]/j!, other variables averaged."""
    link = get_link(spec) if isinstance(spec, str) else spec
    if order < 0 or order > 30:
        raise ValueError("order must be between 0 and 30")
    result = {}
    for zi in link.latent:
        others = [v for v in link.variables if v != zi]
        reduced = expect_exact_multi(link.expr, others)
        coeffs = []
        if reduced is not None and not reduced.free_symbols - {zi}:
            coeffs = hermite_coefficients(reduced, zi, order, dps=dps)
        else:
            funcs = [sp.hermite_prob(j, zi) for j in range(order + 1)]
            res = LevelSetGram(link.expr, link.variables, funcs).run()
            for j in range(order + 1):
                fact = math.factorial(j)
                coeffs.append(HermiteCoefficient(j, float(res.L[j] / fact), None,
                                                 float(res.L_err[j] / fact), "level sets (float64)"))
        result[str(zi)] = coeffs
    return result


def information_exponent(spec: str | Link, *, max_order: int = 8) -> int | None:
    """Smallest j >= 1 with a non-zero Hermite coefficient of order j (None if > max_order).

    A numerical coefficient counts as non-zero when it exceeds three times its
    error estimate and 1e-10.
    """
    link = get_link(spec) if isinstance(spec, str) else spec
    g = list(link.latent)
    for j in range(1, max_order + 1):
        funcs = hermite_multi(g, j)
        exact_vals = [expect_exact_multi(link.expr * f, link.variables) for f in funcs]
        if all(v is not None for v in exact_vals):
            if any(v != 0 for v in exact_vals):
                return j
            continue
        if link.k == 1 and link.noise is None:
            breaks = kinks(link.expr, g[0]) or [0.0]
            f_mp = lambdify_mpmath([g[0]], link.expr * funcs[0])
            res = expect_numeric(f_mp, dps=20, breakpoints=breaks)
            if abs(res.value) > 3 * res.error and abs(res.value) > 1e-10:
                return j
            continue
        res = LevelSetGram(link.expr, link.variables, funcs).run()
        if any(abs(res.L[a]) > 3 * res.L_err[a] and abs(res.L[a]) > 1e-10 for a in range(len(funcs))):
            return j
    return None

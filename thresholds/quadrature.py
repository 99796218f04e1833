"""Double-exponential (tanh-sinh / exp-sinh) quadrature rules in NumPy.

Used for the inner Gaussian integrals of the level-set engine, whose
integrands have integrable endpoint singularities (Jacobians of inverse
branches such as 1/sqrt(y - z^2) at the edge of a level set) and
super-exponential tails.

Every finite end of an interval is first regularised by a substitution that
turns an inverse-square-root singularity into a bounded integrand:

* finite [a, b]: x = a + (b - a) s^2 (3 - 2 s), s in [0, 1] (x - a ~ s^2 and
  b - x ~ (1 - s)^2 at the two ends), then tanh-sinh in s;
* half-line [a, +inf): x = a + s^2, then exp-sinh in s (and its mirror).

``level`` L sets the step h = 2**-L of the double-exponential variable.
Half-lines are cut at |x - a| = ``span`` (default 40: the Gaussian weight
there is below 1e-300; every integrand of this project carries it).
Integrand values that are not finite at the very ends (a node rounded onto a
singular point) must be dropped by the caller; their weights are below 1e-30.
"""

from __future__ import annotations

import functools

import numpy as np

HALF_PI = np.pi / 2


@functools.lru_cache(maxsize=64)
def _tanh_sinh_unit(level: int):
    """Nodes s in (0, 1) and weights for int_0^1 f(s) ds."""
    h = 2.0 ** -level
    t = np.arange(-3.2, 3.2 + h / 2, h)
    u = HALF_PI * np.sinh(t)
    s = 1.0 / (1.0 + np.exp(-2.0 * u))
    sc = 1.0 / (1.0 + np.exp(2.0 * u))  # 1 - s without cancellation
    w = h * HALF_PI * np.cosh(t) / (2.0 * np.cosh(u) ** 2)
    return s, sc, w


@functools.lru_cache(maxsize=64)
def _exp_sinh_unit(level: int, span: float):
    """Nodes s in (0, sqrt(span)) and weights for int_0^inf f(s) ds."""
    h = 2.0 ** -level
    t_max = np.arcsinh(np.log(np.sqrt(span)) / HALF_PI)
    t = np.arange(-3.9, t_max + h / 2, h)
    s = np.exp(HALF_PI * np.sinh(t))
    w = h * HALF_PI * np.cosh(t) * s
    return s, w


def rule(a: float, b: float, level: int, span: float = 40.0):
    """Nodes and weights for int_a^b f(x) dx (a or b may be infinite)."""
    if a == b:
        return np.empty(0), np.empty(0)
    if np.isfinite(a) and np.isfinite(b):
        s, sc, w = _tanh_sinh_unit(level)
        length = b - a
        # evaluate each node from its nearer end so that it does not round onto it
        x = np.where(s < 0.5, a + length * s * s * (3.0 - 2.0 * s),
                     b - length * sc * sc * (3.0 - 2.0 * sc))
        return x, w * length * 6.0 * s * sc
    if np.isfinite(a):
        s, w = _exp_sinh_unit(level, span)
        return a + s * s, w * 2.0 * s
    if np.isfinite(b):
        s, w = _exp_sinh_unit(level, span)
        return (b - s * s)[::-1], (w * 2.0 * s)[::-1]
    xl, wl = rule(-np.inf, 0.0, level, span)
    xr, wr = rule(0.0, np.inf, level, span)
    return np.concatenate([xl, xr]), np.concatenate([wl, wr])


def piecewise_rule(breakpoints, level: int, span: float = 40.0):
    """Concatenated rule on (-inf, p_1, ..., p_n, +inf) for the given breakpoints."""
    pts = [-np.inf] + sorted(set(float(p) for p in breakpoints)) + [np.inf]
    xs, ws = [], []
    for a, b in zip(pts[:-1], pts[1:]):
        x, w = rule(a, b, level, span)
        xs.append(x)
        ws.append(w)
    return np.concatenate(xs), np.concatenate(ws)


def mp_rule(a, b, level: int):
    """mpmath nodes and weights for int_a^b f(x) dx on a finite interval, at the
    current ``mp.dps``: the smoothstep substitution of :func:`rule` followed by
    tanh-sinh, truncated where the weights fall below 10**(-2 dps)."""
    import mpmath
    h = mpmath.mpf(2) ** -level
    u_max = mpmath.mp.dps * mpmath.log(10)
    t_max = mpmath.asinh(2 * u_max / mpmath.pi)
    n = int(mpmath.floor(t_max / h))
    length = b - a
    xs, ws = [], []
    for i in range(-n, n + 1):
        t = i * h
        u = mpmath.pi / 2 * mpmath.sinh(t)
        s = 1 / (1 + mpmath.exp(-2 * u))
        sc = 1 / (1 + mpmath.exp(2 * u))
        w = h * mpmath.pi / 2 * mpmath.cosh(t) / (2 * mpmath.cosh(u) ** 2)
        x = a + length * s * s * (3 - 2 * s) if s < 0.5 else b - length * sc * sc * (3 - 2 * sc)
        xs.append(x)
        ws.append(w * length * 6 * s * sc)
    return xs, ws

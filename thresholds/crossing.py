"""Crossing statistics: where an indicator measured along delta changes sign, with an interval.

For indicators f_k = I(delta_k) +- s_k measured at increasing delta_k (common random numbers, so
smooth in delta), the crossing is the first sign change - to +, by linear interpolation between the
bracketing points,

    x = d1 + (d2 - d1) (-f1) / (f2 - f1),                                              (1)

with half-width the larger of

    sqrt(((d2 - d1)/2)^2 + (2 s(x) / slope)^2)                                         (2)

(bracket and Monte Carlo half-widths in quadrature; s(x) interpolated like f) and twice the standard
error of the root of a weighted straight-line fit of f over the points within a factor 1.25 of x
(at least 3), its covariance scaled up by the reduced chi^2 when the points scatter more than their
error bars                                                                              (3).
A first point already positive gives the crossing [0, delta_1]; no sign change gives inf with the
last delta as its lower end.
"""

from __future__ import annotations

import math

import numpy as np

from .nn import Crossing


def crossing(evals: list, step: int, key: str = "indicator", bracket_only: bool = False) -> Crossing:
    """First sign change (- to +) of the indicator at ``step`` along the evaluated deltas,
    by linear interpolation; interval = bracket half-width and Monte Carlo half-width in quadrature."""
    pts = sorted(evals, key=lambda e: e.delta)
    return first_crossing([(e.delta, getattr(e, key)[e.at(step)], getattr(e, key + "_err")[e.at(step)])
                           for e in pts])


def first_crossing(vals, window: float = 1.25) -> Crossing:
    """First sign change (- to +) of f along [(delta, f, s.e.)] sorted in delta.

    The crossing is the linear interpolation between the two bracketing points.  Its
    half-width is the larger of (i) the bracket half-width and 2 s.e./slope in quadrature and
    (ii) twice the standard error of the root of a weighted straight-line fit of f over every
    point within a factor ``window`` of the crossing (at least 3 points), the fit covariance
    scaled up by the reduced chi^2 when the points scatter more than their error bars
    (indicators at neighbouring deltas that are not monotone within the noise)."""
    if vals and vals[0][1] > 0:
        d0 = vals[0][0]
        return Crossing(d0, 0.0, d0, True)
    for (d1, f1, s1), (d2, f2, s2) in zip(vals, vals[1:]):
        if f1 <= 0 < f2:
            x = d1 + (d2 - d1) * (-f1) / (f2 - f1)
            slope = (f2 - f1) / (d2 - d1)
            se = s1 + (s2 - s1) * (x - d1) / (d2 - d1)
            hw = math.hypot((d2 - d1) / 2, 2 * se / slope)
            near = [(d, f, e) for d, f, e in vals if x / window <= d <= x * window]
            floor = 1e-9 * max((abs(f) for _, f, _ in near), default=0.0) + 1e-300
            near = [(d, f, max(e, floor)) for d, f, e in near]
            if len(near) >= 3 and len({d for d, _, _ in near}) >= 2:
                dd, ff, ee = (np.array(v, dtype=float) for v in zip(*near))
                X = np.column_stack([np.ones_like(dd), dd - x])
                W = 1.0 / ee**2
                cov = np.linalg.pinv(X.T @ (X * W[:, None]))
                coef = cov @ (X.T @ (W * ff))
                chi2 = float(np.sum(W * (ff - X @ coef) ** 2))
                cov = cov * max(1.0, chi2 / (len(near) - 2))
                a, b = coef
                if b > 0:
                    grad = np.array([-1.0 / b, a / b**2])
                    var = float(grad @ cov @ grad)
                    if math.isfinite(var) and var > 0:
                        hw = max(hw, 2 * math.sqrt(var))
            return Crossing(x, max(x - hw, 0.0), x + hw, True)
    last = vals[-1][0] if vals else math.inf
    return Crossing(math.inf, last, math.inf, False)

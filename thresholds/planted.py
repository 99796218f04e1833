"""Finite-d success of GD from the d = inf theory: the forced first steps, then the escape (m = 1).

At finite d the hard overlap starts at O(d^{-1/2}) and the first steps add the sample forcing of the
hard gradient (thresholds.forcing).  In units of d^{-1/2} the hard component at step t* is, to first
order, a centred Gaussian A(t*) with variance V(t*) (forcing eq. (3)), the same at every d.  Referred
back to t = 0 by the growth of the initial overlap, it is an effective initial overlap

    q_eff = A(t*) / (G(t*, 0) sqrt(d)),    sqrt(d) q_eff ~ N(0, s^2),   s^2 = V(t*) / G(t*, 0)^2,           (1)

and from there the d = inf dynamics of a planted overlap (thresholds.dmft, eq. (7)) decides: GD escapes
by the horizon T when |q_eff| exceeds the critical planted overlap q_c(delta, T), the smallest M_H(0)
from which the hard fraction of the planted DMFT exceeds 1/2 at step T.  So

    P(delta, d) = 2 Phi_bar(sqrt(d) q_c(delta, T) / s(delta)),                                          (2)

and the crossing delta_1/2(d) solves sqrt(d) q_c(delta, T) = Phi_bar^{-1}(1/4) s(delta).              (3)

d enters through sqrt(d) (and the horizon); the two d = inf inputs are computed, not fitted.
Approximations, each stated where it is made:
* the forcing after t* is dropped.  s^2(t) grows slowly once the growth of the overlap dominates (quad /
  phase retrieval, delta 5, 4 x 40k paths: 1.39, 1.60, 1.71 at t = 10, 25, 50); t* = 50 is used, and
  t* = 25 moves the predicted crossings by +0.03 to +0.05 (validation/reports/planted);
* the escape is monotone in |M_H(0)| (bisection in log q);
* finite-n effects other than the initial overlap and the forcing (Hessian outliers on extreme labels)
  are left out;
* the planted DMFT is the ``sources`` back-end, with its long-horizon bias (issue: unbiased DMFT) at the
  horizons it is run for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import ndtri
from scipy.stats import norm

from .dmft import DMFTSetup, solve_dmft
from .errors import ThresholdsError
from .forcing import amplitude_law
from .problem import Problem

QUARTILE = float(-ndtri(0.25))  # Phi_bar^{-1}(1/4) = 0.6745: P = 1/2 in eq. (2)


@dataclass
class CriticalOverlap:
    """q_c(delta, steps) bracketed by the planted DMFT runs: ``low`` stays below hard fraction 1/2 at
    ``steps``, ``high`` exceeds it; ``runs`` = [(q0, hard fraction at steps), ...]."""

    delta: float
    steps: int
    low: float
    high: float
    runs: list = field(default_factory=list)

    @property
    def value(self) -> float:
        return math.sqrt(self.low * self.high)


def hard_fraction(problem: Problem, delta: float, q0: float, steps: int, *, paths: int, seed: int = 0) -> np.ndarray:
    """Hard fraction per step of the planted DMFT (one replica of ``paths`` paths, cached on disk)."""
    res = solve_dmft(DMFTSetup.from_problem(replace(problem, steps=int(steps)), delta, paths=paths, replicas=1,
                                            seed=seed, planted=float(q0)), cache=True)
    return res.hard_fraction


def critical_overlap(problem: Problem, delta: float, steps: int, *, low=0.01, high=0.4, ratio=1.25,
                     paths=80_000, seed=0, progress=None) -> CriticalOverlap:
    """Bisection in log q0 for the smallest planted overlap that escapes by ``steps`` (module docstring);
    ``low``/``high`` are moved outward by factors of 2 (at most 3 times, else ThresholdsError) when they do
    not bracket."""
    runs = []

    def escapes(q):
        frac = float(hard_fraction(problem, delta, q, steps, paths=paths, seed=seed)[-1])
        runs.append((q, frac))
        if progress is not None:
            progress(q, frac)
        return frac > 0.5

    moved = 0
    while escapes(low):         # an escaping lower end becomes the upper end
        low, high, moved = low / 2, low, moved + 1
        if moved > 3:
            raise ThresholdsError(f"the planted DMFT escapes by step {steps} from every overlap down to {high:g}")
    grown = 0
    while not moved and not escapes(high):  # a lower end that stays is below q_c; check the upper end
        low, high, grown = high, 2 * high, grown + 1
        if grown > 3:
            raise ThresholdsError(f"the planted DMFT does not escape by step {steps} from overlaps up to {low:g}")
    while high / low > ratio:
        mid = math.sqrt(low * high)
        if escapes(mid):
            high = mid
        else:
            low = mid
    return CriticalOverlap(float(delta), int(steps), low, high, runs)


def spread(problem: Problem, delta: float, *, tstar: int = 50, paths: int = 40_000, replicas: int = 4):
    """s(delta) of eq. (1) at t*, with its standard error (delta method over the replicas of the
    amplitude law)."""
    law = amplitude_law(DMFTSetup.from_problem(replace(problem, steps=int(tstar)), delta, paths=paths,
                                               replicas=replicas, response="pathwise"))
    G, V = law.growth[tstar], law.variance[tstar]
    s = math.sqrt(V) / G
    err = s * math.hypot(0.5 * law.variance_err[tstar] / V, law.growth_err[tstar] / G)
    return s, err


def success_probability(q_c: float, s: float, d: int) -> float:
    """Eq. (2)."""
    return float(2 * norm.sf(math.sqrt(d) * q_c / s))

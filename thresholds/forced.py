"""Finite-d success of GD from the d = inf bulk and a finite-d hard coordinate: forced DMFT trials (m = 1).

thresholds.planted predicts P(success) from two d = inf numbers: the spread s of the effective initial
overlap after the forced first steps (t* = 50), and the critical planted overlap q_c from which the
unforced d = inf dynamics escapes.  Its approximation "the forcing after t* is dropped" was measured small in
the linear regime (s grows by 6-7 % from t = 50 to 100), but finite-d GD escapes from smaller overlaps than
q_c: in validation/reports/planted/diagnostics (growth check) the outcome of every GD run is decided by its
hard amplitude at step 25 (AUC 1.00 in each setup), at a threshold below q_c (gelu, delta 10, d = 400:
[0.037, 0.052] against [0.077, 0.086]).  Near q_c the d = inf trajectory creeps for hundreds of steps, and the
sample forcing of the hard gradient, of the same order d^{-1/2} as the initial overlap and drawn from the same
samples at every step, keeps pushing it.

This module keeps every part of one finite-d data set that acts on the hard coordinate and nothing else: a
trial is one run of the planted ``sources`` DMFT (the d = inf bulk, thresholds.dmft eq. (7)) with

    M_H(0) = rho0 xi / sqrt(d),   xi ~ N(0, 1)                 (GD's initial hard overlap)
    M_H(t+1) = M_H(t) + eta E[g_H psi^t] + eta f_t,   Cov(f_t, f_s) = E[g^2 psi^t psi^s] / n,  n = delta d   (1)

(thresholds.dmft eq. (7b), the forcing of n samples at every step, not only before t*), and it succeeds when
its hard fraction exceeds 1/2 at the horizon T, the success rule of ``thresholds validate``.  Then

    P(delta, d) = Pr[hard fraction at T > 1/2],                                                           (2)

estimated by the fraction of K independent trials (xi, forcing weights and paths drawn anew per trial; trial
k uses path seed k, forcing seed k and the k-th xi, the same k at every (delta, d): common random numbers
across the grid), with its binomial standard error.  The crossing delta_1/2(d) is the logistic fit of
validation.threshold, as for GD.  Nothing is fitted to GD: the inputs are the setup and d.

Approximations: the bulk is the d = inf DMFT (its O(d^{-1/2}) fluctuations are dropped, only the hard
coordinate is finite-d); the forcing is Gaussian with the covariance of eq. (1) (a sum of n independent
terms); the DMFT is the truncated source basis (thresholds.dmft eq. (6b)) on N >= n paths, with its Monte
Carlo error (the paths' own forcing is counted in eq. (1), dmft eq. (7b)).  Cost per trial: one planted run,
O(N r T), independent of d (about 10-20 s for 600 steps at N = 20k on one core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .dmft import DMFTSetup, solve_dmft
from .errors import ThresholdsError
from .planted import refusal
from .problem import Problem

PATHS = 20_000      # paths per trial (at least n = delta d, dmft eq. (7b))
SOURCE_TOL = 1e-3   # the truncated source basis (dmft eq. (6b)): no finite-paths bias at long horizons
XI_SEED = 1729      # the stream of the initial overlaps xi_k


@dataclass
class ForcedTrial:
    """One trial of eq. (1): the initial overlap xi (units rho0 / sqrt(d)), the hard fraction per step of the
    run at ``steps`` (every ``every``-th step kept), and the outcome."""

    delta: float
    d: int
    trial: int
    steps: int
    xi: float
    hard_fraction: list
    every: int
    paths: int
    source_tol: float

    @property
    def final(self) -> float:
        return float(self.hard_fraction[-1])

    @property
    def success(self) -> bool:
        return self.final > 0.5

    def to_json(self) -> dict:
        return {"delta": self.delta, "d": self.d, "trial": self.trial, "steps": self.steps, "xi": self.xi,
                "hard_fraction": self.hard_fraction, "every": self.every, "paths": self.paths,
                "source_tol": self.source_tol, "success": self.success}


def initial_overlap(trial: int) -> float:
    """xi_k of eq. (1): the k-th draw of N(0, 1) from its own stream (the same at every delta and d)."""
    return float(np.random.default_rng([XI_SEED, int(trial)]).standard_normal())


def trial_setup(problem: Problem, delta: float, d: int, trial: int, *, paths: int = PATHS,
                source_tol: float = SOURCE_TOL) -> DMFTSetup:
    """The planted, forced DMFT of trial ``trial`` at (delta, d) (eq. (1)), horizon ``problem.steps``."""
    why = refusal(problem)
    if why:
        raise ThresholdsError(why)
    if not (isinstance(d, int) and d >= 1):
        raise ThresholdsError(f"d must be a positive integer, got {d!r}")
    if not (isinstance(trial, int) and trial >= 0):
        raise ThresholdsError(f"a trial index must be an integer >= 0, got {trial!r}")
    n = float(delta) * d
    if paths < n:
        raise ThresholdsError(f"a forced trial at n = delta d = {n:g} samples needs at least that many paths, "
                              f"got {paths}")
    q0 = problem.rho0 * initial_overlap(trial) / math.sqrt(d)
    return DMFTSetup.from_problem(problem, delta, paths=int(paths), replicas=1, seed=int(trial), planted=q0,
                                  source_tol=source_tol, forcing_n=n, forcing_seed=int(trial))


def run_trial(problem: Problem, delta: float, d: int, trial: int, *, paths: int = PATHS,
              source_tol: float = SOURCE_TOL, every: int = 25, cache: bool = True) -> ForcedTrial:
    """Eq. (1) for one trial; the DMFT run is cached on disk unless ``cache`` is False."""
    setup = trial_setup(problem, delta, d, trial, paths=paths, source_tol=source_tol)
    res = solve_dmft(setup, cache=cache)
    frac = np.asarray(res.hard_fraction, float)
    keep = list(range(0, setup.steps + 1, every))
    if keep[-1] != setup.steps:
        keep.append(setup.steps)
    return ForcedTrial(float(delta), int(d), int(trial), int(setup.steps), initial_overlap(trial),
                       [float(frac[t]) for t in keep], int(every), int(paths), float(source_tol))


@dataclass
class ForcedPoint:
    """Eq. (2) at one (delta, d): successes out of trials."""

    delta: float
    d: int
    successes: int
    trials: int

    @property
    def rate(self) -> float:
        return self.successes / self.trials

    @property
    def se(self) -> float:
        p = self.rate
        return math.sqrt(max(p * (1 - p), 0.25 / self.trials) / self.trials)


def points(trials) -> list[ForcedPoint]:
    """Eq. (2) per (delta, d) from ForcedTrial records (or their JSON dicts), sorted by d then delta."""
    count = {}
    for tr in trials:
        rec = tr.to_json() if isinstance(tr, ForcedTrial) else tr
        key = (int(rec["d"]), float(rec["delta"]))
        k, n = count.get(key, (0, 0))
        count[key] = (k + bool(rec["success"]), n + 1)
    return [ForcedPoint(delta, d, k, n) for (d, delta), (k, n) in sorted(count.items())]

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
last delta as its lower end.  Success counts of trials at several deltas give the logistic crossing
(:func:`logistic_crossing`), and trials that share their random numbers across the deltas add a bootstrap
over trials whose spread is half the central 68% range of the resampled crossings (5)
(:func:`paired_crossing`).

The logistic fit collapses (:func:`collapsed_gap`) when the width is not identified: fewer than two rates strictly
between 0 and 1 and a fitted width below a quarter of the least grid spacing (the likelihood then rises as the width
goes to 0), or no positive curvature in the crossing (rates that fall with delta).  Its crossing is the midpoint of
the gap that brackets 1/2, its s.e. gap / sqrt(12)                                                       (6).
Two rates inside (0, 1) fix both parameters however steep the curve: such a fit is kept (before, a width under a
quarter of the spacing collapsed it in every case; validation.crossing_audit lists the committed crossings that
changed).  On stub curves of that kind (40 trials per delta, spacing 0.5, widths 0.03-0.15, a fitted width under
0.125; tests/test_crossing.py) its 2-s.e. interval covers the true crossing in 95% of 1290 draws (rms z 1.03) and
its error is 0.040 rms, against 0.108 for the gap's midpoint.

The s.e. of (2)-(3) treat the indicators at different deltas as independent, and the fit (3) averages
their noise down.  A replica keeps its seed at every delta, so part of its error may be shared by the
points near the crossing; and with few replicas 2 s.e. is not a 95% interval.  Measured (quad, eta 0.05,
the default DMFT law, 8 replicas, seeds 0-7; validation/reports/nn/seeds, ``validation.seed_spread``):
delta_NN has standard deviation 0.133 over the seeds, against mean half-widths 0.184 from (2)-(3), which
cover the seeds' mean 6 times in 8.  So when the evaluations carry their replicas' values
(``<key>_replicas``), the interval is widened to at least

    x -+ sqrt(((d2 - d1)/2)^2 + (t_{R-1} s_J)^2),
    s_J^2 = (R - 1)/R sum_r (x_(r) - mean x_(.))^2,                                        (4)

the jackknife s.e. of the crossing over the R replicas (x_(r): the crossing (1) of the replica means
with replica r left out at every delta; a replica in a period-2 orbit at a delta, thresholds.evaluation
eq. (3), is out of every mean there), with the two-sided 95% t quantile of R - 1 degrees of freedom
(4.30 at R = 3, 2.36 at R = 8).  A leave-one-out curve without a sign change leaves the interval open
above (high = inf).  On the seeds above, eq. (4) widens 3 of the 8 intervals (mean half-width 0.217), which
then cover the mean 7 times in 8; the standard deviation is still about 1.4 times the half-width over
t_7 (chi^2 p = 0.04), a remainder not resolved.  Synthetic replicas (tests/test_numbers.py) give eq. (4)
95-99% coverage whether their errors are shared across deltas or not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from .nn import Crossing


def crossing(evals: list, step: int, key: str = "indicator", bracket_only: bool = False) -> Crossing:
    """First sign change (- to +) of the indicator at ``step`` along the evaluated deltas,
    by linear interpolation; interval = bracket half-width and Monte Carlo half-width in quadrature,
    widened to the replicas' jackknife interval (4) when every evaluation carries its replicas' values."""
    pts = sorted(evals, key=lambda e: e.delta)
    found = first_crossing([(e.delta, getattr(e, key)[e.at(step)], getattr(e, key + "_err")[e.at(step)])
                            for e in pts])
    reps = [getattr(e, key + "_replicas", None) for e in pts]
    if not all(reps):
        return found
    reps = [_settled_values(r[e.at(step)], e) for r, e in zip(reps, pts)]
    return jackknife_widened(found, [e.delta for e in pts], reps)


def _settled_values(values, ev) -> np.ndarray:
    """One evaluation's replica values with those of replicas in a period-2 orbit set to nan (thresholds.evaluation
    eq. (3)), unless every replica is in one."""
    v = np.asarray(values, dtype=float)
    out = np.full_like(v, math.nan)
    kept = ev.settled_replicas(v.size)
    out[kept] = v[kept]
    return out


def jackknife_widened(c: Crossing, deltas: list, reps: list) -> Crossing:
    """Eq. (4): ``c`` (the crossing of the replica means at ``deltas``) with its interval widened to the jackknife
    interval over the replicas; ``reps[i]`` holds the R replicas' values at ``deltas[i]`` (replica r the same
    seed at every delta).  Unchanged when the crossing is at the first point or absent, or with R < 2."""
    R = reps[0].size
    if not c.found or c.low == 0.0 or R < 2 or any(r.size != R for r in reps):
        return c
    total = np.array([np.nansum(r) for r in reps])   # nan: a replica left out at that delta (evaluation eq. (3))
    count = np.array([np.isfinite(r).sum() for r in reps])
    if count.min() < 2:   # a delta with one settled replica: no leave-one-out mean there, the interval stays open
        return Crossing(c.value, c.low, math.inf, True)

    def without(k):   # the replica means at every delta with replica k left out
        return [(d, (t - r[k]) / (kept - 1) if math.isfinite(r[k]) else t / kept, 0.0)
                for d, t, kept, r in zip(deltas, total, count, reps)]
    loo = [first_crossing(without(k)).value for k in range(R)]
    finite = np.array([x for x in loo if math.isfinite(x)])
    if finite.size < 2:
        return Crossing(c.value, c.low, math.inf, True)
    s_j = math.sqrt((finite.size - 1) / finite.size * np.sum((finite - finite.mean()) ** 2))
    i = next(k for k in range(len(deltas) - 1)
             if deltas[k] <= c.value <= deltas[k + 1])
    hw = math.hypot((deltas[i + 1] - deltas[i]) / 2, stats.t.ppf(0.975, R - 1) * s_j)
    high = math.inf if finite.size < R else max(c.high, c.value + hw)
    return Crossing(c.value, max(min(c.low, c.value - hw), 0.0), high, True)


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


def logistic_crossing(deltas, successes, trials):
    """delta at which the logistic success curve p(delta) = 1 / (1 + exp(-(delta - c) / w)) crosses 1/2, with
    its standard error (binomial maximum likelihood, s.e. from the observed information; (None, None) when
    the rates do not bracket 1/2): the crossing of GD trials (validation.threshold) and of forced DMFT
    trials (thresholds.forced) alike.  Where the fit collapses (:func:`collapsed_gap`), the midpoint of the gap
    that brackets 1/2, with the standard deviation of a uniform law on it (eq. (6))."""
    fit = logistic_fit(deltas, successes, trials)
    return (None, None) if fit is None else fit.crossing


def collapsed_gap(deltas, successes, trials):
    """(lo, hi) when the logistic fit of :func:`logistic_crossing` collapses (eq. (6): all-or-nothing data or one
    rate strictly between 0 and 1, with a fitted width below a quarter of the grid spacing; or rates that fall
    with delta): the likelihood's curvature then measures the width's collapse, not the position, and the crossing
    is only known to lie between the last delta with rate < 1/2 and the next one with rate > 1/2.  None when the
    fit resolves the crossing or the rates do not bracket 1/2.  A finer grid inside the gap resolves it."""
    fit = logistic_fit(deltas, successes, trials)
    return None if fit is None else fit.gap


@dataclass(frozen=True)
class LogisticFit:
    """The maximum-likelihood logistic of a success curve: its center and width w, the s.e. of the center from the
    observed information (None where the fit collapses), and the gap that brackets 1/2 where it does (eq. (6))."""

    center: float
    se: float | None
    gap: tuple | None
    width: float

    @property
    def crossing(self) -> tuple:
        """(crossing, s.e.) of :func:`logistic_crossing`: the center, or eq. (6)'s midpoint of the gap."""
        return (self.center, self.se) if self.gap is None else gap_crossing(self.gap)


def gap_crossing(gap) -> tuple:
    """Eq. (6) on a gap (lo, hi) that brackets 1/2: its midpoint, with the s.e. of a uniform law on it."""
    lo, hi = gap
    return float(0.5 * (lo + hi)), float((hi - lo) / math.sqrt(12))


def logistic_fit(deltas, successes, trials) -> LogisticFit | None:
    """The fit behind :func:`logistic_crossing` and :func:`collapsed_gap`; None when the rates do not bracket 1/2."""
    deltas = np.asarray(deltas, float)
    k = np.asarray(successes, float)
    n = np.asarray(trials, float)
    if not (np.min(k / n) < 0.5 < np.max(k / n)):   # the rates, not the counts: trials may differ per delta
        return None

    def nll(params):
        c, log_s = params
        with np.errstate(over="ignore"):   # a steep trial curve: exp -> inf is p -> 0, clipped next
            p = 1 / (1 + np.exp(-(deltas - c) / np.exp(log_s)))
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return -np.sum(k * np.log(p) + (n - k) * np.log(1 - p))

    start = [float(np.interp(0.5, k / n, deltas)) if np.all(np.diff(k / n) >= 0) else deltas.mean(),
             math.log(max(0.1, np.ptp(deltas) / 10))]
    fit = optimize.minimize(nll, start, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9})
    c, log_s = fit.x
    h = 1e-3 * max(1.0, abs(c))
    second = (nll([c + h, log_s]) - 2 * nll([c, log_s]) + nll([c - h, log_s])) / h**2
    gaps = np.diff(np.sort(deltas))
    # the width is identified by two rates strictly between 0 and 1 however steep the curve (two points of a
    # logistic fix both its parameters); with fewer it is identified only when the fit stays wider than a quarter
    # of the least spacing (below that the likelihood rises as the width goes to 0)
    identified = int(np.sum((k > 0) & (k < n))) >= 2 or np.exp(log_s) > 0.25 * gaps.min()
    if second > 0 and math.isfinite(second) and identified:
        return LogisticFit(float(c), float(1 / math.sqrt(second)), None, float(np.exp(log_s)))
    return LogisticFit(float(c), None, bracketing_gap(deltas, k, n), float(np.exp(log_s)))


def bracketing_gap(deltas, successes, trials) -> tuple:
    """(lo, hi): the gap between the last delta with rate < 1/2 and the next one with rate > 1/2, where a collapsed
    fit places its crossing (eq. (6)).  Rates that fall with delta somewhere, possible with few trials per delta,
    make no rate > 1/2 after the last one < 1/2: then it is the gap between the last rate > 1/2 and that last rate
    < 1/2."""
    deltas = np.asarray(deltas, float)
    order = np.argsort(deltas)
    rate, grid = (np.asarray(successes, float) / np.asarray(trials, float))[order], deltas[order]
    below = np.flatnonzero(rate < 0.5)
    above = np.flatnonzero(rate > 0.5)
    last = below.max() if below.size else -1
    after = above[above > last]
    if after.size or not below.size:
        lo = grid[last] if below.size else grid.min()
        hi = grid[after.min()] if after.size else grid.max()
    else:
        lo, hi = grid[above.max()], grid[last]
    return float(lo), float(hi)


def paired_crossing(deltas, outcomes, *, resamples: int = 200, seed: int = 0):
    """The logistic crossing of K trials that share their random numbers across the deltas (common random
    numbers: ``outcomes[i][k]`` is the success of trial k at ``deltas[i]``, the same trial k at every delta),
    with a standard error that counts the correlation between the rates.  :func:`logistic_crossing` treats the
    rates as independent binomials; here trials are resampled with replacement, each keeping its outcomes at
    every delta, and the spread of the resampled crossings x_b (resamples whose rates do not bracket 1/2 left
    out) is returned when it is the larger.  (None, None) when the rates do not bracket 1/2.

    The spread is half the central 68% range,

        s_boot = (x_b[84%] - x_b[16%]) / 2,                                                  (5)

    the standard deviation of a normal law, and blind to the few resamples whose logistic fit runs off the
    grid.  On a shallow rate curve a resample can keep its rates on both sides of 1/2 with a fitted width so
    large that its crossing lands far outside the deltas: gelu m = 2, rho0 = 0.5, d = 800
    (validation/reports/conventions/settings_width.jsonl; rates 3/10, 13/40, 19/40, 26/40 at delta 5.6 to 8.5)
    had one resampled crossing of 199 at 386, a standard deviation of 26.8 and a 16-84% half-range of 0.35.
    On the other 30 predictions of that file the ratio of (5) to the standard deviation is 0.83-1.08 (mean
    0.97) at the default 200 resamples and 0.94-1.03 (mean 0.98) at 2000, so outputs made before eq. (5),
    with the standard deviation, differ from a rerun by at most that much.

    The lists may differ in length (a sequential design, thresholds.forced eq. (2p)): trial k is then observed
    at delta i when k < len(outcomes[i]), and a resampled trial counts at the deltas where it was observed
    (a resample without any trial at a delta leaves that delta out of its fit).  With lists of one length
    this is the rectangular computation, draw for draw."""
    rows = [np.asarray(o, dtype=bool) for o in outcomes]
    sizes = np.array([r.size for r in rows])
    K = int(sizes.max())
    c, se = logistic_crossing(deltas, [r.sum() for r in rows], sizes)
    if c is None:
        return None, None
    deltas = np.asarray(deltas, float)
    out = np.zeros((len(rows), K), dtype=bool)
    seen = np.arange(K)[None, :] < sizes[:, None]        # trial k observed at delta i
    for i, r in enumerate(rows):
        out[i, : r.size] = r
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(int(resamples)):
        pick = rng.integers(0, K, K)
        n = seen[:, pick].sum(axis=1)
        keep = n > 0
        boot.append(logistic_crossing(deltas[keep], out[:, pick].sum(axis=1)[keep], n[keep])[0])
    boot = [b for b in boot if b is not None]
    if len(boot) >= 0.8 * resamples:
        se = max(se, half_range(boot))   # eq. (5)
    return c, se


def half_range(values) -> float:
    """Eq. (5) of :func:`paired_crossing`: half the central 68% range of bootstrap values, (x[84%] - x[16%]) / 2;
    NaN without any."""
    if len(values) == 0:
        return math.nan
    low, high = np.percentile(values, [16, 84])
    return float(high - low) / 2

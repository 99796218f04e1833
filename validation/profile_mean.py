"""The mean restoring push over data sets: the part of the relaxed profile that keeps its size as n grows.

validation.profile_check splits GD's push on the clamped hard coordinate into a restoring part r (even under the
reflection of the hard coordinates) and a force part f (odd), its eq. (7).  f has zero mean over data sets and is
O(n^-1/2).  r is not all mean: at one (m, d, delta) each data set's r is the mean over data sets rbar plus its own
fluctuation rho = r - rbar, the data set's curvature along E measured against the mean, a sum over the n samples
that is O(n^-1/2) like f.  profile_check eq. (9) scales f with n^-1/2 and keeps r whole, rho included.  Here rho
scales with f, and rbar is the part that is the same at every d:

    rbar(q, delta) = sum_{k <= K} c_k(q) delta^k,  least squares over the runs of one (m, d, t1) cell,       (1)
                     each run's r first read on the nominal q grid (linear in log q between its own q)
    learned(d') = rbar + sqrt(d / d') (r - rbar + f) > 0 on the whole grid (q > 0), a profile at d read at d', (2)
    delta_bar = the delta above which min over q > 0 of rbar(q, delta) stays > 0 up to the cell's largest       (3)
                delta (a root of a continuous function of delta, linear between 2001 points of a fine grid),
    delta_0 = eq. (3) on the grid's first q alone (q = 10^-4): the root of the mean of profile_check eq. (10)'s    (3')
              r ~ -S h, the mean over data sets of the hard Schur complement at the relaxed first phase,
    their spread: the runs resampled with replacement within each delta (a bootstrap, B draws, fixed seed), the   (4)
                16 / 84 % quantiles of the draws' delta_bar (a draw with no sign change counts as +-inf),
    s_r(q)^2 = sum_i n_i (r_i - rbar(q, delta_i))^2 / (runs - K - 1),  s_f(q)^2 = sum_i n_i f_i^2 / runs,          (5)
                the fluctuations' sizes in units of n^-1/2 (n_i = delta_i d); eq. (2) assumes both the same at every
                d (their s.e. about s / sqrt(2 dof)).
    rbar*_b = eq. (1) refitted on rbar(q, delta_i) + c sqrt(delta_j / delta_i) rho_j(q), j drawn for each run i      (6)
              (a residual bootstrap: whole rows over q, rescaled to run i's n; c = sqrt(runs / (runs - K - 1)));
    se(d')^2 = se_logistic^2 + se_rbar^2,  se_rbar = the standard deviation of eq. (2)'s crossing over the draws,
              each run's own r and f kept and rbar replaced by rbar*_b: eq. (2)'s s.e. with rbar's error.

At d' = d, eq. (2) is profile_check eq. (9) at d' = d, learned_prof (r + f, exactly); at d' = inf it is rbar > 0,
for which eq. (3) gives the threshold, the mean even part's, to be set beside the d = inf law's delta_NN.  Eq. (3)
is biased up: near its root rbar is near zero at several q at once, and the least of several noisy estimates lies
below each (tests: a mean that changes sign at every q at once, 24 runs, noise twice its slope per unit delta: +0.87
against a spread of 0.30; resampling finds about a third of that bias).  Eq. (3') has no least value to take and
no such bias (+0.12 +- 0.09 there, spread 0.5); it is the d = inf law's own indicator (thresholds.hessian eq. (4)),
averaged over data sets at d.

Approximations: rbar at d is taken for d = inf's mean (eqs. (3)-(3') test this against the d = inf law); the
fluctuation r - rbar is taken to be O(n^-1/2) at every q (measured: its spread over data sets times sqrt(n) is about
constant from d = 400 to 800 at q >= 0.02, but at q <= 10^-3 it does not shrink from d = 400 to 800, section 12l);
rbar's own estimation error (about the runs' spread over sqrt(runs per delta), smoothed by the polynomial) is kept
at its size in eq. (2) when d' > d, not scaled, and eq. (6) carries it into the crossing's s.e. (it enters eq. (2)
with weight 1 - sqrt(d / d'): none at d' = d); eq. (6) adds the two errors in quadrature, as if independent, though
the same runs give both, and its residuals are taken exchangeable across deltas once rescaled by sqrt(n) (eq. (5)'s
law); the least value over q of an estimated rbar is biased low at few
runs, which moves delta_bar up, and eq. (4) shows that spread but does not remove the bias; K = 2 (fewer where the
cell has fewer deltas) is a choice, the polynomial a smoothing in delta, not a law (`degree` sets it); a run's r
beyond its own q range is held at its end value.

Measured (gelu / phase retrieval, eta 0.1, t1 = 10^4; validation/reports/planted/width sections 12l-12n): eq. (3')
gives 21.6 [20.3, 22.8] / 20.3 [18.9, 22.1] / 20.7 [19.2, 22.7] at m = 1, d = 400 / 800 / 1600, against the d = inf
law's 21.35 [18.76, 23.93]; 33.4 [30.7, 36.2] / 27.7 [25.4, 29.7] at m = 2, d = 400 / 800, against 28.49 [26.03,
30.95]; 31.9 [28.4, 34.6] / 33.0 [32.0, 34.6] at m = 4, d = 400 / 800, against 34.53 [31.57, 37.49] (rising with the
horizon); 33.2 [31.5, 35.8] at m = 8, d = 400 (28 runs; one data set per delta had put it below 24, section 12n),
against 38.81 [35.91, 41.72] at 1500 steps and [40, 45] at 3000: from m = 4 on the finite-d mean lies below the d =
inf law, by more at m = 8.  Eq. (3) lies 0.0-1.1 above eq. (3').  Eq. (2) at d' = 2d and 4d, with eq. (6)'s s.e.,
meets GD's released crossings (section 12m, profile_check's table of eq. (2) beside GD): at m = 1 by -0.8 / +0.2
combined s.e. from d = 400 to 800 / 1600 and 0.0 from 800 to 1600; at m = 2 by +1.7 from d = 400 to 1600 and +1.9
from 800 to 1600 (+2.4 with the logistic s.e. alone: rbar's error, 1.3 there, is what brings it inside 2), while
from 400 to 800 eq. (6)'s s.e. is open (79 of 400 draws do not bracket 1/2: the crossing, 12.6, sits at the cell's
lowest deltas).  Eq. (9) was up to 2.8 s.e. high there.  At m = 4 and 8, from profiles at delta 3-7.5 (section 12n),
by -0.3 / +0.6 and -1.4 / -1.0 from d = 400 to 800 / 1600 (GD's m = 8 cells with 3-8 runs per delta, section
12o; at m = 8 eq. (2) stays near 4-4.5 at every d' while GD, read at 3 x 10^4 steps at d = 400 and 2 x 10^4 above,
rose from 4.5 to 5.9; read at one horizon, 3 x 10^4, GD gives 4.5 / 4.5 / 5.4 at d = 400 / 800 / 1600 and eq. (2)
meets it by -0.6 / -0.6 combined s.e., section 12p: eq. (2) is an infinite-horizon law, and GD's crossing at a
finite horizon lies above it by its escape time, which eq. (2) does not give; at 5 x 10^4 steps GD at d = 800 is
4.0 +- 0.6 and z = -0.0, section 12q).  At m = 16 (profiles at d = 400, delta 3-6 only, section 12q) eq. (2) gives
3.5 +- 0.3 at d' = 800 against GD's 4.2 +- 0.1 at 5 x 10^4 steps, z = -2.3, a horizon effect: by 10^5 steps two of GD's
four delta-4 runs there learn (crossing <= 4); eq. (3') lies above the profiled deltas.  Eq. (5): s_f
and s_r at q >= 0.01 are flat in d within their errors, s_r at q <= 10^-3 grows (m = 1: 0.30 / 0.47 / 0.58 at q =
10^-3, d = 400 / 800 / 1600).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from thresholds.crossing import logistic_crossing

DEGREE = 2          # K of eq. (1)
DRAWS = 400         # B of eq. (4)
FINE = 2001         # points of the delta grid of eq. (3)


@dataclass(frozen=True)
class MeanThreshold:
    """Eq. (3) on one cell with its bootstrap (eq. (4)): ``value`` (inf: rbar <= 0 somewhere at the largest delta;
    -inf: rbar > 0 on the whole grid at every delta of the cell), the 16 / 84 % quantiles ``low``, ``high`` of the
    draws (+-inf where more than 16 % of them fall off the cell's range; nan where every delta has one run, which
    a resampling within deltas cannot vary), ``off_range`` draws with no sign change of the ``draws``, the
    ``degree`` K used and the ``runs`` and ``deltas`` of the cell."""
    value: float
    low: float
    high: float
    off_range: int
    draws: int
    degree: int
    runs: int
    deltas: int

    @property
    def se(self) -> float | None:
        """Half the 16-84 % width, None where an end is infinite or there is no spread."""
        return (self.high - self.low) / 2 if np.isfinite(self.low) and np.isfinite(self.high) else None

    def text(self) -> str:
        def fmt(x):
            return f"{x:.1f}" if np.isfinite(x) else (">" if x > 0 else "<") + " range"
        if not np.isfinite(self.value):
            return fmt(self.value)
        if np.isnan(self.low):
            return f"{self.value:.1f} (one run per delta: no spread)"
        return f"{self.value:.1f} [{fmt(self.low)}, {fmt(self.high)}]"


def nominal_grid(q_low: float, q_high: float, points: int) -> np.ndarray:
    """The q grid the profiles aim at (profile_check: log-spaced from Q_LOW to LEARNED)."""
    return np.logspace(np.log10(q_low), np.log10(q_high), points)


def on_grid(q, values, grid) -> np.ndarray:
    """A run's values at its own q > 0 (index 0, q = 0, left out) read on ``grid``: linear in log q, held at the
    ends (eq. (1))."""
    q, values = np.asarray(q, dtype=float)[1:], np.asarray(values, dtype=float)[1:]
    order = np.argsort(q)
    return np.interp(np.log(grid), np.log(q[order]), values[order])


def at_own_q(grid, values, q) -> np.ndarray:
    """The converse of :func:`on_grid`: values on ``grid`` read at a run's own q (linear in log q, held at the
    ends), with 0 at its q = 0 (r(0) = 0)."""
    q = np.asarray(q, dtype=float)
    return np.concatenate([[0.0], np.interp(np.log(q[1:]), np.log(grid), values)])


def degree_for(deltas, degree: int = DEGREE) -> int:
    """K of eq. (1): ``degree``, lowered to the cell's distinct deltas minus one."""
    return int(min(degree, len(set(np.asarray(deltas).tolist())) - 1))


def mean_push(deltas, R, degree: int) -> np.ndarray:
    """Eq. (1): the coefficients c (degree + 1 x grid points, highest power first) of rbar from the runs' deltas
    and their r on the grid R (runs x grid points)."""
    V = np.vander(np.asarray(deltas, dtype=float), degree + 1)
    coef, *_ = np.linalg.lstsq(V, np.asarray(R, dtype=float), rcond=None)
    return coef


def rbar_at(coef, delta) -> np.ndarray:
    """rbar of eq. (1) at one delta (on the grid) or at several (rows)."""
    return np.vander(np.atleast_1d(np.asarray(delta, dtype=float)), coef.shape[0]) @ coef


def mean_threshold_value(deltas, R, degree: int) -> float:
    """Eq. (3) on the runs given (no bootstrap)."""
    deltas = np.asarray(deltas, dtype=float)
    fine = np.linspace(deltas.min(), deltas.max(), FINE)
    least = rbar_at(mean_push(deltas, R, degree), fine).min(axis=1)
    if least[-1] <= 0:
        return np.inf
    below = np.nonzero(least <= 0)[0]
    if len(below) == 0:
        return -np.inf
    i = below[-1]
    return float(fine[i] + (fine[i + 1] - fine[i]) * -least[i] / (least[i + 1] - least[i]))


def mean_threshold(deltas, R, degree: int = DEGREE, draws: int = DRAWS, seed: int = 0) -> MeanThreshold:
    """Eqs. (3)-(4) on one cell: ``deltas`` (runs) and ``R`` (runs x grid points, eq. (1)'s r on the grid)."""
    deltas = np.asarray(deltas, dtype=float)
    R = np.asarray(R, dtype=float)
    K = degree_for(deltas, degree)
    if K < 1:
        raise ValueError("eq. (3) needs runs at two deltas at least")
    value = mean_threshold_value(deltas, R, K)
    rng = np.random.default_rng(seed)
    groups = [np.nonzero(deltas == x)[0] for x in sorted(set(deltas.tolist()))]
    if max(len(g) for g in groups) < 2:
        return MeanThreshold(value, np.nan, np.nan, 0, 0, K, len(deltas), len(groups))
    boot = np.sort([mean_threshold_value(deltas[idx], R[idx], K)
                    for idx in (np.concatenate([rng.choice(g, size=len(g)) for g in groups]) for _ in range(draws))])
    return MeanThreshold(value, float(boot[int(0.16 * draws)]), float(boot[min(int(0.84 * draws), draws - 1)]),
                         int(np.sum(~np.isfinite(boot))), draws, K, len(deltas), len(groups))


def learned_scaled(r, f, rbar, ratio: float | None) -> bool:
    """Eq. (2) for one run (r, f of profile_check eq. (7) at its own q, rbar of eq. (1) at its delta and q) read at
    d' = ratio x d (ratio None: d' = inf, rbar > 0)."""
    s = 0.0 if ratio is None else ratio ** -0.5
    r, f, rbar = (np.asarray(x, dtype=float)[1:] for x in (r, f, rbar))
    return bool(np.all(rbar + s * (r - rbar + f) > 0))


def residuals(deltas, R, K: int) -> tuple:
    """Eq. (1)'s fit at the runs' own deltas (runs x grid points), the residuals rho = r - rbar of eqs. (5)-(6) and
    their degrees of freedom, runs - K - 1."""
    dof = len(deltas) - K - 1
    if dof < 1:
        raise ValueError("eqs. (5)-(6) need more runs than the K + 1 coefficients of eq. (1)")
    fitted = rbar_at(mean_push(deltas, R, K), deltas)
    return fitted, R - fitted, dof


@dataclass(frozen=True)
class FluctuationScale:
    """Eq. (5) on one cell: on the ``grid``, ``s_r`` (the restoring push's fluctuation about eq. (1)) and ``s_f``
    (the force part's, about zero) times sqrt(n), with their degrees of freedom."""
    grid: np.ndarray
    s_r: np.ndarray
    s_f: np.ndarray
    dof_r: int
    dof_f: int


def fluctuation_scale(deltas, d: int, R, F, grid, degree: int = DEGREE) -> FluctuationScale:
    """Eq. (5) from the runs' deltas at dimension ``d`` and their r and f on the ``grid`` (runs x grid points)."""
    deltas = np.asarray(deltas, dtype=float)
    R, F = np.asarray(R, dtype=float), np.asarray(F, dtype=float)
    _, rho, dof_r = residuals(deltas, R, degree_for(deltas, degree))
    n = (deltas * d)[:, None]
    return FluctuationScale(np.asarray(grid, dtype=float), np.sqrt(np.sum(n * rho ** 2, axis=0) / dof_r),
                            np.sqrt(np.sum(n * F ** 2, axis=0) / len(deltas)), dof_r, len(deltas))


def residual_draws(deltas, R, degree: int, draws: int = DRAWS, seed: int = 0) -> np.ndarray:
    """Eq. (6)'s refits: ``draws`` coefficient arrays (draws x K + 1 x grid points) of eq. (1), each fitted to the
    runs' rbar plus residual rows drawn with replacement from all runs, rescaled to the receiving run's n and
    inflated for the K + 1 fitted coefficients."""
    deltas = np.asarray(deltas, dtype=float)
    R = np.asarray(R, dtype=float)
    fitted, rho, dof = residuals(deltas, R, degree)
    unit = rho * np.sqrt(deltas)[:, None] * math.sqrt(len(deltas) / dof)    # residuals times sqrt(n / d)
    rng = np.random.default_rng(seed)
    V = np.vander(deltas, degree + 1)
    pinv = np.linalg.pinv(V)
    picks = rng.integers(len(deltas), size=(draws, len(deltas)))
    return np.einsum("kr,brg->bkg", pinv, fitted[None] + unit[picks] / np.sqrt(deltas)[None, :, None])


@dataclass(frozen=True)
class ScaledCrossing:
    """Eq. (2)'s logistic crossing at d' = ``ratio`` x d with ``se_logistic`` (the runs' fractions learned alone),
    ``se_rbar`` (eq. (6); inf where more than 16 % of the draws do not bracket 1/2, as the others' spread is then
    not the law's; None where there are no draws, a cell with no more runs than K + 1) and ``se``, the two in
    quadrature (the logistic one alone where se_rbar is None); ``value`` None where the fractions do not bracket 1/2,
    and then ``bound`` says on which side of the cell's deltas the crossing lies: ("<", the least delta) where at
    least half the runs learn at every delta, (">", the largest) where fewer than half do at every delta."""
    ratio: float
    value: float | None
    se_logistic: float | None
    se_rbar: float | None
    unbracketed: int
    draws: int
    bound: tuple | None = None

    @property
    def se(self) -> float | None:
        if self.value is None:
            return None
        return self.se_logistic if self.se_rbar is None else math.hypot(self.se_logistic, self.se_rbar)

    def text(self) -> str:
        """"c +- se (logistic se, rbar's se)" as the tables print it; "< x" / "> x" where the crossing lies
        beyond the cell's deltas (``bound``)."""
        if self.value is None:
            return f"{self.bound[0]} {self.bound[1]:g}" if self.bound else "-"
        if self.se_rbar is None:
            return f"{self.value:.1f} +- {self.se:.1f} ({self.se_logistic:.1f}, no draws)"
        if not math.isfinite(self.se_rbar):
            return (f"{self.value:.1f} +- open ({self.se_logistic:.1f}, open: {self.unbracketed} / {self.draws} "
                    "draws unbracketed)")
        return f"{self.value:.1f} +- {self.se:.1f} ({self.se_logistic:.1f}, {self.se_rbar:.1f})"


def scaled_crossing(deltas, runs, grid, coef, draws, ratio: float) -> ScaledCrossing:
    """Eq. (2)'s crossing at d' = ratio x d and its eq. (6) s.e.: ``runs`` [(r, f, q)] at their own q, ``coef`` eq.
    (1)'s fit on the ``grid`` and ``draws`` its eq. (6) refits (:func:`residual_draws`)."""
    deltas = np.asarray(deltas, dtype=float)
    levels = sorted(set(deltas.tolist()))
    counts = [int(np.sum(deltas == lv)) for lv in levels]
    memo = {}

    def flags_of(rbar_rows) -> tuple:
        return tuple(learned_scaled(r, f, at_own_q(grid, rb, q), ratio) for (r, f, q), rb in zip(runs, rbar_rows))

    def crossing(flags):
        if flags not in memo:
            learned = [sum(x for x, dl in zip(flags, deltas) if dl == lv) for lv in levels]
            memo[flags] = (logistic_crossing(levels, learned, counts), learned)
        return memo[flags]

    (value, se_logistic), learned = crossing(flags_of(rbar_at(coef, deltas)))
    if value is None:
        rates = [k / n for k, n in zip(learned, counts)]
        bound = ("<", levels[0]) if min(rates) >= 0.5 else (">", levels[-1]) if max(rates) <= 0.5 else None
        return ScaledCrossing(ratio, None, None, None, 0, len(draws), bound)
    if len(draws) == 0:
        return ScaledCrossing(ratio, value, se_logistic, None, 0, 0)
    values = [crossing(flags_of(rbar_at(c, deltas)))[0][0] for c in draws]
    missing = int(sum(v is None for v in values))
    got = np.sort([v for v in values if v is not None]).astype(float)
    # the draws' standard deviation, not a quantile range: with a few runs per delta most draws leave every run's
    # flag, and so the crossing, as it was, and the 16-84 % range of so lumpy a law is often exactly 0
    se_rbar = math.inf if missing > 0.16 * len(draws) or len(got) < 2 else float(np.std(got, ddof=1))
    return ScaledCrossing(ratio, value, se_logistic, se_rbar, missing, len(draws))

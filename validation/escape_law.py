"""GD's escape time after the release as a law in delta: the released crossing at every horizon, and past all.

validation.release_check reads each released run at one horizon S (its eq. (2')) and fits the crossing of the
fractions learned at S (its eq. (3)); that crossing moves with S (width sections 12p, 12q: m = 8 at d = 800 from
4.5 at 3 x 10^4 steps to 4.0 at 5 x 10^4, m = 16 at d = 400 from 4.0 to 3.5), so a reading at one horizon is not
GD's infinite-horizon threshold, and the unlearned runs say only that their escape takes longer than their T.  Here
the escape times themselves are the data.  Per released run (one setup, seed, t1 and start; its longest record)

    tau = t_1/2 - t1 (release_check eq. (2)), observed where t_1/2 <= S;  else censored: tau > S - t1,   (1)

or, at another level L of the hard fraction (``--level``, runs whose records carry release_check eq. (2'')),

    tau = t_L - t1, observed where t_L <= S;  else censored: tau > S - t1,                                (1')

a level below the plateaus near q = 1/2 that the widest runs reach (width section 12q); S the run's own T (or a
horizon S below it, ``--horizon``): each run is censored at its own horizon, so cells
whose runs stop at different T need no common horizon (release_check eq. (4)).  Per cell (m, d, t1, start) the
escape time diverges at a threshold, and the runs spread either in time or in threshold:

    log tau = log A - nu log(delta - delta_c) + sigma eps,   eps ~ N(0, 1);  tau = inf for delta <= delta_c,   (2)
    tau = A / (delta - delta_i)^nu,   delta_i = delta_c + s eps (the run's own threshold);  inf for delta <= delta_i.  (2b)

Why this form: after the release the hard component grows from q(t1) ~ 1/d as exp(2 eta |z| t), |z| the rate of
the Hessian's hard negative direction, so that tau = log(q_1/2 / q(t1)) / (2 eta |z|); where z crosses zero
linearly in delta, tau diverges as 1 / (delta - delta_c): nu = 1 (the default; ``--nu free`` fits it), and A
carries the log d of the climb from q ~ 1/d.  Eq. (2) puts the run-to-run spread (data set, start) in the
prefactor; eq. (2b) (the default, ``--spread threshold``) puts it in the threshold itself, each data set at finite
d crossing at its own delta_i, so that near the crossing the spread of tau grows without bound.  The parameters
(log A, delta_c, sigma or s) maximize the censored likelihood; under eq. (2) (Tobit)

    log L = sum_observed [log phi(z_i) - log(sigma tau_i)] + sum_censored log(1 - Phi(z_i)),
    z_i = (log tau_i - log A + nu log(delta_i - delta_c)) / sigma,                                       (3)

with delta_c in (0, the least delta with an observed escape) (a censored run at delta_i <= delta_c adds 0: it
never escapes), and under eq. (2b), with g_i = (A / tau_i)^(1/nu) = delta - (the run's threshold),

    log L = sum_observed [log phi(y_i) - log s + log(g_i / (nu tau_i))] + sum_censored log Phi(-y_i),
    y_i = (delta_i - g_i - delta_c) / s.                                                                  (3b)

Read at any horizon S, the law gives

    P(learned by S | delta) = Phi((log(S - t1) - log A + nu log(delta - delta_c)) / sigma)  (0 at delta <= delta_c),  (4)
    P(learned by S | delta) = Phi((delta - delta_1/2(S)) / s),                                            (4b)
    delta_1/2(S) = delta_c + (A / (S - t1))^(1/nu),   -> delta_c as S -> inf,                         (5)

delta_1/2(S) the crossing release_check's eq. (3) estimates at S (under eq. (2b) the success curve keeps its
width s and moves by (A / (S - t1))^(1/nu)), and delta_c GD's released crossing at an infinite horizon.  Errors:
the runs of each delta resampled with replacement (the design kept) and the law refitted; the s.e. of delta_c and
of delta_1/2(S) are half the 16-84% range of the refits (thresholds.crossing eq. (5)), none when fewer than 80% of
the resamples can be fitted.  A law needs observed escapes at two deltas at least (with one, A and delta_c trade
off).

The check (``--check S0:S1``): fit on the runs read at S0, then, for the runs not learned by S0 that eq. (1)
decides at S1 > S0 (their T >= S1, or escaped before their T), the law's chance of escaping between S0 and S1

    P(S0 < tau + t1 <= S1) / P(tau + t1 > S0),   summed over the runs against the number that escape,     (6)

with the two-sided exact p of that count (the Poisson-binomial law of those chances): out of sample, since the
fit saw those runs only as censored at S0.

Measured (gelu / phase retrieval, eta 0.1, t1 = 10^4, the committed released runs; validation/reports/planted/width
section 12r, escape_law_gelu.md): with nu = 1, eq. (2b) has the larger likelihood in 7 of the 11 cells with 12 runs or more (by 0.4-9.6; eq.
(2) by 0.0-4.1 in the other four) and passes the check from 3 x 10^4 to 5 x 10^4 where eq. (2) fails (escaped /
expected: m = 16, d = 400: 1 / 1.8, p = 0.73, against 1 / 3.0, p < 0.001; m = 8, d = 800: 3 / 0.6, p = 0.03,
against 3 / 1.0, p < 0.001); to 10^5 at m = 16, d = 800 it gives 4 / 1.7, p = 0.054.  A free nu is not
determined (0.06-2.7, the likelihood up by at most 4.1), so delta_c is conditional on nu = 1.  GD's
infinite-horizon released crossing delta_c (eq. (2b), every run at its own T) falls with width: 14.9 +- 0.8 / 11.6
+- 0.7 / 5.1 +- 0.5 / 4.2 +- 0.15 / 3.93 +- 0.08 at m = 1 / 2 / 4 / 8 / 16 (d = 800), 13.8 +- 1.2 / 10.7 +- 1.5 /
3.6 +- 0.4 / 3.7 +- 0.2 / 3.71 +- 0.08 at d = 400 (flat from m = 4 on), at 0.1-0.7 of the d = inf delta_NN, and
rises with d from m = 4 on.  validation.profile_check sets profile_mean's eq. (2) beside it (9 of 10 comparisons
within 2 combined s.e.; m = 16 from d = 400 to 800: -1.4, against -2.3 at the 5 x 10^4 reading).  At d = 400 the level
that defines escape moves delta_c (eq. (1'), 12 runs with passage steps per width): 3.04 +- 0.19 / 3.35 +- 0.13 /
3.57 +- 0.11 / 3.73 +- 0.14 / 3.74 +- 0.11 at q = 0.03 / 0.1 / 0.2 / 0.3 / 0.5 (m = 16), 2.58 +- 0.38 / 3.29 +-
0.16 / 3.33 +- 0.17 / 3.41 +- 0.20 / 3.85 +- 0.20 (m = 8), so the hard fraction GD reaches at an infinite horizon
rises continuously with delta there, and q > 1/2 reads the top of that rise.

Run:  python -m validation.escape_law --released release_gelu_t10000.jsonl --released release_gelu_t10000_d800.jsonl
          [--horizon S0] [--at 30000,100000] [--nu free] [--check 30000:50000] [--json]
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field

import click
import numpy as np
from scipy import optimize
from scipy.special import log_ndtr, ndtr

from validation.release_check import (
    LEARNED,
    LEVELS,
    _read,
    _values,
    learned_by,
    longest,
)

MIN_FITTED = 0.8          # eq. (5)'s 80% of the resamples


@dataclass(frozen=True)
class EscapeData:
    """One cell's runs by eq. (1): ``delta``, ``tau`` (observed, or the censoring time S - t1) and ``censored``."""
    delta: np.ndarray
    tau: np.ndarray
    censored: np.ndarray

    @property
    def identified(self) -> bool:
        """Observed escapes at two deltas at least (the module docstring)."""
        return np.unique(self.delta[~self.censored]).size >= 2


def passage(r: dict, level: float = LEARNED) -> int | None:
    """The run's first step above ``level`` (t_1/2 at 1/2, else release_check eq. (2''), the record's t_levels)."""
    return r["t_half"] if level == LEARNED else r["t_levels"][f"{level:g}"]


def escaped_by(r: dict, S: int, level: float = LEARNED) -> bool | None:
    """Eq. (1'): the run passed ``level`` by step S; at 1/2 release_check's eq. (2'); None where S lies beyond a run
    that had not passed by its T (undecided)."""
    if level == LEARNED:
        return learned_by(r, S)
    t = passage(r, level)
    if t is not None and t <= S:
        return True
    return False if S <= r["steps"] else None


def with_level(rows: list, level: float) -> list:
    """The records that carry ``level``'s passage step (every record at 1/2; at another level those with t_levels,
    release_check eq. (2''))."""
    return rows if level == LEARNED else [r for r in rows if "t_levels" in r]


def cell_data(rows: list, horizon: int | None = None, level: float = LEARNED) -> EscapeData:
    """Eq. (1) for the runs of one cell (release_check records; each run's longest record), read at ``horizon``
    where it lies below a run's T (default: each run at its own T), with the escape at ``level`` (eq. (1'))."""
    delta, tau, censored = [], [], []
    for r in longest(rows):
        S = r["steps"] if horizon is None else min(horizon, r["steps"])
        escaped = escaped_by(r, S, level)
        delta.append(r["delta"])
        tau.append(max(passage(r, level) - r["t1"], 1) if escaped else S - r["t1"])   # a passage at t1 counts as 1 step
        censored.append(not escaped)
    return EscapeData(np.array(delta, float), np.array(tau, float), np.array(censored, bool))


def _unpack(x: np.ndarray, top: float, nu: float | None, spread: str) -> tuple:
    """(log A, delta_c, sigma or s, nu) from the optimizer's free variables: under eq. (2) delta_c = top *
    logistic(x[1]) in (0, top), under eq. (2b) delta_c = x[1]; the spread and a free nu by their logs."""
    delta_c = top / (1.0 + math.exp(-x[1])) if spread == "time" else x[1]
    return x[0], delta_c, math.exp(x[2]), (math.exp(x[3]) if nu is None else nu)


def neg_log_likelihood(log_A: float, delta_c: float, sigma: float, nu: float, data: EscapeData,
                       spread: str = "threshold") -> float:
    """-log L of eq. (3) (``spread`` "time", eq. (2); inf where an observed escape lies at delta <= delta_c) or of
    eq. (3b) (``spread`` "threshold", eq. (2b), sigma the s there)."""
    if not (0 < sigma < math.inf and 0 < nu < math.inf):
        return math.inf
    if spread == "threshold":
        c = data.censored
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            gap = np.exp((log_A - np.log(data.tau)) / nu)        # (A / tau)^(1/nu): delta - the run's threshold
            z = (data.delta - gap - delta_c) / sigma
            value = (-np.sum(log_ndtr(-z[c])) + np.sum(0.5 * z[~c] ** 2 + math.log(sigma) + 0.5 * math.log(2 * math.pi)
                                                       - np.log(gap[~c] / (nu * data.tau[~c]))))
        return float(value) if np.isfinite(value) else math.inf
    above = data.delta > delta_c
    if np.any(~above & ~data.censored):
        return math.inf
    d, t, c = data.delta[above], data.tau[above], data.censored[above]
    z = (np.log(t) - log_A + nu * np.log(d - delta_c)) / sigma
    return float(-np.sum(log_ndtr(-z[c])) + np.sum(0.5 * z[~c] ** 2 + math.log(sigma) + np.log(t[~c]))
                 + 0.5 * math.log(2 * math.pi) * np.sum(~c))


@dataclass(frozen=True)
class EscapeLaw:
    """Eq. (2) or (2b) (``spread`` "time" or "threshold") fitted to one cell (``log_A``, ``delta_c``, ``sigma``,
    the spread sigma or s, ``nu``), its ``runs``, ``escaped`` (eq. (1)) and maximum log-likelihood ``log_L``, the
    refits of the resampled runs ``boot`` [(log A, delta_c, sigma, nu)] and ``at_edge`` when eq. (2)'s delta_c lies
    at an end of its range (0 or the least delta with an escape: the likelihood has no interior maximum)."""
    log_A: float
    delta_c: float
    sigma: float
    nu: float
    runs: int = 0
    escaped: int = 0
    spread: str = "threshold"
    log_L: float = math.nan
    at_edge: bool = False
    boot: list = field(default_factory=list, repr=False)

    def p_learned(self, delta: float, S: float, t1: float) -> float:
        """Eq. (4) or (4b): the chance that a run at ``delta`` has escaped by step S."""
        if S <= t1:
            return 0.0
        if self.spread == "threshold":
            return float(ndtr((delta - self.crossing(S, t1)) / self.sigma))
        if delta <= self.delta_c:
            return 0.0
        return float(ndtr((math.log(S - t1) - self.log_A + self.nu * math.log(delta - self.delta_c)) / self.sigma))

    def crossing(self, S: float | None, t1: float) -> float:
        """Eq. (5) at horizon S (None: S -> inf, delta_c; inf at S <= t1, where no run has escaped)."""
        if S is None:
            return self.delta_c
        if S <= t1:
            return math.inf
        return self.delta_c + math.exp((self.log_A - math.log(S - t1)) / self.nu)

    def crossing_se(self, S: float | None, t1: float, resamples: int) -> float | None:
        """Eq. (5)'s s.e. at S from the refits; None below 80% of ``resamples`` fitted and at S <= t1."""
        if not self.boot or len(self.boot) < MIN_FITTED * resamples or (S is not None and S <= t1):
            return None
        values = [EscapeLaw(*b).crossing(S, t1) for b in self.boot]
        low, high = np.percentile(values, [16, 84])
        return float(high - low) / 2


def fit(data: EscapeData, nu: float | None = 1.0, spread: str = "threshold", starts: list | None = None) -> tuple | None:
    """(law, x): the maximum of eq. (3) or (3b) over (log A, delta_c, the spread) (and nu when ``nu`` is None), by
    Nelder-Mead from several delta_c (or from ``starts``, the optimizer's variables), and its variables x; None
    when the law is not identified (:attr:`EscapeData.identified`)."""
    if not data.identified:
        return None
    top = float(data.delta[~data.censored].min())
    logtau = np.log(data.tau[~data.censored])
    if starts is None:
        starts = [np.array([float(np.median(logtau)) + math.log(top * (1 - f)),
                            math.log(f / (1 - f)) if spread == "time" else top * f, math.log(0.5)]
                           + ([] if nu is not None else [0.0])) for f in (0.1, 0.3, 0.5, 0.7, 0.9, 0.97)]

    def objective(x):
        value = neg_log_likelihood(*_unpack(x, top, nu, spread), data, spread)
        return value if math.isfinite(value) else 1e300
    best = min((optimize.minimize(objective, x0, method="Nelder-Mead",
                                  options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 20000, "maxfev": 20000})
                for x0 in starts), key=lambda res: res.fun)
    log_A, delta_c, sigma, nu_hat = _unpack(best.x, top, nu, spread)
    return EscapeLaw(float(log_A), float(delta_c), float(sigma), float(nu_hat), int(data.delta.size),
                     int((~data.censored).sum()), spread, -float(best.fun),
                     at_edge=spread == "time" and bool(abs(best.x[1]) > 12)), best.x


def fit_with_errors(data: EscapeData, nu: float | None = 1.0, spread: str = "threshold", resamples: int = 200,
                    seed: int = 0) -> EscapeLaw | None:
    """:func:`fit` and its refits on ``resamples`` resamplings of the runs, each delta's runs drawn with
    replacement among themselves (eq. (5)'s errors); resamples that are not identified are left out."""
    found = fit(data, nu, spread)
    if found is None:
        return None
    law, x = found
    rng = np.random.default_rng(seed)
    groups = [np.nonzero(data.delta == v)[0] for v in np.unique(data.delta)]
    boot = []
    for _ in range(int(resamples)):
        pick = np.concatenate([rng.choice(g, g.size) for g in groups])
        sample = EscapeData(data.delta[pick], data.tau[pick], data.censored[pick])
        refit = fit(sample, nu, spread, starts=[x]) if sample.identified else None
        if refit is not None:
            b = refit[0]
            boot.append((b.log_A, b.delta_c, b.sigma, b.nu))
    return dataclasses.replace(law, boot=boot)


def cells(released: list) -> dict:
    """{(m, d, t1, start): [records]} of release_check records."""
    out = {}
    for r in released:
        out.setdefault((r["m"], r["d"], r["t1"], r.get("scale", 1.0)), []).append(r)
    return dict(sorted(out.items()))


def infinite_horizon(released: list, t1s, resamples: int = 200) -> dict:
    """{(m, d): (delta_c, its s.e.)}: eq. (5)'s S -> inf crossing under eq. (2b), nu = 1, of each width and d,
    over the releases at a t1 of ``t1s`` with the random start (scale 1), every run at its own T; cells whose law
    is not identified left out (the s.e. None when fewer than 80% of the resamples fit).  tau counts from t1, so
    the t1 are not pooled: with several in ``t1s`` a width and d keep the law of the largest t1."""
    out = {}
    for (m, d, t1, scale), rows in cells(released).items():
        if t1 in t1s and scale == 1.0:
            law = fit_with_errors(cell_data(rows), resamples=resamples)
            if law is not None:
                out[(m, d)] = (law.delta_c, law.crossing_se(None, t1, resamples))
    return out


def tail_p(probabilities: list, observed: int) -> float:
    """Two-sided exact p-value of ``observed`` successes among independent trials of these success
    probabilities (the Poisson-binomial law, by convolution): 2 min(P(X <= k), P(X >= k)), at most 1."""
    pmf = np.ones(1)
    for p in probabilities:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return float(min(1.0, 2 * min(pmf[: observed + 1].sum(), pmf[observed:].sum())))


def check(rows: list, law: EscapeLaw, S0: int, S1: int, level: float = LEARNED) -> dict:
    """Eq. (6): the runs of one cell not learned by S0 that eq. (1) decides at S1, the law's expected escapes
    between S0 and S1 (``expected``), the runs that do (``escaped``) and the two-sided exact ``p`` of that count
    (:func:`tail_p`)."""
    chances, escaped = [], 0
    for r in longest(rows):
        if escaped_by(r, S0, level) is not False:
            continue
        now = escaped_by(r, S1, level)
        if now is None:
            continue
        p0, p1 = law.p_learned(r["delta"], S0, r["t1"]), law.p_learned(r["delta"], S1, r["t1"])
        chances.append((p1 - p0) / (1 - p0) if p0 < 1 else 1.0)
        escaped += int(now)
    return {"runs": len(chances), "escaped": escaped, "expected": float(sum(chances)),
            "p": tail_p(chances, escaped) if chances else None}


def _fmt(value, se=None, digits=2) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" + ("" if se is None else f" +- {se:.{digits}f}")


def table(released: list, horizon: int | None, at: list, nu: float | None, resamples: int,
          check_at: tuple | None = None, spread: str = "threshold", level: float = LEARNED) -> tuple:
    """Markdown lines and JSON rows: per cell the law of eq. (2) or (2b) (``spread``; fitted on the runs read at
    ``horizon``, else each at its T), its maximum log-likelihood and its crossings at the horizons ``at`` (eq.
    (5)); with ``check_at`` = (S0, S1) eq. (6); escapes at ``level`` (eq. (1'); cells without such records left
    out)."""
    head = ["m", "d", "t1", "start", "runs (escaped)", "delta_c (S -> inf)", "A", "sigma" if spread == "time" else "s",
            "nu", "log L"]
    head += [f"delta_1/2({S:g})" for S in at] + (["check: escaped / expected of runs (p)"] if check_at else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows_out = []
    for (m, d, t1, scale), rows in cells(with_level(released, level)).items():
        law = fit_with_errors(cell_data(rows, horizon, level), nu, spread, resamples)
        if law is None:
            lines.append(f"| {m} | {d} | {t1} | {scale:g} | {len(longest(rows))} | not identified (escapes at fewer "
                         "than two deltas) |" + " |" * (len(head) - 6))
            rows_out.append({"m": m, "d": d, "t1": t1, "start": scale, "spread": spread, "identified": False})
            continue
        se_c = law.crossing_se(None, t1, resamples)
        cols = [str(m), str(d), str(t1), f"{scale:g}", f"{law.runs} ({law.escaped})",
                _fmt(law.delta_c, se_c) + (" (at an end)" if law.at_edge else ""), f"{math.exp(law.log_A):.3g}",
                f"{law.sigma:.2f}", f"{law.nu:.2f}", f"{law.log_L:.1f}"]
        row = {"m": m, "d": d, "t1": t1, "start": scale, "spread": spread, "level": level, "identified": True,
               "runs": law.runs,
               "escaped": law.escaped, "delta_c": law.delta_c, "delta_c_se": se_c, "A": math.exp(law.log_A),
               "sigma": law.sigma, "nu": law.nu, "log_L": law.log_L, "at_edge": law.at_edge, "fitted_resamples": len(law.boot),
               "horizon": horizon, "crossings": {}}
        for S in at:
            c, se = law.crossing(S, t1), law.crossing_se(S, t1, resamples)
            cols.append(_fmt(c, se))
            row["crossings"][str(S)] = {"value": c, "se": se}
        if check_at:
            got = check(rows, law, *check_at, level)
            cols.append(f"{got['escaped']} / {got['expected']:.1f} of {got['runs']} ({_fmt(got['p'], digits=3)})")
            row["check"] = {"S0": check_at[0], "S1": check_at[1], **got}
        lines.append("| " + " | ".join(cols) + " |")
        rows_out.append(row)
    return lines, rows_out


def _horizons(text: str) -> list:
    values = [int(v) for v in _values(text, "--at", float)]     # steps, also as 1e5
    if any(v < 1 for v in values):
        raise click.BadParameter(f"{text!r}: steps must be positive", param_hint="--at")
    return values


@click.command()
@click.option("--released", "files", multiple=True, required=True, type=click.Path(dir_okay=False),
              help="validation.release_check records (repeat the option for several files)")
@click.option("--horizon", type=click.IntRange(min=2), help="read every run at this step where its T is longer "
              "(default: each run at its own T)")
@click.option("--at", "at", default="30000,50000,100000", show_default=True,
              help="horizons S at which eq. (5)'s crossing is printed, comma-separated")
@click.option("--nu", default="1", show_default=True, help="the exponent of eq. (2), a positive number or 'free'")
@click.option("--spread", type=click.Choice(["time", "threshold"]), default="threshold", show_default=True,
              help="the runs' spread: log-normal in the escape time (eq. (2)) or normal in the run's threshold "
              "(eq. (2b))")
@click.option("--level", type=click.Choice([f"{v:g}" for v in LEVELS]), default=f"{LEARNED:g}", show_default=True,
              help="the hard fraction whose first passage is the escape (eq. (1'); below 1/2 only runs whose records "
              "carry release_check eq. (2''))")
@click.option("--check", "check_at", help="S0:S1: fit on the runs read at S0 and test eq. (6) at S1 > S0")
@click.option("--resamples", type=click.IntRange(min=0), default=200, show_default=True,
              help="resamplings of the runs for the s.e.")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per cell instead of the table")
def main(files, horizon, at, nu, spread, level, check_at, resamples, as_json):
    """GD's released escape times fitted per cell by eq. (2) or (2b); delta_c is the crossing at an infinite
    horizon."""
    if nu == "free":
        nu_value = None
    else:
        try:
            nu_value = float(nu)
        except ValueError:
            raise click.BadParameter(f"{nu!r}: a positive number or 'free'", param_hint="--nu") from None
        if not (math.isfinite(nu_value) and nu_value > 0):
            raise click.BadParameter(f"{nu!r}: a positive number or 'free'", param_hint="--nu")
    pair = None
    if check_at:
        try:
            pair = tuple(int(float(v)) for v in check_at.split(":"))
        except ValueError:
            pair = ()
        if len(pair) != 2 or not 0 < pair[0] < pair[1]:
            raise click.BadParameter(f"{check_at!r}: S0:S1 with 0 < S0 < S1", param_hint="--check")
        horizon = pair[0]
    released = _read(files)
    if not released:
        raise click.ClickException("no release records in " + ", ".join(files))
    need = ("m", "d", "t1", "delta", "seed", "steps", "t_half", "learned")
    bad = next((r for r in released if not isinstance(r, dict) or any(k not in r for k in need)), None)
    if bad is not None:
        raise click.ClickException("not a validation.release_check record (it needs " + ", ".join(need) + "): "
                                   + json.dumps(bad)[:80])
    if not with_level(released, float(level)):
        raise click.ClickException(f"no release records with passage steps at level {level} (release_check eq. (2''))")
    lines, rows = table(released, horizon, _horizons(at), nu_value, resamples, pair, spread, float(level))
    print("\n".join(json.dumps(r) for r in rows) if as_json else "\n".join(lines))


if __name__ == "__main__":
    main()

"""GD's Hessian as the first phase settles: does the negative hard outlier stay, or vanish with the residuals?

`thresholds nn` reads delta_NN(T) off the Hessian of the first phase at its horizon T (600 steps in the reports),
and thresholds.escape eq. (2) assumes that a hard outlier present at T stays, so that GD escapes at every d.  Here
GD restricted to the complement of the hard subspace (the first phase alone: validation.simulate, ``complement``)
runs for T_max steps at finite d, and at the checkpoints t_1 < ... < t_K the whole spectrum of the scaled Hessian
H = m Hess R (dense, validation.simulate.hessian_spectrum) gives

    z_H(t)      = the lowest eigenvalue whose eigenvector has hard overlap^2 >= O_MIN, when negative       (1)
    lambda_B(t) = the lowest eigenvalue with hard overlap^2 < O_MIN (the low end of the bulk)
    L(t_k)      = eta sum_{j <= k} int_{t_{j-1}}^{t_j} |z_H(t)| dt,   |z_H| a power law t^{-p_j}
                  between checkpoints, p_j = -log(z_H(t_j) / z_H(t_{j-1})) / log(t_j / t_{j-1})           (2)
    R(t)        = eta |z_H(t)| t                                                                      (3)

L is the log-growth of the hard component in the linearization about the first-phase trajectory (thresholds.escape
eq. (1), with the decay inside each interval instead of a constant rate; from t_1 on: the growth before t_1 is
not counted).  R is the log-growth still to come per e-fold of time at t: an outlier that stays (a settled first
phase with z_H(inf) < 0) has R growing like t and escapes at every d; one that shrinks faster than 1 / t has
R -> 0 and a finite L(inf) = L(t_K) + eta |z_H(t_K)| t_K / (p_K - 1) (the tail of eq. (2) past t_K, p_K > 1):
the hard component grows by a bounded factor, and GD escapes only at d with log sqrt(d) below that growth (plus
the sample forcing), never as d -> inf.

A run's verdict (:func:`verdict`) reads the three together: the outlier stays (R grows), or it goes (gone at t_K,
or R fallen) with L(t_K) plus its tail below log sqrt(d) (bounded: GD's O(d^-1/2) hard start does not reach O(1)
along it after t_1), or it goes only after L has passed log sqrt(d) (escapes: at this d GD leaves along the hard
direction first, and the outlier's going, which at gelu's widths is the finite-d first phase moving down its
sample-localized bulk directions, says nothing about larger d; reports/planted/width section 12).

That is what separates the widths of quad / phase retrieval (eta 0.05, reports/planted/width section 11): where
the first phase interpolates (its train loss falls to 0 like a power law), every negative eigenvalue, the hard
outliers' included, vanishes with the residuals; where it settles at a positive loss, the hard outliers stay.
So delta_NN at d = inf and infinite horizon is not below the width's interpolation threshold, whatever
delta_NN(600) says.  ``O_MIN`` = 0.05: below it an eigenvector is the bulk's (a random direction's hard overlap^2
is m / (d m) = 1 / d).

Eq. (1) counts a hard-weighted eigenvector wherever it sits in the spectrum.  The d = inf indicator it is compared
with (thresholds.hessian eq. (4)) counts an outlier only left of the bulk's edge on a data set of n samples, so

    z_H^det(t)  = the lowest eigenvalue, when negative and its eigenvector has hard overlap^2 >= O_MIN       (1')

(``rule="detached"``) is eq. (1)'s finite-d counterpart of that indicator: an outlier below every bulk eigenvalue.
The two agree at m = 1 (gelu / phase retrieval, eta 0.1, d = 200-1600: the eigenvalue of eq. (1) is the lowest at
84 of 86 checkpoints with an outlier); from m = 2 on they part as d grows: it is the lowest at 28 / 43 / 18 / 2 of
34 / 55 / 31 / 11 such checkpoints at m = 2, d = 200 / 400 / 800 / 1600, at 48 / 10 / 1 / 0 of 55 / 27 / 11 / 10 at
m = 4 and 20 / 6 / 2 of 26 / 14 / 11 at m = 8 (d = 200 / 400 / 800); the others carry hard weight 0.05-0.23 inside
a negative bulk, with 1 to 36 eigenvalues below them (validation/reports/planted/width section 12g).  ``--rule``
chooses the rule of every table (the records keep the spectra); eq. (1), ``weighted``, is the default and the rule
of the tables of sections 11-12f.

The verdicts against GD (validation.release_check, reports/planted/width section 12g): released from the same
first phase, GD at d = 400 (gelu, eta 0.1) learns where the verdicts say bounded.  At t1 = 600 every released run
learns (eq. (1) agrees in 9 of 11, eq. (1') in 1): eq. (2) counts only intervals with an outlier at both ends, so
a strong outlier gone before the next checkpoint adds nothing, though it grows the hard component past sqrt(d) in
a few hundred steps.  At t1 = 10^4 GD learns from deltas far below the brackets (m = 1 / 2 / 4 / 8: [12, 16] / <= 12
/ [5, 7.5] / <= 5), also where the Hessian has no negative eigenvalue: the data set's own gradient along the hard
directions, zero in expectation but O(n^-1/2) at finite n, moves them, and the verdicts leave it out.  The brackets
are statements about the Hessian along the first phase, not GD's infinite-horizon threshold at that d.

    python -m validation.settled_hessian --m 16 --delta 2,4 --dims 200 --steps 600,3000,10000,30000 \\
        --out validation/reports/planted/width/settled_hessian_m16.jsonl
    python -m validation.settled_hessian --summary validation/reports/planted/width/settled_hessian_m*.jsonl

One record per GD run (all its checkpoints), appended as it ends, so an interrupted run resumes (a run with other
checkpoints is a new run; the tables keep runs with other checkpoints in separate rows).  ``--first-seed k --seeds 1``
runs the k-th run of a cell alone (the same seed as in a full ``--seeds`` list), so that the runs of one cell can go
on two cores at once, each into its own file.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from thresholds.alg import latent_split
from thresholds.catalog import get_link
from thresholds.dmft import period_two_orbit
from thresholds.errors import ThresholdsError
from thresholds.evaluation import loss_decay
from thresholds.numbers import mean_se
from thresholds.problem import Problem
from validation import records
from validation.simulate import GDSetup, hessian_spectrum, run_gd

O_MIN = 0.05         # eq. (1): the hard overlap^2 from which an eigenvector counts as a hard outlier's
LOWEST = 40          # eigenvalues kept per checkpoint
DENSE_MAX = 8000     # d m above which the dense spectrum is refused (memory and time of eigh)
SEED0 = 20_000       # GD run s has seed SEED0 + s
KEYS = ("activation", "link", "eta", "m", "delta", "d")


RULES = ("weighted", "detached")   # eqs. (1) and (1')


def hard_outlier(eigenvalues, overlaps, rule: str = "weighted") -> tuple[float, float]:
    """Eq. (1) (``rule="weighted"``): (z_H, its overlap^2), or (nan, nan) when no negative eigenvalue carries O_MIN
    of hard weight; eq. (1') (``"detached"``): the same of the lowest eigenvalue alone.  Eigenvalues ascending."""
    if rule == "detached":
        v, o = eigenvalues[0], overlaps[0]
        return (float(v), float(o)) if v < 0 and o >= O_MIN else (math.nan, math.nan)
    if rule != "weighted":
        raise ThresholdsError(f"unknown rule {rule!r}: one of {', '.join(RULES)}")
    for v, o in zip(eigenvalues, overlaps):
        if v >= 0:
            break
        if o >= O_MIN:
            return float(v), float(o)
    return math.nan, math.nan


def bulk_low(eigenvalues, overlaps) -> float:
    """lambda_B of eq. (1)."""
    return next((float(v) for v, o in zip(eigenvalues, overlaps) if o < O_MIN), math.nan)


def under_rule(rows: list, rule: str) -> list:
    """The records with z_H and overlap^2 of every checkpoint taken by ``rule`` (eq. (1) or (1')) from the spectrum
    the record keeps; the records themselves are left as they are."""
    if rule == "weighted":
        return rows
    out = []
    for r in rows:
        points = []
        for p in r["points"]:
            z, o = hard_outlier(p["eigenvalues"], p["overlaps"], rule)
            points.append({**p, "z_H": z, "overlap2": o})
        out.append({**r, "points": points})
    return out


def remaining_growth(point: dict, eta: float) -> float:
    """R of eq. (3) at one checkpoint of a record (nan without a hard outlier)."""
    return eta * abs(point["z_H"]) * point["step"]


def _groups(rows: list) -> dict:
    """(activation, link, eta, m, delta, d, checkpoints) -> (the runs not in a period-2 orbit, how many were), sorted
    by setup (runs with other checkpoints are another group: eq. (2) is taken on a group's common checkpoints)."""
    groups = {}
    for r in rows:
        key = tuple(r[k] for k in KEYS) + (tuple(p["step"] for p in r["points"]),)
        kept, orbiting = groups.setdefault(key, ([], [0]))
        if r["period_two"]:
            orbiting[0] += 1
        else:
            kept.append(r)
    return {key: (groups[key][0], groups[key][1][0])
            for key in sorted(groups, key=lambda k: (k[0], k[2], k[3], k[5], k[4], k[6]))}


def log_growth(steps, z, eta: float) -> tuple[np.ndarray, float]:
    """Eq. (2): L(t_k) at each checkpoint (0 at t_1) for z_H at the checkpoints (nan: no outlier, no growth on
    the intervals it ends or starts), and the tail past t_K, eta |z_H(t_K)| t_K / (p_K - 1) (inf when the last
    exponent p_K <= 1, nan without an outlier at t_{K-1} and t_K)."""
    t = np.asarray(steps, dtype=float)
    r = np.abs(np.asarray(z, dtype=float))
    L = np.zeros(t.size)
    p = math.nan
    for j in range(1, t.size):
        inc = 0.0
        if np.isfinite(r[j]) and np.isfinite(r[j - 1]) and r[j] > 0 and r[j - 1] > 0:
            p = -math.log(r[j] / r[j - 1]) / math.log(t[j] / t[j - 1])
            # int_{t0}^{t1} r0 (s / t0)^(-p) ds
            inc = (r[j - 1] * t[j - 1] * math.log(t[j] / t[j - 1]) if abs(p - 1) < 1e-12
                   else r[j - 1] * t[j - 1] / (1 - p) * ((t[j] / t[j - 1]) ** (1 - p) - 1))
        else:
            p = math.nan
        L[j] = L[j - 1] + eta * inc
    tail = math.nan if not np.isfinite(p) else (math.inf if p <= 1 else eta * r[-1] * t[-1] / (p - 1))
    return L, tail


def check_dense(d: int, m: int) -> None:
    """Refuse a dense d m x d m spectrum above DENSE_MAX."""
    if d * m > DENSE_MAX:
        raise ThresholdsError(f"d m = {d * m} is above {DENSE_MAX}: the dense spectrum would not fit the time and "
                              "memory of a check; use a smaller d")


def first_phase(activation: str, link: str, eta: float, m: int, delta: float, d: int, seed: int, steps: int,
                **release) -> GDSetup:
    """GD restricted to the complement for ``steps`` steps, run ``seed`` (seed SEED0 + seed; n_test = 200 and no
    test loss): the random stream, and so the data, the start and the first phase, that validation.release_check
    and validation.response_check share with :func:`run_one`; ``release`` adds GDSetup's release fields."""
    problem = Problem(activation, link, eta=eta, steps=steps, m=m)
    return GDSetup.from_problem(problem, delta, d, complement=True, seed=SEED0 + seed, n_test=200, test_loss=False,
                                **release)


def run_one(activation: str, link: str, eta: float, m: int, delta: float, d: int, steps, seed: int) -> dict:
    """One GD run restricted to the complement, with the spectrum at every checkpoint of ``steps``."""
    check_dense(d, m)
    t0 = time.time()
    steps = sorted(int(s) for s in steps)
    run = run_gd(first_phase(activation, link, eta, m, delta, d, seed, steps[-1]), snapshots=steps)
    X, y = run.data
    hard = latent_split(link).hard
    k = get_link(link).k
    points = []
    for s in steps:
        spec = hessian_spectrum(X, y, run.snapshots[s], activation, k=k, count=LOWEST, dense_below=math.inf,
                                axes=hard)
        vals, ovs = zip(*spec["lowest"])
        z, o = hard_outlier(vals, ovs)
        points.append({"step": s, "train_loss": float(run.train_loss[s]),
                       "loss_decay": loss_decay(run.train_loss[: s + 1]), "eigenvalues": list(vals),
                       "overlaps": list(ovs), "negative": spec["negative"], "top": spec["highest"][0][0],
                       "z_H": z, "overlap2": o, "lambda_B": bulk_low(vals, ovs)})
    return {**dict(zip(KEYS, (activation, link, eta, m, delta, d))), "seed": seed, "points": points,
            "period_two": bool(period_two_orbit(run.train_loss)), "seconds": time.time() - t0}


def run(activation, link, eta, widths, deltas, dims, steps, seeds: int, out: Path, log=print, first_seed: int = 0):
    """Every (m, delta, d) with the seeds ``first_seed`` .. ``first_seed + seeds - 1``, skipping the runs already in
    ``out`` with the same checkpoints (two jobs with disjoint seeds of one cell can run side by side, each into its
    own file)."""
    steps = sorted(int(s) for s in steps)
    done = {(tuple(r[k] for k in KEYS), r["seed"]) for r in records.read(out)
            if [p["step"] for p in r["points"]] == steps}
    for m in widths:
        for d in dims:
            for delta in deltas:
                key = (activation, link, eta, m, delta, d)
                for s in range(first_seed, first_seed + seeds):
                    if (key, s) not in done:
                        records.append(out, run_one(activation, link, eta, m, delta, d, steps, s))
                        log(f"m = {m}, delta {delta:g}, d = {d}: run {s}")


def verdict(record: dict) -> str:
    """What one run's hard outlier does after the first checkpoint: "stays" (at the last checkpoint, with R of eq.
    (3) grown since the first), "bounded" (gone at the last checkpoint, or R fallen, with the whole growth of eq. (2),
    tail included, below log sqrt(d): at this d GD's hard component does not reach O(1) along it after t_1),
    "escapes" (gone or R fallen, but only after a growth of at least log sqrt(d): at this d GD escapes before the
    outlier goes, and its going says nothing about larger d), or "?" (an outlier appearing late, R flat)."""
    first, last = record["points"][0], record["points"][-1]
    R = [remaining_growth(p, record["eta"]) for p in (first, last)]
    if math.isfinite(last["z_H"]) and math.isfinite(first["z_H"]) and R[1] > R[0]:
        return "stays"
    if math.isfinite(last["z_H"]) and not (math.isfinite(first["z_H"]) and R[1] < R[0]):
        return "?"
    L, tail = log_growth([p["step"] for p in record["points"]], [p["z_H"] for p in record["points"]],
                         record["eta"])
    total = L[-1] + (tail if not math.isnan(tail) else 0.0)
    return "bounded" if total < 0.5 * math.log(record["d"]) else "escapes"


def settled_bracket(rows: list) -> tuple:
    """The infinite-horizon threshold of one width at the records' d, bracketed (every d together): (low, high),
    high the smallest delta where every run's outlier stays or lets GD escape first (:func:`verdict`), low the
    largest delta below it where every run's growth is bounded below sqrt(d); None for an end without such a delta.
    Runs in a period-2 orbit are left out."""
    verdicts = {}
    for r in rows:
        if not r["period_two"]:
            verdicts.setdefault(r["delta"], []).append(verdict(r))
    learning = [dl for dl, v in verdicts.items() if set(v) <= {"stays", "escapes"}]
    high = min(learning) if learning else None
    bounded = [dl for dl, v in verdicts.items() if set(v) == {"bounded"} and (high is None or dl < high)]
    return (max(bounded) if bounded else None), high


def bracket_text(low, high) -> str:
    """A :func:`settled_bracket` as text: "[low, high]", "<= high" without a low end, "-" without a high end."""
    return "-" if high is None else f"<= {high:g}" if low is None else f"[{low:g}, {high:g}]"


def brackets(rows: list) -> list[str]:
    """Markdown, one line per (m, d, checkpoints): every delta's verdicts (stays / escapes / bounded, and "(k ?)"
    for k undecided runs, the runs of :func:`_groups`) and the :func:`settled_bracket` of that d alone."""
    cells = {}
    for (act, _, eta, m, delta, d, steps), (runs, _) in _groups(rows).items():
        if runs:
            by_delta, kept = cells.setdefault((act, eta, m, d, steps), ({}, []))
            by_delta[delta] = [verdict(r) for r in runs]
            kept += runs
    lines = ["| m | d | steps | delta: stays / escapes / bounded | bracket |", "|---|---|---|---|---|"]
    for (act, eta, m, d, steps), (by_delta, kept) in sorted(cells.items()):
        lines.append(f"| {m} | {d} | {steps[0]}-{steps[-1]} | "
                     + "; ".join(f"{dl:g}: " + " / ".join(str(v.count(k)) for k in ("stays", "escapes", "bounded"))
                                 + (f" ({v.count('?')} ?)" if "?" in v else "") for dl, v in sorted(by_delta.items()))
                     + f" | {bracket_text(*settled_bracket(kept))} |")
    return lines


def _pm(values, fmt) -> str:
    v = [x for x in values if np.isfinite(x)]
    if not v:
        return "none"
    mu, se = mean_se(v)
    out = f"{mu:{fmt}}" + (f" +- {se:{fmt.lstrip('+')}}" if len(v) > 1 else "")
    return out + (f" ({len(v)} of {len(values)})" if len(v) < len(values) else "")


def summary(rows: list) -> list[str]:
    """Markdown: per (m, delta, d), at each checkpoint the means +- s.e. over the runs of the train loss, z_H
    (overlap^2), lambda_B, L and R (eqs. (1)-(3)), and the tail of L past the last checkpoint."""
    lines = ["| setup | d | runs | step | train loss | z_H (overlap^2) | lambda_B | negative eigenvalues | L, eq. (2) | "
             "R, eq. (3) |", "|---|---|---|---|---|---|---|---|---|---|"]
    orbits = []
    for (act, link, eta, m, delta, d, steps), (runs, orbiting) in _groups(rows).items():
        if orbiting:
            orbits.append(f"{act} m = {m} delta {delta:g} d = {d}: {orbiting}")
        if not runs:
            continue
        growth = [log_growth(steps, [p["z_H"] for p in r["points"]], eta) for r in runs]
        for i, s in enumerate(steps):
            pts = [r["points"][i] for r in runs]
            lines.append(
                f"| {act}, m = {m}, delta {delta:g}, eta {eta:g} | {d} | {len(runs)} | {s} | "
                f"{_pm([p['train_loss'] for p in pts], '.3g')} | {_pm([p['z_H'] for p in pts], '.5f')} "
                f"({_pm([p['overlap2'] for p in pts], '.2f')}) | {_pm([p['lambda_B'] for p in pts], '.5f')} | "
                f"{_pm([p['negative'] for p in pts], '.0f')} | {_pm([g[0][i] for g in growth], '.2f')} | "
                f"{_pm([remaining_growth(p, eta) for p in pts], '.3g')} |")
        tails = [g[1] for g in growth]
        lines.append(f"| {act}, m = {m}, delta {delta:g}, eta {eta:g} | {d} | {len(runs)} | tail past {steps[-1]} | | | "
                     f"| | {'inf' if any(math.isinf(t) for t in tails) else _pm(tails, '.2f')} | |")
    if orbits:
        lines += ["", "GD runs in a period-2 orbit, left out: " + "; ".join(orbits)]
    return lines


def cached_loss_decays(activation: str, eta: float, head_bytes: int = 1 << 18) -> list[dict]:
    """thresholds.evaluation eq. (5) on every cached DMFT run of ``activation`` at ``eta`` (thresholds.cache): its
    setup's width, delta, paths and horizon with the train loss at T' and T and the exponent a.  Only the head of
    each file is read (the record keeps its setup and loss curves before the per-path arrays, which run to GBs)."""
    import json
    import re

    from thresholds import cache
    out = []
    for path in sorted(cache.cache_dir().glob("dmft-*.json")):
        with open(path, "rb") as fh:
            head = fh.read(head_bytes).decode(errors="ignore")
        setup = dict(re.findall(r'"(activation|delta|eta|steps|paths|m|label_cap)": ("[a-z_]+"|[0-9.e+-]+|null)',
                                head[:6000]))
        found = re.search(r'"train_loss": (\{"__ndarray__": \[[^\]]*\], "[A-Za-z0-9+/=]*"\]\})', head)
        if not found or setup.get("activation") != f'"{activation}"' or float(setup.get("eta", "nan")) != eta:
            continue
        L = cache.decode(json.loads(found.group(1)))
        a = loss_decay(L)
        if a is None:
            continue
        T = L.size - 1
        out.append({"m": int(setup.get("m", 1)), "delta": float(setup["delta"]), "steps": T,
                    "paths": int(setup.get("paths", 0)),
                    "settled_labels": setup.get("label_cap", "null") not in ("null", "0.0", "0"),
                    "loss_half": float(L[T // 2]), "loss": float(L[T]), "a": a})
    return sorted(out, key=lambda r: (r["m"], r["steps"], r["delta"], r["paths"]))


def plot(rows: list, path: Path) -> None:
    """PNG: train loss and |z_H| against the step, the means over the runs of each (m, delta, d)."""
    from thresholds.plots import settling_figure
    groups = {key: runs for key, (runs, _) in _groups(rows).items() if runs}
    panels = {}
    horizons = len({key[6][-1] for key in groups}) > 1   # records of several horizons: say each curve's
    for key, runs in groups.items():   # _groups' order: one activation and eta per file, then m, d, delta
        steps = list(key[6])
        loss = [float(np.mean([r["points"][i]["train_loss"] for r in runs])) for i in range(len(steps))]
        z = [float(np.mean(v)) if (v := [abs(r["points"][i]["z_H"]) for r in runs
                                        if np.isfinite(r["points"][i]["z_H"])]) else math.nan
             for i in range(len(steps))]
        label = f"delta {key[4]:g}, d = {key[5]}" + (f", to {steps[-1]}" if horizons else "")
        panels.setdefault(f"m = {key[3]}", []).append((label, steps, loss, z))
    act, link, eta = next(iter(groups))[:3]
    settling_figure(path, panels, title=f"{act}, {link}, eta {eta:g}: GD restricted to the complement")


def compact(rows: list) -> list[str]:
    """Markdown, one line per (m, delta, d): the first and last checkpoints of :func:`summary` side by side."""
    lines = ["| m | delta | d | steps | runs | train loss, first -> last checkpoint | a, evaluation eq. (5), at the first | "
             "z_H (overlap^2), first -> last | R, eq. (3), first -> last | L at the last, eq. (2) | tail of L past it | "
             "runs: stays / escapes / bounded |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (act, link, eta, m, delta, d, steps), (runs, _) in _groups(rows).items():
        if not runs:
            continue
        growth = [log_growth(steps, [p["z_H"] for p in r["points"]], eta) for r in runs]

        def ends(fmt, value):   # the first and the last checkpoints' means
            return " -> ".join(_pm([value(r["points"][i]) for r in runs], fmt) for i in (0, -1))
        tails = [g[1] for g in growth]
        decay = [r["points"][0].get("loss_decay") for r in runs]
        decay = _pm([v for v in decay if v is not None], ".2f") if any(v is not None for v in decay) else "-"
        lines.append(f"| {m} | {delta:g} | {d} | {steps[0]}-{steps[-1]} | {len(runs)} | {ends('.3g', lambda p: p['train_loss'])} | {decay} | "
                     f"{ends('.4f', lambda p: p['z_H'])} ({_pm([r['points'][-1]['overlap2'] for r in runs], '.2f')}) | "
                     f"{ends('.3g', lambda p: remaining_growth(p, eta))} | {_pm([g[0][-1] for g in growth], '.2f')} | "
                     f"{'inf' if any(math.isinf(t) for t in tails) else _pm(tails, '.2f')} | "
                     + " / ".join(str(sum(verdict(r) == v for r in runs)) for v in ("stays", "escapes", "bounded"))
                     + " |")
    return lines


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--m", default="16", help="widths, comma-separated")
    ap.add_argument("--delta", default="2,4", help="sample ratios, comma-separated")
    ap.add_argument("--dims", default="200", help="dimensions, comma-separated")
    ap.add_argument("--steps", default="600,3000,10000,30000", help="checkpoints, comma-separated")
    ap.add_argument("--seeds", type=int, default=2, help="GD runs per (m, delta, d)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the first run's index (seed SEED0 + index); --first-seed 1 --seeds 1 runs the second alone")
    ap.add_argument("--out", type=Path, help="JSONL records (resumed when it exists)")
    ap.add_argument("--summary", type=Path, nargs="+", help="print the table of these records files and stop")
    ap.add_argument("--plot", type=Path, help="also draw the train loss and |z_H| against the step (PNG)")
    ap.add_argument("--compact", action="store_true", help="one line per (m, delta, d): first and last checkpoints")
    ap.add_argument("--brackets", action="store_true",
                    help="one line per (m, d): every delta's verdicts and the bracket at that d alone")
    ap.add_argument("--rule", choices=RULES, default="weighted",
                    help="the hard outlier of the tables: eq. (1) (any negative eigenvalue with hard weight) or (1') "
                         "(the lowest eigenvalue only, left of the bulk)")
    ap.add_argument("--dmft-cache", action="store_true",
                    help="print eq. (5) of thresholds.evaluation for every cached DMFT run of -a at --eta and stop")
    args = ap.parse_args(argv)
    if args.dmft_cache:
        print("| m | steps | delta | paths | settled labels | train loss at T/2 | at T | a, evaluation eq. (5) |\n"
              "|---|---|---|---|---|---|---|---|")
        for r in cached_loss_decays(args.activation, args.eta):
            print(f"| {r['m']} | {r['steps']} | {r['delta']:.4g} | {r['paths']} | {'yes' if r['settled_labels'] else 'no'} "
                  f"| {r['loss_half']:.3g} | {r['loss']:.3g} | {r['a']:.2f} |")
        return
    if not (args.summary or args.out):
        ap.error("--out or --summary is required")
    if args.first_seed < 0 or args.seeds < 1:
        ap.error("--first-seed must be >= 0 and --seeds >= 1")
    if not args.summary:
        run(args.activation, args.link, args.eta, [int(v) for v in args.m.split(",")], _floats(args.delta),
            [int(v) for v in args.dims.split(",")], [int(v) for v in args.steps.split(",")], args.seeds, args.out,
            first_seed=args.first_seed)
    rows = under_rule([r for f in (args.summary or [args.out]) for r in records.read(f)], args.rule)
    print("\n".join(brackets(rows) if args.brackets else compact(rows) if args.compact else summary(rows)))
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()

"""The published figures at width m: GD and the forced finite-d prediction under other initialization scales and
step sizes (noiseless phase retrieval), side by side.

The question (issue: width): which width, initialization and step size, if any, make both the simulation and the
prediction land on the published figures, about 6.0 for gelu and 3.6 for quad.  validation.conventions answers it
for delta_NN at m = 1 (no convention lands there) and validation.forced_width for the width at the default
initialization and step (conventions/finite_d_width.md).  Here one setting changes rho0 or eta at width m and one
d, and both routes are run on it:

- GD: ``validation.threshold.scan``, 40 trials per delta on a grid, its logistic crossing and s.e.;
- the prediction: ``thresholds.forced.predict`` (forced DMFT trials, the sequential design of its eq. (2p), 40
  trials at the two deltas around the crossing), its crossing and paired s.e.

Both at one horizon in time, eta T = 60 (gelu) and 30 (quad), the horizon of the width table: halving eta doubles
the steps, so that a row compares the same gradient-flow time.  A setting *lands* for an activation when both
crossings lie within

    |crossing - figure| <= 0.5 + 2 s.e.                                                           (1)

of its figure (0.5: the "about" of the figures, as in finite_d_width.md; 2 s.e.: the crossing's own error), and
GD and the prediction agree when z = (forced - GD) / sqrt(se_forced^2 + se_GD^2) is within 2.  Nothing is tuned: a
setting is a row of :func:`settings`, run once, reported as computed.

Eq. (1) has a band of 0.5 and lets many settings land.  A sharper reading is the d at which GD's crossing c(d) of a
setting meets its figure F, on the straight line in log d through two measured d (:func:`meeting_d`):

    log2 d* = log2 d1 + u log2(d2 / d1),   u = (F - c1) / (c2 - c1),
    s.e.(log2 d*) = log2(d2 / d1) sqrt((u - 1)^2 s1^2 + u^2 s2^2) / |c2 - c1|                       (3)

(the delta method in the two crossings' s.e. s1, s2), on the pair of consecutive d whose crossings bracket F, or
else on the nearest pair (an extrapolation, said so in the report).  At the default setting every width's d* comes
from the crossings of finite_d_width.md, with quad's d* over gelu's per route (eq. (4), :func:`default_meetings`).
GD's grid is widened at its ends (eq. (2), :func:`widen`) and refined inside the gap that brackets 1/2 where the
logistic fit collapses (eq. (2b), :func:`refine`).

    python -m validation.conventions_width [--only gelu] [--m 8] [--setting "rho0 = 2"] [--d 400] [--route gd] [--workers 2]   # what is missing, then the report
    python -m validation.conventions_width --report-only --plot validation/reports/conventions/settings_width.png

Records: one JSON line per (activation, m, setting, d, route) in conventions/settings_width.jsonl (appended as each
ends, so an interrupted run resumes; GD's and the forced trials are cached on disk one by one as well); the table
in conventions/settings_width.md.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass
from pathlib import Path

from thresholds.crossing import collapsed_gap
from thresholds.errors import DivergenceError
from thresholds.problem import Problem
from validation import records
from validation.forced_width import GD as GD_REPORTS
from validation.forced_width import RECORD_DIRS, REFERENCE, combined_z, setup_crossings
from validation.threshold import horizon

OUT = Path(__file__).resolve().parent / "reports" / "conventions"
RECORDS = OUT / "settings_width.jsonl"
REPORT = OUT / "settings_width.md"
FIGURE = REFERENCE
BASE = {"gelu": (0.1, 60.0), "quad": (0.05, 30.0)}   # eta, horizon eta T
# the first GD grid of each activation; widened by eq. (2) where the rates do not bracket 1/2 well
GRID = {"gelu": [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0], "quad": [2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0]}
TRIALS = 40
LAND = 0.5
RESOLVED = 0.25   # the largest s.e. of a crossing, relative to its value, that the table reads (:func:`resolved`)


@dataclass(frozen=True)
class Setting:
    """One row: an activation at width m with rho0 and the step size scaled from the base."""

    activation: str
    m: int
    label: str
    rho0: float = 1.0
    eta_factor: float = 1.0
    dims: tuple = (200, 400)

    def problem(self, d: int) -> Problem:
        eta0, time_ = BASE[self.activation]
        eta = eta0 * self.eta_factor
        return Problem(self.activation, "phase_retrieval", eta=eta, steps=horizon(d, eta, time_, 0.0), m=self.m,
                       rho0=self.rho0)

    def key(self, d: int, route: str) -> tuple:
        return (self.activation, self.m, self.label, d, route)


def settings() -> list[Setting]:
    """The rows in the order they run: m = 2 before m = 4 (the cheaper), the default first, both activations of a
    variant one after the other (so that an interrupted run leaves whole settings)."""
    variants = [("default", {}), ("rho0 = 0.5", {"rho0": 0.5}), ("rho0 = 2", {"rho0": 2.0}),
                ("eta / 2", {"eta_factor": 0.5}), ("eta x 2", {"eta_factor": 2.0}),
                ("rho0 = 2, eta / 4", {"rho0": 2.0, "eta_factor": 0.25}), ("rho0 = 0.25", {"rho0": 0.25})]
    return [Setting(act, m, label, dims=_dims(m, label), **change)
            for m in (2, 4, 8) for label, change in variants
            for act in ("gelu", "quad")
            if not (act == "quad" and label == "eta x 2")   # quad at twice its step diverges (conventions/README.md)
            and not (act == "gelu" and label == "rho0 = 2, eta / 4")   # quad's rho0 = 2 at a step it survives
            and not (m >= 4 and (label.startswith("eta") or label == "rho0 = 0.25"))   # m >= 4: rho0 0.5-2, one step
            and not (m == 8 and label == "rho0 = 2, eta / 4")]   # m = 4 ran quad's rho0 = 2 at eta 0.05: no divergence


# the dimensions per width: m = 4 at d = 400 alone (its GD and forced crossings at d = 200 and 800 are in
# finite_d_width.md, and its trials cost about four times those of m = 2); m = 2 at rho0 = 0.5 also at d = 800, a
# third d for the log-d line through which GD meets the figures (width section 13); m = 8 at d = 200 and 400 (a GD
# scan of gelu at m = 8, d = 200 takes 11 minutes on the two cores, one at d = 800 would take about 16 times that),
# its default at d = 200 alone (GD's default crossings at d = 200 and 800 are in finite_d_width.md, and eq. (4)
# reads its d* from them), its rho0 = 0.5 also at d = 800 (SETTING_DIMS)
DIMS = {2: (200, 400), 4: (400,), 8: (200, 400)}
# the settings whose d differ from their width's (m = 8, rho0 = 0.5: both d* extrapolated past 400 and 1.5
# apart there, so d = 800 reads them inside)
SETTING_DIMS = {(2, "rho0 = 0.5"): (200, 400, 800), (8, "default"): (200,), (8, "rho0 = 0.5"): (200, 400, 800)}
# GD's grid at m = 8, d = 400: the deltas about the default crossings interpolated from d = 200 and 800 (gelu 5.1 /
# 6.5, quad 3.0 / 3.4), widened by eq. (2) where a setting's rates do not bracket 1/2; the full grid costs twice that
NARROW = {("gelu", 8, 400): [4.0, 5.0, 6.0, 7.0, 8.0], ("quad", 8, 400): [2.5, 3.0, 3.5, 4.0],
          # m = 8, rho0 = 0.5 at d = 800: about its crossings at d = 200 and 400 carried one doubling on (gelu 4.80 /
          # 5.42, quad 2.90 / 3.18), at the spacing of its steep curves (40 trials go from 1/40 to 40/40 within 1)
          ("gelu", 8, 800): [5.5, 6.0, 6.5], ("quad", 8, 800): [3.2, 3.45, 3.7]}
ROUTES = ("gd", "forced")


def _dims(m: int, label: str) -> tuple:
    """A setting's d: its width's DIMS, or the exception in SETTING_DIMS."""
    return SETTING_DIMS.get((m, label), DIMS[m])


def grid(activation: str, m: int, d: int) -> list:
    """GD's first grid of one setting at d (NARROW where set, else GRID)."""
    return list(NARROW.get((activation, m, d), GRID[activation]))


def widen(deltas: list, rates: list) -> list:
    """The GD grid for a further scan when its rates do not bracket 1/2 with room on both sides:

        a rate above 1/4 at the least delta   -> add 0.8 and 0.65 of it below;
        a rate below 3/4 at the largest delta -> add 1.25 and 1.5 of it above.                         (2)

    [] when the grid already does (or has been widened to the range [0.5, 64])."""
    add = []
    if rates[0] > 0.25 and deltas[0] > 0.5:
        add += [round(deltas[0] * f, 3) for f in (0.65, 0.8)]
    if rates[-1] < 0.75 and deltas[-1] < 64:
        add += [round(deltas[-1] * f, 3) for f in (1.25, 1.5)]
    return add


def refine(deltas: list, successes: list, trials: int) -> list:
    """The GD grid for a further scan when the logistic fit collapses (thresholds.crossing.collapsed_gap: one rate
    between 0 and 1, a curve steeper than the grid), three deltas inside the gap (lo, hi) that brackets 1/2:

        lo + (hi - lo) x 1/4, 1/2, 3/4                                                                 (2b)

    [] when the fit resolves the crossing.  m = 8 is that steep: quad at rho0 = 2, d = 400 went 0 / 0 / 31 / 40 of 40
    at delta 2.5-4, a collapsed fit at the gap's midpoint 3.25 +- 0.14; refined, 3.39 +- 0.02.  (quad's default at
    d = 200, 0 / 1 / 18 / 40 at delta 2-3.5, was refined too, from 3.25 +- 0.14 to 3.04 +- 0.02: its two rates
    inside (0, 1) were called a collapse by the width-only rule before thresholds.crossing eq. (6), which now fits
    them, 3.01 +- 0.03; validate's finer grid read 2.99 +- 0.02.)"""
    gap = collapsed_gap(deltas, successes, [trials] * len(deltas))
    if gap is None:
        return []
    lo, hi = gap
    return [round(lo + (hi - lo) * f, 3) for f in (0.25, 0.5, 0.75)]


def run_gd(setting: Setting, d: int, *, workers, log=print) -> dict:
    """GD's crossing of one setting at d (module docstring), widening the grid by eq. (2), or refining it by eq.
    (2b), up to three times."""
    from validation.threshold import scan
    problem = setting.problem(d)
    time_ = BASE[setting.activation][1]
    deltas = grid(setting.activation, setting.m, d)
    t0 = time.time()
    for attempt in range(4):
        out = scan(problem.activation, problem.link, [d], deltas, TRIALS, eta=problem.eta, t0=time_, c=0.0,
                   workers=workers, rho0=problem.rho0, m=problem.m)
        if out.interrupted:
            raise KeyboardInterrupt
        rates = [out.successes[(d, x)] / out.trials[(d, x)] for x in deltas]
        more = widen(deltas, rates) or refine(deltas, [out.successes[(d, x)] for x in deltas], TRIALS)
        if not more or attempt == 3:
            break
        log(f"  GD {setting.activation} m = {setting.m} {setting.label} d = {d}: rates "
            + " ".join(f"{r:.2f}" for r in rates) + f"; adding deltas {more}")
        deltas = sorted(set(deltas) | set(more))
    c, se = out.crossings.get(d, (None, None))
    return {"crossing": c, "se": se, "steps": problem.steps, "deltas": deltas,
            "successes": [out.successes[(d, x)] for x in deltas], "trials": TRIALS,
            "seconds": round(time.time() - t0, 1)}


def run_forced(setting: Setting, d: int, start: float, *, workers, log=print) -> dict:
    """The forced prediction's crossing of one setting at d, its grid anchored at ``start``."""
    from thresholds.forced import predict
    from validation.sweep import task_map
    problem = setting.problem(d)
    with task_map(workers) as map_trials:
        pred = predict(problem, [d], trials=TRIALS, start=start, map_trials=map_trials,
                       log=lambda text: log(f"  forced {setting.activation} m = {setting.m} {setting.label}: {text}"))
    (c,) = pred.crossings
    return {"crossing": c.value if c.found else None, "se": (c.high - c.value) if c.found else None,
            "note": "" if c.found else c.note, "steps": problem.steps, "start": start,
            "points": [[p.delta, p.successes, p.trials] for p in pred.points], "seconds": round(pred.seconds, 1)}


def done_rows(path: Path = RECORDS) -> dict:
    return {(r["activation"], r["m"], r["setting"], r["d"], r["route"]): r for r in records.read(path)}


def run(only=None, workers=2, dims=None, log=print, path: Path = RECORDS, widths=None, routes=ROUTES,
        labels=None) -> None:
    """Every (setting, d) not in the records: GD first, then the forced prediction anchored at GD's crossing (the
    anchor only places the prediction's grid; its sequential design walks to its own crossing).  A setting whose GD
    diverges at some trial is recorded so, and its prediction is not run.  ``widths`` keeps the settings of those m,
    ``labels`` those of these labels, ``dims`` those of each setting's own d that it lists;
    ``routes`` = ("gd",) runs GD alone (every GD row first, the dearer predictions after, in a second call)."""
    for s in settings():
        if (only and s.activation != only) or (widths and s.m not in widths) or (labels and s.label not in labels):
            continue
        for d in [d for d in s.dims if not dims or d in dims]:
            done = done_rows(path)
            base = {"activation": s.activation, "m": s.m, "setting": s.label, "d": d, "rho0": s.rho0,
                    "eta": s.problem(d).eta}
            if "gd" in routes and s.key(d, "gd") not in done:
                log(f"GD {s.activation} m = {s.m} {s.label} d = {d}")
                try:
                    row = run_gd(s, d, workers=workers, log=log)
                except DivergenceError as exc:   # a finding of the setting: recorded, its prediction not run
                    row = {"crossing": None, "se": None, "note": f"diverges: {exc}", "steps": s.problem(d).steps}
                records.append(path, dict(base, route="gd", **row))
                done = done_rows(path)
            gd = done.get(s.key(d, "gd"))
            if gd is None or gd.get("note", "").startswith("diverges"):
                continue
            if "forced" in routes and s.key(d, "forced") not in done:
                start = float(f"{gd['crossing']:.2g}") if gd["crossing"] else GRID[s.activation][3]
                log(f"forced {s.activation} m = {s.m} {s.label} d = {d} from {start:g}")
                records.append(path, dict(base, route="forced", **run_forced(s, d, start, workers=workers, log=log)))


def cell(row) -> str:
    if row is None:
        return "(not run)"
    if row["crossing"] is None:
        note = row.get("note", "")
        return "diverges" if note.startswith("diverges") else "none" + (f" ({note})" if note else "")
    return f"{row['crossing']:.2f} +- {row['se']:.2f}" + ("" if resolved(row) else " (unresolved)")


def resolved(row) -> bool:
    """A crossing with an s.e. below RESOLVED of its value; one above it is shown but neither lands nor enters z.  The
    paired s.e. of a forced prediction blew up where the rate curve is shallow and the search's points hold 10 trials
    (gelu m = 2, rho0 = 0.5, d = 800: 7.53 +- 26.84 by the resamples' standard deviation; 0.35 by
    thresholds.crossing eq. (5)); the guard stays for a crossing whose rates leave it that loose."""
    return row is not None and row["crossing"] is not None and row["se"] <= RESOLVED * row["crossing"]


def lands(row, figure: float) -> bool:
    """Eq. (1), for a resolved crossing."""
    return resolved(row) and abs(row["crossing"] - figure) <= LAND + 2 * row["se"]


def z_value(gd, forced):
    """(forced - GD) / combined s.e.; None unless both crossings are resolved."""
    if not (resolved(gd) and resolved(forced)):
        return None
    return combined_z((forced["crossing"], forced["se"]), (gd["crossing"], gd["se"]))


def z_text(gd, forced) -> str:
    z = z_value(gd, forced)
    return "-" if z is None else f"{z:+.1f}"


def off(row, activation: str) -> str:
    """The crossing's distance from the activation's figure."""
    if row is None or row["crossing"] is None:
        return "-"
    return f"{row['crossing'] - FIGURE[activation]:+.2f}"


def table_lines(done: dict) -> tuple[list[str], dict]:
    """The table's rows, and per (m, label, d) and activation whether (GD, forced) land (eq. (1))."""
    lines, both = [], {}
    for s in settings():
        for d in s.dims:
            gd, fo = done.get(s.key(d, "gd")), done.get(s.key(d, "forced"))
            if gd is None and fo is None:
                continue
            p = s.problem(d)
            hit = (lands(gd, FIGURE[s.activation]), lands(fo, FIGURE[s.activation]))
            both.setdefault((s.m, s.label, d), {})[s.activation] = hit
            lines.append(f"| {s.activation} | {s.m} | {s.label} | {p.eta:g}, {p.steps} | {d} | {cell(gd)} | "
                         f"{cell(fo)} | {z_text(gd, fo)} | {off(gd, s.activation)} / {off(fo, s.activation)} | "
                         f"{'yes' if hit[0] else 'no'} / {'yes' if hit[1] else 'no'} |")
    return lines, both


def step_shifts(done: dict) -> list[float]:
    """|GD's crossing at a scaled step - at the base step| over the settings that differ from another only in
    eta_factor (the same activation, m, rho0 and d)."""
    base = {(s.activation, s.m, s.rho0, d): done.get(s.key(d, "gd")) for s in settings() for d in s.dims
            if s.eta_factor == 1}
    shifts = []
    for s in settings():
        for d in s.dims:
            row, ref = done.get(s.key(d, "gd")), base.get((s.activation, s.m, s.rho0, d))
            if s.eta_factor != 1 and row and ref and row["crossing"] is not None and ref["crossing"] is not None:
                shifts.append(abs(row["crossing"] - ref["crossing"]))
    return shifts


def summary_lines(done: dict, both: dict) -> list[str]:
    """The paragraphs under the table: GD against the prediction, the settings that land, the step's effect."""
    lines = []
    zs = [z for s in settings() for d in s.dims
          if (z := z_value(done.get(s.key(d, "gd")), done.get(s.key(d, "forced")))) is not None]
    if zs:
        lines += ["", (f"GD against the prediction: {len(zs)} rows, {sum(abs(z) <= 2 for z in zs)} with |z| <= 2, "
                       f"{sum(z > 0 for z in zs)} with z > 0, mean z {sum(zs) / len(zs):+.2f}.  The rows share random "
                       "numbers (GD's data sets and initializations, the trials' initial overlaps are those of the same "
                       "seeds in every setting), so they are not independent tests and no joint p-value is given.")]
    full = [k for k, v in both.items() if len(v) == 2]
    hits = [k for k in full if all(all(h) for h in both[k].values())]
    lines += ["", f"Settings with both activations run: {len(full)}; where GD and the prediction both land for both "
              "activations: " + ("; ".join(f"m = {m}, {label}, d = {d}" for m, label, d in hits) if hits else
                                  "none") + "."]
    steps = {}   # (m, rho0, d) -> activation -> the steps (eta) at which both routes land
    for s in settings():
        for d in s.dims:
            if all(both.get((s.m, s.label, d), {}).get(s.activation, (False, False))):
                steps.setdefault((s.m, s.rho0, d), {}).setdefault(s.activation, []).append(f"{s.problem(d).eta:g}")
    any_step = [(k, v) for k, v in steps.items() if len(v) == len(FIGURE)]
    moved = step_shifts(done)
    lines += ["", "The step size at a fixed eta T moves GD's crossing by at most "
              + (f"{max(moved):.2f} (each scaled step against the base step at the same m, rho0 and d)" if moved
                 else "- (not run)")
              + "; so, by (m, rho0, d) at any step size, the settings where both routes land for both activations, "
              "with the step sizes that do in parentheses: "
              + ("; ".join(f"m = {m}, rho0 = {r:g}, d = {d} (" + ", ".join(f"{a} eta {'/'.join(e)}" for a, e in v.items())
                           + ")" for (m, r, d), v in any_step) if any_step else "none") + "."]
    return lines


@dataclass(frozen=True)
class MeetingD:
    """Eq. (3): the d at which a crossing that moves with d meets a figure, with the factor range of one s.e. in
    log2 d; ``extrapolated`` when no two consecutive measured d bracket the figure."""

    d: float
    low: float
    high: float
    extrapolated: bool


def meeting_d(points, figure: float):
    """Eq. (3) on ``points`` = [(d, crossing, s.e.), ...] (at least two d); None when fewer, or when the pair used has
    equal crossings."""
    pts = sorted(points)
    if len(pts) < 2:
        return None
    pairs = list(itertools.pairwise(pts))
    inside = [(a, b) for a, b in pairs if min(a[1], b[1]) <= figure <= max(a[1], b[1])]
    if inside:
        (d1, c1, s1), (d2, c2, s2) = inside[0]
    else:   # extrapolate from the end nearer the figure
        above = all(c > figure for _, c, _ in pts)
        rising = pts[-1][1] > pts[0][1]
        (d1, c1, s1), (d2, c2, s2) = pairs[0] if above == rising else pairs[-1]
    if c2 == c1:
        return None
    span = math.log2(d2 / d1)
    u = (figure - c1) / (c2 - c1)
    log_d = math.log2(d1) + u * span
    err = span * math.sqrt((u - 1) ** 2 * s1**2 + u**2 * s2**2) / abs(c2 - c1)
    return MeetingD(2**log_d, 2 ** (log_d - err), 2 ** (log_d + err), not inside)


def meeting_cell(meet: MeetingD, pts, notes=()) -> str:
    """A table cell of eq. (3): d* [one-s.e. range], with ``notes`` and, for an extrapolation, the measured d."""
    notes = list(notes) + ([f"extrapolated from d = {min(p[0] for p in pts)}-{max(p[0] for p in pts)}"]
                           if meet.extrapolated else [])
    return f"{meet.d:.3g} [{meet.low:.3g}, {meet.high:.3g}]" + (f" ({'; '.join(notes)})" if notes else "")


def meeting_lines(done: dict) -> list[str]:
    """Eq. (3) per (m, rho0) and activation, for GD at two d or more: a table.  The base step where its GD has two
    resolved d, else the scaled step nearest it that has (quad at rho0 = 2, m = 2 diverges at its base step; the
    step at fixed eta T moves GD by at most 0.1, :func:`step_shifts`)."""
    rows = {}
    for s in sorted(settings(), key=lambda s: abs(math.log(s.eta_factor))):
        pts = [(d, r["crossing"], r["se"]) for d in s.dims if resolved(r := done.get(s.key(d, "gd")))]
        by_act = rows.setdefault((s.m, s.rho0), {})
        if len(pts) >= 2 and s.activation not in by_act:
            by_act[s.activation] = (meeting_d(pts, FIGURE[s.activation]), pts, s.problem(pts[0][0]).eta)
    out = []
    for (m, rho0), by_act in sorted(rows.items()):
        if not any(v[0] for v in by_act.values()):
            continue
        cells = []
        for act in FIGURE:
            meet, pts, eta = by_act.get(act, (None, [], None))
            if meet is None:
                cells.append("-")
                continue
            cells.append(meeting_cell(meet, pts, [f"eta {eta:g}"] if eta != BASE[act][0] else []))
        out.append(f"| {m} | {rho0:g} | " + " | ".join(cells) + " |")
    if not out:
        return []
    return ["", ("The d at which GD's crossing meets each figure (eq. (3): the straight line in log d through the two "
                 "measured d that bracket the figure, or the nearest two; one s.e. in log2 d as a range), at the base "
                 "step unless noted:"),
            "", "| m | rho0 | " + " | ".join(f"{a} d* (figure {FIGURE[a]:g})" for a in FIGURE) + " |",
            "|---|---|" + "---|" * len(FIGURE)] + out


def default_meetings(widths=(1, 2, 4, 8, 16), dirs=RECORD_DIRS) -> list[str]:
    """Eq. (3) at the default setting (rho0 = 1, the base step, 600 steps) for every width, from the crossings of
    conventions/finite_d_width.md (validation.forced_width: GD's ``thresholds validate`` reports and the forced trials'
    records in ``dirs``), GD's d* and the prediction's per activation, and per route quad's d* over gelu's with one
    s.e. of each carried into log2 of the ratio (the two are independent: different activations, different runs):

        log2 (d*_quad / d*_gelu) +- sqrt(e_quad^2 + e_gelu^2),   e = s.e. of log2 d* by eq. (3)          (4)

    A ratio of 1 inside that range is a d at which that route meets both figures.  [] for no widths."""
    if not widths:
        return []
    lines = []
    for m in widths:
        cells, meets = [], {}
        for act in FIGURE:
            eta = BASE[act][0]
            if (act, eta, m) not in GD_REPORTS:
                cells += ["-", "-"]
                continue
            forced, gd = setup_crossings(act, eta, m, dirs)
            for route, crossings in (("gd", gd), ("forced", forced)):
                pts = sorted((d, c, se) for d, (c, se) in crossings.items())
                meet = meeting_d(pts, FIGURE[act])
                if meet is None:
                    cells.append("-")
                    continue
                meets[(act, route)] = meet
                cells.append(meeting_cell(meet, pts))
        for route in ("gd", "forced"):
            q, g = meets.get(("quad", route)), meets.get(("gelu", route))
            if q and g:
                err = math.hypot(math.log2(q.high / q.d), math.log2(g.high / g.d))
                r = q.d / g.d
                cells.append(f"{r:.2g} [{r * 2 ** -err:.2g}, {r * 2 ** err:.2g}]"
                             + (" (an extrapolated d*)" if q.extrapolated or g.extrapolated else ""))
            else:
                cells.append("-")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return ["", ("At the default setting (rho0 = 1, the base step, 600 steps) every width, from the crossings of "
                 "`finite_d_width.md` (GD's `thresholds validate` reports, the forced trials of validation.forced_width):"
                 " the d at which each route's crossing meets each figure (eq. (3)), and quad's d* over gelu's "
                 "for each route with one s.e. of each (eq. (4) of `default_meetings`); a ratio range that holds 1 "
                 "would be a d at which that route meets both figures, if neither d* is an extrapolation (a line in "
                 "log d carried past the measured d is not a measurement there):"),
            "", ("| m | gelu GD d* | gelu forced d* | quad GD d* | quad forced d* | quad / gelu (GD) | quad / gelu "
                 "(forced) |"),
            "|---|---|---|---|---|---|---|"] + lines


def report(path: Path = RECORDS, out: Path = REPORT, widths=(1, 2, 4, 8, 16)) -> str:
    """The markdown table of every row run, with :func:`summary_lines`, :func:`meeting_lines` and
    :func:`default_meetings` (of ``widths``; about 35 s of the forced trials' resampled crossings) under it; written
    to ``out``."""
    done = done_rows(path)
    rows, both = table_lines(done)
    lines = ([("# GD and the forced prediction at width m under other initializations and step sizes "
              "(phase retrieval)"), "",
             ("Generated by `python -m validation.conventions_width` (module docstring: the settings, eq. (1) for "
             "*lands*).  a = 1, b = 0, no weight decay, square loss, mean-field step; horizon eta T = 60 (gelu) and "
             "30 (quad) in time, so eta / 2 runs twice the steps; GD 40 trials per delta, its logistic crossing; "
             "forced: thresholds.forced.predict (40 trials at the two deltas around its crossing, paired s.e.), its "
             "grid anchored at GD's crossing.  z = (forced - GD) / combined s.e.  Published figures: gelu about "
             f"{FIGURE['gelu']:g}, quad about {FIGURE['quad']:g}."), "",
             "| activation | m | setting | eta, steps | d | GD | forced | z | GD / forced - figure | lands (GD / forced) |",
             "|---|---|---|---|---|---|---|---|---|---|"] + rows + summary_lines(done, both) + meeting_lines(done)
             + default_meetings(widths))
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    return text


def plot(path, records_path: Path = RECORDS) -> None:
    """The table as a PNG: per activation, GD and the prediction at every (m, setting, d) run, beside the figure's
    band of eq. (1) without its s.e. term."""
    from thresholds.plots import settings_figure
    done = done_rows(records_path)
    def value(row):
        return (row["crossing"], row["se"]) if resolved(row) else None
    panels = []
    for act in FIGURE:
        rows = [(f"m {s.m}, {s.label}, d {d}", value(done.get(s.key(d, "gd"))), value(done.get(s.key(d, "forced"))))
                for s in settings() if s.activation == act for d in s.dims
                if s.key(d, "gd") in done or s.key(d, "forced") in done]
        if rows:
            panels.append((act, FIGURE[act], LAND, rows))
    if panels:
        settings_figure(path, panels, title="phase retrieval: GD and the forced prediction by setting "
                                             "(validation.conventions_width)")


def _integers(text: str) -> tuple:
    """A comma list of integers, or the argparse error that names it."""
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma list of integers: {text!r}") from None


def _widths(text: str) -> tuple:
    """--m: a comma list of the widths that have settings."""
    have = sorted({s.m for s in settings()})
    widths = _integers(text)
    if not set(widths) <= set(have):
        raise argparse.ArgumentTypeError(f"widths with settings: {', '.join(map(str, have))}; got {text!r}")
    return widths


def _labels(text: str) -> tuple:
    """--setting: a comma list of setting labels ("default", "rho0 = 2", ...)."""
    have = sorted({s.label for s in settings()})
    labels = tuple(v.strip() for v in text.split(","))
    if not set(labels) <= set(have):
        raise argparse.ArgumentTypeError(f"settings: {'; '.join(have)}; got {text!r}")
    return labels


def _dims_arg(text: str) -> tuple:
    """--d: a comma list of positive integers."""
    dims = _integers(text)
    if min(dims) <= 0:
        raise argparse.ArgumentTypeError(f"dimensions must be positive: {text!r}")
    return dims


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(BASE), help="one activation")
    ap.add_argument("--workers", type=int, default=2, help="Dask worker processes (0: this process)")
    ap.add_argument("--m", type=_widths, metavar="M[,M...]", help="only the settings of these widths")
    ap.add_argument("--setting", type=_labels, metavar="LABEL[,LABEL...]",
                    help='only these settings, e.g. "rho0 = 2" (comma list)')
    ap.add_argument("--d", type=_dims_arg, metavar="D[,D...]", help="only these d of each setting's own")
    ap.add_argument("--route", choices=ROUTES, help="run this route alone (GD's rows first, the predictions after)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--plot", metavar="PNG", help="also draw the table as a PNG")
    args = ap.parse_args(argv)
    if not args.report_only:
        run(args.only, workers=args.workers, log=lambda text: print(text, flush=True), widths=args.m,
            routes=(args.route,) if args.route else ROUTES, labels=args.setting, dims=args.d)
    print(report(), end="")
    if args.plot:
        plot(args.plot)


if __name__ == "__main__":
    main()

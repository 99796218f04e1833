"""Escape from GD's first phase at finite d, simulated: release the hard directions at t1 and watch them.

validation.settled_hessian infers from the Hessian along the first phase whether GD would escape from it: a hard
outlier (its eq. (1), or (1') left of the bulk) and the growth of eq. (2) after the first checkpoint t1 give a
verdict, "stays" or "escapes" (GD's hard component reaches O(1)) or "bounded".  This check runs what the verdict
predicts, on the verdict's own run: the same seed (the same data, the same start, and so the same first phase
step for step) restricted to the complement until t1, then every theta_j gets a hard component of a random
start's size, rho0 / sqrt(d) per hard direction, and GD goes on unrestricted to T, the run's last checkpoint
(validation.simulate ``release``).  Per run

    q(t) = ||P_H Theta(t)||^2 / ||Theta(t)||^2   (the hard fraction)                                  (1)
    learned = q(T) > 1/2 (thresholds.forced's success), t_1/2 = the first step with q > 1/2            (2)
    t_L = the first step from t1 on with q > L, for L in LEVELS (the record's "t_levels"; t_{0.5} = t_1/2)  (2'')
    learned by S = t_1/2 <= S, for S <= T (runs of different T compared at one horizon)              (2')
                 and for S > T where t_1/2 <= T (a run not learned by its T says nothing of S > T)

at log-spaced steps.  ``--summary`` sets each released run beside the verdicts of its settled_hessian record under
both rules, taken on the record's checkpoints from t1 to T (a release at t1 = 3000 is set beside the verdict of the
checkpoints 3000 / 10^4 / 3 x 10^4), and counts, per rule, the runs where "stays" / "escapes" (learning) meets
learned and "bounded" meets not learned; "?" verdicts are counted apart.  ``--fractions`` counts, per width and d,
the runs learned at each delta and fits the logistic success curve (thresholds.crossing.logistic_crossing, binomial
maximum likelihood)

    P(learned | delta) = 1 / (1 + exp(-(delta - delta_c) / w)),   delta_c +- its s.e.                  (3)

the released crossing delta_c; ``--horizon S`` reads every run at step S by eq. (2') (in the records every run with
a t_1/2 <= T ends with q(T) > 1/2, so at S = T (2') is (2)).  A run is one setup, seed, t1 and start; the records
may hold it at several T (a rerun to a longer T is the same trajectory, step for step, extended), and a cell is read
from each run's longest record, by default at its common horizon

    S_cell = the least T of the runs not learned by their T (the largest T where every run learned),      (4)

the longest horizon at which eq. (2') decides every run of the cell: runs not learned at T = 2 x 10^4 rerun to
3 x 10^4 move the whole cell to 3 x 10^4 (the learned ones read there by eq. (2')).  Where every run of a cell has
one T, S_cell = T and the reading is eq. (2).  With ``--horizon S`` above a run's undecided T, that run is left out
and counted, and the cell gets no bracket nor crossing (the runs left out are all unlearned ones).

Measured (gelu / phase retrieval, eta 0.1, validation/reports/planted/width section 12g): at t1 = 600 all 11 released
runs learn within 500-1200 steps (d = 400-800), the verdicts' "bounded" included; at t1 = 10^4 and d = 400 GD
learns from delta 16 / 12 / 7.5 / 5 at m = 1 / 2 / 4 / 8 (not at 12 / 16 in one of two runs / 5 / -), far below
the d = inf thresholds (d = 800: from 20 / 12 / 7.5 / 7.5), and also with the hard directions released at zero
(``--start-scale 0``): the data set's own gradient along them moves them.  With two to five runs per delta (section
12i) the bracket where half the runs learn rises by about one grid step from d = 400 to 800 at every width, moves by
less than the runs resolve from 800 to 1600, and at d = 1600 is at 0.13-0.75 of the d = inf values: [12, 16] /
[8, 12] / [5, 7.5] / [5, 7.5] at m = 1 / 2 / 4 / 8.  With 6-8 runs per delta at d = 400 and 800 (section 12j) the
crossings of eq. (3) are 13.8 +- 1.4 / 15.0 +- 0.8 at m = 1, 10.2 +- 1.6 / 14.0 +- 1.2 at m = 2 (d = 400 read at
2 x 10^4 steps) and 5.6 +- 0.7 / 6.2 +- 0.7 at m = 4.  Read by eq. (4) after the unlearned runs at d = 800 were
rerun to 3 x 10^4 (section 12p): 13.8 +- 1.4 / 14.5 +- 0.8 at m = 1, 9.5 +- 1.6 / 12.0 +- 2.3 at m = 2, <= 5 / 5.9
+- 0.5 at m = 4, and at m = 8 4.5 +- 0.3 / 4.5 +- 0.3 / 5.4 +- 0.3 at d = 400 / 800 / 1600 (at 2 x 10^4 steps 5.3 +-
0.3 and 5.8 +- 0.3 at d = 800 / 1600: m = 8's runs near the crossing climb for 10^4 steps and more; at d = 400 and
800 the crossing falls to 4.0 +- 0.6 by 5 x 10^4, section 12q).  m = 16 (section 12q): 3.5 +- 0.3 / 4.2 +- 0.1 at
d = 400 / 800 by 5 x 10^4.

Run:  python -m validation.release_check -a gelu --eta 0.1 --m 4 --delta 20 --dims 800 --seeds 0,1 --out R.jsonl
      python -m validation.release_check --summary R.jsonl --records settled_hessian_gelu_m4.jsonl
      python -m validation.release_check --summary R.jsonl --fractions [--horizon S]
(t1 and T default to the settled_hessian checkpoints 600 and 30000.)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from thresholds.crossing import logistic_crossing
from thresholds.errors import ThresholdsError
from validation import records
from validation.settled_hessian import KEYS, RULES, bracket_text, first_phase, under_rule, verdict
from validation.simulate import run_gd

LEARNED = 0.5   # eq. (2)
LEVELS = (0.01, 0.03, 0.1, 0.2, 0.3, 0.5)   # eq. (2'')
EQUATION = {"weighted": "(1)", "detached": "(1')"}


def log_steps(t1: int, T: int, per_decade: int = 8) -> list[int]:
    """t1, then log-spaced steps to T (T included)."""
    grid = np.unique(np.round(np.logspace(math.log10(t1), math.log10(T), 1 + round(per_decade * math.log10(T / t1)))))
    return sorted({t1, T} | {int(s) for s in grid})


def run_one(activation: str, link: str, eta: float, m: int, delta: float, d: int, seed: int, t1: int, T: int,
            scale: float = 1.0) -> dict:
    """One released run (module docstring): q(t) of eq. (1) at :func:`log_steps`, learned and t_1/2 of eq. (2),
    the passage steps t_L of eq. (2'');
    ``scale`` multiplies the released hard component (0: the hard directions released at zero, so that only the
    data set's own gradient along them can move them)."""
    if not 0 < t1 < T:
        raise ThresholdsError(f"need 0 < t1 < T, got t1 = {t1}, T = {T}")
    start = time.time()
    # settled_hessian.run_one's random stream: the data, the start and the first phase to t1 are that run's
    res = run_gd(first_phase(activation, link, eta, m, delta, d, seed, T, release=t1, release_scale=scale))
    q = res.hard_overlap / res.norm2
    steps = log_steps(t1, T)
    passages = {}
    for level in LEVELS:   # eq. (2''): the first step from t1 on above each level; t_1/2 of eq. (2) among them
        past = np.nonzero(q[t1:] > level)[0]
        passages[f"{level:g}"] = int(t1 + past[0]) if past.size else None
    return {**dict(zip(KEYS, (activation, link, eta, m, delta, d))), "seed": seed, "t1": t1, "steps": T, "scale": scale,
            "q": [[s, float(q[s])] for s in steps], "train_loss": [[s, float(res.train_loss[s])] for s in steps],
            "learned": bool(q[T] > LEARNED), "t_half": passages[f"{LEARNED:g}"],
            "t_levels": passages, "seconds": time.time() - start}


def _key(r: dict) -> tuple:
    return tuple(r[k] for k in KEYS) + (r["seed"],)


def from_t1(record: dict, t1: int, T: int) -> dict | None:
    """The settled_hessian record on its checkpoints from t1 to T (None unless both are checkpoints of it)."""
    points = [p for p in record["points"] if t1 <= p["step"] <= T]
    if len(points) < 2 or (points[0]["step"], points[-1]["step"]) != (t1, T):
        return None
    return {**record, "points": points}


def summary(released: list, settled: list) -> list[str]:
    """Markdown: per released run its settled_hessian verdicts under both rules (the record of the same setup and
    seed, on its checkpoints from t1 to T: :func:`from_t1`) and the release; then, per rule, how often the two
    agree."""
    by_key = {}
    for r in settled:
        by_key.setdefault(_key(r), []).append(r)
    lines = ["| m | d | delta | seed | t1 | start | verdict, eq. (1) | verdict, eq. (1') | q(t1) | q(T) | t_1/2 "
             "| learned |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    agree = {rule: [0, 0, 0] for rule in RULES}   # agree, disagree, undecided
    for r in sorted(released, key=lambda r: (r["m"], r["d"], r["delta"], r["seed"], r["t1"], r.get("scale", 1.0))):
        rec = next((c for c in (from_t1(x, r["t1"], r["steps"]) for x in by_key.get(_key(r), [])) if c), None)
        verdicts = {rule: verdict(under_rule([rec], rule)[0]) if rec else "-" for rule in RULES}
        for rule, v in verdicts.items():
            if v in ("stays", "escapes", "bounded"):
                agree[rule][0 if (v != "bounded") == r["learned"] else 1] += 1
            elif v == "?":
                agree[rule][2] += 1
        q = dict(r["q"])
        lines.append(f"| {r['m']} | {r['d']} | {r['delta']:g} | {r['seed']} | {r['t1']} | {r.get('scale', 1.0):g} | "
                     f"{verdicts['weighted']} | "
                     f"{verdicts['detached']} | {q[r['t1']]:.2g} | {q[r['steps']]:.3f} | {r['t_half'] or '-'} | "
                     f"{'yes' if r['learned'] else 'no'} |")
    lines.append("")
    for rule, (yes, no, und) in agree.items():
        lines.append(f"- verdicts by settled_hessian eq. {EQUATION[rule]}: {yes} of {yes + no} decided runs agree "
                     "with the release" + (f", {und} undecided" if und else ""))
    return lines


def learned_by(r: dict, horizon: int | None = None) -> bool | None:
    """Eq. (2) at the run's T, or at another ``horizon`` eq. (2'): t_1/2 <= horizon; None where the horizon lies
    beyond a run not learned by its T (undecided)."""
    if horizon is None or horizon == r["steps"]:
        return bool(r["learned"])
    if horizon > r["steps"]:
        return True if r.get("t_half") is not None else None
    return r["t_half"] is not None and r["t_half"] <= horizon


def run_identity(r: dict) -> tuple:
    """A run's setup, seed, t1 and start: one trajectory, whatever T its records stop at."""
    return _key(r) + (r["t1"], r.get("scale", 1.0))


def longest(released: list) -> list:
    """One record per run (:func:`run_identity`), its longest (largest T), in the order first met."""
    best = {}
    for r in released:
        k = run_identity(r)
        if k not in best or r["steps"] > best[k]["steps"]:
            best[k] = r
    return list(best.values())


def common_horizon(rows: list) -> int:
    """Eq. (4): the least T of the runs not learned by their T, else the largest T (rows: one record per run)."""
    undecided = [r["steps"] for r in rows if learned_by(r, math.inf) is None]
    return min(undecided) if undecided else max(r["steps"] for r in rows)


@dataclass(frozen=True)
class CellReading:
    """The runs of one cell read at one ``horizon`` S: ``rows`` [{"delta", "learned"}] of the runs eq. (2') decides
    there, and the number ``left_out`` it leaves undecided."""
    horizon: int
    rows: list
    left_out: int


def at_horizon(rows: list, horizon: int | None = None) -> CellReading:
    """The runs of one cell, each from its longest record, read at ``horizon`` (default eq. (4)'s S_cell) by eq.
    (2')."""
    rows = longest(rows)
    S = horizon or common_horizon(rows)
    read = [(r["delta"], learned_by(r, S)) for r in rows]
    return CellReading(S, [{"delta": d, "learned": v} for d, v in read if v is not None],
                       sum(v is None for _, v in read))


def _learned_by_delta(rows: list) -> dict:
    """{delta: [learned of each run]} of rows that carry "delta" and "learned"."""
    learned = {}
    for r in rows:
        learned.setdefault(r["delta"], []).append(bool(r["learned"]))
    return learned


def released_bracket(rows: list) -> tuple:
    """Where half of the released runs learn (rows with "delta" and "learned", as :func:`at_horizon` reads them):
    (low, high), high the smallest delta from which on every delta has at least half its runs learned, low the delta
    below it (fewer than half); None for an end without such a delta."""
    learned = _learned_by_delta(rows)
    high = low = None
    for delta in sorted(learned, reverse=True):
        if 2 * sum(learned[delta]) < len(learned[delta]):
            low = delta if high is not None else None
            break
        high = delta
    return low, high


def released_crossing(rows: list) -> tuple:
    """The logistic crossing of the released runs of one width and d (rows with "delta" and "learned") and its s.e.
    (eq. (3)); (None, None) when the fractions learned do not bracket 1/2."""
    learned = _learned_by_delta(rows)
    deltas = sorted(learned)
    return logistic_crossing(deltas, [sum(learned[x]) for x in deltas], [len(learned[x]) for x in deltas])


def crossing_text(c, se) -> str:
    """A logistic crossing and its s.e. (eq. (3)) as the tables print them; "-" where there is none."""
    return "-" if c is None else f"{c:.1f} +- {se:.1f}"


def fractions(released: list, horizon: int | None = None) -> list[str]:
    """Markdown: per width, d, t1 and start, the runs learned of the runs at each delta, the
    :func:`released_bracket` and the :func:`released_crossing` of that cell, read at ``horizon`` or at the cell's
    eq. (4) S_cell (:func:`at_horizon`; the column T), with the runs left undecided there."""
    cells = {}
    for r in released:
        cells.setdefault((r["m"], r["d"], r["t1"], r.get("scale", 1.0)), []).append(r)
    lines = ["| m | d | t1 | T | start | delta: learned / runs | bracket | crossing (s.e.) | undecided |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (m, d, t1, scale), rows in sorted(cells.items()):
        cell = at_horizon(rows, horizon)
        if not cell.rows:
            continue
        text = ", ".join(f"{delta:g}: {sum(v)}/{len(v)}" for delta, v in sorted(_learned_by_delta(cell.rows).items()))
        # the undecided runs are the ones not learned by their T: without them the fractions lean to learned, so
        # no bracket and no crossing are read off them
        bracket, cross = (("-", "-") if cell.left_out else
                          (bracket_text(*released_bracket(cell.rows)), crossing_text(*released_crossing(cell.rows))))
        lines.append(f"| {m} | {d} | {t1} | {cell.horizon} | {scale:g} | {text} | {bracket} | {cross} "
                     f"| {cell.left_out} |")
    return lines


def q_at(r: dict, step: int) -> float:
    """q at one of a release record's steps (eq. (1))."""
    return {int(s): v for s, v in r["q"]}[step]


def final_q(r: dict) -> float:
    """q(T) of a release record."""
    return q_at(r, r["steps"])


def matching_releases(released: list, longest_run: bool = False) -> tuple:
    """(key, {key(r): r}): the release records by :func:`run_key` (the same setup, seed, t1, T and start), or with
    ``longest_run`` by :func:`run_identity`, each run's longest record (for a prediction with no horizon of its own,
    as validation.profile_check's quasi-static one)."""
    key = run_identity if longest_run else run_key
    return key, {key(r): r for r in (longest(released) if longest_run else released)}


def beside_releases(predicted: list, released: list, header: list, row, rule: str,
                    longest_run: bool = False) -> list[str]:
    """Markdown: each prediction (validation.response_check, validation.profile_check records) on a line
    ``row(p, rel)`` beside the release of the same setup, seed, t1, T and start (``rel``, None when there is none;
    with ``longest_run`` the run's longest record, whatever its T: :func:`matching_releases`), and how often the
    prediction's learned meets the release's (``rule`` names the prediction's)."""
    key, by_key = matching_releases(released, longest_run)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    agree = [0, 0]
    for p in sorted(predicted, key=lambda r: (r["m"], r["d"], r["delta"], r["seed"], r["t1"], r.get("scale", 1.0))):
        rel = by_key.get(key(p))
        if rel is not None:
            agree[0 if rel["learned"] == p["learned"] else 1] += 1
        lines.append("| " + " | ".join(row(p, rel)) + " |")
    lines += ["", f"- {rule} meets the release in {agree[0]} of {sum(agree)} runs with a release"]
    return lines


def _values(text: str, name: str, kind) -> list:
    """Comma-separated values of ``kind`` (int or float) of option ``name``; click.BadParameter otherwise."""
    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        what = "integers" if kind is int else "numbers"
        raise click.BadParameter(f"{text!r}: comma-separated {what}", param_hint=name) from None


def _read(paths) -> list:
    return [r for p in paths for r in records.read_file(p)]


def release_options(widths: str, seeds: str, t1: int, what: str):
    """The click options of a release's setup, its records file and ``--summary`` (shared with
    validation.response_check, whose records are ``what``), with these defaults."""
    options = [
        click.option("-a", "--activation", default="gelu", show_default=True),
        click.option("-l", "--link", default="phase_retrieval", show_default=True),
        click.option("--eta", type=float, default=0.1, show_default=True),
        click.option("--m", "widths", default=widths, help="widths, comma-separated"),
        click.option("--delta", "deltas", default="20", help="sample ratios, comma-separated"),
        click.option("--dims", default="800", help="dimensions, comma-separated"),
        click.option("--seeds", default=seeds, help="settled_hessian run indices, comma-separated"),
        click.option("--t1", type=click.IntRange(min=1), default=t1, show_default=True, help="the release step"),
        click.option("--steps", "T", type=click.IntRange(min=2), default=30000, show_default=True,
                     help="the horizon T"),
        click.option("--start-scale", "scale", type=click.FloatRange(min=0), default=1.0, show_default=True,
                     help="the released hard component in units of a random start's (0: released at zero)"),
        click.option("--out", type=click.Path(dir_okay=False), help="JSON lines, one per run (resumed when it exists)"),
        click.option("--summary", "summary_files", multiple=True, type=click.Path(dir_okay=False),
                     help=f"print the table of these {what} files and stop")]

    def wrap(f):
        for option in reversed(options):
            f = option(f)
        return f
    return wrap


def grid(widths: str, dims: str, deltas: str, seeds: str) -> list[tuple]:
    """(m, d, delta, seed) over the comma-separated options, all parsed before any run."""
    axes = [_values(widths, "--m", int), _values(dims, "--dims", int), _values(deltas, "--delta", float),
            _values(seeds, "--seeds", int)]
    return [(m, d, delta, s) for m in axes[0] for d in axes[1] for delta in axes[2] for s in axes[3]]


def run_key(r: dict) -> tuple:
    """A record's setup, seed, t1, T and start: what a rerun of the same options skips."""
    return _key(r) + (r["t1"], r["steps"], r.get("scale", 1.0))


def run_grid(out, run, say, problem: tuple, cells: list, t1: int, T: int, scale: float) -> None:
    """``run(activation, link, eta, m, delta, d, seed, t1, T, scale)`` for every cell of :func:`grid` not yet in the
    records file ``out`` (resumed), each record appended and ``say(m, d, delta, seed, record)`` printed; every
    refused input a one-line error."""
    if not out:
        raise click.ClickException("--out or --summary is required")
    if t1 >= T:
        raise click.ClickException(f"--t1 {t1} must be below --steps {T}")
    path = Path(out)
    done = {run_key(r) for r in _read([path])} if path.exists() else set()
    for m, d, delta, s in cells:
        if (*problem, m, delta, d, s, t1, T, scale) in done:
            continue
        try:
            rec = run(*problem, m, delta, d, s, t1, T, scale)
        except (ThresholdsError, FloatingPointError) as exc:
            raise click.ClickException(str(exc)) from None
        records.append(path, rec)
        print(say(m, d, delta, s, rec), flush=True)


@click.command()
@release_options(widths="4", seeds="0,1", t1=600, what="release")
@click.option("--records", "settled_files", multiple=True, type=click.Path(dir_okay=False),
              help="validation.settled_hessian records for the verdicts of --summary")
@click.option("--fractions", "by_cell", is_flag=True, help="with --summary: the learned fractions per delta, the "
              "bracket where half the runs learn and the logistic crossing (eq. (3)), per width and d, instead of the runs")
@click.option("--horizon", type=click.IntRange(min=1), help="with --fractions: read every run at this step (eq. (2'); "
              "default: each cell's longest horizon that decides every run, eq. (4); undecided runs left out)")
def main(activation, link, eta, widths, deltas, dims, seeds, t1, T, scale, out, summary_files, settled_files, by_cell,
         horizon):
    if horizon is not None and not by_cell:
        raise click.ClickException("--horizon goes with --summary ... --fractions")
    if summary_files:
        released = _read(summary_files)
        print("\n".join(fractions(released, horizon) if by_cell else summary(released, _read(settled_files))))
        return
    run_grid(out, run_one, lambda m, d, delta, s, rec: f"m = {m}, d = {d}, delta {delta:g}, run {s}: q(T) = "
             f"{rec['q'][-1][1]:.3f}, learned {rec['learned']} ({rec['seconds']:.0f} s)",
             (activation, link, eta), grid(widths, dims, deltas, seeds), t1, T, scale)


if __name__ == "__main__":
    main()

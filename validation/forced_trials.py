"""Forced DMFT trials (thresholds.forced) on a grid of (delta, d), one JSON line per trial, against GD.

Each trial is one planted, forced ``sources`` DMFT run (thresholds.forced eq. (1)); the lines are appended as
the trials end, so an interrupted sweep resumes with the same command.  ``--summary`` prints, per d, the
success rate of the trials next to GD's from ``thresholds validate`` reports at the same horizon (``--gd``),
the difference in combined binomial standard errors, and both logistic crossings.

    python -m validation.forced_trials -a gelu --eta 0.1 --steps 600 --dims 400 --delta 10,12 --trials 40
    python -m validation.forced_trials -a gelu --eta 0.1 --steps 600 --summary \\
        --gd validation/reports/planted/gd_gelu_T600/report.md [--plot crossing.png --planted PREDICTED.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from thresholds.errors import ThresholdsError
from thresholds.forced import ForcedPoint, path_dtype_for, paths_for, points, run_trial, source_tol_for
from thresholds.problem import Problem
from validation import records
from validation.planted_threshold import gd_crossings, gd_rates
from validation.threshold import fit_crossing

OUT = Path(__file__).resolve().parent / "reports" / "planted" / "forced"


def records_path(problem: Problem, out: Path = OUT) -> Path:
    """The records file of a setup; characters outside [A-Za-z0-9_.+-] are dropped from the names (y = |z|,
    ``Abs(z)``, gives ``Absz``)."""
    import re
    clean = lambda text: re.sub(r"[^A-Za-z0-9_.+-]", "", text)  # noqa: E731
    width = f"_m{problem.m}" if problem.m != 1 else ""
    return out / (f"{clean(problem.activation)}_{clean(problem.link)}_eta{problem.eta:g}{width}"
                  f"_T{problem.steps}.jsonl")


def sweep(problem: Problem, dims, deltas, trials: int, *, path: Path, paths: int = None,
          source_tol: float = None, first: int = 0, log=print, gram: bool = False, strata: int = 0,
          per_sample: float = None, path_dtype: str = None, source_orth: bool = False) -> None:
    """Trials first ... first + trials - 1 at every (delta, d), skipping those already in ``path``; the trial
    index runs in the outer loop, so an interrupted sweep has about as many trials at every point.  ``paths``
    None: thresholds.forced.paths_for (eqs. (4), (4b); ``per_sample`` paths per sample); ``source_tol``
    None: the width's default (thresholds.forced eq. (4b)); ``path_dtype`` None: eq. (4c).  Trials with another path
    count at a point are not reused (and :func:`check_paths` refuses the mixture), nor trials of another precision;
    ``source_orth``: the runs' sources orthogonal to their whitened psi paths (thresholds.dmft eq. (6g)); the
    records of each choice are kept apart from the other's."""
    source_tol = source_tol_for(problem.m, source_tol)
    path_dtype = path_dtype_for(source_tol, path_dtype)
    same = [r for r in records.read(path)
            if r["source_tol"] == source_tol and r.get("gram", False) == gram and r.get("strata", 0) == strata
            and r.get("source_orth", False) == source_orth]
    done = {(r["d"], r["delta"], r["trial"], r["paths"]) for r in same if r.get("path_dtype", "float64") == path_dtype}
    other = {(r["d"], r["delta"], r["trial"]): r.get("path_dtype", "float64") for r in same
             if r.get("path_dtype", "float64") != path_dtype}
    path.parent.mkdir(parents=True, exist_ok=True)
    for k in range(first, first + trials):
        for d in dims:
            for delta in deltas:
                n_paths = paths_for(delta, d, paths, per_sample, m=problem.m, source_tol=source_tol)
                if (d, float(delta), k, n_paths) in done:
                    continue
                if (d, float(delta), k) in other:   # the same trial twice would count as two
                    raise ThresholdsError(f"{path} holds trial {k} at d = {d}, delta = {delta:g} in "
                                          f"{other[d, float(delta), k]}; pass --path-dtype {other[d, float(delta), k]} "
                                          "or another --out")
                start = time.time()
                tr = run_trial(problem, delta, d, k, paths=n_paths, source_tol=source_tol, gram=gram, strata=strata,
                               path_dtype=path_dtype, source_orth=source_orth)
                records.append(path, tr.to_json())
                xi = " ".join(f"{v:+.2f}" for v in (tr.xi if isinstance(tr.xi, list) else [tr.xi]))
                log(f"d {d} delta {delta:g} trial {k}: xi {xi} hard fraction {tr.final:.3f} "
                    f"({time.time() - start:.0f} s)")


def check_paths(rows) -> None:
    """ValueError when the trials of one (d, delta) ran on different numbers of paths (records of two path rules in
    one file, e.g. a sweep resumed after the default of thresholds.forced eq. (4) changed): one --out per rule."""
    seen = {}
    for r in rows:
        seen.setdefault((int(r["d"]), float(r["delta"])), set()).add(int(r["paths"]))
    mixed = sorted(k for k, v in seen.items() if len(v) > 1)
    if mixed:
        d, delta = mixed[0]
        raise ValueError(f"trials at d = {d}, delta = {delta:g} ran on {sorted(seen[mixed[0]])} paths: keep the "
                         "records of each path count under their own --out")


def crossings(rows) -> list:
    """[(d, crossing, s.e.)] per d (d whose rates do not bracket 1/2 left out): the logistic crossing with the
    s.e. of thresholds.crossing.paired_crossing (trials resampled with their outcomes at every delta) over the
    trials run at every delta of that d; the binomial s.e. of the logistic fit when no trial was."""
    from thresholds.crossing import paired_crossing
    out = []
    for d in sorted({int(r["d"]) for r in rows}):
        at = [r for r in rows if int(r["d"]) == d]
        deltas = sorted({float(r["delta"]) for r in at})
        wins = {(float(r["delta"]), int(r["trial"])): bool(r["success"]) for r in at}
        common = sorted(set.intersection(*({k for dl, k in wins if dl == delta} for delta in deltas)))
        if common:
            c, se = paired_crossing(deltas, [[wins[(delta, k)] for k in common] for delta in deltas])
        else:
            pts = points(at)
            c, se = fit_crossing([p.delta for p in pts], [p.successes for p in pts], [p.trials for p in pts])
        if c is not None:
            out.append((d, c, se))
    return out


def figure(path: Path, problem: Problem, rows, gd_reports=(), planted=None, nn_results=()) -> None:
    """The forced crossings against d next to GD's and, from a ``planted_threshold`` records file, the
    thresholds.planted prediction at the d of either; ``nn_results``: ``thresholds nn --law dmft --edge-d D
    --json`` files, drawn as delta_NN at d = D (the d = inf first phase, the left edge of n = delta D samples),
    the first one's G-clipped delta_NN as a horizontal line."""
    from thresholds.planted import crossing
    from thresholds.plots import finite_d_figure
    from validation.planted_threshold import points_of
    sim = sorted((d, v, e) for rep in gd_reports for d, (v, e) in gd_crossings(Path(rep)).items())
    forced = crossings(rows)
    pred = []
    if planted is not None:   # planted_threshold records (one delta a line), or a FiniteDPrediction's JSON
        rows_p = records.read(Path(planted))
        if len(rows_p) == 1 and "crossings" in rows_p[0]:
            pred = [(c["d"], c["value"], c["low"], c["high"]) for c in rows_p[0]["crossings"] if c["found"]]
        else:
            pts = points_of(rows_p)
            dims = sorted({d for d, _, _ in sim} | {d for d, _, _ in forced})
            pred = [(c.d, c.value, c.low, c.high) for c in (crossing(pts, d) for d in dims) if c.found]
    theory, clipped, horizons = nn_theory(nn_results)
    finite_d_figure(path, pred, sim, forced=forced, title=f"{problem.activation} / {problem.link}, eta "
                    f"{problem.eta:g}, m = 1, horizon {problem.steps} steps", theory=theory,
                    delta_nn=clipped[0] if clipped else None,
                    delta_nn_label=f"delta_NN, G clipped at 1e-3 (d = inf, T = {clipped[1]})" if clipped else "",
                    theory_label=f"delta_NN (d = inf first phase, T = {', '.join(map(str, sorted(horizons)))}), "
                                 "edge of n = delta d samples")


def nn_theory(nn_results) -> tuple:
    """From ``thresholds nn --json`` files: the points (D, delta_NN, low, high) of those with ``edge_d`` = D > 0
    and a crossing found, sorted by D; the first G-clipped crossing found as (value, horizon steps) (None if none);
    the horizons of the points."""
    theory, clipped, horizons = [], None, set()
    for name in nn_results:
        res = json.loads(Path(name).read_text())
        if res["setup"]["edge_d"] and res["found"]:
            horizons.add(res["setup"]["steps"])
            theory.append((res["setup"]["edge_d"], res["delta_nn"], res["delta_nn_low"], res["delta_nn_high"]))
        if clipped is None and res["delta_nn_clipped"]["found"]:
            clipped = (res["delta_nn_clipped"]["value"], res["setup"]["steps"])
    return sorted(theory), clipped, horizons


def summarize(rows, gd_reports=()) -> list[str]:
    """Per (d, delta): forced rate +- s.e., GD k/n and rate, z; then per d both crossings."""
    gd, gd_cross = {}, {}
    for rep in gd_reports:
        gd.update(gd_rates(Path(rep)))
        gd_cross.update(gd_crossings(Path(rep)))
    pts = points(rows)
    lines = ["| d | delta | forced DMFT | GD | z |", "|---|---|---|---|---|"]
    for p in pts:
        cell, z = "-", ""
        if (p.d, p.delta) in gd:
            sim = ForcedPoint(p.delta, p.d, *gd[(p.d, p.delta)])   # GD's rate with the same binomial s.e.
            cell = f"{sim.successes}/{sim.trials} = {sim.rate:.2f}"
            z = f"{(p.rate - sim.rate) / math.hypot(p.se, sim.se):+.1f}"
        lines.append(f"| {p.d} | {p.delta:g} | {p.successes}/{p.trials} = {p.rate:.2f} +- {p.se:.2f} | {cell} | {z} |")
    lines += ["", "| d | forced DMFT crossing | GD crossing | z |", "|---|---|---|---|"]
    fitted = {d: (c, se) for d, c, se in crossings(rows)}
    for d in sorted({p.d for p in pts}):
        c, se = fitted.get(d, (None, None))
        mine = f"{c:.2f} +- {se:.2f}" if c is not None else "not bracketed"
        other, z = "-", ""
        if d in gd_cross:
            g, gse = gd_cross[d]
            other = f"{g:.2f} +- {gse:.2f}"
            if c is not None:
                z = f"{(c - g) / math.hypot(se, gse):+.1f}"
        lines.append(f"| {d} | {mine} | {other} | {z} |")
    return lines


def paired_against(rows, other, resamples: int = 1000, seed: int = 0) -> list[str]:
    """Per d, the crossing of ``rows`` against that of ``other`` on the trials both ran at every delta both hold (a
    trial k keeps its initial overlap and forcing seed in either, so the two are paired per trial): rates, the two
    logistic crossings, their difference with the s.e. of one bootstrap over trials (each keeps its outcomes in both
    records, eq. (5) of thresholds.crossing for the spread), and the discordant outcomes."""
    from thresholds.crossing import half_range, logistic_crossing
    wins = [{(int(r["d"]), float(r["delta"]), int(r["trial"])): bool(r["success"]) for r in rs} for rs in (rows, other)]
    lines = [("| d | trials | delta | rates, this | rates, other | crossing, this | other | other - this | "
              "discordant (this only / other only) |"), "|---|---|---|---|---|---|---|---|---|"]
    rng = np.random.default_rng(seed)
    for d in sorted({k[0] for k in wins[0]} & {k[0] for k in wins[1]}):
        deltas = sorted({k[1] for k in wins[0] if k[0] == d} & {k[1] for k in wins[1] if k[0] == d})
        trials = sorted(set.intersection(*({k[2] for k in w if k[:2] == (d, x)} for w in wins for x in deltas)))
        if not trials:
            continue
        a, b = (np.array([[w[(d, x, k)] for k in trials] for x in deltas]) for w in wins)
        size = [len(trials)] * len(deltas)

        def fit(o, pick=slice(None), deltas=deltas, size=size):
            return logistic_crossing(deltas, o[:, pick].sum(axis=1), size)[0]
        ca, cb = fit(a), fit(b)
        boot = []
        for _ in range(resamples):
            pick = rng.integers(0, len(trials), len(trials))
            x, y = fit(a, pick), fit(b, pick)
            if x is not None and y is not None:
                boot.append((x, y))
        boot = np.array(boot).reshape(-1, 2)
        diff = "-" if ca is None or cb is None else f"{cb - ca:+.3f} +- {half_range(boot[:, 1] - boot[:, 0]):.3f}"
        lines.append(f"| {d} | {len(trials)} | {', '.join(f'{x:g}' for x in deltas)} | "
                     f"{' / '.join(f'{v:.2f}' for v in a.mean(axis=1))} | {' / '.join(f'{v:.2f}' for v in b.mean(axis=1))} | "
                     f"{_with_spread(ca, boot[:, 0])} | {_with_spread(cb, boot[:, 1])} | {diff} | "
                     f"{int((a & ~b).sum())} / {int((~a & b).sum())} |")
    return lines


def _with_spread(value, boot) -> str:
    from thresholds.crossing import half_range
    return "not bracketed" if value is None else f"{value:.3f} +- {half_range(boot):.3f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-a", "--activation", default="gelu")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--m", type=int, default=1, help="width (thresholds.forced eq. (1m))")
    ap.add_argument("--dims", default="400", help="comma-separated dimensions")
    ap.add_argument("--delta", default="10,12", help="comma-separated sample ratios")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--first", type=int, default=0, help="index of the first trial")
    ap.add_argument("--paths", type=int, default=None, help="paths per trial (default: thresholds.forced eq. (4), "
                    "max(delta d, 2500 m, 1250 m^2) at source tolerance 1e-3, at m = 1 eq. (4e), max(delta d, 4000 delta), "
                    "eq. (4b), max(delta d, 10000 m) at 1e-2)")
    ap.add_argument("--paths-per-sample", type=float, default=None,
                    help="paths per trial = ceil(R delta d) (R >= 1; R = 1: the paths are the samples, no added forcing)")
    ap.add_argument("--source-tol", type=float, default=None, help="thresholds.dmft eq. (6b) (default: thresholds.forced "
                    "eq. (4b), 1e-3 at m < 8 and 1e-2 at m >= 8)")
    ap.add_argument("--strata", type=int, default=0, help="initial overlaps stratified in blocks of this many trials "
                    "(thresholds.forced eq. (2s)); 0: iid")
    ap.add_argument("--path-dtype", choices=("float32", "float64"), default=None, help="storage of a trial's "
                    "per-path arrays (default: thresholds.forced eq. (4c), float32 on the truncated basis; float64 "
                    "reproduces records made before it)")
    ap.add_argument("--source-orth", action="store_true", help="each source of a run orthogonal to its whitened "
                    "psi paths so far (thresholds.dmft eq. (6g))")
    ap.add_argument("--gram", action="store_true", help="the bulk from the finite-d Gram of the neurons "
                    "(thresholds.forced eq. (3))")
    ap.add_argument("--out", type=Path, default=OUT, help="directory of the records (one file per setup)")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--gd", nargs="*", default=(), help="with --summary: validate report.md files")
    ap.add_argument("--against", type=Path, help="with --summary: a second records directory of the same setup, "
                    "compared trial by trial (the crossings' paired difference)")
    ap.add_argument("--plot", type=Path, help="with --summary: the crossings against d as a PNG")
    ap.add_argument("--planted", type=Path, help="with --plot: a planted_threshold records file to draw too")
    ap.add_argument("--delta-nn", nargs="*", default=(), help="with --plot: `thresholds nn --law dmft --edge-d D "
                    "--json` files (delta_NN of the d = inf first phase with the edge of n = delta D samples)")
    args = ap.parse_args(argv)
    problem = Problem(args.activation, args.link, eta=args.eta, steps=args.steps, m=args.m)
    path = records_path(problem, args.out)
    if args.summary:
        rows = records.read(path)
        try:
            check_paths(rows)
        except ValueError as err:
            raise SystemExit(f"error: {err}")
        print("\n".join(summarize(rows, args.gd)))
        if args.against:
            print("\n" + "\n".join(paired_against(rows, records.read(records_path(problem, args.against)))))
        if args.plot:
            figure(args.plot, problem, rows, args.gd, args.planted, args.delta_nn)
        return
    try:
        dims = [int(v) for v in args.dims.split(",")]
        deltas = [float(v) for v in args.delta.split(",")]
        sweep(problem, dims, deltas, args.trials, path=path, paths=args.paths, per_sample=args.paths_per_sample,
              source_tol=args.source_tol, first=args.first, log=lambda s: print(s, flush=True), gram=args.gram,
              strata=args.strata, path_dtype=args.path_dtype, source_orth=args.source_orth)
    except (ThresholdsError, ValueError) as err:
        raise SystemExit(f"error: {err}")


if __name__ == "__main__":
    main()

"""The width-m finite-d prediction (thresholds.modes) against GD at the same fixed horizon.

``--run`` computes the prediction (every DMFT run cached on disk, so an interrupted run resumes) and writes
its JSON; ``--summary`` sets it against ``thresholds validate`` reports at the same horizon (``--t0
steps*eta --c 0``): the crossing per d with the difference in combined standard errors, and P(delta, d) at
every simulated (d, delta) from eq. (6) of thresholds.modes, interpolated linearly in delta between the
computed deltas, against the GD success rate with its binomial standard error.  ``--plot`` draws the
crossings of several widths against d (``--also`` adds other predictions and reports, e.g. m = 1).

Run:  python -m validation.width_planted --deltas 3,3.5 --points DIR -a quad --eta 0.05 --steps 600 --m 2
      python -m validation.width_planted --combine --points DIR --dims 200,400,800,1600 --out PRED.json
      python -m validation.width_planted --run -a quad --eta 0.05 --steps 600 --m 2 --dims 200,400,800,1600 \\
          --start 3.5 --out validation/reports/planted/width/predicted_quad_m2_T600.json
      python -m validation.width_planted --summary --pred validation/reports/planted/width/predicted_quad_m2_T600.json \\
          --gd validation/reports/planted/width/gd_quad_m2_T600/report.md [--plot crossing.png]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from scipy.stats import norm

from thresholds.modes import PATHS  # paths per planted run: width_point's default, that of the committed points
from thresholds.planted import QUARTILE
from validation.planted_threshold import gd_crossings, gd_rates


def run(args) -> dict:
    import time

    from thresholds import modes
    from thresholds.problem import Problem
    problem = Problem(args.activation, args.link, eta=args.eta, steps=args.steps, m=args.m)
    dims = [int(x) for x in args.dims.split(",")]
    res = modes.prediction(problem, dims, start=args.start, log=lambda s: print(time.strftime("%H:%M:%S"), s,
                                                                                  flush=True))
    out = dict(res.to_json(), activation=args.activation, link=args.link, eta=args.eta, m=args.m)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    for c in res.crossings:
        print(c)
    return out


def run_points(args):
    """One JSON per delta of ``--deltas`` in ``--points`` (thresholds.modes.width_point), for processes that
    share the work; ``--combine`` then turns the directory into a prediction."""
    import time

    from thresholds import modes
    from thresholds.planted import point_json
    from thresholds.problem import Problem
    problem = Problem(args.activation, args.link, eta=args.eta, steps=args.steps, m=args.m)
    args.points.mkdir(parents=True, exist_ok=True)
    for delta in (float(x) for x in args.deltas.split(",")):
        t0 = time.time()
        p = modes.width_point(problem, delta, log=lambda s: print(time.strftime("%H:%M:%S"), s, flush=True),
                              angles=tuple(reversed(modes.ANGLES)) if args.reverse else None, paths=args.paths,
                              source_tol=args.source_tol)
        row = dict(point_json(p), seconds=time.time() - t0, activation=args.activation, link=args.link,
                   eta=args.eta, steps=args.steps, paths=args.paths, source_tol=args.source_tol)
        (args.points / f"delta_{delta:g}.json").write_text(json.dumps(row, indent=1) + "\n")


def combine(args) -> dict:
    """The prediction's JSON (crossings at ``--dims``) from the point files of :func:`run_points`."""
    from thresholds.planted import crossing
    rows = [json.loads(f.read_text()) for f in sorted(args.points.glob("delta_*.json"))]
    if len({r.get("paths", PATHS) for r in rows}) > 1:
        raise SystemExit("the point files were computed with different numbers of paths")
    if len({r.get("source_tol", 0.0) for r in rows}) > 1:
        raise SystemExit("the point files were computed with different source bases (source_tol)")
    pts = [_point(r, args.planted_q0) for r in sorted(rows, key=lambda r: r["delta"])]
    dims = [int(x) for x in args.dims.split(",")]
    first = rows[0]
    out = {"method": "planted DMFT in the plane of the neurons' modes (thresholds.modes, eqs. (1)-(7))",
           "activation": first["activation"], "link": first["link"], "eta": first["eta"], "m": first["m"],
           "horizon_steps": first["steps"], "paths": first.get("paths", PATHS),
           "source_tol": first.get("source_tol", 0.0),
           "seconds": sum(r["seconds"] for r in rows),
           "crossings": [crossing(pts, d).to_json() for d in dims],
           "points": [{k: v for k, v in r.items() if k not in ("activation", "link", "eta", "steps")} for r in rows]}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return out


def _point(p, planted_q0=False):
    """A computed point of a prediction's JSON as the library's record (WidthPoint or DeltaPoint); with
    ``planted_q0`` the brackets are the planted amplitudes themselves instead of the effective ones (eq. (4)
    of thresholds.planted)."""
    from thresholds.modes import WidthPoint
    from thresholds.planted import DeltaPoint
    if "angles" in p:
        return WidthPoint(p["delta"], p["m"], {float(k): _point(dict(q, delta=p["delta"]), planted_q0)
                                               for k, q in p["angles"].items()})
    low, high = (p["planted_q0_low"], p["planted_q0_high"]) if planted_q0 else (p["q_c_low"], p["q_c_high"])
    return DeltaPoint(p["delta"], low, high if high is not None else math.inf, p["s"], p["s_err"],
                      dof=p.get("dof", 1))


def _prediction_file(path: Path, like: dict) -> dict:
    """A prediction's JSON, or the per-delta rows of validation.planted_threshold (.jsonl, m = 1) turned into
    one, with crossings at the dimensions of ``like``."""
    if path.suffix != ".jsonl":
        return json.loads(path.read_text())
    from thresholds.planted import crossing
    from validation.planted_threshold import points_of
    pts = points_of([json.loads(line) for line in path.read_text().splitlines() if line.strip()])
    return {"crossings": [crossing(pts, c["d"]).to_json() for c in like["crossings"]]}


def margins(pred: dict, d: int) -> list:
    """(delta, f_d(delta)) of eq. (6) (thresholds.modes; planted eq. (3) for a one-mode point) at the
    computed deltas of a prediction's JSON."""
    return [(p["delta"], _point(p).margin(d)) for p in sorted(pred["points"], key=lambda p: p["delta"])]


def probability(pred: dict, d: int, delta: float) -> float:
    """P(delta, d) from f_d interpolated linearly in delta (nan outside the computed deltas)."""
    f = margins(pred, d)
    for (a, fa), (b, fb) in zip(f, f[1:]):
        if a <= delta <= b and math.isfinite(fa) and math.isfinite(fb):
            x = fa + (fb - fa) * (delta - a) / (b - a)
            return float(2 * norm.sf(x + QUARTILE))
    return math.nan


def summary(pred: dict, reports: list) -> list:
    gd, sim = {}, {}
    for r in reports:
        gd.update(gd_rates(r))
        sim.update(gd_crossings(r))
    lines = [f"Prediction: {pred['method']}, horizon {pred['horizon_steps']} steps, {pred['paths']} paths per planted "
             f"run, {pred['seconds']:.0f} s.", "",
             "| d | predicted delta_1/2 [range] | GD crossing +- s.e. | difference / combined s.e. |", "|---|---|---|---|"]
    for c in pred["crossings"]:
        d = c["d"]
        p = (f"{c['value']:.2f} [{c['low']:.2f}, {c['high']:.2f}]" if c["found"] and c["low"] is not None
             and c["high"] is not None else (f"{c['value']:.2f}" if c["found"] else f"not found ({c['note']})"))
        if d in sim and c["found"]:
            v, e = sim[d]
            half = (c["high"] - c["low"]) / 2 if c["low"] is not None and c["high"] is not None else 0.0
            z = (c["value"] - v) / math.hypot(e, half)
            lines.append(f"| {d} | {p} | {v:.2f} +- {e:.2f} | {z:+.1f} |")
        else:
            lines.append(f"| {d} | {p} | - | - |")
    lines += ["", "The combined s.e. takes half the predicted range as the prediction's own s.e.", "",
              "| d | delta | predicted P | GD successes | GD rate +- s.e. | within 2 s.e. |", "|---|---|---|---|---|---|"]
    hits = total = 0
    for (d, delta), (k, n) in sorted(gd.items()):
        P = probability(pred, d, delta)
        if not math.isfinite(P):
            continue
        rate = k / n
        se = math.sqrt(max(P * (1 - P), 1e-4) / n)   # binomial s.e. at the predicted rate
        ok = abs(rate - P) <= 2 * se
        hits, total = hits + ok, total + 1
        lines.append(f"| {d} | {delta:g} | {P:.2f} | {k} / {n} | {rate:.2f} +- {se:.2f} | {'yes' if ok else 'no'} |")
    lines += ["", f"{hits} of {total} simulated points within 2 binomial s.e. (at the predicted rate) of the prediction."]
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--deltas", help="Compute only these deltas (comma-separated), one JSON each in --points.")
    ap.add_argument("--paths", type=int, default=PATHS, help="With --deltas: paths per planted DMFT run.")
    ap.add_argument("--source-tol", type=float, default=0.0, help="With --deltas: the source basis of the planted "
                    "runs of r_c (thresholds.dmft eq. (6b); 0: every source).")
    ap.add_argument("--reverse", action="store_true", help="With --deltas: the angles in reverse order (a second "
                    "process on the same deltas and cache then meets the first one halfway).")
    ap.add_argument("--points", type=Path, help="Directory of per-delta JSON files (--deltas, --combine).")
    ap.add_argument("--combine", action="store_true", help="The prediction's JSON (--out) from --points at --dims.")
    ap.add_argument("--planted-q0", action="store_true", help="With --combine: the crossings from the planted "
                    "amplitudes instead of the effective ones (thresholds.planted, eq. (4)).")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--m", type=int, default=2)
    ap.add_argument("--dims", default="200,400,800,1600")
    ap.add_argument("--start", type=float, default=4.0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--pred", type=Path, help="With --summary: the prediction's JSON.")
    ap.add_argument("--gd", type=Path, nargs="*", default=[], help="With --summary: validate reports (report.md).")
    ap.add_argument("--plot", type=Path, help="With --summary: crossings against d as a PNG.")
    ap.add_argument("--also", nargs="*", default=[], metavar="LABEL=PRED.json:REPORT.md[,REPORT.md]",
                    help="With --plot: further series (e.g. m = 1; PRED may be a planted_threshold .jsonl).")
    args = ap.parse_args(argv)
    if args.deltas:
        run_points(args)
    if args.combine:
        combine(args)
    if args.run:
        if args.out is None:
            ap.error("--run needs --out")
        run(args)
    if args.summary:
        pred = json.loads(args.pred.read_text())
        print("\n".join(summary(pred, args.gd)))
        if args.plot:
            from thresholds.plots import widths_figure
            tol = pred.get("source_tol")
            series = [(f"m = {pred.get('m', '?')}" + (f", source_tol {tol:g}" if tol else ""), pred, args.gd)]
            for item in args.also:
                label, rest = item.rsplit("=", 1)
                p, reports = rest.split(":", 1)
                series.append((label, _prediction_file(Path(p), pred), [Path(r) for r in reports.split(",")]))
            widths_figure(args.plot, [(label, [(c["d"], c["value"], c["low"], c["high"]) for c in p["crossings"]
                                               if c["found"] and c["low"] is not None and c["high"] is not None],
                                       sorted((d, *v) for r in reps for d, v in gd_crossings(r).items()))
                                      for label, p, reps in series],
                          title=f"{pred.get('activation', '')} / {pred.get('link', '')}, eta {pred.get('eta', '')}, "
                                f"horizon {pred['horizon_steps']} steps")


if __name__ == "__main__":
    main()

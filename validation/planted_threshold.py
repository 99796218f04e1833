"""Predicted finite-d success from the d = inf theory (thresholds.planted) against GD (m = 1).

For each delta: the critical planted overlap q_c(delta, T) by bisection with the planted DMFT, and the
spread s(delta) of the effective initial overlap from the pathwise DMFT; then eq. (2) of thresholds.planted
gives P(delta, d) at every d and eq. (3) the crossing.  One JSON line per delta in
validation/reports/planted/ (the DMFT runs are cached on disk, so an interrupted run resumes).

Run:  python -m validation.planted_threshold -a quad --eta 0.05 --steps 600 --delta 5,4,6 --low 0.05 --high 0.1
      python -m validation.planted_threshold -a quad --eta 0.05 --steps 600 --summary --dims 200,400,800 \
          --gd validation/reports/planted/gd_T600/report.md [--plot crossing.png]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


from thresholds.planted import DeltaPoint, critical_overlap, crossing, spread, success_probability
from thresholds.problem import Problem
from validation import records

OUT = Path(__file__).resolve().parent / "reports" / "planted"


def predict(activation, link, eta, steps, delta, *, low, high, paths, spread_paths, tstar, source_tol=0.0):
    problem = Problem(activation, link, eta=eta, steps=steps)
    qc = critical_overlap(problem, delta, steps, low=low, high=high, paths=paths, source_tol=source_tol,
                          progress=lambda q, f: print(f"  delta {delta:g}: q0 = {q:.4f} -> hard fraction "
                                                      f"{f:.3f} at step {steps}", flush=True))
    s, s_err = spread(problem, delta, tstar=tstar, paths=spread_paths)
    return effective({"activation": activation, "link": link, "eta": eta, "steps": steps, "delta": float(delta),
                      "paths": paths, "q_low": qc.low, "q_high": qc.high, "runs": qc.runs, "tstar": tstar,
                      "s": s, "s_err": s_err, "spread_paths": spread_paths,
                      **({"source_tol": source_tol} if source_tol else {})})


def effective(row: dict) -> dict:
    """The row with its q_c bracket as effective overlaps, eq. (4) of thresholds.planted ("q_eff_low",
    "q_eff_high", "t_map"): each run's |M_H(t_map)| (its cached planted DMFT, seed 0) over G(t_map, 0) of a
    pathwise run to t_map with the spread's paths (the same G(t_map, 0) as in the spread's run to t*, on
    other draws)."""
    from thresholds.planted import T_MAP, CriticalOverlap, planted_run, run_amplitude
    problem = Problem(row["activation"], row["link"], eta=row["eta"], steps=row["steps"])
    t_map = min(T_MAP, row["tstar"])
    law = spread(problem, row["delta"], tstar=t_map, paths=row["spread_paths"], law=True)[2]
    amps = {q0: run_amplitude(planted_run(problem, row["delta"], q0, row["steps"], paths=row["paths"]), t_map)
            for q0, _ in row["runs"]}
    qc = CriticalOverlap(row["delta"], row["steps"], row["q_low"], row["q_high"], [tuple(r) for r in row["runs"]], amps)
    lo, hi = qc.effective(float(law.growth[t_map]))
    return dict(row, q_eff_low=lo, q_eff_high=hi, t_map=t_map, growth_t_map=float(law.growth[t_map]))


def gd_rates(report: Path) -> dict:
    """(d, delta) -> (successes, trials) from the success table of a ``thresholds validate`` report."""
    import re
    out = {}
    for line in report.read_text().splitlines():
        m = re.match(r"\| (\d+) \| ([\d.]+) \| (\d+) / (\d+) \|", line)
        if m:
            out[(int(m[1]), float(m[2]))] = (int(m[3]), int(m[4]))
    return out


def gd_crossings(report: Path) -> dict:
    """d -> (crossing, s.e.) from the crossing table of a ``thresholds validate`` report."""
    import re
    out = {}
    for line in report.read_text().splitlines():
        m = re.match(r"\| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", line.strip())
        if m:
            out[int(m[1])] = (float(m[2]), float(m[3]))
    return out


def _bracket(r, planted_q0=False):
    """The q_c bracket of a row: effective overlaps (eq. (4)) when recorded, else (or with ``planted_q0``)
    the planted q0."""
    if planted_q0 or "q_eff_low" not in r:
        return r["q_low"], r["q_high"]
    return r["q_eff_low"], r["q_eff_high"]


def points_of(rows, planted_q0=False) -> list:
    """thresholds.planted.DeltaPoint per row (bracket from :func:`_bracket`), by increasing delta."""
    return [DeltaPoint(r["delta"], *_bracket(r, planted_q0), r["s"], r["s_err"])
            for r in sorted(rows, key=lambda r: r["delta"])]


def summarize(rows, dims, gd=None, planted_q0=False) -> list[str]:
    """P(delta, d) per delta and d with the range from the q_c bracket and s +- 1 s.e., and the crossing
    per d by linear interpolation of sqrt(d) q_c / s - QUARTILE in delta (thresholds.planted.crossing)."""
    points = points_of(rows, planted_q0)
    lines = ["| delta | q_c bracket | s(delta) | " + " | ".join(f"P at d = {d}" for d in dims) + " |",
             "|---|---|---|" + "---|" * len(dims)]
    for p in points:
        cells = []
        for d in dims:
            lo = success_probability(p.q_high, p.s - p.s_err, d)
            hi = success_probability(p.q_low, p.s + p.s_err, d)
            cell = f"{success_probability(p.q, p.s, d):.2f} [{lo:.2f}, {hi:.2f}]"
            if gd and (d, p.delta) in gd:
                k, n = gd[(d, p.delta)]
                cell += f"; GD {k}/{n} = {k / n:.2f}"
            cells.append(cell)
        lines.append(f"| {p.delta:g} | [{p.q_low:.4f}, {p.q_high:.4f}] | {p.s:.2f} +- {p.s_err:.2f} | "
                     + " | ".join(cells) + " |")
    lines += ["", "| d | predicted crossing delta_1/2 | range (q_c bracket, s +- 1 s.e.) |", "|---|---|---|"]
    for d in dims:
        c = crossing(points, d)
        lines.append(f"| {d} | {c.value:.2f} | [{c.low:.2f}, {c.high:.2f}] |")
    return lines


def conditional(rows, planted_rows, steps) -> list[str]:
    """P(success by ``steps`` | xi) of GD from a planted overlap xi (validation.planted_check: first step with
    hard fraction > 1/2 at or before ``steps``; those runs go on to the longer horizon T(d)) against eqs. (1)-(2) with
    the initial part of the effective overlap fixed: sqrt(d) q_eff = xi + zeta, zeta ~ N(0, s^2 - 1)
    (rho0 = 1), so P = Phi_bar((c - xi)/sigma) + Phi_bar((c + xi)/sigma), c = sqrt(d) q_c, sigma^2 = s^2 - 1."""
    from scipy.stats import norm
    by_delta = {r["delta"]: r for r in rows}
    xis = sorted({r["xi"] for r in planted_rows})
    lines = ["| d | delta | " + " | ".join(f"xi = {x:g}: GD / eq. (2)" for x in xis) + " |",
             "|---|---|" + "---|" * len(xis)]
    for d, delta in sorted({(r["d"], r["delta"]) for r in planted_rows}):
        if delta not in by_delta:
            continue
        r = by_delta[delta]
        c, sigma = math.sqrt(d) * math.sqrt(math.prod(_bracket(r))), math.sqrt(max(r["s"] ** 2 - 1, 1e-12))
        cells = []
        for x in xis:
            ks = [p["escape"] is not None and p["escape"] <= steps for p in planted_rows
                  if p["d"] == d and p["delta"] == delta and p["xi"] == x]
            pred = norm.sf((c - x) / sigma) + norm.sf((c + x) / sigma)
            cells.append(f"{sum(ks)}/{len(ks)} / {pred:.2f}" if ks else "-")
        lines.append(f"| {d} | {delta:g} | " + " | ".join(cells) + " |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--delta", default="5")
    ap.add_argument("--low", type=float, default=0.03)
    ap.add_argument("--high", type=float, default=0.2)
    ap.add_argument("--paths", type=int, default=80_000)
    ap.add_argument("--spread-paths", type=int, default=160_000)
    ap.add_argument("--tstar", type=int, default=50)
    ap.add_argument("--source-tol", type=float, default=0.0, help="The source basis of the planted runs "
                    "(thresholds.dmft eq. (6b); 0: every source); its rows go to a file of their own (_tol<value>).")
    ap.add_argument("--dims", default="200,400,800")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--gd", type=Path, nargs="+", help="With --summary: `thresholds validate` report.md files at the same horizon.")
    ap.add_argument("--plot", type=Path, help="With --summary: the crossing against d as a PNG.")
    ap.add_argument("--planted-q0", action="store_true", help="With --summary: the brackets of the planted q0 "
                    "instead of the effective overlaps of eq. (4).")
    ap.add_argument("--effective", action="store_true", help="Add the effective-overlap brackets (eq. (4)) to "
                    "the recorded rows that lack them (from the cached runs) and rewrite the file.")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / (f"predicted_{args.activation}_{args.link}_eta{args.eta:g}_T{args.steps}"
                  + (f"_tol{args.source_tol:g}" if args.source_tol else "") + ".jsonl")
    rows = records.read(path)
    dims = [int(v) for v in args.dims.split(",")]
    if args.effective:
        rows = [r if "q_eff_low" in r else effective(r) for r in rows]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        for r in rows:
            print(f"delta {r['delta']:g}: planted [{r['q_low']:.4f}, {r['q_high']:.4f}] -> effective "
                  f"[{r['q_eff_low']:.4f}, {r['q_eff_high']:.4f}] (G({r['t_map']}, 0) = {r['growth_t_map']:.3f})")
        return
    if args.summary:
        rates = {k: v for report in args.gd or [] for k, v in gd_rates(report).items()}
        print("\n".join(summarize(rows, dims, rates or None, args.planted_q0)))
        if args.plot:
            from thresholds.plots import finite_d_figure
            points = points_of(rows, args.planted_q0)
            pred = [(c.d, c.value, c.low, c.high) for c in (crossing(points, d) for d in dims) if c.found]
            sim = sorted((d, v, e) for report in args.gd or [] for d, (v, e) in gd_crossings(report).items())
            finite_d_figure(args.plot, pred, sim, title=f"{args.activation} / {args.link}, eta {args.eta:g}, m = 1, "
                            f"horizon {args.steps} steps")
        planted = OUT / f"{args.activation}_{args.link}_eta{args.eta:g}.jsonl"
        if planted.exists():
            print("\n" + "\n".join(conditional(rows, records.read(planted), args.steps)))
        return
    done = {r["delta"] for r in rows}
    for delta in [float(v) for v in args.delta.split(",")]:
        if delta in done:
            continue
        rec = predict(args.activation, args.link, args.eta, args.steps, delta, low=args.low, high=args.high,
                      paths=args.paths, spread_paths=args.spread_paths, tstar=args.tstar, source_tol=args.source_tol)
        records.append(path, rec)
        print(f"delta {delta:g}: q_c in [{rec['q_low']:.4f}, {rec['q_high']:.4f}], s = {rec['s']:.2f} +- "
              f"{rec['s_err']:.2f}", flush=True)


if __name__ == "__main__":
    main()

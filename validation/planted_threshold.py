"""Predicted finite-d success from the d = inf theory (thresholds.planted) against GD (m = 1).

For each delta: the critical planted overlap q_c(delta, T) by bisection with the planted DMFT, and the
spread s(delta) of the effective initial overlap from the pathwise DMFT; then eq. (2) of thresholds.planted
gives P(delta, d) at every d and eq. (3) the crossing.  One JSON line per delta in
validation/reports/planted/ (the DMFT runs are cached on disk, so an interrupted run resumes).

Run:  python -m validation.planted_threshold -a quad --eta 0.05 --steps 600 --delta 5,4,6 --low 0.05 --high 0.1
      python -m validation.planted_threshold -a quad --eta 0.05 --steps 600 --summary --dims 200,400,800
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from thresholds.planted import QUARTILE, critical_overlap, spread, success_probability
from thresholds.problem import Problem

OUT = Path(__file__).resolve().parent / "reports" / "planted"


def predict(activation, link, eta, steps, delta, *, low, high, paths, spread_paths, tstar):
    problem = Problem(activation, link, eta=eta, steps=steps)
    qc = critical_overlap(problem, delta, steps, low=low, high=high, paths=paths,
                          progress=lambda q, f: print(f"  delta {delta:g}: q0 = {q:.4f} -> hard fraction "
                                                      f"{f:.3f} at step {steps}", flush=True))
    s, s_err = spread(problem, delta, tstar=tstar, paths=spread_paths)
    return {"activation": activation, "link": link, "eta": eta, "steps": steps, "delta": float(delta),
            "paths": paths, "q_low": qc.low, "q_high": qc.high, "runs": qc.runs, "tstar": tstar,
            "s": s, "s_err": s_err, "spread_paths": spread_paths}


def summarize(rows, dims) -> list[str]:
    """P(delta, d) per delta and d with the range from the q_c bracket and s +- 1 s.e., and the crossing
    per d by linear interpolation of sqrt(d) q_c / s - QUARTILE in delta."""
    rows = sorted(rows, key=lambda r: r["delta"])
    lines = ["| delta | q_c bracket | s(delta) | " + " | ".join(f"P at d = {d}" for d in dims) + " |",
             "|---|---|---|" + "---|" * len(dims)]
    for r in rows:
        q = math.sqrt(r["q_low"] * r["q_high"])
        cells = []
        for d in dims:
            lo = success_probability(r["q_high"], r["s"] - r["s_err"], d)
            hi = success_probability(r["q_low"], r["s"] + r["s_err"], d)
            cells.append(f"{success_probability(q, r['s'], d):.2f} [{lo:.2f}, {hi:.2f}]")
        lines.append(f"| {r['delta']:g} | [{r['q_low']:.4f}, {r['q_high']:.4f}] | {r['s']:.2f} +- {r['s_err']:.2f} | "
                     + " | ".join(cells) + " |")
    lines += ["", "| d | predicted crossing delta_1/2 |", "|---|---|"]
    deltas = np.array([r["delta"] for r in rows])
    for d in dims:
        f = np.array([math.sqrt(d) * math.sqrt(r["q_low"] * r["q_high"]) / r["s"] - QUARTILE for r in rows])
        cross = [deltas[i] - f[i] * (deltas[i + 1] - deltas[i]) / (f[i + 1] - f[i])
                 for i in range(len(f) - 1) if f[i] > 0 >= f[i + 1]]
        lines.append(f"| {d} | " + (f"{cross[0]:.2f}" if cross else "outside the deltas computed") + " |")
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
    ap.add_argument("--dims", default="200,400,800")
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"predicted_{args.activation}_{args.link}_eta{args.eta:g}_T{args.steps}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    dims = [int(v) for v in args.dims.split(",")]
    if args.summary:
        print("\n".join(summarize(rows, dims)))
        return
    done = {r["delta"] for r in rows}
    for delta in [float(v) for v in args.delta.split(",")]:
        if delta in done:
            continue
        rec = predict(args.activation, args.link, args.eta, args.steps, delta, low=args.low, high=args.high,
                      paths=args.paths, spread_paths=args.spread_paths, tstar=args.tstar)
        with open(path, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(f"delta {delta:g}: q_c in [{rec['q_low']:.4f}, {rec['q_high']:.4f}], s = {rec['s']:.2f} +- "
              f"{rec['s_err']:.2f}", flush=True)


if __name__ == "__main__":
    main()

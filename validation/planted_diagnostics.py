"""Two checks of the finite-d predictor's d = inf inputs (thresholds.planted), one JSON line per run in
validation/reports/planted/diagnostics/.

* ``paths``: the hard fraction of one planted DMFT run per (paths, seed), at several steps, to separate the
  Monte Carlo noise of the planted DMFT (its estimate of E[g_H psi] kicks the hard overlap like the sample
  forcing of n = paths samples) from a bias in the number of paths;
* ``spread``: s(t)^2 = V(t) / G(t, 0)^2 of eq. (1) of thresholds.planted at t = 10 ... T, to see how much the
  forcing after t* = 50 would add;
* ``early``: the same spread at finite d, from the forced tangent of GD (validation.tangent_check, eq. (2))
  over ``--trials`` data sets: sd of A(t) = sqrt(d) q_t and the median growth G(t, 0), at t = 25 and 50.

Run:  python -m validation.planted_diagnostics paths -a gelu --eta 0.1 --delta 12 --q0 0.03 --runs 40000:0,80000:0,80000:1,80000:2,160000:0,320000:0
      python -m validation.planted_diagnostics spread -a gelu --eta 0.1 --delta 12 --steps 100 --paths 80000
      python -m validation.planted_diagnostics early -a gelu --eta 0.1 --delta 12 --d 400 --trials 60
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from thresholds.planted import hard_fraction, spread
from thresholds.problem import Problem
from validation import records

OUT = Path(__file__).resolve().parent / "reports" / "planted" / "diagnostics"
STEPS = (50, 100, 200, 300, 400, 500, 600)
TIMES = (10, 25, 50, 75, 100, 125, 150, 200)


def paths_run(problem, delta, q0, paths, seed):
    t0 = time.time()
    frac = hard_fraction(problem, delta, q0, problem.steps, paths=paths, seed=seed)
    return {"check": "paths", "activation": problem.activation, "link": problem.link, "eta": problem.eta,
            "steps": problem.steps, "delta": delta, "q0": q0, "paths": paths, "seed": seed,
            "hard_fraction": {str(t): float(frac[t]) for t in STEPS if t <= problem.steps},
            "seconds": time.time() - t0}


def spread_run(problem, delta, paths, replicas=4):
    t0 = time.time()
    law = spread(problem, delta, tstar=problem.steps, paths=paths, replicas=replicas, law=True)[2]
    ts = [t for t in TIMES if t <= problem.steps]
    return {"check": "spread", "activation": problem.activation, "link": problem.link, "eta": problem.eta,
            "steps": problem.steps, "delta": delta, "paths": paths, "replicas": replicas,
            "s2": {str(t): float(law.variance[t] / law.growth[t] ** 2) for t in ts},
            "growth": {str(t): [float(law.growth[t]), float(law.growth_err[t])] for t in ts},
            "variance": {str(t): [float(law.variance[t]), float(law.variance_err[t])] for t in ts},
            "seconds": time.time() - t0}


def early_run(activation, link, eta, delta, d, trials, first_seed=1000):
    """sd of the forced amplitude A(t) and median G(t, 0) over finite-d trials (module docstring)."""
    from validation.tangent_check import run
    A, G = {25: [], 50: []}, {25: [], 50: []}
    for seed in range(first_seed, first_seed + trials):
        try:
            r = run(1, delta, seed, activation, link, d=d, eta=eta, steps=50)
        except FloatingPointError:
            continue
        for t in A:
            A[t].append(r.forced[t, 0] * math.sqrt(d))
            G[t].append(math.exp(r.lam[t]))
    out = {"check": "early", "activation": activation, "link": link, "eta": eta, "delta": delta, "d": d,
           "trials": len(A[50]), "first_seed": first_seed}
    for t in A:
        sd, g = float(np.std(A[t], ddof=1)), float(np.median(G[t]))
        out[f"t{t}"] = {"sd_A": sd, "median_G": g, "s": sd / g}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["paths", "spread", "early"])
    ap.add_argument("-a", "--activation", default="gelu")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--delta", type=float, default=12.0)
    ap.add_argument("--steps", type=int, default=None, help="600 for paths, 100 for spread")
    ap.add_argument("--q0", type=float, default=0.03)
    ap.add_argument("--runs", default="80000:0", help="paths:seed pairs, comma-separated (paths)")
    ap.add_argument("--paths", type=int, default=80_000, help="all replicas together (spread)")
    ap.add_argument("--d", type=int, default=400, help="dimension (early)")
    ap.add_argument("--trials", type=int, default=60, help="data sets (early)")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.check}.jsonl"
    steps = args.steps or (600 if args.check == "paths" else 100)
    problem = Problem(args.activation, args.link, eta=args.eta, steps=steps)
    if args.check == "early":
        rec = early_run(args.activation, args.link, args.eta, args.delta, args.d, args.trials)
        records.append(path, rec)
        print(rec, flush=True)
        return
    if args.check == "spread":
        rec = spread_run(problem, args.delta, args.paths)
        records.append(path, rec)
        print(rec["s2"], flush=True)
        return
    for item in args.runs.split(","):
        paths, seed = (int(v) for v in item.split(":"))
        rec = paths_run(problem, args.delta, args.q0, paths, seed)
        records.append(path, rec)
        print(paths, seed, rec["hard_fraction"], flush=True)


if __name__ == "__main__":
    main()

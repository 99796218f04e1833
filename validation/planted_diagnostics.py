"""Two checks of the finite-d predictor's d = inf inputs (thresholds.planted), one JSON line per run in
validation/reports/planted/diagnostics/.

* ``paths``: the hard fraction of one planted DMFT run per (paths, seed), at several steps, to separate the
  Monte Carlo noise of the planted DMFT (its estimate of E[g_H psi] kicks the hard overlap like the sample
  forcing of n = paths samples) from a bias in the number of paths;
* ``spread``: s(t)^2 = V(t) / G(t, 0)^2 of eq. (1) of thresholds.planted at t = 10 ... T, to see how much the
  forcing after t* = 50 would add;
* ``early``: the same spread at finite d, from the forced tangent of GD (validation.tangent_check, eq. (2))
  over ``--trials`` data sets: sd of A(t) = sqrt(d) q_t and the median growth G(t, 0), at t = 25 and 50;
* ``growth``: per data set (one JSON line each, resumable), along the whole horizon: the finite-d linearized
  log-growth Lambda_d(t) of the hard component (validation.tangent_check), the forced amplitude
  sqrt(d) P_H W_t, the unrestricted run's sqrt(d) q_t and hard fraction, and its success (hard fraction > 1/2
  at the horizon).  The planted model (thresholds.planted) replaces Lambda_d(t) by the d = inf log G(t, 0) of
  every data set alike; this check measures how much Lambda_d(t) varies between data sets and whether that
  variation decides which runs escape.

Run:  python -m validation.planted_diagnostics paths -a gelu --eta 0.1 --delta 12 --q0 0.03 --runs 40000:0,80000:0,80000:1,80000:2,160000:0,320000:0
      python -m validation.planted_diagnostics spread -a gelu --eta 0.1 --delta 12 --steps 100 --paths 80000
      python -m validation.planted_diagnostics early -a gelu --eta 0.1 --delta 12 --d 400 --trials 60
      python -m validation.planted_diagnostics growth -a gelu --eta 0.1 --delta 12 --d 400 --trials 30 --steps 600
      python -m validation.planted_diagnostics growth --summary
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
from validation.early_growth_check import auc

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


GRID = 25  # the growth check keeps every GRID-th step


def growth_run(activation, link, eta, delta, d, steps, seed):
    """One data set of the growth check (module docstring), or None when the unrestricted run diverges."""
    from validation.tangent_check import run
    t0 = time.time()
    try:
        r = run(1, delta, seed, activation, link, d=d, eta=eta, steps=steps)
    except FloatingPointError:
        return None
    ts = list(range(0, steps + 1, GRID)) + ([steps] if steps % GRID else [])
    root = math.sqrt(d)
    return {"check": "growth", "activation": activation, "link": link, "eta": eta, "delta": delta, "d": d,
            "steps": steps, "seed": seed, "t": ts, "lam": [float(r.lam[t]) for t in ts],
            "forced": [float(r.forced[t, 0] * root) for t in ts], "hard": [float(r.hard[t, 0] * root) for t in ts],
            "frac": [float(r.frac[t]) for t in ts], "success": bool(r.frac[steps] > 0.5),
            "seconds": time.time() - t0}


def growth_runs(path, activation, link, eta, delta, d, steps, trials, first_seed=2000):
    """The growth check's data sets first_seed ... first_seed + trials - 1, skipping those already in ``path``."""
    done = {r["seed"] for r in records.read(path) if r.get("check") == "growth" and r["activation"] == activation
            and r["link"] == link and r["eta"] == eta and r["delta"] == delta and r["d"] == d
            and r["steps"] == steps}
    for seed in range(first_seed, first_seed + trials):
        if seed in done:
            continue
        rec = growth_run(activation, link, eta, delta, d, steps, seed)
        records.append(path, rec)
        if rec is not None:
            print(f"d {d} delta {delta:g} seed {seed}: Lambda(T) {rec['lam'][-1]:.2f} success {rec['success']} "
                  f"({rec['seconds']:.0f} s)", flush=True)


def growth_summary(rows, predicted) -> list[str]:
    """The growth check per (activation, delta, d): successes, the AUC of |A(t)| = sqrt(d) |q_t| of the
    unrestricted run at t = 0, 25, 50 for its success, and GD's threshold on the effective overlap
    |A(25)| / (sqrt(d) G(25, 0)) (largest failure, smallest success) next to the planted DMFT's q_c bracket
    (eq. (4) of thresholds.planted; ``predicted``: (activation, delta) -> its record, with G(25, 0))."""
    lines = ["| activation | delta | d | successes | AUC of A(0) / A(25) / A(50) | GD: largest failure, smallest "
             "success (q_eff at 25) | planted DMFT q_c |", "|---|---|---|---|---|---|---|"]
    for key in sorted({(r["activation"], r["delta"], r["d"]) for r in rows if r.get("check") == "growth"}):
        rs = [r for r in rows if r.get("check") == "growth" and (r["activation"], r["delta"], r["d"]) == key]
        t = rs[0]["t"]
        amp = np.abs([r["hard"] for r in rs])
        ok = np.array([r["success"] for r in rs])
        aucs = " / ".join(f"{auc(amp[:, t.index(s)], ok):.2f}" for s in (0, 25, 50))
        pred = predicted.get(key[:2])
        cells = "- | -"
        if pred:
            scale = pred["growth_t_map"] * math.sqrt(key[2])
            a25 = amp[:, t.index(pred["t_map"])] / scale
            fail = f"{a25[~ok].max():.4f}" if (~ok).any() else "-"
            win = f"{a25[ok].min():.4f}" if ok.any() else "-"
            cells = f"{fail}, {win} | [{pred['q_eff_low']:.4f}, {pred['q_eff_high']:.4f}]"
        lines.append(f"| {key[0]} | {key[1]:g} | {key[2]} | {int(ok.sum())}/{len(rs)} | {aucs} | {cells} |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["paths", "spread", "early", "growth"])
    ap.add_argument("-a", "--activation", default="gelu")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--delta", type=float, default=12.0)
    ap.add_argument("--steps", type=int, default=None, help="600 for paths, 100 for spread")
    ap.add_argument("--q0", type=float, default=0.03)
    ap.add_argument("--runs", default="80000:0", help="paths:seed pairs, comma-separated (paths)")
    ap.add_argument("--paths", type=int, default=80_000, help="all replicas together (spread)")
    ap.add_argument("--d", type=int, default=400, help="dimension (early)")
    ap.add_argument("--trials", type=int, default=60, help="data sets (early, growth)")
    ap.add_argument("--summary", action="store_true", help="growth: the table of the stored data sets")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.check}.jsonl"
    steps = args.steps or (600 if args.check == "paths" else 100)
    problem = Problem(args.activation, args.link, eta=args.eta, steps=steps)
    if args.check == "growth" and args.summary:
        predicted = {}
        for f in sorted(OUT.parent.glob("predicted_*_T600.jsonl")):
            predicted.update({(r["activation"], r["delta"]): r for r in records.read(f) if "growth_t_map" in r})
        print("\n".join(growth_summary(records.read(path), predicted)))
        return
    if args.check == "growth":
        growth_runs(path, args.activation, args.link, args.eta, args.delta, args.d, args.steps or 600, args.trials)
        return
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

"""A finite-d prediction of the GD success rate at m = 1 from the time-dependent Hessian (experiment).

For a setup, a sample ratio delta and a dimension d, with n = delta d:

1. The first-phase law at the user's n: R independent data sets (seeds), each of n samples, and GD
   restricted to the complement of theta_* on each for the simulation's horizon
   T(d) = ceil((t0 + c log d)/eta) (validation.threshold.horizon), snapshots of u = X theta at the
   steps 0, 1, 2, 3, 4, 6, 8, 11, 16, 23, ... (ratio sqrt 2) and T(d).  At step 0 the law is exact
   (u independent of g).
2. The Hessian's hard outlier on each snapshot: the d = inf spectral equations (thresholds.hessian,
   scalar engine) on the empirical law of those n samples.  On the n samples of one data set these
   equations reproduce the d x d matrix's lowest eigenvalue and the overlap of its eigenvector with
   theta_*, including the competition with the modes localized on the most negative G_i
   (validation/t0_check.py, validation/reports/t0/): that is how the prediction depends on n.
3. Growth of the hard component (adiabatic linearization along the outlier eigenvector): per data set,

       L(T) = int_0^T log(1 - eta z*(t)) dt,  z*(t) < 0 where an outlier exists, 0 elsewhere,      (1)

   by the trapezoid rule on the snapshot steps.  The initial projection of theta_0 on the outlier
   eigenvector is xi rho0/sqrt(d), xi ~ N(0, 1) (theta_0 is isotropic), of which a fraction
   sqrt(rho2(0)) lies along the eigenvector at t = 0 (rho2(t): its squared overlap with theta_* at t);
   grown by e^{L(t)} and read out along theta_* at t, the hard component is xi rho0 A(t) / sqrt(d) with
   A(t) = sqrt(rho2(0) rho2(t)) e^{L(t)} where an outlier exists.  GD is taken to succeed when its
   largest value reaches the scale at which the hard fraction of ||theta||^2 passes 1/2,
   sqrt(N_T / 2) (N_T: ||theta||^2 at the horizon, the mean of u^2):

       P(success | data set) = 2 Phi_bar( sqrt(d N_T / 2) / (rho0 max_t A(t)) ),                  (2)

   and P(delta, d) is the mean of (2) over the R data sets (s.e. over them).  No constant is fitted.

Approximations: the eigenvector is followed adiabatically (its rotation between snapshots is
ignored); the nonlinear end of the escape is taken to complete once the linear growth reaches O(1);
the feedback of the hard component on the first phase is ignored until then.

Run:  python -m validation.finite_d_predict -a quad --eta 0.05 --dims 200 --delta 4,5,6 --replicas 4
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy.special import ndtr

from thresholds.dmft import DMFTSetup
from thresholds.hessian import spectra_of_law
from thresholds.problem import Problem
from validation.gd_law import first_phase_law
from validation.threshold import horizon

OUT = Path(__file__).resolve().parent / "reports" / "finite_d"


def snapshot_steps(T: int) -> list[int]:
    """0, 1, 2, 3, 4, 6, 8, 11, 16, ... (ratio sqrt 2, rounded) and T."""
    out, x = {0, T}, 1.0
    while x < T:
        out.add(int(round(x)))
        x *= math.sqrt(2)
    return sorted(s for s in out if s <= T)


def predict(activation, link, delta, d, eta, *, replicas=8, seed=0, t0=50.0, c=10.0, rho0=1.0, **problem):
    """P(success) at (delta, d) by eq. (2), with its s.e. over the data sets, and the per-step record."""
    T = horizon(d, eta, t0, c)
    steps = snapshot_steps(T)
    setup = DMFTSetup.from_problem(Problem(activation, link, eta=eta, steps=T, rho0=rho0, **problem), delta,
                                   replicas=replicas, seed=seed)
    law = first_phase_law(setup, d, steps)
    spectra = spectra_of_law(setup, law, outliers="all")
    z = np.array([spectra[s].hard_z for s in steps], dtype=float)          # (steps, replicas)
    rate = np.where(np.isfinite(z) & (z < 0), np.log1p(-eta * np.nan_to_num(z, nan=0.0)), 0.0)
    widths = np.diff(steps)[:, None]
    L = np.concatenate([np.zeros((1, z.shape[1])), np.cumsum(0.5 * widths * (rate[1:] + rate[:-1]), axis=0)])
    rho2 = np.array([next((o["overlap2"] for o in spectra[s].outliers if o["side"] == "left" and o["z"] < 0),
                          math.nan) for s in steps])                     # mean over the replicas with one
    # log-amplitude of the hard component along the outlier eigenvector: in through sqrt(rho2(0)), grown by
    # e^{L(t)}, out through sqrt(rho2(t)) (module docstring, adiabatic approximation)
    with np.errstate(invalid="ignore", divide="ignore"):
        logA = L + 0.5 * np.log(rho2[0]) + 0.5 * np.log(rho2)[:, None]
    logA = np.where(np.isfinite(logA), logA, -np.inf)
    best = logA.max(axis=0)                                              # per data set
    norm_T = np.array([np.mean(r.u ** 2) for r in law.steps[T]])
    p = 2 * (1 - ndtr(np.sqrt(d * norm_T / (2 * rho0 ** 2)) * np.exp(-best)))
    return {"activation": activation, "link": link, "eta": eta, "delta": float(delta), "d": int(d), "T": T,
            "replicas": replicas, "p": float(np.mean(p)), "p_se": float(np.std(p, ddof=1) / math.sqrt(p.size)),
            "L_T": float(np.mean(L[-1])), "L_T_se": float(np.std(L[-1], ddof=1) / math.sqrt(p.size)),
            "log_amplitude_max": [float(v) for v in best], "rho2": [None if not math.isfinite(v) else float(v) for v in rho2],
            "norm_T": float(norm_T.mean()), "steps": steps,
            "z_mean": [float(np.nanmean(row)) if np.isfinite(row).any() else None for row in z],
            "with_outlier": [int(np.sum(np.isfinite(row) & (row < 0))) for row in z],
            "left_edge": [spectra[s].left_edge for s in steps]}


def setup_arguments(ap, *, dims: str, delta: str):
    """The options the m = 1 experiments share: activation, link, step size, dimensions, sample ratios."""
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--dims", default=dims)
    ap.add_argument("--delta", default=delta)
    return ap


def main(argv=None):
    ap = setup_arguments(argparse.ArgumentParser(), dims="200,400,800", delta="4,4.5,5,5.5,6,6.5,7")
    ap.add_argument("--replicas", type=int, default=8)
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.activation}_{args.link}_eta{args.eta:g}.jsonl"
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["d"], r["delta"], r["replicas"]))
    for d in [int(v) for v in args.dims.split(",")]:
        for delta in [float(v) for v in args.delta.split(",")]:
            if (d, float(delta), args.replicas) in done:
                continue
            row = predict(args.activation, args.link, delta, d, args.eta, replicas=args.replicas)
            with open(path, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"d = {d}, delta = {delta:g}: P = {row['p']:.3f} +- {row['p_se']:.3f}, L(T) = {row['L_T']:.2f}, "
                  f"max log A = {np.median(row['log_amplitude_max']):.2f} (median), outlier in "
                  f"{row['with_outlier'][:8]}... of {args.replicas}", flush=True)


if __name__ == "__main__":
    main()

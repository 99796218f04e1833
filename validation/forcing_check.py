"""What moves the hard component first: the initial overlap or the sample forcing?  (m = 1)

For each trial (the data, initialization and seed of ``validation.early_growth_check``), the restricted
first phase and its forced tangent (``validation.tangent_check``, eq. (2)): the hard component of the
unrestricted run is, to first order,

    q_t = G(t, 0) q_0 + eta sum_{s<t} G(t, s+1) F_s,      F_s = (1/n) sum_i z_i psi_i^s,              (1)

with G the linear propagator of the hard coordinate along the first phase (G(t, 0) = e^{Lambda(t)} of
``early_growth_check``) and F_s the hard component of the gradient, a sum of the samples' signs
z_i / |z_i| times terms that depend only on (|z_i|, x_perp) for an even link.  Both terms are of order
d^{-1/2}; in units of d^{-1/2}, A(t) = q_t sqrt(d) is the predicted amplitude and
A_0(t) = G(t, 0) xi its part from the initial overlap.  Per (d, delta) the summary gives

* how well the linear prediction follows the unrestricted run (correlation of A(t) with the unrestricted
  hard component at t = 10, 25);
* the typical size of the forced part against the part from the initial overlap,
  median |A(t) - A_0(t)| / median |A_0(t)|;
* how well |xi|, |A(t)| and max_{s <= t} |A(s)| rank the successes (AUC, 0.5: no information).

and, with ``--law``, the d = inf law of A(t) (thresholds.forcing, pathwise DMFT) next to the trials:
G(t, 0) against the median of A_0(t)/xi, and sqrt(V(t)) against the standard deviation of A(t).

Run:  python -m validation.forcing_check -a quad --eta 0.05 --dims 200,400 --delta 4,5,6 --trials 40
(resumable: one JSON line per trial in validation/reports/forcing/; ``--summary`` prints the table,
``--summary --law`` adds the d = inf comparison).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from validation.early_growth_check import auc
from validation import records
from validation.finite_d_predict import setup_arguments
from validation.tangent_check import run
from validation.threshold import horizon

OUT = Path(__file__).resolve().parent / "reports" / "forcing"
STEPS = (0, 5, 10, 25, 50, 100, 200)


def forcing_trial(activation, link, delta, d, eta, seed, rho0=1.0):
    """One trial's record (module docstring), None when the unrestricted run diverges."""
    T = horizon(d, eta)
    try:
        res = run(1, delta, seed, activation, link, d=d, eta=eta, steps=T, rho0=rho0)
    except FloatingPointError:
        return None
    sq = math.sqrt(d)
    A, H, lam = res.forced[:, 0] * sq, res.hard[:, 0] * sq, res.lam
    return {"activation": activation, "link": link, "delta": float(delta), "d": int(d), "eta": eta, "seed": seed,
            "T": T, "success": bool(res.frac[-1] > 0.5), "xi": float(res.theta0[0, 0] * sq),
            "A": {str(s): float(A[s]) for s in STEPS}, "H": {str(s): float(H[s]) for s in STEPS},
            "A0": {str(s): float(res.theta0[0, 0] * sq * math.exp(lam[s])) for s in STEPS},
            "maxA": {str(s): float(np.abs(A[: s + 1]).max()) for s in STEPS}}


def summarize(rows) -> list[str]:
    lines = ["| d | delta | successes | corr(A, unrestricted) t = 10 / 25 | median abs(A - A0) / median abs(A0), t = 10 / 25 / 50 "
             "| AUC abs(xi) | AUC abs A(10) | AUC abs A(25) | AUC abs A(50) | AUC max abs A up to 100 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for d, delta in sorted({(r["d"], r["delta"]) for r in rows}):
        rs = [r for r in rows if r["d"] == d and r["delta"] == delta]
        ok = np.array([r["success"] for r in rs])

        def col(key, s):
            return np.array([r[key][str(s)] for r in rs])
        corr = [float(np.corrcoef(col("A", s), col("H", s))[0, 1]) for s in (10, 25)]
        share = [np.median(np.abs(col("A", s) - col("A0", s))) / np.median(np.abs(col("A0", s))) for s in (10, 25, 50)]
        aucs = [auc(np.abs([r["xi"] for r in rs]), ok)] + [auc(np.abs(col("A", s)), ok) for s in (10, 25, 50)]
        aucs.append(auc(col("maxA", 100), ok))
        lines.append(f"| {d} | {delta:g} | {int(ok.sum())} / {ok.size} | {corr[0]:.2f} / {corr[1]:.2f} | "
                     + " / ".join(f"{v:.2f}" for v in share) + " | " + " | ".join(f"{v:.2f}" for v in aucs) + " |")
    return lines


def law_table(rows, activation, link, eta, paths=160_000) -> list[str]:
    """d = inf growth G(t, 0) and sqrt(V(t)) (pathwise DMFT, 4 replicas) against the trials at each d."""
    from thresholds.dmft import DMFTSetup
    from thresholds.forcing import amplitude_law
    dims = sorted({r["d"] for r in rows})
    lines = ["| delta | t | G(t,0), d = inf | " + " | ".join(f"median A_0/xi, d = {d}" for d in dims)
             + " | sqrt V(t), d = inf | " + " | ".join(f"sd A(t), d = {d}" for d in dims) + " |",
             "|---|---|---|" + "---|" * len(dims) + "---|" + "---|" * len(dims)]
    steps = [s for s in STEPS if s > 0 and s <= 50]
    for delta in sorted({r["delta"] for r in rows}):
        law = amplitude_law(DMFTSetup(activation, link, delta, eta, max(steps), paths=paths, replicas=4,
                                      response="pathwise"))
        for t in steps:
            med, sd = [], []
            for d in dims:
                rs = [r for r in rows if r["d"] == d and r["delta"] == delta]
                med.append(float(np.median([r["A0"][str(t)] / r["xi"] for r in rs])))
                sd.append(float(np.std([r["A"][str(t)] for r in rs])))
            lines.append(f"| {delta:g} | {t} | {law.growth[t]:.2f} +- {law.growth_err[t]:.2f} | "
                         + " | ".join(f"{v:.2f}" for v in med)
                         + f" | {math.sqrt(law.variance[t]):.2f} +- {0.5 * law.variance_err[t] / math.sqrt(law.variance[t]):.2f} | "
                         + " | ".join(f"{v:.2f}" for v in sd) + " |")
    return lines


def main(argv=None):
    ap = setup_arguments(argparse.ArgumentParser(), dims="200,400", delta="4,5,6")
    records.trial_arguments(ap, 40)
    ap.add_argument("--law", action="store_true", help="With --summary: the d = inf law next to the trials.")
    args = ap.parse_args(argv)
    path, rows = records.experiment(OUT, args)
    if args.summary:
        print("\n".join(summarize(rows)))
        if args.law:
            print("\n" + "\n".join(law_table(rows, args.activation, args.link, args.eta)))
        return
    done = {(r["d"], r["delta"], r["seed"]) for r in rows}
    for d in [int(v) for v in args.dims.split(",")]:
        for delta in [float(v) for v in args.delta.split(",")]:
            for s in range(args.trials):
                seed = 7919 * d + 104729 * int(round(10 * delta)) + s   # the seeds of early_growth_check
                if (d, delta, seed) in done:
                    continue
                records.append(path, forcing_trial(args.activation, args.link, delta, d, args.eta, seed))
            records.print_block(path, summarize, d, delta)


if __name__ == "__main__":
    main()

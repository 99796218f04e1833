"""Does the linear growth of the hard component, from t = 0, decide which GD runs succeed? (m = 1)

For each trial (fresh data X, y = h(x_1), initialization theta_0 ~ N(0, rho0^2 I/d)):
* unrestricted GD for the simulation's horizon T(d) = ceil((t0 + c log d)/eta): success when the hard
  fraction theta_1^2/||theta||^2 exceeds 1/2 at T (validation.threshold's rule);
* the same GD restricted to the complement (theta_1 = 0: the first phase) and along it the exact
  linearization of the hard component (validation.tangent_check): V_0 = e_1, V_{t+1} = V_t +
  eta dG(theta_t)[V_t], Lambda(t) = log |e_1^T V_t|, so that a hard component q_0 = theta_0[1] grows
  to q_0 e^{Lambda(t)} while it is small;
* the predicted amplitude A = |q_0| e^{max_t Lambda(t)} against the O(1) scale sqrt(N_T / 2) at which
  the hard fraction reaches 1/2 (N_T = ||theta_T||^2 of the restricted run).  No constant is fitted:
  the report gives the fraction of trials that A >= sqrt(N_T/2) classifies correctly, and the step at
  which Lambda peaks (the window in which the growth happens).

Run:  python -m validation.early_growth_check -a quad --eta 0.05 --dims 200,400 --delta 4,5,6 --trials 40
(resumable: one JSON line per trial in validation/reports/early_growth/).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from validation.finite_d_predict import setup_arguments
from validation.tangent_check import run
from validation.threshold import horizon

OUT = Path(__file__).resolve().parent / "reports" / "early_growth"


def trial(activation, link, delta, d, eta, seed, rho0=1.0):
    """One trial's record (module docstring), None when unrestricted GD diverges."""
    T = horizon(d, eta)
    try:
        res = run(1, delta, seed, activation, link, d=d, eta=eta, steps=T, rho0=rho0)
    except FloatingPointError:
        return None
    lam, frac, q0, NT = res.lam, float(res.frac[-1]), float(res.theta0[0, 0]), res.norm2_restricted
    peak = int(np.argmax(lam))
    return {"activation": activation, "link": link, "delta": float(delta), "d": int(d), "eta": eta, "seed": seed,
            "T": T, "success": frac > 0.5, "hard_fraction": frac, "q0": q0, "lambda_max": float(lam[peak]),
            "peak_step": peak, "lambda_T": float(lam[-1]), "norm_T": NT,
            "lambda_at": {str(s): float(lam[s]) for s in (0, 4, 8, 16, 25, 50, 100, 200, 400, T) if s <= T},
            "predicted": bool(abs(q0) * math.exp(lam[peak]) >= math.sqrt(NT / 2))}


def auc(score, success) -> float:
    """P(score of a random success > score of a random failure) (ties count 1/2; nan without both)."""
    score, success = np.asarray(score, float), np.asarray(success, bool)
    a, b = score[success], score[~success]
    if a.size == 0 or b.size == 0:
        return math.nan
    return float(((a[:, None] > b[None, :]).sum() + 0.5 * (a[:, None] == b[None, :]).sum()) / (a.size * b.size))


def summarize(rows) -> list[str]:
    """The report's table: per (d, delta) the success rate, how well the initial overlap |xi| = |q_0| sqrt(d)
    and the linear growth rank the successes (AUC), the |xi| above which a run succeeds if |xi| alone
    decided (xi_c = Phi_bar^{-1}(P/2)), the linear growth that xi_c would need to reach sqrt(N_T/2),
    and the exact linearization's own growth."""
    from scipy.special import ndtri
    from validation.threshold import wilson
    lines = ["| d | delta | successes | Wilson 95% | AUC of abs(xi) | AUC of Lambda(25) | AUC of log abs(xi) + Lambda_max "
             "| xi_c | growth needed log(sqrt(d N_T/2)/xi_c) | median Lambda(25) | median Lambda_max (step) "
             "| rule abs(q0) e^Lambda_max >= sqrt(N_T/2) right |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d, delta in sorted({(r["d"], r["delta"]) for r in rows}):
        rs = [r for r in rows if r["d"] == d and r["delta"] == delta]
        ok = np.array([r["success"] for r in rs])
        xi = np.array([abs(r["q0"]) * math.sqrt(d) for r in rs])
        l25 = np.array([r["lambda_at"]["25"] for r in rs])
        lmax = np.array([r["lambda_max"] for r in rs])
        NT = float(np.mean([r["norm_T"] for r in rs]))
        P = ok.mean()
        lo, hi = wilson(int(ok.sum()), ok.size)
        xc = float(-ndtri(P / 2)) if 0 < P < 1 else math.nan
        need = math.log(math.sqrt(d * NT / 2) / xc) if xc > 0 else math.nan
        right = sum(r["success"] == r["predicted"] for r in rs)
        lines.append(f"| {d} | {delta:g} | {int(ok.sum())} / {ok.size} | [{lo:.2f}, {hi:.2f}] | {auc(xi, ok):.2f} | "
                     f"{auc(l25, ok):.2f} | {auc(np.log(xi) + lmax, ok):.2f} | {xc:.2f} | {need:.2f} | "
                     f"{np.median(l25):.2f} | {np.median(lmax):.2f} ({np.median([r['peak_step'] for r in rs]):.0f}) | "
                     f"{right} / {len(rs)} |")
    return lines


def main(argv=None):
    ap = setup_arguments(argparse.ArgumentParser(), dims="200,400", delta="4,5,6")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--summary", action="store_true", help="Only print the summary table of the stored trials.")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.activation}_{args.link}_eta{args.eta:g}.jsonl"
    if args.summary:
        print("\n".join(summarize([json.loads(l) for l in path.read_text().splitlines()])))
        return
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["d"], r["delta"], r["seed"]))
    for d in [int(v) for v in args.dims.split(",")]:
        for delta in [float(v) for v in args.delta.split(",")]:
            for s in range(args.trials):
                seed = 7919 * d + 104729 * int(round(10 * delta)) + s
                if (d, delta, seed) in done:
                    continue
                rec = trial(args.activation, args.link, delta, d, args.eta, seed)
                if rec is None:
                    continue
                with open(path, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
            rows = [json.loads(l) for l in path.read_text().splitlines()]
            rows = [r for r in rows if r["d"] == d and r["delta"] == delta]
            ok = sum(r["success"] for r in rows)
            agree = sum(r["success"] == r["predicted"] for r in rows)
            print(f"d = {d}, delta = {delta:g}: {ok}/{len(rows)} succeed, linear-growth rule agrees on {agree}, "
                  f"median peak step {np.median([r['peak_step'] for r in rows]):.0f}, "
                  f"median Lambda_max {np.median([r['lambda_max'] for r in rows]):.2f}", flush=True)


if __name__ == "__main__":
    main()

"""Is finite-d success a lottery on the initial hard overlap?  GD from a planted overlap (m = 1).

At initialization the hard overlap of theta_0 ~ N(0, rho0^2 I/d) is q_0 = xi rho0 / sqrt(d), xi ~ N(0, 1).
Each trial here runs the simulation of ``validation.threshold`` (fresh data, unrestricted GD for the
horizon T(d) = ceil((t0 + c log d)/eta), success when the hard fraction exceeds 1/2 at T) from an
initialization whose hard component is set to q_0 = xi rho0 / sqrt(d) for a given xi (the other d - 1
coordinates drawn as usual).  So, per (d, delta):

* P(success | xi) on a grid of xi: a step from 0 to 1 would mean that the initial overlap alone decides;
  its width measures how much the data set and the other coordinates decide.
* xi_50, where a logistic fit in log xi crosses 1/2, and q_50 = xi_50 rho0 / sqrt(d).  If GD escapes from
  a basin of the d = inf dynamics, the escape from a planted overlap q_0 depends on q_0 and not on d
  (thresholds.dmft with ``planted``: the d = inf law of the same start), and q_50 is the same at every d.
* The lottery prediction P_lot = E_xi[P(success | |xi|)], xi ~ N(0, 1), by the trapezoid rule on the
  grid (P(success | xi) held at its end values outside it): by construction this is the success rate of
  the unplanted simulation, which checks the grid.

Run:  python -m validation.planted_check -a quad --eta 0.05 --dims 200,400,800 --delta 4,5,6 --trials 16
(resumable: one JSON line per trial in validation/reports/planted/; ``--summary`` prints the tables).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from validation import records
from validation.finite_d_predict import setup_arguments
from validation.threshold import escape_time, horizon, trial

OUT = Path(__file__).resolve().parent / "reports" / "planted"
XI = "0.25,0.5,0.75,1,1.5,2,3"


def planted_trial(activation, link, delta, d, eta, xi, seed, rho0=1.0):
    """One trial from the planted hard overlap xi rho0 / sqrt(d) (module docstring); None if GD diverges."""
    from thresholds.errors import DivergenceError
    T = horizon(d, eta)
    try:
        frac, res = trial(activation, link, delta, d, eta, T, seed, rho0=rho0, planted=xi * rho0 / math.sqrt(d))
    except DivergenceError:
        return None
    return {"activation": activation, "link": link, "delta": float(delta), "d": int(d), "eta": eta, "xi": float(xi),
            "seed": int(seed), "T": T, "success": frac > 0.5, "hard_fraction": frac,
            "escape": escape_time(res.cos2)}


def logistic_mid(xs, k, n):
    """x where a logistic fit of k/n successes against log x crosses 1/2 (maximum likelihood; nan when the
    data do not bracket 1/2)."""
    from scipy.optimize import minimize
    lx, k, n = np.log(np.asarray(xs, float)), np.asarray(k, float), np.asarray(n, float)
    if k.sum() == 0 or k.sum() == n.sum() or np.unique(lx).size < 2:
        return math.nan

    def nll(p):
        z = np.clip(p[1] * (lx - p[0]), -30, 30)
        return float(np.sum(n * np.logaddexp(0, z) - k * z))
    res = minimize(nll, [float(np.median(lx)), 2.0], method="Nelder-Mead")
    mid = float(res.x[0])
    return math.exp(mid) if lx.min() - 1 <= mid <= lx.max() + 1 else math.nan


def lottery(xs, rates) -> float:
    """E[P(success | |xi|)] over xi ~ N(0, 1) by the trapezoid rule on a fine grid of |xi| (P interpolated
    linearly on the measured grid, held at the end values outside it)."""
    from scipy.stats import norm
    grid = np.linspace(0.0, 6.0, 2401)
    p = np.interp(grid, xs, rates)
    dens = 2 * norm.pdf(grid)
    return float(np.sum(0.5 * (p[1:] * dens[1:] + p[:-1] * dens[:-1]) * np.diff(grid)))


def summarize(rows) -> list[str]:
    """Per (d, delta): P(success | xi) on the grid, xi_50, q_50 = xi_50 / sqrt(d) and the lottery rate."""
    xis = sorted({r["xi"] for r in rows})
    lines = ["| d | delta | " + " | ".join(f"xi = {x:g}" for x in xis) + " | xi_50 | q_50 = xi_50/sqrt(d) | P_lot |",
             "|---|---|" + "---|" * len(xis) + "---|---|---|"]
    for d, delta in sorted({(r["d"], r["delta"]) for r in rows}):
        rs = [r for r in rows if r["d"] == d and r["delta"] == delta]
        k = [sum(r["success"] for r in rs if r["xi"] == x) for x in xis]
        n = [sum(1 for r in rs if r["xi"] == x) for x in xis]
        have = [i for i in range(len(xis)) if n[i]]
        mid = logistic_mid([xis[i] for i in have], [k[i] for i in have], [n[i] for i in have])
        cells = " | ".join(f"{k[i]}/{n[i]}" if n[i] else "-" for i in range(len(xis)))
        plot = lottery([xis[i] for i in have], [k[i] / n[i] for i in have]) if have else math.nan
        lines.append(f"| {d} | {delta:g} | {cells} | {mid:.2f} | {mid / math.sqrt(d):.4f} | {plot:.2f} |")
    return lines


def main(argv=None):
    ap = setup_arguments(argparse.ArgumentParser(), dims="200,400,800", delta="4,5,6")
    ap.add_argument("--xi", default=XI, help="Planted overlaps xi = q_0 sqrt(d) / rho0 (comma list).")
    records.trial_arguments(ap, 16)
    args = ap.parse_args(argv)
    path, rows = records.experiment(OUT, args)
    if args.summary:
        print("\n".join(summarize(rows)))
        return
    done = {(r["d"], r["delta"], r["xi"], r["seed"]) for r in rows}
    for d in [int(v) for v in args.dims.split(",")]:
        for delta in [float(v) for v in args.delta.split(",")]:
            for xi in [float(v) for v in args.xi.split(",")]:
                for j in range(args.trials):
                    seed = int(np.random.SeedSequence([17, d, int(round(1000 * delta)), int(round(1000 * xi)), j])
                               .generate_state(1)[0])
                    if (d, delta, xi, seed) in done:
                        continue
                    records.append(path, planted_trial(args.activation, args.link, delta, d, args.eta, xi, seed))
            records.print_block(path, summarize, d, delta)


if __name__ == "__main__":
    main()

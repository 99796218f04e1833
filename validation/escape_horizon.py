"""The escape of thresholds.escape at the simulation's own horizon: the linearized growth through the first phase
against sqrt(d) at step T, with no credit for an outlier still alive at T.

thresholds.escape eq. (3) counts an outlier alive at the horizon as escape at every d (the run has no end), so its
finite-d value cannot fall below delta_NN.  GD's crossings are measured at a fixed horizon of T steps, and where the
outlier is weak (quad, m = 8: z* about -0.01 near delta_NN) it grows by far less than sqrt(d) within T.  The
horizon rule asks, per d, for the smallest delta with

    L(T) >= log sqrt(d),   L of thresholds.escape eq. (1) at the last checkpoint,                    (1)

the O(1) constant in front of d^{-1/2} set to 1 as in eq. (2) there.  Each delta is one ``evaluate`` of the
default law (outliers located at every checkpoint), appended to a JSON-lines file (a delta already there is
skipped: the run resumes), and the crossing of eq. (1) per d is thresholds.crossing.first_crossing over the
deltas done.

Run (the record of validation/reports/planted/width section 10c):
      python -m validation.escape_horizon -a quad --eta 0.05 --steps 600 --m 8 --delta 3,3.5,4,4.5,2.5
      --dims 200,800 --out validation/reports/nn/escape_horizon_quad_m8.jsonl
"""

from __future__ import annotations

import math
import time

import click
import numpy as np

from thresholds.crossing import first_crossing
from thresholds.escape import growth
from thresholds.evaluation import evaluate
from thresholds.nn import NNSetup
from thresholds.problem import Problem
from validation.records import extend, number_list, per_delta_options, read_rows


def record(setup: NNSetup, delta: float) -> dict:
    """One delta: L(t) of thresholds.escape eq. (1) per checkpoint (mean and s.e. over the replicas), the
    per-replica lowest negative hard outliers and the indicator at the horizon."""
    t0 = time.time()
    ev = evaluate(setup, delta, outliers="all")
    steps, L, se = growth(ev, setup.eta)
    return {"delta": float(delta), "steps": [int(s) for s in steps], "log_growth": [float(v) for v in L],
            "log_growth_err": [float(v) for v in se],
            "hard_z": [[None if not np.isfinite(z) else float(z) for z in row] for row in ev.hard_z],
            "indicator": float(ev.indicator[-1]), "indicator_err": float(ev.indicator_err[-1]),
            "seconds": time.time() - t0}


def horizon_crossing(rows: list, d: int):
    """Eq. (1) at one d over the recorded deltas: thresholds.crossing.first_crossing of L(T) - log sqrt(d)."""
    target = 0.5 * math.log(d)
    vals = [(r["delta"], r["log_growth"][-1] - target, r["log_growth_err"][-1])
            for r in sorted(rows, key=lambda r: r["delta"])]
    return first_crossing(vals)


@click.command()
@per_delta_options
@click.option("--dims", default="200,800", show_default=True)
def main(activation, link, eta, steps, m, deltas, dims, out):
    deltas, dims = number_list(deltas, float, "--delta"), number_list(dims, int, "--dims")
    setup = NNSetup.from_problem(Problem(activation, link, eta=eta, steps=steps, m=m), law="dmft")
    rows = extend(out, read_rows(out), deltas, lambda delta: record(setup, delta),
                  lambda row: print(f"delta {row['delta']:g}: L(T) = {row['log_growth'][-1]:.3f} +- "
                                    f"{row['log_growth_err'][-1]:.3f}, indicator {row['indicator']:+.4f} "
                                    f"({row['seconds']:.0f} s)", flush=True))
    for d in dims:
        c = horizon_crossing(rows, d)
        text = f"{c.value:.3f} [{c.low:.3f}, {c.high:.3f}]" if c.found else "not in the deltas done"
        print(f"d = {d}: L(T) = log sqrt(d) = {0.5 * math.log(d):.2f} at delta {text}")


if __name__ == "__main__":
    main()

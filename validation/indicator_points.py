"""The Hessian indicator I_t (thresholds.evaluation eq. (1)) and the lowest hard outliers z* (eq. (2)) of the default
DMFT law at chosen deltas: a bracket of delta_NN(T) where the search of ``thresholds nn`` does not end in one
sitting.

Each delta is one ``evaluate`` (the DMFT run, cached by thresholds.dmft, then the Hessian at every checkpoint),
appended to a JSON-lines file as it ends (a delta already there is skipped: the run resumes).  At the end the
deltas done are printed in order with the sign of I_T: delta_NN(T) lies between the largest delta with I_T <= 0
below the smallest with I_T > 0, as thresholds.search brackets it; where a replica ends in a period-2 orbit
(thresholds.dmft eq. (10)) I_T is taken on the replicas that settle, as the evaluation states it
(thresholds.evaluation eq. (3); records made before it hold the mean over every replica, and ``settled`` recomputes
it from the per-replica values).  quad, m = 16, 600 steps: about
4 minutes (delta 1) for the DMFT and 18 (delta 2) for the Hessian at the 16 checkpoints on one core (the search
also needs line-fit points, the transient's short runs and a path check with twice the paths: hours).

Run (validation/reports/planted/width section 10, m = 16):
      python -m validation.indicator_points -a quad --eta 0.05 --steps 600 --m 16
      --delta 1.9643226539867935,1.6987237174499976 --out validation/reports/nn/indicator_points_quad_m16.jsonl
"""

from __future__ import annotations

import time

import click

from thresholds.evaluation import evaluate
from thresholds.nn import NNSetup
from thresholds.problem import Problem
from validation.records import extend, number_list, per_delta_options, read_rows


def record(setup: NNSetup, delta: float, final_only: bool = False) -> dict:
    """One delta: the indicator, its s.e. and per-replica values, the left bulk edge and the per-replica lowest hard
    outliers at every checkpoint, the replicas in a period-2 orbit (thresholds.dmft eq. (10); absent from
    records made before it), the DMFT run's paths (all replicas), those the Hessian read and the run's
    self-interaction (thresholds.evaluation eq. (4)) and the fraction of samples with an unstable own step
    (thresholds.dmft eq. (10c)); the last four are absent from records made before them."""
    t0 = time.time()
    ev = evaluate(setup, delta, final_only=final_only)
    return {"delta": float(delta), "steps": [int(s) for s in ev.steps], "indicator": ev.indicator,
            "indicator_err": ev.indicator_err, "indicator_replicas": ev.indicator_replicas, "left_edge": ev.left_edge,
            "hard_z": [[None if z != z else float(z) for z in row] for row in ev.hard_z],
            "period_two": ev.period_two, "paths": ev.paths, "hessian_paths": setup.paths_at(delta) if not setup.paths
            else ev.paths, "self_interaction": ev.self_interaction, "unstable_fraction": ev.unstable_fraction,
            "seconds": time.time() - t0}


def settled(row: dict) -> float | None:
    """I_T of one record on the replicas that settle: the mean over the replicas not in a period-2 orbit
    (thresholds.dmft eq. (10): their checkpoints sit on the orbit's two points, not at a settled state); the plain
    I_T where no replica is flagged or the record has no per-replica values; None when every replica is flagged."""
    orbit = row.get("period_two") or []
    per = row.get("indicator_replicas") or []
    if not orbit or not per:
        return row["indicator"][-1]
    kept = [v for i, v in enumerate(per[-1]) if i not in orbit]
    return sum(kept) / len(kept) if kept else None


def bracket(rows: list) -> tuple:
    """(largest delta with I_T <= 0, smallest delta with I_T > 0) on the settled replicas (:func:`settled`), None
    where there is none."""
    values = [(r["delta"], settled(r)) for r in rows]
    neg = [d for d, v in values if v is not None and v <= 0]
    pos = [d for d, v in values if v is not None and v > 0]
    return (max(neg) if neg else None), (min(pos) if pos else None)


@click.command()
@per_delta_options
@click.option("--final-only", is_flag=True, help="The Hessian at the horizon only (1/16 of its cost; no t-curve).")
@click.option("--paths", type=click.IntRange(min=0), default=0, show_default=True,
              help="DMFT paths, all replicas (0: the default law's automatic count).")
@click.option("--source-tol", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Source tolerance of thresholds.dmft eq. (6b) (default: the default law's).")
def main(activation, link, eta, steps, m, deltas, out, final_only, paths, source_tol):
    deltas = number_list(deltas, float, "--delta")
    law = {"paths": paths, **({"source_tol": source_tol} if source_tol is not None else {})}
    setup = NNSetup.from_problem(Problem(activation, link, eta=eta, steps=steps, m=m), law="dmft", **law)
    rows = extend(out, read_rows(out), deltas,
                  lambda delta: {**record(setup, delta, final_only), "source_tol": setup.source_tol})
    for r in sorted(rows, key=lambda r: r["delta"]):
        print(f"delta {r['delta']:.4f}: I_T = {r['indicator'][-1]:+.5f} +- {r['indicator_err'][-1]:.5f}, left edge "
              f"{r['left_edge'][-1]:+.5f}, z* {r['hard_z'][-1]} ({r['seconds']:.0f} s)"
              + (f"; replica(s) {r['period_two']} in a period-2 orbit (thresholds.dmft eq. (10)), I_T on the others "
                 + ("-" if settled(r) is None else f"{settled(r):+.5f}") if r.get("period_two") else ""))
    lo, hi = bracket(rows)
    print(f"delta_NN(T = {steps}) in [{lo}, {hi}]" if lo is not None and hi is not None and lo < hi
          else f"no bracket among the deltas done (I_T <= 0 up to {lo}, > 0 from {hi})")


if __name__ == "__main__":
    main()

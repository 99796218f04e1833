"""Where a forced trial and GD part at width m: the bulk norm and the hard overlap, step by step.

At width m a run's success (thresholds validate, thresholds.forced eq. (2)) is the fraction of ||Theta||_F^2
in the hard subspace at the horizon, hard / (bulk + hard) > 1/2, with (per neuron, averaged over the m
neurons) hard = |P_H theta_j|^2 and bulk = ||theta_j||^2 - hard.  At m = 8 that fraction is not bimodal (GD,
quad, d = 200: its median rises continuously from 0.49 to 0.68 over delta 3.0-3.5), so a crossing is where
its median reaches 1/2 and any offset in either part moves it.  This check sets the two parts of GD's runs
(runs with ``thresholds validate``'s seed rule and horizon, with their curves) beside those of the forced
trials of the same (m, d, delta) (their cached curves, thresholds.forced.trial_curves), at a few steps:
mean +- s.e. over the runs.

    python -m validation.width_parts --m 8 --d 200 --delta 3.25 [--trials 20] [--strata 20]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from thresholds.forced import trial_curves, trial_setup
from thresholds.numbers import mean_se
from thresholds.problem import Problem
from validation.threshold import _trial_seed, horizon, trial

STEPS = (0, 25, 50, 100, 200, 400, 600)


def gd_parts(problem: Problem, d: int, delta: float, trials: int, t0: float) -> dict:
    """Per step: the bulk and hard parts of ``trials`` GD runs of ``thresholds validate`` (seed 0, horizon
    (t0 + 0 log d) / eta, the validate default seeds)."""
    steps = horizon(d, problem.eta, t0, 0.0)
    runs = [trial(problem.activation, problem.link, delta, d, problem.eta, steps, _trial_seed(0, d, delta, j),
                  m=problem.m)[1] for j in range(trials)]
    return {"hard": np.array([r.hard_overlap for r in runs]),
            "bulk": np.array([r.norm2 - r.hard_overlap for r in runs])}


def forced_parts(problem: Problem, d: int, delta: float, trials: int, strata: int) -> dict:
    """Per step: the bulk and hard parts of the forced trials 0 .. trials - 1 (eq. (4) paths, stratified)."""
    curves = [trial_curves(trial_setup(problem, delta, d, k, strata=strata)) for k in range(trials)]
    return {"hard": np.array([c["hard_overlap"] for c in curves]),
            "bulk": np.array([c["norm2"] - c["hard_overlap"] for c in curves])}


def cell(values) -> str:
    """A table cell: mean +- s.e. of ``values`` (the mean alone for a single value)."""
    v, e = mean_se(list(values))
    return f"{v:.4f} +- {e:.4f}" if len(values) > 1 and math.isfinite(e) else f"{v:.4f}"


def table(gd: dict, forced: dict, steps) -> list[str]:
    """Markdown rows: per step, GD's and the trials' bulk and hard parts and hard fraction (mean +- s.e.)."""
    rows = ["| step | bulk, GD | bulk, forced | hard, GD | hard, forced | fraction, GD | fraction, forced |",
            "|---|---|---|---|---|---|---|"]
    for t in steps:
        frac = [p["hard"] / (p["hard"] + p["bulk"]) for p in (gd, forced)]
        rows.append(f"| {t} | {cell(gd['bulk'][:, t])} | {cell(forced['bulk'][:, t])} | {cell(gd['hard'][:, t])} | "
                    f"{cell(forced['hard'][:, t])} | {cell(frac[0][:, t])} | {cell(frac[1][:, t])} |")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--d", type=int, default=200)
    ap.add_argument("--delta", type=float, default=3.25)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--strata", type=int, default=20, help="the forced trials' stratification (their records')")
    ap.add_argument("--steps", type=int, default=600, help="horizon of both (GD: t0 = steps * eta, c = 0)")
    args = ap.parse_args(argv)
    problem = Problem(args.activation, args.link, eta=args.eta, steps=args.steps, m=args.m)
    gd = gd_parts(problem, args.d, args.delta, args.trials, args.steps * args.eta)
    forced = forced_parts(problem, args.d, args.delta, args.trials, args.strata)
    print(f"{args.activation} / {args.link}, eta {args.eta:g}, m = {args.m}, d = {args.d}, delta = {args.delta:g}: "
          f"{args.trials} GD runs (validate's seeds) and {args.trials} forced trials")
    print("\n".join(table(gd, forced, [t for t in STEPS if t <= args.steps])))


if __name__ == "__main__":
    main()

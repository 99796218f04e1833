"""The final hard fraction of stored GD trials (validation.trials), not only its share above 1/2.

``thresholds validate`` counts a run as a success when the fraction of ||Theta||_F^2 in the hard subspace exceeds 1/2
at the horizon.  At large width quad's hard fraction does not jump from O(1/d) to near 1: it settles at a level that
grows with delta (validation/reports/planted/width section 10h), and the success rate then measures where that level
crosses 1/2.  This reads the stored trials of a ``validate`` grid (same problem, d, deltas, trials, seed and horizon
rule) and prints, per (d, delta), the mean, its standard error and the quartiles of the final hard fraction, next to
1/d, the hard fraction of a random Theta.

Run (after the ``validate`` runs it reads):
      python -m validation.hard_plateau -a quad --eta 0.05 --m 16 --dims 200 -d 1.1,1.3,1.5,2.0 --trials 10 --t0 1000
"""

from __future__ import annotations

import math

import click
import numpy as np

from thresholds.numbers import mean_se
from thresholds.problem import Problem
from validation import trials
from validation.threshold import _trial_seed, horizon


def final_fractions(problem: Problem, d: int, delta: float, count: int, t0: float, c: float = 0.0,
                    seed: int = 0) -> np.ndarray:
    """The final hard fractions of the stored trials 0..count-1 of one grid point (missing trials left out)."""
    key = problem.simulation_key()
    steps = horizon(d, problem.eta, t0, c)
    recs = [trials.load(trials.trial_key(key, d, delta, steps, _trial_seed(seed, d, delta, j))) for j in range(count)]
    return np.array([r["cos2"] for r in recs if r is not None], dtype=float)


@click.command()
@click.option("-a", "--activation", required=True)
@click.option("-l", "--link", default="phase_retrieval", show_default=True)
@click.option("--eta", type=float, required=True)
@click.option("--m", type=int, default=1, show_default=True)
@click.option("--dims", required=True, help="Comma-separated dimensions.")
@click.option("-d", "--delta", "deltas", required=True, help="Comma-separated sample ratios.")
@click.option("--trials", "count", type=int, default=10, show_default=True)
@click.option("--t0", type=float, required=True)
@click.option("--c", type=float, default=0.0, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def main(activation, link, eta, m, dims, deltas, count, t0, c, seed):
    problem = Problem(activation, link, eta=eta, m=m)
    print("| d | delta | steps | trials | mean hard fraction | s.e. | quartiles | 1/d |")
    print("|---|---|---|---|---|---|---|---|")
    for d in (int(x) for x in dims.split(",")):
        for delta in (float(x) for x in deltas.split(",")):
            f = final_fractions(problem, d, delta, count, t0, c, seed)
            if not f.size:
                print(f"| {d} | {delta:g} | {horizon(d, eta, t0, c)} | 0 | - | - | - | {1 / d:.4f} |")
                continue
            q = np.percentile(f, [25, 50, 75])
            mean, se = mean_se(f)
            se = se if f.size > 1 else math.nan   # one trial: no spread to state
            print(f"| {d} | {delta:g} | {horizon(d, eta, t0, c)} | {f.size} | {mean:.3f} | {se:.3f} | "
                  f"{q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f} | {1 / d:.4f} |")


if __name__ == "__main__":
    main()

"""How well a delta_NN interval states its own error: the same search run with several seeds.

Reads ``thresholds nn --json`` results of one setup that differ only in ``--seed`` and prints, per seed, delta_NN
with its interval (thresholds.crossing eq. (4), the replicas' jackknife) and the interval that eqs. (2)-(3) alone
give (the same evaluations with their replicas' values dropped), then the seeds' mean, standard deviation and how
many intervals of each kind cover that mean.  A half-width is about 2 s.e. (eqs. (2)-(3)) or t_{R-1} s.e. (eq. (4)),
so the standard deviation over seeds should be about the mean half-width over 2 to 2.4.

Run:  thresholds nn -a quad --eta 0.05 --replicas 8 --seed S --json > validation/reports/nn/seeds/quad_dmft_seedS.json
      python -m validation.seed_spread validation/reports/nn/seeds/quad_dmft_seed*.json
"""

from __future__ import annotations

import json
import math

import click
import numpy as np

from thresholds.crossing import crossing
from thresholds.nn import Evaluation


def intervals(result: dict) -> tuple:
    """(delta_NN, jackknife crossing, crossing without the replicas' values) at the horizon of one JSON result."""
    fields = Evaluation.__dataclass_fields__
    evals = [Evaluation(**{k: v for k, v in e.items() if k in fields}) for e in result["evaluations"]]
    T = int(result["setup"]["steps"])
    jack = crossing(evals, T)
    for e in evals:
        e.indicator_replicas = []
    return result["delta_nn"], jack, crossing(evals, T)


def table(paths: list) -> str:
    rows = []
    for p in paths:
        with open(p) as f:
            res = json.load(f)
        rows.append((res["setup"]["seed"], *intervals(res)))
    rows.sort(key=lambda r: r[0])
    xs = np.array([r[1] for r in rows])
    mean, sd = float(xs.mean()), float(xs.std(ddof=1)) if xs.size > 1 else math.nan
    out = ["| seed | delta_NN | interval (eq. (4)) | interval (eqs. (2)-(3)) |", "|---|---|---|---|"]
    for seed, x, j, p in rows:
        out.append(f"| {seed} | {x:.3f} | [{j.low:.3f}, {j.high:.3f}] | [{p.low:.3f}, {p.high:.3f}] |")
    cover_j = sum(j.low <= mean <= j.high for _, _, j, _ in rows)
    cover_p = sum(p.low <= mean <= p.high for _, _, _, p in rows)
    hw_j = np.mean([(j.high - j.low) / 2 for _, _, j, _ in rows])
    hw_p = np.mean([(p.high - p.low) / 2 for _, _, _, p in rows])
    out.append(f"\n{len(rows)} seeds: mean {mean:.3f} +- {sd / math.sqrt(len(rows)):.3f}, standard deviation {sd:.3f}; "
               f"mean half-width {hw_j:.3f} (eq. (4)) / {hw_p:.3f} (eqs. (2)-(3)); intervals covering the mean: "
               f"{cover_j} / {cover_p} of {len(rows)}")
    return "\n".join(out)


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
def main(paths):
    click.echo(table(list(paths)))


if __name__ == "__main__":
    main()

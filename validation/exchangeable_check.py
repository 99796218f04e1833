"""The exchangeable reduction of the m x m engine (thresholds.stieltjes_m eqs. (7)-(8)) against the full m x m
equations on the same first-phase laws.

On a law that holds every relabelling of each sample the two are the same equations (tests/test_stieltjes_m.py, to
rounding).  On a DMFT law of finite paths they are two estimators of the same d = inf quantities: the full equations
see the paths' neuron-to-neuron asymmetry, the reduction its relabelling average.  For each checkpoint of one DMFT run
(the default law of ``thresholds nn``: data sets of n = delta law_d paths, hessian eq. (5)) this prints, per step, the
left edge and the plain negative indicator by both routes (mean over replicas and data sets), their paired difference
with its s.e. over the replicas, the indicator's replica s.e., and the time each route took.

Run:  python -m validation.exchangeable_check -a quad --eta 0.05 --steps 100 --m 2 --delta 8 [--out FILE.jsonl]
"""

from __future__ import annotations

import json
import time

import click
import numpy as np

from thresholds.catalog import get_activation
from thresholds.dmft import solve_dmft
from thresholds.hessian import data_sets, hessian_weight_m
from thresholds.laws import dmft_law
from thresholds.nn import NNSetup
from thresholds.numbers import mean_se
from thresholds.problem import Problem
from thresholds.stieltjes import spike_weight
from thresholds.stieltjes_m import MatrixLaw, left_edge, negative_indicator


def both_routes(act, setup, replica, n):
    """(edge, indicator) of the full equations and of the reduction, each the mean over the replica's data sets of
    n paths, and the seconds each took."""
    out, secs = {}, {}
    for x in (False, True):
        t0, edges, inds = time.time(), [], []
        for part in data_sets(replica, n):
            law = MatrixLaw(hessian_weight_m(act, setup.a, setup.b, part.u, part.y), spike_weight(part.g),
                            np.asarray(part.w, dtype=float), x)
            edge = left_edge(law, setup.delta)
            edges.append(edge.z)
            inds.append(negative_indicator(law, setup.delta, edge)[0])
        out[x], secs[x] = (float(np.mean(edges)), float(np.mean(inds))), time.time() - t0
    return out, secs


@click.command()
@click.option("-a", "--activation", default="quad")
@click.option("--eta", type=float, default=0.05)
@click.option("--steps", type=int, default=100)
@click.option("--m", type=int, default=2)
@click.option("--delta", type=float, default=8.0)
@click.option("--every", type=int, default=1, help="use every k-th checkpoint")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="append one JSON line per step")
def main(activation, eta, steps, m, delta, every, out):
    nn = NNSetup.from_problem(Problem(activation, "phase_retrieval", eta=eta, steps=steps, m=m), law="dmft")
    setup = nn.dmft(delta)
    act = get_activation(activation)
    law = dmft_law(solve_dmft(setup))
    n = delta * nn.edge_d
    click.echo(f"{activation}, eta {eta}, m = {m}, delta {delta}, {setup.paths} paths in {setup.replicas} replicas, "
               f"data sets of n = {n:.0f}")
    click.echo("step | edge full | edge exch. | indicator full | indicator exch. | paired diff | replica s.e. | "
               "seconds full / exch.")
    for step in sorted(law.steps)[every - 1::every]:
        rows = [both_routes(act, setup, r, n) for r in law.steps[step]]
        full = np.array([r[0][False] for r in rows])
        exch = np.array([r[0][True] for r in rows])
        diff, diff_se = mean_se(exch[:, 1] - full[:, 1])
        _, rep_se = mean_se(full[:, 1])
        tf, tx = sum(r[1][False] for r in rows), sum(r[1][True] for r in rows)
        click.echo(f"{step} | {full[:, 0].mean():+.5f} | {exch[:, 0].mean():+.5f} | {full[:, 1].mean():+.4f} | "
                   f"{exch[:, 1].mean():+.4f} | {diff:+.4f} +- {diff_se:.4f} | {rep_se:.4f} | {tf:.1f} / {tx:.1f}")
        if out:
            with open(out, "a") as f:
                f.write(json.dumps({"activation": activation, "eta": eta, "steps": steps, "m": m, "delta": delta,
                                    "step": step, "edge_full": full[:, 0].tolist(), "edge_exch": exch[:, 0].tolist(),
                                    "ind_full": full[:, 1].tolist(), "ind_exch": exch[:, 1].tolist(),
                                    "seconds_full": tf, "seconds_exch": tx}) + "\n")


if __name__ == "__main__":
    main()

"""The plain indicator of a data set of n samples from the d = inf law: the mean over data sets (thresholds.hessian
eq. (5)) against the earlier median-minimum cut, paired on the same DMFT replicas.

For the default DMFT law of ``thresholds nn`` (automatic paths: 4 data sets of n = delta d paths per replica) at
each delta, one JSON line per (activation, eta, d, delta) in ``validation/reports/tail_edge/data_sets.jsonl`` (lines
already in the file are skipped, so an interrupted job resumes).  Per replica and at T/4, T/2 and T:

* ``cut``: the plain indicator with G cut at the median of the minimum of n samples, G -> max(G, G_q),
  q = 1 - 2^(-1/n), on all the replica's paths (``validation.tail_edge._cut_indicator``, weighted quantile);
* ``sets``: the plain indicators of the replica's disjoint data sets of n consecutive paths (the scalar engine of
  thresholds.hessian on each), whose mean is what ``nn`` now uses;
* ``shuffled``: the same after a random permutation of the paths (the paths of a replica are exchangeable, so
  consecutive data sets are as good as random ones: the two means differ only by noise).

``--summary`` prints, per step and delta, the replicas' mean +- s.e. of each and of the paired differences
(cut minus the replica's mean over its data sets, and shuffled minus consecutive), and pools the seeds run at one
delta.  The GD law computes the plain indicator of one seed's own
n samples, i.e. the ``sets`` statistic at finite d.

Run:  python -m validation.data_sets_check -a quad --eta 0.05 --d 1000 --deltas 11 --seeds 0,1,2,3 --replicas 8
      python -m validation.data_sets_check --summary
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import click
import numpy as np

from thresholds.catalog import get_activation
from thresholds.dmft import solve_dmft
from thresholds.hessian import ENGINES, data_sets, sample_quantile
from thresholds.laws import ReplicaLaw, dmft_law
from thresholds.nn import NNSetup
from thresholds.numbers import mean_se
from thresholds.problem import Problem
from validation.dmft_paths import read_lines
from validation.tail_edge import _cut_indicator

OUT = Path(__file__).parent / "reports" / "tail_edge" / "data_sets.jsonl"


def line_for(activation: str, eta: float, d: int, delta: float, replicas: int, seed: int = 0) -> dict:
    """One record: per step, per replica, the cut indicator and the data sets' plain indicators (consecutive and
    shuffled)."""
    nn = NNSetup.from_problem(Problem(activation, eta=eta), replicas=replicas, law_d=d, seed=seed)
    setup = nn.dmft(delta)
    act = get_activation(activation)
    n = delta * d
    start = time.time()
    law = dmft_law(solve_dmft(setup))
    line = {"activation": activation, "eta": eta, "d": d, "delta": delta, "replicas": replicas, "seed": seed,
            "paths": setup.paths, "n": round(n), "steps": {}}
    rng = np.random.default_rng([seed, 7])

    def plain(r):
        return [ENGINES["scalar"](act, setup, delta, s.u, s.y, s.g, s.w, False, clip=False).indicator
                for s in data_sets(r, n)]

    for step in (setup.steps // 4, setup.steps // 2, setup.steps):
        rows = line["steps"][str(step)] = []
        for r in law.steps[step]:
            p = rng.permutation(np.shape(r.y)[0])
            rows.append({"cut": _cut_indicator(setup, r.u, r.y, r.g, sample_quantile(n), "weighted"), "sets": plain(r),
                         "shuffled": plain(ReplicaLaw(r.u[p], r.y[p], r.g[p], r.w[p]))})
    line["seconds"] = time.time() - start
    return line


def _paired(reps: list) -> dict:
    """Per-replica values of one step: cut, mean over the data sets, mean over the shuffled ones."""
    return {"cut": [p["cut"] for p in reps], "sets": [float(np.mean(p["sets"])) for p in reps],
            "shuffled": [float(np.mean(p["shuffled"])) for p in reps]}


def _row(label: str, v: dict) -> str:
    (c, ce), (s, se) = mean_se(v["cut"]), mean_se(v["sets"])
    dd, de = mean_se([a - b for a, b in zip(v["cut"], v["sets"])])
    sh, she = mean_se([a - b for a, b in zip(v["shuffled"], v["sets"])])
    return (f"  {label}: cut {c:+.3f} +- {ce:.3f}  sets {s:+.3f} +- {se:.3f}  cut - sets {dd:+.3f} +- {de:.3f} "
            f"(z = {dd / de if de > 0 else math.inf:+.1f})  shuffled - sets {sh:+.3f} +- {she:.3f}")


def summary(rows: list) -> str:
    out = []
    for key in sorted({(r["activation"], r["eta"], r["d"]) for r in rows}):
        act, eta, d = key
        mine = sorted((r for r in rows if (r["activation"], r["eta"], r["d"]) == key),
                      key=lambda r: (r["delta"], r.get("seed", 0)))
        out.append(f"{act}, eta {eta:g}, data sets of n = delta {d} ({mine[0]['replicas']} replicas per seed, "
                   f"{len(mine[0]['steps'][next(iter(mine[0]['steps']))][0]['sets'])} data sets per replica)")
        for step in mine[0]["steps"]:
            pooled = {}
            for r in mine:
                v = _paired(r["steps"][step])
                out.append(_row(f"step {step:>4s}, delta {r['delta']:6.3f}, seed {r.get('seed', 0)}", v))
                for k, x in v.items():
                    pooled.setdefault(r["delta"], {}).setdefault(k, []).extend(x)
            for delta, v in pooled.items():
                if sum(r["delta"] == delta for r in mine) > 1:
                    out.append(_row(f"step {step:>4s}, delta {delta:6.3f}, seeds pooled ({len(v['cut'])} replicas)", v))
    return "\n".join(out)


@click.command()
@click.option("-a", "--activation", default="quad", show_default=True)
@click.option("--eta", default=0.05, show_default=True, type=float)
@click.option("--d", "d", default=1000, show_default=True, type=click.IntRange(1, None))
@click.option("--deltas", default="", help="Comma-separated deltas.")
@click.option("--replicas", default=8, show_default=True, type=click.IntRange(2, 64))
@click.option("--seeds", default="0", show_default=True, help="Comma-separated seeds of the DMFT law (its replicas).")
@click.option("--out", default=str(OUT), show_default=True, type=click.Path(dir_okay=False))
@click.option("--summary", "only_summary", is_flag=True, help="Print the table of the records and exit.")
def main(activation, eta, d, deltas, replicas, seeds, out, only_summary):
    path = Path(out)
    if not only_summary:
        path.parent.mkdir(parents=True, exist_ok=True)
        done = {(r["activation"], r["eta"], r["d"], r["delta"], r["replicas"], r["seed"]) for r in read_lines(path)}
        for delta in [float(x) for x in deltas.split(",") if x]:
            for seed in [int(x) for x in seeds.split(",") if x]:
                if (activation, eta, d, delta, replicas, seed) in done:
                    continue
                line = line_for(activation, eta, d, delta, replicas, seed)
                with path.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                click.echo(f"delta {delta:g}, seed {seed}: {line['seconds']:.0f} s")
    click.echo(summary(read_lines(path)))


if __name__ == "__main__":
    main()

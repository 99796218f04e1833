"""Speed of the m x m Hessian engine on DMFT laws, per width, and its outputs for a comparison across commits.

For each width (quad / phase retrieval, eta 0.05 at m = 2 and 16; gelu, eta 0.1 at m = 4 and 8; two replicas, one
DMFT run each, every fifth checkpoint) this times ``spectra_of_law`` with the clipped law and its outliers and with
data sets of n = 200 delta paths (hessian eq. (5)), and writes every checkpoint's edges, indicators and lowest outlier
to ``OUT``; ``--against`` a file written at another commit prints the largest differences.  The exchangeable
reduction's spectral form (thresholds.stieltjes_m eq. (7b)) was measured this way against the per-sample m x m solve
it replaced (one core, the other busy; bbde0b5 against 39e9e20): 10.5 s against 18.5 at m = 2, 20.2 against 63.9 at
m = 4, 28.8 against 220.1 at m = 8, 31.5 against 691.7 at m = 16; edges within 1e-9, outliers within 1e-11,
indicators within 8e-5.

Run:  OMP_NUM_THREADS=1 python -m validation.bench_hessian_m OUT.json [--against OLD.json]
"""

from __future__ import annotations

import json
import time

import click

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.hessian import spectra_of_law
from thresholds.laws import FirstPhaseLaw, dmft_law

CASES = [("quad", 0.05, 2, 6.0, 64, 40000), ("gelu", 0.1, 4, 30.0, 64, 60000), ("gelu", 0.1, 8, 40.0, 32, 60000),
         ("quad", 0.05, 16, 3.0, 32, 40000)]
FIELDS = ("left_edge", "indicator", "clipped", "left_edge_200", "indicator_200", "outlier_z", "outlier_overlap2")


def run_case(activation, eta, m, delta, steps, paths) -> dict:
    setup = DMFTSetup(activation=activation, link="phase_retrieval", delta=delta, eta=eta, steps=steps, paths=paths,
                      replicas=2, m=m, source_tol=1e-3, seed=1)
    law = dmft_law(solve_dmft(setup, cache=False, kernels=False))
    law = FirstPhaseLaw({k: law.steps[k] for k in sorted(law.steps)[::5]}, law.note)
    start = time.time()
    plain = spectra_of_law(setup, law, outliers="all")
    cut = spectra_of_law(setup, law, outliers="none", edge_d=200)
    rows = []
    for k in sorted(plain):
        p, c = plain[k], cut[k]
        low = min(p.outliers, key=lambda o: o["z"]) if p.outliers else {"z": None, "overlap2": None}
        rows.append(dict(zip(FIELDS, (p.left_edge, p.negative_indicator, p.negative_indicator_clipped, c.left_edge,
                                      c.negative_indicator, low["z"], low["overlap2"]))) | {"step": k})
    return {"case": f"{activation} m = {m}", "seconds": time.time() - start, "rows": rows}


@click.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--against", type=click.Path(exists=True, dir_okay=False), help="records of another commit")
def main(out, against):
    results = []
    for case in CASES:
        results.append(run_case(*case))
        print(f"{results[-1]['case']}: {results[-1]['seconds']:.1f} s", flush=True)
    with open(out, "w") as f:
        json.dump(results, f)
    if against:
        with open(against) as f:
            old = json.load(f)
        for new_case, old_case in zip(results, old):
            worst = {name: max((abs(a[name] - b[name]) for a, b in zip(new_case["rows"], old_case["rows"])
                                if a[name] is not None and b[name] is not None), default=0.0) for name in FIELDS}
            print(f"{new_case['case']}: {old_case['seconds']:.1f} s before; largest differences "
                  + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))


if __name__ == "__main__":
    main()

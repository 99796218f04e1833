"""Speed benchmarks of delta_NN (pytest-benchmark; not timed unit tests).

Goals on the 2-core machine: delta_NN for one pair to +-2% (bracket) in under
3 minutes from an empty cache, and under 1 s from the cache.  Two setups:

* quad with y = 3 tanh(z^2) at eta = 1e-4, 8 steps (a threshold is found: the
  bisection runs to the end; the interval printed includes the Monte Carlo part);
* quad / phase_retrieval (eta = 0.05) and gelu / phase_retrieval (every setting at its
  default) on the default DMFT law (NNSetup.from_problem: truncated source basis, data
  sets of n = delta 1000 samples, automatic paths, the path check at twice the paths);
* the same two on the finite-d GD law, the cross-check (d = 1000, 3 seeds, float32 data);
* quad / phase_retrieval at width m = 2 and 600 steps on the default law (the m x m engine, thresholds.stieltjes_m).
  Measured once, not from an empty cache: 1300 s on one core with two other jobs on the machine, 8.00 [6.18, 9.81],
  11 deltas, 6 of its 13 DMFT runs read from the cache of an earlier run (validation/reports/nn/
  quad_eta0.05_T600_m2_full_engine.json); the engine's part alone is 2.6x faster with stieltjes_m eq. (6)
  (thresholds/METHODS.md).  On the relabelling average (stieltjes_m eqs. (7)-(8)), from an empty cache with one other
  search on the machine: 1298 s, 8.01 [7.21, 8.82] (quad_eta0.05_T600_m2.json).
Select one with -k, e.g. -k dmft.  The "bracket" column is the final search bracket
(rtol); the interval printed also carries the Monte Carlo error.

Run:  python -m pytest validation/bench_nn.py --benchmark-only -n 0 -p no:cacheprovider -s
"""

import time

import pytest

from thresholds import cache
from thresholds.nn import NNSetup
from thresholds.problem import Problem
from validation.gd_law import delta_nn

SETUPS = {"quad / 3 tanh(z^2), dmft law": NNSetup("quad", "3*tanh(z**2)", eta=1e-4, steps=8, law="dmft",
                                                  paths=40_000),
          "quad / phase_retrieval, default (dmft) law": NNSetup.from_problem(Problem("quad", eta=0.05),
                                                                             search_max=32.0),
          "gelu / phase_retrieval, all defaults (dmft)": NNSetup.from_problem(Problem("gelu")),
          "quad / phase_retrieval, gd law": NNSetup("quad", eta=0.05, search_max=32.0),
          "gelu / phase_retrieval, gd law": NNSetup("gelu"),
          "quad / phase_retrieval, m = 2, 600 steps (dmft)": NNSetup.from_problem(Problem("quad", eta=0.05, steps=600,
                                                                                          m=2), search_max=32.0)}


def _cold_and_warm(setup):
    with cache.empty():
        t0 = time.time()
        res = delta_nn(setup)
        cold = time.time() - t0
        t0 = time.time()
        delta_nn(setup)
        warm = time.time() - t0
    return res, cold, warm


@pytest.mark.parametrize("name", list(SETUPS))
def test_delta_nn_cold_and_cached(benchmark, name):
    res, cold, warm = _cold_and_warm(SETUPS[name])
    value = f"{res.delta_nn:.4g} [{res.low:.4g}, {res.high:.4g}]" if res.found else f"> {res.setup.search_max:g}"
    bracket = ""
    if res.found and not res.below_range:
        pts = sorted((e.delta, e.indicator[-1]) for e in res.evaluations)
        lo = max(d for d, v in pts if v <= 0 and d <= res.delta_nn)
        hi = min(d for d, v in pts if v > 0 and d >= res.delta_nn)
        bracket = f"bracket [{lo:.4g}, {hi:.4g}] ({(hi - lo) / (hi * lo) ** 0.5:.1%})"
    print(f"{name:38s} delta_NN = {value:28s} {bracket:30s} {len(res.evaluations):2d} deltas  cold {cold:6.1f} s "
          f"(goal 180 s)  cached {warm:5.2f} s (goal 1 s)")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)

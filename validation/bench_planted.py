"""Speed benchmark of the finite-d prediction (thresholds.planted.predict; pytest-benchmark, not a timed test).

Goal of the finite-d issue: delta_1/2(d) for one setup and one d from an empty cache in under 3 minutes
on the 2-core machine, each extra d in under 20 s.  Measured here: quad / phase retrieval, eta 0.05, at
the 600-step horizon of validation/reports/planted, first for d = 400 alone from an empty cache, then
d = 200, 400, 800 on the same cache (the extra d reuse the computed deltas where those bracket them).

Run:  python -m pytest validation/bench_planted.py --benchmark-only -p no:cacheprovider -s
"""

import time

from thresholds import cache
from thresholds.planted import predict
from thresholds.problem import Problem

PROBLEM = Problem("quad", "phase_retrieval", eta=0.05, steps=600)


def test_finite_d_prediction_cold_then_more_d(benchmark):
    lines = []

    def log(text):  # every DMFT run, as it ends
        lines.append(text)
        print(text, flush=True)

    with cache.empty():
        t0 = time.time()
        one = predict(PROBLEM, [400], log=log)
        cold = time.time() - t0
        t0 = time.time()
        three = predict(PROBLEM, [200, 400, 800], log=log)
        more = time.time() - t0
    benchmark.pedantic(lambda: None, rounds=1)
    fmt = (lambda c: f"d = {c.d}: {c.value:.3f} [{c.low:.3f}, {c.high:.3f}]" if c.found else f"d = {c.d}: {c.note}")
    print(f"\nempty cache, d = 400: {cold:.0f} s ({len(one.points)} deltas), {fmt(one.crossings[0])}")
    print(f"then d = 200, 400, 800: {more:.0f} s more ({len(three.points)} deltas): "
          + "; ".join(fmt(c) for c in three.crossings))
    print("deltas: " + "; ".join(f"{p.delta:g}: q_c [{p.q_low:.4g}, {p.q_high:.4g}], s {p.s:.3f} +- {p.s_err:.2g}"
                                 for p in three.points))
    assert one.crossings[0].found

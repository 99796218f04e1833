"""Speed benchmark of the finite-d prediction (thresholds.modes.prediction; pytest-benchmark, not a timed test).

Goals: at m = 1 (finite-d issue) delta_1/2(d) for one setup and one d from an empty cache in under 3
minutes on the 2-core machine, each extra d in under 20 s; at m <= 8 (width issue) one prediction in under
5 minutes.  Measured here: quad / phase retrieval, eta 0.05, at the 600-step horizon of
validation/reports/planted, at m = 1 and m = 2, first for d = 400 alone from an empty cache, then d = 200,
400, 800 on the same cache (the extra d reuse the computed deltas where those bracket them).

Run:  python -m pytest validation/bench_planted.py --benchmark-only -n 0 -p no:cacheprovider -s [-k m2]
"""

import time

import pytest

from thresholds import cache
from thresholds.modes import prediction
from thresholds.planted import point_json
from thresholds.problem import Problem


@pytest.mark.parametrize("m, start", [(1, 8.0), (2, 3.5)], ids=["m1", "m2"])
def test_finite_d_prediction_cold_then_more_d(benchmark, m, start):
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=600, m=m)
    predict = lambda p, dims, log: prediction(p, dims, start=start, log=log)  # noqa: E731
    lines = []

    def log(text):  # every DMFT run, as it ends
        lines.append(text)
        print(text, flush=True)

    with cache.empty():
        t0 = time.time()
        one = predict(problem, [400], log=log)
        cold = time.time() - t0
        t0 = time.time()
        three = predict(problem, [200, 400, 800], log=log)
        more = time.time() - t0
    benchmark.pedantic(lambda: None, rounds=1)
    fmt = (lambda c: f"d = {c.d}: {c.value:.3f} [{c.low:.3f}, {c.high:.3f}]" if c.found else f"d = {c.d}: {c.note}")
    print(f"\nempty cache, d = 400: {cold:.0f} s ({len(one.points)} deltas), {fmt(one.crossings[0])}")
    print(f"then d = 200, 400, 800: {more:.0f} s more ({len(three.points)} deltas): "
          + "; ".join(fmt(c) for c in three.crossings))
    print("deltas: " + "; ".join(str(point_json(p)) for p in three.points))
    assert one.crossings[0].found

"""Speed benchmarks of the DMFT solver (pytest-benchmark; not timed unit tests).

Goals on the 2-core machine: 200 steps with N = 1e5 paths under 30 s;
1000 steps under 5 minutes.  ``test_scaling`` records the cost for a grid of
(T, N) so that the O(N T^2) scaling of the ``sources`` method can be read off.

Run:  python -m pytest validation/bench_dmft.py --benchmark-only -p no:cacheprovider -s
"""

import time

import numpy as np

from thresholds.dmft import DMFTSetup, solve_dmft


def _run(steps, paths):
    return solve_dmft(DMFTSetup("gelu", "phase_retrieval", delta=4.0, eta=0.05, steps=steps, paths=paths))


def test_200_steps_1e5_paths(benchmark):
    _run(5, 1000)  # compile the kernels outside the measurement
    res = benchmark.pedantic(_run, args=(200, 100_000), rounds=1, iterations=1)
    assert np.all(np.isfinite(res.norm2))


def test_1000_steps(benchmark):
    _run(5, 1000)
    res = benchmark.pedantic(_run, args=(1000, 100_000), rounds=1, iterations=1)
    assert np.all(np.isfinite(res.norm2))


def test_scaling(benchmark):
    _run(5, 1000)
    rows = []
    for steps in (100, 200, 400):
        for paths in (25_000, 100_000):
            t0 = time.time()
            _run(steps, paths)
            rows.append((steps, paths, time.time() - t0))
    for steps, paths, sec in rows:
        print(f"T = {steps:4d}  N = {paths:6d}  {sec:6.2f} s  {1e9 * sec / (paths * steps**2):6.2f} ns per N T^2")
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)

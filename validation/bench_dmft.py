"""Speed benchmarks of the DMFT solver (pytest-benchmark; not timed unit tests).

Goals on the 2-core machine: 200 steps with N = 1e5 paths under 30 s;
1000 steps under 5 minutes; 2000 steps with 1e5 paths and the truncated source basis
(dmft eq. (6b), source_tol 1e-3) under 5 minutes and 8 GiB (peak resident memory printed).  ``test_scaling`` records the cost for a grid of
(T, N) so that the O(N T^2) scaling of the ``sources`` method can be read off.

Run:  python -m pytest validation/bench_dmft.py --benchmark-only -n 0 -p no:cacheprovider -s
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


def test_2000_steps_1e5_paths_truncated(benchmark):
    import resource
    _run(5, 1000)

    def run():
        return solve_dmft(DMFTSetup("gelu", "phase_retrieval", delta=12.0, eta=0.1, steps=2000, paths=100_000,
                                    source_tol=1e-3))
    res = benchmark.pedantic(run, rounds=1, iterations=1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kB -> GiB
    print(f"gelu / phase retrieval, delta 12, 2000 steps, 1e5 paths, source_tol 1e-3: peak memory {peak:.2f} GiB; "
          f"{res.notes[2]}")
    assert np.all(np.isfinite(res.norm2)) and peak < 8


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

"""Speed of the finite-d GD kernel.

Goals:
* (issue: validation sweeps) one GD step, nonlinearity included, within 1.5x of the two BLAS
  products X Theta and X^T Psi that any implementation needs, for m = 1, 2, 4, 8, 16, measured
  against NumPy (OpenBLAS, all threads) in the same run, at d = 400 and d = 2000, delta = 6;
* (issue: validation simulator) at d = 2000, delta = 6, m = 1 a step within 2x of the time of
  moving the n x d data through memory twice (a NumPy copy of X reads and writes it once);
* 2000 steps at d = 2000, delta = 6 under 2 minutes.

Run:  python -m pytest validation/bench_simulate.py --benchmark-only -n 0 -p no:cacheprovider -s
"""

import time

import numba
import numpy as np
import pytest

from thresholds.catalog import get_activation
from validation.simulate import GDSetup, ROW_BLOCKS, step_kernel, run_gd


def _best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _problem(d, m, delta=6.0, seed=0):
    n = int(delta * d)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n) ** 2
    Theta = rng.standard_normal((d, m)) / np.sqrt(d)
    return X, y, Theta


@pytest.mark.parametrize("d", [400, 2000])
@pytest.mark.parametrize("m", [1, 2, 4, 8, 16])
def test_step_against_two_blas_products(benchmark, d, m):
    X, y, Theta = _problem(d, m)
    ThetaT, gradT = np.ascontiguousarray(Theta.T), np.zeros((m, d))
    a, b = np.ones(m), np.zeros(m)
    step = step_kernel(get_activation("gelu"))
    step(X, y, ThetaT, a, b, gradT, ROW_BLOCKS)  # compile
    products = _best(lambda: X.T @ (X @ Theta), 9)
    kernel = _best(lambda: step(X, y, ThetaT, a, b, gradT, ROW_BLOCKS), 9)
    print(f"\nd = {d}, m = {m}: step {kernel * 1e3:.2f} ms, two BLAS products {products * 1e3:.2f} ms, "
          f"ratio {kernel / products:.2f}")
    benchmark.pedantic(step, args=(X, y, ThetaT, a, b, gradT, ROW_BLOCKS), rounds=3, iterations=1)
    assert kernel <= 1.5 * products


def test_step_time_against_bandwidth(benchmark):
    X, y, Theta = _problem(2000, 1)
    ThetaT, gradT = np.ascontiguousarray(Theta.T), np.zeros((1, 2000))
    a, b = np.ones(1), np.zeros(1)
    step = step_kernel(get_activation("gelu"))
    step(X, y, ThetaT, a, b, gradT, ROW_BLOCKS)  # compile
    copy_time = _best(X.copy, 5)  # 2 n d 8 bytes moved
    step_time = _best(lambda: step(X, y, ThetaT, a, b, gradT, ROW_BLOCKS), 10)
    bandwidth = 2 * X.nbytes / copy_time
    print(f"\nbandwidth {bandwidth / 1e9:.2f} GB/s (copy {copy_time * 1e3:.1f} ms); "
          f"GD step {step_time * 1e3:.1f} ms = {step_time / copy_time:.2f} x the two-pass time "
          f"({numba.get_num_threads()} numba threads)")
    benchmark.pedantic(step, args=(X, y, ThetaT, a, b, gradT, ROW_BLOCKS), rounds=5, iterations=1)
    assert step_time <= 2 * copy_time


def test_2000_steps_d2000_delta6(benchmark):
    run_gd(GDSetup("gelu", "phase_retrieval", 6.0, 200, 0.05, 2))  # compile
    res = benchmark.pedantic(run_gd, args=(GDSetup("gelu", "phase_retrieval", 6.0, 2000, 0.05, 2000,
                                                   complement=False),), rounds=1, iterations=1)
    print(f"\n2000 steps at d = 2000, delta = 6: {res.seconds:.1f} s")
    assert np.isfinite(res.norm2[-1])

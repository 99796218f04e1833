"""Throughput of a sweep's trials on Dask: 2 workers against 1, and against the in-process path.

Goal (issue: sweeps): 2 workers >= 1.6x the throughput of 1 worker on the 2-core machine.  Each
configuration runs the same 16 trials (quad / phase retrieval, d = 200, delta = 4 and 6, eta = 0.05,
horizon (50 + 10 log d)/eta), with no trial store, after one warm-up run that compiles the kernels.
The clusters are started and warmed up (every worker compiles its kernels) before the timed trials.

Run:  python -m pytest validation/bench_sweep.py --benchmark-only -n 0 -p no:cacheprovider -s
"""

import time

from validation.threshold import scan

GRID = dict(dims=[200], deltas=[4.0, 6.0], trials_per_point=8, eta=0.05, seed=11, store=False)


def _run(workers=0, scheduler=None):
    start = time.perf_counter()
    res = scan("quad", "phase_retrieval", GRID["dims"], GRID["deltas"], GRID["trials_per_point"], eta=GRID["eta"],
               seed=GRID["seed"], store=False, workers=workers, scheduler=scheduler)
    return time.perf_counter() - start, res


def _on_cluster(n):
    """(start-up and compile seconds, trial seconds, result) on a LocalCluster of n one-thread workers."""
    import logging

    from distributed import LocalCluster
    start = time.perf_counter()
    with LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=None, host="127.0.0.1",
                      silence_logs=logging.ERROR, env={"NUMBA_NUM_THREADS": "1"}) as cluster:
        scan("quad", "phase_retrieval", [200], [4.0], n, eta=0.05, seed=99, store=False,
             scheduler=cluster.scheduler_address)  # every worker compiles its kernels
        warm = time.perf_counter() - start
        seconds, res = _run(scheduler=cluster.scheduler_address)
    return warm, seconds, res


def test_throughput_two_workers_against_one(benchmark):
    _run(0)  # compile in this process
    serial, ref = _run(0)
    warm1, one, r1 = _on_cluster(1)
    warm2, two, r2 = _on_cluster(2)
    print(f"\n16 trials: in-process (2 numba threads) {serial:.1f} s; 1 worker {one:.1f} s, 2 workers {two:.1f} s "
          f"on warm clusters (start-up and compilation {warm1:.1f} s and {warm2:.1f} s before); "
          f"throughput 2 workers / 1 worker = {one / two:.2f}x, 2 workers / in-process = {serial / two:.2f}x")
    assert r1.successes == ref.successes == r2.successes
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)

"""Running the trials of a sweep: in this process, or as independent tasks on Dask distributed.

A sweep is a list of trials (validation.threshold.trial), each determined by its seed.  The trials
that the store (validation.trials) does not hold are run by an executor and stored as each one
finishes, in the calling process:

* ``workers = 0``: one after the other in this process;
* ``workers = N >= 1``: a ``distributed.LocalCluster`` of N worker processes with one thread each
  (no oversubscription of the numba threads) on this machine;
* ``scheduler = "tcp://HOST:PORT"``: an existing Dask cluster (``dask scheduler`` / ``dask worker``).

A trial's numbers do not depend on where it runs (the GD kernel's row blocks are fixed,
validation.simulate.ROW_BLOCKS), so the sweep gives the same result whatever the executor
(tests/test_sweep.py).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class TrialSpec:
    """One trial of a sweep: its place in the grid, its seed and horizon, and whether the report plots it."""

    d: int
    delta: float
    index: int
    seed: int
    steps: int
    keep_curves: bool


def run_trial(activation, link, eta, setup: dict, spec: TrialSpec) -> dict:
    """The record of one trial (validation.trials): final hard fraction, escape step, curves if kept."""
    from validation.threshold import escape_time, trial
    cos2, run = trial(activation, link, spec.delta, spec.d, eta, spec.steps, seed=spec.seed, **setup)
    rec = {"cos2": cos2, "escape": escape_time(run.cos2)}
    if spec.keep_curves:
        rec["curves"] = {"train": run.train_loss, "test": run.test_loss, "cos2": run.cos2}
    return rec


def default_workers(pending: int, per_core: int = 2) -> int:
    """Worker processes for ``workers = "auto"``: one per core, but at most one per ``per_core`` tasks to
    run, and none (in-process) when that leaves fewer than two.  A LocalCluster takes a few seconds to
    start: worth it for two GD trials per worker, or for one delta_NN search per worker."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = min(cores, pending // per_core)
    return n if n >= 2 else 0


def execute(task, specs, *, workers: int = 0, scheduler: str | None = None, on_result=None, should_stop=None):
    """Run ``task(spec)`` for every spec; ``on_result(spec, rec)`` is called in this process as each one
    finishes (in any order with Dask).  ``should_stop()`` is polled after each; when it returns True the
    remaining tasks are cancelled and KeyboardInterrupt is raised."""
    if not specs:
        return
    if scheduler is None and workers == 0:
        for spec in specs:
            on_result(spec, task(spec))
            if should_stop is not None and should_stop():
                raise KeyboardInterrupt
        return
    from distributed import as_completed
    with _client(workers, scheduler) as client:
        futures = {client.submit(task, spec, pure=False): spec for spec in specs}
        try:
            for future in as_completed(futures):
                on_result(futures[future], future.result())
                if should_stop is not None and should_stop():
                    raise KeyboardInterrupt
        finally:
            for future in futures:
                future.cancel()


def worker_environ() -> dict:
    """Dask's environment for the processes its nannies spawn, without MALLOC_TRIM_THRESHOLD_.  Dask sets that
    variable to return freed memory to the system early; an explicit value also fixes glibc's mmap threshold at
    128 kB, so that every temporary array above it is mapped and unmapped again, its pages faulted in anew.  A
    forced DMFT trial (m = 4, 20k paths) makes such temporaries at every step: with the variable set it took 36x
    the page faults and 4x the system time of the same trial without, and ran 1.4x slower alone on a core; two
    such workers on the two cores ran at half the speed of two plain processes.  (A cluster given by its
    scheduler address keeps its own workers' environment.)"""
    import dask
    import distributed  # noqa: F401  (its defaults enter dask's configuration on import)
    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    return env


@contextmanager
def _client(workers: int, scheduler: str | None):
    """A Dask client on ``scheduler``, or on a LocalCluster of ``workers`` one-thread processes, closed on exit."""
    import logging

    import dask
    from distributed import Client, LocalCluster
    cluster = None
    if scheduler is None:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                   host="127.0.0.1", silence_logs=logging.ERROR,
                                   env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    client = Client(scheduler if scheduler is not None else cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@contextmanager
def task_map(workers: int = 0, scheduler: str | None = None):
    """A ``map(fn, items) -> list`` (results in the order of ``items``) for the with-block: in this process
    (``workers = 0`` and no scheduler), or on one Dask cluster kept open across calls (worker processes start
    and compile once).  ``fn`` must be picklable with Dask."""
    if scheduler is None and workers == 0:
        yield lambda fn, items: [fn(item) for item in items]
        return
    with _client(workers, scheduler) as client:
        def run(fn, items):
            futures = client.map(fn, list(items), pure=False)
            try:
                return client.gather(futures)
            finally:
                client.cancel(futures)
        yield run

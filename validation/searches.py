"""delta_NN of several setups (``thresholds nn --scan``, ``thresholds table``) as independent tasks.

One search (validation.gd_law.delta_nn) is sequential in delta: each bracket step depends on the
indicators at the last.  The searches of a scan's values or of a table's rows are independent of one
another, so each is one task of an executor (validation.sweep.execute): in this process
(``workers = 0``), on a ``LocalCluster`` of N single-thread worker processes, or on an existing Dask
cluster (``scheduler``).  Cached results are read here first and never sent out; a result computed
elsewhere is stored here as it arrives (a remote worker's own cache may not be this one).

A search does not depend on where it runs: the finite-d law's GD kernel sums in a fixed order
(validation.simulate), the spectral engines run serially, and every random draw comes from the
setup's seed (tests/test_searches.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from thresholds.errors import ThresholdsError
from thresholds.nn import NNSetup
from thresholds.store import cached_delta_nn, store_delta_nn
from validation.gd_law import delta_nn
from validation.sweep import default_workers, execute


@dataclass(frozen=True)
class SearchSpec:
    """One search of a batch: its place in the caller's list and its setup."""

    index: int
    setup: NNSetup


def run_search(cache: bool, spec: SearchSpec):
    """The NNResult of ``spec.setup``, or the ThresholdsError that refused it (returned, not raised, so
    that one refused row does not cancel the others)."""
    return _guarded(partial(delta_nn, cache=cache), spec.setup)


def delta_nn_many(setups, *, cache: bool = True, workers="auto", scheduler: str | None = None,
                  on_result=None, run_here=None) -> list:
    """One entry per setup, in order: its NNResult, or the ThresholdsError that refused it.

    ``workers``: 0 (this process), N >= 1 (a LocalCluster of N processes) or "auto" (one per core on a
    multi-core machine when at least two searches are not cached); ``scheduler``: a Dask address.
    ``on_result(index, entry, cached)`` is called as each one is known.  ``run_here(setup)``, when given,
    replaces the in-process search (the CLI passes one that draws a per-search progress bar).
    """
    out = [None] * len(setups)
    pending = []
    for i, setup in enumerate(setups):
        setup.validate()
        hit = cached_delta_nn(setup) if cache else None
        if hit is None:
            pending.append(SearchSpec(i, setup))
            continue
        out[i] = hit
        if on_result is not None:
            on_result(i, hit, True)
    if workers == "auto":
        workers = default_workers(len(pending), per_core=1)

    def finished(spec, entry):
        out[spec.index] = entry
        if cache and scheduler is not None and not isinstance(entry, ThresholdsError):
            store_delta_nn(spec.setup, entry)
        if on_result is not None:
            on_result(spec.index, entry, False)

    if scheduler is None and workers == 0 and run_here is not None:
        task = lambda spec: _guarded(run_here, spec.setup)  # noqa: E731 (in-process only, never pickled)
    else:
        task = partial(run_search, cache)
    execute(task, pending, workers=workers, scheduler=scheduler, on_result=finished)
    return out


def _guarded(fn, setup):
    try:
        return fn(setup)
    except ThresholdsError as exc:
        return exc

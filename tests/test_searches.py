"""Several delta_NN searches as independent tasks: in this process or on Dask workers, same numbers."""

from dataclasses import replace

from thresholds.errors import UnsupportedError
from thresholds.nn import NNSetup
from thresholds.store import cached_delta_nn
from validation.searches import delta_nn_many

BASE = NNSetup("linear", "abs", eta=0.2, steps=8, replicas=2, search_max=2.0, law_d=60)


def test_searches_on_two_dask_workers_give_the_in_process_results(tmp_path, monkeypatch):
    setups = [replace(BASE, rho0=r) for r in (0.5, 1.0)] + [replace(BASE, link="staircase")]
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path / "here"))
    seen = []
    here = delta_nn_many(setups, workers=0, on_result=lambda i, e, cached: seen.append((i, cached)))
    assert sorted(seen) == [(0, False), (1, False), (2, False)]
    assert isinstance(here[2], UnsupportedError)  # one refused row does not stop the others
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path / "there"))
    there = delta_nn_many(setups, workers=2)
    assert isinstance(there[2], UnsupportedError)
    for a, b in zip(here[:2], there[:2]):
        assert a.setup == b.setup and a.found == b.found and a.delta_nn == b.delta_nn
        assert [e.delta for e in a.evaluations] == [e.delta for e in b.evaluations]
        assert [list(e.indicator) for e in a.evaluations] == [list(e.indicator) for e in b.evaluations]
    # the workers stored their results in the cache they share with this process: a rerun reads them
    assert all(cached_delta_nn(s) is not None for s in setups[:2])
    seen.clear()
    delta_nn_many(setups[:2], workers=2, on_result=lambda i, e, cached: seen.append((i, cached)))
    assert sorted(seen) == [(0, True), (1, True)]

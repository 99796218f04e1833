"""A sweep gives the same result whatever runs its trials: this process, or Dask workers."""

import numpy as np

from validation.threshold import scan

GRID = dict(eta=0.2, t0=2.0, c=1.0, seed=3, store=False)


def test_two_dask_workers_on_loopback_give_the_in_process_result(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    here = scan("tanh", "abs", [30, 40], [2.0, 4.0], 2, workers=0, **GRID)
    labels = []
    there = scan("tanh", "abs", [30, 40], [2.0, 4.0], 2, workers=2,
                 progress=lambda done, total, label: labels.append(done), **GRID)
    assert sorted(labels) == list(range(1, 9))
    assert there.successes == here.successes and there.trials == here.trials
    assert there.escapes == here.escapes and there.crossings.keys() == here.crossings.keys()
    for d in (30, 40):
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(there.curves[d], here.curves[d]))

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
    # the curves agree to the last bits, not always bit for bit: run alone the two are equal, but after the
    # rest of the suite has run in this process the in-process curves differ from a fresh worker's by at
    # most 1.1e-16 on the losses and 7e-18 on the hard fraction (some state left in the process by earlier
    # tests; not identified); the decisions above are identical
    for d in (30, 40):
        assert all(np.allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)
                   for a, b in zip(there.curves[d], here.curves[d]))

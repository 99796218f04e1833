"""Sweeps store every finished trial as it ends: an interrupted sweep keeps its trials, and the same
sweep run again reuses them and gives the same counts as an uninterrupted run."""

import numpy as np

from validation.threshold import scan

GRID = dict(dims=[30], deltas=[2.0, 4.0], trials_per_point=3, eta=0.2, t0=2.0, c=1.0, seed=7)


def _scan(**kw):
    args = dict(GRID, **kw)
    return scan("tanh", "abs", args.pop("dims"), args.pop("deltas"), args.pop("trials_per_point"), **args)


def test_an_interrupted_sweep_keeps_its_trials_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path / "store"))
    calls = []

    def stop_after_four():
        calls.append(1)
        return len(calls) >= 4
    part = _scan(should_stop=stop_after_four)
    assert part.interrupted and sum(part.trials.values()) == 4
    assert part.trials == {(30, 2.0): 3, (30, 4.0): 1}  # the point in progress keeps its finished trial
    labels = []
    again = _scan(progress=lambda done, total, label: labels.append((done, total, label)))
    assert not again.interrupted and again.reused == 4 and sum(again.trials.values()) == 6
    assert labels[-1] == (6, 6, "d = 30, delta = 4")
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path / "other"))
    fresh = _scan(store=False)
    assert fresh.reused == 0 and fresh.successes == again.successes and fresh.escapes == again.escapes
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(fresh.curves[30], again.curves[30]))


def test_hard_plateau_reads_the_final_fractions_a_sweep_stored(tmp_path, monkeypatch):
    """validation.hard_plateau reads back the final hard fraction of every stored trial of a grid point (the same keys
    as the sweep), and leaves out the trials not run."""
    from thresholds.problem import Problem
    from validation.hard_plateau import final_fractions
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    done = _scan()
    problem = Problem("tanh", "abs", eta=GRID["eta"])
    for delta in GRID["deltas"]:
        f = final_fractions(problem, 30, delta, 3, GRID["t0"], GRID["c"], GRID["seed"])
        assert f.size == 3 and np.all((f >= 0) & (f <= 1))
        assert int(np.sum(f > 0.5)) == done.successes[(30, delta)]   # the sweep's success count, from the same trials
    assert final_fractions(problem, 30, 3.0, 3, GRID["t0"], GRID["c"], GRID["seed"]).size == 0

"""Finished GD trials of a success-rate sweep, stored one by one as they end.

A trial is one unrestricted GD run (validation.threshold.trial) and is determined by its problem
(thresholds.problem, without the horizon), d, delta, horizon T(d) and seed.  Its record

    {"cos2": final fraction of ||Theta||_F^2 in the hard subspace,
     "escape": first step with that fraction > 1/2 (None if never),
     "curves": {"train", "test", "cos2"} per step, kept for the trials the report plots}

is stored in the project's cache (thresholds.cache, kind ``trial``, JSON) under the hash of that key,
so that an interrupted sweep keeps every finished trial and the same command run again reuses them.
"""

from __future__ import annotations

import numpy as np

from thresholds import cache

KIND = "trial"
VERSION = 3  # 2: the test loss on a schedule of about 64 points (validation.threshold.TEST_POINTS); 3: the tiled GD kernel


def trial_key(problem_key: dict, d: int, delta: float, steps: int, seed: int) -> dict:
    """Everything a trial's outcome depends on (``problem_key``: thresholds.problem.Problem.simulation_key)."""
    return {"problem": problem_key, "d": int(d), "delta": float(delta), "steps": int(steps), "seed": int(seed),
            "n_test": 1000, "version": VERSION}


def load(key: dict, *, curves: bool = False):
    """The stored record of ``key`` (None when missing, malformed, or without the curves asked for)."""
    rec = cache.load(KIND, key, expect=dict)
    if rec is None or not isinstance(rec.get("cos2"), float) or not (rec.get("escape") is None
                                                                     or isinstance(rec["escape"], int)):
        return None
    if curves and not (isinstance(rec.get("curves"), dict)
                       and all(isinstance(rec["curves"].get(k), np.ndarray) for k in ("train", "test", "cos2"))):
        return None
    return rec


def store(key: dict, cos2: float, escape, curves: dict | None = None) -> dict:
    """Store (and return) a finished trial; ``curves``: its "train", "test" and "cos2" per step."""
    rec = {"cos2": float(cos2), "escape": None if escape is None else int(escape)}
    if curves is not None:
        rec["curves"] = {k: np.asarray(curves[k], dtype=float) for k in ("train", "test", "cos2")}
    cache.store(KIND, key, rec)
    return rec

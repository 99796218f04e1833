"""validation.settle eq. (1): delta_NN per checkpoint from the deltas' indicators."""

import pytest

from validation.settle import threshold_lines, threshold_summary, thresholds_by_step


def line(delta, paths, indicators, s=0.02, D=400):
    """A settle record with one cut (n = delta D) and one checkpoint per (step, indicator, s.e.)."""
    rec = {"delta": delta, "paths": paths, "replicas": 4, "self_interaction": s,
           "checkpoints": [{"step": step, "cut": {str(D): {"indicator": [f, e], "left_edge": [-0.1, 0.01]}}}
                           for step, f, e in indicators]}
    if s is None:
        del rec["self_interaction"]
    return rec


def test_the_threshold_per_checkpoint_interpolates_the_first_sign_change_on_the_unbiased_lines():
    lines = [line(30.0, 160000, [(100, -0.04, 0.004), (200, -0.02, 0.004)], s=0.15),   # biased: left out
             line(30.0, 880000, [(100, 0.01, 0.004), (200, -0.03, 0.004)]),
             line(35.0, 880000, [(100, 0.02, 0.004), (200, 0.01, 0.004)], s=None),    # not recorded: taken, named
             line(40.0, 880000, [(100, 0.03, 0.004), (200, 0.02, 0.004)])]
    assert [(r["delta"], r["paths"]) for r in threshold_lines(lines)] == [(30.0, 880000), (35.0, 880000),
                                                                          (40.0, 880000)]
    (s1, c1), (s2, c2) = thresholds_by_step(lines, 400)
    assert (s1, c1.value, c1.low, c1.found) == (100, 30.0, 0.0, True)     # the outlier already at the first delta
    # step 200: -0.03 at 30, +0.01 at 35, linear interpolation 30 + 5 * 0.03 / 0.04
    assert s2 == 200 and c2.value == pytest.approx(33.75) and c2.low < 33.75 - 2.5 + 1e-9 and c2.high > 36.25 - 1e-9
    text = threshold_summary(lines, [400, 1000])
    assert "self-interaction not recorded for 35" in text and "n = delta 1000" not in text
    assert "| 100 | below 30 |" in text and "| 200 | 33.75 [" in text
    # no sign change: the threshold lies above the last delta; fewer than two deltas: no table
    high = [line(30.0, 880000, [(100, -0.03, 0.004)]), line(35.0, 880000, [(100, -0.01, 0.004)])]
    assert "| 100 | above 35 |" in threshold_summary(high, [400])
    assert thresholds_by_step(high[:1], 400) == [] and threshold_summary(high[:1], [400]) == ""

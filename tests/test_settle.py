"""validation.settle at width m: the law's indicator at every checkpoint without the two-time kernels, and
delta_NN per checkpoint from the deltas' indicators (eq. (1))."""

import json

import pytest
from click.testing import CliRunner

from validation.settle import threshold_lines, threshold_summary, thresholds_by_step


def test_settle_runs_at_width_two_and_names_short_data_sets(monkeypatch, tmp_path):
    # m = 2: no scalar G columns, the indicator at every checkpoint; n = delta D above the paths of a replica is said
    from validation import settle
    monkeypatch.setattr(settle, "OUT", tmp_path)
    args = ["-a", "gelu", "--eta", "0.1", "--steps", "32", "--delta", "3", "--paths", "2000", "--replicas", "2",
            "--m", "2", "--edge-d", "100,1000"]
    res = CliRunner().invoke(settle.main, args)
    assert res.exit_code == 0, res.output
    (path,) = tmp_path.glob("*.jsonl")
    assert path.name == "gelu_phase_retrieval_eta0.1_T32_m2.jsonl"
    line = json.loads(path.read_text())
    assert [r["step"] for r in line["checkpoints"]] == list(range(2, 33, 2))
    assert all(r["G_quantiles"] is None and set(r["cut"]) == {"0", "100", "1000"} for r in line["checkpoints"])
    last = line["checkpoints"][-1]["cut"]["100"]                          # the replicas' indicators, and their mean
    assert len(last["replicas"]) == 2 and last["indicator"][0] == pytest.approx(sum(last["replicas"]) / 2)
    assert "| 32 | 3.2 |" in res.output and "| - | - | - |" in res.output
    assert "for D = 1000: those columns are one data set of 1000 paths" in res.output   # 3 x 1000 > 1000
    assert len(line["sources"]) == 2                                    # eq. (6f) of the run's own sources
    assert abs(line["self_interaction"] - 3 * (sum(line["sources"]) / 2 + 2) / 1000) < 1e-12
    assert f"self-interaction {line['self_interaction']:.3f}" in res.output
    again = CliRunner().invoke(settle.main, args)                                        # resumed: no second run
    assert again.exit_code == 0 and len(path.read_text().splitlines()) == 1


def test_settle_flags_a_law_biased_by_its_paths():
    # thresholds.dmft eq. (6f) above SELF_INTERACTION_MAX is flagged; a line without the record says nothing
    from validation.settle import _paths_note
    assert _paths_note({"sources": [30, 34], "self_interaction": 0.12}) == (
        "; sources 30-34, self-interaction 0.120 > 0.05: biased by its paths")
    assert _paths_note({"sources": [30, 34], "self_interaction": 0.02}) == "; sources 30-34, self-interaction 0.020"
    assert _paths_note({"delta": 3.0}) == ""


def settle_line(delta, paths, indicators, s=0.02, D=400):
    """A settle record with one cut (n = delta D) and one checkpoint per (step, indicator, s.e.)."""
    rec = {"delta": delta, "paths": paths, "replicas": 4, "self_interaction": s,
           "checkpoints": [{"step": step, "cut": {str(D): {"indicator": [f, e], "left_edge": [-0.1, 0.01]}}}
                           for step, f, e in indicators]}
    if s is None:
        del rec["self_interaction"]
    return rec


def test_the_threshold_per_checkpoint_interpolates_the_first_sign_change_on_the_unbiased_lines():
    lines = [settle_line(30.0, 160000, [(100, -0.04, 0.004), (200, -0.02, 0.004)], s=0.15),   # biased: left out
             settle_line(30.0, 880000, [(100, 0.01, 0.004), (200, -0.03, 0.004)]),
             settle_line(35.0, 880000, [(100, 0.02, 0.004), (200, 0.01, 0.004)], s=None),  # not recorded: taken, named
             settle_line(40.0, 880000, [(100, 0.03, 0.004), (200, 0.02, 0.004)])]
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
    high = [settle_line(30.0, 880000, [(100, -0.03, 0.004)]), settle_line(35.0, 880000, [(100, -0.01, 0.004)])]
    assert "| 100 | above 35 |" in threshold_summary(high, [400])
    assert thresholds_by_step(high[:1], 400) == [] and threshold_summary(high[:1], [400]) == ""


def test_the_threshold_per_checkpoint_takes_the_replicas_jackknife_when_every_line_keeps_them():
    # R = 3 replicas, deltas 30 and 40: the means cross at 35; leaving one replica out moves the crossing to 33.75,
    # 36.25 and 35, so the jackknife s.e. (thresholds.crossing eq. (4)) is sqrt(2/3 (1.25^2 + 1.25^2)) and the
    # half-width sqrt(5^2 + (t_2 s_J)^2) with t_2 the two-sided 95% quantile of 2 degrees of freedom
    from scipy import stats
    low, high = [-0.03, -0.01, -0.02], [0.01, 0.03, 0.02]
    lines = [settle_line(30.0, 880000, [(100, -0.02, 0.001)]), settle_line(40.0, 880000, [(100, 0.02, 0.001)])]
    ((_, plain),) = thresholds_by_step(lines, 400)
    assert plain.value == pytest.approx(35.0) and plain.high - 35.0 < 5.1    # the bracket's half-width alone
    for line, reps in zip(lines, (low, high)):
        line["checkpoints"][0]["cut"]["400"]["replicas"] = reps
    ((_, widened),) = thresholds_by_step(lines, 400)
    s_j = (2 / 3 * (1.25 ** 2 + 1.25 ** 2)) ** 0.5
    hw = (5.0 ** 2 + (stats.t.ppf(0.975, 2) * s_j) ** 2) ** 0.5
    assert widened.value == pytest.approx(35.0)
    assert (widened.low, widened.high) == (pytest.approx(35.0 - hw), pytest.approx(35.0 + hw))
    # one line without its replicas' values: no jackknife
    del lines[0]["checkpoints"][0]["cut"]["400"]["replicas"]
    assert thresholds_by_step(lines, 400)[0][1].high == plain.high

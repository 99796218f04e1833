import dataclasses
import json
import math

import pytest
from click.testing import CliRunner

from validation import release_check, settled_hessian
from thresholds.crossing import logistic_crossing
from validation.release_check import learned_by, log_steps, main, released_crossing, run_one, summary


def test_log_steps_run_from_t1_to_T():
    steps = log_steps(600, 30000)
    assert steps[0] == 600 and steps[-1] == 30000 and steps == sorted(set(steps))
    assert len(steps) == 1 + round(8 * math.log10(50)) and log_steps(3, 4) == [3, 4]


def test_a_released_run_is_the_settled_hessian_run_to_t1(monkeypatch):
    # both modules hand run_gd the same setup (seed, data, test set, start) but the release; q is the hard
    # fraction of the run, at the start of the release about 1 / d and grown after it at delta 24
    seen, results = [], []

    def spy(setup, **kw):
        seen.append(setup)
        results.append(real(setup, **kw))
        return results[-1]
    real = release_check.run_gd
    monkeypatch.setattr(release_check, "run_gd", spy)
    monkeypatch.setattr(settled_hessian, "run_gd", spy)
    rec = run_one("gelu", "phase_retrieval", 0.1, 2, 24.0, 60, 1, 20, 400)
    settled_hessian.run_one("gelu", "phase_retrieval", 0.1, 2, 24.0, 60, [20, 400], 1)
    released, restricted = seen
    assert released.release == 20 and dataclasses.replace(released, release=0) == restricted
    q = dict(rec["q"])
    assert q[20] < 0.1 and rec["learned"] == (q[400] > 0.5)
    assert rec["t_half"] is not None if max(q.values()) > 0.5 else not rec["learned"] or rec["t_half"] is not None
    # eq. (2''): the passage steps rise with the level, and the one at 1/2 is t_1/2
    passages = [rec["t_levels"][f"{level:g}"] for level in release_check.LEVELS]
    assert rec["t_levels"]["0.5"] == rec["t_half"]
    seen_steps = [t for t in passages if t is not None]
    assert seen_steps == sorted(seen_steps) and all(20 <= t <= 400 for t in seen_steps)
    assert passages[: len(seen_steps)] == seen_steps          # a level not reached leaves every higher one None
    path = results[0].hard_overlap / results[0].norm2          # the released run's q at every step, by a loop
    for level, t in zip(release_check.LEVELS, passages):
        first = next((k for k in range(20, 401) if path[k] > level), None)
        assert t == first
    with pytest.raises(Exception, match="t1"):
        run_one("gelu", "phase_retrieval", 0.1, 2, 24.0, 60, 1, 400, 400)


def test_a_rerun_to_a_longer_horizon_is_the_same_run_extended():
    # eq. (4) reads a cell from each run's longest record: that needs the run to T' > T to be the run to T, step
    # for step, up to T (the same data, start and release; the horizon enters no random draw)
    short = run_one("gelu", "phase_retrieval", 0.1, 2, 24.0, 60, 1, 20, 200)
    long = run_one("gelu", "phase_retrieval", 0.1, 2, 24.0, 60, 1, 20, 400)
    q_long = dict(long["q"])
    assert all(q_long[s] == v for s, v in short["q"] if s in q_long) and dict(short["q"])[20] == q_long[20]
    assert short["t_half"] is not None and long["t_half"] == short["t_half"]


def _settled(delta, seed, z, ovs_first_lowest=True):
    """A settled_hessian record with checkpoints 600 / 30000, its hard eigenvalue z at both (the lowest, or with a
    bulk eigenvalue below it)."""
    vals, ovs = ([z, 0.1], [0.3, 0.0]) if ovs_first_lowest else ([z - 0.05, z, 0.1], [0.0, 0.3, 0.0])
    return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": 4, "delta": delta, "d": 800,
            "seed": seed, "period_two": False,
            "points": [{"step": s, "eigenvalues": vals, "overlaps": ovs, "z_H": z} for s in (600, 30000)]}


def _released(delta, seed, learned):
    q = 0.9 if learned else 0.01
    return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": 4, "delta": delta, "d": 800,
            "seed": seed, "t1": 600, "steps": 30000, "q": [[600, 0.001], [30000, q]],
            "train_loss": [[600, 1.0], [30000, 0.9]], "learned": learned, "t_half": 5000 if learned else None}


def test_summary_counts_the_verdicts_that_meet_the_release():
    # run 0: its outlier stays and is the lowest eigenvalue, and the release learns: both rules agree.  Run 1: it
    # stays inside the bulk and the release does not learn: eq. (1) says stays (disagrees), eq. (1') bounded
    # (agrees).  Run 2 has no settled record with its checkpoints: "-", counted by neither
    settled = [_settled(20.0, 0, -0.05), _settled(20.0, 1, -0.05, False), {**_settled(20.0, 2, -0.05),
               "points": [{"step": s, "eigenvalues": [-0.05], "overlaps": [0.3], "z_H": -0.05} for s in (600, 3000)]}]
    released = [_released(20.0, 0, True), _released(20.0, 1, False), _released(20.0, 2, True)]
    lines = summary(released, settled)
    assert lines[2] == "| 4 | 800 | 20 | 0 | 600 | 1 | stays | stays | 0.001 | 0.900 | 5000 | yes |"
    assert lines[3] == "| 4 | 800 | 20 | 1 | 600 | 1 | stays | bounded | 0.001 | 0.010 | - | no |"
    assert lines[4].startswith("| 4 | 800 | 20 | 2 | 600 | 1 | - | - |")
    assert lines[-2] == "- verdicts by settled_hessian eq. (1): 1 of 2 decided runs agree with the release"
    assert lines[-1] == "- verdicts by settled_hessian eq. (1'): 2 of 2 decided runs agree with the release"


def test_a_later_release_meets_the_verdict_of_the_checkpoints_from_its_t1_on():
    # checkpoints 600 / 3000 / 30000: the outlier at 600 alone, so from 600 the run grows (L = eta 0.2 2400 = 48:
    # escapes) and from 3000 it has none (bounded); a release at 3000 that does not learn agrees with the latter
    from validation.release_check import from_t1
    rec = {**_settled(20.0, 0, -0.2), "points": [
        {"step": 600, "eigenvalues": [-0.2, 0.1], "overlaps": [0.3, 0.0], "z_H": -0.2},
        {"step": 3000, "eigenvalues": [-0.2, 0.1], "overlaps": [0.3, 0.0], "z_H": -0.2},
        {"step": 30000, "eigenvalues": [0.1], "overlaps": [0.3], "z_H": math.nan}]}
    assert [p["step"] for p in from_t1(rec, 3000, 30000)["points"]] == [3000, 30000]
    assert from_t1(rec, 1000, 30000) is None and from_t1(rec, 3000, 20000) is None
    late = {**_released(20.0, 0, False), "t1": 3000, "q": [[3000, 0.001], [30000, 0.01]]}
    lines = summary([_released(20.0, 0, True), late], [rec])
    assert lines[2].startswith("| 4 | 800 | 20 | 0 | 600 | 1 | escapes | escapes |")
    assert lines[3].startswith("| 4 | 800 | 20 | 0 | 3000 | 1 | bounded | bounded |")
    assert lines[-1] == "- verdicts by settled_hessian eq. (1'): 2 of 2 decided runs agree with the release"


def test_the_command_resumes_and_refuses_bad_input(tmp_path):
    out = tmp_path / "r.jsonl"
    args = ["--m", "2", "--delta", "24", "--dims", "40", "--seeds", "0", "--t1", "10", "--steps", "30", "--out", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, args)                                 # done already: nothing run
    assert res.exit_code == 0 and res.output == "" and len(out.read_text().splitlines()) == 1
    res = CliRunner().invoke(main, args + ["--start-scale", "0"])        # released at zero: another run
    assert res.exit_code == 0 and len(out.read_text().splitlines()) == 2
    zero = json.loads(out.read_text().splitlines()[1])
    assert zero["scale"] == 0.0 and dict(zero["q"])[10] == 0.0           # nothing in the hard directions at t1
    settled = tmp_path / "s.jsonl"
    settled.write_text(json.dumps(_settled(24.0, 0, -0.05)) + "\n")
    res = CliRunner().invoke(main, ["--summary", str(out), "--records", str(settled)])
    assert res.exit_code == 0 and "| 2 | 40 | 24 | 0 | 10 | 1 | - | - |" in res.output
    for bad, words in ((["--t1", "30", "--steps", "30", "--out", str(out)], "must be below"),
                       (["--seeds", "0,x", "--out", str(out)], "comma-separated integers"),
                       (["--delta", "a", "--out", str(out)], "comma-separated numbers"),
                       (["--summary", str(tmp_path / "none.jsonl")], "no such file"),
                       ([], "--out or --summary")):
        res = CliRunner().invoke(main, bad)
        assert res.exit_code != 0 and words in res.output and "Traceback" not in res.output, (bad, res.output)


def test_fractions_count_the_learned_runs_per_delta_and_bracket_them(tmp_path):
    runs = [_released(5.0, 0, False), _released(5.0, 1, True), _released(5.0, 2, False),
            _released(7.5, 0, True), _released(7.5, 1, True), {**_released(10.0, 0, True), "d": 400}]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    res = CliRunner().invoke(main, ["--summary", str(path), "--fractions"])
    assert res.exit_code == 0, res.output
    c, se = logistic_crossing([5.0, 7.5], [1, 2], [3, 2])
    assert res.output.splitlines()[2:] == ["| 4 | 400 | 600 | 30000 | 1 | 10: 1/1 | <= 10 | - | 0 |",
                                           f"| 4 | 800 | 600 | 30000 | 1 | 5: 1/3, 7.5: 2/2 | [5, 7.5] | {c:.1f} +- {se:.1f} | 0 |"]


def test_the_released_crossing_is_the_logistic_midpoint_of_symmetric_fractions():
    # 1/4, 2/4, 3/4 learned at 4, 8, 12: the logistic curve through them is symmetric about 8
    runs = [_released(delta, s, s < k) for delta, k in ((4.0, 1), (8.0, 2), (12.0, 3)) for s in range(4)]
    c, se = released_crossing(runs)
    assert c == pytest.approx(8.0, abs=1e-4) and 0 < se < 8
    # 2/4 and 3/4 do not bracket 1/2 strictly, 3/4 alone brackets nothing
    assert released_crossing([r for r in runs if r["delta"] != 4.0]) == (None, None)
    assert released_crossing([r for r in runs if r["delta"] == 12.0]) == (None, None)


def test_a_horizon_reads_every_run_at_one_step_by_eq_2_prime(tmp_path):
    late = {**_released(5.0, 0, True), "t_half": 25000}                  # learned after step 2 x 10^4
    short = {**_released(7.5, 0, True), "steps": 20000}                  # learned at 5000, stopped at 2 x 10^4
    stopped = {**_released(7.5, 1, False), "steps": 20000}               # not learned by its 2 x 10^4
    assert learned_by(late) and not learned_by(late, 20000) and learned_by(late, 30000)
    assert learned_by(short, 30000) is True and learned_by(stopped, 30000) is None
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (late, _released(5.0, 1, False), short)))
    res = CliRunner().invoke(main, ["--summary", str(path), "--fractions", "--horizon", "20000"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[2:] == ["| 4 | 800 | 600 | 20000 | 1 | 5: 0/2, 7.5: 1/1 | [5, 7.5] | 6.2 +- 0.7 | 0 |"]
    # at 3 x 10^4 the short run counts: learned by 5000 is learned by any later step
    c, se = logistic_crossing([5.0, 7.5], [1, 1], [2, 1])
    at_30000 = f"| 4 | 800 | 600 | 30000 | 1 | 5: 1/2, 7.5: 1/1 | <= 5 | {release_check.crossing_text(c, se)} | 0 |"
    res = CliRunner().invoke(main, ["--summary", str(path), "--fractions", "--horizon", "30000"])
    assert res.output.splitlines()[2:] == [at_30000]
    # beyond every T the run not learned by its T is undecided: left out and counted, and as the runs left out
    # are unlearned ones, no bracket and no crossing
    res = CliRunner().invoke(main, ["--summary", str(path), "--fractions", "--horizon", "40000"])
    assert res.output.splitlines()[2:] == ["| 4 | 800 | 600 | 40000 | 1 | 5: 1/1, 7.5: 1/1 | - | - | 1 |"]
    res = CliRunner().invoke(main, ["--summary", str(path), "--horizon", "20000"])
    assert res.exit_code != 0 and "--horizon goes with" in res.output and "Traceback" not in res.output


def test_a_cell_is_read_from_each_runs_longest_record_at_its_common_horizon(tmp_path):
    # eq. (4): the runs not learned at 2 x 10^4 rerun to 3 x 10^4 (the same trajectories, extended); the learned
    # ones kept at 2 x 10^4 are read at 3 x 10^4 by eq. (2'), and each run counts once
    first = [{**_released(5.0, s, s == 0), "steps": 20000} for s in range(3)] + \
            [{**_released(7.5, s, s < 2), "steps": 20000} for s in range(3)]
    rerun = [{**_released(5.0, 1, True), "t_half": 26000}, _released(5.0, 2, False),
             {**_released(7.5, 2, True), "t_half": 21000}]
    assert release_check.common_horizon(release_check.longest(first)) == 20000
    assert release_check.common_horizon(release_check.longest(first + rerun)) == 30000
    cell = release_check.at_horizon(first + rerun)
    assert cell.horizon == 30000 and cell.left_out == 0 and len(cell.rows) == 6
    assert sorted((r["delta"], r["learned"]) for r in cell.rows) == [(5.0, False), (5.0, True), (5.0, True),
                                                                     (7.5, True), (7.5, True), (7.5, True)]
    # read at 2 x 10^4 the reruns give what the first records gave
    assert sorted(map(tuple, (r.values() for r in release_check.at_horizon(first + rerun, 20000).rows))) == \
        sorted(map(tuple, (r.values() for r in release_check.at_horizon(first).rows)))
    # a cell where one run was not rerun stays at the horizon that decides it
    assert release_check.at_horizon(first + rerun[:1]).horizon == 20000
    # a prediction with no horizon of its own (a profile at T = 2 x 10^4) meets the run's longest record; one
    # at a horizon (run_key) the record of its own T
    key, by_key = release_check.matching_releases(first + rerun, longest_run=True)
    assert by_key[key(first[1])]["steps"] == 30000 and by_key[key(first[0])]["steps"] == 20000
    key, by_key = release_check.matching_releases(first + rerun)
    assert by_key[key(first[1])] is first[1]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in first + rerun))
    res = CliRunner().invoke(main, ["--summary", str(path), "--fractions"])
    assert res.exit_code == 0 and res.output.splitlines()[2].startswith(
        "| 4 | 800 | 600 | 30000 | 1 | 5: 2/3, 7.5: 3/3 |"), res.output

"""validation.settle at width m: the law's indicator at every checkpoint without the two-time kernels."""

import json

from click.testing import CliRunner


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

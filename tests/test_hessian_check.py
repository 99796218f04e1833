"""validation.hessian_check: one GD run's routes (b) and (c) at a small size, the records' resume and the tables."""

import math

import pytest

import numpy as np

from validation import hessian_check as hc

CASE = ("quad", "phase_retrieval", 6.0, 0.05, 30, 2)


def test_one_run_gives_the_hessian_and_the_engine_on_its_own_law():
    rec = hc.simulated(CASE, 80, 0)
    lows = rec["eigenvalues"]
    assert len(lows) == 2 + 3 and lows == sorted(lows) and rec["lambda_1"] == lows[0]
    assert all(0 <= o <= 1 for o in rec["overlaps"]) and 0 <= rec["O_K"] <= 1 + 1e-9
    assert rec["o_H"] == max(rec["overlaps"]) and rec["lambda_H"] in lows
    # the engine's bulk edge on the run's own n samples lies near the matrix's low end (d = 80: loosely; the
    # check itself is the report's, at d = 1000-2000)
    assert math.isfinite(rec["own_edge"]) and abs(rec["own_edge"] - rec["lambda_1"]) < 0.5
    assert rec["train_loss"] > 0


def test_run_resumes_from_its_records_and_the_summary_lists_every_route(tmp_path, monkeypatch):
    calls = []

    def fake_pred(case, d):
        calls.append(("p", d))
        return {"route": "predicted", **dict(zip(hc.KEYS, (*case, d))), "edge": -0.1, "edge_err": 0.01,
                "z": -0.2, "z_err": 0.01, "overlap2": 0.3, "indicator": 0.05, "indicator_err": 0.01,
                "train_loss": 0.1, "train_loss_err": 0.001, "seconds": 0.0}

    def fake_gd(case, d, seed):
        calls.append(("g", d, seed))
        return {"route": "gd", **dict(zip(hc.KEYS, (*case, d))), "seed": seed, "eigenvalues": [-0.2, -0.1],
                "overlaps": [0.3, 0.0], "lambda_1": -0.2, "lambda_H": -0.2, "o_H": 0.3, "O_K": 0.3,
                "train_loss": 0.1, "own_edge": -0.1, "own_z": float("nan") if seed else -0.21,
                "own_overlap2": float("nan") if seed else 0.3, "own_indicator": 0.04, "seconds": 0.0}

    monkeypatch.setattr(hc, "predicted", fake_pred)
    monkeypatch.setattr(hc, "simulated", fake_gd)
    out = tmp_path / "h.jsonl"
    hc.run([CASE], [100], 2, out, log=lambda s: None)
    hc.run([CASE], [100, 200], 3, out, log=lambda s: None)   # only the new d and the new seed run
    assert calls == [("p", 100), ("g", 100, 0), ("g", 100, 1), ("g", 100, 2), ("p", 200), ("g", 200, 0),
                     ("g", 200, 1), ("g", 200, 2)]
    table = hc.summary(hc.records.read(out))
    assert sum("(a) DMFT law" in line for line in table) == 2
    assert sum("(c) GD's Hessian, 3 runs" in line for line in table) == 2
    assert any("-0.2100 +- 0.0000 (1 of 3)" in line for line in table)   # runs without an outlier are counted
    assert np.isfinite(hc.records.read(out)[0]["edge"])
    rows = hc.records.read(out)
    for r in rows:
        r["own_outliers"], r["full_edge"] = [[-0.21, 0.3], [-0.15, 0.2]][: 1 + r.get("seed", 0) % 2], -0.1
    multi = hc.multiplets(rows)
    assert any("| 1 | -0.2100 +- 0.0000 (0.30 +- 0.00) | -0.2000 +- 0.0000" in line for line in multi)
    assert any("| 2 | -0.1500 +- 0.0000 (0.20 +- 0.00) | -0.1000" in line and line.endswith("| 1 |")
               for line in multi)   # at d = 100 only seed 1 of 0-2 has a second outlier
    orbiting = dict(rows[-1], period_two=True, seed=9, lambda_1=-4.0)   # a run in a period-2 orbit is left out
    assert not any("-4.0000" in line for line in hc.summary(rows + [orbiting]))
    assert "period-2 orbit, left out" in hc.summary(rows + [orbiting])[-1]
    assert hc.weighted_mean({"eigenvalues": [-0.3, -0.1, 0.2], "overlaps": [0.2, 0.6, 0.0]}) == \
        pytest.approx((-0.06 - 0.06) / 0.8)

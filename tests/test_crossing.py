"""thresholds.crossing: when a steep logistic fit resolves its crossing, and validation.crossing_audit."""

import math

import numpy as np
import pytest

from thresholds.crossing import (
    collapsed_gap,
    logistic_crossing,
    logistic_fit,
)


def test_two_intermediate_rates_identify_a_curve_steeper_than_a_quarter_of_the_grid():
    # two rates strictly between 0 and 1 at adjacent deltas: the logistic through them is exact (closed form below),
    # however small its width against the spacing (quad m = 8, d = 200: 1/40 and 18/40 at delta 2.5 and 3)
    x1, x2, p1, p2 = 3.5, 3.75, 1 / 20, 15 / 20
    logit = lambda p: math.log(p / (1 - p))
    w = (x2 - x1) / (logit(p2) - logit(p1))
    c = x1 - w * logit(p1)
    assert w < 0.25 * (x2 - x1)
    got, se = logistic_crossing([x1, x2], [1, 15], [20, 20])
    assert got == pytest.approx(c, abs=1e-4) and 0 < se < (x2 - x1) / math.sqrt(12)
    assert logistic_fit([x1, x2], [1, 15], [20, 20]).width == pytest.approx(w, rel=1e-3)
    assert collapsed_gap([x1, x2], [1, 15], [20, 20]) is None
    # one intermediate rate, or rates that fall with delta: the width is not identified and the fit collapses
    assert collapsed_gap([2.0, 2.5, 3.0], [0, 3, 20], [20] * 3) == (2.5, 3.0)
    assert collapsed_gap([1.0, 2.0], [6, 4], [10, 10]) == (1.0, 2.0)


def test_steep_fits_with_two_intermediate_rates_cover_the_true_crossing():
    # per-trial thresholds logistic about c with width w, 3-30% of the spacing 0.5, 40 trials per delta; the cases
    # with two rates strictly inside (0, 1) and a fitted width below a quarter of the spacing (which the
    # width-only rule called collapsed and reported at the gap's midpoint) cover c at two s.e. as a normal law does,
    # and the fit is nearer c than the midpoint (measured with 4000 draws: coverage 0.950, rms z 1.03, rmse 0.040
    # against the midpoint's 0.108)
    rng = np.random.default_rng(1)
    grid, K = np.array([2.0, 2.5, 3.0, 3.5, 4.0]), 40
    z, err_fit, err_mid = [], [], []
    for _ in range(500):
        c, w = rng.uniform(2.6, 3.4), rng.uniform(0.03, 0.15)
        k = rng.binomial(K, 1 / (1 + np.exp(-(grid - c) / w)))
        fit = logistic_fit(grid, k, [K] * 5)
        if fit is None or np.sum((k > 0) & (k < K)) < 2 or fit.width > 0.125:
            continue
        assert fit.gap is None   # resolved
        z.append((fit.center - c) / fit.se)
        err_fit.append(fit.center - c)
        below = np.flatnonzero(k / K < 0.5).max()
        err_mid.append((grid[below] + grid[below + 1]) / 2 - c)
    z = np.asarray(z)
    assert len(z) > 100
    assert 0.88 <= np.mean(np.abs(z) < 2) <= 0.995 and 0.8 < np.sqrt(np.mean(z**2)) < 1.25
    assert np.sqrt(np.mean(np.square(err_fit))) < 0.6 * np.sqrt(np.mean(np.square(err_mid)))


def test_audit_reads_reports_trial_records_and_settings(tmp_path):
    from validation import crossing_audit as ca
    from validation import records
    (tmp_path / "gd").mkdir()
    (tmp_path / "gd" / "report.md").write_text(
        "| d | delta | successes / trials | rate | Wilson 95% |\n|---|---|---|---|---|\n"
        "| 200 | 4 | 0 / 10 | 0.00 | [0, 0.3] |\n| 200 | 5 | 2 / 10 | 0.20 | [0, 0.5] |\n"
        "| 200 | 6 | 10 / 10 | 1.00 | [0.7, 1] |\n| 400 | 4 | 1 / 10 | 0.10 | - |\n| 400 | 5 | 5 / 10 | 0.50 | - |\n"
        "| 400 | 6 | 9 / 10 | 0.90 | - |\n")
    trials = tmp_path / "t.jsonl"
    for delta, wins in ((3.5, [1] + [0] * 19), (3.75, [1] * 15 + [0] * 5)):
        for k, s in enumerate(wins):
            records.append(trials, {"delta": delta, "d": 800, "trial": k, "success": bool(s)})
    records.append(tmp_path / "other.jsonl", {"delta": 1.0, "d": 200, "q": 0.3})   # not a trial record: skipped
    settings = tmp_path / "settings_width.jsonl"
    records.append(settings, {"route": "gd", "activation": "quad", "m": 8, "setting": "default", "d": 200,
                              "deltas": [2.0, 2.5, 3.0], "successes": [0, 1, 40], "trials": 40})
    records.append(settings, {"route": "forced", "activation": "quad", "m": 8, "setting": "default", "d": 200,
                              "points": [[3.0, 2, 10], [3.5, 30, 40]]})
    found = [ca.audit(c) for c in ca.curves(tmp_path)]
    assert [(f.curve.label, f.curve.d) for f in found] == [
        ("GD (validate)", 200), ("GD (validate)", 400), ("gd quad m = 8 default", 200),
        ("forced quad m = 8 default", 200), ("forced trials", 800)]   # report.md first, then the records by name
    collapsed = [f for f in found if f.gap is not None]
    assert [(f.curve.label, f.curve.d, f.gap, f.intermediate) for f in collapsed] == [
        ("GD (validate)", 200, (5.0, 6.0), 1), ("gd quad m = 8 default", 200, (2.5, 3.0), 1)]
    assert found[4].gap is None and found[4].intermediate == 2   # resolved: two rates inside (0, 1)
    text = ca.report(tmp_path)
    assert "5 success curves read (GD (validate), conventions_width, forced trials)" in text and "**2 collapsed**" in text and "| gd/report.md | GD (validate) | 200 |" in text

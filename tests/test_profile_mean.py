import numpy as np
import pytest
from click.testing import CliRunner

from validation.profile_check import LEARNED, Q_LOW, learned_at, main, mean_crossings, mean_parts
from validation.profile_mean import (MeanThreshold, at_own_q, learned_scaled, mean_push, mean_threshold,
                                     mean_threshold_value, nominal_grid, on_grid, rbar_at)

GRID = nominal_grid(Q_LOW, LEARNED, 12)
SHAPE = 0.5 + np.log(GRID / Q_LOW)            # > 0 on the grid: the sign of rbar is the sign of its delta factor


def _mean(delta, root=20.0):
    """A mean restoring push quadratic in delta whose least value over q changes sign at ``root`` only."""
    return (delta - root) * (1 + 0.01 * delta) * SHAPE * 1e-3


def _runs(deltas, per_delta, noise, seed=0):
    """Runs whose r is the mean plus independent noise at each q, ``noise`` times the mean's slope per unit delta
    there (times 1.2, at delta 20)."""
    rng = np.random.default_rng(seed)
    D = np.repeat(np.asarray(deltas, float), per_delta)
    R = np.array([_mean(x) for x in D]) + noise * SHAPE * 1e-3 * rng.standard_normal((len(D), len(GRID)))
    return D, R


def test_on_grid_is_linear_in_log_q_and_holds_the_ends():
    q = np.array([0.0, 2e-4, 1e-3, 1e-2, 0.3])
    values = 3.0 + 2.0 * np.log(q[1:])
    got = on_grid(q, np.concatenate([[0.0], values]), GRID)
    inside = (GRID >= 2e-4) & (GRID <= 0.3)
    assert np.allclose(got[inside], 3.0 + 2.0 * np.log(GRID[inside]), atol=1e-12)
    assert got[0] == pytest.approx(values[0]) and got[-1] == pytest.approx(values[-1])     # held, not extrapolated
    back = at_own_q(GRID, 3.0 + 2.0 * np.log(GRID), q)                                       # the converse
    assert back[0] == 0.0 and np.allclose(back[1:], values, atol=1e-12)
    shuffled = [0, 3, 1, 4, 2]                                                                # order of q not assumed
    assert np.allclose(on_grid(q[shuffled], np.concatenate([[0.0], values])[shuffled], GRID), got)


def test_the_mean_push_is_the_least_squares_polynomial_of_each_grid_point():
    D, R = _runs([12, 16, 20, 24, 28], 3, 2e-3)
    coef = mean_push(D, R, 2)
    for j in range(len(GRID)):                                            # an independent route: numpy's polyfit
        assert np.allclose(coef[:, j], np.polyfit(D, R[:, j], 2), rtol=1e-9, atol=1e-12)
    assert rbar_at(coef, [16.0, 24.0]).shape == (2, len(GRID))


def test_eq_3_finds_the_root_of_a_noiseless_mean_and_the_ends_of_the_range():
    D, R = _runs([12, 16, 20, 24, 28, 32], 2, 0.0)
    # the fit is exact; the least value over q has a kink at the root (its argmin jumps from the largest q to the
    # smallest), so the linear reading between the fine grid's points is exact to one of its steps (20 / 2000)
    assert mean_threshold_value(D, R, 2) == pytest.approx(20.0, abs=0.01)
    assert mean_threshold_value(D, R[:, :1], 2) == pytest.approx(20.0, abs=1e-6)     # one q: no kink
    D2, R2 = _runs([12, 16, 20, 24], 1, 0.0)
    assert mean_threshold_value(D2, R2 + 1.0, 2) == -np.inf                # positive everywhere: below the range
    assert mean_threshold_value(D2, R2 - 1.0, 2) == np.inf                 # negative at the largest delta
    res = mean_threshold(D2, R2, degree=2)                                  # one run per delta: no spread
    assert res.value == pytest.approx(20.0, abs=0.01) and np.isnan(res.low) and res.se is None
    assert "no spread" in res.text()
    with pytest.raises(ValueError, match="two deltas"):
        mean_threshold([12.0, 12.0], R2[:2])


def test_the_bootstrap_spread_of_eq_3_prime_covers_the_root_and_shrinks_as_the_runs_grow():
    def first(D, R):
        return mean_threshold(D, R[:, :1])
    few = first(*_runs([12, 16, 20, 24, 28, 32], 4, 2.0, seed=1))
    many = first(*_runs([12, 16, 20, 24, 28, 32], 36, 2.0, seed=2))
    assert isinstance(few, MeanThreshold) and few.degree == 2 and few.runs == 24 and few.deltas == 6
    for res in (few, many):
        assert res.low <= res.value <= res.high and res.off_range == 0
        assert abs(res.value - 20.0) < 3 * res.se
    # nine times the runs: the spread about a third (the bootstrap's own noise allowed)
    assert 2.0 < few.se / many.se < 4.5


def test_eq_3_is_biased_up_by_its_least_value_and_eq_3_prime_is_not():
    # the module docstring's numbers: 30 data-set draws of 24 runs, a mean that changes sign at every q at once
    D = [12, 16, 20, 24, 28, 32]
    draws = [_runs(D, 4, 2.0, seed=s) for s in range(30)]
    whole = np.array([mean_threshold_value(x, R, 2) for x, R in draws]) - 20.0
    first = np.array([mean_threshold_value(x, R[:, :1], 2) for x, R in draws]) - 20.0
    se_whole, se_first = whole.std(ddof=1) / np.sqrt(30), first.std(ddof=1) / np.sqrt(30)
    assert whole.mean() > 5 * se_whole and whole.mean() > 0.5                  # +0.87, s.e. 0.06
    assert abs(first.mean()) < 2.5 * se_first                                  # +0.12 +- 0.09
    # resampling sees part of the bias only: the draws' mean lies above the estimate by less than the bias
    res = mean_threshold(*_runs(D, 4, 2.0, seed=0))
    assert res.value - 20.0 > (res.low + res.high) / 2 - res.value


def test_eq_2_at_d_is_eq_9_and_at_infinity_the_sign_of_the_mean():
    rng = np.random.default_rng(3)
    for _ in range(200):
        r, f, rbar = (np.concatenate([[0.0], rng.normal(0, 1, 6)]) for _ in range(3))
        assert learned_scaled(r, f, rbar, 1) == learned_at(r, f, 1)               # r + f, rbar cancels
        assert learned_scaled(r, f, rbar, None) == bool(np.all(rbar[1:] > 0))
        s = 4 ** -0.5
        assert learned_scaled(r, f, rbar, 4) == bool(np.all(rbar[1:] + s * (r[1:] - rbar[1:] + f[1:]) > 0))
    # a run whose r is negative through its own fluctuation learns at 4d when the mean is positive
    r, f, rbar = np.array([0, -0.01, 0.05]), np.array([0.02, 0.0, 0.0]), np.array([0, 0.02, 0.05])
    assert not learned_scaled(r, f, rbar, 1) and learned_scaled(r, f, rbar, 4)
    assert not learned_at(r, f, 4)                                                 # eq. (9) keeps r whole


def _records(D, R, F=None, m=1, d=400):
    q = np.concatenate([[0.0], GRID])
    F = np.zeros_like(R) if F is None else F
    return [{"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": m, "d": d, "t1": 100, "delta": float(x),
             "seed": i, "steps": 300, "q": q.tolist(), "stall": None,
             "push": [0.01] + list(r + f), "push_mirror": [-0.01] + list(r - f)}
            for i, (x, r, f) in enumerate(zip(D, R, F))]


def test_the_table_the_crossings_and_the_figure_of_the_records_follow_the_module(tmp_path, monkeypatch):
    import validation.profile_check as pc
    D, R = _runs([12, 16, 20, 24, 28, 32], 4, 2.0, seed=4)
    F = 2e-3 * np.random.default_rng(5).standard_normal(R.shape)
    recs = _records(D, R, F) + _records(*_runs([12, 16], 1, 0.0), d=800)[:1]     # one delta: no cell
    ((key, (scaled, whole, first)),) = mean_crossings(recs).items()
    assert key == (1, 400, 100)
    for got, want in ((whole, mean_threshold(D, R)), (first, mean_threshold(D, R[:, :1]))):   # R read back from q
        assert np.allclose([got.value, got.low, got.high], [want.value, want.low, want.high], rtol=1e-12)
    assert [c.ratio for c in scaled] == [1, 2, 4, 16] and all(c.draws == 400 for c in scaled)
    assert scaled[0].value is not None and scaled[0].se_rbar == 0.0        # at d' = d rbar cancels from eq. (2)
    # the figure's mean law: eq. (2) at d' = d, 2d, 4d, 16d, then eq. (3') at d = inf with half its 16-84 % range
    seen = {}
    monkeypatch.setattr("thresholds.plots.scaled_profile_figure",
                        lambda path, profiles, measured, limits, title="", law="": seen.update(profiles=profiles,
                                                                                               law=law))
    pc.figure(tmp_path / "f.png", recs, [], {}, 400, law="mean")
    assert seen["profiles"] == {(1, 400): [(c.ratio * 400, c.value, c.se) for c in scaled]
                                + [(None, first.value, first.se)]}
    assert "mean" in seen["law"]
    lines = mean_parts(recs)
    assert lines[2].startswith("| 1 | 400 | 100 | 24 | 6 | 2 | " + " | ".join(c.text() for c in scaled)) and lines[2].endswith(
        f" | {whole.text()} (0 / 400) | {first.text()} (0 / 400) |")
    assert len(lines) == 3


def test_the_command_plots_the_mean_law_and_refuses_it_without_summary(tmp_path):
    import json
    D, R = _runs([12, 16, 20, 24, 28, 32], 3, 2.0, seed=6)
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(D, R)))
    res = CliRunner().invoke(main, ["--summary", str(path), "--plot", str(tmp_path / "f.png"), "--law", "mean",
                                    "--degree", "1"])
    assert res.exit_code == 0, res.output
    assert "| 1 | 400 | 100 | 18 | 6 | 1 |" in res.output and (tmp_path / "f.png").stat().st_size > 10000
    res = CliRunner().invoke(main, ["--law", "mean", "--out", str(tmp_path / "q.jsonl")])
    assert res.exit_code != 0 and "--summary" in res.output and "Traceback" not in res.output


def test_eq_5_reads_the_fluctuations_in_units_of_n_to_the_minus_half():
    from validation.profile_check import fluctuation_parts
    from validation.profile_mean import fluctuation_scale
    rng = np.random.default_rng(7)
    deltas = np.repeat([12.0, 16.0, 20.0, 24.0, 28.0, 32.0], 30)
    for d in (400, 1600):                      # fluctuations of sizes 0.3 and 2 in units of n^-1/2 at either d
        n = deltas * d
        noise = rng.standard_normal((2, len(deltas), len(GRID))) / np.sqrt(n)[:, None]
        R = np.array([_mean(x) for x in deltas]) + 0.3 * noise[0]
        F = 2.0 * noise[1]
        scale = fluctuation_scale(deltas, d, R, F, GRID)
        assert scale.dof_r == len(deltas) - 3 and scale.dof_f == len(deltas)
        assert np.all(np.abs(scale.s_r / 0.3 - 1) < 4 / np.sqrt(2 * scale.dof_r))
        assert np.all(np.abs(scale.s_f / 2.0 - 1) < 4 / np.sqrt(2 * scale.dof_f))
    # against a plain reference: the residuals of numpy's polyfit at one grid point
    j = 3
    fit = np.polyval(np.polyfit(deltas, R[:, j], 2), deltas)
    assert scale.s_r[j] == pytest.approx(np.sqrt(np.sum(deltas * 1600 * (R[:, j] - fit) ** 2) / (len(deltas) - 3)))
    with pytest.raises(ValueError, match="more runs"):
        fluctuation_scale([12.0, 16.0, 20.0], 400, R[:3], F[:3], GRID)
    lines = fluctuation_parts(_records(deltas[:36], R[:36], F[:36], d=1600))
    assert lines[2].startswith("| 1 | 1600 | 100 | 36 | ") and lines[2].count("+-") == 8


def test_eq_6_draws_rbar_with_the_least_squares_spread_of_its_residuals():
    from validation.profile_mean import residual_draws
    # runs whose fluctuation is sigma / sqrt(delta) at every q (n^-1/2 at one d), independent across q
    D = np.repeat([12.0, 16.0, 20.0, 24.0, 28.0, 32.0], 5)
    sigma = 3e-3
    rng = np.random.default_rng(11)
    R = np.array([_mean(x) for x in D]) + sigma * rng.standard_normal((len(D), len(GRID))) / np.sqrt(D)[:, None]
    draws = residual_draws(D, R, 2, draws=2000, seed=1)
    assert draws.shape == (2000, 3, len(GRID))
    # an independent route: the least-squares covariance, pinv diag(sigma^2 / delta) pinv^T, at delta 14 and 30
    P = np.linalg.pinv(np.vander(D, 3))
    for x in (14.0, 30.0):
        v = np.vander([x], 3) @ P
        want = sigma * np.sqrt(np.sum(v ** 2 / D))
        got = np.array([rbar_at(c, x)[0] for c in draws]).std(axis=0)
        assert np.mean(got) / want == pytest.approx(1.0, abs=0.1)            # 12 q, residual sigma from 27 dof
        assert np.allclose(np.mean([rbar_at(c, x)[0] for c in draws], axis=0), rbar_at(mean_push(D, R, 2), x)[0],
                           atol=0.1 * want)                                   # centred on the fit
    with pytest.raises(ValueError, match="more runs"):
        residual_draws(D[:3], R[:3], 2)


def test_eq_6_s_e_follows_the_crossings_spread_over_data_sets():
    from validation.profile_mean import ScaledCrossing, residual_draws, scaled_crossing
    q = np.concatenate([[0.0], GRID])
    D = np.repeat([12.0, 16.0, 20.0, 24.0, 28.0, 32.0], 4)
    got = {4: [], 16: []}
    for s in range(30):     # 30 data-set draws: runs with r's fluctuation and a force, both n^-1/2
        rng = np.random.default_rng(100 + s)
        size = SHAPE * np.sqrt(20 / D)[:, None]
        R = np.array([_mean(x) for x in D]) + 6e-3 * size * rng.standard_normal((len(D), len(GRID)))
        F = 4e-3 * size * rng.standard_normal((len(D), len(GRID)))
        runs = [(np.concatenate([[0.0], r]), np.concatenate([[0.0], f]), q) for r, f in zip(R, F)]
        draws = residual_draws(D, R, 2, draws=100, seed=s)
        for ratio in got:
            c = scaled_crossing(D, runs, GRID, mean_push(D, R, 2), draws, ratio)
            assert isinstance(c, ScaledCrossing) and c.value is not None
            got[ratio].append((c.value, c.se, c.se_rbar))
    for ratio, rows in got.items():
        values, se, se_rbar = np.array(rows).T
        # the reported s.e. (median) against the crossings' spread over the 30 data sets (itself known to about
        # 13 %): measured 1.66 / 1.35 at 4d and 1.62 / 1.30 at 16d, so eq. (6) errs on the wide side; the logistic
        # s.e. alone is 1.15 here, about the spread already, so this bound checks calibration, the next line the
        # presence of rbar's part
        assert 0.8 < np.median(se) / values.std(ddof=1) < 1.8
        assert np.median(se_rbar) > 0.3                        # rbar's part is there at d' > d


def test_eq_2_is_set_beside_gd_at_d_prime_with_the_combined_s_e(monkeypatch):
    from thresholds.crossing import logistic_crossing
    from validation.profile_check import mean_against_gd
    D, R = _runs([12, 16, 20, 24, 28, 32], 4, 2.0, seed=4)
    recs = _records(D, R, 2e-3 * np.random.default_rng(5).standard_normal(R.shape))
    # GD's releases at d' = 800 and 6400 (t1 of the profiles, the random start), and one at another t1 left out
    counts = {8: 0, 12: 3, 16: 7, 20: 10}
    setup = {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": 1}
    # learned runs escape at t_1/2 = t1 + 600 / (delta - 6 + i / 4), earlier at larger delta (escape_law eq. (1))
    rel = [{**setup, "d": dd, "t1": 100, "delta": float(x), "seed": i, "learned": i < k, "steps": 300,
            "t_half": 100 + int(600 / (x - 6 + i / 4)) if i < k else None}
           for dd in (800, 6400) for x, k in counts.items() for i in range(10)]
    rel += [{**setup, "d": 1600, "t1": 50, "delta": 10.0, "seed": i, "learned": i < 5, "steps": 300} for i in range(10)]
    ((_, (scaled, _, _)),) = mean_crossings(recs).items()
    lines = mean_against_gd(recs, rel)
    assert len(lines) == 4                                     # 2d and 16d; 4d (d' = 1600) has GD only at t1 = 50
    c_gd, se_gd = logistic_crossing(list(counts), list(counts.values()), [10] * 4)
    # GD's infinite-horizon crossing beside it: escape_law's delta_c of the same runs
    from validation.escape_law import cell_data, fit_with_errors
    law = fit_with_errors(cell_data([r for r in rel if r["d"] == 800]))
    inf_c, inf_se = law.delta_c, law.crossing_se(None, 100, 200)
    assert 6 < inf_c < 12 and inf_se > 0
    for line, c in zip(lines[2:], (scaled[1], scaled[3])):
        z = (c.value - c_gd) / np.hypot(c.se, se_gd)
        z_inf = (c.value - inf_c) / np.hypot(c.se, inf_se)
        assert line == (f"| 1 | 400 | {c.ratio * 400} | {c.text()} | {c_gd:.1f} +- {se_gd:.1f} | 300 | {z:+.1f} | "
                        f"{inf_c:.2f} +- {inf_se:.2f} | {z_inf:+.1f} |")
    # a cell that learns at every delta at every d': eq. (2)'s crossing lies below its least delta, 12; GD's, about
    # 14.6 here, lies above it, and the table says by how many of GD's s.e.
    high = _records(D, R + 1.0)
    (c,) = [x for x in mean_crossings(high)[(1, 400, 100)][0] if x.ratio == 2]
    assert c.value is None and c.bound == ("<", 12.0) and c.text() == "< 12"
    # where GD's fractions at its horizon do not bracket 1/2 the row keeps the infinite-horizon reading alone
    from validation import profile_check
    monkeypatch.setattr(profile_check, "released_crossings", lambda released, t1s: {})
    z_inf = (scaled[1].value - inf_c) / np.hypot(scaled[1].se, inf_se)
    assert mean_against_gd(recs, rel)[2] == (f"| 1 | 400 | 800 | {scaled[1].text()} | - | - | - | "
                                             f"{inf_c:.2f} +- {inf_se:.2f} | {z_inf:+.1f} |")
    monkeypatch.undo()
    # GD's infinite-horizon crossing, about 11.1 here, lies below 12, on eq. (2)'s side
    assert inf_c < 12
    assert mean_against_gd(high, rel)[2].endswith(f"| GD {(c_gd - 12) / se_gd:.1f} s.e. on the other side | "
                                                  f"{inf_c:.2f} +- {inf_se:.2f} | same side |")
    low = mean_crossings(_records(D, R - 1.0))[(1, 400, 100)][0][1]
    assert low.bound == (">", 32.0) and low.text() == "> 32"

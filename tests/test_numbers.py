"""The two-sample tests of thresholds.numbers and the DMFT law's path check built on them."""

import math

import numpy as np
import pytest

from thresholds.numbers import differences_beyond_noise, welch_dof
from thresholds.search import PATH_CHECK_ALPHA, path_flags


def test_welch_dof_limits():
    """Equal errors from r replicas each give 2 (r - 1); a zero error leaves the other run's r - 1; a single
    replica per run gives no estimate (inf)."""
    assert welch_dof(0.3, 0.3, 4, 4) == pytest.approx(6.0)
    assert welch_dof(0.3, 0.0, 4, 4) == pytest.approx(3.0)
    assert welch_dof(0.3, 0.1, 1, 1) == math.inf


def test_single_difference_uses_the_t_quantile():
    """One test at level 0.05 with 6 degrees of freedom flags |t| above t_0.975(6) = 2.447, not above 1.96."""
    assert differences_beyond_noise([2.5], [1.0], [6.0], 0.05) == [True]
    assert differences_beyond_noise([2.3], [1.0], [6.0], 0.05) == [False]
    assert differences_beyond_noise([2.3], [1.0], [math.inf], 0.05) == [True]
    assert differences_beyond_noise([0.1], [0.0], [6.0], 0.05) == [True]


def _trajectories(rng, shift, replicas=4, steps=16, rho=0.9):
    """Two runs' checkpoint curves: per replica an AR(1) sequence (correlation rho between checkpoints, like a
    DMFT trajectory), the second run shifted by ``shift`` standard errors of the difference at every step."""
    z = rng.standard_normal((2, replicas, steps))
    x = np.empty_like(z)
    x[..., 0] = z[..., 0]
    for k in range(1, steps):
        x[..., k] = rho * x[..., k - 1] + math.sqrt(1 - rho * rho) * z[..., k]
    mean, se = x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(replicas)
    mean[1] += shift * math.sqrt(2 / replicas)
    dof = [welch_dof(a, b, replicas, replicas) for a, b in zip(se[0], se[1])]
    return list(mean[0] - mean[1]), list(np.hypot(se[0], se[1])), dof


@pytest.mark.parametrize("shift, low, high", [(0.0, 0.0, PATH_CHECK_ALPHA), (5.0, 0.9, 1.0)])
def test_path_check_false_alarms_and_power(shift, low, high):
    """With 4 replicas per run and 16 correlated checkpoints, a law that does not move is flagged at most
    PATH_CHECK_ALPHA of the time (measured 0.025: Sidak is conservative for correlated checkpoints; the former
    rule, any checkpoint beyond 2 s.e., flagged 45%), and a shift of 5 s.e. almost always (measured 0.97).
    2000 draws: binomial s.e. 0.005 at the null, so the bound has 5 s.e. of room."""
    rng = np.random.default_rng(1)
    flagged, naive = 0, 0
    for _ in range(2000):
        diff, err, dof = _trajectories(rng, shift)
        at_horizon, on_curve = path_flags(diff, err, dof)
        flagged += at_horizon or any(on_curve)
        naive += any(abs(d) > 2 * e for d, e in zip(diff, err))
    assert low <= flagged / 2000 <= high
    if shift == 0:
        assert naive / 2000 > 0.3   # the rule this replaces


def _replica_evals(deltas, per_replica):
    """Evaluations at one step from per-replica indicator values (rows: deltas, columns: replicas)."""
    from thresholds.nn import Evaluation
    out = []
    for d, row in zip(deltas, per_replica):
        row = np.asarray(row, float)
        m, se = float(row.mean()), float(row.std(ddof=1) / math.sqrt(row.size))
        out.append(Evaluation(float(d), [1], [m], [se], [m], [se], [0.0], [0.0], [math.nan], [math.nan], [math.nan],
                              indicator_replicas=[row.tolist()], clipped_replicas=[row.tolist()]))
    return out


def test_jackknife_interval_is_the_plain_numpy_one():
    """crossing eq. (4): the interval is x -+ hypot(bracket / 2, t_{R-1} s_J), s_J the jackknife s.e. of the crossing of
    the leave-one-out replica means, recomputed here with plain NumPy interpolation."""
    from scipy import stats
    from thresholds.crossing import crossing
    rng = np.random.default_rng(3)
    deltas = np.array([9.0, 10.0, 10.5, 11.0, 11.5, 12.0])
    R = 8
    vals = 0.25 * (deltas[:, None] - 10.8) + rng.normal(0, 0.1, R)[None, :] + rng.normal(0, 0.02, (deltas.size, R))
    c = crossing(_replica_evals(deltas, vals), 1)

    def root(f):
        k = int(np.flatnonzero((f[:-1] <= 0) & (f[1:] > 0))[0])
        return deltas[k] + (deltas[k + 1] - deltas[k]) * (-f[k]) / (f[k + 1] - f[k]), k

    x, k = root(vals.mean(axis=1))
    loo = np.array([root(np.delete(vals, r, axis=1).mean(axis=1))[0] for r in range(R)])
    s_j = math.sqrt((R - 1) / R * np.sum((loo - loo.mean()) ** 2))
    hw = math.hypot((deltas[k + 1] - deltas[k]) / 2, stats.t.ppf(0.975, R - 1) * s_j)
    assert c.value == pytest.approx(x, rel=1e-12)
    assert c.high == pytest.approx(max(x + hw, c.high), rel=1e-12) and c.high - x >= hw * (1 - 1e-12)
    assert x - c.low >= min(hw, x) * (1 - 1e-12)


def test_a_replica_in_a_period_two_orbit_is_left_out_of_the_means_and_the_jackknife():
    """evaluation eq. (3) and crossing eq. (4): a replica flagged at one delta (its value there wild) is out of the
    replica mean and the leave-one-out means at that delta, and in them elsewhere; recomputed with plain NumPy on the
    masked values.  With every replica flagged nothing is left out; with one settled replica left the jackknife
    cannot be formed and the interval is open above."""
    from scipy import stats
    from thresholds.crossing import crossing
    from thresholds.evaluation import settled
    rng = np.random.default_rng(5)
    deltas = np.array([9.0, 10.0, 10.5, 11.0, 11.5, 12.0])
    R = 5
    vals = 0.25 * (deltas[:, None] - 10.8) + rng.normal(0, 0.1, R)[None, :] + rng.normal(0, 0.02, (deltas.size, R))
    vals[3, 2] = -0.6                               # replica 2 in an orbit at delta 11, far below the others
    evals = _replica_evals(deltas, vals)
    evals[3].period_two = [2]
    evals[3].left_edge_replicas = [[0.1, 0.2, -0.5, 0.3, 0.4]]
    evals[3].hard_z = [[-0.1, math.nan, -0.9, -0.3, 0.2]]
    raw = (evals[3].indicator[0], evals[3].left_edge[0])
    evals = [settled(e) for e in evals]
    kept = [0, 1, 3, 4]
    assert evals[3].indicator[0] == pytest.approx(vals[3, kept].mean(), rel=1e-12) != raw[0]
    assert evals[3].indicator_err[0] == pytest.approx(vals[3, kept].std(ddof=1) / 2, rel=1e-12)
    assert evals[3].left_edge[0] == pytest.approx(0.25) and evals[3].outlier_z[0] == pytest.approx(-0.2)
    assert evals[3].indicator_replicas[0][2] == -0.6                     # the raw values are kept
    assert evals[2].indicator[0] == pytest.approx(vals[2].mean(), rel=1e-12)
    c = crossing(evals, 1)
    masked = vals.copy()
    masked[3, 2] = np.nan

    def root(f):
        k = int(np.flatnonzero((f[:-1] <= 0) & (f[1:] > 0))[0])
        return deltas[k] + (deltas[k + 1] - deltas[k]) * (-f[k]) / (f[k + 1] - f[k]), k

    x, k = root(np.nanmean(masked, axis=1))
    loo = np.array([root(np.nanmean(np.delete(masked, r, axis=1), axis=1))[0] for r in range(R)])
    s_j = math.sqrt((R - 1) / R * np.sum((loo - loo.mean()) ** 2))
    hw = math.hypot((deltas[k + 1] - deltas[k]) / 2, stats.t.ppf(0.975, R - 1) * s_j)
    assert c.value == pytest.approx(x, rel=1e-12)
    assert c.high - x >= hw * (1 - 1e-12) and c.high == pytest.approx(max(x + hw, c.high), rel=1e-12)
    # every replica flagged: nothing to prefer, the plain means
    every = _replica_evals(deltas[3:4], vals[3:4])[0]
    every.period_two = list(range(R))
    assert settled(every).indicator[0] == pytest.approx(vals[3].mean(), rel=1e-12)
    # two replicas, one flagged: one settled value at that delta, no jackknife there
    pair = _replica_evals(deltas, vals[:, :2])
    pair[3].period_two = [0]
    pair = [settled(e) for e in pair]
    two = crossing(pair, 1)
    assert two.found and two.high == math.inf and pair[3].indicator[0] == vals[3, 1]


@pytest.mark.parametrize("common, independent", [(0.1, 0.01), (0.07, 0.07), (0.0, 0.1)])
def test_jackknife_interval_covers_whatever_the_replicas_share(common, independent):
    """Replicas whose error is shared across the deltas (a seed per replica, as the DMFT and GD laws draw them), partly
    shared, or independent per delta: the jackknife interval (crossing eq. (4)) covers the true crossing at least 92%
    of the time in 400 synthetic searches of 8 replicas (its nominal level is 95%; binomial s.e. 1.1%)."""
    from thresholds.crossing import crossing
    rng = np.random.default_rng(11)
    deltas = np.array([8.0, 10.55, 10.93, 11.03, 11.15, 11.37, 11.6])
    covered = 0
    for _ in range(400):
        vals = (0.25 * (deltas[:, None] - 11.0) + rng.normal(0, common, 8)[None, :]
                + rng.normal(0, independent, (deltas.size, 8)))
        c = crossing(_replica_evals(deltas, vals), 1)
        covered += c.low <= 11.0 <= c.high
    assert covered >= 0.92 * 400, covered


def test_seed_spread_reads_a_search_and_drops_the_replicas_for_the_plain_interval(tmp_path):
    """validation.seed_spread: from a search's JSON, the interval of eq. (4) is crossing() on its evaluations, and the
    plain one crossing() on the same evaluations without their replicas' values; the table's mean and sd are NumPy's."""
    import json
    from dataclasses import asdict
    from thresholds.crossing import crossing
    from validation.seed_spread import intervals, table
    rng = np.random.default_rng(5)
    deltas = np.array([9.0, 10.0, 10.5, 11.0, 11.5, 12.0])
    paths, values = [], []
    for seed in range(3):
        vals = 0.25 * (deltas[:, None] - 10.8) + rng.normal(0, 0.1, 8)[None, :] + rng.normal(0, 0.05, (6, 8))
        evals = _replica_evals(deltas, vals)
        c = crossing(evals, 1)
        res = {"setup": {"steps": 1, "seed": seed}, "delta_nn": c.value, "evaluations": [asdict(e) for e in evals]}
        x, jack, plain = intervals(res)
        assert (x, jack.low, jack.high) == (c.value, c.low, c.high)
        for e in evals:
            e.indicator_replicas = []
        p = crossing(evals, 1)
        assert (plain.low, plain.high) == (p.low, p.high)
        paths.append(tmp_path / f"s{seed}.json")
        paths[-1].write_text(json.dumps(res))
        values.append(c.value)
    text = table([str(p) for p in paths])
    assert f"mean {np.mean(values):.3f}" in text and f"standard deviation {np.std(values, ddof=1):.3f}" in text

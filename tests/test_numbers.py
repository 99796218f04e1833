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

"""A planted hard overlap: the d = inf DMFT from an informed start (thresholds.dmft, eq. (7)) against GD
started from the same overlap, and the refusals."""

import math

import numpy as np
import pytest

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.errors import UnsupportedError
from validation.simulate import GDSetup, run_gd


def test_gd_starts_from_the_planted_overlap():
    res = run_gd(GDSetup("quad", "phase_retrieval", 3.0, 300, 0.05, 0, complement=False, planted=0.3, seed=1,
                         test_loss=False))
    assert res.hard_overlap[0] == pytest.approx(0.09, rel=1e-12)
    mixed = run_gd(GDSetup("gelu", "mixed", 3.0, 300, 0.05, 0, complement=False, planted=-0.2, seed=1,
                           test_loss=False))
    assert mixed.hard_overlap[0] == pytest.approx(0.04, rel=1e-12)  # the easy coordinate keeps its draw


def test_planted_dmft_follows_gd_through_the_escape():
    """quad / phase retrieval, delta 5, eta 0.05, M_H(0) = 0.2: the hard fraction rises from 0.04 to about
    0.75 by step 25 and 0.98 by step 50.  DMFT (4 x 10k paths) against GD at d = 1000 (4 seeds): within
    4 combined standard errors plus 0.02 for the O(d^-1/2) finite-size effects (at d = 2000 the same
    numbers were 0.742 +- 0.038 against 0.748 +- 0.029 for the DMFT at step 25)."""
    T = 50
    res = solve_dmft(DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, T, paths=40000, replicas=4, planted=0.2))
    assert res.hard_overlap[0] == pytest.approx(0.04)
    assert res.hard_fraction[0] == pytest.approx(0.04 / 1.04)
    runs = [run_gd(GDSetup("quad", "phase_retrieval", 5.0, 1000, 0.05, T, complement=False, planted=0.2, seed=s,
                           test_loss=False)) for s in range(4)]
    frac = np.array([r.hard_overlap / r.norm2 for r in runs])
    for t in (10, 25, 50):
        gd, gd_se = frac[:, t].mean(), frac[:, t].std(ddof=1) / 2
        tol = 4 * np.hypot(gd_se, res.hard_fraction_err[t]) + 0.02
        assert abs(res.hard_fraction[t] - gd) < tol, (t, res.hard_fraction[t], gd, tol)
    assert res.hard_fraction[25] > 0.5 > res.hard_fraction[10]  # the escape happens in this window
    norm = np.array([r.norm2 for r in runs])[:, T]
    assert abs(res.norm2[T] - norm.mean()) < 4 * np.hypot(norm.std(ddof=1) / 2, res.norm2_err[T]) + 0.02
    steps = res.to_json()["steps"]
    assert steps[T]["hard_fraction"] == pytest.approx(res.hard_fraction[T])


def test_planted_overlap_refusals():
    with pytest.raises(UnsupportedError, match="sources"):
        solve_dmft(DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5, paths=400, replicas=2, planted=0.1,
                             response="pathwise"))
    with pytest.raises(UnsupportedError, match="no hard direction"):
        solve_dmft(DMFTSetup("gelu", "noisy_linear", 5.0, 0.05, 5, paths=400, replicas=2, planted=0.1))
    with pytest.raises(Exception, match="finite"):
        solve_dmft(DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5, paths=400, replicas=2, planted=float("nan")))


def test_critical_overlap_brackets_the_escape():
    """thresholds.planted: the bisection returns a bracket whose upper end escapes by the horizon and whose
    lower end does not (the runs it made say so), narrower than the requested ratio; eq. (2) is 2 Phi_bar."""
    from scipy.stats import norm
    from thresholds.planted import QUARTILE, critical_overlap, success_probability
    from thresholds.problem import Problem
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=40)
    qc = critical_overlap(problem, 5.0, 40, low=0.02, high=0.5, ratio=1.3, paths=8000)
    fracs = dict(qc.runs)
    assert fracs[qc.high] > 0.5 >= fracs[qc.low]
    assert qc.high / qc.low <= 1.3 and qc.low < qc.value < qc.high
    assert all((f > 0.5) == (q >= qc.high) for q, f in qc.runs)  # monotone in q0 on the runs made
    assert success_probability(0.05, 1.2, 400) == pytest.approx(2 * norm.sf(20 * 0.05 / 1.2))
    assert success_probability(QUARTILE * 1.3 / math.sqrt(800), 1.3, 800) == pytest.approx(0.5)


def test_planted_runs_have_their_own_cache_keys():
    plain = DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5)
    assert "planted" not in plain.cache_key()       # the keys of the versions before the planted start
    planted = DMFTSetup("quad", "phase_retrieval", 5.0, 0.05, 5, planted=0.1, planted_step=2)
    assert planted.cache_key()["planted"] == 0.1 and planted.cache_key()["planted_step"] == 2

"""Conditioned labels of the DMFT law (thresholds.dmft eq. (10d)) and ``thresholds nn --settled-labels``."""

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from thresholds.catalog import get_link
from thresholds.dmft import (SETTLED_EIGENVALUE, DMFTSetup, _targets_below, fitted_eigenvalues, solve_dmft,
                             stable_label_limit)
from thresholds.errors import ThresholdsError, UnsupportedError
from thresholds.nn import NNSetup
from thresholds.problem import Problem
from thresholds.store import evaluation_key, result_key, setup_fields


@pytest.mark.parametrize("m, a, b, eta, delta", [(1, 1.0, 0.0, 0.05, 5.0), (4, 2.0, 0.0, 0.05, 1.5),
                                                 (16, 1.0, 0.0, 0.05, 2.0), (2, 1.0, 0.5, 0.1, 3.0)])
def test_quad_limit_is_the_closed_form(m, a, b, eta, delta):
    """quad: sigma'(v)^2 = 4 sigma(v) for any bias, so at a fitted point sum_j (a sigma'_j)^2 / m = 4 a y and lambda* =
    1 - 4 a eta y / delta at every m and b: y_c = (1 - bound) delta / (4 a eta)."""
    for bound in (-1.0, SETTLED_EIGENVALUE):
        y_c = stable_label_limit("quad", a, b, m, eta, delta, bound=bound)
        assert y_c == pytest.approx((1 - bound) * delta / (4 * a * eta), rel=1e-9)


def test_a_label_only_limit_is_the_one_eq_10c_gives_per_sample():
    """Just below the limit every direction's fitted eigenvalue is above the bound, just above it below (the per-sample
    bisection of eq. (10c) on random pre-activations, not the directions the limit was searched on)."""
    y_c = stable_label_limit("quad", 1.0, 0.0, 8, 0.05, 1.7, bound=SETTLED_EIGENVALUE)
    u = np.random.default_rng(5).standard_normal((50, 8))
    below = fitted_eigenvalues("quad", 1.0, 0.0, u, np.full(50, y_c * (1 - 1e-6)), 0.05 / 1.7)
    above = fitted_eigenvalues("quad", 1.0, 0.0, u, np.full(50, y_c * (1 + 1e-6)), 0.05 / 1.7)
    assert np.all(below > SETTLED_EIGENVALUE) and np.all(above < SETTLED_EIGENVALUE)


def test_no_unstable_label_is_inf_and_direction_dependence_is_refused():
    # gelu: sigma' stays near 1 for large labels, so lambda* > -1 wherever a label is fitted (checked per sample)
    assert stable_label_limit("gelu", 1.0, 0.0, 4, 0.1, 5.0) == math.inf
    u = np.random.default_rng(0).standard_normal((20, 4))
    lam = fitted_eigenvalues("gelu", 1.0, 0.0, u, np.linspace(0.1, 30, 20), 0.1 / 5.0)
    assert np.all(lam[np.isfinite(lam)] > -1)
    # quad with per-neuron weights: lambda* = 1 - 4 c sum_j a_j^2 u_j^2 / m is not a function of y alone
    with pytest.raises(UnsupportedError, match="depends on the direction"):
        stable_label_limit("quad", (1.0, 2.0), 0.0, 2, 0.05, 2.0)
    with pytest.raises(UnsupportedError, match="square loss"):
        stable_label_limit("quad", 1.0, 0.0, 2, 0.05, 2.0, weight_decay=0.01)


def test_rejection_draws_the_conditioned_law():
    """Phase retrieval, y = g^2 ~ chi^2_1: E[y | y <= c] = F_3(c) / F_1(c) (x f_1(x) = f_3(x)), and the rejected share
    of the drawn paths is P(y > c), each within four standard errors of its Monte Carlo draw."""
    link, n, cap = get_link("phase_retrieval"), 200_000, 2.0
    y, g, (rejected, drawn) = _targets_below(link, n, np.random.default_rng(3), cap)
    assert y.shape == (n,) and g.shape == (n, 1) and np.all(y <= cap) and np.allclose(y, g[:, 0] ** 2)
    mean = stats.chi2.cdf(cap, 3) / stats.chi2.cdf(cap, 1)
    assert abs(y.mean() - mean) < 4 * y.std() / math.sqrt(n)
    tail = stats.chi2.sf(cap, 1)
    assert abs(rejected / drawn - tail) < 4 * math.sqrt(tail * (1 - tail) / drawn)
    assert drawn % n == 0 and drawn - rejected >= n


def test_bad_caps_are_refused():
    with pytest.raises(ThresholdsError, match="keeps"):   # a cap inside the bulk of the law, not a tail
        _targets_below(get_link("phase_retrieval"), 1000, np.random.default_rng(0), 0.1)
    base = DMFTSetup("quad", "phase_retrieval", delta=2.0, eta=0.05, steps=4, paths=400, replicas=2)
    for cap, error in ((-1.0, ThresholdsError), (float("nan"), ThresholdsError)):
        with pytest.raises(error, match="label_cap"):
            replace(base, label_cap=cap).validate()
    with pytest.raises(UnsupportedError, match="g_nodes"):
        replace(base, label_cap=10.0, g_nodes=20).validate()
    with pytest.raises(UnsupportedError, match="sources"):
        replace(base, label_cap=10.0, response="pathwise").validate()


def test_a_capped_run_keeps_its_stream_and_its_labels_below_the_cap():
    """A cap above every drawn label rejects nothing and is the plain run bit for bit (the same stream); a cap in the
    tail keeps every replica's labels below it, and the notes count the rejected paths."""
    base = DMFTSetup("quad", "phase_retrieval", delta=2.0, eta=0.05, steps=12, paths=2000, replicas=2,
                     source_tol=1e-3)
    assert "label_cap" not in base.cache_key() and replace(base, label_cap=5.0).cache_key()["label_cap"] == 5.0
    plain, high = solve_dmft(base), solve_dmft(replace(base, label_cap=1e9))
    assert np.array_equal(plain.train_loss, high.train_loss)
    assert all(np.array_equal(p[1], h[1]) for p, h in zip(plain.replica_laws, high.replica_laws))
    capped = solve_dmft(replace(base, label_cap=5.0))
    assert max(law[1].max() for law in plain.replica_laws) > 5.0   # the plain law has labels past the cap
    assert all(law[1].max() <= 5.0 for law in capped.replica_laws)
    note = next(n for n in capped.notes if "labels conditioned" in n)
    rejected, drawn = (int(x) for x in note.split(": ")[1].split(" drawn")[0].split(" of "))
    assert drawn >= 2000 and abs(rejected / drawn - stats.chi2.sf(5.0, 1)) < 4 * math.sqrt(0.025 / drawn)


def test_nn_setup_caps_the_dmft_law_and_keys_it(monkeypatch):
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=600, m=8)
    plain = NNSetup.from_problem(problem, law="dmft")
    settled = NNSetup.from_problem(problem, law="dmft", settled_labels=True)
    assert plain.dmft(1.7).label_cap == 0.0
    assert settled.dmft(1.7).label_cap == pytest.approx((1 - SETTLED_EIGENVALUE) * 1.7 / (4 * 0.05))
    assert "settled_labels" not in setup_fields(plain) and setup_fields(settled)["settled_labels"] is True
    assert result_key(plain) != result_key(settled)
    assert evaluation_key(plain, 1.7, "none", False) != evaluation_key(settled, 1.7, "none", False)
    # the cap's rule is in both keys: a settled law made with another eigenvalue at the cap is not reused
    import thresholds.store as store
    before = result_key(settled), evaluation_key(settled, 1.7, "none", False)
    monkeypatch.setattr(store, "SETTLED_EIGENVALUE", -1.0)
    assert result_key(settled) != before[0] and evaluation_key(settled, 1.7, "none", False) != before[1]
    assert result_key(plain) == result_key(NNSetup.from_problem(problem, law="dmft"))
    # nothing past the limit (gelu): no cap, the plain law
    gelu = NNSetup.from_problem(Problem("gelu", "phase_retrieval", eta=0.1, steps=600, m=2), law="dmft",
                                settled_labels=True)
    assert gelu.dmft(5.0).label_cap == 0.0
    with pytest.raises(ThresholdsError, match="settled_labels applies to the DMFT law"):
        NNSetup.from_problem(problem, law="gd", settled_labels=True).validate()


def test_search_notes_the_caps_and_the_dimensions_they_stand_for():
    from thresholds.nn import Evaluation
    from thresholds.search import _label_notes

    def ev(delta, cap, tail):
        return Evaluation(delta, [10], [0.1], [0.01], [0.1], [0.01], [-0.1], [0.01], [math.nan], [math.nan],
                          [math.nan], label_cap=cap, label_tail=tail)
    assert _label_notes([ev(2.0, None, None)]) == []
    assert _label_notes([ev(2.0, 18.0, None)])[0].endswith("(at delta 2: y <= 18, P not recorded)")
    (note,) = _label_notes([ev(2.0, 18.0, 2e-5), ev(1.5, 13.5, 0.0)])
    assert note.startswith("settled labels (dmft eq. (10d))") and "eigenvalue -0.8" in note
    # sorted by delta; d = 1 / (delta P) only where a path was rejected
    assert note.endswith("(at delta 1.5: y <= 13.5, P = 0; 2: y <= 18, P = 2e-05, d = 2.5e+04)")


def test_an_evaluation_on_a_settled_law_records_its_cap_and_tail():
    from thresholds.evaluation import evaluate
    setup = NNSetup.from_problem(Problem("quad", "phase_retrieval", eta=0.1, steps=8, m=2), law="dmft",
                                 settled_labels=True, paths=3000, edge_d=0)
    ev = evaluate(setup, 2.0, cache=False)
    assert ev.label_cap == pytest.approx(0.9 * 2.0 / (2 * 0.1))
    # the share rejected is P(g^2 > 9) = 0.0027 up to its Monte Carlo error (3000 paths in batches of 1000)
    tail = stats.chi2.sf(ev.label_cap, 1)
    assert 0 < ev.label_tail and abs(ev.label_tail - tail) < 4 * math.sqrt(tail / 3000)
    plain = evaluate(replace(setup, settled_labels=False), 2.0, cache=False)
    assert plain.label_cap is None and plain.label_tail is None


def test_tail_mass_is_the_chi_square_tail():
    from thresholds.targets import TAIL_DRAWS, tail_mass
    link = get_link("phase_retrieval")
    for cap in (5.0, 11.0):
        p = stats.chi2.sf(cap, 1)
        assert abs(tail_mass(link, cap) - p) < 4 * math.sqrt(p / TAIL_DRAWS)
    assert tail_mass(link, 11.0) <= tail_mass(link, 10.0)   # one stream: monotone in the cap


def test_settled_search_starts_where_gd_at_the_stated_d_settles(monkeypatch):
    """thresholds.search: on a settled law a delta where GD's data set of n = delta d samples (d = edge_d) holds a label
    past y_c = delta / (2 eta) with probability >= 1/2 (n P(g^2 > y_c) >= ln 2) is not run; the lower end moves up by
    ORBIT_STEP past it and the notes name those deltas with n P."""
    from types import SimpleNamespace
    from thresholds import search
    setup = NNSetup.from_problem(Problem("quad", "phase_retrieval", eta=0.05, steps=600, m=16), law="dmft",
                                 settled_labels=True, replicas=3)
    ran = []
    monkeypatch.setattr(search, "first_phase", lambda s, delta, **kw: ran.append(delta) or SimpleNamespace(
        setup=SimpleNamespace(replicas=3), result=SimpleNamespace(period_two=[])))

    class F(search._Indicators):
        def __call__(self, delta, step=None):
            return -1.0
    f = F(setup, True, None, None, None)
    lo, below, _ = search._lower_end(f, 0.5)
    # n P = delta 1000 P(chi^2_1 > 10 delta): 12.7 / 7.8 / 4.1 / 1.8 at 0.5 / 0.625 / 0.781 / 0.977, 0.59 at 1.22
    assert [round(x, 4) for x, _ in f.crowded] == [0.5, 0.625, 0.7812, 0.9766] and lo == pytest.approx(0.5 * 1.25 ** 4)
    assert ran == [lo] and not below and f.orbiting == []
    for x, p in f.crowded:
        assert abs(p - stats.chi2.sf(10 * x, 1)) < 4 * math.sqrt(p / 1e6)
    (note,) = search._crowded_notes(f.crowded, lo, 1000)
    assert note.startswith("at delta = 0.5, 0.625, 0.7812, 0.9766 GD's data set of n = delta 1000 samples holds")
    assert "starts at 1.221" in note and "(n P = 13, 7.8, 4.1, 1.8)" in note
    assert search.crowded_share(replace(setup, settled_labels=False), 0.5) is None
    assert search.crowded_share(replace(setup, edge_d=100), 0.9766) is None   # n P = 0.18 at d = 100

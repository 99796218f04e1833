import functools
import math
from dataclasses import replace

import numpy as np
import pytest

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.errors import DivergenceError, NotDifferentiableError, ThresholdsError, UnsupportedError


def mp_norm2(t, delta, eta, rho0, Ey2, lam=0.0, nodes=400):
    """||theta^t||^2 of linear GD from the Marchenko-Pastur law of X^T X/n (independent derivation):
    rho0^2 int (1-eta lam-eta x)^{2t} dmu + (eta^2 E[y^2]/delta) int x P_t(x)^2 dmu,
    P_t = sum_{s<t} (1-eta lam-eta x)^s; mu has density sqrt((b-x)(x-a))/(2 pi x/delta) (delta > 1),
    integrated by Gauss-Chebyshev quadrature of the second kind (exact up to rounding here)."""
    lam_r = 1.0 / delta
    a, b = (1 - np.sqrt(lam_r)) ** 2, (1 + np.sqrt(lam_r)) ** 2
    k = np.arange(1, nodes + 1)
    th = k * np.pi / (nodes + 1)
    x = (a + b) / 2 + (b - a) / 2 * np.cos(th)
    w = np.pi / (nodes + 1) * np.sin(th) ** 2 * ((b - a) / 2) ** 2 / (2 * np.pi * lam_r * x)
    q = 1 - eta * lam - eta * x
    P = sum(q**s for s in range(t))
    return rho0**2 * np.sum(w * q ** (2 * t)) + eta**2 * Ey2 / delta * np.sum(w * x * P**2)


@pytest.mark.parametrize("lam", [0.0, 0.1])
def test_linear_activation_closed_form_matches_marchenko_pastur(lam):
    s = DMFTSetup("linear", "abs", delta=4.0, eta=0.2, steps=40, rho0=1.0, weight_decay=lam, response="linear")
    res = solve_dmft(s)
    for t in (0, 1, 2, 5, 17, 40):
        assert abs(res.norm2[t] - mp_norm2(t, 4.0, 0.2, 1.0, 1.0, lam)) < 1e-10


@pytest.mark.parametrize("source_tol, own_term, orth", [(0.0, False, False), (1e-3, False, False), (1e-3, True, False),
                                                      (1e-3, False, True)])
def test_monte_carlo_linear_agrees_with_closed_form(source_tol, own_term, orth):
    exact = solve_dmft(DMFTSetup("linear", "abs", delta=4.0, eta=0.2, steps=15, response="linear"))
    mc = solve_dmft(DMFTSetup("linear", "abs", delta=4.0, eta=0.2, steps=15, paths=160_000, replicas=8, seed=1,
                              source_tol=source_tol, own_term=own_term, source_orth=orth))
    for t in (1, 5, 15):
        assert abs(mc.norm2[t] - exact.norm2[t]) < 4 * mc.norm2_err[t] + 1e-4
        assert abs(mc.train_loss[t] - exact.train_loss[t]) < 4 * mc.train_loss_err[t] + 1e-4


def test_sources_and_pathwise_responses_agree():
    kw = dict(delta=4.0, eta=0.2, steps=12, rho0=1.0)
    a = solve_dmft(DMFTSetup("tanh", "abs", paths=80_000, replicas=4, seed=2, **kw))
    b = solve_dmft(DMFTSetup("tanh", "abs", paths=16_000, replicas=4, seed=3, response="pathwise", **kw))
    for t in (1, 6, 12):
        tol = 4 * np.hypot(a.norm2_err[t], b.norm2_err[t]) + 1e-4
        assert abs(a.norm2[t] - b.norm2[t]) < tol


@pytest.mark.parametrize("source_tol, own_term, orth", [(0.0, False, False), (1e-3, False, False), (1e-6, True, False),
                                                      (1e-3, False, True)])
def test_causality_outputs_do_not_depend_on_horizon(source_tol, own_term, orth):
    kw = dict(delta=3.0, eta=0.1, paths=4000, replicas=2, source_tol=source_tol, own_term=own_term, source_orth=orth)
    short = solve_dmft(DMFTSetup("gelu", "phase_retrieval", steps=8, **kw))
    long = solve_dmft(DMFTSetup("gelu", "phase_retrieval", steps=16, **kw))
    assert np.array_equal(short.norm2, long.norm2[:9])
    assert np.array_equal(short.train_loss, long.train_loss[:9])


def test_overlap_with_init_and_test_loss_at_time_zero():
    res = solve_dmft(DMFTSetup("tanh", "abs", delta=4.0, eta=0.2, steps=3, rho0=0.7, paths=4000, replicas=2))
    assert res.norm2[0] == pytest.approx(0.49) and res.overlap_init[0] == pytest.approx(0.49)
    # test loss at t = 0 is the population risk at ||theta|| = rho0: E[y^2]/2 + E[tanh(0.7 G)^2]/2 (E[y tanh] = 0 by symmetry)
    x, w = np.polynomial.hermite_e.hermegauss(80)
    expected = 0.5 * (1.0 + np.sum(w * np.tanh(0.7 * x) ** 2) / w.sum())
    assert res.test_loss[0] == pytest.approx(expected, rel=1e-10)


def test_divergence_is_reported_with_its_step():
    with pytest.raises(DivergenceError, match=r"diverged at step \d+"):
        solve_dmft(DMFTSetup("cubic", "phase_retrieval", delta=4.0, eta=2.0, steps=50, paths=2000, replicas=2))


@pytest.mark.parametrize("kwargs, error, fragment", [
    (dict(delta=0.0), ThresholdsError, "delta must be > 0"),
    (dict(eta=-1.0), ThresholdsError, "eta must be > 0"),
    (dict(response="magic"), ThresholdsError, "unknown response method"),
    (dict(link="sign", response="pathwise"), UnsupportedError, "easy direction"),
    (dict(activation="relu", response="pathwise"), NotDifferentiableError, "second derivative"),
    (dict(response="linear"), UnsupportedError, "affine activation"),
])
def test_bad_setups(kwargs, error, fragment):
    base = dict(activation="tanh", link="abs", delta=4.0, eta=0.2, steps=3, paths=1000, replicas=2)
    base.update(kwargs)
    with pytest.raises(error, match=fragment):
        solve_dmft(DMFTSetup(**base))


def test_spherical_dmft_matches_spherical_gd():
    # GD rescaled to ||theta|| = rho0 after every step: the DMFT rescales A and Bt by the
    # deterministic factor.  Check against finite-d spherical GD (tanh, y = g^2, delta = 4,
    # eta = 0.2, 12 steps): train loss and <theta^t, theta^0> within 4 combined s.e.
    from validation.simulate import GDSetup, run_gd
    T = 12
    runs = [run_gd(GDSetup("tanh", "phase_retrieval", 4.0, 800, 0.2, T, sphere=True, seed=s)) for s in range(8)]
    for tol in (0.0, 1e-3):  # both source bases (eq. (6b))
        res = solve_dmft(DMFTSetup("tanh", "phase_retrieval", 4.0, 0.2, T, paths=40_000, replicas=4, sphere=True,
                                   source_tol=tol))
        assert np.allclose(res.norm2, 1.0)
        for key in ("train_loss", "overlap_init"):
            sim = np.array([getattr(r, key)[T] for r in runs])
            se = math.hypot(sim.std(ddof=1) / math.sqrt(sim.size), getattr(res, key + "_err")[T])
            assert abs(sim.mean() - getattr(res, key)[T]) < 4 * se, (tol, key, sim.mean(), getattr(res, key)[T], se)
    assert np.allclose(runs[0].norm2[1:], 1.0)  # rescaled from the first step on


@functools.lru_cache(maxsize=None)
def _width3_gd_runs(T):
    from validation.simulate import GDSetup, run_gd
    return [run_gd(GDSetup("gelu", "phase_retrieval", 4.0, 1000, 0.2, T, m=3, seed=s)) for s in range(6)]


@pytest.mark.parametrize("source_tol, own_term, orth", [(0.0, False, False), (1e-3, False, False), (1e-6, True, False),
                                                      (1e-3, False, True)])
def test_width_m_dmft_matches_gd(source_tol, own_term, orth):
    # m = 3 neurons (mean-field step, f = (1/m) sum_j sigma(u_j)), gelu, y = g^2, delta = 4,
    # eta = 0.2, 10 steps: the per-neuron norm, the overlap with the initialisation and the
    # train / test losses within 4 combined s.e. of finite-d GD (d = 1000, 6 seeds); plain and
    # truncated (eq. (6b)) source bases, and the latter with the own-term subtraction (eq. (6e)) or with
    # orthogonal sources (eq. (6g)).
    T = 10
    res = solve_dmft(DMFTSetup("gelu", "phase_retrieval", 4.0, 0.2, T, m=3, paths=24_000, replicas=4,
                               source_tol=source_tol, own_term=own_term, source_orth=orth))
    runs = _width3_gd_runs(T)
    assert res.norm2[0] == pytest.approx(1.0) and res.overlap_init[0] == pytest.approx(1.0)
    for key in ("norm2", "overlap_init", "train_loss", "test_loss"):
        sim = np.array([getattr(r, key)[T] for r in runs])
        se = math.hypot(sim.std(ddof=1) / math.sqrt(sim.size), getattr(res, key + "_err")[T])
        assert abs(sim.mean() - getattr(res, key)[T]) < 4 * se, (key, sim.mean(), getattr(res, key)[T], se)
    assert res.final_u.shape[1] == 3 and res.C.shape == (T + 1, T + 1, 3, 3)


def test_width_m_population_risk_limits():
    # Two independent neurons (Q = q I): E f^2 = (E s^2 + (E s)^2)/2 with s = sigma(sqrt(q) G);
    # two identical neurons (Q = q 1 1^T): f = sigma(w), the m = 1 risk.  Same 80-node rule as the
    # m = 1 function, so the two agree to rounding.
    from thresholds.catalog import get_activation
    from thresholds.dmft import _test_loss, _test_loss_m
    from thresholds.kernels import compiled_activation
    act, q, Ey, Ey2 = get_activation("tanh"), 0.8, 1.0, 3.0
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    s = np.tanh(np.sqrt(q) * x + 0.3)
    Es, Es2 = w @ s, w @ s**2
    indep = 0.5 * (Ey2 - 2 * Ey * 1.5 * Es + 1.5**2 * (Es2 + Es**2) / 2)
    assert _test_loss_m(act.numpy(0), np.full(2, 1.5), np.full(2, 0.3), q * np.eye(2), Ey, Ey2, nodes=80) == pytest.approx(indep, rel=1e-12)
    same = _test_loss(compiled_activation(act, False), 1.5, 0.3, q, Ey, Ey2)
    assert _test_loss_m(act.numpy(0), np.full(2, 1.5), np.full(2, 0.3), q * np.ones((2, 2)), Ey, Ey2, nodes=80) == pytest.approx(same, rel=1e-10)


def test_width_m_needs_the_sources_backend():
    with pytest.raises(UnsupportedError, match="sources"):
        solve_dmft(DMFTSetup("tanh", "abs", 4.0, 0.2, 3, m=2, response="pathwise", paths=1000, replicas=2))
    with pytest.raises(ThresholdsError, match="positive integer"):
        solve_dmft(DMFTSetup("tanh", "abs", 4.0, 0.2, 3, m=0, paths=1000, replicas=2))


def _gram_schmidt_reference(P, psi, omega, Psit, Lpsi, floor):
    """Plain column-by-column Gram-Schmidt (twice) in the (path, column) layout."""
    for k in range(psi.shape[1]):
        J = P + k
        col = psi[:, k]
        coef = (omega * col) @ Psit[:, :J]
        r = col - Psit[:, :J] @ coef
        fix = (omega * r) @ Psit[:, :J]
        r = r - Psit[:, :J] @ fix
        Lpsi[J, :J] = coef + fix
        norm2 = float(omega @ (r * r))
        if norm2 > floor * float(omega @ (col * col)):
            Lpsi[J, J] = math.sqrt(norm2)
            Psit[:, J] = r / Lpsi[J, J]


@pytest.mark.parametrize("m", [1, 2, 4])
def test_block_whitening_is_column_by_column_gram_schmidt(m):
    """The DMFT whitens the m new psi columns against the past together; this must be the column-by-column
    Gram-Schmidt, including a column that lies in the span of the others (it opens no new path)."""
    from thresholds.dmft import INNOVATION_FLOOR, _whiten

    rng = np.random.default_rng(3)
    n, steps = 500, 6
    omega = rng.uniform(0.5, 1.5, n)
    omega /= omega.sum()
    L = steps * m
    PsitT, Lpsi = np.zeros((L, n)), np.zeros((L, L))
    Psit_ref, Lpsi_ref = np.zeros((n, L)), np.zeros((L, L))
    for t in range(steps):
        psi = rng.standard_normal((n, m))
        if t:  # correlated with the past, as the psi paths are
            psi += 0.3 * (PsitT[: t * m].T @ rng.standard_normal(t * m))[:, None]
        if t == 3 and m > 1:  # a dependent column: a combination of the first column and step 0's paths
            psi[:, -1] = 0.5 * psi[:, 0] + PsitT[:m].sum(axis=0)
        _whiten(t * m, psi, omega, PsitT, Lpsi)
        _gram_schmidt_reference(t * m, psi, omega, Psit_ref, Lpsi_ref, INNOVATION_FLOOR)
        rows = slice(t * m, (t + 1) * m)
        np.testing.assert_allclose(Lpsi[rows, : (t + 1) * m] @ PsitT[: (t + 1) * m], psi.T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(Lpsi, Lpsi_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(PsitT, Psit_ref.T, rtol=0, atol=1e-11)
    gram = (PsitT * omega) @ PsitT.T
    kept = np.diag(Lpsi) > 0
    np.testing.assert_allclose(gram[np.ix_(kept, kept)], np.eye(kept.sum()), atol=1e-12)
    assert kept.sum() == L - (m > 1)  # only the dependent column opened no path


@pytest.mark.parametrize("m", [1, 3])
def test_end_of_run_covariances_are_the_row_by_row_products(m):
    """C and Cpsi of a ``sources`` run are formed once after the loop (dmft._sources_covariances); element by
    element they must be C(t, s)_jk = rho0^2 A(t)_j . A(s)_k + Bt(t)_j . Bt(s)_k / delta and
    Cpsi(t, s)_jk = Lpsi(t m + j) . Lpsi(s m + k) for t, s < T (zero on the last row and column)."""
    from thresholds.dmft import _sources_covariances

    rng = np.random.default_rng(5)
    T1, r, rho0, delta = 7, 9, 0.8, 2.5
    A, Bt, Lpsi = rng.standard_normal((T1, m, m)), rng.standard_normal((T1, m, r)), rng.standard_normal((T1 * m, r))
    C, Cpsi = _sources_covariances(A, Bt, Lpsi, rho0, delta)
    assert C.shape == Cpsi.shape == (T1, T1, m, m)
    for t in range(T1):
        for s in range(T1):
            for j in range(m):
                for k in range(m):
                    c = rho0**2 * A[t, j] @ A[s, k] + Bt[t, j] @ Bt[s, k] / delta
                    cp = Lpsi[t * m + j] @ Lpsi[s * m + k] if t < T1 - 1 and s < T1 - 1 else 0.0
                    assert abs(C[t, s, j, k] - c) < 1e-12 and abs(Cpsi[t, s, j, k] - cp) < 1e-12


def test_truncated_basis_represents_every_column_within_the_tolerance():
    """eq. (6b): with a source tolerance only the columns whose residual against the sources so far has
    relative variance above it open a source (compacted rows); every column is reproduced by its row of
    Lpsi on the opened sources up to that residual, and the opened sources stay orthonormal."""
    from thresholds.dmft import _whiten

    rng = np.random.default_rng(5)
    n, steps, m, tol = 800, 8, 2, 1e-3
    omega = np.full(n, 1.0 / n)
    PsitT, Lpsi = np.zeros((steps * m, n)), np.zeros((steps * m, steps * m))
    r, expect = 0, 0
    for t in range(steps):
        psi = rng.standard_normal((n, m))
        small = t % 2 == 1  # odd steps: both columns within 1e-4 (relative variance) of the span so far
        if small:
            base = PsitT[:r].T @ rng.standard_normal((r, m))
            psi = base + 1e-2 * np.sqrt(np.mean(base**2, axis=0)) * psi
        r_new = _whiten(t * m, psi, omega, PsitT, Lpsi, r, tol, True)
        expect += 0 if small else m
        assert r_new == expect
        r = r_new
        rows = Lpsi[t * m:(t + 1) * m, :r]
        resid = psi.T - rows @ PsitT[:r]
        rel = (resid**2 @ omega) / (psi.T**2 @ omega)
        assert np.all(rel <= tol) and (np.all(rel > 1e-6) if small else np.all(rel < 1e-20))
        if small:  # no column opens: one projection pass (the second is skipped) gives the exact coefficients
            np.testing.assert_allclose(rows, (PsitT[:r] @ (omega[:, None] * psi)).T, rtol=0, atol=1e-12)
    gram = (PsitT[:r] * omega) @ PsitT[:r].T
    np.testing.assert_allclose(gram, np.eye(r), atol=1e-12)
    assert not PsitT[r:].any()


def _compact_reference(psi, omega, Psit, tol):
    """Column-by-column Gram-Schmidt (twice) against every source so far with a tolerance (eq. (6b)): a column
    opens a source when its residual keeps more than ``tol`` of its variance; ``Psit`` (paths x r) grows.
    Returns the new Psit and the column's coefficient rows (m x r)."""
    rows = []
    for k in range(psi.shape[1]):
        col = psi[:, k]
        coef = (omega * col) @ Psit
        res = col - Psit @ coef
        fix = (omega * res) @ Psit
        res = res - Psit @ fix
        coef = coef + fix
        norm2 = float(omega @ (res * res))
        if norm2 > tol * float(omega @ (col * col)):
            Psit = np.column_stack([Psit, res / math.sqrt(norm2)])
            coef = np.append(coef, math.sqrt(norm2))
        rows.append(coef)
    return Psit, [np.pad(c, (0, Psit.shape[1] - c.size)) for c in rows]


def test_truncated_basis_with_mixed_columns_is_the_column_by_column_scheme():
    """eq. (6b) forms residuals only for the columns with at least the tolerance left against the past
    (dmft._whiten_compact, by Pythagoras); a step that mixes new columns, columns inside the span, a column
    with part of the tolerance left (a candidate that opens nothing) and a column that the new source of an
    earlier column of the same step explains, next to one with a little more than the tolerance left, must
    give the column-by-column scheme's rows and sources."""
    from thresholds.dmft import _whiten

    rng = np.random.default_rng(11)
    n, m, tol, steps = 1000, 5, 1e-2, 5
    omega = rng.uniform(0.5, 1.5, n)
    omega /= omega.sum()
    PsitT, Lpsi = np.zeros((steps * m, n)), np.zeros((steps * m, steps * m))
    ref = np.zeros((n, 0))
    r = 0
    for t in range(steps):
        psi = rng.standard_normal((n, m))
        if t:
            inside = ref @ rng.standard_normal(r)
            scale = np.sqrt(omega @ inside**2)
            noise = rng.standard_normal(n) * scale
            psi[:, 1] = inside + 1e-2 * noise                    # about 1e-4 of its variance left: no candidate
            psi[:, 2] = inside + math.sqrt(0.7 * tol) * noise    # 0.7 tol left: a candidate that opens nothing
            psi[:, 3] = inside + psi[:, 0] + 1e-2 * noise        # explained by column 0's new source
            psi[:, 4] = inside + math.sqrt(1.3 * tol) * rng.standard_normal(n) * scale   # 1.3 tol left: opens
        ref, rows = _compact_reference(psi, omega, ref, tol)
        r_new = _whiten(t * m, psi, omega, PsitT, Lpsi, r, tol, True)
        assert r_new == ref.shape[1] == (m if t == 0 else r + 2)
        np.testing.assert_allclose(PsitT[:r_new], ref.T, rtol=0, atol=1e-10)
        np.testing.assert_allclose(Lpsi[t * m:(t + 1) * m, :r_new], np.array(rows), rtol=0, atol=1e-10)
        r = r_new


def test_a_tolerance_below_every_innovation_is_the_plain_scheme():
    """When every column opens a source, the compacted rows are the plain scheme's rows: same numbers;
    a tolerance of 0 keeps the cache key of the versions before the field."""
    base = DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 20, paths=2000, replicas=2, seed=1)
    plain = solve_dmft(base)
    tiny = solve_dmft(replace(base, source_tol=1e-20))
    np.testing.assert_allclose(tiny.norm2, plain.norm2, rtol=1e-12)
    np.testing.assert_allclose(tiny.train_loss, plain.train_loss, rtol=1e-12)
    assert "source_tol" not in base.cache_key() and replace(base, source_tol=1e-3).cache_key()["source_tol"] == 1e-3
    with pytest.raises(ThresholdsError, match="source_tol"):
        solve_dmft(replace(base, source_tol=1.5))
    with pytest.raises(UnsupportedError, match="sources"):
        solve_dmft(replace(base, source_tol=1e-3, response="pathwise"))


def test_a_truncated_basis_grows_its_path_arrays_with_the_sources_it_opens(monkeypatch):
    """eq. (6b): the per-path arrays of a truncated basis start with room for INITIAL_SOURCE_ROWS sources per
    neuron and grow as sources open; the numbers do not depend on that room (m = 3, planted: one row of room
    per neuron forces several growths), the up-front memory estimate counts the room, not T m rows, and a run
    whose growth would pass the limit is refused with a one-line error."""
    import thresholds.dmft as dmft

    setup = DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 60, paths=2000, replicas=2, m=3, source_tol=1e-3,
                      planted=0.1, population_risk=False)
    wide = solve_dmft(setup)
    opened = next(n for n in wide.notes if "eq. (6b)" in n)
    assert int(opened.split("): ")[1].split("-")[0]) > 12   # several doublings of the room below (3 rows)
    monkeypatch.setattr(dmft, "INITIAL_SOURCE_ROWS", 1)
    narrow = solve_dmft(setup)
    assert np.array_equal(narrow.norm2, wide.norm2) and np.array_equal(narrow.hard_overlap, wide.hard_overlap)
    assert setup.memory_bytes() < replace(setup, source_tol=0.0).memory_bytes()
    assert setup.memory_bytes() == setup.memory_bytes(3)
    monkeypatch.setattr(dmft, "MAX_MEMORY", setup.memory_bytes(6) - 1)
    with pytest.raises(ThresholdsError, match="sources by step .* GiB"):
        solve_dmft(setup)


def test_a_truncated_basis_allocates_its_coefficients_by_the_sources_it_opens():
    """eq. (6b): Bt and Lpsi of a truncated basis have a source axis with the path arrays' room, not T m entries.
    m = 4 over 400 steps (tolerance 1e-2 opens about 90 sources of the 256 of room): every source would take
    8 ((T + 1) m T m + (T m)^2) = 41 MB for those two arrays alone; the run's peak of traced allocations (8.2 MB,
    compiled kernels warm) stays within twice the memory estimate of its room (7.8 MB, most of it Bt and Lpsi;
    the rest is the per-step temporaries and the result)."""
    import tracemalloc

    import thresholds.dmft as dmft

    setup = DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 400, m=4, paths=200, replicas=1, source_tol=1e-2,
                      population_risk=False)
    T, m = setup.steps, setup.m
    every_source = 8 * ((T + 1) * m * T * m + (T * m) ** 2)
    solve_dmft(replace(setup, steps=5), kernels=False)   # the kernels' compilation is traced too
    tracemalloc.start()
    try:
        run = solve_dmft(setup, kernels=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert run.sources[0] < dmft.INITIAL_SOURCE_ROWS * m          # no growth: the estimate's room is the run's
    assert peak < 2 * setup.memory_bytes(kernels=False) < every_source


def test_truncated_sources_remove_the_path_bias_at_long_horizons():
    """quad / phase retrieval, delta 16, eta 0.05, 200 steps (validation/reports/dmft_paths: 400): the
    plain sources scheme's ||theta||^2 falls by about 6 standard errors from 4 x 4000 to 4 x 12000 paths
    (its self-interaction, eq. (6b)); the truncated one (eps = 1e-3) moves by less than 3 combined s.e.
    (1.5 with these seeds) and lies below the plain one."""
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 200, replicas=4, seed=2)
    runs = {(tol, n): solve_dmft(replace(setup, paths=4 * n, source_tol=tol))
            for tol in (0.0, 1e-3) for n in (4000, 12000)}

    def z(tol):
        a, b = runs[tol, 4000], runs[tol, 12000]
        return (a.norm2[-1] - b.norm2[-1]) / math.hypot(a.norm2_err[-1], b.norm2_err[-1])
    assert z(0.0) > 4
    assert abs(z(1e-3)) < 3
    assert runs[1e-3, 12000].norm2[-1] < runs[0.0, 12000].norm2[-1] - 0.03


def test_single_precision_path_arrays_give_the_double_precision_law():
    """dmft eq. (6d): a truncated-basis run (m = 2, a planted and forced start, 200 steps) with its per-path arrays
    in float32 follows the float64 run to 1e-4 in ||theta||^2, the hard overlap and the train loss (the Monte
    Carlo errors of these 3000 paths are about 1e-2), with the same number of sources; the precision is in the
    cache key only when it is not the default, and float32 without the truncated basis is refused."""
    setup = DMFTSetup("quad", "phase_retrieval", 3.5, 0.05, 200, m=2, paths=3000, replicas=1, seed=3,
                      planted=(0.05, -0.03), source_tol=1e-3, forcing_n=700.0, forcing_seed=3)
    single = replace(setup, path_dtype="float32")
    a, b = solve_dmft(setup), solve_dmft(single)
    for name in ("norm2", "hard_overlap", "train_loss"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=0, atol=1e-4, err_msg=name)
    assert a.sources == b.sources
    assert "path_dtype" not in setup.cache_key() and single.cache_key()["path_dtype"] == "float32"
    with pytest.raises(ThresholdsError, match="truncated source basis"):
        replace(single, source_tol=0.0).validate()
    with pytest.raises(ThresholdsError, match="path_dtype"):
        replace(setup, path_dtype="float16").validate()


def test_response_noise_variance_is_the_monte_carlo_variance_of_each_sum():
    """dmft eq. (6c): the noise added to RA (psi nu / rho0) and RB (sqrt(delta) psi eps) is sqrt(k v) per entry,
    v = sum_p omega_p^2 (X_p - X)^2 of that entry's estimate X = sum_p omega_p X_p (unequal weights, m = 2),
    against an entry-by-entry reference."""
    from thresholds.dmft import _response_noise

    class Ones:
        def standard_normal(self, shape):
            return np.ones(shape)
    rng = np.random.default_rng(4)
    n, m, r0, k = 50, 2, 3, 2.5
    setup = DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 5, m=m, rho0=0.7, paths=n, replicas=1, response_noise=k)
    omega = rng.uniform(0.5, 1.5, n)
    omega /= omega.sum()
    psi, nu, eps = rng.standard_normal((n, m)), rng.standard_normal((n, m)), rng.standard_normal((r0, n))
    wpsi = omega[:, None] * psi
    RA, RB = wpsi.T @ nu / 0.7, math.sqrt(3.0) * (eps @ wpsi).T
    noisyA, noisyB = _response_noise(setup, wpsi, omega, nu, eps, RA, RB, Ones())

    def sd(x):   # x: per-path terms of one entry
        return math.sqrt(k * np.sum(omega**2 * (x - omega @ x) ** 2))
    for i in range(m):
        for j in range(m):
            assert noisyA[i, j] - RA[i, j] == pytest.approx(sd(psi[:, i] * nu[:, j] / 0.7), rel=1e-10)
        for J in range(r0):
            assert noisyB[i, J] - RB[i, J] == pytest.approx(sd(math.sqrt(3.0) * psi[:, i] * eps[J]), rel=1e-10)
    assert "response_noise" not in replace(setup, response_noise=0.0).cache_key()
    assert setup.cache_key()["response_noise"] == k
    for bad in (-1.0, float("nan")):
        with pytest.raises(ThresholdsError, match="response_noise"):
            solve_dmft(replace(setup, response_noise=bad))
    with pytest.raises(UnsupportedError, match="sources"):
        solve_dmft(DMFTSetup("tanh", "abs", 4.0, 0.2, 3, paths=100, replicas=2, response="pathwise",
                             response_noise=1.0))


def test_joint_forcing_gives_the_response_sums_the_data_sets_weights():
    """dmft eq. (7d): one step of ``_sources_step`` with the factors 1 + zeta of a data set's weights.  "initial": RA
    (hence A(t + 1)) is sum_p omega_p (1 + zeta_p) psi_p nu_p^T / rho0 and RB (hence Bt(t + 1)) keeps the plain
    weights; "all": both take them; the signal rows are eq. (7b)'s either way.  Against sums written out; the field is
    in the cache key only when set, and needs the forcing of eq. (7b)."""
    from thresholds.dmft import _sources_step
    rng = np.random.default_rng(5)
    n, m, T, r0 = 40, 2, 3, 2
    base = DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, T, m=m, rho0=0.7, paths=n, replicas=1, planted=(0.1, 0.2),
                     forcing_n=20.0)
    omega = np.full(n, 1.0 / n)
    psi, nu, epsT = rng.standard_normal((n, m)), rng.standard_normal((n, m)), rng.standard_normal((T * m, n))
    zeta, gE = rng.standard_normal(n), rng.standard_normal((n, 1))
    wpsi = omega[:, None] * psi
    Lpsi = rng.standard_normal((T * m, T * m))

    def step(mode):
        A, Bt, Msig = np.zeros((T + 1, m, m)), np.zeros((T + 1, m, T * m)), np.zeros((T + 1, 1, m))
        A[0] = np.eye(m)
        _sources_step(0, replace(base, forcing_joint=mode), wpsi, nu, epsT, gE, Lpsi, A, Bt, Msig, r0, r0 + m,
                      np.hstack([gE, gE * zeta[:, None]]), slice(0, 1), omega, None,
                      (1.0 + zeta) if mode else None)
        return A[1], Bt[1], Msig[1]
    eta, w = base.eta, omega * (1.0 + zeta)
    RA_plain, RA_joint = (np.einsum("p,pi,pj->ij", v, psi, nu) / 0.7 for v in (omega, w))
    RB_plain, RB_joint = (math.sqrt(3.0) * np.einsum("p,pi,Jp->iJ", v, psi, epsT[:r0]) for v in (omega, w))
    rows = Lpsi[0:m, : r0 + m]
    sig = eta * np.einsum("p,p,pi->i", w, gE[:, 0], psi)
    for mode, RA, RB in (("", RA_plain, RB_plain), ("initial", RA_joint, RB_plain), ("all", RA_joint, RB_joint)):
        A1, Bt1, M1 = step(mode)
        np.testing.assert_allclose(A1, np.eye(m) + eta * RA, rtol=1e-12, err_msg=mode)
        np.testing.assert_allclose(Bt1[:, :r0], eta * RB + eta * rows[:, :r0], rtol=1e-12, err_msg=mode)
        np.testing.assert_allclose(M1[0], sig, rtol=1e-12, err_msg=mode)
    assert "forcing_joint" not in base.cache_key()
    assert replace(base, forcing_joint="initial").cache_key()["forcing_joint"] == "initial"
    with pytest.raises(ThresholdsError, match="forcing_joint"):
        replace(base, forcing_joint="yes").validate()
    with pytest.raises(UnsupportedError, match="eq. \\(7b\\)"):
        replace(base, forcing_n=0.0, forcing_joint="all").validate()


def test_the_every_source_path_bias_is_not_response_noise():
    """The plain scheme's path bias (quad, delta 16, 200 steps, as above) is the self-interaction of eq. (6b), not
    the Monte Carlo noise of the response sums: 4 x 12000 paths with the response noise of 4 x 4000 (eq. (6c),
    k = 2) stay within 3 combined s.e. of 4 x 12000 without it (measured -1.1) and more than 4 s.e. below
    4 x 4000 (measured 6)."""
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 200, replicas=4, seed=2)
    few, many, noisy = (solve_dmft(replace(setup, paths=4 * n, response_noise=k))
                        for n, k in ((4000, 0.0), (12000, 0.0), (12000, 2.0)))

    def z(a, b):
        return (a.norm2[-1] - b.norm2[-1]) / math.hypot(a.norm2_err[-1], b.norm2_err[-1])
    assert abs(z(noisy, many)) < 3
    assert z(few, noisy) > 4


def test_the_own_term_subtraction_removes_most_of_the_every_source_path_bias():
    """Eq. (6e) on the plain scheme's self-interaction (quad, delta 16, 200 steps, as above): with the own term
    subtracted, ||theta||^2 moves by less than 3 combined s.e. from 4 x 4000 to 4 x 12000 paths (measured 1.8;
    without it 6.3), and at 4 x 4000 it lies more than 0.08 below the plain run (measured 0.12).  With every
    source delta omega c is about 0.3 here, so the first-order subtraction is not exact (its train loss overshoots
    GD's, module docstring); the truncated basis is where it is used."""
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 200, replicas=4, seed=2)
    plain = solve_dmft(replace(setup, paths=4 * 4000))
    few, many = (solve_dmft(replace(setup, paths=4 * n, own_term=True)) for n in (4000, 12000))
    z = (few.norm2[-1] - many.norm2[-1]) / math.hypot(few.norm2_err[-1], many.norm2_err[-1])
    assert abs(z) < 3
    assert few.norm2[-1] < plain.norm2[-1] - 0.08


def test_own_term_setup_checks_and_cache_key():
    setup = DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 5, paths=400, replicas=1, own_term=True)
    assert setup.cache_key()["own_term"] is True
    assert "own_term" not in replace(setup, own_term=False).cache_key()
    with pytest.raises(ThresholdsError, match="own_term must be True or False"):
        solve_dmft(replace(setup, own_term=1))
    with pytest.raises(UnsupportedError, match="own-term"):
        solve_dmft(replace(setup, sphere=True))
    with pytest.raises(UnsupportedError, match="own-term"):
        solve_dmft(replace(setup, response="pathwise", paths=40))


@pytest.mark.slow
def test_response_noise_reproduces_the_width_8_path_bias():
    """At width m = 8 (quad, phase retrieval, delta 3.5, eta 0.05, planted hard overlaps 0.1 with fixed signs,
    truncated basis, 300 steps) the law moves with the number of paths; 5000 paths with the response noise of
    1250 (eq. (6c), k = 3) reproduce 1250 paths: bulk 0.743 against 0.744 (3 seeds each; 5000 without it: 0.576).
    So that bias is the response sums' Monte Carlo noise (validation/reports/planted/width section 8d)."""
    signs = (0.1, -0.1, 0.1, 0.1, -0.1, 0.1, -0.1, -0.1)
    base = DMFTSetup("quad", "phase_retrieval", 3.5, 0.05, 300, m=8, replicas=1, planted=signs, source_tol=1e-3,
                     population_risk=False)

    def bulk(paths, k):
        vals = []
        for seed in range(3):
            r = solve_dmft(replace(base, paths=paths, response_noise=k, seed=seed))
            vals.append(r.norm2[-1] - r.hard_overlap[-1])
        return np.mean(vals), np.std(vals, ddof=1) / math.sqrt(3)
    (few, e1), (many, e2), (noisy, e3) = bulk(1250, 0.0), bulk(5000, 0.0), bulk(5000, 3.0)
    assert abs(noisy - few) < 3 * math.hypot(e1, e3)
    assert noisy - many > 4 * math.hypot(e2, e3)


def test_period_two_orbit_flags_an_alternating_loss_and_nothing_else():
    # eq. (10): a loss going up and down by more than 1e-3 of itself, at least W/4 times each way over the last
    # W = min(20, T/4) steps (the quad m = 16 replica of validation/reports/planted/width section 10: 0.00034 and
    # 0.00026 at even and odd steps; one that starts 32 steps before the end), and not a decreasing loss, a flat
    # one with rounding-level wiggles, an orbit that stopped before the window, or a run too short to tell
    from thresholds.dmft import period_two_orbit
    t = np.arange(601)
    decay = 0.05 * np.exp(-t / 200)
    orbit = decay * (1 + 0.12 * (-1.0) ** t)
    assert period_two_orbit(orbit)
    assert not period_two_orbit(decay)
    late = decay.copy()
    late[-33:] = orbit[-33:]
    assert period_two_orbit(late)
    assert not period_two_orbit(decay[-1] * (1 + 1e-6 * (-1.0) ** t))
    early = orbit.copy()
    early[-60:] = decay[-60:]
    assert not period_two_orbit(early)
    assert not period_two_orbit(orbit[:7])
    broken = orbit.copy()
    broken[-3] = broken[-4]   # one step without the alternation: still an oscillation
    assert period_two_orbit(broken)
    longer = decay * (1 + 0.3 * np.sin(np.pi * t / 2))   # period 4, and an irregular one
    assert period_two_orbit(longer)
    assert period_two_orbit(decay * np.exp(0.5 * np.random.default_rng(1).standard_normal(t.size)))
    rising = 1e-3 * np.exp(t / 100)   # a loss that only grows, or one rise among falls: not an oscillation
    assert not period_two_orbit(rising)
    one = decay.copy()
    one[-5] *= 1.5
    assert not period_two_orbit(one)
    assert not period_two_orbit(np.where(t == 598, np.nan, orbit))


def test_a_replica_in_a_period_two_orbit_is_named_in_the_result_and_its_notes(monkeypatch):
    # the wiring of eq. (10): solve_dmft lists the flagged replicas and says so in its notes; a run that
    # settles lists none
    import thresholds.dmft as dmft
    setup = DMFTSetup("tanh", "abs", delta=4.0, eta=0.2, steps=20, paths=2000, replicas=2)
    plain = solve_dmft(setup)
    assert plain.period_two == [] and not any("period-2" in n for n in plain.notes)
    first = {"seen": 0}

    def only_the_first(train):   # the first replica's loss is the first one tested
        first["seen"] += 1
        return first["seen"] == 1
    monkeypatch.setattr(dmft, "period_two_orbit", only_the_first)
    flagged = solve_dmft(setup)
    assert flagged.period_two == [0]
    assert any(n.startswith("replica(s) 0 of 2 end in a period-2 orbit") for n in flagged.notes)
    assert np.array_equal(flagged.train_loss, plain.train_loss)
    assert plain.replica_train.shape == (2, 21) and np.allclose(plain.replica_train.mean(axis=0), plain.train_loss)
    # a result read back from the cache is flagged by eq. (10) as it stands (its replicas' losses are kept)
    from thresholds import cache
    monkeypatch.setattr(dmft, "period_two_orbit", lambda train: train[-1] > train[-2] * 1.5)
    with cache.empty():
        stored = solve_dmft(setup, cache=True)
        assert stored.period_two == []
        bumped = stored.replica_train.copy()
        bumped[1, -1] = 2 * bumped[1, -2]
        read = dmft._orbits_now(replace(stored, replica_train=bumped))
        assert read.period_two == [1] and any(n.startswith("replica(s) 1 of 2 end in a period-2 orbit") for n in read.notes)
        back = dmft._orbits_now(replace(read, replica_train=stored.replica_train))
        assert back.period_two == [] and not any("period-2" in n for n in back.notes)
        again = solve_dmft(setup, cache=True)
        assert np.array_equal(again.replica_train, stored.replica_train) and again.period_two == []
        assert dmft._orbits_now(replace(again, replica_train=None)).period_two == []
    monkeypatch.setattr(dmft, "period_two_orbit", only_the_first)
    # and the Hessian evaluation of the DMFT law carries the list to the search (thresholds.search._orbit_notes)
    from thresholds.evaluation import evaluate
    from thresholds.nn import NNSetup
    nn = NNSetup("tanh", "abs", eta=0.2, steps=16, law="dmft", paths=2000, replicas=2)
    first["seen"] = 0
    orbiting = evaluate(nn, 4.0, cache=False)
    assert orbiting.period_two == [0]
    from thresholds.dmft import self_interaction   # eq. (6f) rides along on the evaluation
    law = solve_dmft(nn.dmft(4.0))
    assert orbiting.self_interaction == pytest.approx(self_interaction(law.setup, 1000, law.sources))
    # the indicators are stated on the settled replica (evaluation eq. (3)), every replica's values kept
    assert orbiting.indicator[-1] == orbiting.indicator_replicas[-1][1] and orbiting.indicator_err[-1] == 0.0
    assert orbiting.left_edge[-1] == orbiting.left_edge_replicas[-1][1]
    monkeypatch.setattr(dmft, "period_two_orbit", lambda train: False)
    full = evaluate(nn, 4.0, cache=False)
    assert full.period_two == []
    assert full.indicator[-1] == pytest.approx(np.mean(full.indicator_replicas[-1]), rel=1e-12)
    assert full.indicator_replicas == orbiting.indicator_replicas
    # final_only: the same Hessian at the horizon, and nothing before it
    last = evaluate(nn, 4.0, cache=False, final_only=True)
    assert last.steps == [16] and last.indicator == [full.indicator[-1]] and last.left_edge == [full.left_edge[-1]]
    # evaluation eq. (5): the decay of the law's train loss over the last half of the horizon
    from thresholds.evaluation import loss_decay
    assert full.loss_decay == last.loss_decay == loss_decay(law.train_loss)


def test_orbit_check_names_the_sample_that_flips():
    # validation.orbit_check eq. (1): on synthetic pre-activations the sample that alternates is found with its
    # label's rank; on GD (quad, m = 2, eta 0.08, 200 steps) a run at d = 200 ends in an orbit whose largest flip
    # is at the largest label, and one at d = 60 settles
    from click.testing import CliRunner
    from thresholds.problem import Problem
    from validation import orbit_check
    rng = np.random.default_rng(0)
    u = rng.normal(size=(50, 3))
    y = rng.chisquare(1, 50)
    later = u + 1e-3 * rng.normal(size=u.shape)
    later[7, 1] += 2.0
    f = orbit_check.flips(u, later, y)
    assert f["max_flip"] == pytest.approx(abs(later[7, 1] - u[7, 1])) and f["flipping"] == 1
    assert f["y_of_top"] == y[7] and f["rank_of_top"] == 1 + int(np.sum(y > y[7])) and f["n"] == 50
    problem = Problem("quad", "phase_retrieval", eta=0.08, steps=200, m=2)
    orbit = orbit_check.run(problem, 1.5, 200, 0)
    assert orbit["orbit"] and orbit["rank_of_top"] == 1 and orbit["y_of_top"] == orbit["max_y"]
    assert orbit["alternating_since"] < 200 - 20
    # eq. (3) for quad is 1 - 4 eta y ||x^perp||^2 / n; the orbiting sample is unstable there, not at its orbit point
    own = orbit["largest_label"]
    assert own["fitted_eigenvalue"] == pytest.approx(1 - 4 * 0.08 * own["label"] * own["x_norm2_over_n"], rel=1e-9)
    assert own["fitted_eigenvalue"] < -1 < own["own_eigenvalue"]
    settles = orbit_check.run(problem, 1.5, 60, 0)
    assert not settles["orbit"]
    fitted = settles["largest_label"]    # a settled sample is fitted: eqs. (2) and (3) nearly agree
    assert fitted["f"] == pytest.approx(fitted["label"], rel=0.01)
    assert fitted["own_eigenvalue"] == pytest.approx(fitted["fitted_eigenvalue"], abs=0.02)
    assert "diverged" in orbit_check.run(Problem("quad", "phase_retrieval", eta=0.15, steps=200, m=2), 1.5, 200, 0)
    bad = CliRunner().invoke(orbit_check.main, ["-a", "nope", "--eta", "0.1", "--delta", "1", "--dims", "100",
                                                "--out", "x.jsonl"])
    assert bad.exit_code != 0 and "unknown activation 'nope'" in bad.output and bad.exception.__class__ is SystemExit


def test_a_run_says_when_its_self_interaction_is_large():
    # eq. (6f): s = delta (r + m) / N per replica; the note appears above 0.05 and not below
    from thresholds.dmft import SELF_INTERACTION_NOTE, self_interaction
    few = solve_dmft(DMFTSetup("tanh", "abs", delta=4.0, eta=0.2, steps=20, paths=2000, replicas=2))
    many = solve_dmft(DMFTSetup("tanh", "abs", delta=4.0, eta=0.2, steps=20, paths=40000, replicas=2))
    s_few = self_interaction(few.setup, 1000, few.sources)
    assert s_few == pytest.approx(4.0 * (np.mean(few.sources) + 1) / 1000) and s_few > SELF_INTERACTION_NOTE
    assert any(n.startswith(f"self-interaction (eq. (6f)): each path's own term returns to it at about {s_few:.2g}")
               for n in few.notes)
    assert self_interaction(many.setup, 20000, many.sources) < SELF_INTERACTION_NOTE
    assert not any("self-interaction" in n for n in many.notes)


def test_unstable_fraction_of_fitted_own_steps():
    # eq. (10c): for quad (a = 1, b = 0) lambda* = 1 - 4 eta y / delta, so P is the weight of the labels above
    # delta / (2 eta) (eq. (10b)); for gelu with per-neuron a, b the fitted point and eigenvalue of one sample agree with
    # a scalar root-finder (scipy brentq) and the formula written out; a label no scale reaches is not counted
    from scipy import optimize
    from thresholds.catalog import get_activation
    from thresholds.dmft import fitted_eigenvalues, unstable_fraction
    rng = np.random.default_rng(3)
    u, g = rng.normal(size=(5000, 4)), rng.normal(size=5000)
    w = rng.uniform(size=5000)
    w /= w.sum()
    quad = DMFTSetup("quad", "phase_retrieval", delta=1.0, eta=0.2, steps=10)
    assert unstable_fraction(quad, u, g ** 2, w) == pytest.approx(np.sum(w[g ** 2 > 1.0 / (2 * 0.2)]), abs=1e-12)
    lam = fitted_eigenvalues("quad", 1.0, 0.0, u, g ** 2, 0.2)
    assert np.allclose(lam, 1 - 4 * 0.2 * g ** 2, atol=1e-9)
    act = get_activation("gelu")
    sigma, d1 = act.numpy(0), act.numpy(1)
    a, b = np.array([1.0, 0.5, 1.5, 1.0]), np.array([0.0, 0.3, -0.2, 0.1])
    checked = 0
    for i in range(5):
        y = 4.0 + i
        gap = lambda s: float(np.mean(a * sigma(s * u[i] + b))) - y
        if not gap(0.0) < 0 < gap(50.0):
            continue
        checked += 1
        star = optimize.brentq(gap, 0.0, 50.0, xtol=1e-14) * u[i] + b
        expected = 1 - 0.3 * float(np.sum((a * d1(star)) ** 2)) / 4
        assert fitted_eigenvalues("gelu", tuple(a), tuple(b), u[i:i + 1], y, 0.3)[0] == pytest.approx(expected, rel=1e-9)
    assert checked >= 3
    assert np.isnan(fitted_eigenvalues("tanh", 1.0, 0.0, u[:1], 2.0, 0.3)[0])   # tanh never reaches 2


def test_orthogonal_source_rows():
    """dmft eq. (6g): new source rows leave orthogonal to the whitened psi paths in the path weights, with unit
    weighted norm, in their own precision; with no past they are only normalized."""
    from thresholds.dmft import _orthogonal_rows
    rng = np.random.default_rng(0)
    N, r, k = 5000, 30, 4
    omega = rng.uniform(0.5, 1.5, N)
    omega /= omega.sum()
    Z = rng.standard_normal((r, N))
    L = np.linalg.cholesky((Z * omega) @ Z.T)
    past = np.linalg.solve(L, Z)                       # omega-orthonormal rows
    for dtype in (np.float64, np.float32):
        X = rng.standard_normal((k, N)).astype(dtype)
        Y = _orthogonal_rows(X, past.astype(dtype), omega)
        assert Y.dtype == dtype
        tol = 1e-12 if dtype == np.float64 else 1e-5
        assert np.abs((Y.astype(float) * omega) @ past.T).max() < tol
        assert np.allclose((Y.astype(float) ** 2) @ omega, 1.0, atol=tol)
        # the part of X along the past is what was removed: X - Y / scale lies in the span of the past
        scale = 1 / np.sqrt(((X - ((X * omega) @ past.T) @ past) ** 2) @ omega)
        resid = X.astype(float) - Y.astype(float) / scale[:, None]
        assert np.allclose(resid, ((resid * omega) @ past.T) @ past, atol=100 * tol)
    Y = _orthogonal_rows(np.full((1, 4), 2.0), np.zeros((0, 4)), np.full(4, 0.25))
    assert np.allclose(Y, 1.0)

"""The m x m Stieltjes engine against the scalar engine where the two must coincide."""
import numpy as np
import pytest

from thresholds.outlier import negative_indicator as scalar_indicator, lowest_outlier as scalar_outlier, spectrum
from thresholds.stieltjes import WeightLaw, bulk_edges
from thresholds.stieltjes_m import MatrixLaw, left_edge, lowest_outlier, negative_indicator, solve_alpha


def _scalar_law(n=6000, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(n)
    G = np.clip(1.0 + shift - 0.8 * g**2 + 0.3 * rng.standard_normal(n), -3, 5)
    return G, g


def test_m1_reproduces_the_scalar_engine():
    G, g = _scalar_law()
    delta = 6.0
    law1 = WeightLaw.from_samples(G, g)
    left, _ = bulk_edges(law1, delta)
    lawm = MatrixLaw.from_samples(G[:, None, None], g)
    edge = left_edge(lawm, delta)
    assert edge.z == pytest.approx(left.z, rel=1e-10)
    ind, _ = negative_indicator(lawm, delta, edge)
    # the matrix indicator is evaluated at the last z solved below the fold (within 1e-10 of it),
    # where alpha differs from its edge value by O(sqrt(z_edge - z)): agreement to 1e-4
    assert ind == pytest.approx(scalar_indicator(law1, delta), abs=1e-4)
    z, overlap2 = lowest_outlier(lawm, delta, edge)
    z1, _ = scalar_outlier(law1, delta)
    assert z == pytest.approx(z1, rel=1e-9)
    left_out = [o for o in spectrum(law1, delta).outliers if o.side == "left"]
    assert overlap2 == pytest.approx(left_out[0].overlap2, rel=1e-4)


def test_identical_neurons_and_independent_blocks():
    # W = G I_2: alpha = alpha_1 I, the same edge and outlier as m = 1.
    # W = diag(G_a, G_b): the equations decouple; edge = the lower edge, outliers = the union.
    delta = 6.0
    Ga, g = _scalar_law(seed=1)
    Gb, _ = _scalar_law(seed=2, shift=0.5)
    Gb = np.random.default_rng(3).permutation(Gb)  # independent of g: no outlier from this block
    la, lb = WeightLaw.from_samples(Ga, g), WeightLaw.from_samples(Gb, g)
    ident = MatrixLaw.from_samples(Ga[:, None, None] * np.eye(2), g)
    assert lowest_outlier(ident, delta)[0] == pytest.approx(scalar_outlier(la, delta)[0], rel=1e-9)
    W = np.zeros((Ga.size, 2, 2))
    W[:, 0, 0], W[:, 1, 1] = Ga, Gb
    diag = MatrixLaw.from_samples(W, g)
    edge = left_edge(diag, delta)
    assert edge.z == pytest.approx(min(bulk_edges(la, delta)[0].z, bulk_edges(lb, delta)[0].z), rel=1e-7)
    assert lowest_outlier(diag, delta, edge)[0] == pytest.approx(scalar_outlier(la, delta)[0], rel=1e-9)


def test_no_solution_inside_the_bulk():
    G, g = _scalar_law()
    law = MatrixLaw.from_samples(G[:, None, None] * np.eye(2), g)
    edge = left_edge(law, 6.0)
    assert solve_alpha(law, 6.0, edge.z_inside + 0.05, edge.alpha) is None
    alpha, smin = solve_alpha(law, 6.0, edge.z - 0.5)
    assert np.all(np.linalg.eigvalsh(alpha) > 0) and smin > 0


def test_width_m_hessian_weight_and_one_law_reduce_to_m1():
    from thresholds.catalog import get_activation
    from thresholds.dmft import DMFTSetup
    from thresholds.hessian import _one_law, _one_law_m, hessian_weight, hessian_weight_m
    rng = np.random.default_rng(4)
    n = 4000
    g = rng.standard_normal(n)
    y, u = g**2, 0.9 * rng.standard_normal(n)
    act = get_activation("gelu")
    W1 = hessian_weight_m(act, 1.3, 0.2, u[:, None], y)
    assert np.allclose(W1[:, 0, 0], hessian_weight(act, 1.3, 0.2, u, y), rtol=1e-12, atol=1e-14)
    U = rng.standard_normal((n, 3))
    W3 = hessian_weight_m(act, 1.3, 0.2, U, y)
    assert np.allclose(W3, np.transpose(W3, (0, 2, 1)))
    setup = DMFTSetup("gelu", "phase_retrieval", 8.0, 0.1, 10, a=1.3, b=0.2)
    w = np.full(n, 1.0 / n)
    one = _one_law(act, setup, 8.0, u, y, g, w, True)
    many = _one_law_m(act, setup, 8.0, u[:, None], y, g, w, True)
    assert many.left_edge == pytest.approx(one.left_edge, rel=1e-7)
    assert many.indicator == pytest.approx(one.indicator, abs=1e-4)  # evaluated just below the fold
    assert many.indicator_clipped == pytest.approx(one.indicator_clipped, abs=1e-4)
    assert (np.isnan(many.lowest_z) and np.isnan(one.lowest_z)) or many.lowest_z == pytest.approx(one.lowest_z,
                                                                                                  rel=1e-8)


def test_width_two_evaluation_from_the_finite_d_law():
    from thresholds.nn import NNSetup
    from validation.gd_law import evaluate
    ev = evaluate(NNSetup("gelu", eta=0.1, steps=16, m=2, law_d=120, replicas=2), 10.0, cache=False)
    assert len(ev.indicator) == 16 and np.all(np.isfinite(ev.indicator)) and np.all(np.isfinite(ev.left_edge))
    assert all(len(z) == 2 for z in ev.hard_z)


def test_two_coupled_blocks_give_two_outliers():
    # W = diag(G_a, G_b) with both weights depending on the same g: the equations decouple and
    # S = diag(S_a, S_b), so the hard outliers are the two scalar outliers (both lie below both
    # blocks' edges here; a block's outlier above the other block's edge is inside the bulk).
    from thresholds.stieltjes_m import hard_outliers
    delta, n = 6.0, 6000
    rng = np.random.default_rng(5)
    g = rng.standard_normal(n)
    Ga = np.clip(1.0 - 0.8 * g**2 + 0.3 * rng.standard_normal(n), -3, 5)
    Gb = np.clip(1.2 - 1.1 * g**2 + 0.2 * rng.standard_normal(n), -3, 5)
    W = np.zeros((n, 2, 2))
    W[:, 0, 0], W[:, 1, 1] = Ga, Gb
    outs = hard_outliers(MatrixLaw.from_samples(W, g), delta)
    expected = sorted(scalar_outlier(WeightLaw.from_samples(G, g), delta)[0] for G in (Ga, Gb))
    assert len(outs) == 2
    assert [z for z, _ in outs] == pytest.approx(expected, rel=1e-8)


def test_block_diagonal_law_pools_the_diagonal():
    # W = G I_2 is already block diagonal: the pooled law has the same edge and outlier.
    from thresholds.stieltjes_m import block_diagonal_law
    G, g = _scalar_law(n=3000)
    pooled = block_diagonal_law(MatrixLaw.from_samples(G[:, None, None] * np.eye(2), g))
    assert pooled.G.size == 2 * G.size and pooled.w.sum() == pytest.approx(1.0)
    law1 = WeightLaw.from_samples(G, g)
    assert bulk_edges(pooled, 6.0)[0].z == pytest.approx(bulk_edges(law1, 6.0)[0].z, rel=1e-12)
    assert scalar_outlier(pooled, 6.0)[0] == pytest.approx(scalar_outlier(law1, 6.0)[0], rel=1e-10)


def _product_samples(n=8000, seed=5):
    """Samples symmetrised under g1 <-> g2 (the law of y = g1 g2 is invariant under the swap)."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, 2))
    return np.vstack([g, g[:, ::-1]])


def test_several_hard_directions_m1_matches_the_scalar_r_by_r_engine():
    # m = 1 with r_H = 2: the (m r_H) x (m r_H) matrix is the r_H x r_H matrix of the scalar engine
    g = _product_samples()
    G = 1.0 - 1.6 * np.tanh(g[:, 0] * g[:, 1])
    w = np.full(G.size, 1.0 / G.size)
    M = np.einsum("ni,nj->nij", g, g)
    delta = 3.0
    law1 = WeightLaw.from_nodes(G, w, M)
    lawm = MatrixLaw(G[:, None, None], M, w)
    assert lawm.r == 2 and lawm.m == 1
    ind, _ = negative_indicator(lawm, delta)
    assert ind > 0.05 and ind == pytest.approx(scalar_indicator(law1, delta), abs=1e-4)
    z, _ = lowest_outlier(lawm, delta)
    assert z == pytest.approx(scalar_outlier(law1, delta)[0], rel=1e-7)


def test_several_hard_directions_and_two_neurons_split_along_the_symmetry_axes():
    # m = 2, y = g1 g2 with swap-symmetric samples: in the basis v+- = (e1 +- e2)/sqrt 2 the 4 x 4 matrix
    # S = alpha^{-1} (x) I + E[K (x) (g g^T - I)] is block diagonal (E[K (x) g1 g2] terms are the same in
    # both orders), its blocks are the 2 x 2 matrices of one hard direction with h = (v+-^T g)^2; the
    # lowest eigenvalue is the lower of the two, exactly
    g = _product_samples()
    y = g[:, 0] * g[:, 1]
    rng = np.random.default_rng(2)
    u = rng.standard_normal((y.size // 2, 2))
    u = np.vstack([u, u])                    # each swapped copy keeps its pre-activations: exact symmetry
    s1 = 1 - 0.5 * np.tanh(u) ** 2
    W = np.einsum("ni,nj->nij", s1, s1) / 4 - 0.8 * np.tanh(y)[:, None, None] * np.eye(2) / 2 \
        + 0.5 * np.eye(2) / 2
    w = np.full(y.size, 1.0 / y.size)
    delta = 3.0
    both = negative_indicator(MatrixLaw(W, np.einsum("ni,nj->nij", g, g), w), delta)[0]
    plus = negative_indicator(MatrixLaw(W, (g @ [1, 1]) ** 2 / 2, w), delta)[0]
    minus = negative_indicator(MatrixLaw(W, (g @ [1, -1]) ** 2 / 2, w), delta)[0]
    assert both == pytest.approx(max(plus, minus), rel=1e-9, abs=1e-12)
    assert abs(plus - minus) > 0.05 and max(plus, minus) > 0   # a negative outlier, in one direction only
    first = negative_indicator(MatrixLaw(W, g[:, 0] ** 2, w), delta)[0]
    assert abs(first - both) > 0.05                              # g1 alone would be wrong


def test_newton_solution_is_the_fixed_point_of_eq1_with_the_kron_jacobian():
    # the jitted Newton against plain NumPy: at the returned alpha (m = 3, a random law of symmetric
    # weights, z below the spectrum) alpha = (-z I + E[K])^{-1} with K = (I + W alpha/delta)^{-1} W per
    # sample (np.linalg.solve), and the Jacobian's smallest singular value is that of
    # I - (alpha (x) alpha) E[K (x) K]/delta built with np.kron
    from thresholds.stieltjes_m import _newton
    rng = np.random.default_rng(3)
    n, m, delta = 500, 3, 4.0
    A = rng.normal(size=(n, m, m))
    law = MatrixLaw.from_samples(0.5 * (A + A.transpose(0, 2, 1)) + 2 * np.eye(m), rng.normal(size=n))
    z = law.lower_bound(delta)
    alpha, sv = solve_alpha(law, delta, z)
    K = np.linalg.solve(np.eye(m) + law.W @ alpha / delta, law.W)
    EK = np.einsum("n,nij->ij", law.w, K)
    np.testing.assert_allclose(alpha, np.linalg.inv(-z * np.eye(m) + EK), rtol=1e-10, atol=1e-13)
    EKK = np.einsum("n,nij,nkl->ikjl", law.w, K, K).reshape(m * m, m * m)
    J = np.eye(m * m) - np.kron(alpha, alpha) @ EKK / delta
    assert sv == pytest.approx(np.linalg.svd(J, compute_uv=False)[-1], rel=1e-8)
    # a singular phi = -z I + E[K] is a failed solve, not an exception: W = 0 and z = 0
    *_, ok = _newton(np.zeros((4, 2, 2)), np.full(4, 0.25), np.eye(2), delta, 0.0, 1e-12, 40)
    assert not ok


@pytest.mark.parametrize("delta", [1.0, 1.5, 2.0])
def test_an_edge_at_zero_is_taken_at_its_bracket(delta):
    # a linear activation at m = 2: every W_i is the rank-one (1/2) 1 1^T, so H has a null space and the left
    # edge is 0 up to the bisection's tolerance; the indicator at min(0, edge) is that of the bracket's lower
    # end, never "no solution at z = 0" when 0 lies a rounding error inside the bulk.  The branch ends at a pole
    # there (alpha ~ 1 / |z| along the null space), where -z I + E[K] has condition ~ 1 / |z| and its rounding makes
    # Newton's steps larger than their relative tolerance 1e-12 once |z| is below about 1e-6: such a point may be read
    # as past the edge (delta 1.5: at -4.1e-7, from -8.2e-7), so the edge is located to 1e-6, not 1e-8 (which the
    # bisection's points of stieltjes_m eq. (6)'s predecessor met at these three deltas by chance of where they fell)
    rng = np.random.default_rng(0)
    law = MatrixLaw.from_samples(np.tile(0.5 * np.ones((2, 2)), (500, 1, 1)), rng.normal(size=500))
    edge = left_edge(law, delta)
    assert abs(edge.z) < 1e-6 and edge.z_below < 0
    ind, z = negative_indicator(law, delta, edge)
    assert np.isfinite(ind) and z == edge.z


def test_fold_prediction_recovers_a_power_law_edge():
    """stieltjes_m eq. (6): through three points of s^2 = c (z_e - z)^p the prediction is z_e (p = 0.8 and 1), the
    line through the last two when only two are usable, and None when s^2 does not decrease."""
    from thresholds.stieltjes_m import _fold_prediction
    for p in (0.8, 1.0):
        pts = [(z, 2.0 * (0.3 - z) ** p) for z in (-1.0, -0.2, 0.1)]
        assert _fold_prediction(pts, 1.0) == pytest.approx(0.3, abs=1e-9)
    two = [(-1.0, 2.6), (0.0, 0.6)]
    assert _fold_prediction(two, 1.0) == pytest.approx(0.3, abs=1e-12)   # 0.6 / ((2.6 - 0.6) / 1)
    assert _fold_prediction([(-1.0, 1.0), (0.0, 1.0)], 1.0) is None


def test_pole_check_is_the_eigenvalue_test():
    """_physical's pole test: alpha^{-1} + W_i / delta > 0 for every sample (Cholesky per sample) against the
    eigenvalues of I + alpha^{1/2} W_i alpha^{1/2} / delta, on laws with and without a sample past the pole."""
    from thresholds.stieltjes_m import _all_positive_definite
    rng, seen = np.random.default_rng(3), set()
    for trial in range(40):
        m, delta = 3, 2.0
        A = rng.standard_normal((m, m))
        alpha = A @ A.T + 0.1 * np.eye(m)
        W = rng.standard_normal((50, m, m)) * 10 ** rng.uniform(-2, 0.5)
        W = 0.5 * (W + np.transpose(W, (0, 2, 1)))
        vals, vecs = np.linalg.eigh(alpha)
        root = (vecs * np.sqrt(vals)) @ vecs.T
        ref = np.linalg.eigvalsh(np.eye(m) + root @ W @ root / delta)[:, 0].min() > 0
        seen.add(bool(ref))
        assert _all_positive_definite(W, np.linalg.inv(alpha), delta) == ref
    assert seen == {True, False}


def _relabelled(W, g):
    """Every sample in all m! relabellings of its neurons (a law invariant under relabelling), and its spike latents."""
    import itertools
    perms = list(itertools.permutations(range(W.shape[1])))
    return np.concatenate([W[:, p][:, :, p] for p in perms]), np.concatenate([g] * len(perms))


@pytest.mark.parametrize("m", [2, 3, 4])
def test_exchangeable_reduction_is_the_full_engine_on_the_relabelled_law(m):
    # eqs. (7)-(8): on the law holding every relabelling of each sample, the two-coordinate Newton, its 2 x 2 fold
    # and the two-sector outlier matrix give the full engine's edge, indicator and outlier
    from thresholds.catalog import get_activation
    from thresholds.hessian import hessian_weight_m
    rng = np.random.default_rng(10 + m)
    n, delta = 1500, 5.0
    g = rng.standard_normal(n)
    U = 0.8 * rng.standard_normal((n, m)) + 0.3 * g[:, None] * rng.choice([-1, 1], (n, 1))
    W = hessian_weight_m(get_activation("quad"), 1.0, 0.0, U, g**2)
    full = MatrixLaw.from_samples(*_relabelled(W, g))
    reduced = MatrixLaw.from_samples(W, g, exchangeable=True)
    ef, ex = left_edge(full, delta), left_edge(reduced, delta)
    assert ex.z == pytest.approx(ef.z, rel=1e-9)
    # each indicator is taken at its own last z below the fold (within 1e-10 of it), where alpha differs from its edge
    # value by O(sqrt(z_edge - z)): agreement to 1e-4, as for m = 1 against the scalar engine
    assert negative_indicator(reduced, delta, ex)[0] == pytest.approx(negative_indicator(full, delta, ef)[0], abs=1e-4)
    zf, of = lowest_outlier(full, delta, ef)
    zx, ox = lowest_outlier(reduced, delta, ex)
    assert np.isfinite(zf) and zx == pytest.approx(zf, rel=1e-9) and ox == pytest.approx(of, rel=1e-6)
    # the raw (unrelabelled) samples are another law: the full engine on them differs
    assert abs(left_edge(MatrixLaw.from_samples(W, g), delta).z - ef.z) > 1e-6


def test_exchangeable_reduction_with_two_hard_directions():
    # r_H = 2 (y = g1 g2): the outlier matrix P (x) S_P + Q (x) S_Q against the full (m r_H) x (m r_H) matrix
    from thresholds.stieltjes_m import S_matrix
    rng = np.random.default_rng(7)
    g = _product_samples(n=1000)
    n, m, delta = g.shape[0], 3, 3.0
    U = rng.standard_normal((n, m))
    W = 0.5 * np.eye(m) + 0.5 * np.einsum("ni,nj->nij", U, U) / m - np.tanh(g[:, 0] * g[:, 1])[:, None, None] * np.eye(m)
    Wa, ga = _relabelled(W, g)
    full = MatrixLaw(Wa, np.einsum("ni,nj->nij", ga, ga), np.full(Wa.shape[0], 1 / Wa.shape[0]))
    reduced = MatrixLaw(W, np.einsum("ni,nj->nij", g, g), np.full(n, 1 / n), exchangeable=True)
    alpha, _ = solve_alpha(full, delta, -2.0)
    alpha_x, _ = solve_alpha(reduced, delta, -2.0)
    assert alpha_x == pytest.approx(alpha, abs=1e-10)
    assert S_matrix(reduced, delta, alpha_x) == pytest.approx(S_matrix(full, delta, alpha), abs=1e-10)
    # at the edge: each at its own last z below the fold (as above), agreement to 1e-4
    assert negative_indicator(reduced, delta)[0] == pytest.approx(negative_indicator(full, delta)[0], abs=1e-4)


def test_exchangeable_reduction_needs_two_neurons_and_uniform_a_b():
    from thresholds.dmft import DMFTSetup
    from thresholds.errors import ThresholdsError
    from thresholds.hessian import exchangeable
    G, g = _scalar_law(n=100)
    with pytest.raises(ThresholdsError):
        MatrixLaw.from_samples(G[:, None, None], g, exchangeable=True)
    assert exchangeable(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 10, m=3))
    assert not exchangeable(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 10, m=3, a=(1.0, -1.0, 1.0)))
    assert not exchangeable(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 10, m=2, b=(0.0, 0.5)))
    assert not exchangeable(DMFTSetup("quad", "phase_retrieval", 4.0, 0.05, 10, m=1))


@pytest.mark.parametrize("exchangeable", [False, True])
def test_outlier_search_below_an_edge_near_zero(exchangeable):
    # a data set of 2000 DMFT paths (quad, eta 0.05, m = 8, delta 2, step 600) whose left edge lies at -0.006: Newton
    # started at the edge's alpha for a z just below it lands on the unstable branch; the outlier search then
    # continues up from below (``_continue``) instead of failing
    from pathlib import Path
    from thresholds.catalog import get_activation
    from thresholds.hessian import hessian_weight_m
    d = np.load(Path(__file__).parent / "data" / "fold_start_m8.npz")
    u, y, g = (d[k].astype(float) for k in ("u", "y", "g"))
    law = MatrixLaw.from_samples(hessian_weight_m(get_activation("quad"), 1.0, 0.0, u, y), g, exchangeable)
    edge = left_edge(law, 2.0)
    assert -0.007 < edge.z < -0.006
    z, overlap2 = lowest_outlier(law, 2.0, edge)
    assert z < edge.z_below and 0 < overlap2 < 1
    # S is singular there, on the physical branch reached up from z = -0.02 (Newton from 1/|z| I fails so near 0)
    from thresholds.stieltjes_m import S_matrix, _continue
    assert solve_alpha(law, 2.0, z) is None
    alpha, _ = _continue(law, 2.0, -0.02, solve_alpha(law, 2.0, -0.02)[0], z)
    assert np.linalg.eigvalsh(S_matrix(law, 2.0, alpha))[0] == pytest.approx(0, abs=1e-7)


def test_spectral_coordinates_of_K_match_the_direct_solve_and_fall_back_at_a_pole():
    # eq. (7b): 1^T K 1, tr K, |K 1|^2, |K|_F^2 of K = (I + W alpha / delta)^{-1} W at alpha = a_P P + a_Q Q, from
    # W's eigenbasis, against numpy's solve; and the physical-branch test against a Cholesky factorization
    from thresholds.stieltjes_m import (_all_positive_definite, _all_positive_definite_x, _coordinates_K,
                                        _invariant, spectral_data)
    rng = np.random.default_rng(3)
    m, delta = 5, 2.5
    A = rng.standard_normal((40, m, m))
    W = 0.5 * (A + A.transpose(0, 2, 1))
    lam, b2 = spectral_data(W)
    one = np.ones(m)

    def direct(Ws, a_p, a_q):
        K = np.linalg.solve(np.eye(m) + Ws @ _invariant(m, a_p, a_q) / delta, Ws)
        return one @ K @ one, np.trace(K), np.sum((K @ one) ** 2), np.sum(K * K)
    scratch = np.empty((m, m)), np.empty((m, m))
    for s, (a_p, a_q) in enumerate(rng.uniform(0.2, 1.5, (40, 2))):
        assert _coordinates_K(W[s], lam[s], b2[s], a_p, a_q, delta, *scratch) == pytest.approx(
            direct(W[s], a_p, a_q), rel=1e-9, abs=1e-9)
    # a_Q at the pole of W_0's lowest eigenvalue (1 + a_Q lam / delta = 0): Sherman-Morrison does not apply, the
    # direct solve does (the full matrix is not singular there: a_P != a_Q)
    a_q = -delta / lam[0, 0]
    got = _coordinates_K(W[0], lam[0], b2[0], 0.5 * a_q, a_q, delta, *scratch)
    assert np.all(np.isfinite(got)) and got == pytest.approx(direct(W[0], 0.5 * a_q, a_q), rel=1e-9)
    # the rank-one denominator 1 + c s / delta within POLE_MARGIN of 0 (c = (a_P - a_Q) / m, s = sum E b2): the
    # matrix is near-singular, K of order 1e5, and the direct solve agrees with numpy's to its conditioning
    a_q = 0.7
    s0 = np.sum(lam[1] / (1 + a_q * lam[1] / delta) * b2[1])
    a_p = a_q + m * (1e-5 - 1) * delta / s0
    assert _coordinates_K(W[1], lam[1], b2[1], a_p, a_q, delta, *scratch) == pytest.approx(
        direct(W[1], a_p, a_q), rel=1e-6)
    for x_p, x_q in [(2.0, 3.0), (3.0, 2.0), (4.0, 0.5), (0.3, 4.0), (0.05, 6.0), (8.0, 1.5)]:
        assert _all_positive_definite_x(W, lam, b2, x_p, x_q, delta) == _all_positive_definite(
            W, _invariant(m, x_p, x_q), delta)

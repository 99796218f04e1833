import numpy as np
import pytest

from validation.simulate import GDSetup, hessian_probe, run_gd


def small(**kw):
    base = dict(activation="tanh", link="abs", delta=3.0, d=120, eta=0.2, steps=8, n_test=500)
    base.update(kw)
    return GDSetup(**base)


def test_same_seed_same_numbers():
    a, b = run_gd(small(seed=4)), run_gd(small(seed=4))
    assert np.array_equal(a.norm2, b.norm2) and np.array_equal(a.train_loss, b.train_loss)


def test_different_seeds_are_independent():
    # the trajectories differ, and the final squared norms across seeds are uncorrelated with the
    # seed index (a correlated or repeated stream would make them identical or ordered)
    finals = np.array([run_gd(small(seed=s)).norm2[-1] for s in range(12)])
    assert len(set(np.round(finals, 12))) == 12
    x = np.arange(12) - 5.5
    corr = np.corrcoef(x, finals)[0, 1]
    assert abs(corr) < 0.8


def test_complement_run_has_no_latent_component():
    res = run_gd(small(link="phase_retrieval"))
    assert np.all(res.latent_overlap == 0.0)
    unrestricted = run_gd(small(link="phase_retrieval", complement=False))
    assert unrestricted.latent_overlap[-1] > 0.0


def test_initial_norm_matches_rho0():
    res = run_gd(small(d=4000, steps=0, rho0=0.7, delta=1.0))
    assert res.norm2[0] == pytest.approx(0.49, rel=0.05)  # chi^2_d / d fluctuation ~ sqrt(2/d)


def test_hessian_probe_lanczos_matches_dense():
    res = run_gd(small(d=700, steps=5, activation="gelu", link="phase_retrieval"))
    X, y = res.data
    dense = hessian_probe(X, y, res.theta, "gelu", dense_below=10_000)
    lanczos = hessian_probe(X, y, res.theta, "gelu", dense_below=0)
    for key in ("lowest", "highest"):
        for (v1, o1), (v2, o2) in zip(dense[key], lanczos[key]):
            assert v1 == pytest.approx(v2, abs=1e-6)
            assert o1 == pytest.approx(o2, abs=1e-4)


def test_wilson_interval_properties():
    from validation.threshold import wilson
    lo, hi = wilson(0, 20)
    assert lo == 0.0 and 0.1 < hi < 0.2
    lo, hi = wilson(10, 20)
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-12


def test_crossing_fit_recovers_a_known_logistic():
    from validation.threshold import extrapolate, fit_crossing
    rng = np.random.default_rng(0)
    deltas = np.linspace(2, 8, 13)
    p = 1 / (1 + np.exp(-(deltas - 5.0) / 0.5))
    k = rng.binomial(400, p)
    c, se = fit_crossing(deltas, k, [400] * 13)
    assert abs(c - 5.0) < 4 * se and se < 0.1
    assert fit_crossing(deltas, [0] * 13, [400] * 13) == (None, None)
    # all-or-nothing data: no curvature to read an error from; the crossing is the midpoint of the
    # gap where the rate jumps, with the standard deviation of a uniform law on it (never nan)
    c, se = fit_crossing([4, 6, 8, 10], [0, 10, 10, 10], [10] * 4)
    assert (c, se) == pytest.approx((5.0, 2 / np.sqrt(12)))
    # exact linear dependence on 1/log d is extrapolated exactly
    dims = [500, 1000, 2000, 4000]
    cross = [3.0 + 2.0 / np.log(d) for d in dims]
    c0, e0 = extrapolate(dims, cross, [0.1] * 4)
    assert abs(c0 - 3.0) < 1e-10 and e0 > 0


def test_hessian_probe_matches_finite_differences_for_two_neurons():
    # H = m Hess R: compare the matrix-free product with a finite difference of the gradient
    from thresholds.catalog import get_activation
    rng = np.random.default_rng(3)
    n, d, m = 300, 5, 2
    X = rng.standard_normal((n, d))
    y = X[:, 0] ** 2
    Theta = rng.standard_normal((d, m)) / np.sqrt(d)
    act = get_activation("tanh")
    s0, s1 = act.numpy(0), act.numpy(1)

    def grad(T):  # m * grad R, flattened (d, m)
        U = X @ T
        f = np.mean(s0(U), axis=1)
        return (-(X.T @ ((y - f)[:, None] * s1(U))) / n).reshape(-1)

    H = np.zeros((d * m, d * m))
    h = 1e-6
    for i in range(d * m):
        e = np.zeros(d * m)
        e[i] = h
        H[:, i] = (grad(Theta + e.reshape(d, m)) - grad(Theta - e.reshape(d, m))) / (2 * h)
    vals = np.linalg.eigvalsh(0.5 * (H + H.T))
    probe = hessian_probe(X, y, Theta, "tanh", k=1, count=2)
    assert probe["lowest"][0][0] == pytest.approx(vals[0], abs=1e-6)
    assert probe["highest"][0][0] == pytest.approx(vals[-1], abs=1e-6)


def test_tangent_of_the_gd_map_matches_finite_differences():
    # validation/tangent_check propagates dG(Theta)[V]; central differences of G along V agree
    from thresholds.catalog import get_activation
    from validation.tangent_check import gradient, tangent
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 40))
    y = X[:, 0] ** 2
    Th = rng.standard_normal((40, 2)) / np.sqrt(40)
    Vs = rng.standard_normal((40, 2, 3))
    fns = tuple(get_activation("gelu").numpy(k) for k in range(3))
    eps = 1e-5
    exact = tangent(Th, Vs, X, y, fns)
    for k in range(3):
        fd = (gradient(Th + eps * Vs[:, :, k], X, y, fns) - gradient(Th - eps * Vs[:, :, k], X, y, fns)) / (2 * eps)
        assert np.allclose(exact[:, :, k], fd, rtol=1e-6, atol=1e-9)


def test_the_test_loss_on_a_schedule_leaves_the_run_unchanged():
    # the test loss is a read-out: evaluating it every 5 steps gives the same trajectory and the same values
    # at the evaluated steps, nan in between
    every = run_gd(GDSetup("tanh", "abs", 3.0, 40, 0.2, 12, complement=False, seed=5, n_test=300))
    sparse = run_gd(GDSetup("tanh", "abs", 3.0, 40, 0.2, 12, complement=False, seed=5, n_test=300, test_every=5))
    assert np.array_equal(every.norm2, sparse.norm2) and np.array_equal(every.hard_overlap, sparse.hard_overlap)
    at = [0, 5, 10, 12]
    assert np.array_equal(every.test_loss[at], sparse.test_loss[at])
    assert np.isnan(np.delete(sparse.test_loss, at)).all()


def test_forced_tangent_predicts_the_unrestricted_hard_component():
    """Eq. (2) of validation/tangent_check: W_t, forced by the hard gradient that the restriction removes, is
    the first-order difference between the unrestricted and the restricted run.  The hard coordinate of the
    data is scaled by e (y keeps the unscaled z), so the initial hard component and the forcing are O(e)
    and the unrestricted hard component must match W_t up to higher orders: the relative error falls at least
    like e (here like e^4, about 1e-9 at e = 0.01, because y = z^2 is even in z)."""
    from thresholds.catalog import get_activation
    from validation.tangent_check import run
    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 60))
    y = X[:, 0] ** 2
    fns = tuple(get_activation("quad").numpy(k) for k in range(3))
    theta0 = rng.standard_normal((60, 1)) / np.sqrt(60)
    errs = []
    for e in (1e-2, 5e-3):
        Xe = X.copy()
        Xe[:, 0] *= e
        th = theta0.copy()
        th[0] *= e
        res = run(1, 0.0, 0, data=(fns, Xe, y, th), eta=0.05, steps=30)
        scale = np.abs(res.forced[:, 0]).max()
        assert scale > 1e-3 * e  # the forcing moves the hard component
        errs.append(np.abs(res.forced[:, 0] - res.hard[:, 0]).max() / scale)
    assert errs[0] < 1e-6 and errs[1] < 0.5 * errs[0]


def test_release_adds_a_random_start_sized_hard_component_and_then_runs_unrestricted_gd():
    # the restricted run to t1 is step for step that of the same seed; at t1 the hard component drawn from the
    # stream [seed, t1] with the size rho0 / sqrt(d); after t1 plain GD (eqs. (1)-(3), a NumPy reference)
    base = dict(link="phase_retrieval", m=2, seed=5, rho0=0.8)
    restricted, released = run_gd(small(steps=12, **base)), run_gd(small(steps=12, release=12, **base))
    h = np.random.default_rng([5, 12]).standard_normal((1, 2)) * 0.8 / np.sqrt(120)
    assert np.array_equal(released.train_loss[:12], restricted.train_loss[:12])
    assert np.all(released.latent_overlap[:12] == 0.0)
    assert np.allclose(released.theta - restricted.theta, np.vstack([h, np.zeros((119, 2))]), rtol=0, atol=1e-15)
    later = run_gd(small(steps=14, release=12, **base))
    X, y = released.data
    Theta = released.theta.copy()
    for _ in range(2):
        U = X @ Theta
        f = np.tanh(U).mean(axis=1)
        Theta = Theta + 0.2 * X.T @ ((y - f)[:, None] * (1 - np.tanh(U) ** 2)) / X.shape[0]
    assert np.allclose(later.theta, Theta, rtol=1e-10, atol=1e-13)
    assert later.latent_overlap[-1] > 0.0
    # released at zero: nothing added at t1, and the data set's own gradient moves the hard directions after it
    zero = run_gd(small(steps=14, release=12, release_scale=0.0, **base))
    assert zero.latent_overlap[12] == 0.0 and zero.latent_overlap[14] > 0.0


def test_release_refuses_a_step_outside_the_run_or_a_run_outside_the_complement():
    from thresholds.errors import ThresholdsError
    for bad in (dict(release=9), dict(release=-1), dict(release=3, complement=False), dict(release=2.5)):
        with pytest.raises(ThresholdsError, match="release must be"):
            run_gd(small(**bad))


def test_the_step_direction_is_gd_s_step_and_the_dense_hessian_its_derivative():
    # gd_direction at Theta_0 is (Theta_1 - Theta_0) / eta of one unrestricted step (per-neuron a, b); dense_hessian of
    # hessian_weights is minus its derivative, checked by central differences along a random direction
    from validation.simulate import dense_hessian, gd_direction, hessian_weights
    setup = GDSetup("gelu", "phase_retrieval", delta=3.0, d=30, eta=0.1, steps=1, m=3, a=(1.0, -0.5, 2.0),
                    b=(0.1, 0.0, -0.2), complement=False, seed=4, n_test=10, test_loss=False)
    first = run_gd(setup)
    X, y = first.data
    Theta0 = run_gd(GDSetup(**{**setup.__dict__, "steps": 0})).theta
    G = gd_direction(X, y, X @ Theta0, "gelu", a=setup.a, b=setup.b)
    np.testing.assert_allclose(G, (first.theta - Theta0) / 0.1, rtol=1e-10, atol=1e-12)
    H = dense_hessian(X, hessian_weights(y, X @ Theta0, "gelu", a=setup.a, b=setup.b))
    V = np.random.default_rng(0).standard_normal(Theta0.shape)
    eps = 1e-5
    dG = (gd_direction(X, y, X @ (Theta0 + eps * V), "gelu", a=setup.a, b=setup.b)
          - gd_direction(X, y, X @ (Theta0 - eps * V), "gelu", a=setup.a, b=setup.b)) / (2 * eps)
    np.testing.assert_allclose(-(H @ V.ravel()).reshape(V.shape), dG, rtol=1e-6, atol=1e-8)

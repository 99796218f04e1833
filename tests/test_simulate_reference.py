"""The numba GD kernel of validation.simulate against a plain NumPy implementation, step by step.

The reference below is written from the update rule alone (simulate.py eqs. (1)-(3)) with NumPy's
vectorized activations (no numba, no fused loops), and it draws its data from the seed in the order
run_gd documents: training X, its labels, test X, its labels, then Theta_0.  Both are run on small
problems covering one and several neurons, a second-layer weight and bias (one for all neurons or one
per neuron), weight decay, the
complement restriction, the sphere constraint and an odd number of rows (a partial register tile).
The two are different summation orders of the same sums, so they agree to rounding (1e-9 relative
over 40 steps), not bit for bit.
"""

import math

import numpy as np
import pytest

from thresholds.alg import latent_split
from thresholds.catalog import get_activation, get_link
from thresholds.targets import labels, y_moments
from validation.simulate import GDSetup, run_gd


def numpy_gd(s: GDSetup):
    act, link = get_activation(s.activation), get_link(s.link)
    s0, s1 = act.numpy(0), act.numpy(1)
    rng = np.random.default_rng(s.seed)
    n, d, m, k = int(round(s.delta * s.d)), s.d, s.m, link.k
    X = rng.standard_normal((n, d))
    y = labels(link, X[:, :k], rng)
    Xt = rng.standard_normal((s.n_test, d))
    yt = labels(link, Xt[:, :k], rng)
    Theta = rng.standard_normal((d, m)) * s.rho0 / math.sqrt(d)
    easy = latent_split(link).easy
    if s.complement:
        Theta[:k] = easy.T @ (easy @ Theta[:k])
    Ey2 = y_moments(link)[1]
    f = lambda Z: np.mean(s.a * s0(Z @ Theta + s.b), axis=1)
    norm2, train, test = [], [], []
    for t in range(s.steps + 1):
        U = X @ Theta + s.b
        r = y - np.mean(s.a * s0(U), axis=1)
        train.append(np.mean(r ** 2) / 2)
        norm2.append(np.sum(Theta ** 2) / m)
        ft = f(Xt)
        test.append(0.5 * Ey2 - np.mean(yt * ft) + 0.5 * np.mean(ft ** 2))
        if t == s.steps:
            break
        grad = X.T @ (r[:, None] * s.a * s1(U)) / n
        Theta = Theta + s.eta * grad - s.eta * s.weight_decay * Theta
        if s.complement:
            Theta[:k] = easy.T @ (easy @ Theta[:k])
        if s.sphere:
            Theta = Theta * s.rho0 / np.sqrt(np.sum(Theta ** 2, axis=0))
    return np.array(norm2), np.array(train), np.array(test), Theta


CASES = [
    dict(activation="gelu", link="phase_retrieval", m=1),
    dict(activation="quad", link="phase_retrieval", m=1, eta=0.05, complement=False),
    dict(activation="tanh", link="mixed", m=3, a=0.7, b=0.3, weight_decay=0.05, complement=False),
    dict(activation="gelu", link="abs", m=5, rho0=0.8, sphere=True),
    dict(activation="quad", link="phase_retrieval", m=2, eta=0.05, b=-0.2),
    dict(activation="tanh", link="abs", m=3, a=(1.0, -0.5, 2.0), b=(0.1, -0.3, 0.0), complement=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['activation']}-{c['link']}-m{c['m']}")
def test_numba_kernel_reproduces_the_numpy_reference_step_by_step(case):
    kw = dict(delta=2.5, d=41, eta=0.1, steps=40, n_test=203, seed=3)
    kw.update(case)
    s = GDSetup(**kw)
    assert int(round(s.delta * s.d)) % 4 != 0  # a partial register tile at the end of a row block
    norm2, train, test, Theta = numpy_gd(s)
    run = run_gd(s)
    assert norm2[-1] != pytest.approx(norm2[0], rel=1e-3)  # the run moved
    np.testing.assert_allclose(run.norm2, norm2, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(run.train_loss, train, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(run.test_loss, test, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(run.theta, Theta, rtol=1e-8, atol=1e-12)

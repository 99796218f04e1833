"""Finite-d full-batch gradient descent for the two-layer network (THEORY.md section 2).

    f(x) = (1/m) sum_j a_j sigma(theta_j^T x + b_j)      (only Theta is trained)          (1)
    theta_j <- theta_j + eta (1/n) sum_i psi_ij x_i - eta lambda theta_j                (2)
    psi_ij = (y_i - f(x_i)) a_j sigma'(theta_j^T x_i + b_j)                             (3)
(the mean-field step; thresholds.problem).  Data x ~ N(0, I_d), the
latent directions are the first k coordinates, y = h(x_{1..k}, eps), n = delta d.

``complement=True`` trains in the orthogonal complement of the hard
subspace (THEORY.md section 1; for a target without easy directions, the whole
latent subspace, so the covariates seen by Theta are independent of y): this
isolates the first phase, as in the DMFT.  The easy directions stay free and
their overlaps M(t) = Theta_E^T Theta(t) are recorded (``signal``).

``release=t1`` (with ``complement``) ends the restriction at step t1: the first phase runs in the complement to
t1, then every theta_j gets a hard component of the size a random start has, rho0 / sqrt(d) per hard direction
(drawn from its own stream, so the run to t1 is the restricted run of the same seed step for step; times
``release_scale``, 0 for none), and GD goes on unrestricted.  Whether the hard component then grows to O(1) is
the escape from the first phase at t1 that validation.settled_hessian's verdicts infer from the Hessian
(validation.release_check).

The per-step kernel is one fused pass over the rows of X (numba, parallel
over ROW_BLOCKS row blocks, register tiles of ROWS rows): u_i = x_i^T Theta, psi_i, and the
gradient accumulation X^T psi share the rows while they are in cache, so a step reads X once and
each entry of Theta and of the gradient loaded serves ROWS rows.  Its cost is that of the two
products X Theta and X^T Psi by BLAS or less for m <= 16 (validation/bench_simulate.py), and its
numbers do not depend on the thread count (a BLAS product's do, for some shapes).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numba
import numpy as np

from thresholds.alg import latent_split
from thresholds.catalog import get_activation, get_link
from thresholds.errors import BLOWUP
from thresholds.kernels import compiled_activation
from thresholds.problem import Problem, per_neuron
from thresholds.targets import labels, y_moments


# Row blocks of the fused kernel.  Each block's partial sums are accumulated in a fixed order and then
# added block by block, so a run's numbers depend on this count and not on how many threads (or Dask
# workers) execute it.  2 is the thread count of the machines that produced the committed results.
ROW_BLOCKS = 2


@dataclass
class GDSetup:
    activation: str
    link: str
    delta: float
    d: int
    eta: float
    steps: int
    a: float | tuple = 1.0   # one value, or one per neuron
    b: float | tuple = 0.0
    rho0: float = 1.0
    weight_decay: float = 0.0
    m: int = 1
    complement: bool = True
    sphere: bool = False  # rescale every theta_j to norm rho0 after each step
    release: int = 0      # with complement: the step at which the hard directions are released (0: never)
    release_scale: float = 1.0   # the released hard component in units of a random start's (0: released at zero)
    planted: float | tuple = 0.0  # initial overlap with every hard direction: one for every theta_j or one per
    #                              neuron (0: the drawn one)
    seed: int = 0
    n_test: int = 5_000  # fresh samples for the test loss
    test_loss: bool = True  # False: the test set is drawn (same random stream) but not evaluated (nan)
    test_every: int = 1  # the test loss at steps 0, k, 2k, ... and the last one (nan in between)
    dtype: str = "float64"
    loss: str = "square"

    @classmethod
    def from_problem(cls, problem: Problem, delta: float, d: int, **rest) -> "GDSetup":
        """GD on ``problem`` at sample ratio ``delta`` and dimension ``d`` with the given run settings."""
        return cls(delta=float(delta), d=int(d), **problem.fields(), **rest)

    @property
    def problem(self) -> Problem:
        return Problem.of(self)


@dataclass
class GDResult:
    setup: GDSetup
    norm2: np.ndarray
    overlap_init: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    latent_overlap: np.ndarray
    seconds: float
    theta: np.ndarray = field(repr=False, default=None)
    data: tuple = field(repr=False, default=None)
    hard_overlap: np.ndarray = None   # (1/m) ||P_H Theta||_F^2 per step
    signal: np.ndarray = None         # (T+1, r_E, m): overlaps with the easy directions


ROWS = 4  # rows of X per register tile of the step kernel


@numba.njit(fastmath=True, cache=False, inline="always")
def _tile_preactivations(X, i0, cnt, ThetaT, u):
    """u[r, j] = x_{i0+r}^T theta_j for the ``cnt`` <= ROWS rows of a tile (eq. (1)); a full tile keeps
    four running sums per neuron, so each theta_j entry loaded serves four rows."""
    m, d = ThetaT.shape
    if cnt == ROWS:
        x0, x1, x2, x3 = X[i0], X[i0 + 1], X[i0 + 2], X[i0 + 3]
        for j in range(m):
            t = ThetaT[j]
            c0 = c1 = c2 = c3 = 0.0
            for k in range(d):
                tk = t[k]
                c0 += x0[k] * tk
                c1 += x1[k] * tk
                c2 += x2[k] * tk
                c3 += x3[k] * tk
            u[0, j], u[1, j], u[2, j], u[3, j] = c0, c1, c2, c3
    else:
        for r in range(cnt):
            xr = X[i0 + r]
            for j in range(m):
                t = ThetaT[j]
                c = 0.0
                for k in range(d):
                    c += xr[k] * t[k]
                u[r, j] = c


def make_step_kernel(s0, s1):
    """The GD step, eqs. (1)-(3): returns the train loss (1/n) sum_i (y_i - f_i)^2 / 2 and writes
    gradT[j] = (1/n) sum_i psi_ij x_i.  ``ThetaT`` is Theta transposed (m x d, C-contiguous).

    One pass over X: the rows are cut into ``nblocks`` blocks (numba-parallel), each block into tiles of
    ROWS rows; a tile's pre-activations, its psi and its share of the gradient are computed while its
    rows are in cache.  Every sum has a fixed order given by (nblocks, ROWS), so the numbers do not
    depend on how many threads run the blocks."""

    @numba.njit(parallel=True, fastmath=True, cache=False)
    def step(X, y, ThetaT, a, b, gradT, nblocks):
        n, d = X.shape
        m = ThetaT.shape[0]
        partial = np.zeros((nblocks, m, d))
        losses = np.zeros(nblocks)
        rows = (n + nblocks - 1) // nblocks
        for blk in numba.prange(nblocks):
            acc = partial[blk]
            u = np.empty((ROWS, m))
            p = np.empty((ROWS, m))
            lo, hi = blk * rows, min(n, (blk + 1) * rows)
            for i0 in range(lo, hi, ROWS):
                cnt = min(ROWS, hi - i0)
                _tile_preactivations(X, i0, cnt, ThetaT, u)
                for r in range(cnt):                                   # eq. (3)
                    f = 0.0
                    for j in range(m):
                        f += a[j] * s0(u[r, j] + b[j])
                    res = y[i0 + r] - f / m
                    losses[blk] += 0.5 * res * res
                    for j in range(m):
                        p[r, j] = res * a[j] * s1(u[r, j] + b[j])
                if cnt == ROWS:                                        # eq. (2): sum_i psi_ij x_i
                    x0, x1, x2, x3 = X[i0], X[i0 + 1], X[i0 + 2], X[i0 + 3]
                    j = 0
                    while j + 1 < m:  # two neurons per pass: each x entry loaded serves both
                        g, h = acc[j], acc[j + 1]
                        p0, p1, p2, p3 = p[0, j], p[1, j], p[2, j], p[3, j]
                        q0, q1, q2, q3 = p[0, j + 1], p[1, j + 1], p[2, j + 1], p[3, j + 1]
                        for k in range(d):
                            e0, e1, e2, e3 = x0[k], x1[k], x2[k], x3[k]
                            g[k] += p0 * e0 + p1 * e1 + p2 * e2 + p3 * e3
                            h[k] += q0 * e0 + q1 * e1 + q2 * e2 + q3 * e3
                        j += 2
                    if j < m:
                        g = acc[j]
                        p0, p1, p2, p3 = p[0, j], p[1, j], p[2, j], p[3, j]
                        for k in range(d):
                            g[k] += p0 * x0[k] + p1 * x1[k] + p2 * x2[k] + p3 * x3[k]
                else:
                    for r in range(cnt):
                        xr = X[i0 + r]
                        for j in range(m):
                            g = acc[j]
                            pr = p[r, j]
                            for k in range(d):
                                g[k] += pr * xr[k]
        for j in range(m):
            for k in range(d):
                s = 0.0
                for blk in range(nblocks):
                    s += partial[blk, j, k]
                gradT[j, k] = s / n
        return losses.sum() / n

    return step


def make_eval_kernel(s0):
    """(mean y f, mean f^2) on a data set (ThetaT: m x d), numba-parallel over the same row blocks."""

    @numba.njit(parallel=True, fastmath=True, cache=False)
    def evaluate(X, y, ThetaT, a, b, nblocks):
        n, d = X.shape
        m = ThetaT.shape[0]
        yf = np.zeros(nblocks)
        ff = np.zeros(nblocks)
        rows = (n + nblocks - 1) // nblocks
        for blk in numba.prange(nblocks):
            u = np.empty((ROWS, m))
            lo, hi = blk * rows, min(n, (blk + 1) * rows)
            for i0 in range(lo, hi, ROWS):
                cnt = min(ROWS, hi - i0)
                _tile_preactivations(X, i0, cnt, ThetaT, u)
                for r in range(cnt):
                    f = 0.0
                    for j in range(m):
                        f += a[j] * s0(u[r, j] + b[j])
                    f /= m
                    yf[blk] += y[i0 + r] * f
                    ff[blk] += f * f
        return yf.sum() / n, ff.sum() / n

    return evaluate


_KERNELS: dict = {}
_EVAL: dict = {}


def _eval_kernel(act):
    key = str(act.expr)
    if key not in _EVAL:
        _EVAL[key] = make_eval_kernel(compiled_activation(act, False)[0])
    return _EVAL[key]


def step_kernel(act):
    key = str(act.expr)
    if key not in _KERNELS:
        _KERNELS[key] = make_step_kernel(*compiled_activation(act, False)[:2])
    return _KERNELS[key]


def _data(link, n, d, rng, dtype):
    X = rng.standard_normal((n, d)).astype(dtype)
    y = labels(link, X[:, : link.k].astype(float), rng).astype(dtype)
    return X, y


def run_gd(setup: GDSetup, *, progress=None, snapshots=()) -> GDResult:
    """Full-batch GD; records norms, train loss, test loss (fresh samples) and latent overlap per step.
    At the steps in ``snapshots`` the pre-activations X theta (n x m) of the training set are kept
    in ``result.snapshots`` (step -> array)."""
    setup.problem.validate(min_steps=0)
    if not (isinstance(setup.test_every, int) and setup.test_every >= 1):
        from thresholds.errors import ThresholdsError
        raise ThresholdsError(f"test_every must be a positive integer, got {setup.test_every!r}")
    act = get_activation(setup.activation)
    link = get_link(setup.link)
    released = isinstance(setup.release, int) and 0 < setup.release <= setup.steps
    if setup.release and not (setup.complement and released):
        from thresholds.errors import ThresholdsError
        raise ThresholdsError(f"release must be a step in 1..{setup.steps} of a run in the complement, "
                              f"got {setup.release!r}")
    rng = np.random.default_rng(setup.seed)
    d, m, k = setup.d, setup.m, link.k
    n = int(round(setup.delta * d))
    dtype = np.float32 if setup.dtype == "float32" else np.float64
    X, y = _data(link, n, d, rng, dtype)
    Xt, yt = _data(link, setup.n_test, d, rng, dtype)
    # complement: Theta keeps zero latent coordinates, so u = X Theta only sees the
    # covariates orthogonal to the latent subspace, which are independent of y
    Theta = (rng.standard_normal((d, m)) * setup.rho0 / math.sqrt(d)).astype(dtype)
    split = latent_split(link)
    easy, hard = split.easy.astype(dtype), split.hard.astype(dtype)
    if setup.planted:  # informed start: the hard components of theta_j set to ``planted`` (or its entry j)
        Theta[:k] += hard.T @ (np.asarray(setup.planted, dtype=dtype) - hard @ Theta[:k])
    if setup.complement:
        Theta[:k] = easy.T @ (easy @ Theta[:k])  # keep the easy components only
    Theta0 = Theta.copy()
    a = per_neuron(setup.a, m).astype(dtype)   # per-neuron second-layer weights and biases
    b = per_neuron(setup.b, m).astype(dtype)
    gradT = np.zeros((m, d), dtype=dtype)
    step = step_kernel(act)
    evaluate = _eval_kernel(act)
    Ey2 = y_moments(link)[1]
    nblocks = ROW_BLOCKS
    T = setup.steps
    norm2, ov0, train, test, lat, hard_ov = (np.zeros(T + 1) for _ in range(6))
    signal = np.zeros((T + 1, easy.shape[0], m))
    snap_steps, snaps = set(snapshots), {}
    start = time.time()
    for t in range(T + 1):
        ThetaT = np.ascontiguousarray(Theta.T)
        loss = step(X, y, ThetaT, a, b, gradT, nblocks)
        norm2[t] = float(np.vdot(Theta, Theta)) / m
        ov0[t] = float(np.vdot(Theta, Theta0)) / m
        lat[t] = float(np.vdot(Theta[:k], Theta[:k])) / m
        signal[t] = easy @ Theta[:k]
        hard_ov[t] = float(np.sum((hard @ Theta[:k]) ** 2)) / m
        train[t] = loss
        # population risk on the fresh test set, mean((y - f)^2)/2 = mean(y^2)/2 - mean(y f) + mean(f^2)/2,
        # with mean(y^2) replaced by the exact E[y^2]: a control variate (unbiased; it removes the
        # heavy-tailed fluctuation of y^2, e.g. Var(y^2) = 96 for y = g^2)
        if setup.test_loss and (t % setup.test_every == 0 or t == T):
            yf, ff = evaluate(Xt, yt, ThetaT, a, b, nblocks)
            test[t] = 0.5 * Ey2 - yf + 0.5 * ff
        else:
            test[t] = math.nan
        if not np.isfinite(loss) or norm2[t] > BLOWUP:
            raise FloatingPointError(f"GD diverged at step {t}")
        if progress is not None:
            progress(t)
        if t in snap_steps:
            snaps[t] = X @ Theta
        if t == T:
            break
        Theta += setup.eta * gradT.T - setup.eta * setup.weight_decay * Theta
        if setup.complement and not (setup.release and t >= setup.release):
            Theta[:k] = easy.T @ (easy @ Theta[:k])
        if setup.release and t + 1 == setup.release:   # Theta is now that of step t1: the hard directions released
            Theta[:k] += released_component(setup, hard).astype(dtype)
        if setup.sphere:
            Theta *= (setup.rho0 / np.sqrt(np.sum(Theta * Theta, axis=0))).astype(dtype)
    out = GDResult(setup, norm2, ov0, train, test, lat, time.time() - start, Theta, (X, y), hard_overlap=hard_ov,
                   signal=signal)
    out.snapshots = snaps
    return out


def released_component(setup: GDSetup, hard: np.ndarray) -> np.ndarray:
    """The hard component that ``release`` adds to Theta's latent rows at step t1 (k x m): rho0 / sqrt(d) times
    ``release_scale`` per hard direction (``hard``, r x k, orthonormal rows), from the stream [seed, t1]."""
    h = np.random.default_rng([setup.seed, setup.release]).standard_normal((hard.shape[0], setup.m))
    return hard.T @ h * (setup.release_scale * setup.rho0 / math.sqrt(setup.d))


def hessian_probe(X, y, theta, activation: str, *, a=1.0, b=0.0, k=1, count=2, dense_below=600, axes=None):
    """Extreme eigenvalues of the scaled Hessian H = m Hess R at Theta (d x m; a vector for m = 1)
    and the squared overlaps of their eigenvectors with the latent subspace (first k axes), or with
    the subspace spanned by the rows of ``axes`` (r x k, in the latent coordinates) when given:
    :func:`hessian_spectrum` at the pre-activations X Theta."""
    Theta = np.asarray(theta, dtype=float)
    Theta = Theta[:, None] if Theta.ndim == 1 else Theta
    return hessian_spectrum(X, y, X @ Theta, activation, a=a, b=b, k=k, count=count, dense_below=dense_below,
                            axes=axes)


def hessian_spectrum(X, y, U, activation: str, *, a=1.0, b=0.0, k=1, count=2, dense_below=600, axes=None):
    """:func:`hessian_probe` from the pre-activations U = X Theta (n x m, without the biases), as
    ``run_gd(..., snapshots=...)`` keeps them.

    THEORY.md section 2: H = (1/n) sum_i W_i (x) x_i x_i^T with
    W_jk = (a_j a_k / m) sigma'_j sigma'_k - 1[j=k] (y - f) a_j sigma''_j, f = (1/m) sum_j a_j sigma_j;
    for m = 1, W = G = a^2 sigma'^2 - (y - a sigma) a sigma''.  Lanczos (``eigsh``) on the
    matrix-free product (H V)_j = X^T sum_k W_jk * (X V_k) / n; when d m < ``dense_below`` the matrix itself,
    block (j, k) = X^T diag(W_jk) X / n, and ``eigh``.  ``a`` and ``b`` are scalars or length-m arrays.  Returns
    {"lowest": [(value, overlap2)...], "highest": [...]} with the overlap summed over the m blocks, and with the
    dense route also "negative", the number of negative eigenvalues.
    """
    from scipy.sparse.linalg import LinearOperator, eigsh

    X = np.asarray(X, dtype=float)
    n, d = X.shape
    m = U.shape[1]
    W = hessian_weights(y, U, activation, a=a, b=b)
    out = {}
    if d * m < dense_below:
        vals, vecs = np.linalg.eigh(dense_hessian(X, W))
        lo, hi = (vals[:count], vecs[:, :count]), (vals[::-1][:count], vecs[:, ::-1][:, :count])
        out["negative"] = int(np.sum(vals < 0))
    else:
        def matvec(v):
            V = v.reshape(d, m)
            P = X @ V                            # (n, m)
            return (X.T @ np.einsum("njk,nk->nj", W, P) / n).reshape(-1)

        op = LinearOperator((d * m, d * m), matvec=matvec, dtype=float)
        lo = eigsh(op, k=count, which="SA", tol=1e-8)
        hi = eigsh(op, k=count, which="LA", tol=1e-8)
        order_lo, order_hi = np.argsort(lo[0]), np.argsort(hi[0])[::-1]
        lo, hi = (lo[0][order_lo], lo[1][:, order_lo]), (hi[0][order_hi], hi[1][:, order_hi])
    P = np.eye(k) if axes is None else np.asarray(axes, dtype=float)
    for name, (vals, vecs) in (("lowest", lo), ("highest", hi)):
        out[name] = [(float(v), float(np.sum((P @ vecs[:, j].reshape(d, m)[:k]) ** 2))) for j, v in enumerate(vals)]
    return out


def hessian_weights(y, U, activation: str, *, a=1.0, b=0.0) -> np.ndarray:
    """The per-sample m x m weights W_i of :func:`hessian_spectrum` (n x m x m) at the pre-activations U = X Theta
    (n x m, without the biases)."""
    act = get_activation(activation)
    s0, s1, s2 = act.numpy(0), act.numpy(1), act.numpy(2)  # vectorized; sigma'' refused for relu-like
    m = U.shape[1]
    a = np.broadcast_to(np.asarray(a, dtype=float), (m,))
    b = np.broadcast_to(np.asarray(b, dtype=float), (m,))
    U = np.asarray(U, dtype=float) + b       # (n, m)
    d1, d2 = s1(U), s2(U)
    f = np.mean(a * s0(U), axis=1)
    W = np.einsum("j,k,nj,nk->njk", a, a, d1, d1) / m
    W[:, np.arange(m), np.arange(m)] -= (y - f)[:, None] * a * d2
    return W


def gd_direction(X, y, U, activation: str, *, a=1.0, b=0.0) -> np.ndarray:
    """G(Theta) = (1/n) sum_i psi_i x_i (d x m), the direction of the step, eqs. (2)-(3) without weight decay, at the
    pre-activations U = X Theta (n x m, without the biases): Theta <- Theta + eta G."""
    s0, s1 = (get_activation(activation).numpy(j) for j in (0, 1))
    m = U.shape[1]
    a = np.broadcast_to(np.asarray(a, dtype=float), (m,))
    U = np.asarray(U, dtype=float) + np.broadcast_to(np.asarray(b, dtype=float), (m,))
    r = y - np.mean(a * s0(U), axis=1)
    return np.asarray(X, dtype=float).T @ (r[:, None] * a * s1(U)) / len(y)


def dense_hessian(X, W) -> np.ndarray:
    """H = (1/n) sum_i W_i (x) x_i x_i^T as a (d m) x (d m) matrix, index (coordinate, neuron): a vector v of it is
    v.reshape(d, m) in Theta's layout."""
    n, d = X.shape
    m = W.shape[1]
    H = np.empty((d, m, d, m))
    for j in range(m):
        for l in range(j, m):
            H[:, j, :, l] = X.T @ (W[:, j, l, None] * X) / n
            H[:, l, :, j] = H[:, j, :, l].T
    return H.reshape(d * m, d * m)


def sample_matrix(link, pre, delta, d, rng):
    """Spectral-estimator probe: D = (1/n) X^T diag(T(y)) X with y = h(X Theta_*, eps),
    Theta_* the first k axes, n = delta d; ``pre`` a thresholds.spectral.Preprocessing
    (``optimal`` uses 1 - 1/E[g^2|y] interpolated on the engine's nodes)."""
    from thresholds.catalog import lambdify_numpy
    from thresholds.spectral import DELTA, YS, link_ynodes
    n = int(round(delta * d))
    X = rng.standard_normal((n, d))
    y = labels(link, X[:, : link.k], rng)
    if pre.expr is None:
        nodes = link_ynodes(link, level=6)
        T = 1.0 - 1.0 / np.interp(y, nodes.y, nodes.M[:, 0, 0])
    else:
        T = lambdify_numpy([YS, DELTA], pre.expr)(y, np.full_like(y, delta))
    return (X.T * T) @ X / n


def top_outliers(D, k, count):
    """Largest ``count`` eigenvalues of D and the squared overlaps of their eigenvectors
    with the first k axes (the latent subspace)."""
    from scipy.sparse.linalg import eigsh
    vals, vecs = eigsh(D, k=count, which="LA")
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    return vals, np.sum(vecs[:k, :] ** 2, axis=0)

"""Matrix-valued Marchenko-Pastur equation for width m (THEORY.md section 4).

H = (1/n) sum_i W_i (x) x_i x_i^T with W_i an m x m symmetric weight per sample,
x_i ~ N(0, I_d), n = delta d.  The m x m Stieltjes transform
alpha(z) = lim (block trace of (H - z)^{-1}) / d solves

    alpha = ( -z I + E[K] )^{-1},   K = W (I + alpha W / delta)^{-1},                     (1)

and the hard-direction outliers (r_H = 1, latent g_H) are the real z outside the
bulk where the m x m matrix

    S(z) = -z I + E[K g_H^2] = alpha^{-1} + E[K (g_H^2 - 1)]                             (2)

is singular.  With r_H hard directions (latent vector g_H in R^{r_H}) the spike
weight is the r_H x r_H matrix g_H g_H^T and S is (m r_H) x (m r_H):

    S(z) = -z I + E[K (x) g_H g_H^T] = alpha^{-1} (x) I + E[K (x) (g_H g_H^T - I)]        (3)

(the bulk is that of the directions orthogonal to the latent subspace, which do not
see g_H; the hard block of the resolvent couples each neuron block with each hard
direction).  For m = 1 these are the scalar equations of :mod:`thresholds.stieltjes`.

Below the bulk (z < left edge) alpha is positive definite and increasing in z, and
dS/dz = -I - E[K alpha' K g^2]/delta is negative definite, so a negative outlier
exists iff the lowest eigenvalue of S at z0 = min(0, left edge) is negative:
``negative_indicator`` returns minus that eigenvalue (> 0 iff there is one), as the
scalar indicator does                                                                 (4).

Solver: Newton on F(alpha) = alpha - (-z I + E[K])^{-1} with the exact Jacobian
dF[E] = E - alpha E[K E K] alpha / delta (from dK = -K (dalpha/delta) K), i.e. in
vec form J = I - (alpha (x) alpha) E[K (x) K] / delta (5); continuation in z from far
below the spectrum.  The left edge is the fold of this branch (J singular), found
by bisection on z between a z where Newton converges to a positive-definite alpha
and one where it does not (eq. (6) places the points).  The Newton iteration runs in one jitted call (``_newton``): the
moments, the m x m inverse, the (m^2) x (m^2) Jacobian (5) as the columns inv E_pq inv^T and the
step, by Gaussian elimination with partial pivoting (``_eliminate``, as K per sample).

Locating the fold.  A point past the fold costs the full Newton budget (no solution to converge to), a point
below it a few iterations, so the edge is approached from below: the smallest singular value s of the Jacobian (5)
vanishes at the fold, and through the last three solved points

    s^2 = c (z_e - z)^p                                                                                   (6)

(three unknowns c, p, z_e; a line in z through the last two when three are not usable) predicts the edge z_e.
Near the fold Newton converges slowly from the last solution (alpha moves like (z_e - z)^{1/2}, and the Jacobian is
nearly singular), so it starts from the line in (z_e - z)^{1/2} through the last two solutions,

    alpha_0(z) = alpha_2 + (alpha_1 - alpha_2) ((z_e - z)^{1/2} - (z_e - z_2)^{1/2}) / ((z_e - z_1)^{1/2} - (z_e - z_2)^{1/2}),   (6b)

and from the last solution when that start does not converge.
On an empirical law s^2 / (z_e - z) is not constant: it drifts over decades of z_e - z (p rises to 1 slowly,
0.8 at 1e-2 and 0.99 at 1e-5 on a DMFT law of 8000 paths, m = 2), so a line through two points overshoots the fold
and a bisection's points past it cost 40 iterations each.  The next point is placed a fraction f of the way to the
predicted edge, f = 1 - g: g starts at 1 - FOLD_FRACTION, is halved after a point below the fold (down to
1 - FOLD_FRACTION_MAX) and multiplied by 4 after one past it (up to 1/2); the middle of the bracket when there is no
prediction inside it (bracketing 0, at most half-way to 0 from below: a law whose H has a null space ends the
branch at a pole at 0, alpha ~ 1 / |z|, where Newton needs |z| to shrink at most 2x per point).  On DMFT laws of m = 2 (quad, eta 0.05, delta 8, steps 25, 200, 400; data sets of 8000 paths
and clipped laws of 32000) this takes 25-30 solves with 1-4 past the fold, against 29-40 solves with 11-16 past it
for the line-and-bisection rule it replaced: 2.1-3.6x less time.  The edges agree to 3e-9 and the indicators at them
to 7e-5 (indicator standard errors there: 0.02-0.1): points within about 1e-9 of the fold may not converge to the
step tolerance 1e-12 in 40 iterations (the Jacobian's smallest singular value is about 1e-4 there), so either rule
locates the fold to about that, and alpha moves like (z_e - z)^{1/2} below it.

Exchangeable neurons (``MatrixLaw.exchangeable``).  When the law of W is invariant under relabelling the neurons
(W -> Pi W Pi^T for every permutation Pi: one a and one b for every neuron, iid initial weights), so is the solution
of eq. (1), and the law is replaced by its average over the m! relabellings of every sample (the same expectation,
less Monte Carlo noise).  With P = 1 1^T / m (the neurons' common mode) and Q = I - P, every invariant symmetric
matrix is x_P P + x_Q Q, a product of two is the product of the coordinates, and the relabelling average of any M
is its orthogonal projection

    M -> (1^T M 1 / m) P + ((tr M - 1^T M 1 / m) / (m - 1)) Q.                                              (7)

So alpha = a_P P + a_Q Q, eq. (1) is two equations, a_X = 1 / (-z + k_X) with k_X the coordinates of the projected
E[K], and the Jacobian (5) restricted to span{P, Q} has the columns (E = P, Q) alpha proj(E[K E K]) alpha / delta,
where E[K P K] = E[(K 1)(K 1)^T] / m and E[K Q K] = E[K^2] - E[K P K] need, per sample, only 1^T K 1, tr K, |K 1|^2
and |K|_F^2.  These four need no m x m solve: with W = V diag(lam) V^T and b = V^T 1 (b2 = b^2, computed once per
law by ``spectral_data``), alpha W = a_Q W + c 1 (W 1)^T with c = (a_P - a_Q) / m, and Sherman-Morrison on the rank-one
term gives K = V (diag(E) - gam e e^T) V^T with

    E_i = lam_i / (1 + a_Q lam_i / delta),  e = E b,  s = sum_i E_i b2_i,  gam = (c / delta) / (1 + c s / delta),
    1^T K 1 = s - gam s^2,   tr K = sum_i E_i - gam |e|^2,   |K 1|^2 = (1 - gam s)^2 |e|^2,
    |K|_F^2 = sum_i E_i^2 - 2 gam sum_i E_i^3 b2_i + gam^2 |e|^4,   |e|^2 = sum_i E_i^2 b2_i,                 (7b)

O(m) per sample and Newton step (a sample with a denominator within POLE_MARGIN of 0 takes the direct solve, where
(7b) would cancel).  The physical-branch test (alpha^{-1} + W_i / delta > 0 for every sample) is the same rank-one
form, diag(1 / a_Q + lam / delta) + ((1 / a_P - 1 / a_Q) / m) b b^T.  Measured on DMFT laws (two replicas, every
fifth checkpoint, both cuts; validation/bench_hessian_m.py): against the m x m solve per sample (O(m^3), which
was 1.1-3.4x faster than the full engine at m = 2, 1.6-2.1x at m = 4, 1.9-2.7x at m = 8, validation.exchangeable_check)
the checkpoints take 10.5 s against 18.5 at m = 2, 20 against 64 at m = 4, 29 against 220 at m = 8 and 32 against 692
at m = 16 (one core, the other busy); edges agree to 1e-9, outliers to 1e-11, indicators to 8e-5 (the indicator is taken at the edge, where alpha
moves like (z_e - z)^{1/2}; the fold rule above had the same spread).  The fold (the edge) is seen in this 2 x 2 block: the map
L(E) = alpha E[K E K] alpha = E[(alpha K) E (alpha K)^T] is completely positive, so its spectral radius rho is an
eigenvalue with a positive semi-definite eigenvector, and the average of that eigenvector over the relabellings
(nonzero: a sum of PSD matrices) is an invariant one with the same eigenvalue; every eigenvalue of J = I - L / delta
has real part >= 1 - rho / delta, attained in span{P, Q}.  Hence                                           (8)

    the smallest eigenvalue of the full J = that of the 2 x 2 block, and the edge is the block's fold,

and the smallest singular value of eq. (6) is that of the block in the orthonormal basis (P, Q / sqrt(m - 1)).  The
outlier matrix (2)-(3) is P (x) S_P + Q (x) S_Q, S_X = I / a_X + E[k_X (g_H g_H^T - I)] (k_X per sample the
coordinates (7) of K): the common mode of the neurons and the (m - 1)-fold "antisymmetric" sector, whose m -> inf
limits are thresholds.meanfield's.  Tested against the full engine on laws holding every relabelling of each sample
(tests/test_stieltjes_m.py).  Per-neuron a_j or b_j break the invariance; the full engine applies there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
from scipy.optimize import brentq

from .errors import ConvergenceError, ThresholdsError
from .stieltjes import spike_weight


@numba.njit(cache=True)
def _solve_K(Ws, alpha, delta, Mt, K):
    """K = (I + W alpha/delta)^{-1} W for one sample, in place in K (Mt is scratch; ``_eliminate``); NaN when the
    matrix is singular."""
    m = Ws.shape[0]
    for i in range(m):
        for j in range(m):
            acc = 0.0
            for k in range(m):
                acc += Ws[i, k] * alpha[k, j]
            Mt[i, j] = (1.0 if i == j else 0.0) + acc / delta
            K[i, j] = Ws[i, j]
    if not _eliminate(Mt, K):
        K[:, :] = np.nan


@numba.njit(cache=True)
def _eliminate(M, X):
    """Solve M Y = X in place (Y in X, M overwritten) by Gaussian elimination with partial pivoting; False (X then
    partly eliminated) when a pivot is exactly 0, i.e. M singular, as LAPACK's getrf reports it."""
    k = M.shape[0]
    for c in range(k):  # forward elimination with partial pivoting on [M | X]
        p = c
        for r in range(c + 1, k):
            if abs(M[r, c]) > abs(M[p, c]):
                p = r
        if M[p, c] == 0.0:
            return False
        if p != c:
            for j in range(k):
                M[c, j], M[p, j] = M[p, j], M[c, j]
            for j in range(X.shape[1]):
                X[c, j], X[p, j] = X[p, j], X[c, j]
        piv = M[c, c]
        for r in range(c + 1, k):
            f = M[r, c] / piv
            if f != 0.0:
                for j in range(c, k):
                    M[r, j] -= f * M[c, j]
                for j in range(X.shape[1]):
                    X[r, j] -= f * X[c, j]
    for c in range(k - 1, -1, -1):
        for j in range(X.shape[1]):
            acc = X[c, j]
            for q in range(c + 1, k):
                acc -= M[c, q] * X[q, j]
            X[c, j] = acc / M[c, c]
    return True


@numba.njit(cache=True)
def _moments(W, w, Mh, alpha, delta, want_kk):
    """One pass over the samples: E[K], E[K (x) K] (rows (i,k), columns (j,l): K_ij K_kl; only
    when ``want_kk``) and E[K (x) M] ((i a, j b) entry E[K_ij M_ab]) for the r x r spike weights
    Mh (n, r, r) (r = 0: not computed), with K = (I + W alpha/delta)^{-1} W (``_solve_K``)."""
    n, m, _ = W.shape
    r = Mh.shape[1]
    EK = np.zeros((m, m))
    EKK = np.zeros((m * m, m * m))
    EKM = np.zeros((m * r, m * r))
    Mt = np.empty((m, m))
    K = np.empty((m, m))
    for s in range(n):
        _solve_K(W[s], alpha, delta, Mt, K)
        ws = w[s]
        for i in range(m):
            for j in range(m):
                kij = ws * K[i, j]
                EK[i, j] += kij
                for a in range(r):
                    for b in range(r):
                        EKM[i * r + a, j * r + b] += kij * Mh[s, a, b]
        if want_kk:
            for i in range(m):
                for k in range(m):
                    for j in range(m):
                        kij = ws * K[i, j]
                        for l in range(m):
                            EKK[i * m + k, j * m + l] += kij * K[k, l]
    return EK, EKK, EKM


@numba.njit(cache=True)
def _invariant(m, x_p, x_q):
    """The m x m matrix x_p P + x_q Q (eq. (7))."""
    out = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            out[i, j] = (x_q if i == j else 0.0) + (x_p - x_q) / m
    return out


POLE_MARGIN = 1e-4   # eq. (7b): a sample whose denominators come this close to 0 takes the direct solve


def spectral_data(W):
    """Eq. (7b): per sample the eigenvalues lam of W and the squared coordinates b2 of the all-ones vector in its
    eigenbasis, both (n, m)."""
    lam, V = np.linalg.eigh(W)
    return np.ascontiguousarray(lam), np.ascontiguousarray(V.sum(axis=1) ** 2)


@numba.njit(cache=True)
def _coordinates_K(Ws, lam, b2, a_p, a_q, delta, Mt, K):
    """Eq. (7b): (1^T K 1, tr K, |K 1|^2, |K|_F^2) of one sample at alpha = a_p P + a_q Q, in O(m) from its
    spectral data; the direct solve (``_solve_K``) when a denominator is within POLE_MARGIN of 0."""
    m = lam.shape[0]
    c = (a_p - a_q) / m
    s, e2, sum_e, sum_ee, e3 = 0.0, 0.0, 0.0, 0.0, 0.0
    near = False
    for i in range(m):
        den = 1.0 + a_q * lam[i] / delta
        if abs(den) < POLE_MARGIN:
            near = True
            break
        E = lam[i] / den
        s += E * b2[i]
        e2 += E * E * b2[i]
        e3 += E * E * E * b2[i]
        sum_e += E
        sum_ee += E * E
    den = 1.0 + c * s / delta if not near else 0.0
    if abs(den) < POLE_MARGIN:
        _solve_K(Ws, _invariant(m, a_p, a_q), delta, Mt, K)
        tot, tr, vv, ff = 0.0, 0.0, 0.0, 0.0
        for i in range(m):
            v = 0.0
            for j in range(m):
                v += K[i, j]
                ff += K[i, j] * K[i, j]
            tot += v
            tr += K[i, i]
            vv += v * v
        return tot, tr, vv, ff
    g = c / delta / den
    return s - g * s * s, sum_e - g * e2, (1.0 - g * s) ** 2 * e2, sum_ee - 2.0 * g * e3 + g * g * e2 * e2


@numba.njit(cache=True)
def _moments_x(W, lam, b2, w, Mh, a_p, a_q, delta, want_kk):
    """Eq. (7): one pass over the samples at alpha = a_p P + a_q Q giving the coordinates (k_P, k_Q) of the projected
    E[K], the 2 x 2 block C (column E = P, Q: the coordinates of proj(E[K E K]); only when ``want_kk``) and the
    r x r matrices E[k_X M] (X = P, Q) for the spike weights Mh (n, r, r) (r = 0: not computed); per sample the
    four numbers of eq. (7b) from the spectral data lam, b2 (``spectral_data``)."""
    n, m, _ = W.shape
    r = Mh.shape[1]
    k = np.zeros(2)
    C = np.zeros((2, 2))
    SP = np.zeros((r, r))
    SQ = np.zeros((r, r))
    Mt = np.empty((m, m))
    K = np.empty((m, m))
    for s in range(n):
        tot, tr, vv, ff = _coordinates_K(W[s], lam[s], b2[s], a_p, a_q, delta, Mt, K)
        ws = w[s]
        p = tot / m
        q = (tr - p) / (m - 1)
        k[0] += ws * p
        k[1] += ws * q
        for a in range(r):
            for b in range(r):
                SP[a, b] += ws * p * Mh[s, a, b]
                SQ[a, b] += ws * q * Mh[s, a, b]
        if want_kk:
            pp = tot * tot / (m * m)            # K P K = (K 1)(K 1)^T / m
            qp = (vv / m - pp) / (m - 1)
            C[0, 0] += ws * pp
            C[1, 0] += ws * qp
            C[0, 1] += ws * (vv / m - pp)       # K Q K = K^2 - K P K
            C[1, 1] += ws * ((ff - vv / m) / (m - 1) - qp)
    return k, C, SP, SQ


@numba.njit(cache=True)
def _newton_x(W, lam, b2, w, a_p, a_q, delta, z, tol, maxiter):
    """Newton on eq. (1) in the coordinates (a_P, a_Q) of eq. (7): (a_P, a_Q, J, True) at convergence, J the 2 x 2
    Jacobian in the orthonormal basis (P, Q / sqrt(m - 1)); (.., False) as ``_newton``."""
    m = W.shape[1]
    nospike = np.zeros((1, 0, 0))
    J = np.eye(2)
    norm = math.sqrt(m - 1.0)
    for _ in range(maxiter):
        k, C, _, _ = _moments_x(W, lam, b2, w, nospike, a_p, a_q, delta, True)
        phi_p, phi_q = k[0] - z, k[1] - z
        if phi_p == 0.0 or phi_q == 0.0:
            return a_p, a_q, J, False
        i_p, i_q = 1.0 / phi_p, 1.0 / phi_q
        f_p, f_q = a_p - i_p, a_q - i_q
        j00 = 1.0 - i_p * i_p * C[0, 0] / delta
        j01 = -i_p * i_p * C[0, 1] / delta
        j10 = -i_q * i_q * C[1, 0] / delta
        j11 = 1.0 - i_q * i_q * C[1, 1] / delta
        J[0, 0], J[0, 1], J[1, 0], J[1, 1] = j00, j01 / norm, j10 * norm, j11
        det = j00 * j11 - j01 * j10
        if det == 0.0:
            return a_p, a_q, J, False
        s_p = (j11 * f_p - j01 * f_q) / det
        s_q = (j00 * f_q - j10 * f_p) / det
        a_p -= s_p
        a_q -= s_q
        if not (np.isfinite(a_p) and np.isfinite(a_q)):
            return a_p, a_q, J, False
        if max(abs(s_p), abs(s_q)) <= tol * max(1.0, abs(a_p), abs(a_q)):
            return a_p, a_q, J, True
    return a_p, a_q, J, False


def _coordinates(alpha):
    """The coordinates (x_P, x_Q) of eq. (7) of an m x m matrix (its projection)."""
    m = alpha.shape[0]
    x_p = float(alpha.sum()) / m
    return x_p, (float(np.trace(alpha)) - x_p) / (m - 1)


@dataclass
class MatrixLaw:
    """Weighted samples of (W, spike weight): W shape (n, m, m) symmetric, w shape (n,), and
    h = g_H^2 shape (n,) for one hard direction or h = g_H g_H^T shape (n, r_H, r_H) for several."""

    W: np.ndarray
    h: np.ndarray
    w: np.ndarray
    exchangeable: bool = False   # eqs. (7)-(8): the law averaged over the relabellings of the neurons (m >= 2)

    def __post_init__(self):
        self.W = np.asarray(self.W, dtype=float)
        self.h = np.asarray(self.h, dtype=float)
        self.w = np.asarray(self.w, dtype=float)
        if self.W.ndim != 3 or self.W.shape[1] != self.W.shape[2]:
            raise ThresholdsError("W must have shape (n, m, m)")
        if self.h.shape[0] != self.W.shape[0] or self.h.ndim not in (1, 3) or (
                self.h.ndim == 3 and self.h.shape[1] != self.h.shape[2]):
            raise ThresholdsError("h must have shape (n,) or (n, r, r)")
        if not (np.all(np.isfinite(self.W)) and np.all(np.isfinite(self.h))):
            raise ThresholdsError("the weight law has non-finite samples")
        if not abs(self.w.sum() - 1) < 1e-6:
            raise ThresholdsError("weights of the matrix law must sum to 1")
        if self.exchangeable and self.W.shape[1] < 2:
            raise ThresholdsError("the exchangeable reduction (eq. (7)) needs m >= 2 neurons")

    @classmethod
    def from_samples(cls, W, g, exchangeable=False):
        """Equal weights; g = g_H of shape (n,) (one hard direction) or (n, r_H)."""
        W = np.asarray(W, dtype=float)
        return cls(W, spike_weight(g), np.full(W.shape[0], 1.0 / W.shape[0]), exchangeable)

    @property
    def m(self) -> int:
        return self.W.shape[1]

    @cached_property
    def spectral(self):
        """(lam, b2) of eq. (7b), computed once per law (``lower_bound`` takes lam; the exchangeable reduction both)."""
        return spectral_data(self.W)

    @property
    def r(self) -> int:
        """Number of hard directions r_H."""
        return 1 if self.h.ndim == 1 else self.h.shape[1]

    def lower_bound(self, delta):
        """A z below the whole spectrum: H >= lambda_min(W) (1/n) sum x x^T and the
        Marchenko-Pastur edges of (1/n) sum x x^T are (1 -+ 1/sqrt(delta))^2."""
        low = float(self.spectral[0][:, 0].min())
        scale = (1 + 1 / np.sqrt(delta)) ** 2
        return min(low * scale, 0.0) - 1.0 - abs(low)


def _sym(a):
    return 0.5 * (a + a.T)


def solve_alpha(law: MatrixLaw, delta: float, z: float, alpha0=None, *, tol=1e-12, maxiter=40):
    """alpha(z) for real z below the bulk by Newton from ``alpha0`` (default 1/|z| I).
    Returns (alpha, smallest singular value of the Jacobian) or None when Newton does
    not converge to a positive-definite solution (z is inside or past the bulk)."""
    m = law.m
    alpha = np.eye(m) / max(abs(z), 1e-3) if alpha0 is None else np.array(alpha0, dtype=float)
    if law.exchangeable:   # eq. (7): Newton on the two coordinates
        a_p, a_q, J, ok = _newton_x(law.W, *law.spectral, law.w, *_coordinates(alpha), float(delta), float(z), float(tol),
                                    int(maxiter))
        alpha = _invariant(m, a_p, a_q)
    else:
        alpha, J, ok = _newton(law.W, law.w, alpha, float(delta), float(z), float(tol), int(maxiter))
    return _physical(law, delta, alpha, J) if ok else None


@numba.njit(cache=True)
def _gauss_solve(A, B):
    """(X, True) with A X = B (A (k, k), B (k, c)), or (.., False) when A is singular (``_eliminate`` on copies)."""
    X = B.copy()
    return X, _eliminate(A.copy(), X)


@numba.njit(cache=True)
def _newton(W, w, alpha, delta, z, tol, maxiter):
    """Newton on eq. (1) with the Jacobian (5) from ``alpha``: (alpha, J, True) at convergence, (.., False)
    when phi = -z I + E[K] or J is singular, the iterate is not finite, or ``maxiter`` steps do not converge."""
    m = W.shape[1]
    mm = m * m
    eye = np.eye(m)
    nospike = np.zeros((1, 0, 0))  # r = 0: E[K (x) M] not wanted (Mh is indexed per sample only when r > 0)
    J = np.eye(mm)
    T = np.empty((m, m))
    for _ in range(maxiter):
        EK, EKK, _ = _moments(W, w, nospike, alpha, delta, True)
        inv, ok = _gauss_solve(-z * eye + EK, eye)
        if not ok:
            return alpha, J, False
        F = alpha - 0.5 * (inv + inv.T)
        # J = I - (inv (x) inv) E[K (x) K]/delta (inv = alpha at the solution): column (p, q) of the product is
        # inv E_pq inv^T, E_pq the m x m matrix of that column of E[K (x) K] (row-major (j, l) -> j m + l)
        for c in range(mm):
            for i in range(m):
                for l in range(m):
                    acc = 0.0
                    for j in range(m):
                        acc += inv[i, j] * EKK[j * m + l, c]
                    T[i, l] = acc
            for i in range(m):
                for k in range(m):
                    acc = 0.0
                    for l in range(m):
                        acc += T[i, l] * inv[k, l]
                    J[i * m + k, c] = (1.0 if i * m + k == c else 0.0) - acc / delta
        step, ok = _gauss_solve(J, F.reshape((mm, 1)))
        if not ok:
            return alpha, J, False
        new = alpha - step.reshape((m, m))
        size, big, finite = 0.0, 0.0, True
        for i in range(m):
            for j in range(m):
                alpha[i, j] = 0.5 * (new[i, j] + new[j, i])
                finite = finite and np.isfinite(alpha[i, j])
                size = max(size, abs(step[i * m + j, 0]))
                big = max(big, abs(alpha[i, j]))
        if not finite:
            return alpha, J, False
        if size <= tol * max(1.0, big):
            return alpha, J, True
    return alpha, J, False


@numba.njit(cache=True)
def _all_positive_definite(W, base, delta):
    """True when base + W_i / delta is positive definite for every sample i (a Cholesky factorization per sample,
    stopped at the first pivot <= 0)."""
    n, m, _ = W.shape
    L = np.empty((m, m))
    for s in range(n):
        for i in range(m):
            for j in range(i + 1):
                acc = base[i, j] + W[s, i, j] / delta
                for k in range(j):
                    acc -= L[i, k] * L[j, k]
                if i == j:
                    if acc <= 0.0:
                        return False
                    L[i, i] = np.sqrt(acc)
                else:
                    L[i, j] = acc / L[j, j]
    return True


@numba.njit(cache=True)
def _all_positive_definite_x(W, lam, b2, x_p, x_q, delta):
    """``_all_positive_definite`` at base = x_p P + x_q Q from the spectral data (eq. (7b)): in the eigenbasis of
    W_i the matrix is diag(x_q + lam / delta) + c b b^T, c = (x_p - x_q) / m, positive definite when the diagonal is
    and c >= 0 or 1 + c sum b2 / diag > 0; a diagonal with an entry <= 0 is not when c <= 0, and takes the Cholesky
    test otherwise."""
    n, m, _ = W.shape
    c = (x_p - x_q) / m
    base = _invariant(m, x_p, x_q)
    for s in range(n):
        acc, positive = 0.0, True
        for i in range(m):
            d = x_q + lam[s, i] / delta
            if d <= 0.0:
                positive = False
                break
            acc += b2[s, i] / d
        if positive:
            if c < 0.0 and 1.0 + c * acc <= 0.0:
                return False
        elif c <= 0.0 or not _all_positive_definite(W[s:s + 1], base, delta):
            return False
    return True


def _physical(law, delta, alpha, J):
    """(alpha, smallest singular value of J) when alpha is on the physical branch below the
    bulk: alpha positive definite, I + alpha^{1/2} W_i alpha^{1/2} / delta positive definite for
    every sample (no pole crossed) and J with eigenvalues of positive real part (the fold,
    i.e. the edge, is where one of them reaches 0); None otherwise."""
    vals, vecs = np.linalg.eigh(alpha)
    if vals[0] <= 0:
        return None
    # I + alpha^{1/2} W_i alpha^{1/2} / delta > 0  <=>  alpha^{-1} + W_i / delta > 0 (congruence by alpha^{-1/2})
    if law.exchangeable:
        a_p, a_q = _coordinates(alpha)
        ok = _all_positive_definite_x(law.W, *law.spectral, 1.0 / a_p, 1.0 / a_q, float(delta))
    else:
        ok = _all_positive_definite(law.W, (vecs / vals) @ vecs.T, float(delta))
    if not ok:
        return None
    if np.linalg.eigvals(J).real.min() <= 0:
        return None
    return alpha, float(np.linalg.svd(J, compute_uv=False)[-1])


@dataclass
class LeftEdge:
    z: float          # left edge of the bulk (midpoint of [z_below, z_inside])
    alpha: np.ndarray  # alpha(z_below)
    z_below: float    # the last z below the edge reached by the bisection (alpha known there)
    z_inside: float   # a z at which the branch no longer exists


FOLD_FRACTION = 0.9   # eq. (6): the next point this fraction of the way to the predicted edge ...
FOLD_FRACTION_MAX = 0.99   # ... moved toward this one after each point below the fold


def _fold_prediction(points, z_hi):
    """Eq. (6): the edge predicted from the solved points [(z, s^2)] (increasing z, decreasing s^2): the power law
    through the last three when it has a root between the last point and ``z_hi`` (the first z past the fold), else
    the line through the last two; None without two usable points."""
    (z2, s2), (z3, s3) = points[-2], points[-1]
    if not s2 > s3 > 0:
        return None
    line = z3 + s3 * (z3 - z2) / (s2 - s3)
    if len(points) < 3 or not points[-3][1] > s2:
        return line
    z1, s1 = points[-3]

    def mismatch(ze):   # p from the first pair minus p from the second, cross-multiplied
        return math.log(s1 / s2) * math.log((ze - z2) / (ze - z3)) - math.log(s2 / s3) * math.log((ze - z1) / (ze - z2))
    lo = z3 + 1e-9 * (z3 - z2)
    if not z3 < lo < z_hi:   # the last two points closer than rounding allows
        return line
    try:
        if mismatch(lo) * mismatch(z_hi) < 0:
            return brentq(mismatch, lo, z_hi, xtol=1e-14 * max(1.0, abs(z3)), rtol=1e-15)
    except (ValueError, ZeroDivisionError):
        pass
    return line


def left_edge(law: MatrixLaw, delta: float, *, rtol=1e-10) -> LeftEdge:
    """Left edge of the bulk: the fold of the branch alpha(z) continued from far below.

    Steps up from a z below the spectrum (growing steps) until the branch ends, then approaches the fold from below
    with the points of eq. (6); stops when the bracket [last z below, first z past] is below rtol (relative to the
    scale of z), or when the predicted distance to the fold is below rtol / 100 (the indicator is taken at the last z
    below, where alpha differs from its edge value by O(distance^{1/2}))."""
    z_lo = law.lower_bound(delta)
    sol = solve_alpha(law, delta, z_lo)
    if sol is None:
        raise ConvergenceError(f"matrix Stieltjes equation: no solution at z = {z_lo:.4g}, below the spectrum")
    alpha_lo, sv_lo = sol
    points = [(z_lo, sv_lo**2)]
    # step up until the branch ends
    step = max(1.0, abs(z_lo)) / 8
    z_hi = None
    for _ in range(200):
        z_try = z_lo + step
        sol = solve_alpha(law, delta, z_try, alpha_lo)
        if sol is None:
            z_hi = z_try
            break
        z_lo, (alpha_lo, sv_lo) = z_try, sol
        points.append((z_lo, sv_lo**2))
        step *= 1.5
    if z_hi is None:
        raise ConvergenceError("matrix Stieltjes equation: no left edge found")
    scale = max(1.0, abs(z_lo), abs(z_hi))
    z_edge, frac, alpha_prev = None, FOLD_FRACTION, None
    for _ in range(200):
        if z_hi - z_lo <= rtol * scale:
            break
        z_pred = _fold_prediction(points, z_hi) if len(points) >= 2 else None
        guess = alpha_lo
        if z_pred is not None and z_lo < z_pred < z_hi:
            if z_pred - z_lo <= 0.01 * rtol * scale:   # alpha then within ~(1e-2 rtol)^{1/2} of its edge value
                z_edge = z_pred
                break
            cand = z_lo + frac * (z_pred - z_lo)
            if alpha_prev is not None:   # eq. (6b): the start of Newton on the branch's square root
                r0, r1, r2 = (math.sqrt(z_pred - z) for z in (points[-2][0], z_lo, cand))
                guess = alpha_lo + (alpha_prev - alpha_lo) * (r2 - r1) / (r0 - r1)
        else:   # bisection; toward 0 at most halving |z|: a null space of H ends the branch at a pole there
            cand = 0.5 * (z_lo + z_hi) if z_lo >= 0 or z_hi <= 0 else min(0.5 * (z_lo + z_hi), 0.5 * z_lo)
        sol = solve_alpha(law, delta, cand, guess)
        if sol is None and guess is not alpha_lo:
            sol = solve_alpha(law, delta, cand, alpha_lo)
        if sol is None:
            z_hi = cand
            frac = max(0.5, 1 - 4 * (1 - frac))
        else:
            alpha_prev = alpha_lo
            z_lo, (alpha_lo, sv_lo) = cand, sol
            points.append((z_lo, sv_lo**2))
            frac = min(FOLD_FRACTION_MAX, 1 - (1 - frac) / 2)
    if z_edge is None:
        z_edge = 0.5 * (z_lo + z_hi)
    return LeftEdge(z_edge, alpha_lo, z_lo, z_hi)


def S_matrix(law: MatrixLaw, delta: float, alpha) -> np.ndarray:
    """S = alpha^{-1} + E[K (g_H^2 - 1)] (equal to -z I + E[K g_H^2] on the branch); with r_H > 1
    the (m r_H) x (m r_H) matrix alpha^{-1} (x) I + E[K (x) (g_H g_H^T - I)]."""
    Mh = law.h if law.h.ndim == 3 else law.h[:, None, None]
    eye = np.eye(law.r)
    if law.exchangeable:   # eq. (7): P (x) S_P + Q (x) S_Q
        a_p, a_q = _coordinates(alpha)
        k, _, SP, SQ = _moments_x(law.W, *law.spectral, law.w, Mh, a_p, a_q, float(delta), False)
        P = np.full((law.m, law.m), 1.0 / law.m)
        return _sym(np.kron(P, (1 / a_p - k[0]) * eye + SP) + np.kron(np.eye(law.m) - P, (1 / a_q - k[1]) * eye + SQ))
    EK, _, EKM = _moments(law.W, law.w, Mh, alpha, delta, False)
    return _sym(np.kron(np.linalg.inv(alpha), eye) + EKM - np.kron(EK, eye))


def _alpha_at_top(law, delta, edge):
    """(z0, alpha(z0)) at z0 = min(0, left edge) (the edge side: the last z reached below it).  An edge whose
    bisection bracket holds 0 (a law whose H has a null space, e.g. a linear activation) is taken at the bracket's
    lower end: 0 itself may lie a rounding error inside the bulk."""
    if edge.z_below < 0:
        return edge.z_below, edge.alpha
    sol = solve_alpha(law, delta, 0.0, edge.alpha)
    if sol is None:
        raise ConvergenceError("matrix Stieltjes equation: no solution at z = 0 below the bulk")
    return 0.0, sol[0]


def negative_indicator(law: MatrixLaw, delta: float, edge: LeftEdge | None = None):
    """(indicator, left edge z): indicator = -(lowest eigenvalue of S) at z0 = min(0, left edge),
    > 0 iff a negative hard outlier exists."""
    edge = edge or left_edge(law, delta)
    _, alpha = _alpha_at_top(law, delta, edge)
    return float(-np.linalg.eigvalsh(S_matrix(law, delta, alpha))[0]), edge.z


def _continue(law, delta, z_from, alpha_from, z, *, max_points=200):
    """alpha(z) by continuation up the branch from a solved point z_from < z: each point started from the last
    solution, the step halved after a point that does not converge (near the fold Newton started at the edge itself
    can land on the unstable branch, which ``solve_alpha`` rejects); None when the step falls below rounding."""
    step = z - z_from
    for _ in range(max_points):
        z_try = min(z, z_from + step)
        sol = solve_alpha(law, delta, z_try, alpha_from)
        if sol is None:
            step /= 2
            if step <= 1e-14 * max(1.0, abs(z)):
                return None
            continue
        if z_try == z:
            return sol
        z_from, alpha_from = z_try, sol[0]
    return None


def hard_outliers(law: MatrixLaw, delta: float, edge: LeftEdge | None = None, *, xtol=1e-11, lowest_only=False):
    """All hard outliers below min(0, left edge): [(z, overlap^2)] in increasing z, one per
    eigenvalue of S that is negative at the top of the branch (each eigenvalue of S decreases
    in z, so each has at most one root below it; Brent in z, alpha warm-started from the
    nearest solved z).  overlap^2 = -1/(v^T dS/dz v) along the null vector v of S(z)
    (central difference in z).  Exchangeable neurons give near-degenerate groups.
    ``lowest_only``: the lowest outlier only."""
    from scipy import optimize
    edge = edge or left_edge(law, delta)
    z_top, alpha_top = _alpha_at_top(law, delta, edge)
    known = {z_top: alpha_top}

    def alpha_at(z):
        if z in known:
            return known[z]
        near = min(known, key=lambda k: abs(k - z))
        sol = solve_alpha(law, delta, z, known[near]) or solve_alpha(law, delta, z)
        if sol is None:   # e.g. a start at the fold, whose Newton step lands on the unstable branch: continue from below
            below = [k for k in known if k < z]
            sol = _continue(law, delta, max(below), known[max(below)], z) if below else None
        if sol is None:
            raise ConvergenceError(f"matrix Stieltjes equation: no solution at z = {z:.6g}")
        known[z] = sol[0]
        return sol[0]

    def eig(z, i):
        return float(np.linalg.eigvalsh(S_matrix(law, delta, alpha_at(z)))[i])

    top = np.linalg.eigvalsh(S_matrix(law, delta, alpha_top))
    z_far = law.lower_bound(delta)
    far = solve_alpha(law, delta, z_far)
    if far is not None:   # a start below every z of the search (``alpha_at``)
        known[z_far] = far[0]
    out = []
    for i in np.flatnonzero(top < 0)[: 1 if lowest_only else None]:
        zs = optimize.brentq(eig, z_far, z_top, args=(int(i),), xtol=xtol, rtol=1e-13)
        v = np.linalg.eigh(S_matrix(law, delta, alpha_at(zs)))[1][:, i]
        h = 1e-5 * max(1.0, abs(zs))
        hi = min(zs + h, z_top)
        dS = (S_matrix(law, delta, alpha_at(hi)) - S_matrix(law, delta, alpha_at(zs - h))) / (hi - zs + h)
        out.append((float(zs), float(-1.0 / (v @ dS @ v))))
    return sorted(out)


def lowest_outlier(law: MatrixLaw, delta: float, edge: LeftEdge | None = None, *, xtol=1e-11):
    """(z*, overlap^2) of the lowest hard outlier below min(0, left edge) ((nan, nan) when there
    is none): the root of the lowest eigenvalue of S (``hard_outliers``)."""
    edge = edge or left_edge(law, delta)
    z_top, alpha_top = _alpha_at_top(law, delta, edge)
    if np.linalg.eigvalsh(S_matrix(law, delta, alpha_top))[0] >= 0:
        return float("nan"), float("nan")
    return hard_outliers(law, delta, edge, xtol=xtol, lowest_only=True)[0]


def block_diagonal_law(law: MatrixLaw):
    """The block-diagonal approximation: keep only the diagonal of every W_i, so that the m
    blocks decouple into scalar equations; with exchangeable neurons they share one law, the
    pooled diagonal entries (a scalar :class:`thresholds.stieltjes.WeightLaw` whose edges and
    outliers are those of the approximation).  The discarded off-diagonal part of W is
    (a^2/m) sigma'_j sigma'_k: entries O(1/m), but a rank-one matrix of operator norm O(1)."""
    from .stieltjes import WeightLaw
    return WeightLaw.pooled(np.einsum("nii->ni", law.W), law.w, law.h,
                            description="block-diagonal approximation (pooled diagonal of W)")

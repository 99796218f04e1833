"""The Hessian's hard outliers in the wide limit m -> inf (after d -> inf), THEORY.md sections 2 and 4.

Setting.  Width m, the 1/m network and the scaled Hessian H = m Hess R = (1/n) sum_i W_i (x) x_i x_i^T
of THEORY.md section 2, with one a and one b for every neuron, so that the first-phase law of the
neurons is exchangeable.  Per sample the m x m weight splits as

    W = diag(D) + (1/m) v v^T,   D_j = -(y - f) a sigma''(u_j + b),   v_j = a sigma'(u_j + b),   (1)

with f = (a/m) sum_j sigma(u_j + b).  Write <.> for the average over the neurons of one sample.

Two sectors.  Exchangeability makes E[K], the Stieltjes transform alpha and the outlier matrix
S = alpha^{-1} (x) I + E[K (x) (g_H g_H^T - I)] (thresholds.stieltjes_m) invariant under permuting
the neurons, so alpha = alpha_1 I + (alpha_2/m) 1 1^T and S splits into the symmetric mix (every
neuron moves by the same hard vector, eigenvector 1 (x) e) and the m - 1 mixes orthogonal to it
(the "antisymmetric" sector).  As m -> inf:

* Bulk.  H = H_D + (1/(n m)) sum_i (v_i (x) x_i)(v_i (x) x_i)^T: the first part is block-diagonal,
  one generalized Marchenko-Pastur matrix per neuron with weights D_j (one law for every neuron,
  the pooled law of D), the second is positive semi-definite of rank n << m d.  So the left edge
  of the bulk is that of the scalar equation with G = D, and alpha_1 solves it:
  alpha_1 = 1 / (-z + E[k_0]),  k_0 = D / (1 + alpha_1 D / delta).                        (2)
* Antisymmetric sector.  The off-diagonal entries of K are O(1/m), the diagonal ones k_0 + O(1/m):
  S_A = I / alpha_1 + E[k_0 (g_H g_H^T - I)]  (3), the scalar engine (thresholds.outlier) on the pooled
  law of D.  It is the limit of the block-diagonal approximation (thresholds.stieltjes_m).
* Symmetric sector.  kappa_s = (1/m) 1^T K 1 stays O(1) and keeps the rank-one part of W:
  alpha_s = alpha_1 + alpha_2 = 1 / (-z + E[kappa_s]),  S_S = I / alpha_s + E[kappa_s (g_H g_H^T - I)].  (4)
  With Lambda = I + alpha_1 diag(D) / delta, K = (I + W alpha / delta)^{-1} W and
  W alpha = alpha_1 diag(D) + (1/m) Y Z^T,  Y = [v, D],  Z = [alpha_1 v + alpha_2 <v> 1, alpha_2 1],
  the Woodbury identity gives, exactly at any m (``kappa_sym``),

      kappa_s = <q/lambda> - <y^T/lambda> (delta I_2 + <z y^T/lambda>)^{-1} <z q/lambda>,     (5)
      q = W 1 = D + <v> v,

  (y_j, z_j the rows of Y, Z; lambda_j = 1 + alpha_1 D_j / delta).

A negative hard outlier exists iff the lowest eigenvalue of S_A or of S_S at z0 = min(0, left edge)
is negative (each decreases in z on the branch, as in the scalar case); the indicator of each
sector is minus that eigenvalue.

The law.  The formulas need, per sample, the population of neurons (u_j) and the output f; a
first-phase law of finite width M (thresholds.laws; by default the finite-d GD law of the validation
layer: GD restricted to the complement of the hard subspace, M neurons) stands in for the population, and every average <.> is over
its M neurons.  The m -> inf limit of that law is not taken: results say which M they used, and
the dependence on M is measured (validation/reports/width/meanfield.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import optimize

from .errors import ConvergenceError, DivergenceError, ThresholdsError
from .outlier import S_matrix as scalar_S, alpha_at_level
from .stieltjes import WeightLaw, bulk_edges, spike_weight, z_of_alpha


def population_weights(act, a: float, b: float, U, y):
    """(D, v), each (n, M): D_j = -(y - f) a sigma''(u_j + b) and v_j = a sigma'(u_j + b) with
    f = (a/M) sum_j sigma(u_j + b) (THEORY.md section 2, W = diag(D) + v v^T / M)."""
    s0, s1, s2 = act.numpy(0), act.numpy(1), act.numpy(2)
    Z = np.asarray(U, dtype=float) + b
    r = np.asarray(y, dtype=float) - a * s0(Z).mean(axis=1)
    return -(r[:, None] * a) * s2(Z), a * s1(Z)


@dataclass
class PopulationLaw:
    """Per sample: the neurons' D and v (n, M), the spike weight h (n, r, r) and the weight w (n,)."""

    D: np.ndarray
    v: np.ndarray
    h: np.ndarray
    w: np.ndarray

    def __post_init__(self):
        self.D = np.asarray(self.D, dtype=float)
        self.v = np.asarray(self.v, dtype=float)
        self.w = np.asarray(self.w, dtype=float)
        h = np.asarray(self.h, dtype=float)
        self.h = h[:, None, None] if h.ndim == 1 else h
        n = self.w.size
        if self.D.shape != self.v.shape or self.D.ndim != 2 or self.D.shape[0] != n or self.h.shape[0] != n:
            raise ThresholdsError("population law: D, v must be (n, M), h (n,) or (n, r, r), w (n,)")
        if self.D.shape[1] < 2:
            raise ThresholdsError("population law: the m -> inf sectors need at least 2 neurons per sample")
        if not all(np.all(np.isfinite(x)) for x in (self.D, self.v, self.h)):
            raise DivergenceError("population law has non-finite samples (the first phase diverged?)")
        if not abs(self.w.sum() - 1) < 1e-6:
            raise ThresholdsError("weights of the population law must sum to 1")

    @classmethod
    def from_samples(cls, act, a, b, U, y, g, w=None):
        D, v = population_weights(act, a, b, U, y)
        w = np.full(D.shape[0], 1.0 / D.shape[0]) if w is None else w
        return cls(D, v, spike_weight(g), w)

    @property
    def M(self) -> int:
        return self.D.shape[1]

    @property
    def r(self) -> int:
        return self.h.shape[1]

    @cached_property
    def pooled(self) -> WeightLaw:
        """The law of D pooled over neurons: the scalar law of the bulk and of the antisymmetric sector."""
        return WeightLaw.pooled(self.D, self.w, self.h,
                                description=f"m -> inf: D = -(y - f) a sigma'' pooled over {self.M} neurons")


def kappa_sym(D, v, alpha1: float, alpha2: float, delta: float):
    """kappa_s = (1/M) 1^T K 1 per sample, K = (I + W alpha/delta)^{-1} W with W = diag(D) + v v^T/M and
    alpha = alpha1 I + (alpha2/M) 1 1^T (Woodbury with the rank-2 term of W alpha; eq. (5)).
    Exact at any M."""
    D = np.asarray(D, dtype=float)
    v = np.asarray(v, dtype=float)
    inv = 1.0 / (1.0 + alpha1 * D / delta)                         # 1/lambda_j
    vbar = v.mean(axis=1, keepdims=True)
    q = D + vbar * v
    Y = (v, D)
    Z = (alpha1 * v + alpha2 * vbar, np.full_like(v, alpha2))
    # A = delta I + <z y^T / lambda> (per sample 2 x 2), row = <y^T / lambda>, col = <z q / lambda>
    A = np.empty(D.shape[:1] + (2, 2))
    for i in range(2):
        for j in range(2):
            A[:, i, j] = (Z[i] * Y[j] * inv).mean(axis=1) + (delta if i == j else 0.0)
    row = np.stack([(Y[j] * inv).mean(axis=1) for j in range(2)], axis=1)
    col = np.stack([(Z[i] * q * inv).mean(axis=1) for i in range(2)], axis=1)
    corr = np.einsum("ni,ni->n", row, np.linalg.solve(A, col[:, :, None])[:, :, 0])
    return (q * inv).mean(axis=1) - corr


def _sym_moments(law: PopulationLaw, delta, alpha1, alpha_s):
    """(E[kappa_s], E[kappa_s (h - I)]) at (alpha_1, alpha_s)."""
    k = kappa_sym(law.D, law.v, alpha1, alpha_s - alpha1, delta)
    wk = law.w * k
    return float(wk.sum()), np.einsum("n,nij->ij", wk, law.h) - wk.sum() * np.eye(law.r)


def alpha_sym(law: PopulationLaw, delta: float, alpha1: float, *, rtol=1e-13) -> float:
    """alpha_s at z = z(alpha_1) on the branch below the bulk: the smallest positive root of
    1/alpha_s + z - E[kappa_s(alpha_1, alpha_s - alpha_1)] (the root continued from alpha_s ~ 1/|z| as
    z -> -inf; scanned upward from alpha_1/1000 in steps of 1.25, then Brent)."""
    z = z_of_alpha(law.pooled, delta, alpha1)
    f = lambda s: 1.0 / s + z - _sym_moments(law, delta, alpha1, s)[0]  # noqa: E731
    lo = alpha1 * 1e-3
    f_lo = f(lo)
    if not f_lo > 0:
        raise ConvergenceError(f"m -> inf symmetric sector: no branch at z = {z:.6g} (the equation is negative "
                               f"at alpha_s = {lo:.3g})")
    for _ in range(120):
        hi = lo * 1.25
        f_hi = f(hi)
        if not np.isfinite(f_hi):
            break
        if f_hi <= 0:
            return float(optimize.brentq(f, lo, hi, xtol=1e-300, rtol=rtol, maxiter=500))
        lo = hi
    raise ConvergenceError(f"m -> inf symmetric sector: alpha_s not found at z = {z:.6g} (no sign change up to "
                           f"alpha_s = {lo:.3g})")


@dataclass
class SectorResult:
    """Indicators (> 0 iff a negative hard outlier) of the two sectors at z0 = min(0, left edge), the
    left edge (of the pooled-D law), alpha_1 and alpha_s there, and the number M of neurons per sample."""

    antisymmetric: float
    symmetric: float
    left_edge: float
    z0: float
    alpha1: float
    alpha_s: float
    M: int

    @property
    def indicator(self) -> float:
        return max(self.antisymmetric, self.symmetric)


def sector_matrices(law: PopulationLaw, delta: float, alpha1: float):
    """(S_A, S_S, alpha_s) of eqs. (3)-(4) at alpha_1 on the left branch of the pooled-D law."""
    S_A = scalar_S(law.pooled, delta, alpha1)
    a_s = alpha_sym(law, delta, alpha1)
    S_S = np.eye(law.r) / a_s + _sym_moments(law, delta, alpha1, a_s)[1]
    return S_A, S_S, a_s


def sectors(law: PopulationLaw, delta: float) -> SectorResult:
    """Both sectors' indicators at z0 = min(0, left edge)."""
    pooled = law.pooled
    edges = bulk_edges(pooled, delta)
    left = edges[0].z
    alpha1 = alpha_at_level(pooled, delta, 0.0, edges)
    if alpha1 is None:  # D >= 0: H is positive semi-definite, no negative outlier in either sector
        return SectorResult(-1.0, -1.0, left, math.nan, math.nan, math.nan, law.M)
    S_A, S_S, a_s = sector_matrices(law, delta, alpha1)
    return SectorResult(float(-np.linalg.eigvalsh(S_A)[0]), float(-np.linalg.eigvalsh(S_S)[0]), left,
                        float(min(0.0, left)), float(alpha1), a_s, law.M)


def lowest_outlier(law: PopulationLaw, delta: float, sector: str, res: SectorResult | None = None) -> float:
    """z* of the lowest negative hard outlier of ``sector`` ("antisymmetric" or "symmetric"; nan when none):
    the root in alpha_1 of the sector's lowest eigenvalue of S, which falls from +inf at alpha_1 -> 0+ (z -> -inf)
    to minus the indicator at the top of the branch (Brent).  The overlap^2 is not computed at m = inf."""
    res = res or sectors(law, delta)
    if not getattr(res, sector) > 0:
        return math.nan
    if sector == "antisymmetric":
        low = lambda a1: float(np.linalg.eigvalsh(scalar_S(law.pooled, delta, a1))[0])  # noqa: E731
    else:
        low = lambda a1: float(np.linalg.eigvalsh(sector_matrices(law, delta, a1)[1])[0])  # noqa: E731
    a1 = optimize.brentq(low, res.alpha1 * 1e-6, res.alpha1, xtol=1e-300, rtol=1e-11, maxiter=300)
    return float(z_of_alpha(law.pooled, delta, a1))

"""Outliers of the spiked matrix D = (1/n) sum_i G_i x_i x_i^T along the latent
directions, their eigenvector overlaps, and the thresholds at which they
appear (THEORY.md section 4, m = 1; Lu & Li 2017, Mondelli & Montanari 2018).

On a real branch outside the bulk, with alpha the Stieltjes value,

    S(alpha) = I/alpha + E[ delta G (M - I) / (delta + G alpha) ]      (r x r),        (1)

an outlier is a z = z(alpha) at which an eigenvalue mu of S(alpha) vanishes.
Its eigenvector's squared overlap with the latent subspace is

    -1 / (w^T dS/dz w)   (w the null vector of S),                                     (2)
    dS/dz = -I - alpha'(z) E[delta G^2 M/(delta + G alpha)^2],  alpha'(z) = alpha^2 / (1 - alpha^2 E2);

for r = 1 this is ``1 / (1 + alpha' E[delta G^2 g^2/(delta+G alpha)^2])``.  S decreases to the left of
the bulk, so a negative outlier exists iff the lowest eigenvalue of (1) at min(0, left edge) is < 0  (3).

Roots are located on a grid of the branch in alpha (not in z: near a
threshold the outlier merges with the edge, where z'(alpha) = 0), then
refined by Brent's method; with an mpmath law (r = 1) they are polished by
Newton's method at the caller's precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mpmath
import numpy as np
from scipy import optimize

from .errors import DivergenceError, ThresholdsError
from .stieltjes import Edge, WeightLaw, bulk_edges, z_of_alpha

_GRID = 1.0 / (1.0 + np.exp(-np.linspace(-34.0, 34.0, 681)))  # (0, 1), dense at both ends


@dataclass
class Outlier:
    """An isolated eigenvalue ``z`` with Stieltjes value ``alpha``, squared
    overlap ``overlap2`` of its eigenvector with the latent subspace, the
    direction in the latent subspace it aligns with, and the side of the bulk."""

    z: float
    alpha: float
    overlap2: float
    direction: list
    side: str
    z_mp: object = None
    overlap2_mp: object = None

    def to_json(self):
        out = {"z": self.z, "overlap2": self.overlap2, "alpha": self.alpha, "side": self.side,
               "direction": self.direction}
        if self.z_mp is not None:
            out["z_mp"] = mpmath.nstr(self.z_mp, mpmath.mp.dps + 20)
            out["overlap2_mp"] = mpmath.nstr(self.overlap2_mp, mpmath.mp.dps + 20)
        return out


@dataclass
class Spectrum:
    """Bulk edges and outliers of D at one delta."""

    delta: float
    left: Edge
    right: Edge
    outliers: list = field(default_factory=list)

    def to_json(self):
        return {"delta": self.delta, "bulk_edges": [self.left.z, self.right.z],
                "edge_kinds": [self.left.kind, self.right.kind],
                "outliers": [o.to_json() for o in self.outliers]}


def S_matrix(law: WeightLaw, delta: float, alpha: float) -> np.ndarray:
    """Eq. (1): S(alpha) = I/alpha + E[delta G (M - I)/(delta + G alpha)]."""
    _, _, S1, _ = law.moments(alpha, delta)
    return np.eye(law.r) / alpha + S1


def _eig(law, delta, alpha):
    return np.linalg.eigh(S_matrix(law, delta, alpha))


def _branch_alphas(edge: Edge, side: str):
    """Grid of alpha strictly between the edge and 0."""
    return edge.alpha * (1.0 - _GRID)


def _overlap(law, delta, alpha, vec):
    """Eq. (2): squared overlap of the outlier's eigenvector (null vector ``vec`` of S) with the latent space."""
    _, E2, _, S2 = law.moments(alpha, delta)
    dalpha = alpha**2 / (1.0 - alpha**2 * E2)
    return 1.0 / (1.0 + dalpha * float(vec @ S2 @ vec))


def _polish_mp(law, delta, alpha, dps):
    """Newton polish of S(alpha) = 0 (r = 1) and the overlap, at ``dps`` digits
    (returned as mpf; the quadrature nodes limit their accuracy, not the float root)."""
    with mpmath.workdps(dps):
        d = mpmath.mpf(delta)

        def S(a):
            return 1 / a + law.moments_mp(a, d)[2]

        a = mpmath.findroot(S, mpmath.mpf(alpha), tol=mpmath.mpf(10) ** (-2 * dps + 10))
        E1, E2, _, S2 = law.moments_mp(a, d)
        z = -1 / a + E1
        dalpha = a**2 / (1 - a**2 * E2)
        return z, 1 / (1 + dalpha * S2)


def spectrum(law: WeightLaw, delta: float, *, dps: int | None = None) -> Spectrum:
    """Bulk edges and every outlier (both sides) at ``delta``.

    ``dps``: when given and the law has mpmath nodes, each outlier is
    polished at that precision (``z_mp``, ``overlap2_mp``).
    """
    if not delta > 0:
        raise ThresholdsError(f"delta must be > 0, got {delta}")
    left, right = bulk_edges(law, delta)
    found = []
    for side, edge in (("left", left), ("right", right)):
        if edge.kind not in ("root", "pole"):
            # "none": no edge (G unbounded on that side); "zero"/"atom-gap": rank-deficient D,
            # whose gap between the atom at 0 and the bulk is not searched for outliers
            continue
        alphas = _branch_alphas(edge, side)
        vals = np.array([np.linalg.eigvalsh(S_matrix(law, delta, a)) for a in alphas])
        for j in range(law.r):
            mu = vals[:, j]
            for i in np.nonzero(np.sign(mu[1:]) * np.sign(mu[:-1]) < 0)[0]:
                a_lo, a_hi = alphas[i], alphas[i + 1]
                root = optimize.brentq(lambda a: np.linalg.eigvalsh(S_matrix(law, delta, a))[j],
                                       a_lo, a_hi, xtol=1e-300, rtol=1e-15, maxiter=500)
                w, v = _eig(law, delta, root)
                vec = v[:, np.argmin(np.abs(w))]
                out = Outlier(z_of_alpha(law, delta, root), root, _overlap(law, delta, root, vec),
                              [float(x) for x in vec * np.sign(vec[np.argmax(np.abs(vec))])], side)
                if dps is not None and law.mp_nodes is not None and law.r == 1:
                    out.z_mp, out.overlap2_mp = _polish_mp(law, delta, root, dps)
                found.append(out)
    found.sort(key=lambda o: o.z)
    return Spectrum(delta, left, right, found)


def _right_indicator(law, delta):
    """> 0 iff an outlier sits above the right edge: top eigenvalue of S at the edge."""
    edge = bulk_edges(law, delta)[1]
    if edge.kind not in ("root", "pole") or not math.isfinite(edge.z):
        return -1.0
    return float(np.linalg.eigvalsh(S_matrix(law, delta, edge.alpha))[-1])


def alpha_at_level(law, delta, level, edges=None):
    """alpha on the left branch at z = min(level, left edge) (None when D is positive
    semi-definite and level <= 0, or when there is no finite left edge).  ``edges``: the
    (left, right) bulk edges when the caller already has them."""
    if law.G_inf >= 0 and level <= 0:  # D is positive semi-definite
        return None
    left, _ = edges if edges is not None else bulk_edges(law, delta)
    if left.kind not in ("root", "pole"):
        return None
    if left.z < level:
        return left.alpha
    # z increases from -inf at 0+ to the edge along the branch
    return optimize.brentq(lambda a: z_of_alpha(law, delta, a) - level, left.alpha * 1e-14, left.alpha,
                           xtol=1e-300, rtol=1e-15, maxiter=500)


def negative_indicator(law, delta, level: float = 0.0, edges=None):
    """Eq. (3): > 0 iff an outlier sits below min(level, left edge): -(lowest eigenvalue of S there).
    ``level`` = 0 asks for a negative outlier; another level serves a shifted matrix
    (e.g. the Riemannian Hessian on a sphere, H - mu I, with level = mu)."""
    alpha = alpha_at_level(law, delta, level, edges)
    if alpha is None:
        return -1.0
    return float(-np.linalg.eigvalsh(S_matrix(law, delta, alpha))[0])


def lowest_outlier(law, delta, level: float = 0.0, edges=None):
    """(z*, indicator): the lowest outlier below min(level, left edge) (nan when there is none)
    and the indicator of ``negative_indicator``.  The lowest eigenvalue of S increases from
    +inf (alpha -> 0+, z -> -inf) along the left branch, so z* is its single root there
    (Brent in alpha): a few dozen evaluations of S instead of the grid of ``spectrum``."""
    top = alpha_at_level(law, delta, level, edges)
    if top is None:
        return math.nan, -1.0
    low = lambda a: float(np.linalg.eigvalsh(S_matrix(law, delta, a))[0])  # noqa: E731
    ind = -low(top)
    if not ind > 0:
        return math.nan, ind
    alpha = optimize.brentq(low, top * 1e-14, top, xtol=1e-300, rtol=1e-13, maxiter=500)
    return float(z_of_alpha(law, delta, alpha)), ind


@dataclass
class ThresholdResult:
    """Smallest delta at which the requested outlier exists.

    ``value`` is a float, ``math.inf`` (none up to ``search_max``) or
    ``search_min`` with ``below_range`` (already present there); ``error``
    is the bracketing tolerance plus the quadrature-level change when known.
    """

    value: float
    error: float
    kind: str
    search_min: float
    search_max: float
    below_range: bool = False
    evaluations: int = 0
    undefined: list = field(default_factory=list)

    def to_json(self):
        value = "inf" if math.isinf(self.value) else self.value
        out = {"delta_T": value, "error": self.error, "kind": self.kind, "search_min": self.search_min,
               "search_max": self.search_max, "below_range": self.below_range}
        if self.undefined:
            out["law_undefined_between"] = [min(self.undefined), max(self.undefined)]
        return out


def spike_threshold(law_at, *, kind: str = "right", search_min: float = 1e-2, search_max: float = 1e3,
                    rtol: float = 1e-12) -> ThresholdResult:
    """delta_T: smallest delta with an outlier above the bulk (``kind="right"``)
    or a negative outlier below it (``kind="negative"``).

    ``law_at(delta)`` returns the :class:`WeightLaw` at ``delta`` (the
    preprocessing may depend on delta).  The indicator (the top eigenvalue of
    S at the edge, which vanishes exactly when the outlier merges with the
    edge) is scanned on a logarithmic grid and its first sign change refined
    by Brent's method.
    """
    if kind not in ("right", "negative"):
        raise ThresholdsError("kind must be 'right' or 'negative'")
    if not 0 < search_min < search_max:
        raise ThresholdsError("need 0 < search_min < search_max")
    indicator = _right_indicator if kind == "right" else negative_indicator
    count = [0]
    undefined = []

    def g(delta):
        count[0] += 1
        try:
            law = law_at(delta)
        except DivergenceError:
            # e.g. a delta-dependent preprocessing with a pole inside the support of y:
            # no spectral edge, hence no outlier, at this delta
            undefined.append(delta)
            return -1.0
        return indicator(law, delta)

    grid = np.geomspace(search_min, search_max, 61)
    prev_d, prev_v = grid[0], g(grid[0])
    if prev_v > 0:
        return ThresholdResult(search_min, 0.0, kind, search_min, search_max, True, count[0], undefined)
    for d in grid[1:]:
        v = g(d)
        if v > 0:
            root = optimize.brentq(g, prev_d, d, xtol=1e-14, rtol=rtol, maxiter=200)
            return ThresholdResult(root, rtol * root + 1e-14, kind, search_min, search_max, False,
                                   count[0], undefined)
        prev_d, prev_v = d, v
    return ThresholdResult(math.inf, 0.0, kind, search_min, search_max, False, count[0], undefined)

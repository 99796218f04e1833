"""Generalized Marchenko-Pastur equation for D = (1/n) sum_i G_i x_i x_i^T (THEORY.md section 4, m = 1).

Conventions: x_i ~ N(0, I_d), n = delta d, and the Stieltjes transform is
alpha(z) = lim (1/d) tr (D - z)^{-1} = int mu(dl) / (l - z) (so alpha > 0 to
the left of the spectrum and alpha < 0 to its right).  It solves

    alpha = 1 / ( -z + E[ delta G / (delta + G alpha) ] ),                              (1)

and on real intervals outside the bulk its inverse is

    z(alpha) = -1/alpha + E[delta G/(delta + G alpha)];                                (2)

bulk edges are the zeros of

    z'(alpha) = 1/alpha^2 - E[delta G^2/(delta + G alpha)^2].                          (3)

The law of G is a :class:`WeightLaw`: weighted nodes (quadrature nodes of
an exact law, or samples) carrying G and M = E[g_H g_H^T | node] (the
conditional second moment of the latent directions the outliers look at;
r x r).  Every expectation of this module is linear in g_H g_H^T, so (w, G,
M) is all that is needed.  Two back-ends: float64 NumPy (any r) and mpmath
(r = 1, at the caller's precision), selected by :attr:`WeightLaw.mp`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mpmath
import numpy as np
from scipy import optimize

from .errors import ConvergenceError, DivergenceError, ThresholdsError


def _ratio(G, delta, alpha):
    """G / (delta + G alpha), evaluated as 1/(delta/G + alpha) for |G| > 1 so that
    huge weights (unbounded laws such as 1 - 1/y) neither overflow nor lose digits."""
    G = np.asarray(G)
    big = np.abs(G) > 1.0
    safe = np.where(big, G, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(big, 1.0 / (delta / safe + alpha), G / (delta + G * alpha))


HEAVY = 1e12  # one-sided E[G^2] above this is treated as infinite (unbounded support)


def spike_weight(g):
    """The spike weight of the hard directions per sample: g_H^2 for one (g of shape (n,)),
    the r_H x r_H matrix g_H g_H^T for several (g of shape (n, r_H))."""
    g = np.asarray(g, dtype=float)
    return g**2 if g.ndim == 1 else np.einsum("ni,nj->nij", g, g)


@dataclass
class WeightLaw:
    """Weighted nodes of the law of (G, E[g_H g_H^T | node]).

    G, w: shape (n,); M: shape (n, r, r).  ``G_inf``/``G_sup`` are the bounds
    of the support of the *exact* law (may be -inf/+inf, e.g. 1 - 1/y is
    unbounded below), which fix the poles of the equations.  With
    ``mp_nodes`` (lists of mpf for G, w and M with r = 1) the mpmath
    back-end is available at any precision.
    """

    G: np.ndarray
    w: np.ndarray
    M: np.ndarray
    G_inf: float
    G_sup: float
    description: str = ""
    mp_nodes: tuple | None = None
    setup: dict = field(default_factory=dict)

    def __post_init__(self):
        self.G = np.asarray(self.G, dtype=float)
        self.w = np.asarray(self.w, dtype=float)
        self.M = np.asarray(self.M, dtype=float)
        if self.M.ndim == 1:
            self.M = self.M[:, None, None]
        if not (np.all(np.isfinite(self.G)) and np.all(np.isfinite(self.w)) and np.all(np.isfinite(self.M))):
            raise DivergenceError("weight law has non-finite nodes")
        if np.any(self.w < 0):
            raise ThresholdsError("weight law has negative weights")
        total = self.w.sum()
        if not abs(total - 1) < 1e-6:
            raise ThresholdsError(f"weights of the weight law sum to {total:.8g}, not 1")
        # a one-sided infinite second moment means the exact law is unbounded on that side;
        # the branch of the equations on the other side stays valid (its integrands are bounded)
        with np.errstate(over="ignore"):
            upper = float(np.sum(self.w * np.maximum(self.G, 0.0) ** 2))
            lower = float(np.sum(self.w * np.minimum(self.G, 0.0) ** 2))
        if upper > HEAVY:
            self.G_sup = np.inf
        if lower > HEAVY:
            self.G_inf = -np.inf
        if np.isinf(self.G_sup) and np.isinf(self.G_inf):
            raise DivergenceError("the weight law has an infinite second moment on both sides "
                                  "(E[G^2] = inf): the spectrum has no edge to look for outliers at")

    @property
    def r(self) -> int:
        return self.M.shape[1]

    @classmethod
    def from_samples(cls, G, g, *, description="samples"):
        """Equal-weight law from samples of G and of the latent g_H (shape (n,) or (n, r))."""
        G = np.asarray(G, dtype=float)
        g = np.asarray(g, dtype=float)
        if g.ndim == 1:
            g = g[:, None]
        M = np.einsum("ni,nj->nij", g, g)
        return cls(G, np.full(G.size, 1.0 / G.size), M, float(G.min()), float(G.max()), description)

    @classmethod
    def from_nodes(cls, G, w, M, *, description="quadrature nodes", mp_nodes=None, setup=None,
                   bounds=(None, None)):
        """Law from weighted nodes.  The support bounds are the extreme nodes,
        widened by ``bounds`` (exact limits of G where the nodes are a
        truncation of an unbounded law) and by heavy-tail detection."""
        G = np.asarray(G, dtype=float)
        lo, hi = float(G.min()), float(G.max())
        if bounds[0] is not None:
            lo = min(lo, bounds[0])
        if bounds[1] is not None:
            hi = max(hi, bounds[1])
        return cls(G, w, M, lo, hi, description, mp_nodes, setup or {})

    @classmethod
    def pooled(cls, G, w, M, *, description):
        """Law of per-neuron weights G (n, m) pooled over the m neurons of each sample: node (i, j) has
        weight w_i / m and the spike weight M_i of its sample (exchangeable neurons share one law)."""
        G = np.asarray(G, dtype=float)
        m = G.shape[1]
        return cls.from_nodes(G.reshape(-1), np.repeat(np.asarray(w) / m, m), np.repeat(M, m, axis=0),
                              description=description)

    # --- moments ----------------------------------------------------------
    def moments(self, alpha, delta):
        """(E1, E2, S1, S2) at real alpha (float64):
        E1 = E[dG/(d+G a)], E2 = E[dG^2/(d+G a)^2], S1 = E[dG (M - I)/(d+G a)],
        S2 = E[dG^2 M/(d+G a)^2]  (d = delta, a = alpha)."""
        with np.errstate(all="ignore"):  # alpha exactly at a node's pole gives inf, handled by callers
            ratio = _ratio(self.G, delta, alpha)
            q1 = self.w * delta * ratio
            q2 = q1 * ratio
            eye = np.eye(self.r)
            S1 = np.einsum("n,nij->ij", q1, self.M) - q1.sum() * eye
            S2 = np.einsum("n,nij->ij", q2, self.M)
        return q1.sum(), q2.sum(), S1, S2

    def moments_mp(self, alpha, delta):
        """Same as :meth:`moments` (r = 1) with mpmath at the current precision."""
        if self.mp_nodes is None:
            raise ThresholdsError("this weight law has no mpmath nodes")
        G, w, M = self.mp_nodes
        den = [delta + g * alpha for g in G]
        q1 = [wi * delta * g / d for wi, g, d in zip(w, G, den)]
        q2 = [wi * delta * g * g / (d * d) for wi, g, d in zip(w, G, den)]
        E1, E2 = mpmath.fsum(q1), mpmath.fsum(q2)
        S1 = mpmath.fdot(q1, M) - E1
        S2 = mpmath.fdot(q2, M)
        return E1, E2, S1, S2

    def poles(self, delta):
        """(alpha_left_pole, alpha_right_pole): the branch outside the bulk on the
        right is alpha in (right_pole, 0), on the left (0, left_pole)."""
        right = -delta / self.G_sup if self.G_sup > 0 else -np.inf
        left = delta / -self.G_inf if self.G_inf < 0 else np.inf
        return left, right


def z_of_alpha(law: WeightLaw, delta: float, alpha: float) -> float:
    """Inverse of alpha(z) outside the bulk, eq. (2): z = -1/alpha + E[dG/(d + G alpha)]."""
    return -1.0 / alpha + law.moments(alpha, delta)[0]


def _edge_function(law, delta, alpha):
    """alpha^2 z'(alpha) = 1 - alpha^2 E2: monotone in |alpha| on each branch."""
    return 1.0 - alpha**2 * law.moments(alpha, delta)[1]


@dataclass
class Edge:
    """A bulk edge: ``z`` (may be +-inf), its Stieltjes value ``alpha``, and how it was found."""

    z: float
    alpha: float
    kind: str  # "root" (z'(alpha) = 0), "pole" (edge at the pole), "zero" (atom at 0), "none" (unbounded)

    def to_json(self):
        return {"z": self.z, "alpha": self.alpha, "kind": self.kind}


def _grow_until(f, start, positive: bool, limit=1e15):
    """Double ``start`` until f has the requested sign (None if |alpha| exceeds ``limit``)."""
    a = start
    while abs(a) < limit:
        if (f(a) > 0) == positive:
            return a
        a *= 2.0
    return None


def _branch_edge(law, delta, side, *, xtol=1e-15):
    left_pole, right_pole = law.poles(delta)
    pole = right_pole if side == "right" else left_pole
    sgn = -1.0 if side == "right" else 1.0
    f = lambda a: _edge_function(law, delta, a)  # noqa: E731
    if pole == 0:  # G unbounded on this side: the bulk extends to infinity
        return Edge(-sgn * np.inf, 0.0, "none")
    if np.isinf(pole):
        # G of one sign: as |alpha| -> inf, 1 - alpha^2 E2 -> 1 - delta P(G != 0)
        limit = 1.0 - delta * float(np.sum(law.w[law.G != 0]))
        if abs(limit) < 1e-12:  # delta P(G != 0) = 1: hard edge at 0 (Marchenko-Pastur at ratio 1)
            return Edge(0.0, sgn * np.inf, "zero")
        if limit < 0:
            hi = _grow_until(f, sgn, positive=False)
            if hi is None:
                raise ConvergenceError("bulk edge not bracketed")
        else:
            # rank deficiency: an atom at 0 of mass 1 - delta P(G != 0); the edge of the
            # continuous part lies on the branch beyond the opposite pole
            other = right_pole if side == "left" else left_pole
            if not np.isfinite(other) or f(other * (1 + 1e-14)) > 0:
                return Edge(0.0, sgn * np.inf, "zero")
            far = _grow_until(f, other * 2.0, positive=True)
            if far is None:
                return Edge(0.0, sgn * np.inf, "zero")
            root = optimize.brentq(f, other * (1 + 1e-14), far, xtol=1e-300, rtol=xtol, maxiter=500)
            return Edge(z_of_alpha(law, delta, root), root, "atom-gap")
    else:
        hi = pole * (1 - 1e-14)
        if f(hi) > 0:
            return Edge(z_of_alpha(law, delta, hi), hi, "pole")
    # f(alpha) = 1 - alpha^2 E2 is positive near 0 and negative at hi (monotone in between)
    root = optimize.brentq(f, hi * 1e-12, hi, xtol=1e-300, rtol=xtol, maxiter=500)
    return Edge(z_of_alpha(law, delta, root), root, "root")


def bulk_edges(law: WeightLaw, delta: float) -> tuple[Edge, Edge]:
    """(left edge, right edge) of the limiting spectrum of D.

    The right edge is the zero of z'(alpha) in (right pole, 0); the left one
    in (0, left pole).  When G is unbounded below the left pole is at 0 and
    the bulk has no finite left edge (kind "none", z = -inf).
    """
    if delta <= 0:
        raise ThresholdsError(f"delta must be > 0, got {delta}")
    return _branch_edge(law, delta, "left"), _branch_edge(law, delta, "right")


def stieltjes(law: WeightLaw, delta: float, z: complex, *, alpha0: complex | None = None,
              tol: float = 1e-14, maxiter: int = 200) -> complex:
    """alpha(z) of eq. (1) for complex z with Im z > 0 (Newton, Im alpha > 0 enforced)."""
    if delta <= 0:
        raise ThresholdsError(f"delta must be > 0, got {delta}")
    a = alpha0 if alpha0 is not None else -1.0 / z
    G, w = law.G, law.w
    for _ in range(maxiter):
        ratio = _ratio(G, delta, a)
        E1 = np.sum(w * delta * ratio)
        dE1 = -np.sum(w * delta * ratio**2)
        F = a * (-z + E1) - 1.0
        dF = (-z + E1) + a * dE1
        step = F / dF
        new = a - step
        shrink = 0
        while new.imag <= 0 and shrink < 50:
            step *= 0.5
            new = a - step
            shrink += 1
        a = new
        if abs(step) <= tol * max(1.0, abs(a)):
            return a
    raise ConvergenceError(f"Stieltjes equation did not converge at z = {z}")


def _newton_many(law, delta, z, a, iters=60, tol=1e-13):
    """Vectorized Newton for alpha (F = alpha(-z + E1(alpha)) - 1) at many z at once,
    with step halving to keep Im alpha > 0."""
    G, w = law.G[None, :], law.w[None, :]
    done = np.zeros(z.shape, dtype=bool)
    for _ in range(iters):
        ratio = _ratio(G, delta, a[:, None])
        E1 = np.sum(w * delta * ratio, axis=1)
        dE1 = -np.sum(w * delta * ratio**2, axis=1)
        F = a * (-z + E1) - 1.0
        dF = (-z + E1) + a * dE1
        step = np.where(done, 0.0, F / dF)
        new = a - step
        for _ in range(40):
            bad = new.imag <= 0
            if not bad.any():
                break
            step = np.where(bad, step / 2, step)
            new = a - step
        a = new
        done |= np.abs(step) <= tol * np.maximum(1.0, np.abs(a))
        if done.all():
            break
    return a, done


def density(law: WeightLaw, delta: float, xs, *, eta: float = 1e-9):
    """Bulk density rho(x) = Im alpha(x + i0) / pi on the grid ``xs``.

    Zero outside [left edge, right edge]; inside, vectorized Newton with
    continuation in eta from 1 down to ``eta`` (each level warm-starts the next).
    An atom at 0 (rank-deficient D) is not part of the returned density.
    """
    xs = np.asarray(xs, dtype=float)
    left, right = bulk_edges(law, delta)
    inside = (xs > left.z) & (xs < right.z)
    out = np.zeros(xs.size)
    if not inside.any():
        return out
    x = xs[inside]
    a = -1.0 / (x + 1j)
    for e in np.geomspace(1.0, eta, 19):
        a, ok = _newton_many(law, delta, x + 1j * e, a)
    if not ok.all():
        raise ConvergenceError(f"Stieltjes equation did not converge at {int((~ok).sum())} grid points")
    out[inside] = np.maximum(a.imag, 0.0) / np.pi
    return out

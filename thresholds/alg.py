"""delta_alg: easy/hard decomposition of the latent space and the optimal
spectral threshold of the hard part (THEORY.md section 1).

* Easy subspace (recursive, staircase included): U_E starts empty; at each
  level the matrix ``M = E[ E[g_perp | y, g_E] E[g_perp | y, g_E]^T ]`` is
  computed for the coordinates orthogonal to U_E; eigenvectors with a
  non-zero eigenvalue are added to U_E (after rotating the latent basis so
  that U_E is spanned by the first coordinates).  Stops when nothing new.                (1)
* Hard subspace U_H = the rest, of dimension r_H.  With
  ``G(y, g_E) = E[g_H g_H^T - I | y, g_E]``, ``F(M) = E[G M G]`` is a
  self-adjoint positive map on symmetric r_H x r_H matrices and
  ``delta_alg = 1 / lambda_max(F)`` (2) (Troiani et al. 2024; single index:
  ``1 / E_y[(E[g^2|y] - 1)^2]``, Mondelli & Montanari 2018).
  ``delta_alg = 0`` when U_H is empty, ``inf`` when F = 0.
* Generative exponent: the smallest j with ``E[ || E[He_j(g) | y] ||^2 ] > 0``
  (He_j the probabilists' Hermite tensor of order j)                                     (3).

Numerics: noiseless single-index links use the mpmath inverse-branch engine
(:mod:`thresholds.branches`), everything else the float64 level-set engine
(:mod:`thresholds.levelset`).  A quantity is declared zero when it is below
three times its error estimate and below an absolute floor (1e-20 for the
mpmath engine, 1e-10 for the float64 one).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy as sp

from .branches import InverseBranches
from .catalog import Link, get_link
from .errors import ConvergenceError
from .levelset import LevelSetGram

FLOOR_MP = 1e-20
FLOOR_FLOAT = 1e-10
MAX_MOMENT_ERROR = 1e-3  # largest error estimate of a normalized conditional moment that decides a split


@dataclass
class AlgResult:
    """delta_alg of a link with the decomposition that produced it.

    ``delta_alg`` is 0.0 (no hard direction), a positive float, or ``math.inf``
    (F = 0: generative exponent >= 3).  ``error`` is an estimate of
    |delta_alg - exact|; ``lambda_max`` is lambda_max(F) and its error.
    ``generative_exponent`` is None when no order up to ``max_order``
    has a non-zero conditional Hermite moment.
    """

    link: str
    expr: str
    k: int
    noise: bool
    easy_dim: int
    hard_dim: int
    easy_basis: list
    hard_basis: list
    generative_exponent: int | None
    max_order: int
    delta_alg: float
    error: float
    lambda_max: float
    lambda_error: float
    method: str
    levels: list = field(default_factory=list)
    converged: bool = True

    def to_json(self) -> dict:
        if math.isinf(self.delta_alg):
            delta = "inf"
        else:
            delta = self.delta_alg
        return {
            "link": self.link,
            "expr": self.expr,
            "k": self.k,
            "noise": self.noise,
            "easy_dim": self.easy_dim,
            "hard_dim": self.hard_dim,
            "easy_basis": self.easy_basis,
            "hard_basis": self.hard_basis,
            "generative_exponent": self.generative_exponent,
            "generative_exponent_checked_up_to": self.max_order,
            "delta_alg": delta,
            "delta_alg_error": self.error,
            "lambda_max_F": self.lambda_max,
            "lambda_max_F_error": self.lambda_error,
            "method": self.method,
            "levels": self.levels,
        }


def _nonzero(value: float, error: float, floor: float) -> bool:
    return value > 3.0 * error and value > floor


def hermite_multi(g, order: int):
    """Products He_{a_1}(g_1)...He_{a_k}(g_k) with a_1+...+a_k = order (probabilists')."""
    out = []
    for alpha in itertools.product(range(order + 1), repeat=len(g)):
        if sum(alpha) == order:
            out.append(sp.Mul(*[sp.hermite_prob(a, v) for a, v in zip(alpha, g)]))
    return out


def delta_alg(link: str | Link, *, dps: int = 30, max_order: int = 4, level: int = 5,
              epsrel: float = 1e-8) -> AlgResult:
    """delta_alg of ``link`` (catalogue name, expression, or Link).

    ``dps``: decimal digits of the mpmath engine (noiseless k = 1);
    ``level``/``epsrel``: rule level and y-tolerance of the float64 engine;
    ``max_order``: highest Hermite order tried for the generative exponent.
    """
    if isinstance(link, str):
        link = get_link(link)
    if dps < 15:
        raise ValueError("dps must be >= 15")
    if link.k == 1 and link.noise is None:
        return _single_index(link, dps, max_order)
    return _multi_index(link, max_order, level, epsrel)


def _single_index(link: Link, dps: int, max_order: int) -> AlgResult:
    z = link.latent[0]
    engine = InverseBranches(link.expr, z)
    funcs = [z, z**2 - 1]
    Q, _, Qe, _ = engine.gram(funcs, dps=dps, diagonal_only=True, linear=False)
    m1, e1, m2, e2 = Q[0, 0], Qe[0, 0], Q[1, 1], Qe[1, 1]
    levels = [{"conditioning": [], "E[E[g|y]^2]": float(m1), "error": float(e1)},
              {"hard": ["z"], "E[E[g^2-1|y]^2]": float(m2), "error": float(e2)}]
    method = f"inverse branches (mpmath, {dps} digits; {len(engine.segments)} monotone segment(s), " \
             f"{len(engine.atoms)} atom(s))"
    base = dict(link=link.name, expr=str(link.expr), k=1, noise=False, max_order=max_order,
                method=method, levels=levels)
    if _nonzero(float(m1), float(e1), FLOOR_MP):
        return AlgResult(easy_dim=1, hard_dim=0, easy_basis=[[1.0]], hard_basis=[],
                         generative_exponent=1, delta_alg=0.0, error=0.0,
                         lambda_max=math.nan, lambda_error=math.nan, **base)
    _require_zero_established(link, "E[E[g|y]^2]", m1, e1)
    if _nonzero(float(m2), float(e2), FLOOR_MP):
        with mpmath.workdps(dps):
            value = 1 / m2
            err = e2 / m2**2
        return AlgResult(easy_dim=0, hard_dim=1, easy_basis=[], hard_basis=[[1.0]],
                         generative_exponent=2, delta_alg=float(value), error=float(err),
                         lambda_max=float(m2), lambda_error=float(e2), **base)
    _require_zero_established(link, "E[E[g^2-1|y]^2]", m2, e2)
    gen = None
    if max_order >= 3:
        hermite = [sp.hermite_prob(j, z) for j in range(3, max_order + 1)]
        Qh, _, Qhe, _ = engine.gram(hermite, dps=max(dps // 2, 15), diagonal_only=True, linear=False)
        for j in range(len(hermite)):
            if _nonzero(float(Qh[j, j]), float(Qhe[j, j]), FLOOR_MP):
                gen = j + 3
                break
    return AlgResult(easy_dim=0, hard_dim=1, easy_basis=[], hard_basis=[[1.0]],
                     generative_exponent=gen, delta_alg=math.inf, error=0.0,
                     lambda_max=float(m2), lambda_error=float(e2), **base)


def _require_zero_established(link, name, value, error):
    """A moment is declared 0 (the direction is hard, or F = 0) only when its error estimate is small: both
    moments are bounded by Jensen (E[E[g|y]^2] <= E[g^2] = 1, E[E[g^2-1|y]^2] <= E[(g^2-1)^2] = 2), so
    an error above MAX_MOMENT_ERROR means the quadrature has not resolved the link (y = exp(64 z), whose
    values span e^{+-2560}, gives 0.53 +- 0.21) and the split is undecided: an error, not an answer."""
    if not float(error) <= MAX_MOMENT_ERROR:
        raise ConvergenceError(f"the conditional moments of y = {link.expr} did not converge ({name} = "
                               f"{float(value):.3g} +- {float(error):.2g}): the inverse-branch quadrature "
                               "does not resolve this link")


def _rotation_substitution(link_vars, basis):
    """z_i -> sum_j U_ij z_j, with U's entries recognised as simple surds when close and entries
    below 1e-9 in size (rounding left by the eigensolver, e.g. 1e-17) set to 0: SymPy's nsimplify
    keeps such a float as it is, or (1e-12) turns it into a spurious combination of surds, and either
    leaves a tiny cross term in the rotated link that the level-set engine cannot integrate."""
    subs = {}
    for i, zi in enumerate(link_vars):
        terms = []
        for j, zj in enumerate(link_vars):
            value = float(basis[i, j])
            entry = 0 if abs(value) < 1e-9 else sp.nsimplify(value, [sp.sqrt(2), sp.sqrt(3), sp.sqrt(5)],
                                                                tolerance=1e-9, rational=False)
            terms.append(entry * zj)
        subs[zi] = sp.Add(*terms)
    return subs


def _multi_index(link: Link, max_order: int, level: int, epsrel: float) -> AlgResult:
    g = list(link.latent)
    k = len(g)
    h = link.expr
    basis = np.eye(k)  # columns: current coordinates in the original latent basis
    n_easy = 0
    levels = []
    pair_Q = None
    second_order_nonzero = None
    first_order_nonzero = None
    methods = set()
    while True:
        given, free = g[:n_easy], g[n_easy:]
        pairs = [(i, j) for i in range(len(free)) for j in range(i, len(free))]
        if not any(h.has(v) for v in free):
            # y depends on the easy coordinates only: the rest is independent noise,
            # E[g_free | y, g_E] = 0 and E[g_free g_free^T - I | y, g_E] = 0, so F = 0
            levels.append({"conditioning": [str(v) for v in given], "free": [str(v) for v in free],
                           "note": "y does not depend on these coordinates"})
            zero = np.zeros((len(pairs), len(pairs)))
            pair_Q = (zero, zero, pairs)
            if first_order_nonzero is None:
                first_order_nonzero, second_order_nonzero = False, False
            break
        funcs = list(free) + [free[i] * free[j] - (1 if i == j else 0) for i, j in pairs]
        res = LevelSetGram(h, link.variables, funcs, given=given).run(level=level, epsrel=epsrel)
        methods.add(res.method)
        r = len(free)
        M, Me = res.Q[:r, :r], res.Q_err[:r, :r]
        eigval, eigvec = np.linalg.eigh(M)
        bound = np.linalg.norm(Me)  # |delta eigenvalue| <= ||delta M||_2 <= ||delta M||_F
        new = [i for i in range(r) if _nonzero(eigval[i], bound, FLOOR_FLOAT)]
        levels.append({"conditioning": [str(v) for v in given], "free": [str(v) for v in free],
                       "M_eigenvalues": eigval.tolist(), "M_error": float(bound)})
        if not given:
            first_order_nonzero = bool(new)
            second_order_nonzero = any(_nonzero(res.Q[r + a, r + a], res.Q_err[r + a, r + a], FLOOR_FLOAT)
                                       for a in range(len(pairs)))
        if not new or len(new) == 0:
            pair_Q = (res.Q[r:, r:], res.Q_err[r:, r:], pairs)
            break
        # rotate so that the new easy directions come first among the free coordinates
        order = new + [i for i in range(r) if i not in new]
        block = eigvec[:, order]
        rot = np.eye(k)
        rot[n_easy:, n_easy:] = block
        h = h.subs(_rotation_substitution(g, rot), simultaneous=True)
        h = sp.expand(h) if h.is_polynomial(*g) else h
        basis = basis @ rot
        n_easy += len(new)
        if n_easy == k:
            break
    return _multi_index_result(link, basis, n_easy, first_order_nonzero, second_order_nonzero, methods, levels,
                               pair_Q, max_order, level, epsrel)


def _multi_index_result(link, basis, n_easy, first_order_nonzero, second_order_nonzero, methods, levels, pair_Q,
                        max_order, level, epsrel) -> AlgResult:
    """The AlgResult of the level-set recursion: bases, generative exponent and delta_alg = 1/lambda_max(F)
    (0 with no hard direction, inf when F = 0 within its error)."""
    k = link.k
    easy_basis = [_canonical_sign(basis[:, i]) for i in range(n_easy)]
    hard_basis = [_canonical_sign(basis[:, i]) for i in range(n_easy, k)]
    r_h = k - n_easy
    gen = 1 if first_order_nonzero else (2 if second_order_nonzero else None)
    if gen is None and max_order >= 3:
        gen = _generative_high_order(link, max_order, level, epsrel)
    base = dict(link=link.name, expr=str(link.expr), k=k, noise=link.noise is not None,
                easy_dim=n_easy, hard_dim=r_h, easy_basis=easy_basis, hard_basis=hard_basis,
                generative_exponent=gen, max_order=max_order,
                method="level sets (float64): " + "; ".join(sorted(methods)), levels=levels)
    if r_h == 0:
        return AlgResult(delta_alg=0.0, error=0.0, lambda_max=math.nan, lambda_error=math.nan, **base)
    lam, lam_err = _lambda_max_F(*pair_Q, r_h)
    if not _nonzero(lam, lam_err, FLOOR_FLOAT):
        return AlgResult(delta_alg=math.inf, error=0.0, lambda_max=lam, lambda_error=lam_err, **base)
    return AlgResult(delta_alg=1.0 / lam, error=lam_err / lam**2, lambda_max=lam,
                     lambda_error=lam_err, **base)


def _canonical_sign(v):
    """Unit vector with its largest-magnitude entry made positive, rounded for display."""
    v = np.asarray(v, dtype=float)
    if v[np.argmax(np.abs(v))] < 0:
        v = -v
    return [float(x) + 0.0 for x in v.round(12)]


def _lambda_max_F(Q, Q_err, pairs, r):
    """lambda_max of F(M) = E[G M G] on symmetric r x r matrices, from
    Q[(ij),(kl)] = E[G_ij G_kl], and a bound on its error (Frobenius norm of
    the propagated entry errors)."""
    index = {pair: a for a, pair in enumerate(pairs)}

    def entry(mat, i, j, k, l):
        return mat[index[(min(i, j), max(i, j))], index[(min(k, l), max(k, l))]]

    # F(M)_{il} = sum_{jk} E[G_ij G_kl] M_jk  ->  T[(i,l),(j,k)]
    T = np.zeros((r * r, r * r))
    Terr = np.zeros((r * r, r * r))
    for i, l, j, k in itertools.product(range(r), repeat=4):
        T[i * r + l, j * r + k] = entry(Q, i, j, k, l)
        Terr[i * r + l, j * r + k] = entry(Q_err, i, j, k, l)
    # orthonormal basis of symmetric matrices
    cols = []
    for i in range(r):
        for j in range(i, r):
            e = np.zeros((r, r))
            if i == j:
                e[i, i] = 1.0
            else:
                e[i, j] = e[j, i] = 1 / math.sqrt(2)
            cols.append(e.ravel())
    S = np.array(cols).T
    Tsym = S.T @ T @ S
    Tsym = 0.5 * (Tsym + Tsym.T)
    lam = float(np.linalg.eigvalsh(Tsym)[-1])
    err = float(np.linalg.norm(np.abs(S).T @ Terr @ np.abs(S)))
    return lam, err


def _generative_high_order(link: Link, max_order: int, level: int, epsrel: float):
    g = list(link.latent)
    for order in range(3, max_order + 1):
        funcs = hermite_multi(g, order)
        res = LevelSetGram(link.expr, link.variables, funcs).run(level=level, epsrel=epsrel)
        if any(_nonzero(res.Q[a, a], res.Q_err[a, a], FLOOR_FLOAT) for a in range(len(funcs))):
            return order
    return None


@dataclass
class LatentSplit:
    """Orthonormal bases (rows, in the coordinates of g) of the easy and hard subspaces."""

    easy: np.ndarray  # (r_E, k)
    hard: np.ndarray  # (r_H, k)

    @property
    def k(self) -> int:
        return self.easy.shape[1] if self.easy.size else self.hard.shape[1]


_SPLITS: dict = {}


def latent_split(link: str | Link) -> LatentSplit:
    """Easy / hard split of the latent space of ``link`` (THEORY.md section 1), from the
    generative-exponent test of ``delta_alg`` up to order 2; kept in memory and cached on disk
    by expression (the simulator asks for it on every run)."""
    from . import cache as _cache
    if isinstance(link, str):
        link = get_link(link)
    key = {"expr": str(link.expr), "latent": [str(v) for v in link.latent], "noise": str(link.noise)}
    memo = repr(sorted(key.items()))
    if memo in _SPLITS:
        return _SPLITS[memo]
    hit = _cache.load("latent_split", key, expect=LatentSplit)
    if hit is not None:
        _SPLITS[memo] = hit
        return hit
    res = delta_alg(link, dps=15, max_order=2)
    k = link.k
    split = LatentSplit(np.array(res.easy_basis, dtype=float).reshape(-1, k),
                        np.array(res.hard_basis, dtype=float).reshape(-1, k))
    _cache.store("latent_split", key, split)
    _SPLITS[memo] = split
    return split

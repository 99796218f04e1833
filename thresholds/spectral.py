"""Preprocessed spectral estimators of a link,

    D_T = (1/n) sum_i T(y_i) x_i x_i^T                                                  (1)

(Lu & Li 2017; THEORY.md section 4: the Hessian engine with G = T(y)).

Builds the :class:`~thresholds.stieltjes.WeightLaw` of G = T(y) with
M = E[g g^T | y] (g the k latent variables) and feeds the Stieltjes /
outlier engine.  Preprocessings:

* an expression in ``y`` (and optionally ``delta``), whitelisted;
* ``optimal``: T*(y) = 1 - 1/E[g^2 | y] (2) (Luo, Alghamdi & Lu 2019), single
  index only; its weak-recovery threshold must equal delta_alg (the
  consistency check of the engine, see tests);
* ``mm``: the delta-dependent preprocessing of Mondelli & Montanari 2018 for
  real phase retrieval, T_delta(y) = (y_+ - 1)/(y_+ + sqrt(2 delta) - 1)                 (3).

The law of y comes from the inverse-branch engine at mpmath precision for
noiseless single-index links (double-exponential nodes in y, level ``level``)
and from the float64 level-set engine otherwise.  Every result is computed
at two quadrature levels; their difference is the reported error.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy as sp

from .branches import InverseBranches
from .catalog import Link, get_link, lambdify_mpmath, lambdify_numpy
from .errors import DivergenceError, ExpressionError, ThresholdsError, UnsupportedError
from .expr import parse_expression
from .levelset import LevelSetGram
from .outlier import spectrum, spike_threshold
from .stieltjes import WeightLaw, density

YS = sp.Symbol("y", real=True)
DELTA = sp.Symbol("delta", real=True)
ROUND = 1e-14  # relative floor of reported errors: float64 root finding and sums
NAMED = {
    "mm": "(Max(y, 0) - 1)/(Max(y, 0) + sqrt(2*delta) - 1)",
}


@dataclass
class YNodes:
    """Nodes of the law of y: value y_i, probability weight p_i, and M_i = E[g g^T | y_i]."""

    y: np.ndarray
    p: np.ndarray
    M: np.ndarray
    mp: tuple | None = None  # (y, p, M) as mpf lists, k = 1
    description: str = ""
    support: tuple = (-np.inf, np.inf)  # exact (inf, sup) of y; the nodes truncate infinite ends


def link_ynodes(link: Link, *, level: int = 6, dps: int = 20, cuts=()) -> YNodes:
    """Quadrature nodes of y with the conditional second moments of the latent variables
    (cells also cut at ``cuts``, the kinks of the preprocessing)."""
    g = list(link.latent)
    if link.k == 1 and link.noise is None:
        engine = InverseBranches(link.expr, g[0])
        ys, ws, Ns = engine.y_nodes([g[0] ** 2], level=level, dps=dps, extra_cuts=cuts)
        with mpmath.workdps(dps):
            p = [w * n[0] for w, n in zip(ws, Ns)]
            M = [n[1] / n[0] for n in Ns]
            total = mpmath.fsum(p)
            p = [pi / total for pi in p]
            ends = [v for seg in engine.segments for v in (seg.y_lo, seg.y_hi)]
            ends += [a[0] for a in engine.atom_moments([], dps)]
            support = (float(min(ends)), float(max(ends)))
        return YNodes(np.array([float(v) for v in ys]), np.array([float(v) for v in p]),
                      np.array([float(v) for v in M])[:, None, None], (ys, p, M),
                      f"inverse branches, {len(ys)} nodes (level {level}, {dps} digits)", support)
    funcs = [g[i] * g[j] for i in range(len(g)) for j in range(len(g))]
    engine = LevelSetGram(link.expr, link.variables, funcs)
    ys, ps, Ns = engine.y_nodes(level=level, extra_cuts=cuts)
    k = len(g)
    M = (Ns[:, 1:] / Ns[:, :1]).reshape(-1, k, k)
    return YNodes(ys, ps, M, None, f"level sets, {len(ys)} nodes (level {level})", _y_range(link))


def _y_range(link: Link) -> tuple:
    """Range of y = h(V): bounded sides detected by evaluating h far out along
    random directions (a side counts as unbounded when |h| exceeds 1e3 there)."""
    if link.discrete:
        return (-1.0, 1.0) if isinstance(link.expr, sp.sign) else (0.0, 1.0)
    f = link.numpy()
    rng = np.random.default_rng(1)
    dirs = rng.standard_normal((4000, len(link.variables)))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        vals = f(*(1e3 * dirs).T)
    vals = vals[np.isfinite(vals)]
    lo = -np.inf if vals.min() < -1e3 else None
    hi = np.inf if vals.max() > 1e3 else None
    return (lo if lo is not None else float("nan"), hi if hi is not None else float("nan"))


@dataclass
class Preprocessing:
    """T(y) (possibly depending on delta), or the optimal T*(y) = 1 - 1/E[g^2|y]."""

    name: str
    expr: sp.Expr | None  # None for "optimal"

    @property
    def depends_on_delta(self) -> bool:
        return self.expr is not None and self.expr.has(DELTA)

    def kinks(self) -> list:
        """Kinks of T in y that do not depend on delta (cells of the y-quadrature are cut there)."""
        if self.expr is None:
            return []
        from .gaussian import kinks
        return kinks(self.expr, YS) if not self.expr.has(DELTA) else \
            [k for k in kinks(self.expr.subs(DELTA, 1), YS) if k in kinks(self.expr.subs(DELTA, 2), YS)]

    @functools.cached_property
    def _pole_fns(self):
        """Zeros of the denominator of T in y, solved once with delta symbolic."""
        if self.expr is None:
            return []
        den = sp.denom(sp.together(self.expr.rewrite(sp.Piecewise)))
        if not den.has(YS):
            return []
        try:
            roots = sp.solve(den, YS)
        except (NotImplementedError, TypeError, ValueError):
            return []
        return [sp.lambdify([DELTA], r, modules=["numpy"]) for r in roots]

    def poles(self, delta: float) -> list:
        """Real poles of T(y) at this delta (zeros of its denominator)."""
        out = []
        for fn in self._pole_fns:
            with np.errstate(all="ignore"):
                val = complex(fn(complex(delta)))
            if np.isfinite(val) and abs(val.imag) < 1e-12 * max(1.0, abs(val.real)):
                out.append(val.real)
        return out

    @functools.cached_property
    def numpy_fn(self):
        """T(y, delta) as a vectorized NumPy function (lambdified once)."""
        return lambdify_numpy([YS, DELTA], self.expr)

    def values(self, nodes: YNodes, delta: float) -> np.ndarray:
        if self.expr is None:
            return 1.0 - 1.0 / nodes.M[:, 0, 0]
        f = self.numpy_fn
        with np.errstate(all="ignore"):
            out = f(nodes.y, np.full_like(nodes.y, delta))
        return out

    def values_mp(self, nodes: YNodes, delta):
        ys, _, M = nodes.mp
        if self.expr is None:
            return [1 - 1 / m for m in M]
        f = lambdify_mpmath([YS, DELTA], self.expr)
        return [f(y, delta) for y in ys]


def get_preprocessing(spec: str) -> Preprocessing:
    """'optimal', 'mm', or a whitelisted expression in y (and delta)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ExpressionError("preprocessing must be 'optimal', 'mm' or an expression in y")
    spec = spec.strip()
    if spec == "optimal":
        return Preprocessing("optimal", None)
    text = NAMED.get(spec, spec)
    expr = parse_expression(text, ["y", "delta"])
    if not expr.has(YS):
        raise ExpressionError(f"preprocessing {spec!r} does not depend on y")
    return Preprocessing(spec, expr)


def weight_law(nodes: YNodes, pre: Preprocessing, delta: float, *, with_mp: bool = False) -> WeightLaw:
    """WeightLaw of G = T(y) at ``delta``; non-finite T on a node of positive weight is an error."""
    for pole in pre.poles(delta):
        inside = (nodes.y < pole).any() and (nodes.y > pole).any()
        if inside:
            raise DivergenceError(f"preprocessing {pre.name!r} has a pole at y = {pole:.6g} inside the "
                                  f"support of y (delta = {delta:g}): E[T(y)^2] is infinite")
    G = pre.values(nodes, delta)
    bad = ~np.isfinite(G) & (nodes.p > 0)
    if np.any(bad & (nodes.p > 1e-300)):
        i = int(np.nonzero(bad)[0][0])
        raise DivergenceError(f"preprocessing {pre.name!r} is not finite at y = {nodes.y[i]:.6g} "
                              f"(delta = {delta:g})")
    G = np.where(np.isfinite(G), G, 0.0)
    mp_nodes = None
    if with_mp and nodes.mp is not None:
        Gm = pre.values_mp(nodes, mpmath.mpf(delta))
        mp_nodes = (Gm, nodes.mp[1], nodes.mp[2])
    return WeightLaw.from_nodes(G, nodes.p, nodes.M, description=f"T(y) = {pre.name}",
                                mp_nodes=mp_nodes, bounds=_limits(pre, nodes, delta))


def _limits(pre: Preprocessing, nodes: YNodes, delta: float):
    """Values of T(y) far out at the infinite ends of the support of y: +-inf
    when |T| keeps growing (|T(1e12)| > 1e6 and increasing), else T(+-1e12).
    They bound the support of G beyond the truncated nodes."""
    if pre.expr is None:
        return (None, None)  # 1 - 1/E[g^2|y] <= 1; its lower side comes from the nodes
    f = pre.numpy_fn
    vals = []
    for end in nodes.support:
        if not math.isinf(end):
            continue
        far = np.sign(end) * np.array([1e6, 1e9, 1e12])
        with np.errstate(all="ignore"):
            t = f(far, np.full(3, delta))
        if not np.all(np.isfinite(t)) or (abs(t[2]) > 1e6 and abs(t[2]) > abs(t[1])):
            vals.append(math.copysign(math.inf, t[2]) if np.isfinite(t[2]) else math.inf)
        else:
            vals.append(float(t[2]))
    if not vals:
        return (None, None)
    return (min(vals), max(vals))


@dataclass
class SpectralThreshold:
    """delta_T of a preprocessing: the smallest delta with an outlier above the bulk (``value``) and with a
    negative outlier (``negative``), each ``math.inf`` when there is none up to ``search_max``, with
    errors (bracket plus the change between two quadrature levels)."""

    value: float
    error: float
    below_range: bool
    negative: float
    negative_error: float
    search_min: float
    search_max: float
    law_undefined_between: list | None = None  # the preprocessing has a pole inside the support of y there

    def to_json(self) -> dict:
        enc = (lambda v: "inf" if math.isinf(v) else v)
        out = {"delta_T": enc(self.value), "delta_T_error": self.error, "delta_T_below_range": self.below_range,
               "delta_negative": enc(self.negative), "delta_negative_error": self.negative_error,
               "search_min": self.search_min, "search_max": self.search_max}
        if self.law_undefined_between is not None:
            out["law_undefined_between"] = self.law_undefined_between
        return out


@dataclass
class SpectralResult:
    """Spectrum (or threshold) of a preprocessed spectral estimator with errors
    (difference between two quadrature levels) and the setup that produced it."""

    link: str
    preprocessing: str
    delta: float | None
    bulk_edges: list | None = None
    bulk_edges_error: list | None = None
    edge_kinds: list | None = None
    outliers: list = field(default_factory=list)
    delta_T: SpectralThreshold | None = None
    setup: dict = field(default_factory=dict)

    def to_json(self):
        out = {"link": self.link, "preprocessing": self.preprocessing, "setup": self.setup}
        if self.delta is not None:
            out.update({"delta": self.delta, "bulk_edges": self.bulk_edges,
                        "bulk_edges_error": self.bulk_edges_error, "edge_kinds": self.edge_kinds,
                        "outliers": self.outliers})
        else:
            out.update(self.delta_T.to_json())
        return out


def _validate_k1_optimal(link, pre):
    if pre.expr is None and link.k != 1:
        raise UnsupportedError("the optimal preprocessing 1 - 1/E[g^2|y] is defined for single-index links")


def spectral(link_spec, preprocessing: str, delta: float | None = None, *, level: int = 6,
             dps: int = 20, search_min: float = 1e-2, search_max: float = 1e3) -> SpectralResult:
    """Bulk edges, outliers and overlaps at ``delta``; or delta_T when ``delta`` is None."""
    link = get_link(link_spec) if isinstance(link_spec, str) else link_spec
    pre = get_preprocessing(preprocessing)
    _validate_k1_optimal(link, pre)
    if delta is not None and not delta > 0:
        raise ThresholdsError(f"delta must be > 0, got {delta}")
    cuts = pre.kinks()
    coarse = link_ynodes(link, level=level, dps=dps, cuts=cuts)
    fine = link_ynodes(link, level=level + 1, dps=dps, cuts=cuts)
    setup = {"level": level + 1, "dps": dps, "nodes": fine.description}
    if delta is not None:
        s_c = spectrum(weight_law(coarse, pre, delta), delta)
        s_f = spectrum(weight_law(fine, pre, delta, with_mp=True), delta, dps=dps)
        edges = [s_f.left.z, s_f.right.z]
        errs = [abs(s_f.left.z - s_c.left.z) + ROUND * abs(s_f.left.z) if math.isfinite(s_f.left.z) else 0.0,
                abs(s_f.right.z - s_c.right.z) + ROUND * abs(s_f.right.z) if math.isfinite(s_f.right.z) else 0.0]
        outs = []
        for o in s_f.outliers:
            match = min(s_c.outliers, key=lambda c: abs(c.z - o.z), default=None)
            z_err = abs(match.z - o.z) + ROUND * abs(o.z) if match is not None else math.nan
            ov_err = abs(match.overlap2 - o.overlap2) + ROUND if match is not None else math.nan
            item = o.to_json()
            item.update({"z_error": z_err, "overlap2_error": ov_err})
            outs.append(item)
        return SpectralResult(link.name, pre.name, delta, edges, errs,
                              [s_f.left.kind, s_f.right.kind], outs, None, setup)
    if not pre.depends_on_delta:
        weight_law(fine, pre, 1.0)  # a law that is invalid at every delta is an input error
    res = {}
    for kind in ("right", "negative"):
        t_f = spike_threshold(lambda d: weight_law(fine, pre, d), kind=kind,
                              search_min=search_min, search_max=search_max)
        t_c = spike_threshold(lambda d: weight_law(coarse, pre, d), kind=kind,
                              search_min=search_min, search_max=search_max)
        err = t_f.error
        if math.isfinite(t_f.value) and math.isfinite(t_c.value):
            err += abs(t_f.value - t_c.value)
        res[kind] = (t_f, err)
    (right, right_err), (neg, neg_err) = res["right"], res["negative"]
    out = SpectralThreshold(right.value, right_err, right.below_range, neg.value, neg_err, search_min, search_max,
                            [min(right.undefined), max(right.undefined)] if right.undefined else None)
    return SpectralResult(link.name, pre.name, None, delta_T=out, setup=setup)


def spectral_density(link_spec, preprocessing: str, delta: float, xs, *, level: int = 6, dps: int = 20):
    """Bulk density of the estimator on the grid ``xs`` (for plots)."""
    link = get_link(link_spec) if isinstance(link_spec, str) else link_spec
    pre = get_preprocessing(preprocessing)
    _validate_k1_optimal(link, pre)
    nodes = link_ynodes(link, level=level, dps=dps, cuts=pre.kinks())
    return density(weight_law(nodes, pre, delta), delta, xs)

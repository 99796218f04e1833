"""Hessian of the empirical risk at the point reached by the first phase of GD: the building block of
delta_NN (Montanari & Wang 2026, arXiv 2602.01434; THEORY.md sections 2 and 4).

With u_j = theta_j^T x and a first-phase law of (u^t, y, g_H) at step t (thresholds.laws), the scaled
Hessian H = m Hess R is the spiked matrix

    H = (1/n) sum_i W_i (x) x_i x_i^T,                                                   (1)
    W_jk = (a^2/m) sigma'_j sigma'_k - 1[j = k] (y - f) a sigma''_j,  f = (a/m) sum_j sigma(u_j + b),   (2)
    m = 1:  G = a^2 sigma'(u + b)^2 - (y - a sigma(u + b)) a sigma''(u + b)  (= -psi'(u, y)),          (3)

with the spike weight g_H^2 (g_H g_H^T for r_H > 1) along the hard directions (easy directions enter
through the law of u, THEORY.md section 1).  A negative hard outlier exists iff

    I = -lambda_min S(alpha at min(0, left bulk edge)) > 0                               (4)

(THEORY.md section 4: S decreases left of the bulk).  Three outlier engines compute (4), one per kind
of network, behind the table ``ENGINES``, each returning a :class:`ReplicaSpectrum` for one replica:
``scalar`` (m = 1, thresholds.outlier), ``matrix`` (m > 1, the (m r_H) x (m r_H) outlier matrix of
thresholds.stieltjes_m) and ``mean_field`` (m -> inf, the sector equations of thresholds.meanfield).
Replicas are averaged into a :class:`HessianSpectrum` (mean +- s.e.).  Spherical GD (m = 1): the
Riemannian Hessian is (1) minus mu I, mu = theta^T grad R / rho0^2 (``sphere_shift``).

Exchangeable neurons (m >= 2, one a and one b for every neuron).  The d = inf outlier matrix is then P (x) S_P +
Q (x) S_Q (thresholds.stieltjes_m eq. (7)): the neurons' common mode and an (m - 1)-fold degenerate "antisymmetric"
eigenvalue.  The full m x m equations on a finite-path law split that eigenvalue by Monte Carlo noise and report the
lowest of the split values, an upward bias of the indicator that falls like n^{-1/2}; the matrix
engine therefore runs on the law's relabelling average (eqs. (7)-(8), the same expectation; relabelling leaves each
sample's eigenvalues, so the extreme W that set the left tail stay those of the data set; the edge moves up by the
Monte Carlo bias of the fold, 0.003-0.007 at m = 2 and 0.014-0.025 at m = 4).  Measured (validation/reports/width/exchangeable, quad, eta 0.05,
DMFT laws, data sets of n = 1000 delta paths, paired over 3 replicas): at m = 4, delta 6, steps 31 / 62 / 93 the full
equations' indicator lies +0.063 +- 0.006 / +0.051 +- 0.015 / +0.060 +- 0.016 above the reduction's (replica s.e.
0.03-0.10; at step 100 the lowest eigenvalue of S sat 0.05-0.07 below the reduction's, the split spread over 0.2-0.3;
with all 24000 paths of a replica as one law the gap is about half); at m = 2 (no degeneracy) the paired differences
are -0.021 to +0.009, within 1.6 s.e. but one (-0.014 +- 0.004 at step 18); at m = 8, delta 3, steps 50 / 100,
+0.015 +- 0.004 / +0.013 +- 0.004.  Per-neuron a_j or b_j keep the full equations.

Treatment of an unbounded G: the law used is the empirical law of the paths (or samples) of each
replica.  When G is unbounded below in the exact law (e.g. y = g^2 with sigma'' != 0, where
G ~ -y a sigma''), the sample minimum, and with it the computed left edge, moves down as the number of
samples grows; the spread over replicas is reported, and a left edge below 0 is reported
(``settled`` False: negative curvature at this step), never as a threshold.  It does not mean that the first
phase is still moving: at d = inf the law of quad / phase retrieval (eta 0.05, delta 9-20) stops moving by
t = eta T ~ 100 (norm, train loss and the quantiles of G constant to 3-4 digits from there to t = 320) with
its left edge at -0.06 to -0.21 for n = 1000 delta samples, set by the unfitted large-y paths at u ~ 0
(validation/reports/settle).  The indicator (4) is also recomputed on the law clipped from below at its 1e-3
quantile (a finite-n truncation of the tail); the two agree when the extreme samples do not drive the
answer, and delta_NN reports the threshold under both.

The left tail of a data set of n samples (``tail_n``).  The DMFT law is the d = inf law of one sample,
but its lower tail in G is not bounded at the horizons delta_NN uses: the paths with large y that the
first phase has not yet fitted sit near the saddle of their loss, where G ~ -y a sigma'' (quad, phase
retrieval, delta 16, step 400: the minimum of G over 2e4 / 8e4 / 3.2e5 / 1.28e6 paths is -19.8 / -20.3 /
-22.7 / -25.0, validation/reports/tail_edge).  The plain indicator of a DMFT law therefore belongs to a
data set of as many samples as there are paths per replica.  With ``tail_n`` = n the plain quantities
(left edge, indicator, lowest outlier) are those of data sets of n samples from the d = inf law: each
replica's N paths (exchangeable) are split into k = max(1, floor(N / n)) disjoint data sets of n
consecutive paths (at most 16: the floor of automatic paths would otherwise make hundreds of tiny ones), and

    plain indicator of the replica = (1/k) sum_{data sets} I(empirical law of its n paths),       (5)

the statistic the finite-d GD law computes from one seed's n samples, so that the two laws state the
same number at d = n / delta.  The clipped indicator stays that of all N paths.  An earlier form of (5)
cut G at the median of the minimum of n samples, G -> max(G, G_q) with q = 1 - 2^(-1/n)
(``sample_quantile``), on the whole law, with about 3 paths per replica below G_q: paired on the same
replicas (quad, eta 0.05, delta 11, n = 11000, 4 seeds x 8 replicas of 4n paths) it puts the indicator
0.041 +- 0.013 above the mean over data sets at step 400 (0.03-0.04 at steps 100 and 200; about 0.1 in
delta_NN), the bias of its weighted quantile with few paths below it (validation/reports/tail_edge sections
5 and 6); data sets of shuffled paths give the consecutive ones' mean (+0.003 +- 0.010).  With fewer than n paths
per replica the data set is the replica's N paths, and a note says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .catalog import get_activation
from .dmft import DMFTSetup, solve_dmft
from .errors import UnsupportedError
from .laws import FirstPhaseLaw, ReplicaLaw, dmft_law
from .numbers import mean_se
from .problem import per_neuron, uniform
from .outlier import lowest_outlier, negative_indicator, spectrum
from .stieltjes import WeightLaw, bulk_edges, spike_weight


def hessian_weight(activation, a: float, b: float, u, y):
    """Eq. (3): G = a^2 sigma'(u+b)^2 - (y - a sigma(u+b)) a sigma''(u+b) (needs sigma'')."""
    act = get_activation(activation) if isinstance(activation, str) else activation
    s0, s1, s2 = act.numpy(0), act.numpy(1), act.numpy(2)
    z = np.asarray(u) + b
    return a * a * s1(z) ** 2 - (np.asarray(y) - a * s0(z)) * a * s2(z)


def hessian_weight_m(activation, a, b, U, y):
    """Eq. (2), W (n, m, m) for width m (THEORY.md section 2) with per-neuron a_j, b_j (numbers or
    length-m sequences): W_jk = (a_j a_k/m) sigma'_j sigma'_k - 1[j = k] (y - f) a_j sigma''_j with
    f = (1/m) sum_j a_j sigma(u_j + b_j), sigma^(k)_j at u_j + b_j."""
    act = get_activation(activation) if isinstance(activation, str) else activation
    s0, s1, s2 = act.numpy(0), act.numpy(1), act.numpy(2)
    m = np.shape(U)[1]
    a, b = per_neuron(a, m), per_neuron(b, m)
    Z = np.asarray(U) + b
    r = np.asarray(y) - (a * s0(Z)).mean(axis=1)
    d1, d2 = s1(Z), s2(Z)
    W = np.einsum("i,j,ni,nj->nij", a, a, d1, d1) / m
    W[:, np.arange(m), np.arange(m)] -= (r[:, None] * a) * d2
    return W


@dataclass
class HessianSpectrum:
    """Bulk edges and hard-direction outliers of the Hessian after ``setup.steps`` GD steps,
    as mean and standard error over DMFT replicas."""

    setup: DMFTSetup
    left_edge: float
    left_edge_err: float
    right_edge: float
    right_edge_err: float
    settled: bool
    negative_indicator: float
    negative_indicator_err: float
    outliers: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    step: int = 0
    negative_indicator_clipped: float = math.nan
    negative_indicator_clipped_err: float = math.nan
    hard_z: list = field(default_factory=list)  # per replica: lowest hard outlier below 0 (nan: none)
    sectors: tuple = ()  # m -> inf: (antisymmetric, s.e., symmetric, s.e.) indicators (thresholds.meanfield)
    indicator_replicas: list = field(default_factory=list)  # per replica: the plain indicator
    clipped_replicas: list = field(default_factory=list)    # per replica: the clipped indicator
    left_edge_replicas: list = field(default_factory=list)  # per replica: the left bulk edge

    @property
    def negative_outlier(self) -> bool | None:
        """True/False when the indicator is at least 2 s.e. from 0, None when undecided."""
        if abs(self.negative_indicator) < 2 * self.negative_indicator_err:
            return None
        return self.negative_indicator > 0

    def to_json(self):
        from dataclasses import asdict
        return {"setup": asdict(self.setup), "bulk_edges": [self.left_edge, self.right_edge],
                "bulk_edges_err": [self.left_edge_err, self.right_edge_err], "settled": self.settled,
                "negative_indicator": self.negative_indicator,
                "negative_indicator_err": self.negative_indicator_err,
                "negative_indicator_clipped": self.negative_indicator_clipped,
                "negative_indicator_clipped_err": self.negative_indicator_clipped_err,
                "negative_outlier": self.negative_outlier, "outliers": self.outliers, "step": self.step,
                "hard_z_per_replica": self.hard_z,
                "notes": self.notes}


CLIP_QUANTILE = 1e-3  # tail-sensitivity check: the law of G clipped at this lower quantile


def sample_quantile(n: float) -> float:
    """The quantile q at the median of the minimum of n samples, (1 - q)^n = 1/2 (the earlier cut of eq. (5))."""
    return -math.expm1(-math.log(2.0) / n)


DATA_SETS = 4  # eq. (5): automatic DMFT paths per replica hold this many data sets of n samples (thresholds.nn)
MAX_DATA_SETS = 16  # eq. (5) uses at most this many per replica (small n under the floor of automatic paths)
TAIL_RULE = "data sets"  # eq. (5)'s rule in the cache key of a search with edge_d (thresholds.store)


def data_set_count(paths: int, n: float) -> int:
    """Eq. (5): how many data sets of n samples (n rounded) a replica of ``paths`` paths holds, at most MAX_DATA_SETS
    (0 when it has fewer than n paths)."""
    return min(paths // max(1, round(n)), MAX_DATA_SETS)


def data_sets(law: ReplicaLaw, n: float) -> list:
    """Eq. (5): a replica's paths as ``data_set_count`` disjoint data sets of n consecutive paths (n rounded), each
    with its weights renormalised; a replica of fewer than n paths is one data set of all of them."""
    N = np.shape(law.y)[0]
    size = min(max(1, round(n)), N)
    out = []
    for k in range(max(1, data_set_count(N, n))):
        part = slice(k * size, (k + 1) * size)
        w = np.asarray(law.w[part], dtype=float)
        out.append(ReplicaLaw(law.u[part], law.y[part], law.g[part], w / w.sum()))
    return out


def _clip_lower(G, w, q):
    """G clipped from below at its weighted q-quantile."""
    order = np.argsort(G)
    k = min(int(np.searchsorted(np.cumsum(w[order]), q)), G.size - 1)
    return np.maximum(G, G[order][k])


def sphere_shift(act, setup, u, y, w) -> float:
    """mu = theta^T grad R / ||theta||^2 = -E[psi u] / rho0^2: the Riemannian Hessian of R on the
    sphere ||theta|| = rho0 is the Euclidean one minus mu I (on the tangent space)."""
    s0, s1 = act.numpy(0), act.numpy(1)
    z = np.asarray(u) + setup.b
    psi = (np.asarray(y) - setup.a * s0(z)) * setup.a * s1(z)
    return float(-np.sum(np.asarray(w) * psi * np.asarray(u)) / setup.rho0**2)


@dataclass(frozen=True)
class HardOutlier:
    """A located hard outlier: eigenvalue z (Riemannian on the sphere), its side of the bulk and the
    squared overlap of its eigenvector with the hard subspace (nan where an engine does not compute it)."""

    side: str
    z: float
    overlap2: float


@dataclass(frozen=True)
class ReplicaSpectrum:
    """What every outlier engine returns for one replica's law at one step (``ENGINES``): bulk edges
    (``right_edge`` nan where not computed), the negative-outlier indicator -S(min(0, left edge)) plain
    and on the tail-clipped law, the lowest hard outlier below 0 (nan: none), the located outliers,
    and for m -> inf the (antisymmetric, symmetric) sectors' indicators (thresholds.meanfield)."""

    left_edge: float
    right_edge: float
    indicator: float
    indicator_clipped: float
    lowest_z: float
    outliers: tuple = ()
    sectors: tuple | None = None


def _one_law(act, setup, delta, u, y, g, w, outliers=True, *, plain=True, clip=True) -> ReplicaSpectrum:
    """Scalar engine (m = 1, thresholds.outlier): edges, negative indicator (plain and tail-clipped) and
    outliers of one replica's law, all for the Riemannian Hessian (shifted by -mu) on the sphere; ``plain`` /
    ``clip`` False: the plain quantities / the clipped indicator are not computed (nan)."""
    G = hessian_weight(act, setup.a, setup.b, u, y)
    M = spike_weight(g)  # g_H^2, or the r_H x r_H matrix g_H g_H^T
    w = np.asarray(w)
    mu = sphere_shift(act, setup, u, y, w) if setup.sphere else 0.0
    law = WeightLaw.from_nodes(G, w, M, description="Hessian weight")
    cind = math.nan
    if clip:
        clipped = WeightLaw.from_nodes(_clip_lower(G, w, CLIP_QUANTILE), w, M, description="clipped")
        cind = negative_indicator(clipped, delta, mu)
    if not plain:
        return ReplicaSpectrum(math.nan, math.nan, math.nan, cind, math.nan)
    if outliers:
        sp = spectrum(law, delta)
        left, right, found = sp.left, sp.right, sp.outliers
    else:
        (left, right), found = bulk_edges(law, delta), []
    z_low, ind = lowest_outlier(law, delta, mu, edges=(left, right))
    return ReplicaSpectrum(left.z - mu, right.z - mu, ind, cind, z_low - mu,
                           tuple(HardOutlier(o.side, o.z - mu, o.overlap2) for o in found))


def _clip_lower_m(W, w, q):
    """W with every eigenvalue raised to at least the weighted q-quantile of the samples'
    lowest eigenvalues (the matrix form of ``_clip_lower``)."""
    vals, vecs = np.linalg.eigh(W)
    floor = _clip_lower(vals[:, 0], w, q).min()
    return np.einsum("nij,nj,nkj->nik", vecs, np.maximum(vals, floor), vecs)


def exchangeable(setup) -> bool:
    """Whether the first-phase law of ``setup`` (width m >= 2) is invariant under relabelling the neurons: one a and
    one b for every neuron (the initial weights are iid)."""
    return setup.m >= 2 and uniform(setup.a) and uniform(setup.b)


def _one_law_m(act, setup, delta, U, y, g, w, outliers=True, *, plain=True, clip=True) -> ReplicaSpectrum:
    """Matrix engine (width m > 1, thresholds.stieltjes_m): left edge, negative indicator (plain and with
    the lowest eigenvalues of W clipped), the lowest hard outlier (located at every step, as for m = 1;
    reported with its overlap^2 only when ``outliers``).  The right edge is not computed (nan).  ``plain`` /
    ``clip`` as for the scalar engine.  With one a and one b for every neuron the law is exchangeable and the
    engine runs on its relabelling average (``exchangeable``, thresholds.stieltjes_m eqs. (7)-(8)); per-neuron
    a_j or b_j keep the full m x m equations."""
    from .stieltjes_m import MatrixLaw, left_edge, lowest_outlier as lowest_m, negative_indicator as indicator_m
    W = hessian_weight_m(act, setup.a, setup.b, U, y)
    w = np.asarray(w, dtype=float)
    h = spike_weight(g)  # r_H > 1: the (m r_H) x (m r_H) outlier matrix
    x = exchangeable(setup)
    cind = indicator_m(MatrixLaw(_clip_lower_m(W, w, CLIP_QUANTILE), h, w, x), delta)[0] if clip else math.nan
    if not plain:
        return ReplicaSpectrum(math.nan, math.nan, math.nan, cind, math.nan)
    law = MatrixLaw(W, h, w, x)
    edge = left_edge(law, delta)
    ind, _ = indicator_m(law, delta, edge)
    z_low, overlap2 = lowest_m(law, delta, edge)
    found = (HardOutlier("left", z_low, overlap2),) if outliers and np.isfinite(z_low) else ()
    return ReplicaSpectrum(edge.z, math.nan, ind, cind, z_low, found)


def _one_law_mf(act, setup, delta, U, y, g, w, outliers=True, *, plain=True, clip=True) -> ReplicaSpectrum:
    """Sector engine, the wide limit m -> inf (thresholds.meanfield), the m neurons of the law standing in
    for the population: left edge of the pooled law of D, the larger of the two sectors' indicators (plain
    and with D clipped from below at its pooled 1e-3 quantile), the lowest hard outlier of either sector,
    and the sectors' indicators.  The right edge is not computed (nan).  It computes every part (``plain`` and
    ``clip`` are accepted for the common signature)."""
    from .meanfield import PopulationLaw, lowest_outlier as lowest_mf, sectors
    if not (uniform(setup.a) and uniform(setup.b)):
        raise UnsupportedError("the m -> inf Hessian (sectors of exchangeable neurons) needs the same a and b for "
                               "every neuron; per-neuron values are covered at finite m (the m x m engine)")
    law = PopulationLaw.from_samples(act, setup.a, setup.b, U, y, g, w)
    res = sectors(law, delta)
    floor = _clip_lower(law.pooled.G, law.pooled.w, CLIP_QUANTILE).min()
    clipped = sectors(PopulationLaw(np.maximum(law.D, floor), law.v, law.h, law.w), delta)
    zs = [lowest_mf(law, delta, s, res) for s in ("antisymmetric", "symmetric")]
    z_low = min((z for z in zs if np.isfinite(z)), default=math.nan)
    found = (HardOutlier("left", z_low, math.nan),) if outliers and np.isfinite(z_low) else ()
    return ReplicaSpectrum(res.left_edge, math.nan, res.indicator, clipped.indicator, z_low, found,
                           (res.antisymmetric, res.symmetric))


# the outlier engines, one per kind of network; each maps one replica's law to a ReplicaSpectrum
ENGINES = {"scalar": _one_law, "matrix": _one_law_m, "mean_field": _one_law_mf}


def engine_name(setup: DMFTSetup, mean_field: bool = False) -> str:
    """The engine of ``ENGINES`` for a setup: m = 1 scalar, m > 1 matrix, m -> inf the sectors."""
    return "mean_field" if mean_field else "scalar" if setup.m == 1 else "matrix"


def _aggregate(setup, per_replica: list, step) -> "HessianSpectrum":
    """Mean +- s.e. over the replicas' ReplicaSpectrum records at one step."""
    left, left_se = mean_se([p.left_edge for p in per_replica])
    right, right_se = mean_se([p.right_edge for p in per_replica])
    ind, ind_se = mean_se([p.indicator for p in per_replica])
    cind, cind_se = mean_se([p.indicator_clipped for p in per_replica])
    outliers = []
    for side in ("left", "right"):
        pick = min if side == "left" else max
        best = [pick((o for o in p.outliers if o.side == side), key=lambda o: o.z) for p in per_replica
                if any(o.side == side for o in p.outliers)]
        if best:
            z, z_se = mean_se([o.z for o in best])
            o2, o2_se = mean_se([o.overlap2 for o in best])
            outliers.append({"side": side, "z": z, "z_err": z_se, "overlap2": o2, "overlap2_err": o2_se,
                             "replicas_with_outlier": len(best), "replicas": len(per_replica)})
    notes = [f"law: empirical law of {setup.paths // setup.replicas} DMFT paths per replica, "
             f"{setup.replicas} replicas (mean +- s.e.), after {step} steps"]
    if setup.sphere:
        notes.append("spherical GD: Riemannian Hessian on the sphere (Euclidean spectrum minus theta^T grad R / rho0^2)")
    settled = left >= -2 * left_se
    if not settled:
        notes.append("left bulk edge below 0: negative curvature at this step (not a threshold); with an unbounded "
                     "G it is set by the unfitted large-y samples and stays below 0 after the first phase has "
                     "stopped moving (validation/reports/settle)")
    sectors = ()
    if all(p.sectors is not None for p in per_replica):  # m -> inf: (antisymmetric, symmetric) indicators
        sectors = tuple(v for k in range(2) for v in mean_se([p.sectors[k] for p in per_replica]))
    return HessianSpectrum(setup, left, left_se, right, right_se, settled, ind, ind_se, outliers, notes,
                           step=step, negative_indicator_clipped=cind, negative_indicator_clipped_err=cind_se,
                           hard_z=[p.lowest_z for p in per_replica], sectors=sectors,
                           indicator_replicas=[p.indicator for p in per_replica],
                           clipped_replicas=[p.indicator_clipped for p in per_replica],
                           left_edge_replicas=[p.left_edge for p in per_replica])


def check_supported(setup: DMFTSetup):
    """The activation, once the setup is known to be covered by the Hessian engines: sigma'' defined, m = 1 for spherical GD,
    and a hard subspace the outlier equation covers (``hard_dimension``; easy directions enter
    through the law of u)."""
    if setup.m != 1 and setup.sphere:
        raise UnsupportedError("the Hessian of spherical GD covers m = 1 (for m > 1 the Riemannian "
                               "shift differs per neuron)")
    hard_dimension(setup.link, setup.m)
    act = get_activation(setup.activation)
    act.derivative(2)  # NotDifferentiableError for relu-like activations, before any computation
    return act


def hard_dimension(link, m: int = 1) -> int:
    """r_H of the link; UnsupportedError when it is 0 (delta_NN is the threshold of the hard
    subspace: with none there is nothing to find).  Any r_H with any m: the outlier matrix is
    (m r_H) x (m r_H) (thresholds.stieltjes_m; r_H x r_H for m = 1)."""
    from .alg import latent_split
    from .catalog import get_link
    link = get_link(link) if isinstance(link, str) else link
    r_h = latent_split(link).hard.shape[0]
    if r_h == 0:
        raise UnsupportedError(f"link {link.name!r} has no hard direction (every direction is learned in "
                               "the first phase): delta_NN is not defined")
    return r_h


def hessian_spectra(setup: DMFTSetup, *, cache: bool = True, progress=None, outliers: str = "final",
                    edge_d: int = 0) -> dict:
    """Hessian spectra at every DMFT checkpoint (``thresholds.dmft.checkpoints``): step -> HessianSpectrum.
    The outliers themselves (a grid search in alpha, the costly part) are located at the
    ``"final"`` step only, at ``"all"`` steps or at ``"none"``; edges and the negative-outlier
    indicator are computed at every step.  ``edge_d`` > 0: the plain quantities are those of data sets of
    n = delta edge_d samples (eq. (5))."""
    check_supported(setup)
    res = solve_dmft(setup, cache=cache, progress=progress)
    return spectra_of_law(setup, dmft_law(res), outliers=outliers, edge_d=edge_d)


def spectra_of_law(setup: DMFTSetup, law: FirstPhaseLaw, *, outliers: str = "final",
                   mean_field: bool = False, edge_d: int = 0) -> dict:
    """step -> HessianSpectrum from a first-phase law (thresholds.laws: the DMFT paths, a finite-d
    sample, ...) with the replicas of every step; ``outliers`` as in :func:`hessian_spectra`;
    ``mean_field``: the m -> inf sector equations on a law of width m >= 2 (``_one_law_mf``);
    ``edge_d`` > 0: the plain quantities are the means over data sets of n = delta edge_d paths (eq. (5))."""
    act = check_supported(setup)
    if edge_d and mean_field:
        raise UnsupportedError("the m -> inf Hessian runs on a finite-d law, whose left tail is that of its own "
                               "samples: data sets of n samples (eq. (5)) apply to the DMFT law")
    note = law.note
    if note is not None and mean_field:
        note += f"; m -> inf Hessian on the law of width {setup.m}"
    tail_n = setup.delta * edge_d if edge_d else None
    one = ENGINES[engine_name(setup, mean_field)]
    out = {}
    for step in sorted(law.steps):
        want = outliers == "all" or (outliers == "final" and step == setup.steps)
        if tail_n is None:
            per = [one(act, setup, setup.delta, r.u, r.y, r.g, r.w, want) for r in law.steps[step]]
        else:
            per = [_over_data_sets(one, act, setup, r, want, tail_n) for r in law.steps[step]]
        out[step] = _aggregate(setup, per, step)
        if note:
            out[step].notes[0] = note + f", after {step} steps"
        if tail_n is not None:
            out[step].notes.append(_tail_note(tail_n, edge_d, min(np.shape(r.y)[0] for r in law.steps[step])))
    return out


def _over_data_sets(one, act, setup, r: ReplicaLaw, outliers: bool, n: float) -> ReplicaSpectrum:
    """Eq. (5) for one replica: the plain quantities averaged over its data sets of n paths (the located outliers
    are those of the first data set), the clipped indicator from all its paths."""
    sets = [one(act, setup, setup.delta, s.u, s.y, s.g, s.w, outliers and k == 0, clip=False)
            for k, s in enumerate(data_sets(r, n))]
    full = one(act, setup, setup.delta, r.u, r.y, r.g, r.w, False, plain=False)
    z = [p.lowest_z for p in sets if np.isfinite(p.lowest_z)]
    return ReplicaSpectrum(float(np.mean([p.left_edge for p in sets])), float(np.mean([p.right_edge for p in sets])),
                           float(np.mean([p.indicator for p in sets])), full.indicator_clipped,
                           float(np.mean(z)) if z else math.nan, sets[0].outliers)


def _tail_note(n: float, edge_d: int, paths: int) -> str:
    """What eq. (5) did at one step: how many data sets of n paths the replicas held."""
    k = data_set_count(paths, n)
    if k == 0:
        return (f"plain law: one data set of {paths} paths per replica, fewer than the n = {n:.0f} samples of a data "
                f"set at d = {edge_d} (eq. (5) of thresholds.hessian): its left tail is that of {paths} samples "
                "(use more paths)")
    return (f"plain law: the mean over data sets of n = {n:.0f} paths ({k} per replica at least), each a data set at "
            f"d = {edge_d} from the d = inf law (eq. (5) of thresholds.hessian)")


def hessian_spectrum(setup: DMFTSetup, *, cache: bool = True, progress=None) -> HessianSpectrum:
    """Hessian spectrum after the first phase described by ``setup`` (DMFT run, cached)."""
    return hessian_spectra(setup, cache=cache, progress=progress)[setup.steps]

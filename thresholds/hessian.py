"""Hessian of the empirical risk at the point reached by the first phase of GD
(THEORY sections 2 and 4, m = 1): the building block of delta_NN.

With u = theta^T x and the DMFT law of (u^t, y, g) at step t, the scaled
Hessian H = Hess R (m = 1) is the spiked matrix (1/n) sum_i G_i x_i x_i^T with

    G = a^2 sigma'(u + b)^2 - (y - a sigma(u + b)) a sigma''(u + b)   (= -psi'(u, y)),

and M = g_H^2 for the hard direction (g_H the hard coordinate; easy directions enter through
the law of u, THEORY section 1).  Its bulk and its
outliers along theta_* come from the spectral engine (thresholds.outlier).

Treatment of an unbounded G: the law used is the empirical law of the DMFT
paths of each replica.  When G is unbounded below in the exact law (e.g.
y = g^2 with sigma'' != 0, where G ~ -y a sigma''), the sample minimum, and
with it the computed left edge, moves down as the number of paths grows; the
spread over replicas (each with paths/replicas paths) is reported, and a
left edge below 0 is reported as "not settled" (negative curvature in bulk
directions: the first phase has not reached a local minimum), never as a
threshold.  The hard-outlier indicator -S(min(0, left edge)) is also
recomputed on the law clipped from below at its 1e-3 quantile (a finite-n
truncation of the tail); the two agree when the extreme paths do not drive
the answer, and delta_NN reports the threshold under both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .catalog import get_activation
from .dmft import DMFTSetup, solve_dmft
from .errors import DivergenceError, UnsupportedError
from .outlier import _negative_indicator, lowest_outlier, spectrum
from .stieltjes import WeightLaw, bulk_edges, spike_weight


def hessian_weight(activation, a: float, b: float, u, y):
    """G = a^2 sigma'(u+b)^2 - (y - a sigma(u+b)) a sigma''(u+b) (needs sigma'')."""
    act = get_activation(activation) if isinstance(activation, str) else activation
    s0, s1, s2 = act.numpy(0), act.numpy(1), act.numpy(2)
    z = np.asarray(u) + b
    return a * a * s1(z) ** 2 - (np.asarray(y) - a * s0(z)) * a * s2(z)


def hessian_weight_m(activation, a: float, b: float, U, y):
    """W (n, m, m) of THEORY section 2 for width m: W_jk = (a^2/m) sigma'_j sigma'_k
    - 1[j = k] (y - f) a sigma''_j with f = (a/m) sum_j sigma(u_j + b)."""
    act = get_activation(activation) if isinstance(activation, str) else activation
    s0, s1, s2 = act.numpy(0), act.numpy(1), act.numpy(2)
    Z = np.asarray(U) + b
    m = Z.shape[1]
    r = np.asarray(y) - a * s0(Z).mean(axis=1)
    d1, d2 = s1(Z), s2(Z)
    W = (a * a / m) * np.einsum("ni,nj->nij", d1, d1)
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


def _mean_se(values):
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
    return float(v.mean()), float(se)


CLIP_QUANTILE = 1e-3  # tail-sensitivity check: the law of G clipped at this lower quantile


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


def _one_law(act, setup, delta, u, y, g, w, outliers=True):
    """Edges, negative indicator (plain and tail-clipped) and outliers of one replica's law,
    all for the Riemannian Hessian (shifted by -mu) when GD runs on the sphere."""
    G = hessian_weight(act, setup.a, setup.b, u, y)
    M = spike_weight(g)  # g_H^2, or the r_H x r_H matrix g_H g_H^T
    mu = sphere_shift(act, setup, u, y, w) if setup.sphere else 0.0
    law = WeightLaw.from_nodes(G, w, M, description="Hessian weight")
    if outliers:
        sp = spectrum(law, delta)
        left, right, found = sp.left, sp.right, sp.outliers
    else:
        (left, right), found = bulk_edges(law, delta), []
    clipped = WeightLaw.from_nodes(_clip_lower(G, np.asarray(w), CLIP_QUANTILE), w, M, description="clipped")
    for o in found:
        o.z -= mu
    z_low, ind = lowest_outlier(law, delta, mu, edges=(left, right))
    return (left.z - mu, right.z - mu, ind, _negative_indicator(clipped, delta, mu), found, z_low - mu)


def _clip_lower_m(W, w, q):
    """W with every eigenvalue raised to at least the weighted q-quantile of the samples'
    lowest eigenvalues (the matrix form of ``_clip_lower``)."""
    vals, vecs = np.linalg.eigh(W)
    floor = _clip_lower(vals[:, 0], w, q).min()
    return np.einsum("nij,nj,nkj->nik", vecs, np.maximum(vals, floor), vecs)


def _one_law_m(act, setup, delta, U, y, g, w, outliers=True):
    """``_one_law`` for width m > 1 with the m x m engine (thresholds.stieltjes_m): left edge,
    negative indicator (plain and with the lowest eigenvalues of W clipped), the lowest hard
    outlier (located at every step, as for m = 1; its overlap^2 only when ``outliers``).
    The right edge is not computed (nan)."""
    from types import SimpleNamespace

    from .stieltjes_m import MatrixLaw, left_edge, lowest_outlier as lowest_m, negative_indicator
    W = hessian_weight_m(act, setup.a, setup.b, U, y)
    w = np.asarray(w, dtype=float)
    h = spike_weight(g)  # r_H > 1: the (m r_H) x (m r_H) outlier matrix
    law = MatrixLaw(W, h, w)
    edge = left_edge(law, delta)
    ind, _ = negative_indicator(law, delta, edge)
    clipped = MatrixLaw(_clip_lower_m(W, w, CLIP_QUANTILE), h, w)
    cind, _ = negative_indicator(clipped, delta)
    z_low, overlap2 = lowest_m(law, delta, edge)
    found = [SimpleNamespace(side="left", z=z_low, overlap2=overlap2)] if outliers and np.isfinite(z_low) else []
    return (edge.z, math.nan, ind, cind, found, z_low)


def _one_law_mf(act, setup, delta, U, y, g, w, outliers=True):
    """``_one_law`` in the wide limit m -> inf (thresholds.meanfield), the m neurons of the law standing in
    for the population: left edge of the pooled law of D, the larger of the two sectors' indicators (plain
    and with D clipped from below at its pooled 1e-3 quantile), the lowest hard outlier of either sector,
    and the sectors' indicators (antisymmetric, symmetric) as a 7th entry.  The right edge is not computed."""
    from types import SimpleNamespace

    from .meanfield import PopulationLaw, lowest_outlier as lowest_mf, sectors
    law = PopulationLaw.from_samples(act, setup.a, setup.b, U, y, g, w)
    res = sectors(law, delta)
    floor = _clip_lower(law.pooled.G, law.pooled.w, CLIP_QUANTILE).min()
    clipped = sectors(PopulationLaw(np.maximum(law.D, floor), law.v, law.h, law.w), delta)
    zs = [lowest_mf(law, delta, s, res) for s in ("antisymmetric", "symmetric")]
    z_low = min((z for z in zs if np.isfinite(z)), default=math.nan)
    found = [SimpleNamespace(side="left", z=z_low, overlap2=math.nan)] if outliers and np.isfinite(z_low) else []
    return (res.left_edge, math.nan, res.indicator, clipped.indicator, found, z_low,
            (res.antisymmetric, res.symmetric))


def _aggregate(setup, per_replica, step) -> "HessianSpectrum":
    lefts, rights, indicators, clipped, found, z_low = zip(*(p[:6] for p in per_replica))
    left, left_se = _mean_se(lefts)
    right, right_se = _mean_se(rights)
    ind, ind_se = _mean_se(indicators)
    cind, cind_se = _mean_se(clipped)
    outliers = []
    for side in ("left", "right"):
        pick = min if side == "left" else max
        best = [pick((o for o in f if o.side == side), key=lambda o: o.z) for f in found
                if any(o.side == side for o in f)]
        if best:
            z, z_se = _mean_se([o.z for o in best])
            o2, o2_se = _mean_se([o.overlap2 for o in best])
            outliers.append({"side": side, "z": z, "z_err": z_se, "overlap2": o2, "overlap2_err": o2_se,
                             "replicas_with_outlier": len(best), "replicas": len(found)})
    notes = [f"law: empirical law of {setup.paths // setup.replicas} DMFT paths per replica, "
             f"{setup.replicas} replicas (mean +- s.e.), after {step} steps"]
    if setup.sphere:
        notes.append("spherical GD: Riemannian Hessian on the sphere (Euclidean spectrum minus theta^T grad R / rho0^2)")
    settled = left >= -2 * left_se
    if not settled:
        notes.append("left bulk edge below 0: negative curvature in bulk directions, the first phase has not "
                     "settled at this step (not a threshold)")
    sectors = ()
    if all(len(p) > 6 for p in per_replica):  # m -> inf: (antisymmetric, symmetric) indicators
        sectors = tuple(v for k in range(2) for v in _mean_se([p[6][k] for p in per_replica]))
    return HessianSpectrum(setup, left, left_se, right, right_se, settled, ind, ind_se, outliers, notes,
                           step=step, negative_indicator_clipped=cind, negative_indicator_clipped_err=cind_se,
                           hard_z=list(z_low), sectors=sectors)


def _hessian_activation(setup: DMFTSetup):
    """The activation, once the setup is known to be covered: sigma'' defined, m = 1 with --sphere,
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


def hessian_spectra(setup: DMFTSetup, *, cache: bool = True, progress=None, outliers: str = "final") -> dict:
    """Hessian spectra at every DMFT checkpoint (``thresholds.dmft.checkpoints``): step -> HessianSpectrum.
    The outliers themselves (a grid search in alpha, the costly part) are located at the
    ``"final"`` step only, at ``"all"`` steps or at ``"none"``; edges and the negative-outlier
    indicator are computed at every step."""
    act = _hessian_activation(setup)
    res = solve_dmft(setup, cache=cache, progress=progress)
    laws = res.replica_laws
    snaps = res.snapshots or {setup.steps: [law[0] for law in laws]}
    return _spectra(act, setup, {step: [(u, y, g, w) for u, (_, y, g, w) in zip(us, laws)]
                                 for step, us in snaps.items()}, outliers)


def _spectra(act, setup, laws_by_step, outliers, law_note=None, mean_field=False) -> dict:
    """step -> HessianSpectrum from the per-replica laws [(u, y, g, w)] of every step; ``mean_field``: the
    m -> inf sector equations on a law of width m >= 2 (``_one_law_mf``)."""
    out = {}
    for step in sorted(laws_by_step):
        want = outliers == "all" or (outliers == "final" and step == setup.steps)
        one = _one_law_mf if mean_field else _one_law if setup.m == 1 else _one_law_m
        per = [one(act, setup, setup.delta, u, y, g, w, want) for u, y, g, w in laws_by_step[step]]
        out[step] = _aggregate(setup, per, step)
        if law_note:
            out[step].notes[0] = law_note + f", after {step} steps"
    return out


def hessian_spectra_gd(setup: DMFTSetup, d: int, *, outliers: str = "final", progress=None,
                       dtype: str = "float64", final_only: bool = False, mean_field: bool = False) -> dict:
    """The same spectra with the law of (u, y, g_H) taken from finite-d GD restricted to the
    complement of the hard direction (THEORY section 3, the cross-check that needs no long DMFT):
    ``setup.replicas`` independent seeds at dimension ``d`` play the part of the replicas,
    each contributing its n = delta d training samples at every checkpoint; the d = inf
    spectral equations of section 4 are then applied to that empirical law.  ``dtype`` is the
    storage of the simulator's data and weights (its sums are float64 either way).  With
    ``final_only`` the spectrum is computed at the last step only (not at every checkpoint).  With
    ``mean_field`` the Hessian is that of the wide limit m -> inf (thresholds.meanfield), the setup's m
    neurons standing in for the population."""
    from validation.simulate import GDSetup, run_gd

    from .catalog import get_link
    from .dmft import checkpoints
    from .alg import latent_split
    act = _hessian_activation(setup)
    link = get_link(setup.link)
    hard = latent_split(link).hard  # rows; the latent coordinates are the first k axes of the simulator
    steps = [setup.steps] if final_only else checkpoints(setup.steps)
    laws = {s: [] for s in steps}
    for r in range(setup.replicas):
        try:
            run = run_gd(GDSetup(setup.activation, setup.link, setup.delta, d, setup.eta, setup.steps,
                                 a=setup.a, b=setup.b, rho0=setup.rho0, weight_decay=setup.weight_decay,
                                 m=setup.m, complement=True, sphere=setup.sphere, seed=1000 * setup.seed + r,
                                 n_test=200, test_loss=False, dtype=dtype),
                         snapshots=steps, progress=(lambda t, r=r: progress(r * (setup.steps + 1) + t + 1,
                                                                             setup.replicas * (setup.steps + 1)))
                         if progress else None)
        except FloatingPointError as exc:
            raise DivergenceError(f"finite-d GD diverged ({exc}) at delta = {setup.delta:g}, eta = {setup.eta:g}") \
                from None
        X, y = run.data
        y = y.astype(float)
        g = X[:, : link.k].astype(float) @ hard.T
        g = g[:, 0] if g.shape[1] == 1 else g
        w = np.full(y.size, 1.0 / y.size)
        for s in steps:
            u = run.snapshots[s].astype(float)
            laws[s].append((u[:, 0] if setup.m == 1 else u, y, g, w))
    return _spectra(act, setup, laws, outliers, f"law: empirical law of finite-d GD restricted to the "
                    f"complement, d = {d}, {setup.replicas} seeds, {dtype} data (mean +- s.e.)"
                    + (f"; m -> inf Hessian on the law of width {setup.m}" if mean_field else ""), mean_field)


def hessian_spectrum(setup: DMFTSetup, *, cache: bool = True, progress=None) -> HessianSpectrum:
    """Hessian spectrum after the first phase described by ``setup`` (DMFT run, cached)."""
    return hessian_spectra(setup, cache=cache, progress=progress)[setup.steps]

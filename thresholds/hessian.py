"""Hessian of the empirical risk at the point reached by the first phase of GD
(THEORY sections 2 and 4, m = 1): the building block of delta_NN.

With u = theta^T x and the DMFT law of (u^t, y, g) at step t, the scaled
Hessian H = Hess R (m = 1) is the spiked matrix (1/n) sum_i G_i x_i x_i^T with

    G = a^2 sigma'(u + b)^2 - (y - a sigma(u + b)) a sigma''(u + b)   (= -psi'(u, y)),

and M = g^2 for the hard direction (single index).  Its bulk and its
outliers along theta_* come from the spectral engine (thresholds.outlier).

Treatment of an unbounded G: the law used is the empirical law of the DMFT
paths of each replica.  When G is unbounded below in the exact law (e.g.
y = g^2 with sigma'' != 0, where G ~ -y a sigma''), the sample minimum, and
with it the computed left edge, moves down as the number of paths grows; the
spread over replicas (each with paths/replicas paths) is reported, and a
left edge below 0 is reported as "not settled" (negative curvature in bulk
directions: the first phase has not reached a local minimum), never as a
threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .catalog import get_activation
from .dmft import DMFTSetup, solve_dmft
from .outlier import _negative_indicator, spectrum
from .stieltjes import WeightLaw


def hessian_weight(activation, a: float, b: float, u, y):
    """G = a^2 sigma'(u+b)^2 - (y - a sigma(u+b)) a sigma''(u+b) (needs sigma'')."""
    act = get_activation(activation) if isinstance(activation, str) else activation
    s0, s1, s2 = act.numpy(0), act.numpy(1), act.numpy(2)
    z = np.asarray(u) + b
    return a * a * s1(z) ** 2 - (np.asarray(y) - a * s0(z)) * a * s2(z)


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
                "negative_outlier": self.negative_outlier, "outliers": self.outliers, "notes": self.notes}


def _mean_se(values):
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
    return float(v.mean()), float(se)


def hessian_spectrum(setup: DMFTSetup, *, cache: bool = True, progress=None) -> HessianSpectrum:
    """Hessian spectrum after the first phase described by ``setup`` (DMFT run, cached)."""
    act = get_activation(setup.activation)
    act.derivative(2)  # NotDifferentiableError for relu-like activations, before any computation
    res = solve_dmft(setup, cache=cache, progress=progress)
    lefts, rights, indicators, found = [], [], [], []
    for u, y, g, w in res.replica_laws:
        G = hessian_weight(act, setup.a, setup.b, u, y)
        law = WeightLaw.from_nodes(G, w, np.asarray(g) ** 2, description="Hessian weight")
        sp = spectrum(law, setup.delta)
        lefts.append(sp.left.z)
        rights.append(sp.right.z)
        indicators.append(_negative_indicator(law, setup.delta))
        found.append(sp.outliers)
    left, left_se = _mean_se(lefts)
    right, right_se = _mean_se(rights)
    ind, ind_se = _mean_se(indicators)
    outliers = []
    for side in ("left", "right"):
        per = [[o for o in f if o.side == side] for f in found]
        count = sum(1 for p in per if p)
        if count:
            zs = [min(p, key=lambda o: o.z).z if side == "left" else max(p, key=lambda o: o.z).z for p in per if p]
            ov = [min(p, key=lambda o: o.z).overlap2 if side == "left" else max(p, key=lambda o: o.z).overlap2
                  for p in per if p]
            z, z_se = _mean_se(zs)
            o2, o2_se = _mean_se(ov)
            outliers.append({"side": side, "z": z, "z_err": z_se, "overlap2": o2, "overlap2_err": o2_se,
                             "replicas_with_outlier": count, "replicas": len(per)})
    notes = [f"law: empirical law of {setup.paths // setup.replicas} DMFT paths per replica, "
             f"{setup.replicas} replicas (mean +- s.e.)"]
    settled = left >= -2 * left_se
    if not settled:
        notes.append("left bulk edge below 0: negative curvature in bulk directions, the first phase has not "
                     "settled at this step (not a threshold)")
    return HessianSpectrum(setup, left, left_se, right, right_se, settled, ind, ind_se, outliers, notes)

"""Escape from the first phase (grokking) and the finite-d thresholds it implies.

While the Hessian has a negative hard outlier z*(t), the hard component of theta grows by
(1 - eta z*(t)) per step from an overlap of order d^{-1/2} (linearization around the first-phase
trajectory; the O(1) constant in front of d^{-1/2} is set to 1; THEORY.md section 5).  With z*(t)
at the checkpoints t_k (piecewise constant in between, no growth without an outlier) the log-growth is

    L(t_k) = sum_{j <= k} (t_j - t_{j-1}) log(1 - eta z*(t_j)),                          (1)

and GD escapes at the first t with

    L(t) = log sqrt(d);  with a stable outlier z* at the horizon t_1:
    t_esc(d) = t_1 + log(sqrt d) / log(1 - eta z*).                                     (2)

The same L gives a finite-d threshold: the smallest delta with L(T) >= log sqrt(d),          (3)
which tends to delta_NN as d -> inf and is what a simulation at that d measures.

Eq. (2) and the "escape at every d" of eq. (3) take the outlier at the horizon to stay.  That holds where the
first phase settles at a positive loss; where it still interpolates at T (thresholds.evaluation eq. (5)), the
outlier shrinks with the residuals after T (quad, eta 0.05, m = 8 and 16, delta <= 2: like the train loss to the
power 0.7, validation.settled_hessian), the growth past T is bounded and GD does not escape as d -> inf.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from .crossing import first_crossing
from .errors import UnsupportedError
from .evaluation import evaluate, first_phase, interpolating
from .nn import Evaluation, NNResult, NNSetup


def growth(ev: Evaluation, eta: float):
    """Cumulative log-growth of the hard component through the first phase, per checkpoint:
    L(t_k) = sum_{j <= k} (t_j - t_{j-1}) log(1 - eta z*(t_j)) over the checkpoints with a
    negative hard outlier z*(t_j) (piecewise constant in between; no growth without one).
    Returns (steps, mean L, s.e. of L) over the replicas."""
    z = np.asarray(ev.hard_z, dtype=float)                     # (checkpoints, replicas)
    rate = np.where(np.isfinite(z) & (z < 0), np.log1p(-eta * np.where(np.isfinite(z), z, 0.0)), 0.0)
    widths = np.diff(np.concatenate([[0], ev.steps]))[:, None]
    L = np.cumsum(widths * rate, axis=0)
    se = L.std(axis=1, ddof=1) / math.sqrt(L.shape[1]) if L.shape[1] > 1 else np.zeros(L.shape[0])
    return list(ev.steps), L.mean(axis=1), se


def stays(ev: Evaluation) -> bool:
    """Whether the outlier at the horizon keeps growing the hard component after it (eq. (2)): a negative hard
    outlier at T (indicator > 0) on a first phase that no longer interpolates (thresholds.evaluation.interpolating)."""
    return ev.indicator[-1] > 0 and not interpolating(ev)


def finite_d(result: NNResult, dims) -> list:
    """Eq. (3) per d: the smallest delta at which the linearized growth of the hard component through the
    first phase, exp(L(T)), reaches sqrt(d) (an outlier that stays past the horizon, :func:`stays`, keeps
    growing: escape at every d; one on a first phase still interpolating counts its growth up to T only), as
    crossing records in JSON form with the d."""
    eta = result.setup.eta
    evs = sorted(result.evaluations, key=lambda e: e.delta)
    curves = [(e.delta, growth(e, eta), stays(e)) for e in evs]
    out = []
    for d in dims:
        target = 0.5 * math.log(d)
        vals = [(delta, max(float(L[-1]) - target, 1e-9) if alive else float(L[-1]) - target, float(se[-1]))
                for delta, (_, L, se), alive in curves]
        out.append({"d": int(d), **first_crossing(vals).to_json()})
    return out


def escape_times(setup: NNSetup, delta: float, dims, *, cache: bool = True, progress=None,
                 law_source=None) -> dict:
    """Predicted escape (grokking) step for each d (module docstring), with the DMFT
    train/test loss curves of the first phase; ``law_source`` as in :func:`evaluate`."""
    if setup.mean_field:
        raise UnsupportedError("grok covers finite widths (its loss curves come from the DMFT, whose m -> inf "
                               "limit is not built); use a finite width")
    ev = evaluate(setup, delta, cache=cache, progress=progress, outliers="final", law_source=law_source)
    res = first_phase(setup, delta, cache=cache).result   # the run evaluate read (evaluation eq. (4))
    i = ev.at(int(setup.steps))
    z, z_err = ev.outlier_z[i], ev.outlier_z_err[i]
    out = {"delta": float(delta), "setup": asdict(setup), "outlier_z": z, "outlier_z_err": z_err,
           "overlap2": ev.overlap2[i], "left_edge": ev.left_edge[i],
           "curves": {"t": res.t.tolist(), "train_loss": res.train_loss.tolist(),
                      "train_loss_err": res.train_loss_err.tolist(), "test_loss": res.test_loss.tolist(),
                      "test_loss_err": res.test_loss_err.tolist()}}
    steps, L, L_se = growth(ev, setup.eta)
    out["growth"] = {"steps": steps, "log_growth": L.tolist(), "log_growth_err": L_se.tolist()}
    if not L[-1] > 0 and not (math.isfinite(z) and z < 0):
        out["escape"] = None
        out["note"] = "no negative hard outlier during the first phase: GD does not escape (delta <= delta_NN(t))"
        return out
    rows = []
    widths = np.diff(np.concatenate([[0], steps]))
    for d in dims:
        target = 0.5 * math.log(d)
        row = {"d": int(d), "steps": None, "steps_err": None}
        for k, step in enumerate(steps):
            if L[k] >= target:
                prev = L[k - 1] if k else 0.0
                rate = (L[k] - prev) / widths[k]
                row["steps"] = float(step - (L[k] - target) / rate)
                row["steps_err"] = float(L_se[k] / rate)
                break
        else:
            if math.isfinite(z) and z < 0 and not interpolating(ev):  # still growing at T: extrapolate at the last rate
                row = escape_steps(steps[-1], z, z_err, setup.eta, [d])[0]
                row["steps"] -= (L[-1] / math.log1p(-setup.eta * z))
                row["note"] = "extrapolated beyond the horizon at the final outlier"
            elif math.isfinite(z) and z < 0:
                row["note"] = (f"the first phase still interpolates at the horizon (train loss ~ "
                               f"t^-{ev.loss_decay:.2f}, thresholds.evaluation eq. (5)): its outlier shrinks with the "
                               "residuals, so no escape time past the horizon is predicted")
            else:
                row["note"] = "the outlier disappears before the overlap reaches O(1): no escape at this d"
        rows.append(row)
    out["escape"] = {"rows": rows, "model": "hard overlap d^{-1/2} exp(L(t)), escape at L(t) = log sqrt(d)"}
    return out


def escape_steps(t1, z, z_err, eta, dims) -> list:
    """t_esc(d) = t1 + log(sqrt d) / log(1 - eta z) for an outlier z < 0 (s.e. z_err), per d."""
    rate = math.log1p(-eta * z)
    drate = eta * z_err / (1 - eta * z)
    rows = []
    for d in dims:
        grow = 0.5 * math.log(d) / rate
        rows.append({"d": int(d), "steps": t1 + grow, "steps_err": grow * drate / rate})
    return rows

"""The Hessian indicators of one setup at one delta, at every checkpoint of the first phase.

For a delta, the first-phase law of (u, y, g_H) (thresholds.laws: the DMFT paths, or a law source
such as the finite-d GD law of the validation layer) gives at each checkpoint t the Hessian spectrum
(thresholds.hessian), summarised as an :class:`thresholds.nn.Evaluation`:

    I_t(delta) = -S(alpha at min(0, left bulk edge)),  plain and on the tail-clipped law,   (1)
    z*(t) = lowest negative hard outlier per replica (nan: none),                          (2)

with means and standard errors over the replicas (thresholds.numbers.mean_se).  Evaluations of the
finite-d law are cached (thresholds.store.evaluation_key); the DMFT run itself is cached by
thresholds.dmft.

Replicas in a period-2 orbit.  A DMFT replica whose first phase ends in a period-2 orbit (thresholds.dmft
eq. (10)) is not at a settled state: its checkpoints alternate between the orbit's two points, and its
indicator with them (quad, m = 16, eta 0.05, delta 1.70: -0.043 at odd checkpoints, -0.596 at even ones, while
the two settled replicas sit at +0.0005 and +0.0007 at the horizon).  The orbit is that of one path with a label
above the stability limit of its own step (thresholds.dmft eq. (10b)); GD draws such a sample once n P(y > y_c)
is of order one (there: settled at d <= 3200, orbiting at d = 6400 in 2 data sets of 3), so eq. (3) is the Hessian
that GD at the dimensions without such a sample settles to.  Clipping G (the clipped indicator) does not undo an
orbit: the flipping sample displaces Theta itself (delta 1.6: clipped -0.025 / -0.069 on the two orbiting
replicas, +0.0003 on the settled one).  The
evaluation keeps every replica's values (``indicator_replicas``, ``clipped_replicas``, ``left_edge_replicas``,
``hard_z``) but states its summaries on the settled ones,

    I_t, the clipped I_t, the left bulk edge (each with its s.e.) and z*(t)
        = means over the replicas r not in ``period_two``,                                                   (3)

unless every replica is in an orbit (then over all of them: there is no settled one to prefer).  The
crossing's jackknife (thresholds.crossing eq. (4)) leaves the same replicas out.
"""

from __future__ import annotations

import math

import numpy as np

from . import cache as _disk
from .dmft import checkpoints, self_interaction, solve_dmft
from .errors import UnsupportedError
from .hessian import check_supported, spectra_of_law
from .laws import FirstPhaseLaw, dmft_law
from .nn import Evaluation, NNSetup
from .numbers import mean_se
from .store import carries_replicas, evaluation_key


def evaluate(setup: NNSetup, delta: float, *, cache: bool = True, progress=None,
             outliers: str = "none", final_only: bool = False, law_source=None) -> Evaluation:
    """Eqs. (1)-(2) at every checkpoint for one delta (one DMFT run or one set of GD runs); the outlier
    positions (``outlier_z``, nan where not located) at the steps ``outliers`` asks for.  ``final_only``:
    the indicators at the last step only.  ``law_source`` (thresholds.laws) supplies the
    first-phase law when ``setup.law`` is not "dmft" (the validation layer's ``validation.gd_law.nn_law``
    for "gd")."""
    if setup.law == "dmft":
        dmft_setup = setup.dmft(delta)
        check_supported(dmft_setup)   # before the DMFT run
        res = solve_dmft(dmft_setup, cache=cache, progress=progress)
        law = dmft_law(res)
        if final_only:   # the Hessian at the horizon only (1/16 of its cost)
            law = FirstPhaseLaw({setup.steps: law.steps[setup.steps]}, law.note)
        ev = from_spectra(delta, spectra_of_law(dmft_setup, law, outliers=outliers, edge_d=setup.edge_d))
        ev.period_two = res.period_two   # thresholds.dmft eq. (10)
        ev.self_interaction = self_interaction(dmft_setup, dmft_setup.paths // dmft_setup.replicas, res.sources)
        return settled(ev)
    if law_source is None:
        raise UnsupportedError(f"the {setup.law!r} law of the first phase is supplied by the caller: pass "
                               "law_source (validation.gd_law.nn_law for finite-d GD), or use law = 'dmft'")
    key = evaluation_key(setup, delta, outliers, final_only)
    hit = _disk.load("nn-eval", key, expect=Evaluation) if cache else None
    if hit is not None and carries_replicas(hit):
        return hit
    dmft_setup = setup.dmft(delta)
    check_supported(dmft_setup)
    law = law_source(setup, delta, [setup.steps] if final_only else checkpoints(setup.steps), progress=progress)
    ev = from_spectra(delta, spectra_of_law(dmft_setup, law, outliers=outliers, mean_field=setup.mean_field))
    if cache:
        _disk.store("nn-eval", key, ev)
    return ev


def from_spectra(delta: float, spectra: dict) -> Evaluation:
    """The Evaluation of ``step -> HessianSpectrum`` at one delta."""
    steps = sorted(spectra)
    ev = Evaluation(float(delta), steps, [], [], [], [], [], [], [], [], [])
    for s in steps:
        h = spectra[s]
        ev.indicator.append(h.negative_indicator)
        ev.indicator_err.append(h.negative_indicator_err)
        ev.clipped.append(h.negative_indicator_clipped)
        ev.clipped_err.append(h.negative_indicator_clipped_err)
        ev.left_edge.append(h.left_edge)
        ev.left_edge_err.append(h.left_edge_err)
        left = [o for o in h.outliers if o["side"] == "left" and o["z"] < 0]
        z, z_err = _lowest_outlier(h.hard_z)
        ev.outlier_z.append(z)
        ev.outlier_z_err.append(z_err)
        ev.overlap2.append(left[0]["overlap2"] if left else math.nan)
        ev.hard_z.append([float(v) for v in h.hard_z])
        ev.indicator_replicas.append([float(v) for v in h.indicator_replicas])
        ev.clipped_replicas.append([float(v) for v in h.clipped_replicas])
        ev.left_edge_replicas.append([float(v) for v in h.left_edge_replicas])
        if h.sectors:
            ev.sectors += (tuple(float(v) for v in h.sectors),)
    return ev


def _lowest_outlier(hard_z) -> tuple[float, float]:
    """Eq. (2) summarised: mean and s.e. of the replicas' lowest negative hard outliers over those that have one (nan
    where none has; nan s.e. with one)."""
    zs = np.asarray(hard_z, dtype=float)
    has = np.isfinite(zs) & (zs < 0)
    mean = float(zs[has].mean()) if has.any() else math.nan
    return mean, float(zs[has].std(ddof=1) / math.sqrt(has.sum())) if has.sum() > 1 else math.nan


def settled(ev: Evaluation) -> Evaluation:
    """Eq. (3): ``ev`` with its indicators, left bulk edge, their s.e. and the lowest hard outliers taken over the
    settled replicas (those of the three it carries per replica); ``ev`` itself when no replica is left out."""
    kept = ev.settled_replicas()
    if not ev.period_two or len(kept) == len(ev.indicator_replicas[0]):
        return ev
    for i in range(len(ev.steps)):
        ev.indicator[i], ev.indicator_err[i] = mean_se([ev.indicator_replicas[i][r] for r in kept])
        ev.clipped[i], ev.clipped_err[i] = mean_se([ev.clipped_replicas[i][r] for r in kept])
        if ev.left_edge_replicas:
            ev.left_edge[i], ev.left_edge_err[i] = mean_se([ev.left_edge_replicas[i][r] for r in kept])
        if ev.hard_z:
            ev.outlier_z[i], ev.outlier_z_err[i] = _lowest_outlier([ev.hard_z[i][r] for r in kept])
    return ev

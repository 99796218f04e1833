"""The Hessian indicators of one setup at one delta, at every checkpoint of the first phase.

For a delta, the first-phase law of (u, y, g_H) (thresholds.laws: the DMFT paths, or a law source
such as the finite-d GD law of the validation layer) gives at each checkpoint t the Hessian spectrum
(thresholds.hessian), summarised as an :class:`thresholds.nn.Evaluation`:

    I_t(delta) = -S(alpha at min(0, left bulk edge)),  plain and on the tail-clipped law,   (1)
    z*(t) = lowest negative hard outlier per replica (nan: none),                          (2)

with means and standard errors over the replicas (thresholds.numbers.mean_se).  Evaluations of the
finite-d law are cached (thresholds.store.evaluation_key); the DMFT run itself is cached by
thresholds.dmft.
"""

from __future__ import annotations

import math

import numpy as np

from . import cache as _disk
from .dmft import checkpoints, solve_dmft
from .errors import UnsupportedError
from .hessian import check_supported, spectra_of_law
from .laws import FirstPhaseLaw, dmft_law
from .nn import Evaluation, NNSetup
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
        return ev
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
        zs = np.asarray(h.hard_z, dtype=float)
        has = np.isfinite(zs) & (zs < 0)
        ev.outlier_z.append(float(zs[has].mean()) if has.any() else math.nan)
        ev.outlier_z_err.append(float(zs[has].std(ddof=1) / math.sqrt(has.sum())) if has.sum() > 1 else math.nan)
        ev.overlap2.append(left[0]["overlap2"] if left else math.nan)
        ev.hard_z.append([float(z) for z in zs])
        ev.indicator_replicas.append([float(v) for v in h.indicator_replicas])
        ev.clipped_replicas.append([float(v) for v in h.clipped_replicas])
        if h.sectors:
            ev.sectors += (tuple(float(v) for v in h.sectors),)
    return ev

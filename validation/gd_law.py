"""The finite-d GD law of the first phase (a law source of thresholds.laws).

The law of (u, y, g_H) is read off finite-d GD restricted to the complement of the hard subspace
(validation.simulate, ``complement=True``): ``setup.replicas`` independent seeds at dimension d play
the part of the replicas, each contributing its n = delta d training samples,

    u_i^t = Theta^t^T x_i,  y_i,  g_i = P_H x_{i,1..k},  omega_i = 1/n,                   (1)

at every checkpoint t.  The d = inf spectral equations (thresholds.hessian) are then applied to that
empirical law: it is the cross-check of the DMFT law that needs no long DMFT, and the default law of
``thresholds nn`` (``law = "gd"``).  Seeds: replica r of a setup with seed s runs GD with seed
1000 s + r.
"""

from __future__ import annotations

import numpy as np

from thresholds.alg import latent_split
from thresholds.catalog import get_link
from thresholds.dmft import DMFTSetup, checkpoints
from thresholds.errors import DivergenceError
from thresholds.hessian import check_supported, spectra_of_law
from thresholds.laws import FirstPhaseLaw, ReplicaLaw
from validation.simulate import GDSetup, run_gd


def first_phase_law(setup: DMFTSetup, d: int, steps, *, dtype: str = "float64", progress=None) -> FirstPhaseLaw:
    """Eq. (1) at ``steps`` for the setup's network and training at dimension ``d``; ``dtype`` is the
    storage of the simulator's data and weights (its sums are float64 either way);
    ``progress(done, total)`` is called after every GD step."""
    check_supported(setup)
    laws = {s: [] for s in steps}
    total = setup.replicas * (setup.steps + 1)
    for r in range(setup.replicas):
        try:
            run = run_gd(GDSetup.from_problem(setup.problem, setup.delta, d, complement=True,
                                              seed=1000 * setup.seed + r, n_test=200, test_loss=False, dtype=dtype),
                         snapshots=steps,
                         progress=(lambda t, r=r: progress(r * (setup.steps + 1) + t + 1, total)) if progress else None)
        except FloatingPointError as exc:
            raise DivergenceError(f"finite-d GD diverged ({exc}) at delta = {setup.delta:g}, eta = {setup.eta:g}") \
                from None
        for s, law in run_law(run, setup, steps).items():
            laws[s].append(law)
    return FirstPhaseLaw(laws, f"law: empirical law of finite-d GD restricted to the complement, d = {d}, "
                         f"{setup.replicas} seeds, {dtype} data (mean +- s.e.)")


def run_law(run, setup: DMFTSetup, steps) -> dict:
    """Eq. (1) of one GD run (``run_gd`` with snapshots at ``steps``): step -> ReplicaLaw."""
    link = get_link(setup.link)
    X, y = run.data
    y = y.astype(float)
    g = X[:, : link.k].astype(float) @ latent_split(link).hard.T  # latent coordinates: the first k axes
    g = g[:, 0] if g.shape[1] == 1 else g
    w = np.full(y.size, 1.0 / y.size)
    out = {}
    for s in steps:
        u = run.snapshots[s].astype(float)
        out[s] = ReplicaLaw(u[:, 0] if setup.m == 1 else u, y, g, w)
    return out


def hessian_spectra_gd(setup: DMFTSetup, d: int, *, outliers: str = "final", progress=None,
                       dtype: str = "float64", final_only: bool = False, mean_field: bool = False) -> dict:
    """step -> HessianSpectrum (thresholds.hessian) on the law (1) at every checkpoint of the setup
    (the last step only with ``final_only``); ``mean_field``: the Hessian of the wide limit m -> inf
    (thresholds.meanfield), the setup's m neurons standing in for the population."""
    steps = [setup.steps] if final_only else checkpoints(setup.steps)
    law = first_phase_law(setup, d, steps, dtype=dtype, progress=progress)
    return spectra_of_law(setup, law, outliers=outliers, mean_field=mean_field)


def nn_law(setup, delta: float, steps, progress=None) -> FirstPhaseLaw:
    """The law source of ``law = "gd"`` for thresholds.nn: eq. (1) at dimension ``setup.law_d`` with
    ``setup.law_dtype`` storage, for the NNSetup ``setup`` at ``delta`` (thresholds.evaluation)."""
    return first_phase_law(setup.dmft(delta), setup.law_d, steps, dtype=setup.law_dtype, progress=progress)


# --- delta_NN with the finite-d law supplied (what ``thresholds nn`` / ``grok`` call) -----------

def law_source(setup):
    """The law source a NNSetup asks for: ``nn_law`` for ``law = "gd"``, None (the library's DMFT) else."""
    return nn_law if setup.law == "gd" else None


def delta_nn(setup, **kw):
    """thresholds.search.delta_nn with the setup's law source."""
    from thresholds import search
    return search.delta_nn(setup, law_source=law_source(setup), **kw)


def evaluate(setup, delta: float, **kw):
    """thresholds.evaluation.evaluate with the setup's law source."""
    from thresholds import evaluation
    return evaluation.evaluate(setup, delta, law_source=law_source(setup), **kw)


def escape_times(setup, delta: float, dims, **kw) -> dict:
    """thresholds.escape.escape_times with the setup's law source."""
    from thresholds import escape
    return escape.escape_times(setup, delta, dims, law_source=law_source(setup), **kw)

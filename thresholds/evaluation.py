"""The Hessian indicators of one setup at one delta, at every checkpoint of the first phase.

For a delta, the first-phase law of (u, y, g_H) (thresholds.laws: the DMFT paths, or a law source
such as the finite-d GD law of the validation layer) gives at each checkpoint t the Hessian spectrum
(thresholds.hessian), summarised as an :class:`thresholds.nn.Evaluation`:

    I_t(delta) = -S(alpha at min(0, left bulk edge)),  plain and on the tail-clipped law,   (1)
    z*(t) = lowest negative hard outlier per replica (nan: none),                          (2)

with means and standard errors over the replicas (thresholds.numbers.mean_se).  Evaluations are cached
(thresholds.store.evaluation_key: on the DMFT law with the rules of eqs. (3)-(4) in the key, so that a long search
resumes without its Hessians); the DMFT run itself is cached by thresholds.dmft.

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
crossing's jackknife (thresholds.crossing eq. (4)) leaves the same replicas out.  With ``settled_labels``
(thresholds.nn.NNSetup) the DMFT paths are drawn with labels below the cap of thresholds.dmft eq. (10d), at which a
sample's own step has the eigenvalue -0.8: no path is past the limit, every replica settles (quad, m = 8, eta 0.05,
delta 1.5625, where every replica of the full law orbits: three settled replicas with train losses 1.49e-4 to 1.51e-4
at step 600), and the law is that of GD's samples at the dimensions whose data sets hold no label past the cap.

Automatic paths and the self-interaction.  With automatic paths (``paths`` = 0: N_0 per replica,
thresholds.nn.NNSetup.paths_at, set by the Hessian's data sets of eq. (5) of thresholds.hessian) the DMFT law
carries a self-interaction of relative size s = delta (r + m) / N (thresholds.dmft eq. (6f), r the sources it
opened), which grows with the width: 0.010 at m = 1 (quad, delta 11), 0.02-0.04 for gelu at m = 2-8, 0.11 at
quad m = 8 and 0.17 at m = 16 on N_0.  So the first phase of one delta is

    the DMFT at N_0 paths per replica; if its s > SELF_INTERACTION_MAX, again at
        N_1 = N_0 s / SELF_INTERACTION_TARGET (rounded up to a multiple of 1000) paths per replica,        (4)

once (a remaining s above SELF_INTERACTION_MAX is in the run's notes and the search's).  The Hessian reads the
first N_0 paths of each replica of the N_1 run (their weights renormalised; the paths are independent draws): the
larger run removes the law's bias, and the Hessian keeps the sample size, the Monte Carlo error and the cost it
has at N_0.  Measured (quad, phase retrieval, eta 0.05, m = 16, delta 2, step 600; validation/reports/planted/width
10f): the train loss at s = 0.18 / 0.08 / 0.03 is 0.00023 / 0.00034 / 0.00046-0.00049 against GD's 0.00047-0.00051
at d = 1600, so the target is set below 0.03, with room for r to grow with N.  Eq. (4) at that delta: 171000 paths,
s = 0.019, I_T = +0.0048 +- 0.0004 against +0.0046 +- 0.0003 on 80000 paths at tolerance 1e-2 (an independent route
to the unbiased law) and +0.0023 on N_0; quad m = 8 crosses at 1.94 [1.93, inf] against 2.15 [2.05, inf] on N_0
(validation/reports/planted/width 10g).

The first phase's train loss.  delta_NN(T) reads the Hessian at the horizon T; it is the threshold of an infinite
horizon only where the first phase settles at a positive loss.  Where it interpolates (its train loss falls to 0),
every negative eigenvalue, the hard outliers' included, vanishes with the residuals, and the growth of the hard
component along them is bounded (GD restricted to the complement, quad / phase retrieval, eta 0.05, m = 16, delta
1.5-2 over 3 x 10^4 steps: |z_H| falls like the train loss to the power 0.7; validation.settled_hessian,
validation/reports/planted/width section 11).  The evaluation records

    a = log(L(T') / L(T)) / log(T / T'),   L the law's train loss, T' the step nearest T / 2,                (5)

the decay exponent of the loss over the last half of the horizon (``loss_decay``; None on a law without one).
Measured on GD restricted to the complement (300 -> 600 steps; validation/reports/planted/width
settled_hessian_T600.jsonl): a = 1.11-1.82 on every run at m = 8 and 16, delta 1.5-2 (d = 400 / 200), where the hard
outlier then shrinks at least like 1 / t; 0.15-0.86 on every run at delta 2.5-4, where it stays and grows the hard
component without bound; 0.03-0.41 at m = 2 and 4 near their delta_NN(600); on the DMFT law 2.0 at m = 16, delta
1.41, 1.42 at m = 8, delta 1.94 (their 600-step delta_NN) and 0.03 at m = 1, delta 11.  The search notes a >=
LOSS_DECAY_NOTE = 1 (a loss falling faster than 1 / t) at its reference delta (:func:`interpolating`): there
delta_NN(T) is a threshold at that horizon, and the infinite-horizon one lies above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from . import cache as _disk
from .dmft import DMFTResult, DMFTSetup, checkpoints, solve_dmft, unstable_fraction
from .errors import UnsupportedError
from .hessian import check_supported, spectra_of_law
from .laws import FirstPhaseLaw, dmft_law, thinned
from .nn import SELF_INTERACTION_MAX, SELF_INTERACTION_TARGET, Evaluation, NNSetup
from .numbers import mean_se
from .store import carries_replicas, evaluation_key


@dataclass
class FirstPhase:
    """The DMFT run behind one delta's evaluation (eq. (4)): its setup and result, the paths of the run (all
    replicas), the paths the Hessian reads, and the run's self-interaction (thresholds.dmft eq. (6f))."""

    setup: DMFTSetup
    result: DMFTResult
    paths: int
    hessian_paths: int
    self_interaction: float | None


def first_phase(setup: NNSetup, delta: float, *, cache: bool = True, progress=None, paths: int = None) -> FirstPhase:
    """Eq. (4): the DMFT first phase of ``setup`` (law "dmft") at ``delta``.  ``paths`` (all replicas) overrides
    the run's paths; with automatic paths the Hessian then still reads N_0 per replica (the path check of
    thresholds.search)."""
    base = setup.dmft(delta)
    check_supported(base)   # before the DMFT run
    auto = not setup.paths
    run_setup = replace(base, paths=int(paths)) if paths else base
    res = solve_dmft(run_setup, cache=cache, progress=progress)
    size = res.self_interaction()
    if auto and not paths and size is not None and size > SELF_INTERACTION_MAX:
        run_setup = replace(base, paths=base.replicas * more_paths(base.paths // base.replicas, size))
        res = solve_dmft(run_setup, cache=cache, progress=progress)
        size = res.self_interaction()
    return FirstPhase(run_setup, res, run_setup.paths, base.paths if auto else run_setup.paths, size)


def more_paths(per: int, size: float) -> int:
    """Eq. (4): the paths per replica that bring a self-interaction ``size`` at ``per`` paths to
    SELF_INTERACTION_TARGET, rounded up to a multiple of 1000."""
    return int(math.ceil(per * size / SELF_INTERACTION_TARGET / 1000.0)) * 1000


def evaluate(setup: NNSetup, delta: float, *, cache: bool = True, progress=None,
             outliers: str = "none", final_only: bool = False, law_source=None, dmft_paths: int = None,
             run: FirstPhase = None) -> Evaluation:
    """Eqs. (1)-(2) at every checkpoint for one delta (one DMFT run, eq. (4), or one set of GD runs); the outlier
    positions (``outlier_z``, nan where not located) at the steps ``outliers`` asks for.  ``final_only``:
    the indicators at the last step only.  ``law_source`` (thresholds.laws) supplies the
    first-phase law when ``setup.law`` is not "dmft" (the validation layer's ``validation.gd_law.nn_law``
    for "gd").  ``dmft_paths``: the DMFT run's paths (all replicas) instead of eq. (4)'s (see
    :func:`first_phase`); ``run``: that first phase when the caller has it already (not read from the cache again)."""
    key = evaluation_key(setup, delta, outliers, final_only, dmft_paths)
    hit = _disk.load("nn-eval", key, expect=Evaluation) if cache else None
    if hit is not None and carries_replicas(hit):
        return hit
    if setup.law == "dmft":
        run = run or first_phase(setup, delta, cache=cache, progress=progress, paths=dmft_paths)
        ev = _dmft_evaluation(setup, delta, run, outliers, final_only)
    elif law_source is None:
        raise UnsupportedError(f"the {setup.law!r} law of the first phase is supplied by the caller: pass "
                               "law_source (validation.gd_law.nn_law for finite-d GD), or use law = 'dmft'")
    else:
        dmft_setup = setup.dmft(delta)
        check_supported(dmft_setup)
        law = law_source(setup, delta, [setup.steps] if final_only else checkpoints(setup.steps), progress=progress)
        ev = from_spectra(delta, spectra_of_law(dmft_setup, law, outliers=outliers, mean_field=setup.mean_field))
    if cache:
        _disk.store("nn-eval", key, ev)
    return ev


def _dmft_evaluation(setup: NNSetup, delta: float, run: FirstPhase, outliers: str, final_only: bool) -> Evaluation:
    """Eqs. (1)-(4) on the DMFT law of one first phase."""
    law = dmft_law(run.result)
    if run.hessian_paths < run.paths:   # eq. (4): the Hessian on N_0 paths per replica
        law = thinned(law, run.hessian_paths // run.setup.replicas)
    if final_only:   # the Hessian at the horizon only (1/16 of its cost)
        law = FirstPhaseLaw({setup.steps: law.steps[setup.steps]}, law.note)
    ev = from_spectra(delta, spectra_of_law(run.setup, law, outliers=outliers, edge_d=setup.edge_d))
    ev.period_two = run.result.period_two   # thresholds.dmft eq. (10)
    ev.self_interaction = run.self_interaction
    ev.paths = run.paths
    ev.unstable_fraction = unstable_share(run)
    ev.loss_decay = loss_decay(run.result.train_loss)
    if run.setup.label_cap:   # thresholds.dmft eq. (10d) (the tail share is None on a run cached without it)
        tail = run.result.label_tail
        ev.label_cap, ev.label_tail = float(run.setup.label_cap), (tail[0] / tail[1] if tail else None)
    return settled(ev)


LOSS_DECAY_NOTE = 1.0   # eq. (5): the decay exponent of the train loss from which the search notes interpolation


def loss_decay(train_loss) -> float:
    """Eq. (5) on a train-loss curve indexed by step (0 .. T); None when T < 2 or a loss is not positive."""
    L = np.asarray(train_loss, dtype=float)
    T = L.size - 1
    half = T // 2
    if half < 1 or not (L[half] > 0 and L[T] > 0):
        return None
    return float(math.log(L[half] / L[T]) / math.log(T / half))


def interpolating(ev: Evaluation) -> bool:
    """Whether the first phase of ``ev`` still interpolates at the horizon: eq. (5) at least LOSS_DECAY_NOTE (False
    when not recorded)."""
    return ev.loss_decay is not None and ev.loss_decay >= LOSS_DECAY_NOTE


def unstable_share(run: FirstPhase) -> float:
    """thresholds.dmft eq. (10c) on every path of the run at its horizon: the mean over the replicas of the weight of
    the paths whose own step is unstable at their fitted point."""
    return float(np.mean([unstable_fraction(run.setup, u, y, w) for u, y, _, w in run.result.replica_laws]))


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

"""delta_NN: the search for the smallest delta with a negative hard outlier at the horizon.

The indicator I_t(delta) of thresholds.evaluation (> 0 iff the Hessian after t steps of the first
phase has a negative hard outlier; Montanari & Wang 2026, arXiv 2602.01434) is evaluated along delta.

Search (at the horizon T).  All deltas use the same seed (common random
numbers), so I_T is smooth in delta.  Starting from max(search_min, delta_alg)
(delta_NN >= delta_alg: the Hessian is one spectral method) delta is raised
until I_T > 0: by the straight-line extrapolation of the last two I_T values
(aimed rtol past the predicted root, at least x1.1 and at most x2 per step),
doubled while I_T is not increasing.  The bracket is then shrunk to ``rtol``
relative width (log delta) by Brent's method (``refine``), which falls back to
bisection when its interpolation does not progress.  (Bisection from a factor-2
bracket takes log2(ln 2 / rtol) ~ 5 evaluations at rtol = 0.02; Brent usually
takes 2-3 on a smooth indicator, and the evaluations near the root are the
expensive ones.)  The crossing is the linear interpolation of I_T between the
bracket ends; its interval is described in ``first_crossing`` (bracket and
Monte Carlo half-widths, and a local line fit of I_T that needs three deltas
within a factor 1.25 of the crossing: the search adds deltas at 1.12 and
1/1.12 times the crossing until there are).  When I_T <= 0 up to
``search_max`` the answer is "inf" with that bound.

Lower end.  GD diverging at the start (the step above the stability limit of the whole network) doubles the lower
end.  On the DMFT law a delta at which every replica ends in a period-2 orbit (thresholds.dmft eq. (10): paths whose
labels are past the stability limit of their own step, eq. (10b); at d = inf a fraction P(y > y_c) of the samples,
which grows as delta falls) has no settled first phase and so no Hessian to test: the lower end moves up by
ORBIT_STEP = 1.25 until a replica settles, and the notes name those deltas (quad, phase retrieval, eta 0.05, m = 16:
every replica orbits at delta 1.6 and 1.8 on a law with enough paths; validation/reports/planted/width 10f).  Where
I_T > 0 already at that lower end, ORBIT_BISECTIONS = 3 bisections in log delta between it and the last delta where
every replica orbits or GD diverged look for a settled delta with I_T <= 0, from which the search goes up as usual; without one,
delta_NN is stated as at most the lowest settled delta with I_T > 0 (``below_range``).  The deltas the line fit adds
next to the crossing skip those where every replica orbits.  With ``settled_labels`` (thresholds.dmft eq. (10d)) the
law has no label past the limit and its replicas settle at every delta, also where GD's data sets of the stated size do
not: there the lower end moves up by ORBIT_STEP in the same way, without a DMFT run, while

    n P(y > y_c) >= ln 2,   n = delta d,   d = edge_d (else law_d),   y_c the own step's limit (eq. (10c), -1)

(GD's data set holds a label past the limit with probability >= 1/2; P by Monte Carlo, thresholds.targets.tail_mass);
the notes name those deltas with n P, and give the cap, the share of the drawn paths past it and d = 1 / (delta P) at
each delta evaluated.

t -> inf.  delta_NN(t) at the earlier checkpoints is read off the same
evaluations (first sign change of I_t, linear interpolation).  The curve is
declared converged when |delta_NN(T) - delta_NN(T/2)| is within the interval
half-width of delta_NN(T) plus rtol delta_NN(T); otherwise the result is
returned with ``converged = False`` and the user is told to lengthen the
horizon.

Transient window.  delta_NN(t) need not be monotone in t: when the first
phase keeps moving (e.g. ||theta|| growing without bound), a hard outlier can
exist at intermediate t and disappear later.  The smallest delta_NN(t) over
the checkpoints is reported as ``delta_nn_transient`` with its step (refined,
like the horizon crossing, with runs stopped at that step:
``transient_evaluations``); at
finite d, where escaping needs only about log(sqrt d)/(eta |z*|) steps, GD
can use that window.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from . import cache as _disk
from .crossing import crossing
from .catalog import get_link
from .dmft import SELF_INTERACTION_NOTE, SETTLED_EIGENVALUE, checkpoints, stable_label_limit
from .errors import DivergenceError, ThresholdsError
from .evaluation import evaluate, first_phase, interpolating, unstable_share
from .hessian import CLIP_QUANTILE, data_set_count, hard_dimension
from .nn import NNResult, NNSetup
from .numbers import differences_beyond_noise, welch_dof
from .store import carries_replicas, result_key, store_delta_nn
from .targets import tail_mass


class _Indicators:
    """I_t(delta) evaluated on demand, each delta once: ``full`` holds runs to the horizon, ``short``
    runs stopped at an earlier step (the transient refinement)."""

    def __init__(self, setup: NNSetup, cache: bool, progress, log, law_source):
        self.setup, self.cache, self.progress, self.log, self.law_source = setup, cache, progress, log, law_source
        self.full, self.short = {}, {}
        self.orbiting = []   # deltas below the search where every DMFT replica ends in a period-2 orbit
        self.crowded = []    # settled laws: deltas where GD's data set at the stated d holds a label past the limit
        self.runs = {}       # delta -> the first phase the orbit test read, for the evaluation that follows it

    def __call__(self, delta, step=None):
        T = int(self.setup.steps)
        step = T if step is None else step
        delta = float(delta)
        if delta not in self.full:
            ev = evaluate(self.setup, delta, cache=self.cache, progress=self.progress, law_source=self.law_source,
                          run=self.runs.pop(delta, None))
            self.full[delta] = ev
            if self.log:
                i = ev.at(T)
                self.log(f"delta = {delta:.5g}: indicator {ev.indicator[i]:+.4f} +- {ev.indicator_err[i]:.4f}, "
                         f"left edge {ev.left_edge[i]:+.4f}")
        ev = self.full[delta]
        return ev.indicator[ev.at(step)]

    def until(self, delta, step):
        """I_step(delta) from a run stopped at ``step`` (the same trajectory up to it: the data and the
        initialization are drawn first), unless a full run at delta exists."""
        if delta in self.full:
            return self(delta, step)
        if delta not in self.short:
            self.short[delta] = evaluate(replace(self.setup, steps=step), delta, cache=self.cache,
                                         progress=self.progress, final_only=True, law_source=self.law_source)
            if self.log:
                ev = self.short[delta]
                self.log(f"delta = {delta:.5g}, run to step {step}: indicator {ev.indicator[-1]:+.4f} +- "
                         f"{ev.indicator_err[-1]:.4f}")
        return self.short[delta].indicator[self.short[delta].at(step)]


def delta_nn(setup: NNSetup, *, cache: bool = True, progress=None, log=None, law_source=None) -> NNResult:
    """delta_NN for ``setup`` (module docstring); ``log(text)`` receives one line per evaluation;
    ``law_source`` supplies the first-phase law of a finite-d ``setup.law`` (thresholds.evaluation)."""
    from .alg import delta_alg as _delta_alg
    setup.validate()
    if cache:
        hit = _disk.load("nn", result_key(setup), expect=NNResult)
        if hit is not None and carries_replicas(hit):
            return hit
    start = time.time()
    hard_dimension(setup.link, setup.m)  # checked before any long computation
    alg = _delta_alg(setup.link, dps=15).delta_alg
    f = _Indicators(setup, cache, progress, log, law_source)
    first = max(setup.search_min, alg if math.isfinite(alg) and alg > 0 else 0.0, 0.25)
    if first >= setup.search_max:
        raise ThresholdsError(f"search_max = {setup.search_max:g} is not above the start of the search, "
                              f"{first:g} (delta_alg = {alg:g}: below it no efficient method learns the hard "
                              "direction, so delta_NN >= delta_alg); raise search_max")
    lo, below, diverged = _lower_end(f, first)
    known = None   # a delta with I_T > 0 above the lower end, when the lower end's bisection found one
    if below and (f.orbiting or diverged):
        known = lo
        lo, below = _settled_lower_end(f, lo, diverged)
    b = lo if below else _upward(f, lo, known)
    step = _refine_transient(f, lo)
    result = _result(f, setup, alg, lo, b, below, diverged, step)
    result.seconds = time.time() - start
    if cache:
        store_delta_nn(setup, result)
    return result


ORBIT_STEP = 1.25   # the lower end moves up by this factor while every DMFT replica ends in a period-2 orbit


def _lower_end(f: _Indicators, lo: float):
    """The lower end of the search: ``lo``, doubled while GD diverges there and raised by ORBIT_STEP while every
    DMFT replica ends in a period-2 orbit (thresholds.dmft eq. (10): no settled first phase, so no Hessian of one;
    those deltas are kept in ``f.orbiting``).  Returns (lo, I_T(lo) > 0, the deltas at which GD diverged)."""
    diverged = []
    while True:
        try:
            if not _settles(f, lo):
                if lo * ORBIT_STEP > f.setup.search_max:
                    raise ThresholdsError(f"every DMFT replica ends in a period-2 orbit (thresholds.dmft eq. (10)) at "
                                          f"every delta tried up to {lo:.4g} at eta = {f.setup.eta:g}: the first phase "
                                          "does not settle; lower the step size")
                lo *= ORBIT_STEP
                continue
            return lo, f(lo) > 0, diverged
        except DivergenceError:
            diverged.append(lo)
            if f.log:
                f.log(f"delta = {lo:.5g}: GD diverges at this step size; moving up")
            if 2 * lo > f.setup.search_max:
                raise DivergenceError(f"GD diverges for every delta tried up to {lo:g} at eta = {f.setup.eta:g}: "
                                      "lower the step size") from None
            lo *= 2


ORBIT_BISECTIONS = 3   # bisections (in log delta) between the last delta where every replica orbits and the lower end


def _settled_lower_end(f: _Indicators, lo: float, diverged: list) -> tuple[float, bool]:
    """Where I_T > 0 already at a lower end that orbits or divergence moved up (:func:`_lower_end`): bisect in log
    delta between the last delta where every replica orbits or GD diverged and ``lo``, ORBIT_BISECTIONS times, for a
    delta where a replica settles and I_T <= 0 (returned with False: the search goes up from it); else the lowest
    settled delta with I_T > 0 and True (delta_NN is at most it).  Deltas that diverge are added to ``diverged``."""
    a, b = max([d for d, _ in f.orbiting + f.crowded] + diverged), lo
    for _ in range(ORBIT_BISECTIONS):
        mid = math.sqrt(a * b)
        try:
            settles = _settles(f, mid)
        except DivergenceError:
            diverged.append(mid)
            settles = False
        if not settles:
            a = mid
        elif f(mid) > 0:
            b = mid
        else:
            return mid, False
    return b, True


def _settles(f: _Indicators, delta: float) -> bool:
    """Whether some DMFT replica at ``delta`` settles (always on a finite-d law); a delta where none does is kept in
    ``f.orbiting``.  On a settled law (thresholds.dmft eq. (10d)) a delta where GD's data set at the stated dimension
    holds a label past the own step's limit (:func:`crowded_share`) does not settle either (kept in ``f.crowded``; no
    DMFT is run there)."""
    crowded = crowded_share(f.setup, delta)
    if crowded is not None:
        f.crowded.append((delta, crowded))
        if f.log:
            f.log(f"delta = {delta:.5g}: GD's data sets at d = {stated_d(f.setup)} hold a label past the own step's "
                  "stability limit; moving up")
        return False
    share = _every_replica_orbits(f, delta)
    if share is not None:
        f.orbiting.append((delta, share))
        if f.log:
            f.log(f"delta = {delta:.5g}: every DMFT replica ends in a period-2 orbit")
    return share is None


def stated_d(setup: NNSetup) -> int:
    """The dimension the threshold is stated for: data sets of n = delta d samples (``edge_d``, else ``law_d``)."""
    return int(setup.edge_d or setup.law_d)


def crowded_share(setup: NNSetup, delta: float) -> float | None:
    """Settled laws (``settled_labels``, thresholds.dmft eq. (10d)): P(y > y_c), y_c the label past which a sample's
    own step is unstable (eq. (10c), eigenvalue -1), where GD's data set of n = delta d samples at the stated d holds
    such a label with probability at least 1/2 (n P >= ln 2: its first phase does not settle there, and the settled
    law is that of smaller d); None otherwise and on other laws."""
    if not (setup.settled_labels and setup.law == "dmft") or not setup.label_cap(delta):
        return None
    y_c = stable_label_limit(setup.activation, setup.a, setup.b, setup.m, setup.eta, delta, setup.loss,
                             setup.weight_decay)
    p = tail_mass(get_link(setup.link), y_c)
    return p if delta * stated_d(setup) * p >= math.log(2) else None


def _every_replica_orbits(f: _Indicators, delta: float) -> float | None:
    """DMFT law: where every replica of the first phase at ``delta`` ends in a period-2 orbit, the fraction of the
    samples whose own step is unstable (thresholds.dmft eq. (10c)); None otherwise (the run is cached, and the
    evaluation at ``delta`` reads it)."""
    if f.setup.law != "dmft":
        return None
    if not f.cache:   # the evaluation is then the only run: take it, and keep an all-orbit one out of the crossing
        f(delta)
        ev = f.full[delta]
        if len(ev.period_two or []) < f.setup.replicas:
            return None
        del f.full[delta]
        return ev.unstable_fraction
    run = first_phase(f.setup, delta, cache=f.cache, progress=f.progress)
    if len(run.result.period_two or []) == run.setup.replicas:
        return unstable_share(run)
    f.runs[delta] = run   # the evaluation at delta reads it instead of the cache
    return None


def _upward(f: _Indicators, lo: float, known: float = None) -> float:
    """From I_T(lo) <= 0, raise delta until I_T > 0 (``next_trial``; ``known``: a delta already found with I_T > 0,
    the upper end at once), refine the bracket (``refine``) and add deltas next to the crossing for its line fit.
    Returns the upper end of the bracket (the last delta tried when there is no crossing up to search_max)."""
    setup, T = f.setup, int(f.setup.steps)
    a, prev, b = lo, None, lo                               # f(a) <= 0
    if known is not None:
        b = known
    while b < setup.search_max and not f(b) > 0:
        b = min(next_trial(prev, f(prev) if prev is not None else None, a, f(a), setup.rtol), setup.search_max)
        if f(b) > 0:
            break
        prev, a = a, b
    if f(b) > 0:
        b = refine(f, a, b, setup.rtol)
        for _ in range(2):  # support of the local line fit of first_crossing
            x = crossing(list(f.full.values()), T).value
            near = [d for d in f.full if x / 1.25 <= d <= x * 1.25]
            if len(near) >= 3:
                break
            x = (min(x * 1.12, setup.search_max) if sum(d > x for d in near) <= sum(d < x for d in near)
                 else x / 1.12)
            if not _settles(f, x):   # no settled first phase there to add
                break
            f(x)
    return b


def _refine_transient(f: _Indicators, lo: float) -> int:
    """Refine the smallest delta_NN(t) over the earlier checkpoints at its own step, with runs stopped at
    that step (a fraction of the cost of full runs).  Returns that step (T when there is none)."""
    T = int(f.setup.steps)
    evals = list(f.full.values())
    early = [(crossing(evals, s), s) for s in checkpoints(T)[:-1]]
    c, step = min(early, key=lambda cs: cs[0].value) if early else (None, T)
    if c is not None and c.found and c.value > lo and not c.value > crossing(evals, T).low:
        pts = sorted(f.full)
        hi_d = min(d for d in pts if d >= c.value)
        lo_d = max(d for d in pts if d <= c.value)
        if f(hi_d, step) > 0 >= f(lo_d, step):
            refine(lambda x: f.until(x, step), lo_d, hi_d, f.setup.rtol)
    return step


def _result(f: _Indicators, setup: NNSetup, alg: float, lo: float, b: float, below: bool, diverged: list,
            step: int) -> NNResult:
    """The NNResult of a finished search: crossings at the horizon (plain and tail-clipped), the t-curve,
    its convergence, and the notes."""
    T = int(setup.steps)
    el = list(f.full.values())
    main = crossing(el, T)
    clip = crossing(el, T, key="clipped")
    curve = [(s, crossing(el + (list(f.short.values()) if s == step else []), s)) for s in checkpoints(T)]
    half = [c for s, c in curve if s == max(1, T // 2)][0]
    t_min, transient = min(curve, key=lambda sc: sc[1].value)
    if main.found and half.found:
        converged = abs(main.value - half.value) <= (main.high - main.low) / 2 + setup.rtol * main.value
    else:
        converged = main.found == half.found
    ref = f.full[b] if main.found else f.full[max(f.full)]
    i = ref.at(T)
    settled = ref.left_edge[i] >= -2 * ref.left_edge_err[i]
    notes = _search_notes(setup, lo, diverged, main, clip, half, transient, t_min, converged, settled, ref)
    notes += _lower_orbit_notes(f.orbiting, lo) + _crowded_notes(f.crowded, lo, stated_d(setup))
    notes += _orbit_notes(el) + _self_interaction_notes(el) + _label_notes(el)
    path_check = _path_check(f, ref, notes) if setup.law == "dmft" else None
    notes += _closing_notes(setup, ref, lo, below, main)
    return NNResult(setup, alg, main.value, main.low, main.high, main.found, below, clip, curve, converged,
                    settled, transient, t_min, ref.left_edge[i], ref.left_edge_err[i],
                    sorted(el, key=lambda e: e.delta), notes, 0.0, path_check,
                    sorted(f.short.values(), key=lambda e: e.delta))


def _search_notes(setup, lo, diverged, main, clip, half, transient, t_min, converged, settled, ref) -> list:
    notes = []
    if diverged:
        notes.append(f"GD diverges at eta = {setup.eta:g} for delta = {', '.join(f'{d:.4g}' for d in sorted(diverged))}: "
                     "the search starts above them")
    if transient.found and transient.value < main.low:
        notes.append(f"non-monotone t-curve: a negative hard outlier exists from delta = {transient.value:.4g} at "
                     f"step {t_min} (t = {t_min * setup.eta:g}) but not at the horizon; finite-d GD can escape "
                     "during that window (see delta_nn_transient)")
    if not converged:
        notes.append(f"t-curve not converged: delta_NN(T/2) = {half.value:.4g}, delta_NN(T) = {main.value:.4g}; "
                     "lengthen the horizon (steps)")
    if not settled:
        i = ref.at(int(setup.steps))
        notes.append(f"at delta = {ref.delta:.4g} the left bulk edge is {ref.left_edge[i]:+.3f}: negative curvature "
                     "in bulk directions too (with an unbounded G, from the unfitted large-y samples; it stays there "
                     "after the first phase stops moving: validation/reports/settle)")
    if interpolating(ref):
        notes.append(f"the first phase is still interpolating at delta = {ref.delta:.4g}: its train loss falls like "
                     f"t^-{ref.loss_decay:.2f} over the last half of the horizon (evaluation eq. (5)); where the loss "
                     "goes to 0 the hard outlier vanishes with it and GD's growth along it is bounded, so delta_NN(T) "
                     "is the threshold at this horizon and the infinite-horizon one lies above it "
                     "(validation.settled_hessian)")
    if main.found and clip.found and (clip.high < main.low or clip.low > main.high):
        notes.append(f"tail-driven: with G clipped at its {CLIP_QUANTILE:g} quantile delta_NN = {clip.value:.4g}")
    if setup.edge_d:  # hessian eq. (5) needs a data set of n paths in every replica
        n = round(ref.delta * setup.edge_d)
        per = setup.paths_at(ref.delta) // setup.replicas
        if per < n:
            notes.append(f"the plain indicator is stated for data sets of n = {n} samples, but a replica has {per} "
                         f"paths: its left tail is that of {per} samples (use at least {n * setup.replicas} paths)")
    return notes


PATH_CHECK_ALPHA = 0.05  # family-wise false-alarm level of the path check (half at the horizon, half on the curve)


def _self_interaction_notes(evaluations) -> list:
    """A note when the DMFT law's self-interaction (thresholds.dmft eq. (6f)) exceeds SELF_INTERACTION_NOTE at some
    delta evaluated."""
    sizes = [(e.self_interaction, e.delta) for e in evaluations if e.self_interaction is not None]
    if not sizes or max(sizes)[0] <= SELF_INTERACTION_NOTE:
        return []
    size, delta = max(sizes)
    return [f"the DMFT law's self-interaction (thresholds.dmft eq. (6f)) reaches {size:.2g} of the memory term (at "
            f"delta = {delta:.4g}), above {SELF_INTERACTION_NOTE:g}: the law is biased by its paths (quad, m = 16: "
            "the train loss half GD's at 0.18); check with more --paths or a larger --source-tol"]


def _lower_orbit_notes(orbiting: list, lo: float) -> list:
    """A note naming the deltas below the search where no DMFT replica settles (:func:`_lower_end`), with the
    fraction P of eq. (10c) at each."""
    if not orbiting:
        return []
    return [f"at delta = {', '.join(f'{d:.4g}' for d, _ in orbiting)} every DMFT replica ends in a period-2 orbit "
            "(thresholds.dmft eq. (10): samples whose own step is unstable at their fitted point, a fraction P = "
            f"{', '.join(_share(d, p) for d, p in orbiting)} there, eq. (10c)): at d = inf the first phase does not "
            f"settle there, so it has no Hessian to test; the search starts at {lo:.4g} (finite-d GD settles where "
            "its data set holds none, d << 1 / (delta P); --settled-labels draws the law without them, eq. (10d))"]


def _crowded_notes(crowded: list, lo: float, d: int) -> list:
    """A note naming the deltas below the search where GD's data set at the stated d holds a label past the own
    step's stability limit (:func:`crowded_share`)."""
    if not crowded:
        return []
    return [f"at delta = {', '.join(f'{x:.4g}' for x, _ in crowded)} GD's data set of n = delta {d} samples holds a "
            "label past the stability limit of its own step (thresholds.dmft eq. (10c)) with probability >= 1/2 (n P "
            f"= {', '.join(f'{x * d * p:.2g}' for x, p in crowded)}): its first phase ends in a period-2 orbit there, "
            f"and the settled law (eq. (10d)) is that of smaller d; the search starts at {lo:.4g}"]


def _share(delta: float, p: float) -> str:
    """P of eq. (10c) and the d from which a data set of n = delta d samples holds one such sample."""
    return f"{p:.2g} (d = {1 / (delta * p):.3g})" if p > 0 else "0 (none among the paths)"


def _orbit_notes(evaluations) -> list:
    """A note naming the deltas where a DMFT replica ends in a period-2 orbit (thresholds.dmft eq. (10))."""
    orbit = sorted((e.delta, e.unstable_fraction) for e in evaluations if e.period_two)
    if not orbit:
        return []
    shares = (f" (samples with an unstable own step at their fitted point, eq. (10c): P = "
              f"{', '.join(_share(d, p) for d, p in orbit)})" if all(p is not None for _, p in orbit) else "")
    return [f"at delta = {', '.join(f'{d:.4g}' for d, _ in orbit)} a DMFT replica ends in a period-2 orbit "
            "(thresholds.dmft eq. (10): the step is above the stability limit of some direction" + shares + "); its "
            "checkpoints alternate between the orbit's two points, so the indicators there are taken on the other "
            "replicas (thresholds.evaluation eq. (3); on all of them where every replica is in an orbit)"]


def _path_check(f: _Indicators, ref, notes: list) -> dict:
    """DMFT law: the indicators at ``ref.delta`` again with half the paths (with auto paths, ``paths`` = 0, a DMFT
    run with twice the paths of ``ref``'s, thresholds.evaluation eq. (4), whose Hessian reads the same N_0 paths per
    replica as ``ref``'s: N_0 is the least that resolves the eq. (5) cut, so that half of it would not).  The
    differences are t-tested with Welch's degrees of freedom (each run's s.e. comes from ``replicas``
    replicas): at the horizon at level PATH_CHECK_ALPHA / 2, and at every checkpoint at family-wise level
    PATH_CHECK_ALPHA / 2 (Sidak), so that a law that does not depend on the paths is flagged at most
    PATH_CHECK_ALPHA of the time (tests/test_numbers.py).  A flag is the path bias of the sources back-end or
    the extreme values of G (a note is added)."""
    setup = f.setup
    paths = ref.paths or setup.paths_at(ref.delta)
    if setup.paths:
        other = max(paths // 2, 2 * setup.replicas)
        hv = evaluate(replace(setup, paths=other), ref.delta, cache=f.cache, progress=f.progress,
                      law_source=f.law_source)
    else:   # the Hessian on the same N_0 paths per replica (thresholds.evaluation eq. (4))
        other = 2 * paths
        hv = evaluate(setup, ref.delta, cache=f.cache, progress=f.progress, law_source=f.law_source,
                      dmft_paths=other)
    diff = [a - b for a, b in zip(ref.indicator, hv.indicator)]
    err = [math.hypot(a, b) for a, b in zip(ref.indicator_err, hv.indicator_err)]
    counts = [len(e.settled_replicas(setup.replicas)) for e in (ref, hv)]   # evaluation eq. (3): the replicas used
    dof = [welch_dof(a, b, *counts) for a, b in zip(ref.indicator_err, hv.indicator_err)]
    if min(counts) < 2:   # a mean over one replica has no error to test against
        notes.append(f"path check not formed at delta = {ref.delta:.4g}: the indicators of the runs with {paths} and "
                     f"{other} paths are means over {counts[0]} and {counts[1]} replica(s) (the others end in a "
                     "period-2 orbit, thresholds.evaluation eq. (3)), and one replica has no standard error")
        return {"delta": ref.delta, "paths": paths, "check_paths": other, "steps": ref.steps, "indicator_diff": diff,
                "indicator_diff_err": err, "dof": dof, "alpha": PATH_CHECK_ALPHA, "converged_until": None,
                "replicas_used": counts}
    at_horizon, on_curve = path_flags(diff, err, dof)
    bad = [s for s, flag in zip(ref.steps, on_curve) if flag] + ([ref.steps[-1]] if at_horizon else [])
    if bad:
        where = (f"at the horizon ({diff[-1]:+.3f} +- {err[-1]:.3f})" if at_horizon else
                 f"from step {min(bad)} on (at the horizon {diff[-1]:+.3f} +- {err[-1]:.3f})")
        notes.append(f"not converged in the number of DMFT paths: at delta = {ref.delta:.4g} the indicator moves "
                     f"between {paths} and {other} paths {where}, beyond its Monte Carlo error (t tests, "
                     f"family-wise level {PATH_CHECK_ALPHA:g}); "
                     + _path_remedy(setup, ref.delta, (setup.paths_at(ref.delta) if not setup.paths
                                                       else min(paths, other)) // setup.replicas))
    return {"delta": ref.delta, "paths": paths, "check_paths": other, **({"half_paths": other} if other < paths else {}),
            "steps": ref.steps, "indicator_diff": diff, "indicator_diff_err": err, "dof": dof,
            "alpha": PATH_CHECK_ALPHA, "converged_until": min(bad) - 1 if bad else ref.steps[-1], "replicas_used": counts}


def path_flags(diff, err, dof, alpha: float = PATH_CHECK_ALPHA) -> tuple[bool, list[bool]]:
    """The path check's tests of the indicator differences at the checkpoints (the horizon last): whether the
    horizon's differs at level alpha / 2, and which checkpoints differ at family-wise level alpha / 2."""
    at_horizon = differences_beyond_noise(diff[-1:], err[-1:], dof[-1:], alpha / 2)[0]
    return at_horizon, differences_beyond_noise(diff, err, dof, alpha / 2)


def _path_remedy(setup: NNSetup, delta: float, fewer_per_replica: int) -> str:
    """What a path-check failure most likely is, and what to do, for the DMFT scheme of ``setup``."""
    if not setup.source_tol:
        return ("the plain sources back-end carries a self-interaction that grows with t: use --source-tol 1e-3 "
                "(dmft eq. (6b)), more paths or the finite-d GD law")
    if not setup.edge_d:
        return ("with the truncated source basis this is mostly the extreme values of G (its left edge is the minimum "
                "over the paths; the clipped indicator does not move in validation/reports/dmft_paths): --edge-d D "
                "puts the edge of a data set at d = D instead (hessian eq. (5)); more paths or a smaller "
                "--source-tol check the rest")
    n = round(delta * setup.edge_d)
    return (f"each replica's plain indicator is a mean over data sets of n = {n} paths (hessian eq. (5); "
            f"{data_set_count(fewer_per_replica, n)} per replica in the run with fewer paths), which moves only by its noise, "
            "so the law itself moves with the paths (the self-interaction the truncated source basis leaves): more "
            "paths, or a smaller --source-tol with --own-term (dmft eq. (6e)), check it")


def _label_notes(evaluations) -> list:
    """The label cap of a settled law (thresholds.dmft eq. (10d)) at the deltas evaluated, with the share of the drawn
    paths past it and the dimension from which GD's data set holds one."""
    capped = sorted((e for e in evaluations if e.label_cap), key=lambda e: e.delta)
    if not capped:
        return []
    parts = [f"{e.delta:.4g}: y <= {e.label_cap:.4g}, " + ("P not recorded" if e.label_tail is None else
                                                            f"P = {e.label_tail:.2g}")
             + (f", d = {1 / (e.delta * e.label_tail):.3g}" if e.label_tail else "") for e in capped]
    return [f"settled labels (dmft eq. (10d)): the DMFT paths are drawn with labels below the cap at which a sample's "
            f"own step has the eigenvalue {SETTLED_EIGENVALUE:g} (eq. (10c)), so no path orbits; delta_NN is that of GD "
            "at the dimensions whose data sets hold no label past the cap, d well below 1 / (delta P) (at delta " +
            "; ".join(parts) + ")"]


def _closing_notes(setup, ref, lo, below, main) -> list:
    notes = []
    if setup.mean_field and ref.sectors:
        aa, ae, ss, se = ref.sectors[ref.at(int(setup.steps))]
        notes.append(f"m = inf (Hessian of the m -> inf limit on the first-phase law of width {setup.m}): at delta = "
                     f"{ref.delta:.4g} the antisymmetric sector's indicator is {aa:+.4f} +- {ae:.4f}, the symmetric "
                     f"sector's {ss:+.4f} +- {se:.4f} (> 0: negative hard outlier; thresholds.meanfield)")
        notes.append(f"m = inf: the law's own m -> inf limit is not taken; its {setup.m} neurons hold {setup.m} d "
                     f"parameters against n = {ref.delta:.3g} d samples" + (" (fewer: the first phase is not in "
                     "its wide regime)" if setup.m < ref.delta else "") + "; compare laws of other widths "
                     "(validation/reports/width/threshold.md)")
    if below:
        notes.append(f"negative hard outlier already at the lower end of the search ({lo:.4g}): delta_NN <= {lo:.4g}")
    if not main.found:
        notes.append(f"no negative hard outlier up to search_max = {setup.search_max:g}")
    return notes


def next_trial(x0, f0, x1, f1, rtol: float) -> float:
    """Next delta of the upward search from the last two points (x0 < x1, f1 <= 0): the root of the
    straight line through them aimed ``rtol`` past it, between 1.1 x1 and 2 x1; 2 x1 when there is
    one point or f is not increasing."""
    if x0 is None or not f1 > f0:
        return 2 * x1
    root = x1 + (x1 - x0) * (-f1) / (f1 - f0)
    return min(max(root * (1 + rtol), 1.1 * x1), 2 * x1)


def refine(g, a: float, b: float, rtol: float) -> float:
    """Shrink a bracket g(a) <= 0 < g(b) (0 < a < b) until (b - a)/sqrt(ab) <= rtol; returns the
    upper end of the final bracket.  Brent's method in log delta (scipy's brentq: inverse quadratic
    and secant steps, at least the tolerance inside the bracket so that a good estimate closes it,
    bisection when they do not progress); g is evaluated once per point (the ends are reused)."""
    from scipy.optimize import brentq
    vals = {a: g(a), b: g(b)}
    ends = {math.log(a): a, math.log(b): b}

    def h(lx):
        x = ends.get(lx, math.exp(lx))
        if x not in vals:
            vals[x] = g(x)
        return vals[x] if vals[x] != 0 else -1e-300  # g = 0 counts as "no outlier" (<= 0)
    root = math.exp(brentq(h, math.log(a), math.log(b), xtol=0.9 * 2 * math.asinh(rtol / 2), maxiter=200))
    pts = sorted((x, v) for x, v in vals.items() if a <= x <= b)
    pairs = [(x1, x2) for (x1, v1), (x2, v2) in zip(pts, pts[1:]) if v1 <= 0 < v2]
    return min(pairs, key=lambda p: abs(math.log(p[0] * p[1]) / 2 - math.log(root)))[1]

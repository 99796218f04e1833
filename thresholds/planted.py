"""Finite-d success of GD from the d = inf theory: the forced first steps, then the escape (m = 1).

Width m > 1 is thresholds.modes, which builds on the pieces here (critical_overlap along a direction of
the neurons, the grid of :func:`solve_grid`, DeltaPoint, crossing).

At finite d the hard overlap starts at O(d^{-1/2}) and the first steps add the sample forcing of the
hard gradient (thresholds.forcing).  In units of d^{-1/2} the hard component at step t* is, to first
order, a centred Gaussian A(t*) with variance V(t*) (forcing eq. (3)), the same at every d.  Referred
back to t = 0 by the growth of the initial overlap, it is an effective initial overlap

    q_eff = A(t*) / (G(t*, 0) sqrt(d)),    sqrt(d) q_eff ~ N(0, s^2),   s^2 = V(t*) / G(t*, 0)^2,           (1)

and from there the d = inf dynamics of a planted overlap (thresholds.dmft, eq. (7)) decides: GD escapes
by the horizon T when |q_eff| exceeds the critical planted overlap q_c(delta, T), the smallest M_H(0)
from which the hard fraction of the planted DMFT exceeds 1/2 at step T.  So

    P(delta, d) = 2 Phi_bar(sqrt(d) q_c(delta, T) / s(delta)),                                          (2)

and the crossing delta_1/2(d) solves sqrt(d) q_c(delta, T) = Phi_bar^{-1}(1/4) s(delta).              (3)

d enters through sqrt(d) (and the horizon); the two d = inf inputs are computed, not fitted.

The planted DMFT's own forcing.  On N paths, the estimate of the hard drift E[g_H psi] in eq. (7) of
thresholds.dmft has a Monte Carlo error that is a sum of N independent terms of mean zero, like the sample
forcing of a data set of n = N samples: each planted run also carries a random effective overlap, of size
sqrt((s^2 - rho0^2) delta / N) (the forced part of s at d = N / delta; 0.007-0.011 at N = 80k for the
deltas of validation/reports/planted), and with one seed for every q0 and delta its sign is shared by all
of them.  So q_c is read in the same units as the effective overlap of GD, from each run's own hard
overlap at t_map = 25 (or t*, if earlier):

    q_eff(run) = |M_H(t_map)| / G(t_map, 0),                                                               (4)

and the q_c bracket is that of q_eff between the highest run that stays and the lowest that escapes (the
noise after t_map remains).  Eq. (4) is a linear reading: a run whose hard fraction at t_map already
exceeds 0.25 has saturated and keeps q_eff = q0 (there q0 is far above the noise).  For seed 0 at 80k
paths the noise had grown the runs: eq. (4) moves quad's crossings by +0.07 to +0.22
(validation/reports/planted).  A q_c below the noise itself is not resolved.

Solving eq. (3) (:func:`predict`).  At each delta the bisection gives q_c to a bracket and s comes with
a standard error; f_d(delta) = sqrt(d) q_c / s - Phi_bar^{-1}(1/4) is interpolated linearly between
neighbouring deltas, and the crossing is its first sign change from + to -.  Its range takes the ends
that move it most: (q_c low, s + s.e.) for the lower end, (q_c high, s - s.e.) for the upper.  The grid
is grown outward by factors of ``expand`` until both range ends of every requested d are bracketed, then
refined until the deltas bracketing the central value are within a factor 1 + ``resolution``; the range
ends are interpolated on that grid (error at most h^2/8 |f''/f'| on an interval of width h).  q_c
decreases with delta, so a new delta between two computed ones starts its bisection from their q_c.  The
bisection's lower end is not moved below the noise of eq. (4); where the planted DMFT escapes from every
overlap tried, or from none (above 0.4 * 2^4), q_c is only bounded: such a delta enters with its bound
(and 0 or inf for the other range end), a bracket that ends on one is refined to a third of the
resolution, and a d whose sign the bound cannot decide is reported as not resolved.

Approximations, each stated where it is made:
* the forcing after t* is dropped.  s^2(t) grows slowly once the growth of the overlap dominates (quad /
  phase retrieval, delta 5: 1.42, 1.63, 1.69, 1.91 at t = 10, 25, 50, 100; gelu, delta 12: 1.82 at 50,
  2.05 at 100); t* = 50 is used, and t* = 25 moves the predicted crossings by +0.03 to +0.05
  (validation/reports/planted).  This is the approximation that fails for gelu: the forcing keeps acting
  while a run creeps near q_c, and finite-d GD escapes from effective overlaps about half of q_c there
  (thresholds.forced keeps the forcing at every step; validation/reports/planted section 6);
* the escape is monotone in |M_H(0)| (bisection in log q);
* finite-n effects other than the initial overlap and the forcing (Hessian outliers on extreme labels)
  are left out;
* the planted DMFT is the ``sources`` back-end, with its long-horizon bias (issue: unbiased DMFT) at the
  horizons it is run for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import ndtri
from scipy.stats import chi, norm

from .dmft import DMFTSetup, solve_dmft
from .errors import ThresholdsError
from .forcing import amplitude_law
from .problem import Problem

SCOPE = ("Checked against GD at a fixed horizon of 600 steps, m = 1: quad, eta 0.05, phase retrieval "
         "(d = 200-3200) and y = |z| (d = 200-800): within 1.7 combined s.e.; gelu / phase retrieval, eta 0.1, "
         "d = 200-400: about 1 too high (2-3.5 s.e.); other setups unchecked (validation/reports/planted).")
T_MAP = 25  # the step at which a planted run's own effective overlap is read (eq. (4))
LINEAR_FRACTION = 0.25  # eq. (4) is used while the run's hard fraction at t_map is at most this
QUARTILE = float(-ndtri(0.25))  # Phi_bar^{-1}(1/4) = 0.6745: P = 1/2 in eq. (2)


@dataclass
class CriticalOverlap:
    """q_c(delta, steps) bracketed by the planted DMFT runs: ``low`` stays below hard fraction 1/2 at
    ``steps``, ``high`` exceeds it; ``runs`` = [(q0, hard fraction at steps), ...]."""

    delta: float
    steps: int
    low: float
    high: float
    runs: list = field(default_factory=list)
    amplitudes: dict = field(default_factory=dict)   # q0 -> |M_H(t_map)| of its run, None past LINEAR_FRACTION

    @property
    def value(self) -> float:
        return math.sqrt(self.low * self.high)

    def effective(self, growth: float):
        """The bracket as effective initial overlaps, eq. (4): |M_H(t_map)| / G(t_map, 0) of the highest run
        that stays and of the lowest that escapes (0 / inf for a one-sided bracket)."""
        eff = {q: (a / growth if a is not None else q) for q, a in self.amplitudes.items()}
        stay = [eff[q] for q, f in self.runs if f <= 0.5 and q in eff]
        esc = [eff[q] for q, f in self.runs if f > 0.5 and q in eff]
        low = max(stay) if stay else (0.0 if self.low == 0 else math.nan)
        high = min(esc) if esc else (math.inf if not math.isfinite(self.high) else math.nan)
        return (low, high) if not low > high else (high, low)  # crossed by the noise after t_map: between them


def planted_start(q0: float, direction=None):
    """The DMFT's ``planted`` field for M_H(0) = q0 v: one number when every neuron starts alike (v = None or
    all entries equal to 1), else the tuple q0 v_j (zeros allowed)."""
    if direction is None or all(v == 1 for v in direction):
        return float(q0)
    return tuple(float(q0 * v) for v in direction)


def planted_run(problem: Problem, delta: float, q0: float, steps: int, *, paths: int, seed: int = 0,
                cache: bool = True, direction=None, source_tol: float = 0.0):
    """The planted DMFT from M_H(0) = q0 v (``direction`` v, m entries with (1/m)|v|^2 = 1; None: every neuron
    q0), one replica of ``paths`` paths (``source_tol``: thresholds.dmft eq. (6b)), cached on disk unless
    ``cache`` is False."""
    if not (q0 > 0 and math.isfinite(q0)):
        raise ThresholdsError(f"a planted overlap must be a positive number, got {q0!r}")
    return solve_dmft(DMFTSetup.from_problem(replace(problem, steps=int(steps)), delta, paths=paths, replicas=1,
                                             seed=seed, planted=planted_start(q0, direction),
                                             source_tol=source_tol), cache=cache)


def mode_amplitude(res, t: int, direction) -> float:
    """|a_v(t)| = |(1/m) v . M_H(t)| over the hard directions (thresholds.modes, eq. (1)); v = None: every
    neuron alike, |M_H(t)| in the root mean square over neurons (the m = 1 reading)."""
    if direction is None or len(direction) == 1:
        return math.sqrt(float(res.hard_overlap[t]))
    if res.hard_signal is None:
        raise ThresholdsError("this cached planted run has no per-neuron hard overlaps; run again without the "
                              "cache")
    v = np.asarray(direction, dtype=float)
    return float(np.linalg.norm(res.hard_signal[:, t].mean(axis=0) @ v / v.size))


def run_amplitude(res, t_map: int, direction=None):
    """The amplitude of a planted run at t_map for eq. (4) (:func:`mode_amplitude`), or None once its hard
    fraction at t_map exceeds LINEAR_FRACTION (saturated: the run then counts with its q0)."""
    if float(res.hard_fraction[t_map]) > LINEAR_FRACTION:
        return None
    return mode_amplitude(res, t_map, direction)


def hard_fraction(problem: Problem, delta: float, q0: float, steps: int, *, paths: int, seed: int = 0,
                  cache: bool = True) -> np.ndarray:
    """Hard fraction per step of the planted DMFT (:func:`planted_run`)."""
    return planted_run(problem, delta, q0, steps, paths=paths, seed=seed, cache=cache).hard_fraction


def critical_overlap(problem: Problem, delta: float, steps: int, *, low=0.01, high=0.4, ratio=1.25,
                     paths=80_000, seed=0, progress=None, moves: int = 3, bounded: bool = False,
                     cache: bool = True, t_map: int = None, direction=None, reading=None,
                     source_tol: float = 0.0) -> CriticalOverlap:
    """Bisection in log q0 for the smallest planted overlap that escapes by ``steps`` (module docstring);
    ``low``/``high`` are moved outward by factors of 2 (at most ``moves`` times) when they do not bracket.
    Past that, ThresholdsError, or with ``bounded`` a one-sided result: [0, q] when the planted DMFT escapes
    from every overlap tried (q_c is below the smallest, or below the DMFT's own Monte Carlo forcing,
    which acts like the sample forcing at d = paths / delta), [q, inf] when it escapes from none.  With
    ``t_map``, each run's |M_H(t_map)| is kept (``amplitudes``, for eq. (4)).  ``direction``: plant along a
    mode v of the neurons (:func:`planted_run`; the amplitude is then that of the mode); ``reading(res)``
    replaces :func:`run_amplitude` as the kept amplitude; ``source_tol``: the source basis of the runs
    (thresholds.dmft eq. (6b))."""
    runs, amplitudes = [], {}

    def escapes(q):
        res = planted_run(problem, delta, q, steps, paths=paths, seed=seed, cache=cache, direction=direction,
                          source_tol=source_tol)
        frac = float(res.hard_fraction[-1])
        runs.append((q, frac))
        if reading is not None:
            amplitudes[q] = reading(res)
        elif t_map is not None:
            amplitudes[q] = run_amplitude(res, t_map, direction)
        if progress is not None:
            progress(q, frac)
        return frac > 0.5

    moved = 0
    while escapes(low):         # an escaping lower end becomes the upper end
        low, high, moved = low / 2, low, moved + 1
        if moved > moves:
            if bounded:
                return CriticalOverlap(float(delta), int(steps), 0.0, high, runs, amplitudes)
            raise ThresholdsError(f"the planted DMFT escapes by step {steps} from every overlap down to {high:g}")
    grown = 0
    while not moved and not escapes(high):  # a lower end that stays is below q_c; check the upper end
        low, high, grown = high, 2 * high, grown + 1
        if grown > moves:
            if bounded:
                return CriticalOverlap(float(delta), int(steps), low, math.inf, runs, amplitudes)
            raise ThresholdsError(f"the planted DMFT does not escape by step {steps} from overlaps up to {low:g}")
    while high / low > ratio:
        mid = math.sqrt(low * high)
        if escapes(mid):
            high = mid
        else:
            low = mid
    return CriticalOverlap(float(delta), int(steps), low, high, runs, amplitudes)


def spread(problem: Problem, delta: float, *, tstar: int = 50, paths: int = 40_000, replicas: int = 4,
           cache: bool = True, law: bool = False):
    """s(delta) of eq. (1) at t*, with its standard error (delta method over the replicas of the
    amplitude law); the pathwise DMFT run is cached on disk unless ``cache`` is False.  With ``law``, the
    amplitude law (thresholds.forcing.AmplitudeLaw) is returned as a third value."""
    amp = amplitude_law(DMFTSetup.from_problem(replace(problem, steps=int(tstar)), delta, paths=paths,
                                               replicas=replicas, response="pathwise"), cache=cache)
    G, V = amp.growth[tstar], amp.variance[tstar]
    s = math.sqrt(V) / G
    err = s * math.hypot(0.5 * amp.variance_err[tstar] / V, amp.growth_err[tstar] / G)
    return (s, err, amp) if law else (s, err)


def success_probability(q_c: float, s: float, d: int) -> float:
    """Eq. (2)."""
    return float(2 * norm.sf(math.sqrt(d) * q_c / s))


@dataclass
class DeltaPoint:
    """One delta of the prediction: the q_c bracket (eq. (2)) and s with its standard error (eq. (1))."""

    delta: float
    q_low: float              # q_c bracket as effective initial overlaps (eq. (4)); the planted q0 without t_map
    q_high: float
    s: float
    s_err: float
    runs: list = field(default_factory=list)   # [(q0, hard fraction at the horizon), ...]
    q0_low: float = None      # the bracket of the planted q0 itself
    q0_high: float = None
    dof: int = 1              # dimension of the amplitude's subspace (thresholds.modes, eq. (5))

    @property
    def q(self) -> float:
        """The central q_c: the geometric mean of the bracket, or its finite end when q_c is only bounded."""
        if self.bounded:
            return self.q_high if self.q_low == 0 else self.q_low
        return math.sqrt(self.q_low * self.q_high)

    @property
    def bounded(self) -> bool:
        """q_c only bounded on one side: [0, q] (escape from every overlap tried) or [q, inf] (from none)."""
        return self.q_low == 0 or not math.isfinite(self.q_high)

    def margin(self, d: int, end: str = "mid") -> float:
        """f_d = sqrt(d) q_c / s - Phi_bar^{-1}(1/4) of eq. (3) (> 0: below the crossing); ``end`` "low" or
        "high" takes the pairing that moves the crossing most (module docstring): (q_c low, s + s.e.),
        (q_c high, s - s.e.)."""
        return self.ratio(d, end) - QUARTILE

    def ratio(self, d: int, end: str = "mid") -> float:
        """sqrt(d) q_c / s at one range end (:meth:`margin`)."""
        q, s = {"mid": (self.q, self.s), "low": (self.q_low, self.s + self.s_err),
                "high": (self.q_high, max(self.s - self.s_err, 1e-12))}[end]
        return math.sqrt(d) * q / s

    def probability(self, d: int, end: str = "mid") -> float:
        """The chance that the amplitude's norm exceeds q_c: eq. (2) (``dof`` 1), thresholds.modes eq. (5)."""
        return float(chi.sf(self.ratio(d, end), self.dof))


@dataclass
class FiniteDCrossing:
    """delta_1/2(d) of eq. (3) with its range; ``found`` False when no computed delta brackets it (then
    ``value`` is nan and ``note`` says on which side of the computed deltas it lies).  A range end that the
    computed deltas do not bracket (the grid stops at the search limits) is nan, and ``note`` says so."""

    d: int
    value: float
    low: float
    high: float
    found: bool
    note: str = ""

    def to_json(self) -> dict:
        return {"d": self.d, "value": _number(self.value), "low": _number(self.low), "high": _number(self.high),
                "found": self.found, "note": self.note}


@dataclass
class FiniteDPrediction:
    """The finite-d success threshold of GD by step ``problem.steps`` (module docstring) for each d."""

    problem: Problem
    points: list            # DeltaPoint, by increasing delta
    crossings: list         # FiniteDCrossing, by increasing d
    paths: int
    spread_paths: int
    tstar: int
    seconds: float = 0.0
    scope: str = SCOPE
    source_tol: float = 0.0  # the source basis of the planted runs (thresholds.dmft eq. (6b))

    def to_json(self) -> dict:
        return {"method": "planted DMFT + forcing law (thresholds.planted, eqs. (1)-(3))",
                "horizon_steps": self.problem.steps, "paths": self.paths, "spread_paths": self.spread_paths,
                "tstar": self.tstar, "scope": self.scope, "seconds": self.seconds, "source_tol": self.source_tol,
                "crossings": [c.to_json() for c in self.crossings],
                "points": [point_json(p) for p in self.points]}


def point_json(p) -> dict:
    """A DeltaPoint, or a point with one DeltaPoint per angle (thresholds.modes), for JSON."""
    if hasattr(p, "angles"):   # thresholds.modes: one DeltaPoint per angle phi of its eq. (6)
        return {"delta": p.delta, "m": p.m, "angles": {f"{phi:.6f}": point_json(q) for phi, q in p.angles.items()}}
    return {"delta": p.delta, "q_c_low": p.q_low, "q_c_high": _number(p.q_high), "planted_q0_low": p.q0_low,
            "planted_q0_high": _number(p.q0_high), "s": p.s, "s_err": p.s_err, "dof": p.dof,
            "runs": [list(r) for r in p.runs]}


def _number(value):
    """A float for JSON: None for nan, inf or a missing value."""
    return value if value is not None and math.isfinite(value) else None


def _first_root(deltas, f) -> float:
    """The first + to - sign change of f (linear interpolation in delta), nan when there is none."""
    for i in range(len(f) - 1):
        if f[i] > 0 >= f[i + 1]:
            if not math.isfinite(f[i]):  # q_c only bounded below there: the root tends to the upper delta
                return float(deltas[i + 1])
            return float(deltas[i] - f[i] * (deltas[i + 1] - deltas[i]) / (f[i + 1] - f[i]))
    return math.nan


def crossing(points, d: int) -> FiniteDCrossing:
    """Eq. (3) at dimension d on the computed deltas (module docstring: interpolation and range)."""
    pts = sorted(points, key=lambda p: p.delta)
    deltas = [p.delta for p in pts]
    mid, low, high = (_first_root(deltas, [p.margin(d, end) for p in pts]) for end in ("mid", "low", "high"))
    if math.isfinite(mid):
        ends = [name for name, v in (("lower", low), ("upper", high)) if not math.isfinite(v)]
        return FiniteDCrossing(int(d), mid, low, high, True,
                               f"{' and '.join(ends)} end of the range beyond the computed deltas" if ends else "")
    if not pts:
        return FiniteDCrossing(int(d), math.nan, math.nan, math.nan, False, "no delta computed")
    open_end = next((p for p in pts if p.q_low == 0 and p.margin(d) > 0), None)
    if open_end is not None:  # an upper bound on q_c that does not decide the sign at this d
        return FiniteDCrossing(int(d), math.nan, math.nan, math.nan, False,
                               f"not resolved: at delta {open_end.delta:g} the planted DMFT escapes from every overlap "
                               f"down to {open_end.q_high:.3g}, its own Monte Carlo forcing; more paths resolve it")
    side = "below" if pts[0].margin(d) <= 0 else "above"
    return FiniteDCrossing(int(d), math.nan, math.nan, math.nan, False,
                           f"{side} the computed deltas [{deltas[0]:g}, {deltas[-1]:g}]")


def latent_refusal(problem: Problem) -> str:
    """Why the link is outside the finite-d predictions ('' when it is not): they are derived for one hard
    direction and no easy one.  With r_H > 1 hard directions each neuron starts with r_H overlaps (a chi law
    of m r_H degrees of freedom) and the amplitude of eq. (4) would need their joint escape; with easy
    directions the first phase learns a signal and the forcing law (thresholds.forcing) is not derived."""
    from .alg import latent_split
    try:
        split = latent_split(problem.link)
    except ThresholdsError as err:
        return f"the finite-d prediction needs the link's easy / hard split, which is not available: {err}"
    r_E, r_H = split.easy.shape[0], split.hard.shape[0]
    if r_E == 0 and r_H == 1:
        return ""
    return (f"the finite-d prediction is derived for targets with one hard direction and no easy one; "
            f"link {problem.link!r} has {r_H} hard and {r_E} easy direction(s)")


def refusal(problem: Problem) -> str:
    """Why :func:`predict` does not cover ``problem`` ('' when it does): one neuron, plain GD and a link
    with one hard direction only."""
    if problem.m != 1 or problem.sphere:
        return ("the finite-d prediction is derived for one neuron (m = 1) and plain GD (the forcing law uses "
                "the pathwise DMFT; no --sphere)")
    return latent_refusal(problem)


def predict(problem: Problem, dims, *, start: float = 8.0, expand: float = 1.5, resolution: float = 0.12,
            search_min: float = 0.5, search_max: float = 64.0, paths: int = 80_000, spread_paths: int = 160_000,
            tstar: int = 50, ratio: float = 1.25, seed: int = 0, cache: bool = True, log=None,
            source_tol: float = 0.0) -> FiniteDPrediction:
    """delta_1/2(d) of eq. (3) for each d at the horizon ``problem.steps``, on a grid of deltas grown from
    ``start`` (module docstring).  Every DMFT run is cached on disk (unless ``cache`` is False), so an
    interrupted prediction resumes.  ``source_tol``: the source basis of the planted runs of q_c
    (thresholds.dmft eq. (6b)).
    ``log(text)`` gets one line per DMFT run and per delta."""
    import time

    from .errors import UnsupportedError
    if refusal(problem):
        raise UnsupportedError(refusal(problem))
    dims = grid_dims(dims, start=start, expand=expand, resolution=resolution, search_min=search_min,
                     search_max=search_max)
    say = log or (lambda text: None)
    tstar = min(int(tstar), int(problem.steps))  # the effective overlap is taken no later than the horizon
    t_map = min(T_MAP, tstar)
    t0 = time.time()

    def point(delta, points):
        low, high = start_bracket(points, delta)
        s, s_err, amp = spread(problem, delta, tstar=tstar, paths=spread_paths, cache=cache, law=True)
        # the DMFT's own forcing as an effective overlap: the forced part of s at d = paths / delta
        noise = math.sqrt(max(s * s - problem.rho0**2, 0.0) * delta / paths)
        qc = critical_overlap(problem, delta, problem.steps, low=low, high=high, ratio=ratio, paths=paths, seed=seed,
                              source_tol=source_tol,
                              progress=lambda q, f: say(f"delta {delta:g}: planted q0 = {q:.4g} -> hard fraction "
                                                        f"{f:.3f} at step {problem.steps}"), moves=noise_moves(low, noise),
                              bounded=True, cache=cache, t_map=t_map)
        q_low, q_high = qc.effective(float(amp.growth[t_map]))
        say(f"delta {delta:g}: q_c in [{q_low:.4g}, {q_high:.4g}] as effective overlaps (planted [{qc.low:.4g}, "
            f"{qc.high:.4g}]), s = {s:.3f} +- {s_err:.2g}")
        return DeltaPoint(delta, q_low, q_high, s, s_err, qc.runs, qc.low, qc.high)

    points = solve_grid(point, dims, start=start, expand=expand, resolution=resolution, search_min=search_min,
                        search_max=search_max)
    pts = sorted(points.values(), key=lambda p: p.delta)
    return FiniteDPrediction(problem, pts, [crossing(pts, d) for d in dims], paths, spread_paths, tstar,
                             seconds=time.time() - t0, source_tol=source_tol)


def grid_dims(dims, *, start, expand, resolution, search_min, search_max) -> list:
    """The sorted distinct dimensions of a prediction, after checking the grid's options (ThresholdsError)."""
    if not (0 < search_min < start < search_max and expand > 1 and resolution > 0):
        raise ThresholdsError("need 0 < search_min < start < search_max, expand > 1 and resolution > 0")
    dims = sorted({int(d) for d in dims})
    if not dims or dims[0] < 1:
        raise ThresholdsError("give at least one dimension d >= 1")
    return dims


def noise_moves(low: float, noise: float) -> int:
    """How many times the bisection may halve its lower end before it reaches the DMFT's own forcing."""
    return 4 if noise == 0 else min(4, max(0, math.floor(math.log2(low / noise))))


def start_bracket(points: dict, delta: float, select=lambda p: p):
    """A first bracket of q_c at ``delta`` from the computed deltas (``select`` picks the DeltaPoint of a
    computed point): q_c decreases with delta, so neighbours on both sides bracket it."""
    pts = [select(p) for p in points.values()]
    below = [p for p in pts if p.delta < delta]
    above = [p for p in pts if p.delta > delta]
    if below and above:
        low, high = min(above, key=lambda p: p.delta).q_low, max(below, key=lambda p: p.delta).q_high
    elif pts:
        near = min(pts, key=lambda p: abs(math.log(p.delta / delta)))
        low, high = near.q / 2, near.q * 2
    else:
        low, high = 0.01, 0.4
    if not low > 0:                 # a neighbour with a one-sided q_c gives only one end
        low = high / 4
    if not math.isfinite(high):
        high = low * 4
    if not low < high:
        low, high = min(low, high) / 1.5, max(low, high) * 1.5
    return low, high


def solve_grid(point, dims, *, start, expand, resolution, search_min, search_max) -> dict:
    """The grid of deltas of :func:`predict` (module docstring, "Solving eq. (3)"): ``point(delta, points)``
    computes one point (anything with ``delta``, ``bounded`` and ``margin(d, end)``); returns {delta: point}."""
    points = {}

    def add(delta):
        delta = float(delta)
        if delta not in points:
            points[delta] = point(delta, points)

    add(start)
    # grow down until the lower range end of d_min is bracketed, up until the upper end of d_max is
    while points[min(points)].margin(dims[0], "low") <= 0:
        lowest = min(points)
        if lowest / expand < search_min:
            break
        add(lowest / expand)
    while points[max(points)].margin(dims[-1], "high") > 0:
        highest = max(points)
        if highest * expand > search_max:
            break
        add(highest * expand)
    while True:   # refine the bracket of every d
        pts = sorted(points.values(), key=lambda p: p.delta)
        todo = set()
        for d in dims:
            for a, b in zip(pts, pts[1:]):
                if a.margin(d) > 0 >= b.margin(d):  # a one-sided q_c at an end: refine three times finer
                    if b.delta / a.delta > 1 + resolution / (3 if a.bounded or b.bounded else 1):
                        todo.add(math.sqrt(a.delta * b.delta))
                    break
        if not todo:
            break
        for delta in sorted(todo):
            add(round(delta, 4))
    return points

"""delta_NN: the sample ratio at which the Hessian reached by the first phase of GD
has a negative outlier along the hard direction (THEORY sections 4-5), for any width m
(m = 1: scalar equations; m > 1: the m x m engine, thresholds.stieltjes_m; m = inf: the
sector equations of thresholds.meanfield on a law of finite width).

For each delta the law of (u, y, g) after the first phase is obtained either
from finite-d GD restricted to the complement of theta_* (``law = "gd"``, the
default: dimension ``law_d``, ``replicas`` seeds) or from the DMFT
(``law = "dmft"``, cached; its law is biased at long horizons unless the
number of paths is large, see README, so a path check at half the paths is
reported).  At the 16 checkpoints t = T/16, ..., T the Hessian weight law G_t
gives the hard-outlier indicator

    I_t(delta) = -S(alpha at min(0, left bulk edge))      (> 0 iff a negative hard outlier exists)

as the mean and standard error over the replicas (thresholds.hessian).

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

t -> inf.  delta_NN(t) at the earlier checkpoints is read off the same
evaluations (first sign change of I_t, linear interpolation).  The curve is
declared converged when |delta_NN(T) - delta_NN(T/2)| is within the interval
half-width of delta_NN(T) plus rtol delta_NN(T); otherwise the result is
returned with ``converged = False`` and the user is told to lengthen the
horizon.

Unbounded G.  The law of G is the empirical law of the paths (or samples).  When G is
unbounded below (y = g^2 with sigma'' != 0), the strict d -> inf bulk has no
left edge; the sample minimum over the paths plays the part of the most
negative sample-localized mode of a finite data set.  The indicator is
therefore computed twice: on the plain path law and on the law clipped from
below at its 1e-3 quantile.  Both crossings are reported
(``delta_nn`` / ``delta_nn_clipped``); a difference beyond their intervals
means the threshold is driven by the extreme tail and is flagged.

Transient window.  delta_NN(t) need not be monotone in t: when the first
phase keeps moving (e.g. ||theta|| growing without bound), a hard outlier can
exist at intermediate t and disappear later.  The smallest delta_NN(t) over
the checkpoints is reported as ``delta_nn_transient`` with its step (refined,
like the horizon crossing, with runs stopped at that step:
``transient_evaluations``); at
finite d, where escaping needs only about log(sqrt d)/(eta |z*|) steps, GD
can use that window.

Grokking and finite d (THEORY section 5).  While the Hessian has a negative
hard outlier z*(t), the hard component of theta grows by (1 - eta z*(t)) per
step from an overlap of order d^{-1/2} (linearization around the first-phase
trajectory; the O(1) constant in front of d^{-1/2} is set to 1).  With z*(t)
at the checkpoints (piecewise constant in between, no growth without an
outlier) the log-growth is L(t) = sum log(1 - eta z*), and GD escapes at the
first t with L(t) = log sqrt(d); with a stable outlier at the horizon this
is THEORY's t_1 + log(sqrt d) / (eta |z*|).  The same L gives a finite-d
threshold: the smallest delta with L(T) >= log sqrt(d) (``finite_d``), which
tends to delta_NN as d -> inf and is what a simulation at that d measures.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .dmft import DMFTSetup, checkpoints
from .errors import DivergenceError, ThresholdsError, UnsupportedError
from .hessian import CLIP_QUANTILE, hessian_spectra, hessian_spectra_gd

FINITE_D = (200, 400, 1000, 2000, 4000, 10_000, 100_000)
SCANNABLE = ("rho0", "a", "b", "eta", "weight_decay", "steps")


@dataclass
class NNSetup:
    """Everything that determines delta_NN (printed with every result)."""

    activation: str
    link: str = "phase_retrieval"
    eta: float = 0.1
    steps: int = 400
    a: float = 1.0
    b: float = 0.0
    rho0: float = 1.0
    weight_decay: float = 0.0
    loss: str = "square"
    m: int = 1
    sphere: bool = False
    mean_field: bool = False  # m = inf: the m -> inf Hessian (thresholds.meanfield) on the law of width m
    law: str = "gd"          # "gd": law of (u, y, g) from finite-d GD (replicas = seeds); "dmft" (README)
    law_d: int = 1000        # dimension of the "gd" law
    law_dtype: str = "float32"  # storage of the "gd" law's data (accumulations are float64; README)
    paths: int = 20_000
    replicas: int = 3
    seed: int = 0
    search_min: float = 0.0
    search_max: float = 64.0
    rtol: float = 0.02

    def __setstate__(self, state):
        state.setdefault("law_dtype", "float64")  # pickled before the field existed: float64 laws
        state.setdefault("mean_field", False)
        self.__dict__.update(state)

    @property
    def width(self) -> str:
        """The network width as printed: the integer m, or "inf (law of width m)" with ``mean_field``."""
        return f"inf (law of width {self.m})" if self.mean_field else str(self.m)

    def dmft(self, delta: float) -> DMFTSetup:
        return DMFTSetup(self.activation, self.link, float(delta), self.eta, int(self.steps), a=self.a, b=self.b,
                         rho0=self.rho0, weight_decay=self.weight_decay, paths=self.paths,
                         replicas=self.replicas, seed=self.seed, loss=self.loss, m=self.m,
                         sphere=self.sphere)

    def validate(self):
        self.dmft(1.0).validate()
        if self.m != 1 and self.sphere:
            raise UnsupportedError("delta_NN of spherical GD covers m = 1")
        if self.mean_field and (self.law != "gd" or self.m < 2):
            raise UnsupportedError("m = inf needs the finite-d law (--law gd) of a population of width >= 2 "
                                   "(the DMFT of the m -> inf limit is not built)")
        if self.law not in ("dmft", "gd"):
            raise ThresholdsError(f"law must be 'dmft' or 'gd', got {self.law!r}")
        if self.law_dtype not in ("float32", "float64"):
            raise ThresholdsError(f"law_dtype must be 'float32' or 'float64', got {self.law_dtype!r}")
        if self.law == "gd" and self.law_d < 50:
            raise ThresholdsError("law_d must be >= 50")
        if not 0 < self.rtol < 1:
            raise ThresholdsError(f"rtol must be in (0, 1), got {self.rtol}")
        if not self.search_max > max(self.search_min, 0):
            raise ThresholdsError("search_max must exceed search_min")


@dataclass
class Evaluation:
    """Hessian indicators at one delta, per checkpoint step."""

    delta: float
    steps: list
    indicator: list
    indicator_err: list
    clipped: list
    clipped_err: list
    left_edge: list
    left_edge_err: list
    outlier_z: list          # lowest hard outlier (nan when none) per checkpoint
    outlier_z_err: list
    overlap2: list
    hard_z: list = field(default_factory=list)  # per checkpoint: per-replica lowest negative hard outlier
    sectors: tuple = ()  # m = inf, per checkpoint: (antisymmetric, s.e., symmetric, s.e.) indicators

    def at(self, step):
        return self.steps.index(step)


@dataclass
class Crossing:
    value: float
    low: float
    high: float
    found: bool

    def to_json(self):
        enc = (lambda v: "inf" if v == math.inf else v)
        return {"value": enc(self.value), "low": enc(self.low), "high": enc(self.high), "found": self.found}


@dataclass
class NNResult:
    setup: NNSetup
    delta_alg: float
    delta_nn: float
    low: float
    high: float
    found: bool
    below_range: bool
    clipped: Crossing
    t_curve: list               # [(step, Crossing)]
    converged: bool
    settled: bool
    transient: Crossing         # smallest delta_NN(t) over the checkpoints
    transient_step: int
    left_edge: float
    left_edge_err: float
    evaluations: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    path_check: dict = None
    transient_evaluations: list = None   # runs to the transient step only (its refinement)

    @property
    def crossing_at_horizon(self) -> Crossing:
        return Crossing(self.delta_nn, self.low, self.high, self.found)

    def finite_d(self, dims) -> list:
        """Predicted finite-d threshold per d: smallest delta at which the linearized growth of
        the hard component through the first phase, exp(L(T)), reaches sqrt(d) (``growth``)."""
        eta = self.setup.eta
        evs = sorted(self.evaluations, key=lambda e: e.delta)
        curves = [(e.delta, growth(e, eta), e.indicator[-1] > 0) for e in evs]
        out = []
        for d in dims:
            target = 0.5 * math.log(d)
            # an outlier still present at the horizon keeps growing: escape at every d
            vals = [(delta, max(float(L[-1]) - target, 1e-9) if alive else float(L[-1]) - target, float(se[-1]))
                    for delta, (_, L, se), alive in curves]
            out.append({"d": int(d), **first_crossing(vals).to_json()})
        return out

    @property
    def ratio(self) -> float:
        return self.delta_nn / self.delta_alg if self.delta_alg > 0 else math.inf

    def to_json(self) -> dict:
        enc = (lambda v: "inf" if v == math.inf else v)
        out = {"delta_nn": enc(self.delta_nn), "delta_nn_low": enc(self.low), "delta_nn_high": enc(self.high),
               "found": self.found, "below_range": self.below_range, "delta_alg": enc(self.delta_alg),
               "ratio": enc(self.ratio), "delta_nn_clipped": self.clipped.to_json(),
               "clip_quantile": CLIP_QUANTILE,
               "t_curve": [{"step": s, "t": s * self.setup.eta, **c.to_json()} for s, c in self.t_curve],
               "converged": self.converged, "settled": self.settled,
               "finite_d": self.finite_d(FINITE_D),
               "delta_nn_transient": {"step": self.transient_step, **self.transient.to_json()},
               "left_edge": self.left_edge, "left_edge_err": self.left_edge_err,
               "setup": asdict(self.setup), "notes": self.notes, "seconds": self.seconds,
               "path_check": self.path_check,
               "evaluations": [asdict(e) for e in self.evaluations],
               "transient_evaluations": [asdict(e) for e in self.transient_evaluations or []]}
        if not self.found:
            out["search_max"] = self.setup.search_max
        return out


def evaluate(setup: NNSetup, delta: float, *, cache: bool = True, progress=None,
             outliers: str = "none", final_only: bool = False) -> Evaluation:
    """Hessian indicators at every checkpoint for one delta (one DMFT run or one set of GD runs); the outlier
    positions (``outlier_z``, nan where not located) at the steps ``outliers`` asks for.  ``final_only``
    (finite-d law): the indicators at the last step only."""
    from . import cache as _cache
    law_setup = {k: v for k, v in _setup_fields(setup).items() if k not in SEARCH_FIELDS}
    key = {"nn-eval": law_setup, "delta": float(delta), "outliers": outliers, "version": 1}
    if final_only and setup.law == "gd":
        key["final_only"] = True
    if setup.law == "dmft":
        spectra = hessian_spectra(setup.dmft(delta), cache=cache, progress=progress, outliers=outliers)
    else:
        hit = _cache.load("nn-eval", key) if cache else None
        if hit is not None:
            return hit
        spectra = hessian_spectra_gd(setup.dmft(delta), setup.law_d, outliers=outliers, progress=progress,
                                     dtype=setup.law_dtype, final_only=final_only, mean_field=setup.mean_field)
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
        if h.sectors:
            ev.sectors += (tuple(float(v) for v in h.sectors),)
    if setup.law == "gd" and cache:
        _cache.store("nn-eval", key, ev)
    return ev


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


def crossing(evals: list, step: int, key: str = "indicator", bracket_only: bool = False) -> Crossing:
    """First sign change (- to +) of the indicator at ``step`` along the evaluated deltas,
    by linear interpolation; interval = bracket half-width and Monte Carlo half-width in quadrature."""
    pts = sorted(evals, key=lambda e: e.delta)
    return first_crossing([(e.delta, getattr(e, key)[e.at(step)], getattr(e, key + "_err")[e.at(step)])
                           for e in pts])


def first_crossing(vals, window: float = 1.25) -> Crossing:
    """First sign change (- to +) of f along [(delta, f, s.e.)] sorted in delta.

    The crossing is the linear interpolation between the two bracketing points.  Its
    half-width is the larger of (i) the bracket half-width and 2 s.e./slope in quadrature and
    (ii) twice the standard error of the root of a weighted straight-line fit of f over every
    point within a factor ``window`` of the crossing (at least 3 points), the fit covariance
    scaled up by the reduced chi^2 when the points scatter more than their error bars
    (indicators at neighbouring deltas that are not monotone within the noise)."""
    if vals and vals[0][1] > 0:
        d0 = vals[0][0]
        return Crossing(d0, 0.0, d0, True)
    for (d1, f1, s1), (d2, f2, s2) in zip(vals, vals[1:]):
        if f1 <= 0 < f2:
            x = d1 + (d2 - d1) * (-f1) / (f2 - f1)
            slope = (f2 - f1) / (d2 - d1)
            se = s1 + (s2 - s1) * (x - d1) / (d2 - d1)
            hw = math.hypot((d2 - d1) / 2, 2 * se / slope)
            near = [(d, f, e) for d, f, e in vals if x / window <= d <= x * window]
            floor = 1e-9 * max((abs(f) for _, f, _ in near), default=0.0) + 1e-300
            near = [(d, f, max(e, floor)) for d, f, e in near]
            if len(near) >= 3 and len({d for d, _, _ in near}) >= 2:
                dd, ff, ee = (np.array(v, dtype=float) for v in zip(*near))
                X = np.column_stack([np.ones_like(dd), dd - x])
                W = 1.0 / ee**2
                cov = np.linalg.pinv(X.T @ (X * W[:, None]))
                coef = cov @ (X.T @ (W * ff))
                chi2 = float(np.sum(W * (ff - X @ coef) ** 2))
                cov = cov * max(1.0, chi2 / (len(near) - 2))
                a, b = coef
                if b > 0:
                    grad = np.array([-1.0 / b, a / b**2])
                    var = float(grad @ cov @ grad)
                    if math.isfinite(var) and var > 0:
                        hw = max(hw, 2 * math.sqrt(var))
            return Crossing(x, max(x - hw, 0.0), x + hw, True)
    last = vals[-1][0] if vals else math.inf
    return Crossing(math.inf, last, math.inf, False)


SEARCH_FIELDS = ("search_min", "search_max", "rtol")  # how a threshold is searched, not what it is
# fields a cached result may differ in when a caller accepts "the same setup" (cached_delta_nn any_search):
# the search settings, and the storage precision of the finite-d law (float32 and float64 laws give the
# same indicators to ~1e-4, 0.14 s.e. next to the step-size stability limit, far inside their Monte Carlo
# errors elsewhere: tests/test_nn.py, README)
RELAXED_FIELDS = SEARCH_FIELDS + ("law_dtype",)


def _setup_fields(setup: NNSetup) -> dict:
    """The setup as a cache key: every field, except ``law_dtype`` when it is float64 (results computed
    before the field existed were float64 and keep their keys)."""
    out = asdict(setup)
    if out["law_dtype"] == "float64":
        del out["law_dtype"]
    if not out["mean_field"]:  # finite widths keep the keys they had before m = inf existed
        del out["mean_field"]
    return out


def _cache_key(setup: NNSetup) -> dict:
    return {"nn": _setup_fields(setup), "clip": CLIP_QUANTILE, "search": 5}


def cached_delta_nn(setup: NNSetup, *, any_search: bool = False):
    """The cached NNResult of ``setup`` (None when ``thresholds nn`` has not run it).  With
    ``any_search``, a result of the same setup run with other search settings or law precision
    (``RELAXED_FIELDS``) is returned when the exact one is missing (its ``setup`` says which)."""
    from . import cache as _cache
    hit = _cache.load("nn", _cache_key(setup))
    if hit is not None or not any_search:
        return hit
    want = {k: v for k, v in asdict(setup).items() if k not in RELAXED_FIELDS}
    for path in sorted(_cache.cache_dir().glob("nn-*.pkl")):
        key = path.stem[3:]
        if not re.fullmatch(r"[0-9a-f]{32}", key):  # other kinds share the prefix (nn-eval-...)
            continue
        other = _cache.load_key("nn", key)
        if other is None or not hasattr(other, "setup"):
            continue
        theirs = {k: v for k, v in asdict(other.setup).items() if k not in RELAXED_FIELDS}
        # the file name must be the key the current code gives that setup (same version and search rules)
        if theirs == want and _cache.key_for("nn", _cache_key(other.setup)) == key:
            return other
    return None


def delta_nn(setup: NNSetup, *, cache: bool = True, progress=None, log=None) -> NNResult:
    """delta_NN for ``setup`` (module docstring); ``log(text)`` receives one line per evaluation."""
    import time

    from . import cache as _cache
    from .alg import delta_alg as _delta_alg
    setup.validate()
    if cache:
        hit = _cache.load("nn", _cache_key(setup))
        if hit is not None:
            return hit
    start = time.time()
    from .hessian import hard_dimension
    hard_dimension(setup.link, setup.m)  # checked before any long computation
    alg = _delta_alg(setup.link, dps=15).delta_alg
    lo = max(setup.search_min, alg if math.isfinite(alg) and alg > 0 else 0.0, 0.25)
    T = int(setup.steps)
    evals = {}

    def f(delta, step=T):
        delta = float(delta)
        if delta not in evals:
            ev = evaluate(setup, delta, cache=cache, progress=progress)
            evals[delta] = ev
            if log:
                i = ev.at(T)
                log(f"delta = {delta:.5g}: indicator {ev.indicator[i]:+.4f} +- {ev.indicator_err[i]:.4f}, "
                    f"left edge {ev.left_edge[i]:+.4f}")
        ev = evals[delta]
        return ev.indicator[ev.at(step)]

    diverged = []
    while True:
        try:
            below = f(lo) > 0
            break
        except DivergenceError:
            diverged.append(lo)
            if log:
                log(f"delta = {lo:.5g}: GD diverges at this step size; moving up")
            if 2 * lo > setup.search_max:
                raise DivergenceError(f"GD diverges for every delta tried up to {lo:g} at eta = {setup.eta:g}: "
                                      "lower the step size") from None
            lo *= 2
    b = lo
    if not below:
        a, prev = lo, None                                  # f(a) <= 0
        while b < setup.search_max:
            b = min(next_trial(prev, f(prev) if prev is not None else None, a, f(a), setup.rtol),
                    setup.search_max)
            if f(b) > 0:
                break
            prev, a = a, b
        if f(b) > 0:
            b = refine(f, a, b, setup.rtol)
            for _ in range(2):  # support of the local line fit of first_crossing
                x = crossing(list(evals.values()), T).value
                near = [d for d in evals if x / 1.25 <= d <= x * 1.25]
                if len(near) >= 3:
                    break
                f(min(x * 1.12, setup.search_max) if sum(d > x for d in near) <= sum(d < x for d in near)
                  else x / 1.12)
    # refine the transient minimum at its own step: GD (or the DMFT) run only to that step, which is
    # the same trajectory up to it (the data and the initialization are drawn first) at a fraction of the cost
    short = {}

    def f_short(delta, step):
        if delta in evals:
            return f(delta, step)
        if delta not in short:
            short[delta] = evaluate(replace(setup, steps=step), delta, cache=cache, progress=progress,
                                    final_only=True)
            if log:
                ev = short[delta]
                log(f"delta = {delta:.5g}, run to step {step}: indicator {ev.indicator[-1]:+.4f} +- "
                    f"{ev.indicator_err[-1]:.4f}")
        return short[delta].indicator[short[delta].at(step)]

    early = [(crossing(list(evals.values()), s), s) for s in checkpoints(T)[:-1]]
    c, step = min(early, key=lambda cs: cs[0].value) if early else (None, T)
    if c is not None and c.found and c.value > lo and not c.value > crossing(list(evals.values()), T).low:
        pts = sorted(evals)
        hi_d = min(d for d in pts if d >= c.value)
        lo_d = max(d for d in pts if d <= c.value)
        if f(hi_d, step) > 0 >= f(lo_d, step):
            refine(lambda x: f_short(x, step), lo_d, hi_d, setup.rtol)
    el = list(evals.values())
    main = crossing(el, T)
    clip = crossing(el, T, key="clipped")
    curve = [(s, crossing(el + (list(short.values()) if s == step else []), s)) for s in checkpoints(T)]
    half = [c for s, c in curve if s == max(1, T // 2)][0]
    t_min, transient = min(curve, key=lambda sc: sc[1].value)
    notes = []
    if diverged:
        notes.append(f"GD diverges at eta = {setup.eta:g} for delta = {', '.join(f'{d:g}' for d in diverged)}: "
                     f"the search starts at {lo:g}")
    if transient.found and transient.value < main.low:
        notes.append(f"non-monotone t-curve: a negative hard outlier exists from delta = {transient.value:.4g} at "
                     f"step {t_min} (t = {t_min * setup.eta:g}) but not at the horizon; finite-d GD can escape "
                     "during that window (see delta_nn_transient)")
    if main.found and half.found:
        converged = abs(main.value - half.value) <= (main.high - main.low) / 2 + setup.rtol * main.value
    else:
        converged = main.found == half.found
    if not converged:
        notes.append(f"t-curve not converged: delta_NN(T/2) = {half.value:.4g}, delta_NN(T) = {main.value:.4g}; "
                     "lengthen the horizon (steps)")
    ref = evals[b] if main.found else evals[max(evals)]
    i = ref.at(T)
    settled = ref.left_edge[i] >= -2 * ref.left_edge_err[i]
    if not settled:
        notes.append(f"at delta = {ref.delta:.4g} the left bulk edge is {ref.left_edge[i]:+.3f}: the first phase "
                     "has not settled (negative curvature in bulk directions too)")
    if main.found and clip.found and (clip.high < main.low or clip.low > main.high):
        notes.append(f"tail-driven: with G clipped at its {CLIP_QUANTILE:g} quantile delta_NN = {clip.value:.4g}")
    path_check = None
    if setup.law == "dmft":
        half_setup = replace(setup, paths=max(setup.paths // 2, 2 * setup.replicas))
        hv = evaluate(half_setup, ref.delta, cache=cache, progress=progress)
        diff = [a - b for a, b in zip(ref.indicator, hv.indicator)]
        err = [math.hypot(a, b) for a, b in zip(ref.indicator_err, hv.indicator_err)]
        bad = [s for s, d_, e in zip(ref.steps, diff, err) if abs(d_) > 2 * e]
        path_check = {"delta": ref.delta, "paths": setup.paths, "half_paths": half_setup.paths,
                      "steps": ref.steps, "indicator_diff": diff, "indicator_diff_err": err,
                      "converged_until": min(bad) - 1 if bad else ref.steps[-1]}
        if bad:
            notes.append(f"not converged in the number of DMFT paths: at delta = {ref.delta:.4g} the indicator moves "
                         f"by more than 2 s.e. between {half_setup.paths} and {setup.paths} paths from step "
                         f"{min(bad)} on (at the horizon {diff[-1]:+.3f} +- {err[-1]:.3f}); the law of the "
                         "sources back-end carries a bias that grows with t (README); use more paths or --law gd")
    if setup.mean_field and ref.sectors:
        aa, ae, ss, se = ref.sectors[i]
        notes.append(f"m = inf (Hessian of the m -> inf limit on the first-phase law of width {setup.m}): at delta = "
                     f"{ref.delta:.4g} the antisymmetric sector's indicator is {aa:+.4f} +- {ae:.4f}, the symmetric "
                     f"sector's {ss:+.4f} +- {se:.4f} (> 0: negative hard outlier; thresholds.meanfield)")
        notes.append(f"m = inf: the law's own m -> inf limit is not taken; its {setup.m} neurons hold {setup.m} d "
                     f"parameters against n = {ref.delta:.3g} d samples" + (" (fewer: the first phase is not in "
                     "its wide regime)" if setup.m < ref.delta else "") + "; compare --population values "
                     "(validation/reports/width/threshold.md)")
    if below:
        notes.append(f"negative hard outlier already at the lower end of the search ({lo:.4g}): delta_NN <= {lo:.4g}")
    if not main.found:
        notes.append(f"no negative hard outlier up to search_max = {setup.search_max:g}")
    result = NNResult(setup, alg, main.value, main.low, main.high, main.found, below, clip, curve, converged,
                      settled, transient, t_min, ref.left_edge[i], ref.left_edge_err[i],
                      sorted(el, key=lambda e: e.delta), notes, time.time() - start, path_check,
                      sorted(short.values(), key=lambda e: e.delta))
    if cache:
        _cache.store("nn", _cache_key(setup), result)
    return result


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


def escape_times(setup: NNSetup, delta: float, dims, *, cache: bool = True, progress=None) -> dict:
    """Predicted escape (grokking) step for each d (module docstring), with the DMFT
    train/test loss curves of the first phase."""
    from .dmft import solve_dmft
    if setup.mean_field:
        raise UnsupportedError("grok covers finite widths (its loss curves come from the DMFT, whose m -> inf "
                               "limit is not built); use --m with an integer")
    ev = evaluate(setup, delta, cache=cache, progress=progress, outliers="final")
    res = solve_dmft(setup.dmft(delta), cache=cache)
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
            if math.isfinite(z) and z < 0:  # still growing at the horizon: extrapolate at the final rate
                row = escape_steps(steps[-1], z, z_err, setup.eta, [d])[0]
                row["steps"] -= (L[-1] / math.log1p(-setup.eta * z))
                row["note"] = "extrapolated beyond the horizon at the final outlier"
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


def _validation_key(setup: NNSetup) -> dict:
    """What a finite-d validation shares with a delta_NN setup (its horizon grows with d)."""
    return {"activation": setup.activation, "link": setup.link, "a": setup.a, "b": setup.b, "rho0": setup.rho0,
            "eta": setup.eta, "weight_decay": setup.weight_decay, "loss": setup.loss, "m": setup.m,
            "sphere": setup.sphere}


def store_validation(setup: NNSetup, value: float, error: float, report: str) -> None:
    """Record an extrapolated finite-d GD crossing (``thresholds validate``) for ``table``."""
    from . import cache as _cache
    _cache.store("validation", _validation_key(setup), {"value": value, "error": error, "report": report})


def cached_validation(setup: NNSetup):
    """The recorded finite-d crossing for this setup, or None (always for m = inf: nothing simulates it)."""
    from . import cache as _cache
    return None if setup.mean_field else _cache.load("validation", _validation_key(setup))


def parse_scan(text: str):
    """``name=start:stop:count`` -> (name, values)."""
    try:
        name, rng = text.split("=", 1)
        name = name.strip().replace("-", "_")
        start, stop, count = rng.split(":")
        values = np.linspace(float(start), float(stop), int(count))
    except ValueError:
        raise ThresholdsError(f"bad --scan {text!r}: expected name=start:stop:count, e.g. rho0=0.1:2:10")
    if name not in SCANNABLE:
        raise ThresholdsError(f"cannot scan {name!r}; choose from {', '.join(SCANNABLE)}")
    if int(count) < 1:
        raise ThresholdsError("--scan needs at least one value")
    if name == "steps":
        values = np.unique(np.round(values).astype(int))
    return name, [v.item() for v in values]


def scan(setup: NNSetup, name: str, values, **kw) -> list:
    """delta_NN for each value of one setup parameter."""
    return [delta_nn(replace(setup, **{name: v}), **kw) for v in values]

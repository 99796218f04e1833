"""delta_NN: the sample ratio at which the Hessian reached by the first phase of GD
has a negative outlier along the hard direction (THEORY sections 4-5), m = 1.

For each delta the DMFT of the first phase is solved (thresholds.dmft, cached)
and, at its checkpoints t = T/8, T/4, T/2, 3T/4, T, the Hessian weight law
G_t gives the hard-outlier indicator

    I_t(delta) = -S(alpha at min(0, left bulk edge))      (> 0 iff a negative hard outlier exists)

as the mean and standard error over the DMFT replicas (thresholds.hessian).

Search (at the horizon T).  All deltas use the same seed (common random
numbers), so I_T is smooth in delta.  Starting from max(search_min, delta_alg)
(delta_NN >= delta_alg: the Hessian is one spectral method) delta is doubled
until I_T > 0, then the bracket is bisected in log delta down to
``rtol`` relative width.  The crossing is the linear interpolation of I_T
between the bracket ends; its interval adds in quadrature the bracket
half-width and the Monte Carlo half-width 2 s.e.(I_T)/|dI_T/ddelta|.  When
I_T <= 0 up to ``search_max`` the answer is "inf" with that bound.

t -> inf.  delta_NN(t) at the earlier checkpoints is read off the same
evaluations (first sign change of I_t, linear interpolation).  The curve is
declared converged when |delta_NN(T) - delta_NN(T/2)| is within the interval
half-width of delta_NN(T) plus rtol delta_NN(T); otherwise the result is
returned with ``converged = False`` and the user is told to lengthen the
horizon.

Unbounded G.  The law of G is the empirical law of the DMFT paths.  When G is
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
the checkpoints is reported as ``delta_nn_transient`` with its step; at
finite d, where escaping needs only about log(sqrt d)/(eta |z*|) steps, GD
can use that window.

Grokking (THEORY section 5).  For delta > delta_NN with hard outlier z* < 0 at
the horizon, a perturbation along the outlier grows by (1 - eta z*) per step
from an overlap of order d^{-1/2}, so the escape takes
t_esc(d) = t_1 + log(sqrt(d)) / log(1 - eta z*) steps, t_1 the first
checkpoint at which the outlier exists (the O(1) constant in front of
d^{-1/2} is set to 1).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .dmft import DMFTSetup, checkpoints
from .errors import DivergenceError, ThresholdsError
from .hessian import CLIP_QUANTILE, hessian_spectra

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
    paths: int = 20_000
    replicas: int = 4
    seed: int = 0
    search_min: float = 0.0
    search_max: float = 64.0
    rtol: float = 0.02

    def dmft(self, delta: float) -> DMFTSetup:
        return DMFTSetup(self.activation, self.link, float(delta), self.eta, int(self.steps), a=self.a, b=self.b,
                         rho0=self.rho0, weight_decay=self.weight_decay, paths=self.paths,
                         replicas=self.replicas, seed=self.seed, loss=self.loss, m=self.m,
                         sphere=self.sphere)

    def validate(self):
        self.dmft(1.0).validate()
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

    @property
    def crossing_at_horizon(self) -> Crossing:
        return Crossing(self.delta_nn, self.low, self.high, self.found)

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
               "delta_nn_transient": {"step": self.transient_step, **self.transient.to_json()},
               "left_edge": self.left_edge, "left_edge_err": self.left_edge_err,
               "setup": asdict(self.setup), "notes": self.notes, "seconds": self.seconds,
               "evaluations": [asdict(e) for e in self.evaluations]}
        if not self.found:
            out["search_max"] = self.setup.search_max
        return out


def evaluate(setup: NNSetup, delta: float, *, cache: bool = True, progress=None,
             outliers: str = "none") -> Evaluation:
    """Hessian indicators at every checkpoint for one delta (one DMFT run); the outlier
    positions (``outlier_z``, nan where not located) at the steps ``outliers`` asks for."""
    spectra = hessian_spectra(setup.dmft(delta), cache=cache, progress=progress, outliers=outliers)
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
        ev.outlier_z.append(left[0]["z"] if left else math.nan)
        ev.outlier_z_err.append(left[0]["z_err"] if left else math.nan)
        ev.overlap2.append(left[0]["overlap2"] if left else math.nan)
    return ev


def crossing(evals: list, step: int, key: str = "indicator", bracket_only: bool = False) -> Crossing:
    """First sign change (- to +) of the indicator at ``step`` along the evaluated deltas,
    by linear interpolation; interval = bracket half-width and Monte Carlo half-width in quadrature."""
    pts = sorted(evals, key=lambda e: e.delta)
    vals = [(e.delta, getattr(e, key)[e.at(step)], getattr(e, key + "_err")[e.at(step)]) for e in pts]
    if vals and vals[0][1] > 0:
        d0 = vals[0][0]
        return Crossing(d0, 0.0, d0, True)
    for (d1, f1, s1), (d2, f2, s2) in zip(vals, vals[1:]):
        if f1 <= 0 < f2:
            x = d1 + (d2 - d1) * (-f1) / (f2 - f1)
            slope = (f2 - f1) / (d2 - d1)
            se = s1 + (s2 - s1) * (x - d1) / (d2 - d1)
            hw = math.hypot((d2 - d1) / 2, 2 * se / slope)
            return Crossing(x, max(x - hw, 0.0), x + hw, True)
    last = vals[-1][0] if vals else math.inf
    return Crossing(math.inf, last, math.inf, False)


def _cache_key(setup: NNSetup) -> dict:
    return {"nn": asdict(setup), "clip": CLIP_QUANTILE, "search": 3}


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

    def bisect(a, b, step):
        while (b - a) / math.sqrt(a * b) > setup.rtol:
            mid = math.sqrt(a * b)
            if f(mid, step) > 0:
                b = mid
            else:
                a = mid
        return b

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
        a = lo
        while f(b) <= 0 and b < setup.search_max:
            a, b = b, min(2 * b, setup.search_max)
        if f(b) > 0:
            b = bisect(a, b, T)
    # refine the transient minimum at its own step (same evaluations, a few more deltas)
    early = [(crossing(list(evals.values()), s), s) for s in checkpoints(T)[:-1]]
    c, step = min(early, key=lambda cs: cs[0].value) if early else (None, T)
    if c is not None and c.found and c.value > lo and not c.value > crossing(list(evals.values()), T).low:
        pts = sorted(evals)
        hi_d = min(d for d in pts if d >= c.value)
        lo_d = max(d for d in pts if d <= c.value)
        if f(hi_d, step) > 0 >= f(lo_d, step):
            bisect(lo_d, hi_d, step)
    el = list(evals.values())
    main = crossing(el, T)
    clip = crossing(el, T, key="clipped")
    curve = [(s, crossing(el, s)) for s in checkpoints(T)]
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
    if below:
        notes.append(f"negative hard outlier already at the lower end of the search ({lo:.4g}): delta_NN <= {lo:.4g}")
    if not main.found:
        notes.append(f"no negative hard outlier up to search_max = {setup.search_max:g}")
    result = NNResult(setup, alg, main.value, main.low, main.high, main.found, below, clip, curve, converged,
                      settled, transient, t_min, ref.left_edge[i], ref.left_edge_err[i],
                      sorted(el, key=lambda e: e.delta), notes, time.time() - start)
    if cache:
        _cache.store("nn", _cache_key(setup), result)
    return result


def escape_times(setup: NNSetup, delta: float, dims, *, cache: bool = True, progress=None) -> dict:
    """Predicted escape (grokking) step for each d (module docstring), with the DMFT
    train/test loss curves of the first phase."""
    from .dmft import solve_dmft
    ev = evaluate(setup, delta, cache=cache, progress=progress, outliers="final")
    res = solve_dmft(setup.dmft(delta), cache=cache)
    i = ev.at(int(setup.steps))
    z, z_err = ev.outlier_z[i], ev.outlier_z_err[i]
    out = {"delta": float(delta), "setup": asdict(setup), "outlier_z": z, "outlier_z_err": z_err,
           "overlap2": ev.overlap2[i], "left_edge": ev.left_edge[i],
           "curves": {"t": res.t.tolist(), "train_loss": res.train_loss.tolist(),
                      "train_loss_err": res.train_loss_err.tolist(), "test_loss": res.test_loss.tolist(),
                      "test_loss_err": res.test_loss_err.tolist()}}
    if not (ev.indicator[i] > 0 and math.isfinite(z) and z < 0):
        out["escape"] = None
        out["note"] = "no negative hard outlier at this delta: GD does not escape (delta <= delta_NN)"
        return out
    t1 = next(s for s, v in zip(ev.steps, ev.indicator) if v > 0)
    rate = math.log1p(-setup.eta * z)
    drate = setup.eta * z_err / (1 - setup.eta * z)
    rows = []
    for d in dims:
        grow = 0.5 * math.log(d) / rate
        rows.append({"d": int(d), "steps": t1 + grow, "steps_err": grow * drate / rate})
    out["escape"] = {"t1": t1, "rate_per_step": rate, "rows": rows}
    return out


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
    """The recorded finite-d crossing for this setup, or None."""
    from . import cache as _cache
    return _cache.load("validation", _validation_key(setup))


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

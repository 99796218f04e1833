"""Finite-d success of GD at width m: the neurons' hard overlaps in the plane of their two modes (m >= 1).

At width m each neuron starts with its own hard overlap, M_H,j(0) = rho0 xi_j / sqrt(d) with xi_j iid
N(0, 1), and the sample forcing moves each of them (thresholds.forcing).  With one a and one b for every
neuron the neurons are exchangeable in law, so the linearized hard dynamics (thresholds.dmft, eq. (9), with
m x m kernels) commutes with the permutations of the neurons: by Schur's lemma it acts as one number on the
symmetric mode v_s = (1, ..., 1) and as another on the antisymmetric subspace (sum_j v_j = 0, dimension
m - 1); so does the covariance of the forcing.  With the normalization (1/m)|v|^2 = 1 the amplitude of a
mode,

    a_v(t) = (1/m) v . M_H(t),                                                                             (1)

is such that a planted start M_H(0) = q v has hard overlap (1/m) sum_j M_H,j^2 = q^2.  Per mode, as in
thresholds.planted eq. (1), the amplitude at t* referred back to t = 0 is an effective initial amplitude,
sqrt(d) a_v,eff ~ N(0, s_v^2) along every direction of the mode's subspace, with

    s_v^2 = rho0^2 / m + V_v(t*) / G_v(t*, 0)^2,                                                           (2)

rho0^2 / m the variance of sqrt(d) a_v(0) and V_v the forced part.  Both are read from the ``sources`` DMFT
(the pathwise kernels of thresholds.forcing exist for m = 1 only):

    G_v(t, 0) = [a_v(t; +q v) - a_v(t; -q v)] / (2 q)    (an antithetic pair of runs on the same paths)    (3)
    V_v(t) = (N / delta) Var a_v(t; M_H(0) = 0)          (over replicas of N paths)                         (4)

Eq. (3): the two runs share their paths, so the DMFT's own forcing (even in q) cancels in the difference, and
so does every even order in q; q = ``GROWTH_Q``.  Eq. (4): on N paths the Monte Carlo error of the hard drift
E[g_H psi] is the sample forcing of n = N samples (thresholds.dmft, "Planted hard overlap"), so a run from
M_H = 0 is the forced hard component of GD at d = N / delta, and its variance over independent replicas,
times that d, is the forced part of eq. (2) in units of d^{-1/2}.  At m = 1 this is a second route to the s
of thresholds.planted (pathwise kernels K_M, K_F), checked against it in tests/test_modes.py.

Escape is not decided mode by mode: the planted DMFT escapes from one neuron at 0.1 and the other at 0
(quad, delta 3.5, T = 600: hard fraction 0.76), whose mode amplitudes, 0.05 each, are both below the
critical amplitudes of the pure modes (0.063-0.080).  So the critical amplitude is taken as a function of the
direction of the start in the plane of the two modes.  In whitened coordinates x = sqrt(d) a_s / s_s,
y = sqrt(d) |a_a| / s_a (|a_a| the norm in the antisymmetric subspace), (x, y) = rho (cos phi, sin phi) with
rho ~ chi_m independent of phi, and phi in [0, pi/2] (the signs of a_s and of a_a are symmetries: M_H -> -M_H
and the exchange of neurons) has the density

    f(phi) = sin^{m-2}(phi) / int_0^{pi/2} sin^{m-2}   (uniform for m = 2).                                (5)

A start along phi is M_H(0) = r u(phi), u = (s_s cos phi v_s + s_a sin phi v_a) / n(phi),
n(phi)^2 = s_s^2 cos^2 phi + s_a^2 sin^2 phi, whose amplitude r is sqrt(d)-scaled as rho n(phi).  With
r_c(phi) the critical amplitude along u (thresholds.planted.critical_overlap along u, read by planted eq. (4)
mode by mode, r_eff = |(a_s(t_map) / G_s, a_a(t_map) / G_a)|),

    P(delta, d) = int_0^{pi/2} f(phi) chi_sf(sqrt(d) r_c(phi) / n(phi); m) dphi,                           (6)

chi_sf(x; k) the tail of the chi law with k degrees of freedom (2 Phi_bar(x) for k = 1, so that m = 1, where
only phi = 0 exists, is planted eq. (2)).  r_c is computed at the angles ``ANGLES`` and sqrt(d) r_c / n is
interpolated linearly in phi between them.  The crossing delta_1/2(d) solves P = 1/2 through the margin

    f_d(delta) = Phi_bar^{-1}(P / 2) - Phi_bar^{-1}(1/4),                                                  (7)

planted's f_d at m = 1; it is interpolated in delta and its range taken as there (every angle at its low
end with n + s.e., or at its high end with n - s.e.).

Approximations, beyond those of thresholds.planted:
* r_c(phi) linear between the computed angles (0, pi/4, pi/2);
* for m > 2, escape depends on the start through a_s and the norm of its antisymmetric part only; r_c is
  computed along one antisymmetric direction, that of a single neuron's start (``directions``), so that the
  start of one neuron alone, the most unstable of the angles computed at m = 2, lies in the plane;
* the forced variance (4) is measured at d = N / delta and used at every d, as eq. (2) is d-free;
* uniform a and b (per-neuron a_j, b_j break the exchangeability: refused);
* one hard direction and no easy one, as thresholds.planted (``latent_refusal``: other links are refused).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.stats import chi, norm

from .dmft import DMFTSetup, solve_dmft
from .errors import UnsupportedError
from .planted import (LINEAR_FRACTION, QUARTILE, T_MAP, DeltaPoint, FiniteDPrediction, critical_overlap, crossing,
                      mode_amplitude, noise_moves)
from .planted import predict as planted_predict
from .planted import refusal as planted_refusal
from .planted import grid_dims, latent_refusal, solve_grid, start_bracket
from .problem import Problem, uniform

GROWTH_Q = 0.01   # the planted amplitude of the antithetic pair of eq. (3)
PATHS = 20_000    # paths per planted run of r_c (width_point, predict)
SCOPE = ("Checked against GD at a fixed horizon of 600 steps, quad, eta 0.05, phase retrieval: m = 2, d = 200-800 within "
         "1.2 combined s.e., d = 1600 2.2 s.e. too high with every source, d = 200-1600 within 1.0 s.e. with source_tol "
         "1e-3; m = 4 (10k paths) with every source 0.5 too high at d = 200 and "
         "unresolved (r_c moves with the path count), with source_tol 1e-3 +1.5 / +2.0 / +2.5 s.e. at d = 200 / 400 / "
         "800 (10k paths) and +1.2 / +1.0 / +1.4 (20k paths); other setups unchecked (validation/reports/planted/width).")


def directions(m: int) -> dict:
    """The modes of eq. (1): {"sym": v} and, for m > 1, {"anti": v} with (1/m)|v|^2 = 1; v_anti is the
    antisymmetric part of a single neuron's start, (m / sqrt(m - 1)) (e_1 - 1/m), so that the plane of eq. (6)
    holds the start of one neuron alone ((1, -1) at m = 2)."""
    out = {"sym": (1.0,) * m}
    if m > 1:
        c = m / math.sqrt(m - 1)
        out["anti"] = tuple(c * ((1.0 if j == 0 else 0.0) - 1 / m) for j in range(m))
    return out


@dataclass
class ModeSpread:
    """Eqs. (2)-(4) of one mode at t = 0..t*: the growth G_v(t, 0) and the forced variance V_v(t) with their
    standard errors over the replicas, and s_v at t*."""

    mode: str
    delta: float
    tstar: int
    growth: np.ndarray
    growth_err: np.ndarray
    forced: np.ndarray
    forced_err: np.ndarray
    s: float
    s_err: float


def _amplitudes(res, direction) -> np.ndarray:
    """The signed a_v(t) of eq. (1) per replica (replicas, T+1); with several hard directions (each planted
    alike), their mean."""
    v = np.asarray(direction, dtype=float)
    return (res.hard_signal @ v / v.size).mean(axis=-1)


def mode_spreads(problem: Problem, delta: float, *, tstar: int = 50, paths: int = 5_000, replicas: int = 128,
                 growth_paths: int = 20_000, growth_replicas: int = 8, seed: int = 0, cache: bool = True) -> dict:
    """{mode: ModeSpread} of eqs. (2)-(4) at ``delta``: one run of ``replicas`` replicas of ``paths`` paths
    from M_H = 0 for every mode (eq. (4); the relative error of V is about sqrt(2 / replicas), whatever
    ``paths``), and an antithetic pair of ``growth_replicas`` x ``growth_paths`` per mode (eq. (3)); every
    run is cached on disk unless ``cache`` is False."""
    m = problem.m
    base = replace(problem, steps=int(tstar))

    def run(planted, n, k):
        return solve_dmft(DMFTSetup.from_problem(base, delta, paths=n * k, replicas=k, seed=seed,
                                                 planted=planted), cache=cache)

    zero = run((0.0,) * m, paths, replicas)
    d_eff = paths / delta        # eq. (4): the zero run is the forced hard component of GD at this d
    out = {}
    for mode, v in directions(m).items():
        plus, minus = (run(tuple(sign * GROWTH_Q * x for x in v), growth_paths, growth_replicas) for sign in (1, -1))
        G = (_amplitudes(plus, v) - _amplitudes(minus, v)) / (2 * GROWTH_Q)       # eq. (3), per replica
        a0 = _amplitudes(zero, v)
        V = d_eff * np.mean(a0**2, axis=0)                                        # eq. (4): mean zero by symmetry
        V_err = d_eff * np.std(a0**2, axis=0, ddof=1) / math.sqrt(replicas)
        g, g_err = G.mean(axis=0), G.std(axis=0, ddof=1) / math.sqrt(growth_replicas)
        gt, vt = float(g[tstar]), float(V[tstar])
        s2 = problem.rho0**2 / m + vt / gt**2                                    # eq. (2)
        # delta method: ds^2 = dV / G^2 - 2 V dG / G^3
        s2_err = math.hypot(float(V_err[tstar]) / gt**2, 2 * vt * float(g_err[tstar]) / abs(gt) ** 3)
        out[mode] = ModeSpread(mode, float(delta), int(tstar), g, g_err, V, V_err, math.sqrt(s2),
                               s2_err / (2 * math.sqrt(s2)))
    return out


ANGLES = (0.0, math.pi / 4, math.pi / 2)   # the angles phi of eq. (6) at which r_c is computed (m > 1)


def angle_density(m: int, phi: np.ndarray) -> np.ndarray:
    """f(phi) of eq. (5) on an evenly spaced grid, as trapezoid weights that sum to 1."""
    w = np.sin(phi) ** (m - 2) if m > 2 else np.ones_like(phi)
    w = w.astype(float).copy()
    w[0], w[-1] = w[0] / 2, w[-1] / 2
    return w / w.sum()


def start_direction(m: int, phi: float, s_sym: float, s_anti: float) -> tuple:
    """u(phi) of eq. (6): the per-neuron start of unit amplitude along the angle phi of the whitened plane."""
    v = directions(m)
    c, sn = (0.0 if abs(x) < 1e-12 else x for x in (math.cos(phi), math.sin(phi)))  # the pure modes exactly
    ws, wa = s_sym * c, s_anti * sn
    norm_ = math.hypot(ws, wa)
    ws, wa = ws / norm_, wa / norm_
    anti = v.get("anti", (0.0,) * m)
    return tuple(ws * x + wa * y for x, y in zip(v["sym"], anti))


@dataclass
class WidthPoint:
    """One delta of the width-m prediction: per angle phi of eq. (6) a DeltaPoint with the r_c bracket as
    effective amplitudes, s = n(phi) and its standard error, dof = m."""

    delta: float
    m: int
    angles: dict = field(default_factory=dict)   # phi -> DeltaPoint
    grid: int = 91                               # quadrature points of eq. (6) on [0, pi/2]

    def probability(self, d: int, end: str = "mid") -> float:
        """Eq. (6) (eq. (2) of thresholds.planted at m = 1)."""
        phis = sorted(self.angles)
        x = np.array([self.angles[p].ratio(d, end) for p in phis])
        if len(phis) == 1:
            return float(chi.sf(x[0], self.m))
        grid = np.linspace(phis[0], phis[-1], self.grid)
        xs = np.interp(grid, phis, x)
        return float(angle_density(self.m, grid) @ chi.sf(xs, self.m))

    def margin(self, d: int, end: str = "mid") -> float:
        """Eq. (7) (> 0: below the crossing)."""
        P = min(max(self.probability(d, end), 1e-300), 1.0)
        return float(norm.isf(P / 2)) - QUARTILE

    @property
    def dominant(self) -> DeltaPoint:
        """The angle with the smallest r_c / n (the one that decides eq. (6) at large d)."""
        return min(self.angles.values(), key=lambda p: p.q / p.s)

    @property
    def bounded(self) -> bool:
        return any(p.bounded for p in self.angles.values())

    q_low = property(lambda self: self.dominant.q_low)
    q_high = property(lambda self: self.dominant.q_high)
    q = property(lambda self: self.dominant.q)


def refusal(problem: Problem) -> str:
    """Why :func:`predict` does not cover ``problem`` ('' when it does)."""
    if problem.sphere:
        return "the width-m finite-d prediction covers plain GD (no --sphere)"
    if not (uniform(problem.a) and uniform(problem.b)):
        return ("the width-m finite-d prediction needs one a and one b for every neuron (its modes rest on the "
                "neurons' exchangeability)")
    return latent_refusal(problem)


def width_point(problem: Problem, delta: float, points: dict = None, *, paths: int = PATHS,
                spread_paths: int = 5_000, tstar: int = 50, ratio: float = 1.25, seed: int = 0, cache: bool = True,
                log=None, angles=None, source_tol: float = 0.0) -> WidthPoint:
    """One delta of eq. (6): the spreads (eqs. (2)-(4)) and r_c at every angle (``points``: computed deltas whose
    brackets start the bisections; ``log(text)``: one line per DMFT run and per angle; ``angles``: ANGLES in
    another order, e.g. for a second process that shares the cache; ``source_tol``: the source basis of the
    horizon-long planted runs of r_c, thresholds.dmft eq. (6b); the spreads' runs of ``tstar`` steps keep every
    source)."""
    points = points or {}
    say = log or (lambda text: None)
    tstar = min(int(tstar), int(problem.steps))
    t_map = min(T_MAP, tstar)
    m = problem.m
    sp = mode_spreads(problem, delta, tstar=tstar, paths=spread_paths, growth_paths=paths, seed=seed,
                      cache=cache)
    sym, anti = sp["sym"], sp.get("anti", sp["sym"])
    v = directions(m)

    def reading(res):   # planted eq. (4) mode by mode: r_eff = |(a_s / G_s, a_a / G_a)| at t_map
        if float(res.hard_fraction[t_map]) > LINEAR_FRACTION:
            return None
        return math.hypot(*(mode_amplitude(res, t_map, v[k]) / float(sp[k].growth[t_map]) for k in sp))

    order = tuple(angles or ANGLES) if m > 1 else (0.0,)
    angles = {}
    for phi in order:
        u = start_direction(m, phi, sym.s, anti.s)
        n = math.hypot(sym.s * math.cos(phi), anti.s * math.sin(phi))
        n_err = math.hypot(sym.s * sym.s_err * math.cos(phi) ** 2, anti.s * anti.s_err * math.sin(phi) ** 2) / n
        low, high = start_bracket(points, delta, select=lambda p, phi=phi: p.angles[phi])
        noise = math.sqrt(max(n * n - problem.rho0**2 / m, 0.0) * delta / paths)  # eq. (4) at d = paths/delta
        qc = critical_overlap(problem, delta, problem.steps, low=low, high=high, ratio=ratio, paths=paths,
                              seed=seed, moves=noise_moves(low, noise), bounded=True, cache=cache,
                              direction=u, reading=reading, source_tol=source_tol,
                              progress=lambda q, f, phi=phi: say(
                                  f"delta {delta:g}, phi {math.degrees(phi):.0f} deg: planted r = {q:.4g} -> "
                                  f"hard fraction {f:.3f} at step {problem.steps}"))
        q_low, q_high = qc.effective(1.0)
        angles[phi] = DeltaPoint(delta, q_low, q_high, n, n_err, qc.runs, qc.low, qc.high, dof=m)
        say(f"delta {delta:g}, phi {math.degrees(phi):.0f} deg: r_c in [{q_low:.4g}, {q_high:.4g}] (planted "
            f"[{qc.low:.4g}, {qc.high:.4g}]), n = {n:.3f} +- {n_err:.2g}")
    return WidthPoint(float(delta), m, angles)


def predict(problem: Problem, dims, *, start: float = 4.0, expand: float = 1.5, resolution: float = 0.12,
            search_min: float = 0.5, search_max: float = 64.0, paths: int = PATHS, spread_paths: int = 5_000,
            tstar: int = 50, ratio: float = 1.25, seed: int = 0, cache: bool = True, log=None,
            source_tol: float = 0.0) -> FiniteDPrediction:
    """delta_1/2(d) of eqs. (5)-(6) for each d at the horizon ``problem.steps`` (the grid of
    thresholds.planted.predict; points are WidthPoint; ``source_tol`` as in :func:`width_point`).  Every DMFT run is cached on disk unless ``cache``
    is False, so an interrupted prediction resumes.  ``log(text)`` gets one line per DMFT run and per delta."""
    if refusal(problem):
        raise UnsupportedError(refusal(problem))
    dims = grid_dims(dims, start=start, expand=expand, resolution=resolution, search_min=search_min,
                     search_max=search_max)
    say = log or (lambda text: None)
    tstar = min(int(tstar), int(problem.steps))
    t0 = time.time()

    def point(delta, points):
        return width_point(problem, delta, points, paths=paths, spread_paths=spread_paths, tstar=tstar, ratio=ratio,
                           seed=seed, cache=cache, log=say, source_tol=source_tol)

    points = solve_grid(point, dims, start=start, expand=expand, resolution=resolution, search_min=search_min,
                        search_max=search_max)
    pts = sorted(points.values(), key=lambda p: p.delta)
    return FiniteDPrediction(problem, pts, [crossing(pts, d) for d in dims], paths, spread_paths, tstar,
                             seconds=time.time() - t0, scope=SCOPE, source_tol=source_tol)


def any_refusal(problem: Problem) -> str:
    """Why no finite-d prediction covers ``problem`` ('' when one does): thresholds.planted at m = 1, this
    module at m > 1."""
    return planted_refusal(problem) if problem.m == 1 else refusal(problem)


def prediction(problem: Problem, dims, *, paths: int = None, **options) -> FiniteDPrediction:
    """The finite-d prediction at any width: thresholds.planted.predict at m = 1 (its spread on twice
    ``paths``), :func:`predict` at m > 1 (the replicas of eq. (4) with a quarter of ``paths`` each, the
    ratio of the defaults); ``paths`` None: each one's default."""
    if problem.m == 1:
        extra = {} if paths is None else {"paths": paths, "spread_paths": 2 * paths}
        return planted_predict(problem, dims, **extra, **options)
    extra = {} if paths is None else {"paths": paths, "spread_paths": max(paths // 4, 500)}
    return predict(problem, dims, **extra, **options)

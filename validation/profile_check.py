"""GD's escape after the release, read off the relaxed profile of the hard direction: a quasi-static predictor.

validation.release_check releases the hard directions of GD's first phase at t1; validation.response_check found
the first few hundred steps after it to be the linear response to the data set's own hard force F = P_H G(Theta_1)
(an O(n^-1/2) gradient along the hard directions), and the outcome decided beyond second order, at hard fractions
q ~ 10^-3 - 10^-2.  Here the landscape along the hard directions is followed to all orders, quasi-statically: the
hard component is clamped at h E and the complement relaxed,

    Theta(h) = argmin R(Theta) over the complement and the unit E, with P_H Theta = h E,                 (1)

by L-BFGS started from Theta(h') and E(h') of the previous h' < h (from Theta_1 at h = 0: continuation, so that the
profile follows one branch of minima as GD's slow hard motion would); E is the unit direction of the hard part in
the hard rows, one column per neuron (at m = 1 a sign), started along the data set's hard force at Theta(0)
(Theta_1 itself where the first phase has settled to a minimum; where Theta_1 is a saddle, the relaxation at h = 0
leaves it downhill first) and free to turn among the neurons as h grows.  At each h

    p(h) = <E(h), P_H G(Theta(h))> = -m dR(Theta(h)) / dh,                                               (2)
    q(h) = h^2 / (h^2 + ||P_C Theta(h)||^2),                                                              (3)

p the push of GD's step on the clamped coordinate (G its direction, validation.simulate; the second form by the
envelope theorem: the gradient along the complement and along E's sphere vanishes at (1)).  Read quasi-statically,
the hard component grows while p > 0 and stops where p first vanishes:

    q_stall = the first q of the grid with p <= 0 (log-linear interpolation from the point before),      (4)
    learned_prof = no such q up to q = 1/2 (release_check eq. (2) read on the profile).                  (5)

The force is the odd part of the landscape along the hard direction, and it alone has no d = inf limit.  The law of
the data is even under the reflection x -> S x of the hard coordinates (an even link, as phase retrieval), so the
relaxed loss Phi(H) = min over the complement of R at hard part H is even in H in the mean, its odd part, the force
first, an O(n^-1/2) fluctuation of zero mean.  The mirror branch clamps the opposite hard part, -h E(h) (E of eq.
(1)'s branch at the same h, not turned), its complement relaxed by continuation from Theta(0) as in eq. (1):

    p_-(h) = <-E(h), P_H G(Theta_-(h))>,                                                                 (6)
    r(h) = (p(h) + p_-(h)) / 2 = -m <E, grad Phi_even(h E)>,                                             (7)
    f(h) = (p(h) - p_-(h)) / 2 = -m <E, grad Phi_odd(h E)>,

r the restoring push, f the force part: every odd term of Phi cancels in r exactly (f(0) = |F|, r(0) = 0), and r
keeps the even part's O(n^-1/2) fluctuation (the data set's own curvature along E) beside its mean.  At m = 1 (E a
sign) p_- = -m dR(Theta_-(h)) / dh as in eq. (2).  With the force gone, as at d = inf, the profile reads

    learned_even = r > 0 on the whole grid (r(0) = 0 left out).                                          (8)

Between d and d = inf, a profile at d is read at d' > d with its even part kept and its odd part scaled as the
force, by n^-1/2 (n = delta d):

    learned(d') = r + sqrt(d / d') f > 0 on the whole grid,                                              (9)

learned_prof at d' = d (r + f = p), learned_even at d' = inf.  It assumes r's mean does not depend on d (r's own
O(n^-1/2) fluctuation is kept at d's size, not reduced) and the odd part's higher terms scale as the force does;
the released crossings measured at d' (release_check) are its check.

Read as a flow, GD's step moves the clamped coordinate by eta p (Theta <- Theta + eta G), so that quasi-statically
the hard component climbs from the release's q(t1) to q = 1/2 in

    t_qs = integral from h_0 to h_1/2 of dh / (eta p(h)),                                                (11)

p linear in h between the profile's points (h = 0 first, p(0) = |F|; the integral exact on each piece), h_0 the
release's q(t1) by eq. (3) with the complement of the grid's first point, h_1/2 where q = 1/2 (linear in log q
between the points around it); inf where p <= 0 on the way.  It leaves out the complement's lag (GD's complement
relaxes over 1 / (eta lambda) steps, not at once) and the release's random start, not along E: a lower bound on
GD's t_1/2 - t1 if the relaxed push is the largest GD meets.

The start of r is the Hessian at the relaxed first phase.  With H = m Hess R at Theta(0) and the hard coordinate
clamped (m = 1: a scalar), r(h) = -S h + O(h^2), S = H_hh - H_hc H_cc^+ H_ch the Schur complement of the
complement's block (tests: rel. 1e-3 at q = 1e-6 against the dense Hessian, the error O(h^2)).  Theta(0) minimizes
R over the complement, so H_cc >= 0 and, by the additivity of inertia (Haynsworth), S < 0 iff H has a negative
eigenvalue, whose direction then has a hard part:

    r > 0 at small h  <=>  the relaxed first phase has a negative hard direction,                      (10)

the finite-d form of the d = inf indicator (thresholds.hessian eq. (4)), which changes sign at delta_NN.  r > 0 on
the whole grid (eq. (8)) asks more: at finite d a negative direction below the crossing may rest on a few samples
and end within the grid (r < 0 again at q ~ 10^-3 - 10^-2).

The approximations: the complement relaxes faster than the hard component moves (GD's release is not slow: its
complement's slowest modes, 1 / (eta lambda_min) ~ 10^3 steps, are as slow as the escape), the release's random
start is left out (release_check ``--start-scale 0`` changes no outcome, section 12g), and the branch followed is
the continuation's (a relaxation may jump to a lower branch; the records keep each point's loss and L-BFGS
iterations).  At m >= 2 the first phase at t1 has negative eigenvalues (response_check ``--modes``) and the
relaxation at h = 0 already leaves Theta_1 downhill.

Measured (gelu / phase retrieval, eta 0.1, t1 = 10^4; validation/reports/planted/width section 12j): learned_prof
meets GD's release in 81 of 89 runs (m = 1, 2, 4; d = 400-1600), and where GD does not learn it stops near q_stall
(q(T) / q_stall median 1.0, 19 of 33 within 0.7-1.4); five of the eight misses have a push that only touches zero
(|min p| < 10^-3), where GD, not quasi-static, passes a shallow zero or does not climb a shallow rise.  At m >= 2 the
relaxed hard part turns from the force's direction into an antisymmetric pair of neurons ((sum_j E_j)^2 / m <= 0.017
at the end of every profile), the even, g^2-shaped combination; with E clamped along the force three of the five
learned m = 2 runs at d = 400 stall.  Split by the mirror (section 12k): learned_even (eq. (8)) crosses at 26.0 +-
1.2 / 24.7 +- 1.6 / [20, 24] at d = 400 / 800 / 1600 (m = 1), onto the d = inf law's delta_NN 21.35 [18.76, 23.93],
and above m = 1's at m = 2 (no crossing up to 36 at d = 400 nor up to 32 at d = 800; d = inf 28.49; m = 4 at d = 400:
26.6 +- 2.1, below its d = inf 34.5), while
learned_prof crosses at 14.2 / 14.0: the force alone puts GD's finite-d thresholds low and carries the width's
lowering of them.  Eq. (9) meets GD's released crossing at d' = 2d and is high at 4d (1.7 and 2.8 s.e. at m = 1, 2):
r is shallower at d = 800 than at 400 at every delta, against the assumption that its mean does not move with d.
validation.profile_mean splits r further into its mean over data sets and the data set's fluctuation: the mean's
threshold (its eq. (3')) is the d = inf law's at m = 1, 2 and 4 (m = 8 at d = 400: 33.2 [31.5, 35.8] against
38.8-45, section 12n), and with both fluctuations scaled as n^-1/2 (its eq. (2)) the profiles meet GD's released
crossings at 2d and 4d from m = 1 to 8, where eq. (9) was high at m <= 2 (within 2 combined s.e. in the 9
comparisons with a finite s.e. once eq. (2)'s s.e. carries rbar's error, its eq. (6); one more open; sections
12m-12n).  The summary prints that comparison (:func:`mean_against_gd`), also against GD's crossing at an
infinite horizon (validation.escape_law eq. (5), S -> inf; section 12r: 9 of 10 within 2 combined s.e., m = 16 from
d = 400 to 800 at -1.4).  At m = 16 (d = 400, delta 3-6, section
12q) learned_prof meets all 12 releases and crosses where GD does at 5 x 10^4 steps (3.5 +- 0.3 both).  Eq. (11) is
a lower bound on GD's t_1/2 - t1 in every one of the 41 runs both learn (m = 1-16, d = 400-1600, sections 12p, 12q),
by a factor 3.3-12 at m = 1-8 and 2.2 at m = 16 (median per cell; 1.4-24 per run), largest at m = 2: the
complement's lag, not the relaxed push, sets GD's escape time, so the profile says whether GD escapes, not when, and
GD's crossing at a finite horizon lies above learned_prof's.

Run:  python -m validation.profile_check -a gelu --eta 0.1 --m 1 --delta 12,16 --dims 400 --seeds 0 \\
          --t1 10000 --steps 30000 --out P.jsonl
      python -m validation.profile_check --summary P.jsonl --releases release_gelu_t10000.jsonl \\
          [--plot F.png --settle 1=S1.jsonl]   (eq. (9)'s crossings against d' beside GD's and the d = inf law's)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import click
import numpy as np
from scipy import optimize

from thresholds.alg import latent_split
from thresholds.catalog import get_activation, get_link
from thresholds.errors import ThresholdsError
from validation.release_check import (LEARNED, _read, at_horizon, beside_releases, crossing_text, final_q, grid,
                                      matching_releases, q_at, release_options, released_crossing, run_grid)
from validation.escape_law import infinite_horizon
from validation.settle import thresholds_by_step
from validation.settled_hessian import KEYS, first_phase
from validation.simulate import gd_direction, run_gd
from validation.profile_mean import (DEGREE, degree_for, fluctuation_scale, mean_push, residual_draws, scaled_crossing,
                                     mean_threshold, nominal_grid, on_grid)
from validation.width_horizon import read_settle

GTOL = 1e-7        # L-BFGS stops when every entry of the complement's gradient of R is below it (ftol set out of the way)
POINTS = 25        # grid of q from Q_LOW to 1/2, log-spaced
Q_LOW = 1e-4
SCALES = (1, 2, 4, 16, None)                       # d' / d of eq. (9); None: d' = inf
SCALE_NAMES = ("d", "2d", "4d", "16d", "inf")


class Landscape:
    """R(Theta) and GD's direction G(Theta) on one data set (validation.simulate's network: f = (1/m) sum_j a_j
    sigma(theta_j^T x + b_j), R = (1/2n) sum_i (y_i - f_i)^2, so that G = -m grad R; no weight decay, as in
    release_check's runs), and the split of Theta's rows into the clamped hard coordinates and the complement."""

    def __init__(self, X, y, activation: str, link: str, a, b, m: int):
        self.X, self.y, self.activation, self.a, self.b, self.m = X, y, activation, a, b, m
        self.a_j = np.broadcast_to(np.asarray(a, dtype=float), (m,))    # per neuron, once
        self.b_j = np.broadcast_to(np.asarray(b, dtype=float), (m,))
        self.s0 = get_activation(activation).numpy(0)
        self.k = get_link(link).k
        self.hard = latent_split(link).hard              # (r, k), orthonormal rows

    def loss_and_direction(self, theta):
        U = self.X @ theta
        r = self.y - np.mean(self.a_j * self.s0(U + self.b_j), axis=1)
        return 0.5 * float(np.mean(r * r)), gd_direction(self.X, self.y, U, self.activation, a=self.a, b=self.b)

    def hard_part(self, M):
        """The clamped coordinates of M (r x m): hard @ M[:k]."""
        return self.hard @ M[: self.k]

    def complement(self, M):
        """M with its hard part removed (P_C M)."""
        out = M.copy()
        out[: self.k] -= self.hard.T @ (self.hard @ M[: self.k])
        return out

    def relax(self, theta, turn: bool = True):
        """Eq. (1): minimize R from ``theta`` over the complement and the direction of the hard part, its norm h
        kept (the hard part h u / ||u||, u free: at m = 1 only its sign, kept; ``turn=False``: the whole hard part
        kept, as eq. (6)'s mirror); (Theta, R, G, iterations)."""
        shape, hard0 = theta.shape, self.hard_part(theta)
        h = float(np.linalg.norm(hard0))
        size = theta.size
        turn = turn and h > 0

        def assemble(x):
            out = x[:size].reshape(shape).copy()
            if turn:
                u = x[size:].reshape(hard0.shape)
                out[: self.k] += self.hard.T @ (h * u / np.linalg.norm(u))
            else:
                out[: self.k] += self.hard.T @ hard0
            return out

        def fg(x):
            R, G = self.loss_and_direction(assemble(x))
            grad = -self.complement(G).ravel() / self.m                 # the complement's: iterates stay in it
            if not turn:
                return R, grad
            u = x[size:].reshape(hard0.shape)
            unit = u / np.linalg.norm(u)
            gP = -self.hard_part(G) / self.m                            # dR / d(hard part)
            gu = h / np.linalg.norm(u) * (gP - unit * float(np.sum(unit * gP)))
            return R, np.concatenate([grad, gu.ravel()])

        start = self.complement(theta).ravel()
        if turn:
            start = np.concatenate([start, (hard0 / h).ravel()])
        res = optimize.minimize(fg, start, jac=True, method="L-BFGS-B",
                                options={"gtol": GTOL, "ftol": 1e-15, "maxiter": 20000, "maxcor": 30})
        out = assemble(res.x)
        R, G = self.loss_and_direction(out)
        return out, R, G, int(res.nit)


def stall(qs, pushes) -> float | None:
    """Eq. (4): the first q with p <= 0, interpolated from the grid point before, log-linearly in q (linearly from
    q = 0); None: p > 0 on the whole grid."""
    for i, (q, p) in enumerate(zip(qs, pushes)):
        if p <= 0:
            if i == 0:
                return float(q)
            q0, p0 = qs[i - 1], pushes[i - 1]
            frac = p0 / (p0 - p)
            if q0 <= 0:
                return float(q0 + frac * (q - q0))
            return float(math.exp(math.log(q0) + frac * (math.log(q) - math.log(q0))))
    return None


def profile(land: Landscape, theta1, qs) -> dict:
    """Eqs. (1)-(3) and (6)-(7) along the grid ``qs`` (increasing), continued from ``theta1`` (no hard part): first
    relaxed at h = 0, where the hard force fixes E (r x m, unit Frobenius norm; eq. (1)'s direction); then q, p, R, the
    iterations and the complement's largest gradient entry at each point (and h), h = 0 first, and E at h = 0 and at the last
    point; the mirror's p_-, R and iterations beside them (``*_mirror``)."""
    theta, R, G, nit = land.relax(np.asarray(theta1, dtype=float))
    force = land.hard_part(G)
    norm = float(np.linalg.norm(force))
    if norm == 0:
        raise ThresholdsError("the data set's hard force is zero at the relaxed first phase: no direction to follow")
    direction = force / norm
    residual = float(np.abs(land.complement(G)).max())
    rows = {"q": [0.0], "h": [0.0], "push": [norm], "loss": [R], "iterations": [nit], "residual": [residual],
            "push_mirror": [-norm], "loss_mirror": [R], "iterations_mirror": [0], "residual_mirror": [residual],
            "start_direction": direction.tolist()}
    mirror = theta
    for q in qs:
        perp = land.complement(theta)
        h = math.sqrt(q * float(np.sum(perp * perp)) / (1 - q))      # eq. (3) at the previous complement
        theta = perp.copy()
        theta[: land.k] += land.hard.T @ (h * direction)
        theta, R, G, nit = land.relax(theta)
        direction = land.hard_part(theta) / h                        # where the relaxation turned it
        perp2 = float(np.sum(land.complement(theta) ** 2))
        rows["q"].append(h * h / (h * h + perp2))
        rows["h"].append(h)
        rows["push"].append(float(np.sum(direction * land.hard_part(G))))
        rows["loss"].append(R)
        rows["iterations"].append(nit)
        rows["residual"].append(float(np.abs(land.complement(G)).max()))
        mirror = land.complement(mirror)                             # eq. (6): -h E(h), continued from its own branch
        mirror[: land.k] -= land.hard.T @ (h * direction)
        mirror, R, G, nit = land.relax(mirror, turn=False)
        rows["push_mirror"].append(-float(np.sum(direction * land.hard_part(G))))
        rows["loss_mirror"].append(R)
        rows["iterations_mirror"].append(nit)
        rows["residual_mirror"].append(float(np.abs(land.complement(G)).max()))
    rows["direction"] = direction.tolist()
    return rows


def quasi_static_time(rec: dict, q0: float, eta: float) -> float:
    """Eq. (11): the steps a quasi-static climb along the profile ``rec`` takes from the hard fraction ``q0`` (the
    release's q(t1)) to q = 1/2 at step size ``eta``; inf where the push is <= 0 on the way or the grid stops short
    of q = 1/2."""
    q, h, p = (np.asarray(rec[k], dtype=float) for k in ("q", "h", "push"))
    if q0 >= LEARNED:
        return 0.0
    if q[-1] < LEARNED:
        return math.inf
    c2 = h[1] ** 2 * (1 - q[1]) / q[1]                    # ||P_C Theta||^2 at the grid's first point
    h0 = math.sqrt(q0 / (1 - q0) * c2)
    h_end = float(np.interp(math.log(LEARNED), np.log(q[1:]), h[1:]))
    inside = (h > h0) & (h < h_end)
    hs = np.concatenate([[h0], h[inside], [h_end]])
    ps = np.interp(hs, h, p)
    if np.any(ps <= 0):
        return math.inf
    dh, p0, p1 = np.diff(hs), ps[:-1], ps[1:]
    same = np.isclose(p0, p1, rtol=1e-12, atol=0)
    # integral of dh / (a + b h) over a piece with p going linearly from p0 to p1
    pieces = np.where(same, dh / p0, dh * np.log(p1 / p0) / np.where(same, 1.0, p1 - p0))
    return float(np.sum(pieces) / eta)


def with_releases(predicted: list, released: list) -> list:
    """[(profile, release)] of the profiles that have a release of their run, each its run's longest record (the
    profile is quasi-static: release_check eq. (4))."""
    key, by_key = matching_releases(released, longest_run=True)
    return [(p, by_key[key(p)]) for p in predicted if key(p) in by_key]


def time_parts(predicted: list, released: list, eta: float | None = None) -> list[str]:
    """Markdown: per width and d, eq. (11)'s quasi-static time beside GD's t_1/2 - t1 on the runs both learn (each
    profile beside its run's longest release), the ratio GD / eq. (11) as median [least, largest], and the runs
    eq. (11) gives more steps than GD took (eq. (11) above GD: it is then no lower bound)."""
    cells = {}
    for p, rel in with_releases(predicted, released):
        if rel["t_half"] is None:
            continue
        t = quasi_static_time(p, q_at(rel, rel["t1"]), eta or p["eta"])
        if math.isfinite(t) and t > 0:
            cells.setdefault((p["m"], p["d"]), []).append((rel["t_half"] - rel["t1"]) / t)
    lines = ["| m | d | runs learned by both | t_1/2 - t1, GD / eq. (11): median [least, largest] | GD faster |",
             "|---|---|---|---|---|"]
    for (m, d), ratios in sorted(cells.items()):
        ratios = np.asarray(ratios)
        lines.append(f"| {m} | {d} | {len(ratios)} | {np.median(ratios):.2g} [{ratios.min():.2g}, {ratios.max():.2g}] "
                     f"| {int(np.sum(ratios < 1))} |")
    return lines


def parts(rec: dict):
    """Eq. (7): the restoring push r and the force part f of a profile record (arrays over its q), or None for a
    record made before the mirror (eq. (6))."""
    if "push_mirror" not in rec:
        return None
    p, pm = np.asarray(rec["push"]), np.asarray(rec["push_mirror"])
    return (p + pm) / 2, (p - pm) / 2


def run_one(activation: str, link: str, eta: float, m: int, delta: float, d: int, seed: int, t1: int, T: int,
            scale: float = 1.0, points: int = POINTS) -> dict:
    """The profile prediction (eqs. (1)-(5)) for release_check.run_one with the same arguments: the first phase of
    the same seed to t1, the force's direction there, the relaxed profile on ``points`` log-spaced q from Q_LOW to
    1/2.  ``scale`` is kept for the record's key only (the profile leaves the released start out)."""
    if not 0 < t1 < T:
        raise ThresholdsError(f"need 0 < t1 < T, got t1 = {t1}, T = {T}")
    start = time.time()
    setup = first_phase(activation, link, eta, m, delta, d, seed, t1)
    run = run_gd(setup)
    X, y = run.data
    land = Landscape(np.asarray(X, dtype=float), np.asarray(y, dtype=float), activation, link, setup.a, setup.b, m)
    rows = profile(land, np.asarray(run.theta, dtype=float),
                   nominal_grid(Q_LOW, LEARNED, points))
    q_stall = stall(rows["q"], rows["push"])
    return {**dict(zip(KEYS, (activation, link, eta, m, delta, d))), "seed": seed, "t1": t1, "steps": T,
            "scale": scale, **rows, "stall": q_stall, "learned": q_stall is None,
            "seconds": time.time() - start}


def summary(predicted: list, released: list, degree: int = DEGREE) -> list[str]:
    """Markdown: each profile beside the release of the same setup, seed, t1 and start (release_check records; the
    run's longest record, whatever its T, as the profile is quasi-static: release_check eq. (4)): the push at h = 0
    and its least value, q_stall against GD's q(T), learned_prof against learned; and the counts."""
    def row(p, rel):
        measured = ([str(rel["steps"]), f"{final_q(rel):.3g}", "yes" if rel["learned"] else "no",
                     "yes" if rel["learned"] == p["learned"] else "no"] if rel else ["-"] * 4)
        return [str(p["m"]), str(p["d"]), f"{p['delta']:g}", str(p["seed"]), str(p["t1"]),
                f"{p['push'][0]:.3g}", f"{min(p['push']):.3g}", "-" if p["stall"] is None else f"{p['stall']:.3g}",
                *measured]
    means = mean_crossings(predicted, degree)     # eq. (6)'s refits once, for both tables that read them
    lines = beside_releases(predicted, released, ["m", "d", "delta", "seed", "t1", "p(0)", "min p", "q_stall",
                                                  "GD's T", "q(T)", "learned", "agree"], row,
                            "learned_prof (eq. (5))", longest_run=True)
    return (lines + [""] + crossings(predicted, released) + [""] + even_parts(predicted) + [""]
            + mean_parts(predicted, degree, means) + [""] + mean_against_gd(predicted, released, degree, means)
            + [""] + fluctuation_parts(predicted, degree) + [""] + time_parts(predicted, released))


def learned_at(r, f, ratio: float | None) -> bool:
    """Eq. (9): learned at d' = ratio x d by a profile at d (r, f of eq. (7)); ratio None: d' = inf (eq. (8))."""
    s = 0.0 if ratio is None else ratio ** -0.5
    return bool(np.all(r[1:] + s * f[1:] > 0))


def _mirror_cells(predicted: list) -> dict:
    """{(m, d, t1): {delta: [(r, f, q)]}} of the profiles with a mirror (eq. (7)), q the run's own."""
    cells = {}
    for p in predicted:
        split = parts(p)
        if split is not None:
            cells.setdefault((p["m"], p["d"], p["t1"]), {}).setdefault(p["delta"], []).append(
                (*split, np.asarray(p["q"], dtype=float)))
    return cells


def scaled_crossings(predicted: list) -> dict:
    """{(m, d, t1): [(ratio, crossing, s.e.)] over SCALES}: the logistic crossing (release_check eq. (3)) of eq. (9)
    read at d' = ratio x d (ratio None: d' = inf, eq. (8)) on the profiles with a mirror; crossing and s.e. None
    where the fractions do not bracket 1/2."""
    out = {}
    for key, by_delta in sorted(_mirror_cells(predicted).items()):
        out[key] = [(ratio, *released_crossing([{"delta": delta, "learned": learned_at(r, f, ratio)}
                                                for delta, runs in by_delta.items() for r, f, _ in runs]))
                    for ratio in SCALES]
    return out


def even_parts(predicted: list) -> list[str]:
    """Markdown: per width, d, t1 and delta, the profiles with a mirror (eqs. (6)-(9)): the force |F| = f(0) and
    the restoring push's least value on the grid, q > 0 (medians over the runs), the runs with r < 0 at the grid's
    first q (restoring at the start) and r's mean there (minus the mean hard Schur complement times h, eq. (10)),
    learned_prof and learned_even (eq. (8)); then per width, d and t1 the logistic
    crossings (release_check eq. (3)) of eq. (9) at d' = d (learned_prof), 2d, 4d, 16d and inf (learned_even), and of
    r > 0 at the grid's first q (eq. (10): a negative hard direction at the relaxed first phase)."""
    cells = _mirror_cells(predicted)
    if not cells:
        return ["(no profile with a mirror: eqs. (6)-(9) need records made with it)"]
    lines = ["| m | d | t1 | delta | runs | f(0) | min r | r < 0 first | r at the first q, mean (s.e.) | learned_prof "
             "| learned_even |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (m, d, t1), by_delta in sorted(cells.items()):
        for delta, runs in sorted(by_delta.items()):
            force = np.median([f[0] for _, f, _ in runs])
            least = np.median([r[1:].min() for r, _, _ in runs])
            first = np.array([r[1] for r, _, _ in runs])
            spread = f" ({first.std(ddof=1) / np.sqrt(len(first)):.2g})" if len(first) > 1 else ""
            lines.append(f"| {m} | {d} | {t1} | {delta:g} | {len(runs)} | {force:.3g} | {least:.3g} | "
                         f"{sum(bool(r[1] < 0) for r, _, _ in runs)} | {first.mean():.2g}{spread} | "
                         f"{sum(learned_at(r, f, 1) for r, f, _ in runs)} | "
                         f"{sum(learned_at(r, f, None) for r, f, _ in runs)} |")
    crossing_lines = ["| m | d | t1 | runs | " + " | ".join(f"crossing at d' = {x} (s.e.)" for x in SCALE_NAMES)
                      + " | crossing of r > 0 at the first q (eq. (10)) |", "|---|---|---|---|" + "---|" * (len(SCALES) + 1)]
    for (m, d, t1), values in scaled_crossings(predicted).items():
        by_delta = cells[(m, d, t1)]
        runs = sum(len(v) for v in by_delta.values())
        start = released_crossing([{"delta": delta, "learned": bool(r[1] > 0)}
                                   for delta, split in by_delta.items() for r, _, _ in split])
        text = [crossing_text(c, se) for _, c, se in values + [(None, *start)]]
        crossing_lines.append(f"| {m} | {d} | {t1} | {runs} | " + " | ".join(text) + " |")
    return lines + [""] + crossing_lines


def _mean_cells(predicted: list):
    """Per (m, d, t1) cell with two deltas at least: the nominal grid and the runs' (delta, r, f, q), r and f at
    their own q; with R and F, r and f on the grid (validation.profile_mean eq. (1))."""
    for key, by_delta in sorted(_mirror_cells(predicted).items()):
        if len(by_delta) < 2:
            continue
        runs = [(delta, r, f, q) for delta, split in sorted(by_delta.items()) for r, f, q in split]
        grid = nominal_grid(Q_LOW, LEARNED, len(runs[0][3]) - 1)
        R = np.array([on_grid(q, r, grid) for _, r, _, q in runs])
        F = np.array([on_grid(q, f, grid) for _, _, f, q in runs])
        yield key, grid, runs, np.array([delta for delta, *_ in runs]), R, F


def mean_crossings(predicted: list, degree: int = DEGREE) -> dict:
    """{(m, d, t1): ([ScaledCrossing] over SCALES[:-1], MeanThreshold of eq. (3), of eq. (3'))} of the cells with two
    deltas at least: validation.profile_mean eq. (2) read at d' = ratio x d (the logistic crossing, release_check
    eq. (3), its s.e. with rbar's error by eq. (6) where the cell has more runs than K + 1, else the logistic one
    alone, marked "no draws"), and for d' = inf eqs. (3) and (3') with their bootstrap (eq. (4))."""
    out = {}
    for key, qgrid, runs, deltas, R, _ in _mean_cells(predicted):
        K = degree_for(deltas, degree)
        coef = mean_push(deltas, R, K)
        draws = residual_draws(deltas, R, K) if len(deltas) > K + 1 else []
        own = [(r, f, q) for _, r, f, q in runs]
        scaled = [scaled_crossing(deltas, own, qgrid, coef, draws, ratio) for ratio in SCALES[:-1]]
        out[key] = (scaled, mean_threshold(deltas, R, degree), mean_threshold(deltas, R[:, :1], degree))
    return out


def mean_parts(predicted: list, degree: int = DEGREE, means: dict | None = None) -> list[str]:
    """Markdown: per width, d and t1, validation.profile_mean's law: eq. (2)'s crossings at d' = d (learned_prof),
    2d, 4d and 16d with eq. (6)'s s.e. (and its two parts, the logistic one and rbar's), and the mean even
    thresholds of eq. (3) (whole grid) and eq. (3') (first q) with the 16-84 % range of eq. (4)'s bootstrap and its
    draws off the cell's range (``means``: :func:`mean_crossings` of the same records, if already made)."""
    lines = ["| m | d | t1 | runs | deltas | K | " + " | ".join(f"eq. (2) at d' = {x} +- s.e. (logistic, rbar's)"
                                                               for x in SCALE_NAMES[:-1])
             + " | delta_bar, eq. (3) [16 %, 84 %] (off range) | delta_0, eq. (3') [16 %, 84 %] (off range) |",
             "|---|---|---|---|---|---|" + "---|" * (len(SCALES) + 1)]
    for (m, d, t1), (scaled, whole, first) in (means or mean_crossings(predicted, degree)).items():
        text = [c.text() for c in scaled]
        lines.append(f"| {m} | {d} | {t1} | {whole.runs} | {whole.deltas} | {whole.degree} | " + " | ".join(text)
                     + "".join(f" | {x.text()} ({x.off_range} / {x.draws})" for x in (whole, first)) + " |")
    return lines


@dataclass(frozen=True)
class GDCrossing:
    """GD's released crossing of one width and d (release_check eq. (3)), its s.e. and the ``horizon`` it is read
    at (release_check eq. (4))."""
    value: float
    se: float
    horizon: int


def released_crossings(released: list, t1s) -> dict:
    """{(m, d): GDCrossing}: GD's released crossing of each width and d, over the releases at a t1 of ``t1s`` with
    the random start (scale 1), read at the cell's common horizon (release_check eq. (4): each run from its longest
    record), where the fractions bracket 1/2."""
    cells = {}
    for r in released:
        if r["t1"] in t1s and r.get("scale", 1.0) == 1.0:
            cells.setdefault((r["m"], r["d"]), []).append(r)
    out = {}
    for key, rows in sorted(cells.items()):
        cell = at_horizon(rows)
        c, se = released_crossing(cell.rows)
        if c is not None:
            out[key] = GDCrossing(c, se, cell.horizon)
    return out


def _bound_side(c, value: float) -> bool:
    """Whether ``value`` lies on the side of eq. (2)'s bound where its crossing ``c`` lies beyond the profiles'
    deltas (c.bound = ("<" or ">", the edge))."""
    side, edge = c.bound
    return (value < edge) == (side == "<")


def _against_limit(c, limit) -> str:
    """Two cells of :func:`mean_against_gd`: GD's infinite-horizon crossing (validation.escape_law eq. (5), ``limit``
    = (value, s.e.) or None) and eq. (2)'s crossing ``c`` minus it in combined s.e. (or whether it lies on the side
    of eq. (2)'s bound)."""
    if limit is None:
        return "- | -"
    value, se = limit
    text = f"{value:.2f}" + ("" if se is None else f" +- {se:.2f}")
    if c.value is None:
        return f"{text} | " + ("same side" if _bound_side(c, value) else "other side")
    if se is None or not math.isfinite(c.se):
        return f"{text} | open"
    return f"{text} | {(c.value - value) / math.hypot(c.se, se):+.1f}"


def mean_against_gd(predicted: list, released: list, degree: int = DEGREE, means: dict | None = None) -> list[str]:
    """Markdown: validation.profile_mean eq. (2) read from d to d' = ratio x d > d beside GD's released crossing at
    d', read at its common horizon (release_check eq. (4)) and at S -> inf (validation.escape_law eq. (5)), where
    either exists ("-" for the other), and their differences in combined s.e. (eq. (6)'s s.e. and GD's); where eq.
    (2)'s crossing lies beyond the profiles' deltas, whether GD's lies on the same side (``means`` as in
    :func:`mean_parts`)."""
    t1s = {p["t1"] for p in predicted}
    gd, limit = released_crossings(released, t1s), infinite_horizon(released, t1s)
    lines = [("| m | d | d' | eq. (2) at d' +- s.e. (logistic, rbar's) | GD at d' (s.e.) | GD's horizon T "
              "| difference / combined s.e. | GD at d', S -> inf (escape_law eq. (5)) | difference / combined s.e. |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for (m, d, t1), (scaled, _, _) in (means or mean_crossings(predicted, degree)).items():
        for c in scaled:
            target, at_inf = gd.get((m, c.ratio * d)), limit.get((m, c.ratio * d))
            if c.ratio == 1 or (target is None and at_inf is None):
                continue
            if target is None:
                z = "-"
            elif c.value is None:    # beyond the profiles' deltas: GD on the same side, or how far from the edge
                gap = (target.value - c.bound[1]) / target.se
                z = ("same side" if _bound_side(c, target.value) else f"GD {abs(gap):.1f} s.e. on the other side")
            else:
                z = ("open" if not math.isfinite(c.se)
                     else f"{(c.value - target.value) / math.hypot(c.se, target.se):+.1f}")
            gd_text = "- | -" if target is None else f"{crossing_text(target.value, target.se)} | {target.horizon}"
            lines.append(f"| {m} | {d} | {c.ratio * d} | {c.text()} | {gd_text} | {z} | {_against_limit(c, at_inf)} |")
    return lines


def fluctuation_parts(predicted: list, degree: int = DEGREE, qs=(1e-4, 1e-3, 1e-2, 1e-1)) -> list[str]:
    """Markdown: per width, d and t1, validation.profile_mean eq. (5), s_r and s_f (the fluctuations of r about its
    mean and of f, times sqrt(n)) at the grid points nearest ``qs`` in log q, +- s / sqrt(2 dof)."""
    lines = ["| m | d | t1 | runs | " + " | ".join(f"s_r at q = {q:g}" for q in qs) + " | "
             + " | ".join(f"s_f at q = {q:g}" for q in qs) + " |", "|---|---|---|---|" + "---|" * (2 * len(qs))]
    for (m, d, t1), qgrid, runs, deltas, R, F in _mean_cells(predicted):
        if len(runs) <= degree_for(deltas, degree) + 1:
            continue
        scale = fluctuation_scale(deltas, d, R, F, qgrid, degree)
        at = [int(np.argmin(np.abs(np.log(qgrid / q)))) for q in qs]
        text = [f"{s[j]:.3g} +- {s[j] / np.sqrt(2 * dof):.2g}" for s, dof in ((scale.s_r, scale.dof_r),
                                                                              (scale.s_f, scale.dof_f)) for j in at]
        lines.append(f"| {m} | {d} | {t1} | {len(runs)} | " + " | ".join(text) + " |")
    return lines


def crossings(predicted: list, released: list) -> list[str]:
    """Markdown: per width, d and t1, the logistic crossing (release_check eq. (3)) of learned_prof and of GD's
    learned over the same runs (those with both a profile and a release; GD's read at the runs' common horizon,
    release_check eq. (4), each from its longest record)."""
    cells = {}
    for p, rel in with_releases(predicted, released):
        cells.setdefault((p["m"], p["d"], p["t1"]), []).append((p, rel))
    lines = ["| m | d | t1 | GD's T | runs | crossing, profile (s.e.) | crossing, GD (s.e.) |",
             "|---|---|---|---|---|---|---|"]
    for (m, d, t1), pairs in sorted(cells.items()):
        gd = at_horizon([r for _, r in pairs])
        text = [crossing_text(*released_crossing(rows)) for rows in ([p for p, _ in pairs], gd.rows)]
        lines.append(f"| {m} | {d} | {t1} | {gd.horizon} | {len(pairs)} | {text[0]} | {text[1]} |")
    return lines


def figure(path, predicted: list, released: list, settle_files: dict, D: int, title: str = "", law: str = "whole",
           degree: int = DEGREE):
    """PNG (thresholds.plots.scaled_profile_figure): the crossings of each (m, d) cell of the profiles at d' >= d,
    by eq. (9) (``law`` "whole": r kept whole) or by validation.profile_mean eq. (2) ("mean": r's mean kept, its
    fluctuation scaled with the force; at d' = inf eq. (3'), unbiased, with half its 16-84 % range), GD's released
    crossings per (m, d) (release_check records released at the profiles' t1 with the random
    start, eq. (3)), and per width the d = inf law's delta_NN at the last checkpoint of a validation.settle file
    (settle eq. (1) on data sets of n = delta D)."""
    from thresholds.plots import scaled_profile_figure
    t1s = {p["t1"] for p in predicted}
    if law == "whole":
        profiles = {(m, d): [(None if ratio is None else ratio * d, c, se) for ratio, c, se in values]
                    for (m, d, t1), values in scaled_crossings(predicted).items()}
    else:
        profiles = {(m, d): [(c.ratio * d, c.value, c.se) for c in scaled] + [(None, first.value, first.se)]
                    for (m, d, t1), (scaled, _, first) in mean_crossings(predicted, degree).items()}
    measured = {}
    for (m, d), gd in released_crossings(released, t1s).items():
        measured.setdefault(m, []).append((d, gd.value, gd.se))
    limits = {}
    for m, lines in settle_files.items():
        steps = thresholds_by_step(lines, D)
        if steps and steps[-1][1].found:
            limits[m] = (steps[-1][1].value, steps[-1][1].low, steps[-1][1].high)
    scaled_profile_figure(path, profiles, measured, limits, title=title,
                          law="eq. (9)" if law == "whole" else "mean law (profile_mean)")


@click.command()
@release_options(widths="1", seeds="0", t1=10000, what="profile")
@click.option("--releases", "release_files", multiple=True, type=click.Path(dir_okay=False),
              help="validation.release_check records to set beside the profiles of --summary")
@click.option("--points", type=click.IntRange(min=2), default=POINTS, show_default=True,
              help="grid points of q from 1e-4 to 1/2")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="with --summary: PNG of eq. (9)'s crossings against d', GD's released ones and --settle's d = inf")
@click.option("--settle", "settle_specs", multiple=True,
              help="with --plot: M=FILE, a validation.settle file of width M (its delta_NN at the last checkpoint)")
@click.option("--edge-d", "D", type=click.IntRange(min=1), default=400, show_default=True,
              help="the cut of settle eq. (1) for --settle: data sets of n = delta D")
@click.option("--law", type=click.Choice(["whole", "mean"]), default="whole", show_default=True,
              help="with --plot: the profiles read at d' by eq. (9) (r whole) or by validation.profile_mean (r's "
                   "mean kept, its fluctuation scaled with the force)")
@click.option("--degree", type=click.IntRange(min=1, max=4), default=DEGREE, show_default=True,
              help="with --summary: the degree in delta of the mean restoring push (validation.profile_mean eq. (1))")
def main(activation, link, eta, widths, deltas, dims, seeds, t1, T, scale, out, summary_files, release_files, points,
         plot, settle_specs, D, law, degree):
    if summary_files:
        predicted, released = _read(summary_files), _read(release_files)
        print("\n".join(summary(predicted, released, degree)))
        if plot:
            figure(plot, predicted, released, read_settle(settle_specs), D, law=law, degree=degree)
            print(plot)
        return
    if plot or settle_specs or law != "whole" or degree != DEGREE:
        raise click.UsageError("--plot, --settle, --law and --degree go with --summary")
    run_grid(out, lambda *args: run_one(*args, points=points),
             lambda m, d, delta, s, rec: f"m = {m}, d = {d}, delta {delta:g}, run {s}: q_stall "
             f"{'-' if rec['stall'] is None else format(rec['stall'], '.3g')} ({rec['seconds']:.0f} s)",
             (activation, link, eta), grid(widths, dims, deltas, seeds), t1, T, scale)


if __name__ == "__main__":
    main()

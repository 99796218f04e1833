"""The hard component in the first steps at finite d: initial overlap plus sample forcing (m = 1).

GD from theta_0 ~ N(0, rho0^2 I/d) starts with a hard overlap q_0 = rho0 xi / sqrt(d), xi ~ N(0, 1), and
every step adds the hard component of the gradient, F_t = (1/n) sum_i z_i psi_i^t: zero at d = inf, of
order n^{-1/2} at finite n (for an even link the samples' signs z_i/|z_i| never enter the first phase, so
F_t is a sum of independent signs).  While the hard component is small it obeys the linearized d = inf
recursion (thresholds.dmft, eq. (9)) with this forcing.  In units of d^{-1/2}, A(t) = sqrt(d) M(t):

    G(s, s) = 1,  G(t+1, s) = (1 - eta lambda) G(t, s) + eta sum_{r=s}^{t} K_M(t, r) G(r, s),           (1)
    A(t) = rho0 xi G(t, 0) + eta sum_{s<t} G(t, s+1) phi_s,   Cov(phi_s, phi_r) = K_F(s, r) / delta,     (2)
    V(t) = Var A(t) = rho0^2 G(t, 0)^2 + (eta^2 / delta) sum_{s,r<t} G(t, s+1) G(t, r+1) K_F(s, r),      (3)

a centred Gaussian whose law does not depend on d: at every d the first steps move the hard overlap by
O(d^{-1/2}) with the same law, and what changes with d is how far that is from O(1).  Approximations:
first order in the hard component (valid while it is small against ||theta||; checked against GD in
validation/reports/forcing), the d = inf first phase (no finite-n outliers of the Hessian), and
Gaussian forcing (a sum of n independent signs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .dmft import DMFTSetup, solve_dmft
from .errors import UnsupportedError


@dataclass
class AmplitudeLaw:
    """Eqs. (1)-(3) per step t = 0..steps: G(t, 0) and V(t) (means and standard errors over the DMFT
    replicas) and the part of V(t) due to the forcing."""

    setup: DMFTSetup
    t: np.ndarray
    growth: np.ndarray      # G(t, 0)
    growth_err: np.ndarray
    variance: np.ndarray    # V(t)
    variance_err: np.ndarray
    forced: np.ndarray      # the forcing's share of V(t), (V - rho0^2 G^2) / V


def propagator(KM: np.ndarray, eta: float, weight_decay: float = 0.0) -> np.ndarray:
    """G(t, s) of eq. (1) for 0 <= s <= t <= T from K_M (T x T)."""
    T = KM.shape[0]
    G = np.zeros((T + 1, T + 1))
    for s in range(T + 1):
        G[s, s] = 1.0
        for t in range(s, T):
            G[t + 1, s] = (1 - eta * weight_decay) * G[t, s] + eta * KM[t, s : t + 1] @ G[s : t + 1, s]
    return G


def variance(G: np.ndarray, KF: np.ndarray, eta: float, delta: float, rho0: float) -> np.ndarray:
    """V(t) of eq. (3) for t = 0..T."""
    T = KF.shape[0]
    V = np.zeros(T + 1)
    for t in range(T + 1):
        g = G[t, 1 : t + 1]              # G(t, s + 1), s < t
        V[t] = rho0**2 * G[t, 0] ** 2 + eta**2 / delta * g @ KF[:t, :t] @ g
    return V


def amplitude_law(setup: DMFTSetup, *, cache: bool = False) -> AmplitudeLaw:
    """Eqs. (1)-(3) from the ``pathwise`` DMFT of ``setup`` (null case, m = 1; ``cache``: its run is read from
    / stored in the on-disk cache)."""
    if setup.m != 1 or setup.response != "pathwise":
        raise UnsupportedError("the amplitude law needs the pathwise DMFT at m = 1")
    res = solve_dmft(setup, cache=cache)
    if res.easy_basis:
        raise UnsupportedError("the amplitude law is derived for targets without easy directions")
    Gs, Vs = [], []
    for KM, KF in res.hard_kernels:
        G = propagator(KM, setup.eta, setup.weight_decay)
        Gs.append(G[:, 0])
        Vs.append(variance(G, KF, setup.eta, setup.delta, setup.rho0))
    Gs, Vs = np.array(Gs), np.array(Vs)
    k = len(Gs)
    se = (lambda a: a.std(axis=0, ddof=1) / math.sqrt(k)) if k > 1 else (lambda a: np.zeros(a.shape[1]))
    G0, V = Gs.mean(axis=0), Vs.mean(axis=0)
    return AmplitudeLaw(setup, np.arange(setup.steps + 1), G0, se(Gs), V, se(Vs),
                        1 - setup.rho0**2 * G0**2 / V)

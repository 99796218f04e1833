"""Linearized growth of the hard component along the first phase, against the outlier picture.

delta_NN reads the growth of the hard component of Theta off the negative hard outlier
z*(t) of the Hessian at each checkpoint (``thresholds.escape.growth``: L(t) = sum log(1 - eta z*),
escape when L reaches log sqrt d).  This check propagates the exact linearization instead.
Along GD restricted to the complement of the hard subspace (the first phase, Theta_t) the
tangent V_t (d x m) of the GD map obeys

    V_{t+1} = V_t + eta dG(Theta_t)[V_t] - eta lambda V_t,
    dG_j = (1/n) sum_i [ -df_i a sigma'(u_ij + b) + r_i a sigma''(u_ij + b) x_i^T v_j ] x_i,
    df_i = (1/m) sum_k a sigma'(u_ik + b) x_i^T v_k,       r_i = y_i - f(x_i),

so GD started at Theta_0 + h V_0 has hard components h P_H V_t + O(h^2).  The unrestricted run from the
same Theta_0 differs from the restricted one by its initial hard component P_H Theta_0 and, at every
step, by the hard component of the gradient that the restriction removes, F_t = P_H G(Theta_t) (a sum
over samples of sign(z_i)-weighted terms, of order n^{-1/2} like P_H Theta_0).  To first order in both,

    W_{t+1} = W_t + eta dG(Theta_t)[W_t] - eta lambda W_t + eta F_t,   W_0 = P_H Theta_0,         (2)

and P_H W_t is the linear prediction of the unrestricted run's hard components (``forced``).  Started from the
m tangents e_H (x) e_j, the m x m matrix P_H V_t gives the linearized log-growth
Lambda(t) = log of its largest singular value (with the neuron mix that grows most); it
includes the coupling of the hard direction to every bulk direction, which the
outlier picture drops.  Printed next to it: L(t) from the finite-d law at the same
setup (thresholds.evaluation.evaluate, law from GD at d, the same seeds), and the hard
fraction of unrestricted GD from the same data and initialization plus a hard component
of order d^{-1/2}.

    python -m validation.tangent_check          # gelu, phase retrieval, eta 0.1, d = 400
"""

from __future__ import annotations

import math
from dataclasses import dataclass
import sys
from pathlib import Path

import numpy as np

from thresholds.catalog import get_activation, get_link
from thresholds.escape import growth
from thresholds.nn import NNSetup
from validation.gd_law import evaluate

OUT = Path(__file__).parent / "reports" / "width" / "tangent.md"
ETA, D, STEPS, SEEDS = 0.1, 400, 400, 3
CASES = ((1, 6.0), (2, 6.0), (1, 12.0), (2, 12.0))   # (m, delta): m = 2 recovers at 6 in simulation, m = 1 at ~10


def gradient(Th, X, y, fns, a=1.0):
    """G(Theta) = (1/n) sum_i r_i a sigma'(x_i^T theta_j) x_i (the mean-field GD direction), r = y - f."""
    s0, s1, _ = fns
    U = X @ Th
    r = y - a * s0(U).mean(axis=1)
    return X.T @ (r[:, None] * a * s1(U)) / X.shape[0]


def tangent(Th, Vs, X, y, fns, a=1.0):
    """dG(Theta)[V] for a stack of tangents Vs (d x m x k) (module docstring)."""
    s0, s1, s2 = fns
    U = X @ Th
    r = y - a * s0(U).mean(axis=1)
    S1, S2 = s1(U), s2(U)
    n, d = X.shape
    m, k = Vs.shape[1], Vs.shape[2]
    XV = (X @ Vs.reshape(d, m * k)).reshape(n, m, k)    # x_i^T v_j for each tangent k
    df = (a * S1[:, :, None] * XV).mean(axis=1)         # (n, k)
    inner = -df[:, None, :] * a * S1[:, :, None] + r[:, None, None] * a * S2[:, :, None] * XV
    return (X.T @ inner.reshape(n, m * k)).reshape(d, m, k) / n


def draw(activation, link, delta, d, m, seed, rho0=1.0):
    """(sigma, sigma', sigma'') as NumPy functions, X (n x d, n = delta d), y = h(x_1) and
    theta_0 ~ N(0, rho0^2 I/d) (d x m), drawn from ``seed`` in that order."""
    fns = tuple(get_activation(activation).numpy(k) for k in range(3))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((int(round(delta * d)), d))
    y = get_link(link).numpy()(X[:, 0])
    return fns, X, y, rng.standard_normal((d, m)) * rho0 / math.sqrt(d)


@dataclass
class TangentRun:
    """One trial: Lambda(t) per step, the growing neuron mix at the end, the unrestricted hard fraction
    per step, the initialization and ||Theta||^2 of the restricted run at the end."""

    lam: np.ndarray
    mix: np.ndarray
    frac: np.ndarray
    theta0: np.ndarray
    norm2_restricted: float
    forced: np.ndarray = None    # (T+1, m): P_H W_t of eq. (2)
    hard: np.ndarray = None      # (T+1, m): the unrestricted run's hard components


def run(m: int, delta: float, seed: int, activation="gelu", link="phase_retrieval", *, d=D, eta=ETA, steps=STEPS,
        rho0=1.0, data=None) -> TangentRun:
    """The restricted run with its tangents and the unrestricted run from the same data and initialization
    (module docstring); ``data`` = (fns, X, y, theta0) replaces the draw.  FloatingPointError when the
    unrestricted run diverges."""
    fns, X, y, theta0 = data if data is not None else draw(activation, link, delta, d, m, seed, rho0)
    d = X.shape[1]
    Th = theta0.copy()
    Th[0] = 0.0                                # restricted: no hard component (phase retrieval: k = 1, no easy one)
    Vs = np.zeros((d, m, m))                   # Vs[:, j, k]: neuron j of the tangent started at e_H (x) e_k
    Vs[0] = np.eye(m)
    W = np.zeros((d, m, 1))                    # eq. (2): forced by the removed hard gradient
    W[0, :, 0] = theta0[0]
    Tu = theta0.copy()                         # unrestricted, same data and initialization
    lam, frac, forced, hard = [], [], [], []
    for t in range(steps + 1):
        lam.append(math.log(np.linalg.svd(Vs[0], compute_uv=False)[0]))
        frac.append(float(np.sum(Tu[0] ** 2) / np.sum(Tu**2)))
        forced.append(W[0, :, 0].copy())
        hard.append(Tu[0].copy())
        if t == steps:
            break
        Vs = Vs + eta * tangent(Th, Vs, X, y, fns)
        G = gradient(Th, X, y, fns)
        W = W + eta * tangent(Th, W, X, y, fns)
        W[0, :, 0] += eta * G[0]
        Th = Th + eta * G
        Th[0] = 0.0
        Tu = Tu + eta * gradient(Tu, X, y, fns)
        if not np.isfinite(Tu).all() or np.sum(Tu ** 2) > 1e12:
            raise FloatingPointError(f"unrestricted GD diverged at step {t + 1}")
    _, _, vt = np.linalg.svd(Vs[0])
    return TangentRun(np.array(lam), vt[0], np.array(frac), theta0, float(np.sum(Th ** 2)), np.array(forced),
                      np.array(hard))


def outlier_growth(m: int, delta: float):
    ev = evaluate(NNSetup("gelu", eta=ETA, steps=STEPS, m=m, law_d=D, replicas=SEEDS, law_dtype="float64"), delta)
    steps, L, se = growth(ev, ETA)
    return dict(zip(steps, zip(L, se)))


def main():
    target = 0.5 * math.log(D)
    lines = ["# Linearized growth of the hard component versus the outlier picture", "",
             f"Generated by `python -m validation.tangent_check` (module docstring).  gelu, y = g^2, eta = {ETA}, "
             f"d = {D}, {STEPS} steps, {SEEDS} seeds (mean over seeds); escape when the growth reaches "
             f"log sqrt d = {target:.2f}.", "",
             "| m | delta | step | Lambda(t) exact linearization | L(t) outlier picture | unrestricted GD hard fraction |",
             "|---|---|---|---|---|---|"]
    mixes = []
    for m, delta in CASES:
        runs = [run(m, delta, 1000 + s) for s in range(SEEDS)]
        lam = np.mean([r.lam for r in runs], axis=0)
        frac = np.mean([r.frac for r in runs], axis=0)
        L = outlier_growth(m, delta)
        for t in (25, 50, 100, 200, 300, 400):
            lt = L.get(t)
            lines.append(f"| {m} | {delta:g} | {t} | {lam[t]:.2f} | "
                         + (f"{lt[0]:.2f} +- {lt[1]:.2f}" if lt else "-") + f" | {frac[t]:.3f} |")
        first = [int(np.argmax(r.lam >= target)) if (r.lam >= target).any() else None for r in runs]
        mixes.append(f"m = {m}, delta = {delta:g}: first step with Lambda >= log sqrt d per seed: {first}; "
                     f"growing neuron mix at step {STEPS}: "
                     + "; ".join(np.array2string(r.mix, precision=2) for r in runs))
        print(f"m = {m}, delta = {delta:g} done", flush=True)
    lines += [""] + [f"- {x}" for x in mixes]
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())

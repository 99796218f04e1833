"""numba kernels for per-sample quantities of the two-layer network (m = 1).

Conventions (THEORY.md section 2): f = a sigma(u + b), square loss l = (y - f)^2/2,
psi(u, y) = -dl/du = (y - f) a sigma'(u + b),
psi'(u, y) = d psi/du = -a^2 sigma'^2 + (y - f) a sigma'' = -G (the Hessian weight).
The activation and its derivatives are compiled from SymPy once per
expression (cached by expression string).
"""

from __future__ import annotations

import math

import numba
import sympy as sp

from .catalog import X, Activation


def _heaviside(t, h0=0.5):
    return 1.0 if t > 0 else (0.0 if t < 0 else h0)


def _sign(t):
    return 1.0 if t > 0 else (-1.0 if t < 0 else 0.0)


_MATH = [{"Heaviside": numba.njit(_heaviside), "sign": numba.njit(_sign), "Abs": abs,
          "Max": max, "Min": min, "erf": math.erf, "erfc": math.erfc}, "math"]


_CACHE: dict = {}


def compiled_activation(act: Activation, need_second: bool = True):
    """(sigma, sigma', sigma'') as numba-jitted scalar functions (sigma'' = 0 stub if not needed)."""
    key = (str(act.expr), need_second)
    if key in _CACHE:
        return _CACHE[key]
    funcs = []
    for order in (0, 1, 2):
        if order == 2 and not need_second:
            funcs.append(numba.njit(lambda t: 0.0))
            continue
        expr = act.derivative(order)
        f = sp.lambdify([X], expr + sp.Float(0) * X, modules=_MATH)
        funcs.append(numba.njit(f))
    _CACHE[key] = tuple(funcs)
    return _CACHE[key]


def make_psi_kernel(act: Activation, need_second: bool = True):
    """numba kernel psi_and_dpsi(u, y, a, b, psi_out, dpsi_out) over arrays."""
    key = ("kernel", str(act.expr), need_second)
    if key in _CACHE:
        return _CACHE[key]
    s0, s1, s2 = compiled_activation(act, need_second)

    @numba.njit(cache=False)
    def psi_and_dpsi(u, y, a, b, psi_out, dpsi_out):
        for i in range(u.size):
            z = u[i] + b
            sg, d1, d2 = s0(z), s1(z), s2(z)
            r = y[i] - a * sg
            psi_out[i] = r * a * d1
            dpsi_out[i] = -a * a * d1 * d1 + r * a * d2

    _CACHE[key] = psi_and_dpsi
    return psi_and_dpsi


def make_psi_kernel_m(act: Activation):
    """numba kernel psi_m(U, y, a, b, psi_out, loss_out) for m neurons with per-neuron arrays a, b (m,):
    f = (1/m) sum_j a_j sigma(u_j + b_j), psi_j = (y - f) a_j sigma'(u_j + b_j), loss = (y - f)^2 / 2
    per path."""
    key = ("kernel_m", str(act.expr))
    if key in _CACHE:
        return _CACHE[key]
    s0, s1, _ = compiled_activation(act, False)

    @numba.njit(cache=False)
    def psi_m(U, y, a, b, psi_out, loss_out):
        n, m = U.shape
        for i in range(n):
            f = 0.0
            for j in range(m):
                f += a[j] * s0(U[i, j] + b[j])
            r = y[i] - f / m
            loss_out[i] = 0.5 * r * r
            for j in range(m):
                psi_out[i, j] = r * a[j] * s1(U[i, j] + b[j])

    _CACHE[key] = psi_m
    return psi_m


@numba.njit(cache=False)
def _train_loss_impl(u, y, omega, a, b, s0):
    total = 0.0
    for i in range(u.size):
        r = y[i] - a * s0(u[i] + b)
        total += omega[i] * 0.5 * r * r
    return total


def train_loss_kernel(u, y, omega, a, b, s0):
    """sum_i omega_i (y_i - a sigma(u_i + b))^2 / 2."""
    return _train_loss_impl(u, y, omega, a, b, s0)

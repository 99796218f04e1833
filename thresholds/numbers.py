"""Means with their standard errors, and numbers printed with the digits their error estimate justifies."""

from __future__ import annotations

import math

import numpy as np


def justified_digits(value: float, error: float, *, max_digits: int = 15) -> int:
    """Number of significant digits of ``value`` that ``error`` supports (>= 1)."""
    if not math.isfinite(value) or value == 0:
        return 1
    if error <= 0:
        return max_digits
    digits = math.floor(math.log10(abs(value))) - math.floor(math.log10(error))
    return max(1, min(max_digits, digits))


def format_with_error(value: float, error: float, *, max_digits: int = 15) -> str:
    """``value`` to its justified digits followed by ``(+- error)``; 'inf' for infinity."""
    if math.isinf(value):
        return "inf"
    if value == 0 and error == 0:
        return "0"
    n = justified_digits(value, error, max_digits=max_digits)
    return f"{value:.{n}g} (+- {error:.1e})"


def mean_se(values) -> tuple[float, float]:
    """Mean and standard error of the mean (sample standard deviation with ddof = 1 over sqrt(count);
    0 for a single value) of ``values`` over replicas."""
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
    return float(v.mean()), float(se)


def mean_se_rows(arr) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over the first axis (replicas) of an array, elementwise in the rest
    (zeros for the standard error of a single replica)."""
    m = arr.mean(axis=0)
    se = arr.std(axis=0, ddof=1) / math.sqrt(arr.shape[0]) if arr.shape[0] > 1 else np.zeros_like(m)
    return m, se


def welch_dof(e1: float, e2: float, r1: int, r2: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two means whose standard errors e1, e2 come from
    r1, r2 replicas: (e1^2 + e2^2)^2 / (e1^4 / (r1 - 1) + e2^4 / (r2 - 1)); inf when it cannot be formed."""
    den = (e1**4 / (r1 - 1) if r1 > 1 else 0.0) + (e2**4 / (r2 - 1) if r2 > 1 else 0.0)
    return (e1 * e1 + e2 * e2) ** 2 / den if den > 0 else math.inf


def differences_beyond_noise(diff, err, dof, alpha: float) -> list[bool]:
    """Two-sided t tests of K differences (``diff`` with standard errors ``err`` and ``dof`` degrees of freedom
    each) at family-wise level ``alpha``: each at Sidak's level 1 - (1 - alpha)^(1/K), exact for independent
    tests and conservative for correlated ones (Sidak's inequality for two-sided tests; the checkpoints of one
    DMFT run are strongly correlated).  A difference with err = 0 counts as beyond noise unless it is 0."""
    from scipy.stats import t as student_t   # here: scipy.stats takes a noticeable share of the CLI's start-up
    each = -math.expm1(math.log1p(-alpha) / max(len(diff), 1))
    out = []
    for d_, e, f in zip(diff, err, dof):
        if e <= 0:
            out.append(bool(d_ != 0))
            continue
        crit = float(student_t.ppf(1 - each / 2, f if math.isfinite(f) else 1e9))
        out.append(bool(abs(d_) > crit * e))
    return out

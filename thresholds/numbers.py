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

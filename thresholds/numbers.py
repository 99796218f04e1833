"""Formatting numbers with the digits their error estimate justifies."""

from __future__ import annotations

import math


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

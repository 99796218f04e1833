"""Error types of the project.

Every error a user can provoke (a bad expression, an unknown catalogue name,
an unsupported link, a divergent expectation, a solver that does not
converge) is a subclass of :class:`ThresholdsError`, itself a ``ValueError``,
so the CLI can turn it into a one-line message and a non-zero exit code.
"""


class ThresholdsError(ValueError):
    """Base class of every user-facing error of the project."""

    exit_code = 2


class ExpressionError(ThresholdsError):
    """A user expression is malformed or uses something not on the whitelist."""


class CatalogError(ThresholdsError):
    """An unknown catalogue name (the message lists the valid names)."""


class NotDifferentiableError(ThresholdsError):
    """A derivative that is needed does not exist classically (e.g. relu'')."""


class UnsupportedError(ThresholdsError):
    """The input is valid but outside what the numerical method handles."""


# a squared norm or pre-activation beyond this is reported as divergence (DMFT and finite-d GD alike)
BLOWUP = 1e8


class DivergenceError(ThresholdsError):
    """An expectation or iteration diverges (infinite moment, overflow)."""

    exit_code = 3


class ConvergenceError(ThresholdsError):
    """A numerical solver did not reach its requested tolerance."""

    exit_code = 3

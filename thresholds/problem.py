"""The problem a threshold belongs to: network, training and target, in one record.

Network  f(x) = (1/m) sum_j a_j sigma(theta_j^T x + b_j)  (activation sigma, width m; only Theta is
         trained).  ``a`` and ``b`` are one number for every neuron, or a tuple of m numbers (per-neuron
         second-layer weights and biases); a tuple of equal numbers is stored as the number, so that a
         uniform network has one cache key however it was given (``canonical``);
Training GD with the mean-field step theta_j <- theta_j + eta m grad_j (-R) - eta lambda_wd theta_j for
         ``steps`` steps from theta_j^0 ~ N(0, rho0^2/d I) (optionally rescaled to ||theta_j|| = rho0
         after every step: spherical GD), square loss;
Target   y = h(Theta_*^T x, eps) (the link), x ~ N(0, I_d).

Every layer reads these fields from one :class:`Problem`: the DMFT (thresholds.dmft.DMFTSetup), the
delta_NN search (thresholds.nn.NNSetup) and the finite-d simulator (validation.simulate.GDSetup) each
add their own numerical settings to it (``from_problem``; NNSetup extends it) and hand it on whole
(``problem``); its validator and its cache keys live here.  The records keep their fields flat (no
nested record), so that the cache keys and the stored results of earlier versions stay valid.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .errors import ThresholdsError, UnsupportedError

FIELDS = ("activation", "link", "eta", "steps", "a", "b", "rho0", "weight_decay", "loss", "m", "sphere")


def canonical(value):
    """A second-layer weight or bias as stored: a number, or a tuple of per-neuron numbers when they differ
    (a list or array becomes a tuple; equal entries collapse to the number)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        values = tuple(float(v) for v in np.asarray(value, dtype=float).ravel())
        if values and all(v == values[0] for v in values):
            return values[0]
        return values
    return value


def per_neuron(value, m: int) -> np.ndarray:
    """``a`` or ``b`` as an array of the m neurons' values."""
    return np.broadcast_to(np.asarray(value, dtype=float), (m,)).copy()


def uniform(value) -> bool:
    """True when every neuron has the same value (a number)."""
    return not isinstance(value, tuple)
LOSSES = ("square",)


@dataclass
class Problem:
    """Network, training and target of a two-layer network trained by GD (module docstring).  The field
    order is that of thresholds.nn.NNSetup, which extends this record."""

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

    def __post_init__(self):
        self.a, self.b = canonical(self.a), canonical(self.b)

    @classmethod
    def of(cls, record) -> "Problem":
        """The problem fields of any setup record that carries them."""
        return cls(**{name: getattr(record, name) for name in FIELDS})

    def validate(self, *, min_steps: int = 1) -> "Problem":
        """Raise ThresholdsError (UnsupportedError for a loss other than the square loss) on a bad field;
        ``min_steps``: the shortest horizon the caller accepts (0 for a simulator that only initializes)."""
        for name in ("a", "b", "eta", "rho0", "weight_decay"):
            value = getattr(self, name)
            values = value if name in ("a", "b") and isinstance(value, tuple) else (value,)
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in values):
                raise ThresholdsError(f"{name} must be a finite number" + (" or one per neuron" if name in ("a", "b") else "")
                                      + f", got {value!r}")
        for name in ("a", "b"):
            value = getattr(self, name)
            if isinstance(value, tuple) and isinstance(self.m, int) and len(value) != self.m:
                raise ThresholdsError(f"{name} has {len(value)} per-neuron values for m = {self.m} neurons")
        if not self.eta > 0:
            raise ThresholdsError(f"eta must be > 0, got {self.eta}")
        if not (isinstance(self.steps, int) and self.steps >= min_steps):
            raise ThresholdsError(f"steps must be an integer >= {min_steps}, got {self.steps}")
        if self.rho0 < 0 or self.weight_decay < 0:
            raise ThresholdsError("rho0 and weight_decay must be >= 0")
        if self.sphere and not self.rho0 > 0:
            raise ThresholdsError("spherical GD needs rho0 > 0 (the radius of the sphere)")
        if not (isinstance(self.m, int) and self.m >= 1):
            raise ThresholdsError(f"m must be a positive integer, got {self.m}")
        if self.loss not in LOSSES:
            raise UnsupportedError(f"loss {self.loss!r} is not covered; the tool covers the square loss")
        return self

    def fields(self) -> dict:
        return asdict(self)

    def simulation_key(self) -> dict:
        """What a finite-d GD sweep shares with a threshold of this problem: every field but the horizon
        (a sweep's horizon grows with d)."""
        out = asdict(self)
        del out["steps"]
        return out

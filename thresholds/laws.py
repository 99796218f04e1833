"""First-phase laws: the joint law of (u, y, g_H) at the checkpoints of the first phase of GD.

Everything the Hessian engines need from the first phase is, at each checkpoint step t and for each
replica (an independent draw of the law, for error bars), a weighted sample

    (u_p^t, y_p, g_p, omega_p),  p = 1..N,  sum_p omega_p = 1,                       (1)

with u^t = Theta^t^T x the pre-activations (one value per neuron), y the label and g the hard latent
coordinates g_H = P_H Theta_*^T x (a scalar for r_H = 1, else an r_H-vector).  A *law source* is
any callable that produces such a sample; the library accepts one instead of importing its producer:

* ``dmft_law`` (here): the paths of the DMFT of thresholds.dmft (d = inf, Monte Carlo over paths);
* the finite-d GD law of the validation layer (``validation.gd_law.nn_law``): the n = delta d
  training samples of GD restricted to the complement of the hard subspace, one seed per replica;
* a user-supplied sample, built directly as a :class:`FirstPhaseLaw`.

A law source for delta_NN is called as ``source(setup, delta, steps, progress=None)`` with ``setup``
a :class:`thresholds.nn.NNSetup`, ``steps`` the checkpoint steps wanted, and returns a
:class:`FirstPhaseLaw` holding those steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ThresholdsError


@dataclass(frozen=True)
class ReplicaLaw:
    """One replica of eq. (1) at one step: u (N,) for m = 1 or (N, m); y (N,); g (N,) or (N, r_H);
    w (N,) summing to 1."""

    u: np.ndarray
    y: np.ndarray
    g: np.ndarray
    w: np.ndarray

    def __post_init__(self):
        n = np.shape(self.y)[0]
        if any(np.shape(v)[0] != n for v in (self.u, self.g, self.w)):
            raise ThresholdsError("a first-phase law needs u, y, g and w with one row per sample")


@dataclass
class FirstPhaseLaw:
    """step -> replicas of eq. (1); ``note`` says where the law comes from (None: the DMFT paths,
    described by thresholds.hessian)."""

    steps: dict
    note: str | None = None


def dmft_law(result) -> FirstPhaseLaw:
    """The law of the DMFT paths of a :class:`thresholds.dmft.DMFTResult`: at every checkpoint the
    replicas' paths (u^t from the snapshots; at the final step only when there are none)."""
    finals = result.replica_laws  # per replica: (u, y, g, w) at the final step
    snaps = result.snapshots or {result.setup.steps: [law[0] for law in finals]}
    return FirstPhaseLaw({step: [ReplicaLaw(u, y, g, w) for u, (_, y, g, w) in zip(us, finals)]
                          for step, us in snaps.items()})


def thinned(law: FirstPhaseLaw, per: int) -> FirstPhaseLaw:
    """``law`` with the first ``per`` samples of each replica at every step, their weights renormalised to sum to 1
    (a replica's paths are independent draws, so its first ``per`` are a sample of the same law)."""
    def head(r: ReplicaLaw) -> ReplicaLaw:
        w = np.asarray(r.w[:per], dtype=float)
        return ReplicaLaw(r.u[:per], r.y[:per], r.g[:per], w / w.sum())
    return FirstPhaseLaw({step: [head(r) for r in reps] for step, reps in law.steps.items()}, law.note)

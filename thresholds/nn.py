"""delta_NN records: the setup of a two-layer network trained by GD, and what a search returns.

delta_NN (Montanari & Wang 2026, arXiv 2602.01434) is the smallest sample ratio delta = n/d at which the
Hessian of the empirical risk, at the point reached by the first phase of GD, has a negative isolated
eigenvalue whose eigenvector overlaps the hard subspace U_H (THEORY.md sections 4-5).  For any width m
(m = 1: scalar equations; m > 1: the m x m engine, thresholds.stieltjes_m; m = inf: the sector equations
of thresholds.meanfield on a law of finite width).

For each delta the law of (u, y, g) after the first phase is obtained either from the DMFT (``law = "dmft"``,
d = inf, the default of the CLI and of :meth:`NNSetup.from_problem`, DEFAULT_LAW; cached; with every source its
law is biased at long horizons unless the number of paths is large, and ``source_tol`` 1e-3 removes that bias,
thresholds.dmft eq. (6b); a path check at half the paths, or twice the automatic number, is reported: t tests at
family-wise level 0.05, thresholds.search) or from finite-d GD restricted to the complement of theta_* (``law =
"gd"``, the cross-check, and the law of m = inf: dimension ``law_d``, ``replicas`` seeds; supplied by the
validation layer, thresholds.laws).  The record's own field default stays "gd" so that stored setups keep their
meaning; build a setup with :meth:`NNSetup.from_problem` for the CLI's defaults.  At the
16 checkpoints t = T/16, ..., T the Hessian weight law G_t gives the hard-outlier indicator

    I_t(delta) = -S(alpha at min(0, left bulk edge))      (> 0 iff a negative hard outlier exists)   (1)

as the mean and standard error over the replicas (thresholds.hessian, thresholds.evaluation).

Unbounded G.  The law of G is the empirical law of the paths (or samples).  When G is unbounded below
(y = g^2 with sigma'' != 0), the strict d -> inf bulk has no left edge; the sample minimum over the paths
plays the part of the most negative sample-localized mode of a finite data set.  The indicator is
therefore computed twice: on the plain path law and on the law clipped from below at its 1e-3 quantile.
Both crossings are reported (``delta_nn`` / ``delta_nn_clipped``); a difference beyond their intervals
means the threshold is driven by the extreme tail and is flagged.  On the DMFT law, ``edge_d`` > 0 makes
the plain indicator the mean over data sets of n = delta edge_d paths, each a data set at d = edge_d drawn
from the d = inf law (thresholds.hessian eq. (5)), so that the plain crossing is that of a stated sample size
rather than of the number of paths, by the statistic the finite-d GD law computes at d = edge_d.

Where the rest lives: the search (thresholds.search.delta_nn), one delta's indicators
(thresholds.evaluation), crossing statistics (thresholds.crossing), escape and finite-d thresholds
(thresholds.escape), stored results (thresholds.store).  The records stay in this module: cached results
refer to them by this module's name.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from .dmft import SETTLED_EIGENVALUE, DMFTSetup, stable_label_limit
from .errors import ThresholdsError, UnsupportedError
from .hessian import CLIP_QUANTILE, DATA_SETS
from .problem import Problem


FINITE_D = (200, 400, 1000, 2000, 4000, 10_000, 100_000)
DEFAULT_LAW = "dmft"  # the first-phase law of ``thresholds nn`` and :meth:`NNSetup.from_problem` (module docstring)
AUTO_PATHS = 20_000   # ``paths`` = 0 ("auto", DMFT law): at least this many, and DATA_SETS data sets of eq. (5)
SELF_INTERACTION_MAX = 0.05     # auto paths: the DMFT runs again above this self-interaction (thresholds.evaluation eq. (4))
SELF_INTERACTION_TARGET = 0.025  # ... with the paths for this one
SCANNABLE = ("rho0", "a", "b", "eta", "weight_decay", "steps")


@dataclass
class NNSetup(Problem):
    """Everything that determines delta_NN (printed with every result): the problem (network, training,
    target: thresholds.problem) and how its first-phase law is obtained and searched."""

    mean_field: bool = False  # m = inf: the m -> inf Hessian (thresholds.meanfield) on the law of width m
    law: str = "gd"          # "gd": law of (u, y, g) from finite-d GD (replicas = seeds); "dmft" (README)
    law_d: int = 1000        # dimension of the "gd" law
    law_dtype: str = "float32"  # storage of the "gd" law's data (accumulations are float64; README)
    paths: int = 20_000      # DMFT paths, all replicas; 0: auto (:meth:`paths_at`)
    replicas: int = 3
    source_tol: float = 0.0  # "dmft" law: thresholds.dmft eq. (6b) (0: every psi column opens a source)
    edge_d: int = 0          # "dmft" law: plain indicator over data sets of n = delta edge_d paths (0: all paths)
    own_term: bool = False   # "dmft" law: each path's own term of the response sums subtracted (thresholds.dmft eq. (6e))
    settled_labels: bool = False  # "dmft" law: labels conditioned below the own step's stability limit (dmft eq. (10d))
    seed: int = 0
    search_min: float = 0.0
    search_max: float = 64.0
    rtol: float = 0.02

    def __setstate__(self, state):
        state.setdefault("law_dtype", "float64")  # pickled before the field existed: float64 laws
        state.setdefault("mean_field", False)
        state.setdefault("source_tol", 0.0)
        state.setdefault("edge_d", 0)
        state.setdefault("own_term", False)
        state.setdefault("settled_labels", False)
        self.__dict__.update(state)

    @property
    def width(self) -> str:
        """The network width as printed: the integer m, or "inf (law of width m)" with ``mean_field``."""
        return f"inf (law of width {self.m})" if self.mean_field else str(self.m)

    @classmethod
    def from_problem(cls, problem: Problem, **search) -> "NNSetup":
        """The delta_NN search of ``problem`` with the given law and search settings, as ``thresholds nn`` builds it:
        the law is DEFAULT_LAW unless given ("gd" with ``mean_field``, whose m -> inf Hessian needs a finite-d law).
        On the DMFT law the settings not given take its defaults: automatic paths (``paths`` = 0, :meth:`paths_at`),
        the truncated source basis (``source_tol`` = thresholds.forced.SOURCE_TOL) and the plain indicator over data
        sets of n = delta law_d samples (``edge_d`` = ``law_d``)."""
        search.setdefault("law", "gd" if search.get("mean_field") else DEFAULT_LAW)
        if search["law"] == "dmft":
            from .forced import SOURCE_TOL
            search.setdefault("paths", 0)
            search.setdefault("source_tol", SOURCE_TOL)
            search.setdefault("edge_d", search.get("law_d", cls.law_d))
        return cls(**problem.fields(), **search)

    @property
    def problem(self) -> Problem:
        return Problem.of(self)

    def paths_at(self, delta: float) -> int:
        """The DMFT paths (all replicas) at ``delta``: ``paths``, or with ``paths`` = 0 (auto) at least AUTO_PATHS and,
        with ``edge_d`` > 0, DATA_SETS data sets of n = delta edge_d samples per replica (thresholds.hessian eq. (5)).
        Auto: the paths the Hessian reads; the DMFT run may take more (thresholds.evaluation eq. (4))."""
        if self.paths:
            return int(self.paths)
        per = DATA_SETS * round(delta * self.edge_d) if self.edge_d else 0
        return max(AUTO_PATHS, self.replicas * per)

    def dmft(self, delta: float) -> DMFTSetup:
        """The DMFT (and Hessian) setup of this problem at ``delta``."""
        return DMFTSetup.from_problem(replace(self.problem, steps=int(self.steps)), delta, paths=self.paths_at(delta),
                                      replicas=self.replicas, seed=self.seed,
                                      source_tol=self.source_tol if self.law == "dmft" else 0.0,
                                      own_term=self.own_term and self.law == "dmft",
                                      label_cap=self.label_cap(delta))

    def label_cap(self, delta: float) -> float:
        """The DMFT law's label cap at ``delta`` (thresholds.dmft eq. (10d)): with ``settled_labels`` the label at which
        a sample's own step has the eigenvalue SETTLED_EIGENVALUE, 0 (the full law) otherwise or where no label is
        past it."""
        if not (self.settled_labels and self.law == "dmft"):
            return 0.0
        y_c = stable_label_limit(self.activation, self.a, self.b, self.m, self.eta, delta, self.loss, self.weight_decay,
                                 SETTLED_EIGENVALUE)
        return y_c if math.isfinite(y_c) else 0.0

    def validate(self):
        self.dmft(1.0).validate()
        if self.m != 1 and self.sphere:
            raise UnsupportedError("delta_NN of spherical GD covers m = 1")
        if self.mean_field and (self.law != "gd" or self.m < 2):
            raise UnsupportedError("m = inf needs the finite-d law (law = 'gd') of a population of width >= 2 "
                                   "(the DMFT of the m -> inf limit is not built)")
        if self.law not in ("dmft", "gd"):
            raise ThresholdsError(f"law must be 'dmft' or 'gd', got {self.law!r}")
        if self.source_tol and self.law != "dmft":
            raise ThresholdsError("source_tol applies to the DMFT law (law = 'dmft')")
        if self.own_term and self.law != "dmft":
            raise ThresholdsError("own_term applies to the DMFT law (law = 'dmft')")
        if self.settled_labels and self.law != "dmft":
            raise ThresholdsError("settled_labels applies to the DMFT law (law = 'dmft'); the GD law's samples are "
                                  "those of its own data sets")
        if self.edge_d and self.law != "dmft":
            raise ThresholdsError("edge_d applies to the DMFT law (law = 'dmft'); the GD law's left tail is that "
                                  "of its own n = delta law_d samples")
        if self.edge_d < 0:
            raise ThresholdsError(f"edge_d must be >= 0, got {self.edge_d}")
        if self.paths < 0:
            raise ThresholdsError(f"paths must be >= 0 (0: auto), got {self.paths}")
        if self.law_dtype not in ("float32", "float64"):
            raise ThresholdsError(f"law_dtype must be 'float32' or 'float64', got {self.law_dtype!r}")
        if self.law == "gd" and self.law_d < 50:
            raise ThresholdsError("law_d must be >= 50")
        if not 0 < self.rtol < 1:
            raise ThresholdsError(f"rtol must be in (0, 1), got {self.rtol}")
        if not self.search_max > max(self.search_min, 0):
            raise ThresholdsError("search_max must exceed search_min")


@dataclass
class Evaluation:
    """Hessian indicators at one delta, per checkpoint step."""

    delta: float
    steps: list
    indicator: list
    indicator_err: list
    clipped: list
    clipped_err: list
    left_edge: list
    left_edge_err: list
    outlier_z: list          # lowest hard outlier (nan when none) per checkpoint
    outlier_z_err: list
    overlap2: list
    hard_z: list = field(default_factory=list)  # per checkpoint: per-replica lowest negative hard outlier
    sectors: tuple = ()  # m = inf, per checkpoint: (antisymmetric, s.e., symmetric, s.e.) indicators
    indicator_replicas: list = field(default_factory=list)  # per checkpoint: the replicas' indicators
    clipped_replicas: list = field(default_factory=list)    # (the jackknife of thresholds.crossing eq. (4))
    period_two: list = None  # DMFT replicas ending in a period-2 orbit (thresholds.dmft eq. (10)); None: unknown
    left_edge_replicas: list = field(default_factory=list)  # per checkpoint: the replicas' left bulk edges
    self_interaction: float = None  # DMFT law: delta (r + m) / N of thresholds.dmft eq. (6f); None: not a sources run
    paths: int = None  # DMFT law: the run's paths, all replicas (thresholds.evaluation eq. (4)); None: not recorded
    unstable_fraction: float = None  # DMFT law: P of thresholds.dmft eq. (10c), mean over replicas; None: not computed
    label_cap: float = None  # DMFT law with settled labels: the cap of thresholds.dmft eq. (10d); None: the full law
    label_tail: float = None  # ... and the share of the drawn paths past it (rejected)
    loss_decay: float = None  # DMFT law: a of thresholds.evaluation eq. (5), the train loss's decay over T/2 .. T

    def at(self, step):
        return self.steps.index(step)

    def settled_replicas(self, count: int = None) -> list:
        """The replicas (of ``count``; default: those of ``indicator_replicas``) not in a period-2 orbit
        (thresholds.evaluation eq. (3)); all of them when every one is in an orbit or the orbits are unknown
        (``period_two`` None)."""
        if count is None:
            count = len(self.indicator_replicas[0]) if self.indicator_replicas else 0
        kept = [r for r in range(count) if r not in (self.period_two or [])]
        return kept if kept else list(range(count))


@dataclass
class Crossing:
    value: float
    low: float
    high: float
    found: bool

    def to_json(self):
        enc = (lambda v: "inf" if v == math.inf else v)
        return {"value": enc(self.value), "low": enc(self.low), "high": enc(self.high), "found": self.found}


@dataclass
class NNResult:
    setup: NNSetup
    delta_alg: float
    delta_nn: float
    low: float
    high: float
    found: bool
    below_range: bool
    clipped: Crossing
    t_curve: list               # [(step, Crossing)]
    converged: bool
    settled: bool
    transient: Crossing         # smallest delta_NN(t) over the checkpoints
    transient_step: int
    left_edge: float
    left_edge_err: float
    evaluations: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    path_check: dict = None
    transient_evaluations: list = None   # runs to the transient step only (its refinement)

    @property
    def crossing_at_horizon(self) -> Crossing:
        return Crossing(self.delta_nn, self.low, self.high, self.found)

    def finite_d(self, dims) -> list:
        """Predicted finite-d threshold per d (thresholds.escape.finite_d)."""
        from .escape import finite_d
        return finite_d(self, dims)

    @property
    def ratio(self) -> float:
        return self.delta_nn / self.delta_alg if self.delta_alg > 0 else math.inf

    def to_json(self) -> dict:
        enc = (lambda v: "inf" if v == math.inf else v)
        out = {"delta_nn": enc(self.delta_nn), "delta_nn_low": enc(self.low), "delta_nn_high": enc(self.high),
               "found": self.found, "below_range": self.below_range, "delta_alg": enc(self.delta_alg),
               "ratio": enc(self.ratio), "delta_nn_clipped": self.clipped.to_json(),
               "clip_quantile": CLIP_QUANTILE,
               "t_curve": [{"step": s, "t": s * self.setup.eta, **c.to_json()} for s, c in self.t_curve],
               "converged": self.converged, "settled": self.settled,
               "escape_finite_d": self.finite_d(FINITE_D),
               "delta_nn_transient": {"step": self.transient_step, **self.transient.to_json()},
               "left_edge": self.left_edge, "left_edge_err": self.left_edge_err,
               "setup": asdict(self.setup), "notes": self.notes, "seconds": self.seconds,
               "path_check": self.path_check,
               "evaluations": [asdict(e) for e in self.evaluations],
               "transient_evaluations": [asdict(e) for e in self.transient_evaluations or []]}
        if not self.found:
            out["search_max"] = self.setup.search_max
        return out

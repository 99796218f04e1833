"""Stored delta_NN results: the cache keys of a setup, cached searches and cached simulations.

Three kinds of entries in the on-disk cache (thresholds.cache), each keyed by what determines it:

* ``nn``: a whole search (thresholds.search.delta_nn), keyed by every field of the NNSetup
  (``setup_fields``), the tail-clip quantile, the version of the search rules, with ``edge_d`` the rule of
  thresholds.hessian eq. (5) and, for exchangeable neurons at m >= 2, the matrix engine's relabelling average;
* ``nn-eval``: the indicators at one delta (thresholds.evaluation), keyed by the setup without its
  search settings, the delta and what was located;
* ``validation``: the extrapolated crossing of a finite-d GD sweep (``thresholds validate``), keyed
  by what a simulation shares with a delta_NN setup and its horizon rule (``validation_key``: the horizon
  grows with d; a fixed horizon, ``--c 0``, is a different rule and a different entry).

Keys of results computed before a field existed stay valid: a field at the value that reproduces
the old behaviour is left out of the key (``law_dtype`` = float64, ``mean_field`` = False).
"""

from __future__ import annotations

import math
from dataclasses import asdict

from . import cache
from .hessian import CLIP_QUANTILE, TAIL_RULE, exchangeable
from .dmft import PERIOD_TWO_AMPLITUDE, PERIOD_TWO_WINDOW, SETTLED_EIGENVALUE
from .nn import SELF_INTERACTION_MAX, SELF_INTERACTION_TARGET, NNResult, NNSetup

SEARCH_FIELDS = ("search_min", "search_max", "rtol")  # how a threshold is searched, not what it is
# fields a cached result may differ in when a caller accepts "the same setup" (cached_delta_nn any_search):
# the search settings, and the storage precision of the finite-d law (float32 and float64 laws give the
# same indicators to ~1e-4, 0.14 s.e. next to the step-size stability limit, far inside their Monte Carlo
# errors elsewhere: tests/test_nn.py, README)
RELAXED_FIELDS = SEARCH_FIELDS + ("law_dtype",)


def setup_fields(setup: NNSetup) -> dict:
    """The setup as a cache key: every field, except ``law_dtype`` when it is float64 (results computed
    before the field existed were float64 and keep their keys), and ``mean_field``, ``source_tol``,
    ``edge_d``, ``own_term`` and ``settled_labels`` at their defaults (likewise)."""
    out = asdict(setup)
    if out["law_dtype"] == "float64":
        del out["law_dtype"]
    if not out["mean_field"]:  # finite widths keep the keys they had before m = inf existed
        del out["mean_field"]
    if not out.get("source_tol"):
        del out["source_tol"]
    if not out.get("edge_d"):
        del out["edge_d"]
    if not out.get("own_term"):
        out.pop("own_term", None)
    if not out.get("settled_labels"):
        out.pop("settled_labels", None)
    return out


def result_key(setup: NNSetup) -> dict:
    key = {"nn": setup_fields(setup), "clip": CLIP_QUANTILE, "search": 5}
    if setup.edge_d:  # hessian eq. (5) as data sets of n paths; searches made with the earlier cut are not reused
        key["tail"] = TAIL_RULE
    if setup.law == "dmft":   # searches made before the orbit-aware lower end (thresholds.search) are not reused
        key["lower_end"] = "orbits"
        if not setup.paths:  # nor those made before evaluation eq. (4)
            key["paths_rule"] = dmft_rules(setup)["paths_rule"]
        if setup.settled_labels:   # the cap's eigenvalue (thresholds.dmft eq. (10d))
            key["label_rule"] = dmft_rules(setup)["label_rule"]
    return key | _engine(setup)


def _engine(setup: NNSetup) -> dict:
    """The m x m engine's exchangeable reduction (thresholds.stieltjes_m eq. (7)) where it applies: results of the full
    equations on the same law are not reused (the relabelling average moves them, within their replica errors)."""
    return {"engine": "exchangeable"} if not setup.mean_field and exchangeable(setup) else {}


def carries_replicas(record) -> bool:
    """Whether a cached Evaluation (or every evaluation of a cached NNResult) holds its replicas' indicators, which
    the interval of thresholds.crossing eq. (4) needs; entries stored before they were kept are recomputed (their
    keys stay valid, the entries do not)."""
    evals = record.evaluations if isinstance(record, NNResult) else [record]
    return all(e.indicator_replicas for e in evals)


def cached_delta_nn(setup: NNSetup, *, any_search: bool = False):
    """The cached NNResult of ``setup`` (None when ``thresholds nn`` has not run it).  With
    ``any_search``, a result of the same setup run with other search settings or law precision
    (``RELAXED_FIELDS``) is returned when the exact one is missing (its ``setup`` says which)."""
    hit = cache.load("nn", result_key(setup), expect=NNResult)
    hit = hit if hit is not None and carries_replicas(hit) else None
    if hit is not None or not any_search:
        return hit
    want = {k: v for k, v in asdict(setup).items() if k not in RELAXED_FIELDS}
    for key in cache.keys("nn"):
        other = cache.load_key("nn", key, expect=NNResult)
        if other is None or not carries_replicas(other):
            continue
        theirs = {k: v for k, v in asdict(other.setup).items() if k not in RELAXED_FIELDS}
        # the file name must be the key the current code gives that setup (same version and search rules)
        if theirs == want and cache.key_for("nn", result_key(other.setup)) == key:
            return other
    return None


def store_delta_nn(setup: NNSetup, result: NNResult) -> None:
    """Record a finished search under the key of its setup."""
    cache.store("nn", result_key(setup), result)


DEFAULT_HORIZON = (50.0, 10.0)  # (t0, c) of ``thresholds validate``: T(d) = (t0 + c log d) / eta steps


def validation_key(setup: NNSetup, t0: float = DEFAULT_HORIZON[0], c: float = DEFAULT_HORIZON[1]) -> dict:
    """What a finite-d validation shares with a delta_NN setup (its horizon grows with d), and the horizon
    rule when it is not the default one (the key of the default rule is that of the versions before it)."""
    key = setup.problem.simulation_key()
    if (float(t0), float(c)) != DEFAULT_HORIZON:
        key["horizon"] = {"t0": float(t0), "c": float(c)}
    return key


def store_validation(setup: NNSetup, value: float, error: float, report: str, *, t0: float = DEFAULT_HORIZON[0],
                     c: float = DEFAULT_HORIZON[1], crossings: dict = None) -> None:
    """Record a finite-d GD sweep (``thresholds validate``) for ``table``: its extrapolated crossing and
    the crossing per d, ``crossings`` = {d: (value, s.e.)}, under the horizon rule (t0, c)."""
    cache.store("validation", validation_key(setup, t0, c),
                {"value": value, "error": error, "report": report, "t0": float(t0), "c": float(c),
                 "crossings": {str(d): [float(v), float(e)] for d, (v, e) in (crossings or {}).items()
                               if v is not None and e is not None and math.isfinite(v) and math.isfinite(e)}})


def cached_validation(setup: NNSetup, t0: float = DEFAULT_HORIZON[0], c: float = DEFAULT_HORIZON[1]):
    """The recorded finite-d sweep for this setup and horizon rule, or None (always for m = inf: nothing
    simulates it)."""
    return None if setup.mean_field else cache.load("validation", validation_key(setup, t0, c), expect=dict)


def evaluation_key(setup: NNSetup, delta: float, outliers: str, final_only: bool, dmft_paths: int = None) -> dict:
    """The key of the indicators at one delta: the setup without its search settings, the delta, the steps
    at which outliers were located, whether only the last step was evaluated, and on the DMFT law the run's paths
    when given (the path check) and :func:`dmft_rules`."""
    law_setup = {k: v for k, v in setup_fields(setup).items() if k not in SEARCH_FIELDS}
    key = {"nn-eval": law_setup, "delta": float(delta), "outliers": outliers, "version": 1} | _engine(setup)
    if final_only:
        key["final_only"] = True
    if setup.law == "dmft":
        key |= dmft_rules(setup) | ({"dmft_paths": int(dmft_paths)} if dmft_paths else {})
    return key


def dmft_rules(setup: NNSetup) -> dict:
    """What a DMFT-law evaluation depends on beyond its setup: the replicas left out as orbiting (thresholds.dmft
    eq. (10), evaluation eq. (3)), with automatic paths the self-interaction rule of evaluation eq. (4), and with
    settled labels the eigenvalue at the cap of thresholds.dmft eq. (10d)."""
    rules = {"orbits": [PERIOD_TWO_WINDOW, PERIOD_TWO_AMPLITUDE, "rises and falls"]}
    if not setup.paths:
        rules["paths_rule"] = [SELF_INTERACTION_MAX, SELF_INTERACTION_TARGET]
    if setup.settled_labels:
        rules["label_rule"] = SETTLED_EIGENVALUE
    return rules

"""delta_NN: the search, its interval, the t-curve bookkeeping and the CLI."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from cli import parse_scan
from thresholds.crossing import crossing
from thresholds.errors import ThresholdsError
from thresholds.nn import Evaluation, NNSetup
from thresholds.outlier import spike_threshold
from thresholds.stieltjes import WeightLaw
from validation.gd_law import delta_nn


def _ev(delta, values, errs):
    n = len(values)
    nan = [math.nan] * n
    return Evaluation(delta, list(range(1, n + 1)), list(values), list(errs), list(values), list(errs),
                      [0.0] * n, [0.0] * n, nan, nan, nan)


def test_crossing_interpolates_and_propagates_the_monte_carlo_error():
    # indicator f(delta) = delta - 5 with s.e. 0.1 everywhere: crossing 5, slope 1,
    # half-width = hypot(bracket/2, 2 * 0.1 / 1)
    evs = [_ev(d, [d - 5.0], [0.1]) for d in (2.0, 4.0, 6.0, 8.0)]
    c = crossing(evs, 1)
    assert c.found and c.value == pytest.approx(5.0)
    hw = math.hypot(1.0, 0.2)
    assert c.low == pytest.approx(5.0 - hw) and c.high == pytest.approx(5.0 + hw)


def test_crossing_none_and_below_range():
    none = crossing([_ev(d, [-1.0], [0.1]) for d in (1.0, 2.0)], 1)
    assert not none.found and none.value == math.inf and none.low == 2.0
    below = crossing([_ev(d, [1.0], [0.1]) for d in (1.0, 2.0)], 1)
    assert below.found and below.value == 1.0 and below.low == 0.0


def test_linear_activation_has_no_threshold(tmp_path, monkeypatch):
    # sigma linear: G = a^2 > 0 for every sample, never a negative outlier: "inf" with the bound
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = delta_nn(NNSetup("linear", "abs", eta=0.2, steps=8, law="dmft", paths=800, replicas=2, search_max=4.0))
    out = res.to_json()
    assert out["delta_nn"] == "inf" and out["search_max"] == 4.0 and not res.found
    assert out["setup"]["activation"] == "linear" and res.settled


def test_threshold_at_initialization_matches_the_spectral_engine(tmp_path, monkeypatch):
    # With eta -> 0 the law after 8 steps is the law at initialization: u ~ N(0, 1)
    # independent of g, G = 6 u^2 - 2 y for quad.  Independent route: tensor Gauss-Hermite
    # nodes in (u, g) and the spectral engine's own negative-outlier threshold.
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    U, Gg = np.meshgrid(x, x, indexing="ij")
    law = WeightLaw.from_nodes((6 * U**2 - 6 * np.tanh(Gg**2)).ravel(), np.outer(w, w).ravel(), (Gg**2).ravel())
    exact = spike_threshold(lambda d: law, kind="negative", search_min=0.5, search_max=16, rtol=1e-8).value
    # 8 replicas: the interval carries the jackknife's t quantile (crossing eq. (4)), 2.36 with 7 degrees of freedom
    res = delta_nn(NNSetup("quad", "3*tanh(z**2)", eta=1e-4, steps=8, law="dmft", paths=40_000, replicas=8,
                           search_max=16.0, rtol=0.01))
    assert res.found and res.low <= exact <= res.high, (exact, res.delta_nn, res.low, res.high)
    assert res.high - res.low < 0.2 * exact  # the interval is informative, not just wide
    assert res.converged  # nothing moves at eta = 1e-4


def test_parse_scan():
    assert parse_scan("rho0=0.5:2:4") == ("rho0", [0.5, 1.0, 1.5, 2.0])
    assert parse_scan("steps=100:400:4")[1] == [100, 200, 300, 400]
    for bad in ("rho0", "rho0=1:2", "depth=1:2:3", "eta=a:b:c"):
        with pytest.raises(ValueError):
            parse_scan(bad)


def test_nn_cli_json_and_cache(tmp_path):
    from cli import main
    env = {"THRESHOLDS_CACHE": str(tmp_path)}
    args = ["nn", "-a", "linear", "-l", "abs", "--eta", "0.2", "-T", "8", "--paths", "800", "--replicas", "2",
            "--search-max", "2", "--json"]
    first = CliRunner().invoke(main, args, env=env)
    assert first.exit_code == 0, first.output
    out = json.loads(first.stdout)
    assert out["delta_nn"] == "inf" and out["search_max"] == 2.0
    assert 0 < out["seconds"] < 600  # the search's own wall time
    assert {"delta_nn_low", "delta_nn_high", "setup", "t_curve", "converged"} <= set(out)
    again = CliRunner().invoke(main, args, env=env)
    assert json.loads(again.stdout)["seconds"] == out["seconds"]  # served from the cache


def test_nn_cli_errors_are_one_line():
    from cli import main
    for args in (["nn", "-a", "relu"], ["nn", "-a", "quad", "--scan", "depth=1:2:3"], ["nn", "-a", "nosuch"]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2 and "Traceback" not in res.output and res.output.count("\n") <= 2, res.output


def test_table_and_grok_commands(tmp_path):
    from cli import main
    env = {"THRESHOLDS_CACHE": str(tmp_path)}
    common = ["--eta", "0.2", "-T", "8", "--paths", "800", "--replicas", "2", "--search-max", "2"]
    res = CliRunner().invoke(main, ["table", "--links", "abs", "--activations", "linear", *common, "--json"], env=env)
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout)["rows"][0]
    assert row["delta_nn"] == "inf" and row["delta_alg"] == pytest.approx(0.5, rel=1e-6) and row["simulated"] is None
    res = CliRunner().invoke(main, ["table", "--links", "abs", "--activations", "linear", "--widths", "1,2",
                                    "--law-d", "60", *common, "--json"], env=env)
    assert res.exit_code == 0, res.output
    assert [r["setup"]["m"] for r in json.loads(res.stdout)["rows"]] == [1, 2]
    # m = inf: the m -> inf Hessian on a law of width --population (linear: sigma'' = 0, H >= 0, no outlier)
    res = CliRunner().invoke(main, ["table", "--links", "abs", "--activations", "linear", "--widths", "1,inf",
                                    "--population", "4", "--law-d", "60", *common, "--json"], env=env)
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert rows[0]["setup"]["m"] == 1 and not rows[0]["setup"]["mean_field"]
    assert rows[1]["setup"]["m"] == 4 and rows[1]["setup"]["mean_field"] and rows[1]["delta_nn"] == "inf"
    assert (rows[0]["setup"]["law"], rows[1]["setup"]["law"]) == ("dmft", "gd")
    res = CliRunner().invoke(main, ["table", "--links", "abs", "--activations", "linear", "--widths", "1,inf",
                                    "--population", "4", "--law-d", "60", *common], env=env)  # cached: the caption
    text = " ".join(res.output.split())   # the caption wraps at the terminal width
    assert res.exit_code == 0 and "m = 1: DMFT, m = inf (law of width 4): GD at d = 60" in text, res.output
    res = CliRunner().invoke(main, ["table", "--links", "abs", "--activations", "linear", "--widths", "inf",
                                    "--population", "4", "--law-d", "60", *common], env=env)
    assert res.exit_code == 0 and "inf (law of width 4)" in res.output, res.output
    for bad in ("0", "65", "two"):
        res = CliRunner().invoke(main, ["table", "--widths", f"1,{bad}", *common], env=env)
        assert res.exit_code == 2 and "Traceback" not in res.output and "--widths" in res.output, res.output
    # the m -> inf limit of the DMFT is not built: one line, exit 2
    res = CliRunner().invoke(main, ["nn", "-a", "gelu", "--m", "inf", "--law", "dmft"], env=env)
    assert res.exit_code == 2 and "m = inf needs the finite-d law" in res.output and res.output.count("\n") <= 2, \
        res.output
    res = CliRunner().invoke(main, ["grok", "-a", "linear", "-l", "abs", "-d", "1.5", *common, "--json"], env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["escape"] is None and len(out["curves"]["train_loss"]) == 9


def test_escape_time_formula():
    # growth (1 - eta z*) per step from d^{-1/2}: t_esc - t_1 = log(sqrt d) / log(1 - eta z*)
    from thresholds.escape import escape_steps
    rows = escape_steps(t1=50, z=-1.0, z_err=0.1, eta=0.1, dims=[100, 10_000])
    assert rows[0]["steps"] == pytest.approx(50 + math.log(10) / math.log(1.1))
    assert rows[1]["steps"] - 50 == pytest.approx(2 * (rows[0]["steps"] - 50))


def test_finite_d_law_route_brackets_the_initialization_threshold(tmp_path, monkeypatch):
    # law = "gd": the law of (u, y, g) from finite-d GD restricted to the complement.  At
    # eta = 1e-4 it is the law at initialization, whose threshold is 2.60 (test above):
    # no negative hard outlier at delta = 2, one at delta = 4.
    from validation.gd_law import evaluate
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    setup = NNSetup("quad", "3*tanh(z**2)", eta=1e-4, steps=8, law="gd", law_d=500, replicas=3)
    assert evaluate(setup, 2.0).indicator[-1] < 0 < evaluate(setup, 4.0).indicator[-1]


def test_nn_scan_cli(tmp_path):
    from cli import main
    res = CliRunner().invoke(main, ["nn", "-a", "linear", "-l", "abs", "--eta", "0.2", "-T", "8", "--law", "dmft",
                                    "--paths", "400", "--replicas", "2", "--search-max", "1",
                                    "--scan", "rho0=0.5:1:2", "--plot", str(tmp_path / "scan.png"), "--json"],
                             env={"THRESHOLDS_CACHE": str(tmp_path)})
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["parameter"] == "rho0" and [r["value"] for r in out["scan"]] == [0.5, 1.0]
    assert [r["setup"]["rho0"] for r in out["scan"]] == [0.5, 1.0] and (tmp_path / "scan.png").exists()


def test_validate_report_quotes_a_cached_delta_nn(tmp_path, monkeypatch):
    # the success-rate report quotes delta_NN (horizon, transient, finite d at the scanned d) from a
    # cached `thresholds nn` result of the same setup, and says so when there is none
    from validation.threshold import _nn_lines
    from thresholds.store import cached_delta_nn
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    setup = NNSetup("linear", "abs", eta=0.2, steps=8, paths=800, replicas=2, search_max=2.0, law_d=60)
    assert cached_delta_nn(setup) is None
    assert "no cached" in _nn_lines(None, [200])
    res = delta_nn(setup)
    assert cached_delta_nn(setup) is not None
    text = _nn_lines(cached_delta_nn(setup), [200, 400])
    assert "at the horizon" in text and "d = 200:" in text and "d = 400:" in text
    assert (f"{res.delta_nn:.4g} [" in text) if res.found else ("> 2 (no negative hard outlier" in text)
    # another search limit is the same setup: quoted with its own search settings, exact lookups miss
    wider = replace(setup, search_max=3.0, rtol=0.05)
    assert cached_delta_nn(wider) is None
    again = cached_delta_nn(wider, any_search=True)
    assert again is not None and again.setup.search_max == 2.0 and again.delta_nn == res.delta_nn
    assert "searched to 2 at rtol" in _nn_lines(again, [200])
    # the law's storage precision is relaxed the same way (float32 and float64 laws agree far inside the errors)
    f64 = replace(setup, law_dtype="float64")
    assert cached_delta_nn(f64) is None
    assert cached_delta_nn(f64, any_search=True).setup.law_dtype == "float32"
    assert cached_delta_nn(replace(setup, eta=0.3), any_search=True) is None


def test_refine_closes_the_bracket_and_beats_bisection_on_a_smooth_indicator():
    # a mildly concave indicator (the shape of I_T near delta_NN) and a strongly convex one: the bracket
    # [8, 16] shrinks to rtol around the root 10.7; geometric bisection needs 6 evaluations
    from thresholds.search import refine
    bisection = math.ceil(math.log2(math.log(2.0) / (0.9 * 0.02)))
    for g, most in ((lambda x: 0.3 * (x - 10.7) - 0.01 * (x - 10.7) ** 2, 3),
                    (lambda x: math.log(x / 10.7) + 0.02 * (x - 10.7) ** 2, bisection)):
        calls = []

        def counted(x, g=g):
            calls.append(x)
            return g(x)
        b = refine(counted, 8.0, 16.0, 0.02)
        a = max(x for x in calls if g(x) <= 0 and x < b)
        assert a < 10.7 <= b and (b - a) / math.sqrt(a * b) <= 0.02
        assert len(calls) - 2 <= most, calls  # interior evaluations


def test_refine_worst_case_stays_bounded():
    # a step function (no slope information) and a very flat then steep one both converge, within
    # twice the bisection count
    from thresholds.search import refine
    for g in (lambda x: -1.0 if x < 3.3 else 1.0, lambda x: (x - 3.3) ** 9 if x > 3.3 else -1e-6):
        calls = []

        def counted(x, g=g):
            calls.append(x)
            return g(x)
        b = refine(counted, 1.0, 32.0, 0.02)
        assert 3.3 <= b <= 3.3 * 1.03
        assert len(calls) == len(set(calls))  # each point evaluated once (the ends too)
        bisection = math.ceil(math.log2(math.log(32.0) / 0.02))
        assert len(calls) - 2 <= 2 * bisection, len(calls)


def test_next_trial_extrapolates_and_doubles():
    from thresholds.search import next_trial
    assert next_trial(None, None, 4.0, -1.0, 0.02) == 8.0            # one point: double
    assert next_trial(4.0, -1.0, 8.0, -2.0, 0.02) == 16.0            # not increasing: double
    # the line through (4, -2), (8, -1) crosses at 12: aim 2 % past it
    assert next_trial(4.0, -2.0, 8.0, -1.0, 0.02) == pytest.approx(12.24)
    assert next_trial(4.0, -2.0, 8.0, -1e-3, 0.02) == pytest.approx(8.8)   # at least x1.1
    assert next_trial(7.9, -2.0, 8.0, -1.99, 0.02) == 16.0           # at most x2 (root at 27.9)


def test_float32_law_gives_the_float64_indicators(tmp_path, monkeypatch):
    # the finite-d law stored in float32 (sums in float64): the same indicators as float64 far inside
    # the Monte Carlo error (which is what lets cached_delta_nn(any_search) treat them as one setup)
    from validation.gd_law import evaluate
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    setup = NNSetup("quad", eta=0.05, steps=64, law="gd", law_d=300, replicas=2)
    e32 = evaluate(setup, 6.0, cache=False)
    e64 = evaluate(replace(setup, law_dtype="float64"), 6.0, cache=False)
    diff = np.abs(np.array(e32.indicator) - np.array(e64.indicator))
    assert diff.max() < 1e-3 * max(1.0, float(np.max(np.abs(e64.indicator)))), diff
    assert diff.max() < 0.05 * min(e64.indicator_err), (diff.max(), min(e64.indicator_err))


def test_setups_pickled_before_law_dtype_read_as_float64():
    import pickle
    old = NNSetup("gelu")
    state = dict(vars(old))
    del state["law_dtype"]
    blob = pickle.dumps(old)
    restored = pickle.loads(blob)
    assert restored.law_dtype == "float32"
    legacy = NNSetup.__new__(NNSetup)
    legacy.__setstate__(state)
    assert legacy.law_dtype == "float64"
    from thresholds.store import result_key
    assert "law_dtype" not in result_key(legacy)["nn"] and result_key(old)["nn"]["law_dtype"] == "float32"


def test_run_stopped_at_the_transient_step_reproduces_the_full_run_there(tmp_path, monkeypatch):
    # the transient refinement evaluates GD run only to its step: the data and the initialization are
    # drawn before the first step, so the law (and the indicator) at that step is the full run's
    from thresholds.dmft import checkpoints
    from validation.gd_law import evaluate
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    setup = NNSetup("quad", eta=0.05, steps=64, law="gd", law_d=200, replicas=2)
    full = evaluate(setup, 5.0, cache=False)
    step = checkpoints(64)[1]
    short = evaluate(replace(setup, steps=step), 5.0, cache=False, final_only=True)
    assert short.steps == [step]
    assert short.indicator[0] == pytest.approx(full.indicator[full.at(step)], rel=1e-12, abs=1e-14)
    assert short.left_edge[0] == pytest.approx(full.left_edge[full.at(step)], rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("source_tol, edge_d, fragment", [
    (0.0, 0, "use --source-tol 1e-3"),
    (1e-3, 0, "--edge-d D puts the edge"),
    (1e-3, 1000, "a mean over data sets of n = 6000 paths (hessian eq. (5); 0 per replica in the run with fewer"),
])
def test_path_check_flags_a_moving_indicator_and_says_what_to_do(monkeypatch, source_tol, edge_d, fragment):
    """The DMFT law's path check: an indicator that moves beyond its Monte Carlo error (t tests) at half the paths gets a
    note that names the remedy of the scheme in use; one that does not move gets none."""
    from thresholds import search
    setup = NNSetup("quad", law="dmft", paths=4000, replicas=2, source_tol=source_tol, edge_d=edge_d)

    def ev(shift):
        return Evaluation(6.0, [1, 2], [0.1 + shift, 0.2 + shift], [0.01, 0.01], [], [], [], [], [], [], [])

    ref = ev(0.0)
    f = search._Indicators(setup, False, None, None, None)
    for shift, flagged in ((0.5, True), (0.001, False)):
        monkeypatch.setattr(search, "evaluate", lambda s, d, shift=shift, **kw: ev(shift))
        notes = []
        check = search._path_check(f, ref, notes)
        assert check["half_paths"] == check["check_paths"] == 2000 and bool(notes) == flagged
        if flagged:
            assert fragment in notes[0] and (edge_d == 0 or "--edge-d D" not in notes[0])
    # auto paths are the fewest that resolve the cut, so the check runs a DMFT with twice as many instead of half
    # (twice those of the reference's run, which eq. (4) of thresholds.evaluation may have raised), on the same setup
    auto = NNSetup("quad", law="dmft", paths=0, replicas=2, source_tol=source_tol, edge_d=edge_d)
    for ref_paths, expected in ((None, 2 * auto.paths_at(6.0)), (90_000, 180_000)):
        seen = []
        monkeypatch.setattr(search, "evaluate", lambda s, d, **kw: seen.append((s.paths, kw["dmft_paths"])) or ev(0.0))
        ref.paths = ref_paths
        check = search._path_check(search._Indicators(auto, False, None, None, None), ref, [])
        assert seen == [(0, expected)] and check["check_paths"] == expected and "half_paths" not in check
        assert check["paths"] == (ref_paths or auto.paths_at(6.0))


def test_auto_paths_hold_data_sets_of_n_samples_at_every_delta():
    """NNSetup.paths_at: explicit paths as given; paths = 0 (auto) at least AUTO_PATHS, and with edge_d DATA_SETS
    data sets of n = delta edge_d samples per replica (hessian eq. (5)), which hessian.data_sets then finds."""
    from thresholds.hessian import DATA_SETS, data_sets
    from thresholds.laws import ReplicaLaw
    from thresholds.nn import AUTO_PATHS
    assert NNSetup("quad", law="dmft", paths=4000).paths_at(30.0) == 4000
    assert NNSetup("quad", law="dmft", paths=0).paths_at(30.0) == AUTO_PATHS
    auto = NNSetup("quad", law="dmft", paths=0, replicas=3, edge_d=1000)
    assert auto.paths_at(1.0) == AUTO_PATHS   # 3 x 4000 paths would hold the data sets of n = 1000
    for delta in (11.0, 20.0, 40.0, 10.7004):
        per = auto.paths_at(delta) // 3
        n = delta * 1000
        assert per == DATA_SETS * round(n)
        one = np.zeros(per)
        sets = data_sets(ReplicaLaw(one, one, one, np.full(per, 1.0 / per)), n)
        assert len(sets) == DATA_SETS and all(len(s.y) == round(n) and s.w.sum() == pytest.approx(1.0) for s in sets)
    assert auto.dmft(20.0).paths == auto.paths_at(20.0)
    with pytest.raises(ThresholdsError):
        NNSetup("quad", law="dmft", paths=-1).validate()


def test_python_dmft_law_takes_the_cli_defaults():
    """NNSetup.from_problem mirrors `thresholds nn`: the DMFT law by default (the finite-d GD law with mean_field),
    with auto paths, the truncated source basis and the edge of n = delta law_d samples unless given; the GD law,
    asked for, keeps the plain defaults."""
    from thresholds.forced import SOURCE_TOL
    from thresholds.nn import NNSetup
    from thresholds.problem import Problem

    problem = Problem("quad", "phase_retrieval", eta=0.05)
    dm = NNSetup.from_problem(problem, law="dmft", law_d=500)
    assert (dm.paths, dm.source_tol, dm.edge_d) == (0, SOURCE_TOL, 500)
    given = NNSetup.from_problem(problem, law="dmft", paths=4000, source_tol=0.0, edge_d=0)
    assert (given.paths, given.source_tol, given.edge_d) == (4000, 0.0, 0)
    default = NNSetup.from_problem(problem, law_d=500)
    assert (default.law, default.paths, default.source_tol, default.edge_d) == ("dmft", 0, SOURCE_TOL, 500)
    gd = NNSetup.from_problem(problem, law="gd")
    assert (gd.law, gd.paths, gd.source_tol, gd.edge_d) == ("gd", NNSetup.paths, 0.0, 0)
    wide = NNSetup.from_problem(replace(problem, m=4), mean_field=True)
    assert wide.law == "gd" and wide.mean_field


def test_own_term_reaches_the_dmft_and_the_cache_key_only_when_set():
    """NNSetup.own_term (dmft eq. (6e)) goes into the DMFT setup of the DMFT law and into the cache key when True;
    results without it keep their keys; the GD law refuses it."""
    from thresholds.nn import NNSetup
    from thresholds.store import setup_fields

    on = NNSetup("quad", law="dmft", paths=4000, source_tol=1e-3, own_term=True)
    off = NNSetup("quad", law="dmft", paths=4000, source_tol=1e-3)
    assert on.dmft(3.0).own_term and not off.dmft(3.0).own_term
    assert setup_fields(on)["own_term"] is True and "own_term" not in setup_fields(off)
    with pytest.raises(ThresholdsError, match="own_term applies to the DMFT law"):
        NNSetup("quad", own_term=True).validate()


def test_log_growth_and_the_horizon_rule():
    # thresholds.escape eq. (1) by hand: (t_j - t_{j-1}) log(1 - eta z*) summed over the checkpoints with an outlier
    from thresholds.escape import growth
    from validation.escape_horizon import horizon_crossing
    z = [[math.nan, math.nan], [-0.2, -0.1], [-0.3, math.nan]]   # checkpoints x replicas
    ev = Evaluation(2.0, [10, 30, 60], [0.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3,
                    [math.nan] * 3, [0.0] * 3, [0.0] * 3, hard_z=z)
    steps, L, se = growth(ev, 0.5)
    by_hand = np.array([[0.0, 0.0], [20 * math.log(1.1), 20 * math.log(1.05)],
                        [20 * math.log(1.1) + 30 * math.log(1.15), 20 * math.log(1.05)]])
    assert steps == [10, 30, 60]
    np.testing.assert_allclose(L, by_hand.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(se, by_hand.std(axis=1, ddof=1) / math.sqrt(2), rtol=1e-12)
    # validation.escape_horizon eq. (1): L(T) = log sqrt(d), linear between the deltas; no credit for being alive
    rows = [{"delta": 2.0, "log_growth": [0.0, 1.0], "log_growth_err": [0.0, 0.1], "indicator": 0.3},
            {"delta": 3.0, "log_growth": [0.0, 3.0], "log_growth_err": [0.0, 0.1], "indicator": 0.5}]
    c = horizon_crossing(rows, round(math.exp(4.0)))
    assert c.found and c.value == pytest.approx(2.5, abs=0.01) and c.low < 2.5 < c.high
    assert not horizon_crossing(rows, round(math.exp(8.0))).found


def test_indicator_points_brackets_delta_nn_and_resumes(monkeypatch, tmp_path):
    # validation.indicator_points: one evaluate per new delta (appended), the bracket from the signs of I_T
    import validation.indicator_points as ip
    calls, finals = [], []

    def fake(setup, delta, final_only=False):
        calls.append(delta)
        finals.append(final_only)
        z = [[math.nan], [-0.01 if delta > 2 else math.nan]]
        return Evaluation(delta, [300, 600], [delta - 2.0] * 2, [0.01] * 2, [0.0] * 2, [0.0] * 2, [-0.005] * 2,
                          [0.0] * 2, [math.nan] * 2, [math.nan] * 2, [math.nan] * 2, hard_z=z,
                          period_two=[1] if delta == 1.8 else [], indicator_replicas=[[delta - 2.1, delta - 1.9]] * 2,
                          paths=setup.paths or 99_000, self_interaction=0.02)   # auto: as if raised (evaluation eq. (4))
    monkeypatch.setattr(ip, "evaluate", fake)
    out = tmp_path / "p.jsonl"
    args = ["-a", "quad", "--eta", "0.05", "--m", "2", "--out", str(out)]
    first = CliRunner().invoke(ip.main, args + ["--delta", "1.5,2.5"])
    assert first.exit_code == 0, first.output
    assert "delta_NN(T = 600) in [1.5, 2.5]" in first.output
    second = CliRunner().invoke(ip.main, args + ["--delta", "2.5,1.8"])
    assert second.exit_code == 0 and calls == [1.5, 2.5, 1.8]          # 2.5 read back, not evaluated again
    assert "delta_NN(T = 600) in [1.8, 2.5]" in second.output
    assert "replica(s) [1] in a period-2 orbit (thresholds.dmft eq. (10)), I_T on the others -0.30000" in second.output
    assert second.output.count("period-2") == 1
    rows = ip.read_rows(str(out))
    assert [r["delta"] for r in rows] == [1.5, 2.5, 1.8] and rows[1]["hard_z"][-1] == [-0.01]
    from thresholds.problem import Problem
    auto = NNSetup.from_problem(Problem("quad", eta=0.05, m=2), law="dmft")
    assert rows[1]["paths"] == 99_000 and rows[1]["hessian_paths"] == auto.paths_at(2.5) < 99_000
    assert rows[1]["self_interaction"] == 0.02
    assert ip.bracket(rows[1:2]) == (None, 2.5)
    # the sign on the settled replicas decides: replica 1 in an orbit with a mean below 0, replica 0 above 0
    orbit = dict(rows[2], indicator=[-0.2], indicator_replicas=[[0.1, -0.5]], period_two=[1])
    assert ip.settled(orbit) == 0.1 and ip.bracket([orbit]) == (None, 1.8)
    assert ip.settled(dict(orbit, period_two=[0, 1])) is None and ip.bracket([dict(orbit, period_two=[0, 1])]) == (None, None)
    assert ip.settled(dict(orbit, period_two=None)) == -0.2          # records made before eq. (10)
    third = CliRunner().invoke(ip.main, args + ["--delta", "3", "--final-only"])
    assert third.exit_code == 0 and calls[-1] == 3.0 and finals == [False, False, False, True]
    # a law other than the default: its paths and source tolerance reach the setup and the record
    seen = []
    monkeypatch.setattr(ip, "evaluate", lambda setup, delta, final_only=False: seen.append(setup) or fake(setup, delta))
    other = tmp_path / "q.jsonl"
    fourth = CliRunner().invoke(ip.main, ["-a", "quad", "--eta", "0.05", "--m", "2", "--out", str(other), "--delta", "2",
                                          "--paths", "80000", "--source-tol", "0.01"])
    assert fourth.exit_code == 0 and seen[0].paths == 80000 and seen[0].source_tol == 0.01
    assert ip.read_rows(str(other))[0]["paths"] == 80000 and ip.read_rows(str(other))[0]["source_tol"] == 0.01
    assert ip.read_rows(str(other))[0]["hessian_paths"] == 80000
    bad = CliRunner().invoke(ip.main, ["-a", "quad", "--eta", "0.05", "--out", str(other), "--delta", "2",
                                       "--source-tol", "-1"])
    assert bad.exit_code != 0 and "source-tol" in bad.output


def test_search_notes_name_the_deltas_with_a_period_two_orbit():
    from thresholds.search import _orbit_notes

    def ev(delta, orbit):
        return Evaluation(delta, [10], [0.1], [0.01], [0.1], [0.01], [-0.1], [0.01], [math.nan], [math.nan],
                          [math.nan], period_two=orbit)
    assert _orbit_notes([ev(2.0, []), ev(3.0, None)]) == []
    (note,) = _orbit_notes([ev(2.5, [1]), ev(1.7, [0, 2]), ev(3.0, [])])
    assert note.startswith("at delta = 1.7, 2.5 a DMFT replica ends in a period-2 orbit") and "eq. (10c)" not in note
    shared = [ev(2.5, [1]), ev(2.0, [0])]
    shared[0].unstable_fraction, shared[1].unstable_fraction = 2e-5, 0.0   # eq. (10c) where the evaluations carry it
    (note,) = _orbit_notes(shared)
    assert "eq. (10c): P = 0 (none among the paths), 2e-05 (d = 2e+04))" in note


def test_search_notes_a_large_self_interaction():
    # thresholds.dmft eq. (6f): the search names the largest size and its delta when it exceeds the threshold
    from thresholds.search import _self_interaction_notes

    def ev(delta, size):
        return Evaluation(delta, [10], [0.1], [0.01], [0.1], [0.01], [-0.1], [0.01], [math.nan], [math.nan],
                          [math.nan], self_interaction=size)
    assert _self_interaction_notes([ev(2.0, None), ev(3.0, 0.01)]) == []
    (note,) = _self_interaction_notes([ev(2.0, 0.12), ev(3.0, 0.18), ev(4.0, None)])
    assert note.startswith("the DMFT law's self-interaction (thresholds.dmft eq. (6f)) reaches 0.18 of the memory "
                           "term (at delta = 3)")



def test_auto_paths_run_again_when_the_self_interaction_is_large(monkeypatch):
    """thresholds.evaluation eq. (4): with automatic paths a DMFT law whose self-interaction s (dmft eq. (6f)) is above
    SELF_INTERACTION_MAX is run again at N_0 s / SELF_INTERACTION_TARGET paths per replica, and the Hessian reads the
    first N_0 paths of each replica of that run; explicit paths are never raised."""
    from thresholds import evaluation, nn as nn_module
    from thresholds.dmft import self_interaction, solve_dmft
    from thresholds.hessian import spectra_of_law
    from thresholds.laws import FirstPhaseLaw, ReplicaLaw
    assert evaluation.more_paths(1000, 0.068) == 3000 and evaluation.more_paths(8600, 0.115) == 40_000
    monkeypatch.setattr(nn_module, "AUTO_PATHS", 2000)   # every source (tolerance 0): r = 16, s = 4 x 17 / 1000
    auto = NNSetup("tanh", "abs", eta=0.2, steps=16, law="dmft", paths=0, replicas=2, edge_d=0)
    base = auto.dmft(4.0)
    s0 = self_interaction(base, 1000, solve_dmft(base).sources)
    assert s0 == pytest.approx(0.068) and s0 > evaluation.SELF_INTERACTION_MAX
    run = evaluation.first_phase(auto, 4.0, cache=False)
    assert (run.paths, run.hessian_paths) == (6000, 2000)
    assert run.self_interaction == pytest.approx(4.0 * 17 / 3000)
    assert run.self_interaction < evaluation.SELF_INTERACTION_MAX
    ev = evaluation.evaluate(auto, 4.0, cache=False, final_only=True)
    assert ev.paths == 6000 and ev.self_interaction == run.self_interaction
    # the Hessian of the first 1000 paths of each replica of the 6000-path run, thinned by hand
    res = solve_dmft(replace(base, paths=6000))
    (u_reps,) = [us for step, us in res.snapshots.items() if step == 16] or [[law[0] for law in res.replica_laws]]
    hand = [ReplicaLaw(u[:1000], y[:1000], g[:1000], np.full(1000, 1e-3)) for u, (_, y, g, _) in
            zip(u_reps, res.replica_laws)]
    spectra = spectra_of_law(run.setup, FirstPhaseLaw({16: hand}), outliers="none", edge_d=0)
    assert ev.indicator[-1] == pytest.approx(spectra[16].negative_indicator, rel=1e-10, abs=1e-12)
    assert ev.left_edge[-1] == pytest.approx(spectra[16].left_edge, rel=1e-10, abs=1e-12)
    from thresholds.dmft import unstable_fraction   # dmft eq. (10c) on every path of the run, not the Hessian's
    assert ev.unstable_fraction == np.mean([unstable_fraction(run.setup, u, y, w) for u, y, _, w in res.replica_laws])
    # explicit paths stay as given; the path check's override keeps the Hessian on N_0
    assert evaluation.first_phase(replace(auto, paths=2000), 4.0, cache=False).paths == 2000
    check = evaluation.first_phase(auto, 4.0, cache=False, paths=12_000)
    assert (check.paths, check.hessian_paths) == (12_000, 2000)


def test_dmft_law_evaluations_are_cached_and_read_back(monkeypatch):
    """A search on the DMFT law resumes without its Hessians: evaluate stores the Evaluation (keyed by
    thresholds.store.evaluation_key) and reads it back without a DMFT run or a Hessian."""
    from thresholds import cache, evaluation
    setup = NNSetup("tanh", "abs", eta=0.2, steps=16, law="dmft", paths=2000, replicas=2)
    with cache.empty():
        first = evaluation.evaluate(setup, 4.0, final_only=True)

        def no_run(*args, **kw):
            raise AssertionError("the DMFT ran again")
        monkeypatch.setattr(evaluation, "first_phase", no_run)
        again = evaluation.evaluate(setup, 4.0, final_only=True)
        assert again.indicator == first.indicator and again.indicator_replicas == first.indicator_replicas
        assert again.paths == first.paths == 2000 and again.period_two == first.period_two
        with pytest.raises(AssertionError, match="ran again"):   # another checkpoint set is another entry
            evaluation.evaluate(setup, 4.0)
        with pytest.raises(AssertionError, match="ran again"):
            evaluation.evaluate(setup, 4.0, final_only=True, cache=False)


def test_search_starts_above_the_deltas_where_every_dmft_replica_orbits(monkeypatch):
    """thresholds.search._lower_end: on the DMFT law the lower end moves up by ORBIT_STEP while every replica ends in
    a period-2 orbit (no settled first phase to take a Hessian of), the Hessian is not evaluated there, and the result's
    notes name those deltas; one settled replica is enough to start; orbits up to search_max are an error."""
    from types import SimpleNamespace
    from thresholds import search
    setup = NNSetup("quad", law="dmft", paths=0, replicas=3, search_max=3.0)
    monkeypatch.setattr(search, "first_phase", lambda s, delta, **kw: SimpleNamespace(
        setup=SimpleNamespace(replicas=3), result=SimpleNamespace(period_two=[0, 1, 2] if delta < 1.5 else [2])))
    monkeypatch.setattr(search, "unstable_share", lambda run: 1e-4)

    class F(search._Indicators):
        def __call__(self, delta, step=None):
            self.asked.append(delta)
            return delta - 1.7
    f = F(setup, True, None, None, None)
    f.asked = []
    lo, below, diverged = search._lower_end(f, 1.0)
    assert lo == pytest.approx(1.5625) and f.orbiting == [(1.0, 1e-4), (1.25, 1e-4)] and f.asked == [lo] and not below
    (note,) = search._lower_orbit_notes(f.orbiting, lo)
    assert note.startswith("at delta = 1, 1.25 every DMFT replica ends in a period-2 orbit") and "starts at 1.562" in note
    assert "P = 0.0001 (d = 1e+04), 0.0001 (d = 8e+03) there" in note   # one such sample from d = 1 / (delta P)
    assert search._lower_orbit_notes([], lo) == []
    monkeypatch.setattr(search, "first_phase", lambda s, delta, **kw: SimpleNamespace(
        setup=SimpleNamespace(replicas=3), result=SimpleNamespace(period_two=[0, 1, 2])))
    with pytest.raises(ThresholdsError, match="period-2 orbit .* at every delta tried up to 2.441"):
        search._lower_end(F(setup, True, None, None, None), 1.0)
    gd = F(replace(setup, law="gd"), True, None, None, None)   # the finite-d GD law: no orbit test
    gd.asked = []
    assert search._lower_end(gd, 1.0)[0] == 1.0 and gd.orbiting == []


def test_path_check_counts_the_replicas_that_settle(monkeypatch):
    """The path check's Welch degrees of freedom count the replicas each indicator is a mean over (evaluation eq. (3));
    where one run keeps a single replica the check is not formed, and says so."""
    from thresholds import search
    setup = NNSetup("quad", law="dmft", paths=0, replicas=3, source_tol=1e-3, edge_d=1000)

    def ev(orbit, shift=0.0):
        return Evaluation(2.0, [1, 2], [0.1 + shift, 0.2 + shift], [0.01, 0.01], [], [], [], [], [], [], [],
                          period_two=orbit, indicator_replicas=[[0.1, 0.1, 0.1]] * 2)
    f = search._Indicators(setup, False, None, None, None)
    monkeypatch.setattr(search, "evaluate", lambda s, d, **kw: ev([0, 2], 0.5))
    notes = []
    check = search._path_check(f, ev([0]), notes)
    assert check["replicas_used"] == [2, 1] and check["converged_until"] is None
    assert len(notes) == 1 and notes[0].startswith("path check not formed at delta = 2: the indicators of the runs")
    monkeypatch.setattr(search, "evaluate", lambda s, d, **kw: ev([1]))
    check = search._path_check(f, ev([]), [])
    from thresholds.numbers import welch_dof
    assert check["replicas_used"] == [3, 2] and check["dof"][0] == welch_dof(0.01, 0.01, 3, 2)


def test_divergence_note_names_the_divergent_deltas():
    # the lower end doubles past the deltas where GD diverges (and may then move on past orbits, or bisect back): the
    # note names the divergent deltas, not a lower end
    from thresholds import search
    from thresholds.nn import Crossing
    c = Crossing(2.0, 1.9, 2.1, True)
    ref = Evaluation(2.0, [600], [0.1], [0.01], [0.1], [0.01], [0.0], [0.001], [math.nan], [math.nan], [math.nan])
    notes = search._search_notes(NNSetup("quad", law="dmft", paths=0), 1.953, [0.5], c, c, c, c, 600, True, True, ref)
    assert notes[0] == "GD diverges at eta = 0.1 for delta = 0.5: the search starts above them"


def test_search_bisects_between_orbits_and_a_positive_lower_end(monkeypatch):
    """thresholds.search._settled_lower_end: I_T > 0 at the lower end that orbits moved up; bisections in log delta
    between the last all-orbit delta and it find a settled delta with I_T <= 0 (the search then goes up from it), or
    leave the lowest settled positive one as a bound; an orbiting midpoint moves the low end of the bisection."""
    from types import SimpleNamespace
    from thresholds import search
    setup = NNSetup("quad", law="dmft", paths=0, replicas=3)
    monkeypatch.setattr(search, "unstable_share", lambda run: 1e-4)

    def world(orbit_below, root):
        monkeypatch.setattr(search, "first_phase", lambda s, delta, **kw: SimpleNamespace(
            setup=SimpleNamespace(replicas=3),
            result=SimpleNamespace(period_two=[0, 1, 2] if delta < orbit_below else [])))

        class F(search._Indicators):
            def __call__(self, delta, step=None):
                self.asked.append(delta)
                v = delta - root
                self.full[delta] = Evaluation(delta, [400], [v], [0.001], [v], [0.001], [0.0], [0.0], [math.nan],
                                              [math.nan], [math.nan], indicator_replicas=[[v] * 3],
                                              clipped_replicas=[[v] * 3])
                return v
        f = F(setup, True, None, None, None)
        f.asked = []
        return f
    f = world(1.6, 1.7)                      # 1, 1.25, 1.5625 orbit; I_T(1.953) > 0
    lo, below, _ = search._lower_end(f, 1.0)
    assert below and lo == pytest.approx(1.953125)
    lo, below = search._settled_lower_end(f, lo, [])
    assert not below and lo == pytest.approx(math.sqrt(1.5625 * math.sqrt(1.5625 * 1.953125)))  # I_T(1.652) <= 0
    assert f.asked == pytest.approx([1.953125, math.sqrt(1.5625 * 1.953125), lo])
    asked = len(f.asked)
    search._upward(f, lo, known=1.953125)    # the bracket [1.652, 1.953] at once, not a doubling from 1.652
    assert len(f.asked) > asked and min(f.asked) >= 1.6 and max(f.asked) < 2.2
    f = world(1.8, 1.0)                      # every settled delta has I_T > 0; 1.747 orbits
    lo, below, _ = search._lower_end(f, 1.0)
    lo, below = search._settled_lower_end(f, lo, [])
    first_mid = math.sqrt(1.5625 * 1.953125)                            # 1.747 orbits, 1.847 settles, 1.796 orbits
    assert below and lo == pytest.approx(math.sqrt(first_mid * 1.953125))
    assert [d for d, _ in f.orbiting[3:]] == pytest.approx([first_mid, math.sqrt(first_mid * lo)])


def test_lower_end_bisects_back_toward_a_divergent_delta(monkeypatch):
    # GD diverges at 1 (the lower end doubles to 2, where I_T > 0): bisections between 1 and 2 find a settled delta with
    # I_T <= 0 unless it diverges too (then it is added to the divergent deltas)
    from types import SimpleNamespace
    from thresholds import search
    from thresholds.errors import DivergenceError
    setup = NNSetup("quad", law="dmft", paths=0, replicas=3)

    def run(s, delta, **kw):
        if delta < 1.25:
            raise DivergenceError("diverged at step 5")
        return SimpleNamespace(setup=SimpleNamespace(replicas=3), result=SimpleNamespace(period_two=[]))
    monkeypatch.setattr(search, "first_phase", run)

    class F(search._Indicators):
        def __call__(self, delta, step=None):
            run(None, delta)
            return delta - 1.35
    f = F(setup, True, None, None, None)
    lo, below, diverged = search._lower_end(f, 1.0)
    assert (lo, below, diverged) == (2.0, True, [1.0])
    lo, below = search._settled_lower_end(f, lo, diverged)
    mid = math.sqrt(math.sqrt(2.0))                                  # 1.414: I_T > 0; 1.189 diverges; 1.297: I_T <= 0
    assert not below and lo == pytest.approx(math.sqrt(mid * math.sqrt(2.0)))
    assert diverged[0] == 1.0 and diverged[1:] == pytest.approx([mid])


def test_orbit_test_without_the_cache_takes_the_evaluation(monkeypatch):
    # without the cache the pre-check would run the DMFT twice: it takes the evaluation instead, and an all-orbit one is
    # kept out of the crossing's evaluations
    from thresholds import search
    setup = NNSetup("quad", law="dmft", paths=0, replicas=2)
    monkeypatch.setattr(search, "first_phase", lambda *a, **k: (_ for _ in ()).throw(AssertionError("a second run")))

    def ev(delta, orbit):
        e = Evaluation(delta, [400], [0.1], [0.01], [0.1], [0.01], [0.0], [0.0], [math.nan], [math.nan], [math.nan],
                       period_two=orbit)
        e.unstable_fraction = 3e-5
        return e
    monkeypatch.setattr(search, "evaluate", lambda s, delta, **kw: ev(delta, [0, 1] if delta < 1.5 else [1]))
    f = search._Indicators(setup, False, None, None, None)
    assert search._every_replica_orbits(f, 1.0) == 3e-5 and 1.0 not in f.full
    assert search._every_replica_orbits(f, 2.0) is None and f.full[2.0].period_two == [1]


def test_search_evaluation_reuses_the_first_phase_its_orbit_test_read(monkeypatch):
    # the orbit test of thresholds.search reads the DMFT first phase; the evaluation at that delta takes it from there
    # instead of reading the (multi-GB at m = 16) cache entry again
    from types import SimpleNamespace
    from thresholds import search
    setup = NNSetup("quad", law="dmft", paths=0, replicas=2)
    run = SimpleNamespace(setup=SimpleNamespace(replicas=2), result=SimpleNamespace(period_two=[1]))
    monkeypatch.setattr(search, "first_phase", lambda *a, **k: run)
    seen = []
    monkeypatch.setattr(search, "evaluate", lambda s, delta, **kw: seen.append(kw["run"]) or Evaluation(
        delta, [400], [0.1], [0.01], [0.1], [0.01], [0.0], [0.0], [math.nan], [math.nan], [math.nan]))
    f = search._Indicators(setup, True, None, None, None)
    assert search._settles(f, 2.0) and f(2.0) == 0.1 and seen == [run] and f.runs == {}


def test_loss_decay_is_the_power_of_the_train_loss_over_the_last_half():
    from thresholds.evaluation import loss_decay
    t = np.arange(601.0)
    assert loss_decay(0.3 * (1 + t) ** -1.5) == pytest.approx(1.5 * math.log(601 / 301) / math.log(2), rel=1e-12)
    assert loss_decay(np.full(601, 0.7)) == 0.0
    assert loss_decay([0.5]) is None and loss_decay([0.5, 0.0, 0.0]) is None


def test_search_notes_a_first_phase_that_is_still_interpolating():
    from thresholds import search
    from thresholds.nn import Crossing
    c = Crossing(1.4, 1.3, 1.5, True)
    ref = Evaluation(1.4, [600], [0.1], [0.01], [0.1], [0.01], [0.0], [0.001], [-0.002], [0.0001], [0.5])
    args = (NNSetup("quad", law="dmft", paths=0, m=16), 1.2, [], c, c, c, c, 600, True, True)
    assert not any("interpolating" in n for n in search._search_notes(*args, ref))
    ref.loss_decay = 0.4
    assert not any("interpolating" in n for n in search._search_notes(*args, ref))
    ref.loss_decay = 1.6
    (note,) = [n for n in search._search_notes(*args, ref) if "interpolating" in n]
    assert "t^-1.60" in note and "delta = 1.4" in note


def test_finite_d_escape_counts_no_growth_past_the_horizon_of_an_interpolating_first_phase():
    from types import SimpleNamespace
    from thresholds.escape import finite_d
    nan = math.nan
    low = Evaluation(1.0, [300, 600], [-0.1, -0.1], [0.01] * 2, [-0.1] * 2, [0.01] * 2, [-0.01] * 2, [0.001] * 2,
                     [nan, nan], [nan, nan], [nan, nan], hard_z=[[nan], [nan]])
    high = Evaluation(2.0, [300, 600], [0.1, 0.1], [0.01] * 2, [0.1] * 2, [0.01] * 2, [-0.01] * 2, [0.001] * 2,
                      [-0.01, -0.01], [0.001] * 2, [0.5] * 2, hard_z=[[-0.01], [-0.01]])
    result = SimpleNamespace(setup=SimpleNamespace(eta=0.05), evaluations=[low, high])
    (settled,) = finite_d(result, [200])                 # the outlier stays: escape at every d above delta 1
    assert settled["found"] and 1.0 <= settled["value"] <= 2.0
    high.loss_decay = 1.5                                # interpolating: L(T) = 600 log(1.0005) ~ 0.3 < log sqrt(200)
    from thresholds.escape import stays
    from thresholds.evaluation import interpolating
    assert interpolating(high) and not stays(high) and not interpolating(low)
    (interp,) = finite_d(result, [200])
    assert not interp["found"]
    high.loss_decay = 0.3
    assert finite_d(result, [200])[0]["found"]

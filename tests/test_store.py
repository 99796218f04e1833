"""Cache keys of stored results: the keys that earlier versions gave a setup (pinned below, computed by
the code before the setup record and the module split) are the keys the current code gives it, so
that cached searches, evaluations, simulations and DMFT runs stay readable."""

from dataclasses import asdict

import pytest

from thresholds import cache
from thresholds.nn import NNSetup
from thresholds.problem import Problem
from thresholds.store import evaluation_key, result_key, validation_key

PINNED = [
    (NNSetup("gelu"), "dd1f6ad91997c5719bec917f871e3188", "eeb832d465a96050362898eaa0d7ff30",
     "cb6e5ea0dabcf58229617ff11b33d578", "bec7a47ad6d58fdf22404e1dde125e91"),
    (NNSetup("quad", eta=0.05), "fe61149d71bf79861406f8bd62516fe1", "661879dad705ffc236210464bc73511b",
     "33a93593f41a448da2fdd9930bae4682", "00c7f7da3b058360aacf17a825672a0a"),
    (NNSetup("gelu", m=16, mean_field=True, law_dtype="float64"), "7af371bb409a4c79546c199ce53b86fa",
     "5140409b0ac10362b8a3a2e2eb0063f9", "fa28a61aab4b6db1b2e0d448e87b8b33", "2100b66ec14323aa6ab724ebfa54090c"),
    # the DMFT law's evaluations were not stored before their key carried the rules of thresholds.evaluation eqs.
    # (3)-(4) (store.dmft_rules), so their key is pinned from then on; its searches are keyed anew since the
    # orbit-aware lower end of thresholds.search (a search made before it is run again)
    (NNSetup("tanh", "3*tanh(z**2)", law="dmft", paths=40000, sphere=True, rho0=2.0),
     "5e65b1328d319f2b8794f893d4b8795d", "47a2d4646d248502481971cec8d40cca", "2692b17f143273441fd1bf73e328499a",
     "f20308b915053a70ca10995bfd2a8290"),
]


@pytest.mark.parametrize("setup, nn, ev, val, dmft", PINNED)
def test_cache_keys_of_earlier_versions_are_kept(setup, nn, ev, val, dmft):
    assert cache.key_for("nn", result_key(setup)) == nn
    assert cache.key_for("nn-eval", evaluation_key(setup, 6.0, "none", True)) == ev
    assert cache.key_for("validation", validation_key(setup)) == val
    assert cache.key_for("dmft", setup.dmft(6.0).cache_key()) == dmft


def test_one_problem_record_reaches_every_layer():
    from validation.simulate import GDSetup
    problem = Problem("gelu", "abs", eta=0.3, steps=12, a=1.5, b=0.2, rho0=0.7, weight_decay=0.01, m=2)
    nn = NNSetup.from_problem(problem, replicas=2)
    assert nn.problem == problem and nn.dmft(4.0).problem == problem
    assert GDSetup.from_problem(problem, 4.0, 100).problem == problem
    assert validation_key(nn) == {k: v for k, v in asdict(problem).items() if k != "steps"}


@pytest.mark.parametrize("field, value", [("eta", float("nan")), ("rho0", float("inf")), ("a", float("nan")),
                                          ("weight_decay", -1.0), ("steps", 0), ("m", 0), ("loss", "logistic")])
def test_the_problem_validator_names_the_field(field, value):
    from thresholds.errors import ThresholdsError
    with pytest.raises(ThresholdsError):
        Problem("gelu", **{field: value}).validate()
    with pytest.raises(ThresholdsError):  # every layer validates through it
        NNSetup("gelu", **{field: value}).validate()


def test_the_source_tolerance_reaches_the_dmft_law_and_only_it():
    from thresholds.errors import ThresholdsError
    plain = NNSetup("quad", law="dmft", paths=40000)
    cut = NNSetup("quad", law="dmft", paths=40000, source_tol=1e-3)
    assert cut.dmft(6.0).source_tol == 1e-3 and "source_tol" not in plain.dmft(6.0).cache_key()
    assert result_key(cut) != result_key(plain) and result_key(cut)["nn"]["source_tol"] == 1e-3
    with pytest.raises(ThresholdsError, match="source_tol"):
        NNSetup("quad", source_tol=1e-3).validate()   # the default law is the finite-d GD law


def test_the_tail_cut_reaches_the_dmft_law_only_and_its_key():
    from thresholds.errors import ThresholdsError
    plain = NNSetup("quad", law="dmft", paths=40000, source_tol=1e-3)
    cut = NNSetup("quad", law="dmft", paths=40000, source_tol=1e-3, edge_d=1000)
    cut.validate()
    assert "edge_d" not in result_key(plain)["nn"] and result_key(cut)["nn"]["edge_d"] == 1000
    assert cut.dmft(6.0).cache_key() == plain.dmft(6.0).cache_key()  # the same DMFT run, cut afterwards
    with pytest.raises(ThresholdsError, match="edge_d"):
        NNSetup("quad", edge_d=1000).validate()   # the finite-d GD law has its own tail
    with pytest.raises(ThresholdsError, match="edge_d"):
        NNSetup("quad", law="dmft", edge_d=-1).validate()


def test_dmft_law_keys_carry_the_path_and_orbit_rules():
    """A search or evaluation on the DMFT law with automatic paths is keyed by the self-interaction rule of
    thresholds.evaluation eq. (4) (searches stored before it are not reused); explicit paths are not; the path check's
    run (``dmft_paths``) has its own evaluation key."""
    from thresholds.nn import SELF_INTERACTION_MAX, SELF_INTERACTION_TARGET
    auto = NNSetup("quad", law="dmft", paths=0, source_tol=1e-3, edge_d=1000)
    fixed = NNSetup("quad", law="dmft", paths=40000, source_tol=1e-3, edge_d=1000)
    rule = [SELF_INTERACTION_MAX, SELF_INTERACTION_TARGET]
    assert result_key(auto)["paths_rule"] == rule and "paths_rule" not in result_key(fixed)
    assert result_key(fixed)["lower_end"] == "orbits" and "lower_end" not in result_key(NNSetup("quad"))
    ev = evaluation_key(auto, 6.0, "none", False)
    assert ev["paths_rule"] == rule and ev["orbits"][:2] == [20, 1e-3] and "final_only" not in ev
    assert evaluation_key(auto, 6.0, "none", False, dmft_paths=90000)["dmft_paths"] == 90000
    assert "paths_rule" not in evaluation_key(fixed, 6.0, "none", True)
    assert "orbits" not in evaluation_key(NNSetup("quad"), 6.0, "none", True)   # the finite-d GD law

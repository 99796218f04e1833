"""Hostile and malformed input: every call either returns a checked result or raises the project's
error type, quickly (the fuzz categories of the reliability review, one test each at least)."""

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from thresholds.catalog import get_activation, get_link
from thresholds.errors import ThresholdsError
from thresholds.expr import parse_expression


@pytest.mark.parametrize("text", ["__import__('os').system('touch x')", "().__class__.__bases__", "lambda: 0",
                                  "z.real", "[z]", "z if z else 1", "open('f')", "exec('1')", "f'{z}'"])
def test_injection_is_refused(text):
    with pytest.raises(ThresholdsError):
        parse_expression(text, ["z"])


@pytest.mark.parametrize("text", ["1e309*z", "1e300*1e300*z", "((9**64)**64)**64*z",
                                  "(((((9**64)**64)**64)**64)**64)*z", "z**(10**10)", "exp(" * 60 + "z" + ")" * 60])
def test_huge_literals_and_nesting_fail_fast(text):
    start = time.time()
    with pytest.raises(ThresholdsError):
        parse_expression(text, ["z"])
    assert time.time() - start < 5


@pytest.mark.parametrize("text", ["z\u00b2", "\uff5a**2", "z\x00", "\u202ez", "z\u200b+1"])
def test_unicode_and_control_characters_are_refused(text):
    with pytest.raises(ThresholdsError):
        parse_expression(text, ["z"])


@pytest.mark.parametrize("getter, text", [(get_link, "sqrt(z + 3)"), (get_link, "log(z + 4)"),
                                          (get_activation, "x**0.5"), (get_activation, "sqrt(x + 3)")])
def test_complex_valued_expressions_are_refused(getter, text):
    with pytest.raises(ThresholdsError, match="not real"):
        getter(text)


def test_a_complex_preprocessing_is_refused():
    from thresholds.spectral import spectral
    with pytest.raises(ThresholdsError, match="not real"):
        spectral("phase_retrieval", "log(-1)*y", delta=2.0)


@pytest.mark.parametrize("activation", ["exp(x**2)", "1/(x - 1)"])
def test_infinite_moments_are_divergence_errors(activation):
    from thresholds.errors import DivergenceError
    from thresholds.hermite import activation_hermite
    with pytest.raises(DivergenceError):
        activation_hermite(activation, 3)


def test_non_differentiable_activation_is_refused_where_sigma_second_is_needed():
    from thresholds.errors import NotDifferentiableError
    with pytest.raises(NotDifferentiableError):
        get_activation("relu").derivative(2)


@pytest.mark.parametrize("link", ["1/z", "1/(z - 1)", "1/z**2", "tan(z)"])
def test_links_with_poles_are_refused_not_misclassified(link):
    from thresholds.alg import delta_alg
    from thresholds.errors import UnsupportedError
    with pytest.raises(UnsupportedError, match="singular|pole"):
        delta_alg(link)


@pytest.mark.parametrize("field, value", [("rho0", math.nan), ("a", math.inf), ("b", math.nan),
                                          ("weight_decay", math.inf), ("eta", math.nan)])
def test_non_finite_numbers_are_refused_before_any_computation(field, value):
    from thresholds.dmft import DMFTSetup, solve_dmft
    with pytest.raises(ThresholdsError, match="finite"):
        solve_dmft(DMFTSetup(**{"activation": "tanh", "link": "abs", "delta": 4.0, "eta": 0.2, "steps": 3,
                                "paths": 100, "replicas": 2, field: value}))


_ATOMS = st.sampled_from(["z", "x", "1", "2", "0", "0.5", "1e308", "pi", "E", "eps", "y", "-1"])
_FUNCS = st.sampled_from(["exp", "log", "sqrt", "sin", "tanh", "Abs", "sign", "erf", "relu", "Max", "foo", "eval"])
_OPS = st.sampled_from(["+", "-", "*", "/", "**", "^", "%", "//", " and ", ","])


def _expression(depth=3):
    if depth == 0:
        return _ATOMS
    sub = _expression(depth - 1)
    return st.one_of(_ATOMS, st.builds(lambda a, o, b: f"({a}{o}{b})", sub, _OPS, sub),
                     st.builds(lambda f, a: f"{f}({a})", _FUNCS, sub),
                     st.builds(lambda f, a, b: f"{f}({a}, {b})", _FUNCS, sub, sub))


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(_expression(), st.text(max_size=40)))
def test_parsing_returns_a_finite_expression_or_the_project_error(text):
    # property: the whitelist parser never raises anything but ThresholdsError, never returns a
    # non-finite expression, and answers within the deadline
    try:
        expr = parse_expression(text, ["z"])
    except ThresholdsError:
        return
    assert not expr.has(__import__("sympy").zoo, __import__("sympy").nan)
    assert expr.free_symbols <= {__import__("sympy").Symbol("z", real=True)}


def test_a_dmft_too_large_for_memory_is_refused_up_front():
    from thresholds.dmft import MAX_MEMORY, DMFTSetup
    setup = DMFTSetup("tanh", "abs", 4.0, 0.2, 100_000)
    assert setup.memory_bytes() > MAX_MEMORY
    with pytest.raises(ThresholdsError, match="GiB"):
        setup.validate()
    assert DMFTSetup("tanh", "abs", 4.0, 0.2, 2000, paths=100_000).memory_bytes() < 2 * 2**30


def test_a_dmft_without_its_two_time_kernels_is_sized_without_them():
    # m = 8 over 3000 steps: C and Cpsi are 4.6 GB each, so the run that skips them (1e6 paths per replica,
    # 12 GiB in the path arrays) fits where the full one does not
    from thresholds.dmft import MAX_MEMORY, DMFTSetup, solve_dmft
    setup = DMFTSetup("gelu", "phase_retrieval", 40.0, 0.1, 3000, m=8, paths=4_000_000, replicas=4, source_tol=1e-3)
    full, skip = setup.memory_bytes(), setup.memory_bytes(kernels=False)
    T, m = setup.steps + 1, setup.m
    assert full - skip == 8 * 2 * T**2 * m**2
    assert skip < MAX_MEMORY < full
    setup.validate(kernels=False)
    with pytest.raises(ThresholdsError, match="GiB"):
        solve_dmft(setup)


def test_a_broken_catalogue_file_is_a_one_line_error(tmp_path, monkeypatch):
    from thresholds.catalog import _load
    from thresholds.errors import CatalogError
    monkeypatch.setenv("THRESHOLDS_CATALOG", str(tmp_path))
    _load.cache_clear()
    try:
        (tmp_path / "activations.toml").write_text("gelu = [\n")
        with pytest.raises(CatalogError, match="not valid TOML"):
            get_activation("gelu")
        _load.cache_clear()
        (tmp_path / "activations.toml").write_text('[gelu]\ndescription = "no expression"\n')
        with pytest.raises(CatalogError, match="string 'expr'"):
            get_activation("gelu")
    finally:
        _load.cache_clear()


def test_the_smoothness_check_of_nested_non_smooth_expressions_is_fast():
    start = time.time()
    assert not get_activation("atan(Min(Abs(x**(-1)), x**4))").smooth
    assert time.time() - start < 5


@settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(text=_expression(2))
def test_catalogue_lookups_return_a_checked_function_or_the_project_error(text):
    # property: get_activation / get_link either refuse with ThresholdsError or return an expression
    # whose numeric form is real and finite at standard Gaussian points
    import numpy as np
    pts = np.random.default_rng(0).standard_normal(64)
    for getter, var in ((get_activation, "x"), (get_link, "z")):
        candidate = text.replace("x", var) if var == "z" else text.replace("z", var)
        try:
            obj = getter(candidate)
        except ThresholdsError:
            continue
        values = obj.numpy(0)(pts) if var == "x" else obj.numpy()(*([pts] * len(obj.variables)))
        assert np.all(np.isfinite(values))

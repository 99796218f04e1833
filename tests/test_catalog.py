import numpy as np
import pytest
import sympy as sp

from thresholds.catalog import X, activation_names, get_activation, get_link, link_names
from thresholds.catalog import _is_c2
from thresholds.errors import CatalogError, ExpressionError, NotDifferentiableError

REQUIRED_ACTIVATIONS = {"relu", "leaky_relu", "gelu", "quad", "he2", "cubic", "tanh", "erf",
                        "sigmoid", "softplus", "silu", "linear"}
REQUIRED_LINKS = {"phase_retrieval", "abs", "noisy_phase_retrieval", "sign", "relu", "he3",
                  "product", "sum_of_squares", "staircase", "mixed", "parity3", "noisy_linear"}


def test_catalogues_contain_required_entries():
    assert REQUIRED_ACTIVATIONS <= set(activation_names())
    assert REQUIRED_LINKS <= set(link_names())


@pytest.mark.parametrize("name", sorted(REQUIRED_ACTIVATIONS))
def test_declared_smoothness_matches_symbolic_detection(name):
    act = get_activation(name)
    assert act.smooth == _is_c2(act.expr)


def test_gelu_is_exact_x_phi():
    act = get_activation("gelu")
    assert sp.simplify(act.expr - X * (1 + sp.erf(X / sp.sqrt(2))) / 2) == 0


def test_relu_second_derivative_is_refused_but_first_is_available():
    act = get_activation("relu")
    d1 = act.numpy(1)(np.array([-1.0, 2.0]))
    assert d1.tolist() == [0.0, 1.0]
    with pytest.raises(NotDifferentiableError, match="no classical second derivative"):
        act.derivative(2)


def test_numpy_and_mpmath_backends_agree():
    import mpmath
    for name in ["gelu", "tanh", "silu", "softplus", "erf"]:
        act = get_activation(name)
        for order in (0, 1, 2):
            f_np, f_mp = act.numpy(order), act.mpmath(order)
            for t in (-1.3, 0.2, 2.1):
                assert abs(f_np(np.array([t]))[0] - float(f_mp(mpmath.mpf(t)))) < 1e-12


def test_constant_derivative_broadcasts():
    out = get_activation("linear").numpy(1)(np.zeros(5))
    assert out.shape == (5,) and np.all(out == 1.0)


def test_unknown_names_list_the_catalogue():
    with pytest.raises(CatalogError, match="catalogue names: .*gelu"):
        get_activation("gelu2")
    with pytest.raises(CatalogError, match="catalogue names: .*phase_retrieval"):
        get_link("phaseretrieval")


def test_expression_activation_and_smoothness_detection():
    act = get_activation("x*erf(x)")
    assert act.smooth and act.name == "x*erf(x)"
    assert not get_activation("Abs(x)").smooth
    assert not get_activation("x*Abs(x)").smooth  # C^1, jump in sigma''
    assert get_activation("x*Abs(x)").has_second_derivative


def test_link_variables_and_noise():
    link = get_link("z1**2 - z2 + 0.5*eps")
    assert link.k == 2 and link.noise is not None and not link.discrete
    assert get_link("parity3").discrete and get_link("parity3").k == 3
    assert get_link("phase_retrieval").k == 1


@pytest.mark.parametrize("text, fragment", [
    ("z1*z3", "without gaps"),
    ("z + z1", "mixes z with z1"),
    ("eps", "does not depend on any latent"),
    ("w**2", "unknown symbol 'w'"),
    ("w", "unknown link 'w'"),
])
def test_bad_links(text, fragment):
    with pytest.raises((ExpressionError, CatalogError), match=fragment):
        get_link(text)


def test_activation_must_depend_on_x():
    with pytest.raises(ExpressionError, match="does not depend on x"):
        get_activation("2*pi")


@pytest.mark.parametrize("text, getter", [("log(z)", get_link), ("sqrt(x)", get_activation)])
def test_non_real_expressions_are_refused(text, getter):
    with pytest.raises(ExpressionError, match="not real and finite"):
        getter(text)


@pytest.mark.parametrize("name", sorted(REQUIRED_LINKS))
def test_catalogue_links_pass_the_realness_check(name):
    """Catalogue links skip the realness check at lookup; their expressions, given as user
    expressions, must pass it (and give the same expression)."""
    from thresholds.catalog import _load
    text = _load("links")[name]["expr"]
    assert get_link(text).expr == get_link(name).expr

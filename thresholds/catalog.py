"""Catalogue of activations and links, and resolution of user expressions.

``catalog/activations.toml`` and ``catalog/links.toml`` hold named entries;
anywhere a name is accepted a whitelisted expression may be given instead
(``"x*erf(x)"``, ``"z1**2 - z2"``).  Conventions:

* an activation is a function of ``x`` (the pre-activation ``theta^T x + b``);
* a link is a function of the latent variables ``z`` (k = 1) or ``z1..zk``
  (standard Gaussians, ``g = Theta_*^T x``) and optionally of ``eps``, an
  independent standard Gaussian noise (THEORY.md section 1).
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sympy as sp

from .errors import CatalogError, ExpressionError, NotDifferentiableError
from .expr import parse_expression

MAX_LATENT = 6
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
X = sp.Symbol("x", real=True)
EPS = sp.Symbol("eps", real=True)


def catalog_dir() -> Path:
    """Directory of the catalogue files: ``$THRESHOLDS_CATALOG`` when set; else the copy an installed
    wheel carries as package data (``thresholds/catalog_data``, pyproject.toml); else the repository's
    ``catalog/`` (a source checkout or an editable install)."""
    env = os.environ.get("THRESHOLDS_CATALOG")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    shipped = here / "catalog_data"
    return shipped if (shipped / "activations.toml").is_file() else here.parent / "catalog"


@functools.lru_cache(maxsize=None)
def _load(kind: str) -> dict:
    """The entries of catalogue ``kind``: name -> table with a string ``expr`` (CatalogError, one line,
    for a missing or malformed file)."""
    path = catalog_dir() / f"{kind}.toml"
    try:
        with open(path, "rb") as fh:
            table = tomllib.load(fh)
    except FileNotFoundError:
        raise CatalogError(f"catalogue file {path} not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"catalogue file {path} is not valid TOML ({exc})") from None
    for name, entry in table.items():
        if not (_IDENT.match(name) and isinstance(entry, dict) and isinstance(entry.get("expr"), str)):
            raise CatalogError(f"catalogue file {path}: entry {name!r} needs a table with a string 'expr'")
    return table


# --- numerical back-ends for SymPy expressions ------------------------------

def _np_heaviside(t, h0=0.5):
    return np.heaviside(t, h0)


_NUMPY_MODULES = [{"Heaviside": _np_heaviside, "DiracDelta": None}, "scipy", "numpy"]


def _mp_heaviside(t, h0=0.5):
    import mpmath
    return mpmath.mpf(1) if t > 0 else (mpmath.mpf(0) if t < 0 else mpmath.mpf(h0))


def _mp_max(*args):
    return max(args)


def _mp_min(*args):
    return min(args)


def _mpmath_modules():
    import mpmath
    return [{"Heaviside": _mp_heaviside, "sign": mpmath.sign, "Max": _mp_max,
             "Min": _mp_min, "Abs": abs}, "mpmath"]


def lambdify_numpy(args, expr):
    """Vectorized NumPy/SciPy function of ``expr`` (Heaviside(0) = 1/2).

    The result always has the broadcast shape of the arguments (a constant
    expression returns an array, not a scalar).
    """
    f = sp.lambdify(args, expr, modules=_NUMPY_MODULES)

    def vectorized(*values):
        out = np.asarray(f(*values))
        if np.iscomplexobj(out):  # never drop an imaginary part: a complex value is an input error
            finite = np.isfinite(out)
            if np.any(np.abs(out.imag[finite]) > 1e-12 * (1 + np.abs(out.real[finite]))):
                raise ExpressionError(f"{expr} is not real at some of its arguments "
                                      f"(e.g. {complex(out[finite][np.argmax(np.abs(out.imag[finite]))]):.3g})")
            out = out.real
        shapes = [np.shape(v) for v in values]
        shape = shapes[0] if all(s == shapes[0] for s in shapes[1:]) else np.broadcast_shapes(*shapes)
        if out.shape == shape:
            return np.array(out, dtype=float)
        return np.array(np.broadcast_to(np.asarray(out, dtype=float), np.broadcast_shapes(out.shape, shape)))

    return vectorized


def lambdify_mpmath(args, expr):
    """mpmath function of ``expr``, evaluated at the caller's ``mp.dps``."""
    return sp.lambdify(args, expr, modules=_mpmath_modules())


# --- activations ------------------------------------------------------------

@dataclass(frozen=True)
class Activation:
    """An activation sigma(x) with its symbolic derivatives.

    ``smooth`` is True iff sigma is C^2 (declared in the catalogue, detected
    for expressions).  ``has_second_derivative`` is the weaker property the
    Hessian needs: sigma'' exists as a function (no Dirac mass).
    """

    name: str
    expr: sp.Expr
    description: str = ""
    smooth: bool = True

    @functools.cached_property
    def d1(self) -> sp.Expr:
        return sp.diff(self.expr, X)

    @functools.cached_property
    def d2(self) -> sp.Expr:
        return sp.diff(self.expr, X, 2)

    @property
    def has_second_derivative(self) -> bool:
        return not _has_singular_part(self.d2)

    def derivative(self, order: int) -> sp.Expr:
        """sigma^(order); refuses a second derivative with a Dirac part."""
        if order == 0:
            return self.expr
        if order == 1:
            return self.d1
        if order == 2:
            if not self.has_second_derivative:
                raise NotDifferentiableError(
                    f"activation {self.name!r} has no classical second derivative "
                    f"(sigma'' = {self.d2}); it is needed here, choose a C^2 activation")
            return self.d2
        raise ValueError("order must be 0, 1 or 2")

    def numpy(self, order: int = 0):
        return lambdify_numpy([X], self.derivative(order))

    def mpmath(self, order: int = 0):
        return lambdify_mpmath([X], self.derivative(order))


def _has_singular_part(expr: sp.Expr) -> bool:
    """True when ``expr`` (a derivative) carries a Dirac mass that does not vanish.

    A term c(x) DiracDelta(u(x)) is null when c vanishes at every real root of
    u (e.g. x*DiracDelta(x) in the second derivative of x*|x|).
    """
    if expr.has(sp.Derivative) or expr.has(sp.Subs):
        return True
    for term in sp.Add.make_args(sp.expand(expr)):
        deltas = term.atoms(sp.DiracDelta)
        if not deltas:
            continue
        if len(deltas) > 1 or any(len(d.args) > 1 for d in deltas):
            return True
        delta = next(iter(deltas))
        coeff = sp.simplify(term / delta)
        try:
            roots = sp.solve(delta.args[0], X)
        except NotImplementedError:
            return True
        if coeff.has(sp.DiracDelta) or any(sp.simplify(coeff.subs(X, r)) != 0 for r in roots):
            return True
    return False


def _is_c2(expr: sp.Expr) -> bool:
    """C^2 iff sigma'' has no Dirac part and no jump (sign/Heaviside/Piecewise)."""
    d2 = sp.diff(expr, X, 2)
    # the cheap structural test first: the Dirac analysis expands and simplifies, which can take
    # minutes on nested non-smooth expressions that the structural test already refuses
    if (d2.has(sp.sign) or d2.has(sp.Heaviside) or d2.has(sp.Piecewise)
            or d2.has(sp.Max) or d2.has(sp.Min) or d2.has(sp.Abs)):
        return False
    return not _has_singular_part(d2)


def activation_names() -> list[str]:
    return list(_load("activations"))


def _lookup(kind: str, spec, symbols: str, hint: str):
    """(stripped spec, catalogue entry or None).  A bare identifier that is not
    a catalogue name nor one of the allowed ``symbols`` (a regex) is an
    unknown name: the error lists the catalogue."""
    table = _load(kind)
    what = kind[:-1]
    if not isinstance(spec, str) or not spec.strip():
        raise CatalogError(f"{what} must be a catalogue name or {hint}")
    spec = spec.strip()
    if spec in table:
        return spec, table[spec]
    if _IDENT.match(spec) and not re.fullmatch(symbols, spec):
        raise CatalogError(f"unknown {what} {spec!r}; catalogue names: {', '.join(table)} (or give {hint})")
    return spec, None


def get_activation(spec: str) -> Activation:
    """Catalogue name or whitelisted expression in ``x`` -> :class:`Activation`."""
    spec, entry = _lookup("activations", spec, r"x", "an expression in x")
    if entry is not None:
        expr = parse_expression(entry["expr"], ["x"])
        return Activation(spec, expr, entry.get("description", ""), bool(entry.get("smooth", True)))
    expr = parse_expression(spec, ["x"])
    if not expr.has(X):
        raise ExpressionError(f"activation {spec!r} does not depend on x")
    _check_real(expr, [X], "activation", spec)
    return Activation(spec, expr, "user expression", _is_c2(expr))


# --- links ------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """A link y = h(g, eps) with g = (z1..zk) (or z for k = 1) and noise eps.

    ``latent`` are the k latent symbols in order; ``noise`` is ``eps`` or None.
    ``discrete`` is True when y takes finitely many values (a sign or
    Heaviside of a function of the latent variables).
    """

    name: str
    expr: sp.Expr
    latent: tuple = field(default_factory=tuple)
    noise: sp.Symbol | None = None
    description: str = ""

    @property
    def k(self) -> int:
        return len(self.latent)

    @property
    def variables(self) -> tuple:
        """All Gaussian variables of the link: latent then noise."""
        return self.latent + ((self.noise,) if self.noise is not None else ())

    @property
    def discrete(self) -> bool:
        return isinstance(self.expr, (sp.sign, sp.Heaviside))

    def numpy(self):
        return lambdify_numpy(list(self.variables), self.expr)


def _check_real(expr, symbols, what: str, text: str):
    """Refuse expressions that are not finite and real at Gaussian inputs: 256 standard Gaussian points and
    256 at scale 3 (reaching |x| ~ 9, far past where the Gaussian mass is negligible), with no
    exception allowed, so that log(z), sqrt(x) or sqrt(x + 3) (complex below -3) are refused up front.
    Isolated singular points (1/z at z = 0) have measure zero and are not hit."""
    f = sp.lambdify(list(symbols), expr, modules=_NUMPY_MODULES)
    rng = np.random.default_rng(12345)
    pts = np.vstack([rng.standard_normal((256, len(symbols))), 3 * rng.standard_normal((256, len(symbols)))])
    with np.errstate(all="ignore"):
        vals = np.asarray(f(*pts.T), dtype=complex)
    vals = np.broadcast_to(vals, (pts.shape[0],))
    bad = ~np.isfinite(vals) | (np.abs(vals.imag) > 0)
    if bad.any():
        i = int(np.argmax(bad))
        at = ", ".join(f"{s} = {v:.3g}" for s, v in zip(symbols, pts[i]))
        raise ExpressionError(f"{what} {text!r} is not real and finite for Gaussian inputs (e.g. at {at})")


def _latent_names(k: int) -> list[str]:
    return ["z"] if k == 1 else [f"z{i}" for i in range(1, k + 1)]


def link_names() -> list[str]:
    return list(_load("links"))


def _make_link(name: str, text: str, description: str, *, check: bool = True) -> Link:
    """The link of expression ``text``; ``check``: refuse it unless real and finite at Gaussian inputs
    (catalogue entries skip the check at lookup: tests/test_catalog.py runs it on each of them)."""
    allowed = ["z", "eps"] + [f"z{i}" for i in range(1, MAX_LATENT + 1)]
    expr = parse_expression(text, allowed)
    names = {s.name for s in expr.free_symbols}
    latent = sorted(n for n in names if n != "eps")
    if not latent:
        raise ExpressionError(f"link {text!r} does not depend on any latent variable z or z1..zk")
    if "z" in latent and len(latent) > 1:
        raise ExpressionError(f"link {text!r} mixes z with z1..zk; use z for k = 1, z1..zk otherwise")
    if latent != ["z"]:
        k = max(int(n[1:]) for n in latent)
        if latent != _latent_names(k) and not (k == 1 and latent == ["z1"]):
            raise ExpressionError(
                f"link {text!r} uses {', '.join(latent)}; latent variables must be z1..z{k} without gaps")
        names_k = _latent_names(k) if k > 1 else ["z1"]
    else:
        names_k = ["z"]
    latent_syms = tuple(sp.Symbol(n, real=True) for n in names_k)
    noise = EPS if "eps" in names else None
    link = Link(name, expr, latent_syms, noise, description)
    if check:
        _check_real(expr, link.variables, "link", text)
    return link


def get_link(spec: str) -> Link:
    """Catalogue name or whitelisted expression in z / z1..zk / eps -> :class:`Link`."""
    spec, entry = _lookup("links", spec, r"z\d?|eps", "an expression in z, z1..zk and eps")
    if entry is not None:
        return _make_link(spec, entry["expr"], entry.get("description", ""), check=False)
    return _make_link(spec, spec, "user expression")

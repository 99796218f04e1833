"""Conditional moments of a link on its level sets (float64 engine, any k <= 3).

For a link y = h(V) of standard Gaussian variables V (latent z's and the
noise eps), the thresholds of THEORY.md section 1 need Gram functionals

    Q_ab = E_{y, g_E}[ E[A_a | y, g_E] E[A_b | y, g_E] ]       (p x p)                  (1)
    L_a  = E[ y A_a ]                                                                   (2)

for a list of functions A_1..A_p of V, optionally conditioning also on a set
of "given" variables g_E (the easy coordinates).  Method (documented in the
README, "How delta_alg is computed"):

* Continuous y: choose a *pivot* variable p among the non-given variables
  for which SymPy solves h = y explicitly, p = r_b(y, rest), with branches
  b.  By the change of variables (p, rest) -> (y, rest),
      N_A(y, e) := E[A 1{h in dy}]/dy = sum_b int d(rest) phi(rest)
                   phi(r_b) |d r_b / d y| A(r_b, e, rest),
  and E[A | y, e] = N_A / N_1.  The rest-integral (0, 1 or 2 variables) uses
  double-exponential rules (:mod:`thresholds.quadrature`) split at 0 and, in
  one variable, at the points where a branch stops being real or crosses 0
  (located on a grid and refined by bisection).  The given variables are
  integrated the same way, and y by adaptive Gauss-Kronrod
  (``scipy.integrate.quad_vec``) on (-inf, 0) and (0, inf).
* Discrete y = sign(q(V)) or Heaviside(q(V)): the pivot integral is exact:
  between consecutive real roots of q in the pivot, A (a polynomial in the
  pivot) is integrated against phi with the incomplete Gaussian moments.
  The remaining variables use the double-exponential rules split at 0.

Error estimate: the whole computation is repeated with a finer rule (one
more double-exponential level, 100x tighter quad_vec tolerance); the error
reported is the difference plus quad_vec's own estimate plus a floor of
1e-8 relative (float64 rounding of nodes next to a singular end point).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp
from scipy import integrate, special

from .catalog import lambdify_numpy
from .errors import ConvergenceError, UnsupportedError
from .quadrature import piecewise_rule

Y = sp.Symbol("y", real=True)
INV_SQRT2PI = 1.0 / np.sqrt(2.0 * np.pi)
GRID = np.linspace(-12.0, 12.0, 2401)
REL_FLOOR = 1e-8


def _phi(t):
    return np.exp(-0.5 * t * t) * INV_SQRT2PI


@dataclass
class GramResult:
    """Q_ab = E[E[A_a|y,g_E] E[A_b|y,g_E]] and L_a = E[y A_a], with errors."""

    Q: np.ndarray
    Q_err: np.ndarray
    L: np.ndarray
    L_err: np.ndarray
    method: str
    settings: dict = field(default_factory=dict)


def _has_kinks(expr) -> bool:
    return expr.has(sp.Abs, sp.sign, sp.Heaviside, sp.Max, sp.Min, sp.Piecewise)


def _real_at_samples(expr, variables, rng) -> bool:
    """True when ``expr`` is real for some random real inputs (a usable branch)."""
    f = sp.lambdify(variables, expr, modules=["numpy"])
    for _ in range(20):
        vals = [complex(v) for v in rng.uniform(-2.0, 2.0, len(variables))]
        vals = [v + 0j for v in vals]
        try:
            out = complex(f(*vals))
        except (ZeroDivisionError, ValueError, TypeError, OverflowError):
            continue
        if np.isfinite(out) and abs(out.imag) < 1e-9 * max(1.0, abs(out.real)):
            return True
    return False


def _choose_pivot(h, candidates):
    """Pick the variable whose inverse branches are simplest: fewest real
    branches, fewest radicals.  Returns (pivot, [(branch, |dbranch/dy|)])."""
    rng = np.random.default_rng(0)
    best = None
    for var in candidates:
        if not h.has(var):
            continue
        try:
            sols = sp.solve(sp.Eq(h, Y), var)
        except (NotImplementedError, ValueError, TypeError):
            continue
        if not sols:
            continue
        others = sorted((h.free_symbols | {Y}) - {var}, key=lambda s: s.name)
        branches = [s for s in sols if _real_at_samples(s, others, rng)]
        if not branches:
            continue
        radicals = sum(len([a for a in b.atoms(sp.Pow) if not a.exp.is_Integer]) for b in branches)
        score = (len(branches), radicals)
        if best is None or score < best[0]:
            best = (score, var, branches)
    if best is None:
        raise UnsupportedError(
            f"cannot invert the link {h} in any of its variables; the level-set engine needs "
            "a variable in which h = y can be solved explicitly")
    _, var, branches = best
    return var, [(b, sp.Abs(sp.diff(b, Y))) for b in branches]


def _bisect(pred, lo, hi, iters: int = 48):
    """Vectorized bisection of the points where the boolean ``pred`` flips in [lo, hi]."""
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    if lo.size == 0:
        return lo
    p_lo = pred(lo)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        same = pred(mid) == p_lo
        lo = np.where(same, mid, lo)
        hi = np.where(same, hi, mid)
    return 0.5 * (lo + hi)


class LevelSetGram:
    """Q and L of the module docstring for the link ``h`` of ``variables``.

    ``given``: variables conditioned on (integrated outside the ratio);
    ``funcs``: the functions A_a (SymPy expressions in ``variables``).
    """

    def __init__(self, h, variables, funcs, given=()):
        self.h = h
        self.variables = tuple(variables)
        self.given = tuple(given)
        self.funcs = list(funcs)
        self.p = len(self.funcs)
        free = [v for v in self.variables if v not in self.given]
        coeff, core = h.as_coeff_Mul()
        self.discrete = isinstance(core, (sp.sign, sp.Heaviside))
        self._scale = float(coeff) if self.discrete else 1.0
        if self.discrete:
            self.h = h = core  # y = coeff * core: conditioning on core is conditioning on y
        if self.discrete:
            self._setup_discrete(free)
        else:
            if _has_kinks(h):
                raise UnsupportedError(
                    f"link {h}: kinks (abs, sign, max, ...) inside a multi-index or noisy link are not "
                    "supported; use a smooth link, or sign/Heaviside of a smooth function")
            self._setup_continuous(free)
        if len(self.rest) > 2:
            raise UnsupportedError(f"link {h}: too many latent variables for the conditional moments given y (one "
                                   "is solved for on the level set y = const and at most two others are integrated "
                                   f"over; this link leaves {len(self.rest)})")
        if len(self.given) > 2:
            raise UnsupportedError(f"link {h}: at most 2 easy directions (variables the moments are conditioned on) "
                                   "are supported")

    # --- continuous -------------------------------------------------------
    def _setup_continuous(self, free):
        # noise first: links are usually invertible in additive noise
        order = sorted(free, key=lambda s: (s.name != "eps", s.name))
        self.pivot, branches = _choose_pivot(self.h, order)
        self.rest = tuple(v for v in free if v != self.pivot)
        args = [Y, *self.given, *self.rest]
        self._branch_fns = [(lambdify_numpy(args, r), lambdify_numpy(args, j)) for r, j in branches]
        self._func_fns = [lambdify_numpy(list(self.variables), f) for f in self.funcs]
        self.description = (f"pivot {self.pivot} with {len(branches)} inverse branch(es), "
                            f"rest ({', '.join(map(str, self.rest)) or 'none'})")

    def _weights_continuous(self, y, given_vals, rest_vals):
        """Per-node integrand vectors (p+1, n): [1, A_1..A_p] * phi(r) |r'| summed over branches."""
        n = rest_vals[0].size if rest_vals else np.size(given_vals[0]) if given_vals else 1
        out = np.zeros((self.p + 1, n))
        with np.errstate(all="ignore"):
            for r_fn, j_fn in self._branch_fns:
                r = r_fn(y, *given_vals, *rest_vals)
                jac = j_fn(y, *given_vals, *rest_vals)
                w = _phi(r) * jac
                ok = np.isfinite(w) & np.isfinite(r)
                if not ok.any():
                    continue
                point = self._assemble(r, given_vals, rest_vals)
                out[0] += np.where(ok, w, 0.0)
                for a, f in enumerate(self._func_fns, start=1):
                    val = f(*point)
                    out[a] += np.where(ok & np.isfinite(val), w * val, 0.0)
        return out

    def _assemble(self, pivot_vals, given_vals, rest_vals):
        lookup = {self.pivot: pivot_vals}
        lookup.update(zip(self.given, given_vals))
        lookup.update(zip(self.rest, rest_vals))
        shape = np.shape(pivot_vals)
        return [np.broadcast_to(lookup[v], shape) for v in self.variables]

    def _scan_breakpoints(self, args_of, zero_crossings: bool):
        """Points along one scanned variable s where a branch stops being real (validity
        edges) and, with ``zero_crossings``, where it crosses 0; ``args_of(s)`` gives the
        branch arguments.  Located on GRID and refined by bisection; 0 is always included."""
        pts = [np.array([0.0])]
        with np.errstate(all="ignore"):
            for r_fn, j_fn in self._branch_fns:
                def valid(s, r_fn=r_fn, j_fn=j_fn):
                    args = args_of(s)
                    return np.isfinite(r_fn(*args)) & np.isfinite(j_fn(*args))

                def positive(s, r_fn=r_fn):
                    return r_fn(*args_of(s)) > 0

                ok = valid(GRID)
                idx = np.nonzero(ok[1:] != ok[:-1])[0]
                pts.append(_bisect(valid, GRID[idx], GRID[idx + 1]))
                if zero_crossings:
                    pos = positive(GRID) & ok
                    idx = np.nonzero((pos[1:] != pos[:-1]) & ok[1:] & ok[:-1])[0]
                    pts.append(_bisect(positive, GRID[idx], GRID[idx + 1]))
        return np.unique(np.concatenate(pts))

    def _breakpoints_1d(self, y, given_vals):
        """Validity edges and zero crossings of each branch along the single rest variable."""
        return self._scan_breakpoints(lambda s: (y, *given_vals, s), zero_crossings=True)

    def _N_continuous(self, y, given_vals, level):
        nr = len(self.rest)
        if nr == 0:
            return self._weights_continuous(y, [np.atleast_1d(g) for g in given_vals], [])
        if nr == 1:
            x, w = piecewise_rule(self._breakpoints_1d(y, given_vals), level)
            vals = self._weights_continuous(y, [np.full_like(x, g) for g in given_vals], [x])
            return (vals * (w * _phi(x))).sum(axis=1, keepdims=True)
        x, w = piecewise_rule([0.0], max(level - 1, 3))
        xa, xb = np.meshgrid(x, x, indexing="ij")
        wab = np.outer(w * _phi(x), w * _phi(x)).ravel()
        vals = self._weights_continuous(y, [np.full(xa.size, g) for g in given_vals],
                                        [xa.ravel(), xb.ravel()])
        return (vals * wab).sum(axis=1, keepdims=True)

    # --- discrete ---------------------------------------------------------
    def _setup_discrete(self, free):
        q = self.h.args[0]
        self.values = [-1.0, 1.0] if isinstance(self.h, sp.sign) else [0.0, 1.0]
        self._value_of = (np.sign if isinstance(self.h, sp.sign)
                          else (lambda t: (t > 0).astype(float)))
        best = None
        for var in sorted(free, key=lambda s: s.name):
            if not q.has(var):
                continue
            polys = [sp.expand(f) for f in self.funcs]
            if not all(f.is_polynomial(var) for f in polys):
                continue
            try:
                roots = sp.solve(q, var)
            except (NotImplementedError, ValueError, TypeError):
                continue
            if best is None or len(roots) < len(best[1]):
                best = (var, roots, polys)
        if best is None:
            raise UnsupportedError(
                f"cannot solve sign argument {q} = 0 in a variable in which the moments are polynomial")
        self.pivot, roots, polys = best
        self.rest = tuple(v for v in free if v != self.pivot)
        args = [*self.given, *self.rest]
        self._q_fn = lambdify_numpy([self.pivot, *args], q)
        self._root_fns = [lambdify_numpy(args, r) for r in roots]
        self._coef_fns = []
        for f in [sp.Integer(1)] + polys:
            poly = sp.Poly(f, self.pivot)
            self._coef_fns.append([(m, lambdify_numpy(args, c)) for (m,), c in poly.terms()])
        self._max_deg = max(m for fns in self._coef_fns for m, _ in fns)
        self.description = (f"discrete link, exact pivot integral in {self.pivot}, "
                            f"rest ({', '.join(map(str, self.rest)) or 'none'})")

    def _N_discrete_nodes(self, args_vals, n):
        """(len(values), p+1, n): E over the pivot of [1, A] 1{y = v} at each node."""
        with np.errstate(all="ignore"):
            roots = np.array([np.broadcast_to(np.real_if_close(f(*args_vals)), (n,))
                              for f in self._root_fns], dtype=float).reshape(-1, n)
        roots = np.where(np.isfinite(roots), roots, np.inf)
        edges = np.vstack([np.full((1, n), -np.inf), np.sort(roots, axis=0), np.full((1, n), np.inf)])
        moments = [special.ndtr(edges)]  # M_0 at edges as CDF values; differences below
        pdf = np.where(np.isfinite(edges), _phi(np.where(np.isfinite(edges), edges, 0.0)), 0.0)
        # partial moments P_m(x) = int_{-inf}^x t^m phi: P_0 = Phi, P_1 = -phi, P_m = (m-1)P_{m-2} - x^{m-1} phi
        partial = [special.ndtr(edges), -pdf]
        for m in range(2, self._max_deg + 1):
            xpow = np.where(np.isfinite(edges), np.where(np.isfinite(edges), edges, 0.0) ** (m - 1), 0.0)
            partial.append((m - 1) * partial[m - 2] - xpow * pdf)
        del moments
        lo, hi = edges[:-1], edges[1:]
        mid = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi),
                       np.where(np.isfinite(lo), lo + 1.0, np.where(np.isfinite(hi), hi - 1.0, 0.0)))
        with np.errstate(all="ignore"):
            val = self._value_of(self._q_fn(mid, *[np.broadcast_to(a, mid.shape) for a in args_vals]))
        out = np.zeros((len(self.values), self.p + 1, n))
        for a, fns in enumerate(self._coef_fns):
            seg = np.zeros_like(lo)
            for m, cf in fns:
                c = np.broadcast_to(cf(*args_vals), (n,))
                seg = seg + c * (partial[m][1:] - partial[m][:-1])
            seg = np.where(hi > lo, seg, 0.0)
            for iv, v in enumerate(self.values):
                out[iv, a] = np.where(val == v, seg, 0.0).sum(axis=0)
        return out

    def _N_discrete(self, given_vals, level):
        nr = len(self.rest)
        if nr == 0:
            g = [np.atleast_1d(v) for v in given_vals]
            return self._N_discrete_nodes(g, g[0].size if g else 1)
        x, w = piecewise_rule([0.0], level if nr == 1 else max(level - 1, 3))
        if nr == 1:
            nodes, wts = [x], w * _phi(x)
        else:
            xa, xb = np.meshgrid(x, x, indexing="ij")
            nodes, wts = [xa.ravel(), xb.ravel()], np.outer(w * _phi(x), w * _phi(x)).ravel()
        n = wts.size
        vals = self._N_discrete_nodes([np.full(n, g) for g in given_vals] + nodes, n)
        return (vals * wts).sum(axis=2, keepdims=True)

    # --- assembly ---------------------------------------------------------
    @staticmethod
    def _gram_terms(N):
        """N: (p+1, n) columns -> (Q contribution (n, p, p), N_A (p, n)) with N_1 = N[0]."""
        n1 = N[0]
        safe = np.where(n1 > 0, n1, 1.0)
        na = N[1:]
        q = np.einsum("an,bn->nab", na, na) / safe[:, None, None]
        q[n1 <= 0] = 0.0
        return q, na

    def _given_rule(self, level):
        ng = len(self.given)
        if ng == 0:
            return [()], np.ones(1)
        x, w = piecewise_rule([0.0], level if ng == 1 else max(level - 1, 3))
        if ng == 1:
            return [(xi,) for xi in x], w * _phi(x)
        xa, xb = np.meshgrid(x, x, indexing="ij")
        return list(zip(xa.ravel(), xb.ravel())), np.outer(w * _phi(x), w * _phi(x)).ravel()

    def _given_rule_at(self, y, level):
        """Rule over one given variable with breakpoints where the pointwise integrand changes."""
        if len(self.given) != 1 or self.rest:
            return self._given_rule(level)
        pts = self._scan_breakpoints(lambda s: (y, s), zero_crossings=False)
        x, w = piecewise_rule(pts, level)
        return [(xi,) for xi in x], w * _phi(x)

    def _at_y(self, y, level):
        """Integrand of the y-integral: flattened [Q (p*p), y N_A (p)]."""
        if not self.given:
            N = self._N_continuous(y, (), level)
        elif not self.rest:
            nodes, wts = self._given_rule_at(y, level)
            given_vals = [np.array([nd[i] for nd in nodes]) for i in range(len(self.given))]
            N = self._weights_continuous(y, given_vals, [])
            q, na = self._gram_terms(N)
            return np.concatenate([(q * wts[:, None, None]).sum(axis=0).ravel(), y * (na * wts).sum(axis=1)])
        else:
            nodes, wts = self._given_rule(level)
            N = np.hstack([self._N_continuous(y, nd, level) for nd in nodes]) * wts
            q, na = self._gram_terms(N / wts)
            return np.concatenate([(q * wts[:, None, None]).sum(axis=0).ravel(), y * (na * wts).sum(axis=1)])
        q, na = self._gram_terms(N)
        return np.concatenate([q.sum(axis=0).ravel(), y * na.sum(axis=1)])

    def _compute(self, level, epsrel):
        p = self.p
        if self.discrete:
            nodes, wts = self._given_rule(level)
            Q = np.zeros((p, p))
            L = np.zeros(p)
            for nd, wt in zip(nodes, wts):
                N = self._N_discrete(nd, level)  # (values, p+1, 1)
                for iv, v in enumerate(self.values):
                    q, na = self._gram_terms(N[iv])
                    Q += wt * q.sum(axis=0)
                    L += wt * self._scale * v * na.sum(axis=1)
            return Q, L, np.zeros(p * p + p)
        total = np.zeros(p * p + p)
        err = np.zeros(p * p + p)
        for a, b in ((-np.inf, 0.0), (0.0, np.inf)):
            val, e = integrate.quad_vec(lambda t: self._at_y(t, level), a, b,
                                        epsabs=1e-13, epsrel=epsrel, limit=400)
            total += val
            err += e
        return total[: p * p].reshape(p, p), total[p * p:], err

    def y_nodes(self, *, level: int = 5, extra_cuts=()):
        """Nodes of the law of y: (y, probability, N (n, p+1)) with N = [N_1, N_A1, ...]
        (no given variables).  Continuous y: double-exponential nodes on
        (-inf, 0) and (0, inf); discrete y: its values."""
        if self.given:
            raise UnsupportedError("y-nodes are defined without conditioning variables")
        if self.discrete:
            N = self._N_discrete((), level)[:, :, 0]
            keep = N[:, 0] > 0
            return self._scale * np.array(self.values)[keep], N[keep, 0] / N[keep, 0].sum(), N[keep]
        y, w = piecewise_rule([0.0, *extra_cuts], level)
        N = np.array([self._N_continuous(t, (), level)[:, 0] for t in y])
        p = w * N[:, 0]
        keep = p > 0
        total = p[keep].sum()
        if abs(total - 1) > 1e-6:
            raise ConvergenceError(f"the law of y integrates to {total:.8g} instead of 1")
        return y[keep], p[keep] / total, N[keep]

    def run(self, *, level: int = 5, epsrel: float = 1e-8) -> GramResult:
        Q1, L1, e1 = self._compute(level, epsrel * 100)
        Q2, L2, e2 = self._compute(level + 1, epsrel)
        p = self.p
        scale_q = np.sqrt(np.abs(np.outer(np.diag(Q2), np.diag(Q2)))) + np.abs(Q2)
        Q_err = np.abs(Q2 - Q1) + e2[: p * p].reshape(p, p) + REL_FLOOR * scale_q + 1e-14
        L_err = np.abs(L2 - L1) + e2[p * p:] + REL_FLOOR * np.abs(L2) + 1e-14
        if not (np.all(np.isfinite(Q2)) and np.all(np.isfinite(L2))):
            raise ConvergenceError(f"level-set integrals of {self.h} are not finite")
        return GramResult(Q2, Q_err, L2, L_err, self.description,
                          {"level": level + 1, "epsrel": epsrel, "engine": "levelset-float64"})

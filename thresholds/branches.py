"""Single-index links without noise: conditional moments through inverse branches (mpmath).

For y = h(z), z ~ N(0, 1), the real line is cut into *segments* on which h
is smooth and strictly monotone (cuts at the kinks of a piecewise link and at
the zeros of h'), plus *atoms*: pieces where h is constant (y = max(z, 0)
puts mass 1/2 at y = 0; sign(z) is all atoms).  For y inside the image of
several segments, the preimages z_j(y) are found by bracketed root finding
(mpmath's Anderson-Bjorck solver) at the working precision, and

    N_A(y) = E[A(z) 1{h(z) in dy}] / dy = sum_j A(z_j) phi(z_j) / |h'(z_j)|,             (1)
    E[A | y] = N_A(y) / N_1(y).                                                         (2)

The y-axis is cut at the images of all segment ends (where the set of
branches changes and 1/|h'| may blow up); each cell is integrated by
tanh-sinh quadrature, which converges at such end-point singularities.
Atoms contribute P(atom) E[A|atom] E[B|atom], with the moments on intervals
exact (incomplete Gaussian moments, :func:`thresholds.gaussian.incomplete_moment`).

Precision is contextual: everything runs inside ``mpmath.workdps``; the
error estimate is the change between ``dps`` and ``dps + 10`` plus mpmath's
own quadrature estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mpmath
import numpy as np
import sympy as sp
from scipy import optimize

from .catalog import lambdify_mpmath, lambdify_numpy
from .errors import ConvergenceError, UnsupportedError
from .gaussian import intervals_of, incomplete_moment

SCAN = 40.0  # |z| beyond which the Gaussian weight (< 1e-347) is neglected


@dataclass
class Segment:
    """h restricted to (a, b), smooth and strictly monotone there."""

    expr: sp.Expr
    a: float
    b: float
    fn: object = None
    dfn: object = None
    fn_float: object = None
    a_mp: object = None
    b_mp: object = None
    y_lo: object = None
    y_hi: object = None


class _CriticalPoint:
    """A zero of h' known to float accuracy, refined by Newton at the working precision."""

    def __init__(self, expr, z, guess):
        self.guess = guess
        self.d1 = lambdify_mpmath([z], sp.diff(expr, z))
        self.d2 = lambdify_mpmath([z], sp.diff(expr, z, 2))

    def value(self):
        return mpmath.findroot(self.d1, mpmath.mpf(self.guess), df=self.d2, solver="newton")

    def __float__(self):
        return float(self.guess)


def _to_mp(end):
    if isinstance(end, _CriticalPoint):
        return end.value()
    if end == sp.oo:
        return mpmath.inf
    if end == -sp.oo:
        return -mpmath.inf
    return mpmath.mpf(sp.N(end, mpmath.mp.dps + 5))


@dataclass
class Atom:
    """h constant (= value) on a union of intervals of z."""

    value: sp.Expr
    intervals: list = field(default_factory=list)


def _critical_points(expr, z, a, b):
    """Zeros of h' inside (a, b) (exact for polynomials, else a grid scan refined by mpmath)."""
    d = sp.diff(expr, z)
    lo, hi = max(float(a), -SCAN), min(float(b), SCAN)
    if d.is_polynomial(z):
        poly = sp.Poly(d, z)
        if poly.degree() <= 0:
            return []
        return sorted(float(r) for r in sp.Poly(d, z).real_roots() if lo < float(r) < hi)
    grid = np.linspace(lo, hi, 20001)[1:-1]
    with np.errstate(all="ignore"):
        vals = lambdify_numpy([z], d)(grid)
    sign = np.sign(vals)
    idx = np.nonzero(sign[1:] * sign[:-1] < 0)[0]
    # h' exactly 0 at a grid point with a sign change across it (z = 0 for an even link is on the grid):
    # the product test above sees 0 on both sides of such a point
    on_grid = [i for i in np.nonzero(sign[1:-1] == 0)[0] + 1 if sign[i - 1] * sign[i + 1] < 0]
    dmp = lambdify_mpmath([z], d)
    roots = [float(grid[i]) for i in on_grid]
    for i in idx:
        if not (np.isfinite(vals[i]) and np.isfinite(vals[i + 1])) or \
                min(abs(vals[i]), abs(vals[i + 1])) > 1e3 * max(1.0, float(np.nanmedian(np.abs(vals)))):
            # h' changes sign through infinity: a pole of h, not a critical point
            raise UnsupportedError(f"link {expr} has a pole near z = {grid[i]:.4g}: the inverse-branch engine "
                                   "needs a link that is finite on the real line")
        roots.append(float(mpmath.findroot(dmp, (grid[i], grid[i + 1]), solver="anderson")))
    return sorted(roots)


def _refuse_poles(expr, z, a, b):
    """UnsupportedError when h has a singularity inside (a, b) (1/z, 1/(z - 1), tan z): the segments of
    this engine are intervals on which h is finite and monotone, and a pole would join two of them."""
    from sympy.calculus.util import singularities
    try:
        poles = singularities(expr, z, sp.Interval.open(a, b))
    except (NotImplementedError, ValueError, TypeError):
        return
    if poles == sp.S.EmptySet:
        return
    where = ("at z = " + ", ".join(f"{float(p):.4g}" for p in list(poles)[:3]) if isinstance(poles, sp.FiniteSet)
             else "at infinitely many points")
    raise UnsupportedError(f"link {expr} is singular {where}: the inverse-branch engine needs a link that is "
                           "finite on the real line")


class InverseBranches:
    """Segments and atoms of a noiseless single-index link h(z)."""

    def __init__(self, h, z):
        self.h = h
        self.z = z
        pieces = intervals_of(h, z) if h.has(sp.Abs, sp.sign, sp.Heaviside, sp.Max, sp.Min,
                                              sp.Piecewise) else [(h, -sp.oo, sp.oo)]
        if pieces is None:
            raise UnsupportedError(f"cannot split the link {h} into intervals of z")
        self.segments: list[Segment] = []
        atoms: dict = {}
        for expr, a, b in pieces:
            expr = sp.simplify(expr)
            if not expr.has(z):
                atoms.setdefault(expr, Atom(expr)).intervals.append((a, b))
                continue
            _refuse_poles(expr, z, a, b)
            # critical points stay symbolic (exact roots) or are refined at the working precision
            cuts = [a] + [_CriticalPoint(expr, z, c) for c in _critical_points(expr, z, a, b)] + [b]
            for lo, hi in zip(cuts[:-1], cuts[1:]):
                self.segments.append(Segment(expr, lo, hi))
        self.atoms = list(atoms.values())
        for seg in self.segments:
            seg.fn = lambdify_mpmath([z], seg.expr)
            seg.dfn = lambdify_mpmath([z], sp.diff(seg.expr, z))
            seg.fn_float = sp.lambdify([z], seg.expr, modules=["math", "mpmath"])

    def _end_value(self, seg, end, end_mp):
        if not isinstance(end, _CriticalPoint) and end in (sp.oo, -sp.oo):
            lim = sp.limit(seg.expr, self.z, end)
            if lim.is_extended_real and not lim.has(sp.AccumBounds):
                return _to_mp(lim)
            # no limit (an oscillating link such as cos z): the inversion is clipped to |z| <= SCAN anyway,
            # and beyond it the Gaussian weight is below 1e-347
            return seg.fn(mpmath.mpf(SCAN if end == sp.oo else -SCAN))
        return seg.fn(end_mp)

    def _prepare(self):
        for seg in self.segments:
            seg.a_mp, seg.b_mp = _to_mp(seg.a), _to_mp(seg.b)
            ya, yb = self._end_value(seg, seg.a, seg.a_mp), self._end_value(seg, seg.b, seg.b_mp)
            seg.y_lo, seg.y_hi = min(ya, yb), max(ya, yb)

    def _invert(self, seg, y):
        """z in segment with h(z) = y (None when y is outside the clipped segment, or when y is not
        resolved there: h is flat to the working precision, see ``_resolved``)."""
        lo = max(seg.a_mp, mpmath.mpf(-SCAN))
        hi = min(seg.b_mp, mpmath.mpf(SCAN))
        flo, fhi = seg.fn(lo) - y, seg.fn(hi) - y
        tol = mpmath.mpf(10) ** (-mpmath.mp.dps + 3)  # relative; Newton stalls at rounding level
        if flo == 0:
            return lo if self._resolved(seg, lo, y, tol) else None
        if fhi == 0:
            return hi if self._resolved(seg, hi, y, tol) else None
        if flo * fhi > 0:
            return None
        # float64 guess by Brent's method, then Newton at the working precision;
        # the bracketed Anderson-Bjorck solver is the fallback when Newton misbehaves
        z = self._newton_from_float(seg, y, lo, hi, tol)
        if z is None:
            z = self._bisect_then_newton(seg, y, lo, hi, flo, tol)
        return z if z is not None and self._resolved(seg, z, y, tol) else None

    @staticmethod
    def _bisect_then_newton(seg, y, lo, hi, flo, tol):
        """The root in [lo, hi] (h - y changes sign) at the working precision: bisection until the bracket
        is 1e-6 of its size, then Newton kept inside the bracket (where h is nearly flat, e.g. a link that
        saturates, the bracketed secant-type solvers stall far from the root)."""
        width = hi - lo
        for _ in range(200):
            mid = (lo + hi) / 2
            fm = seg.fn(mid) - y
            if fm == 0:
                return mid
            if (fm < 0) == (flo < 0):
                lo, flo = mid, fm
            else:
                hi = mid
            if hi - lo <= width * mpmath.mpf(10) ** -6:
                break
        z = (lo + hi) / 2
        for _ in range(40):
            d = seg.dfn(z)
            if d == 0:
                return z
            step = (seg.fn(z) - y) / d
            z_new = min(max(z - step, lo), hi)
            if abs(z_new - z) <= tol * abs(z) * mpmath.mpf(10) ** -3:
                return z_new
            z = z_new
        return z

    @staticmethod
    def _resolved(seg, z, y, tol) -> bool:
        """Whether h(z) = y pins z down at the working precision: |h'(z)| (1 + |z|) above the rounding
        level tol |y| of y (relative: mpmath numbers carry relative precision).  A link that saturates (3 tanh(z^2) -> 3) is flat to the working precision
        beyond some |z|; there every z solves h(z) = y, the branch weight phi(z)/|h'(z)| of such a z is
        meaningless (it grows like exp(3 z^2/2) for 3 tanh(z^2)), and the true preimages carry less
        Gaussian mass than the change between two precisions, which the error estimate measures."""
        return abs(seg.dfn(z)) * (1 + abs(z)) > tol * abs(y)

    @staticmethod
    def _newton_from_float(seg, y, lo, hi, tol):
        yf = float(y)
        try:
            g = lambda t: float(seg.fn_float(t)) - yf  # noqa: E731
            glo, ghi = g(float(lo)), g(float(hi))
            if glo == 0.0 or ghi == 0.0 or glo * ghi > 0:
                return None
            z = mpmath.mpf(optimize.brentq(g, float(lo), float(hi), xtol=1e-300, rtol=1e-15,
                                                  maxiter=400))
        except (OverflowError, ValueError, ZeroDivisionError, RuntimeError):
            return None
        for _ in range(12):
            d = seg.dfn(z)
            if d == 0:
                return None
            step = (seg.fn(z) - y) / d
            z -= step
            if not lo <= z <= hi:
                return None
            if abs(step) <= tol * abs(z) or step == 0:
                return z
        return None

    def gram(self, funcs, *, dps: int = 30, diagonal_only: bool = False, linear: bool = True):
        """Q_ab = E_y[E[A_a|y] E[A_b|y]] and L_a = E[y A_a] at ``dps`` digits.

        ``diagonal_only`` computes Q_aa only (off-diagonal entries are 0);
        ``linear=False`` skips L.  Returns (Q, L, Q_err, L_err) as mpmath
        matrices/lists; the errors are the dps vs dps+10 difference plus
        mpmath's quadrature estimate plus 10**-dps.
        """
        results = [self._gram_at(funcs, dps, diagonal_only, linear),
                   self._gram_at(funcs, dps + 10, diagonal_only, linear)]
        (Q1, L1, e1), (Q2, L2, e2) = results
        p = len(funcs)
        with mpmath.workdps(dps + 10):
            Q_err = mpmath.matrix(p, p)
            L_err = [abs(L2[a] - L1[a]) + e2[p * p + a] for a in range(p)]
            for a in range(p):
                for b in range(p):
                    Q_err[a, b] = abs(Q2[a, b] - Q1[a, b]) + e2[a * p + b] + mpmath.mpf(10) ** (-dps)
        return Q2, L2, Q_err, L_err

    def branch_sums(self, y, fmp):
        """[N_1(y), N_A1(y), ...]: sums over inverse branches of A(z_j) phi(z_j)/|h'(z_j)|
        (call inside ``workdps`` after :meth:`_prepare`)."""
        out = [mpmath.mpf(0)] * (len(fmp) + 1)
        for seg in self.segments:
            if not (seg.y_lo < y < seg.y_hi):
                continue
            zj = self._invert(seg, y)
            if zj is None:
                continue
            w = mpmath.npdf(zj) / abs(seg.dfn(zj))
            out[0] += w
            for a, f in enumerate(fmp, start=1):
                out[a] += f(zj) * w
        return out

    def cells(self):
        """Consecutive y-intervals on which the set of branches is fixed (inside ``workdps``)."""
        cuts = sorted({v for seg in self.segments for v in (seg.y_lo, seg.y_hi)})
        return list(zip(cuts[:-1], cuts[1:]))

    def atom_moments(self, funcs, dps):
        """[(value, mass, [E[A 1{atom}] for A in funcs])] with exact interval moments."""
        out = []
        for atom in self.atoms:
            mass = mpmath.mpf(sp.N(sum(incomplete_moment(0, a, b) for a, b in atom.intervals), dps + 5))
            if mass == 0:
                continue
            moms = []
            for f in funcs:
                fexp = sp.expand(f)
                if not fexp.is_polynomial(self.z):
                    raise UnsupportedError("atom moments need polynomial functions of z")
                tot = sum(c * incomplete_moment(m, a, b) for (m,), c in sp.Poly(fexp, self.z).terms()
                          for a, b in atom.intervals)
                moms.append(mpmath.mpf(sp.N(tot, dps + 5)))
            out.append((mpmath.mpf(sp.N(atom.value, dps + 5)), mass, moms))
        return out

    def y_nodes(self, funcs, *, level: int = 6, dps: int = 20, extra_cuts=()):
        """Quadrature nodes of the law of y with the conditional sums at each node.

        Returns (y, weight, N) lists: for continuous cells, double-exponential
        nodes (:func:`thresholds.quadrature.mp_rule`) with weight = rule weight
        and N = [N_1, N_A1, ...] (so E[F(y) A] ~ sum weight * F(y) * N_A);
        infinite cells are cut where the Gaussian weight of every branch is
        below 10**-(dps+5); cells are also cut at ``extra_cuts`` (kinks of a
        function of y to be integrated).  Atoms come last with weight 1 and N = [mass, moments].
        """
        from .quadrature import mp_rule
        with mpmath.workdps(dps):
            self._prepare()
            fmp = [lambdify_mpmath([self.z], f) for f in funcs]
            z_far = mpmath.sqrt(2 * (dps + 5) * mpmath.log(10)) + 1
            ys, ws, Ns = [], [], []
            cells = []
            for lo, hi in self.cells():
                lo, hi = self._finite_end(lo, z_far), self._finite_end(hi, z_far)
                inner = sorted(mpmath.mpf(c) for c in extra_cuts if lo < c < hi)
                pts = [lo] + inner + [hi]
                cells += [(a, b) for a, b in zip(pts[:-1], pts[1:]) if a < b]
            for lo, hi in cells:
                for y, w in zip(*mp_rule(lo, hi, level)):
                    n = self.branch_sums(y, fmp)
                    if n[0] == 0:
                        continue
                    ys.append(y)
                    ws.append(w)
                    Ns.append(n)
            for value, mass, moms in self.atom_moments(funcs, dps):
                ys.append(value)
                ws.append(mpmath.mpf(1))
                Ns.append([mass] + moms)
            return ys, ws, Ns

    def _finite_end(self, end, z_far):
        """Replace an infinite y-end by the furthest value of h reached with |z| <= z_far."""
        if mpmath.isfinite(end):
            return end
        vals = []
        for seg in self.segments:
            for zz in (max(seg.a_mp, -z_far), min(seg.b_mp, z_far)):
                if mpmath.isfinite(zz):
                    vals.append(seg.fn(zz))
        return max(vals) if end > 0 else min(vals)

    def _gram_at(self, funcs, dps, diagonal_only=False, linear=True):
        p = len(funcs)
        with mpmath.workdps(dps):
            self._prepare()
            fmp = [lambdify_mpmath([self.z], f) for f in funcs]
            cache: dict = {}

            def N_at(y):
                if y not in cache:
                    cache[y] = self.branch_sums(y, fmp)
                return cache[y]

            Q = mpmath.matrix(p, p)
            L = [mpmath.mpf(0)] * p
            err = [mpmath.mpf(0)] * (p * p + p)

            def term(a, b):
                def f(y):
                    n = N_at(y)
                    if n[0] == 0:
                        return mpmath.mpf(0)
                    return n[a + 1] * n[b + 1] / n[0]
                return f

            def lin(a):
                def f(y):
                    return y * N_at(y)[a + 1]
                return f

            for lo, hi in self.cells():
                for a in range(p):
                    for b in ([a] if diagonal_only else range(a, p)):
                        v, e = mpmath.quad(term(a, b), [lo, hi], error=True)
                        Q[a, b] += v
                        err[a * p + b] += e
                    if not linear:
                        continue
                    v, e = mpmath.quad(lin(a), [lo, hi], error=True)
                    L[a] += v
                    err[p * p + a] += e
            for a in range(p):
                for b in range(a):
                    Q[a, b] = Q[b, a]
                    err[a * p + b] = err[b * p + a]
            for value, mass, moms in self.atom_moments(funcs, dps):
                for a in range(p):
                    L[a] += value * moms[a] if linear else 0
                    for b in ([a] if diagonal_only else range(p)):
                        Q[a, b] += moms[a] * moms[b] / mass
            for a in range(p):
                if not mpmath.isfinite(L[a]) or any(not mpmath.isfinite(Q[a, b]) for b in range(p)):
                    raise ConvergenceError(f"conditional moments of {self.h} are not finite")
            return Q, L, err

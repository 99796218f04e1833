"""Targets y = h(g, eps): labels of latent samples, DMFT target paths and exact moments of y.

Conventions: g in R^k is the vector of latent coordinates g = Theta_*^T x (standard Gaussian, the
first k axes of x in the simulator), eps ~ N(0, 1) independent of g, delta = n/d.

    y_i = h(g_i, eps_i),  eps_i drawn after g (one N(0, 1) per sample)          (1)
    E[y], E[y^2]        (exact: SymPy, mpmath quadrature, or the level-set engine)   (2)

Every sampler of the project (the DMFT paths, the finite-d GD data, the spectral probes) labels its
latent samples through (1), so that the random stream of the noise is the same everywhere.
"""

from __future__ import annotations

import functools

import numpy as np

from .catalog import Link


def labels(link: Link, g, rng) -> np.ndarray:
    """Eq. (1): y = h(g, eps) for latent samples ``g`` (n x k, float), eps drawn from ``rng`` when
    the link is noisy."""
    g = np.asarray(g)
    args = [g[:, i] for i in range(link.k)]
    if link.noise is not None:
        args.append(rng.standard_normal(g.shape[0]))
    return link.numpy()(*args)


def draw_targets(link: Link, n: int, g_nodes: int, rng):
    """y, g (n x k, all latent coordinates) and weights omega for n DMFT paths; g by Gauss-Hermite nodes
    (probabilists', nodes of weight < 1e-12 dropped) when g_nodes > 0 and the link is
    single-index, each node carrying n/g_nodes paths of the Gaussian process; y by eq. (1)."""
    if g_nodes > 0 and link.k == 1:
        x, wts = np.polynomial.hermite_e.hermegauss(g_nodes)
        wts = wts / wts.sum()
        keep = wts > 1e-12  # nodes far in the tail (|g| > ~7) carry < 1e-12 of the mass and destabilise paths
        x, wts = x[keep], wts[keep] / wts[keep].sum()
        g_nodes = x.size
        idx = np.arange(n) % g_nodes
        g = x[idx][:, None]
        counts = np.bincount(idx, minlength=g_nodes)
        omega = wts[idx] / counts[idx]
    else:
        g = rng.standard_normal((n, link.k))
        omega = np.full(n, 1.0 / n)
    return labels(link, g, rng), g, omega


TAIL_DRAWS = 1_000_000   # tail_mass: Monte Carlo labels (s.e. sqrt(P / TAIL_DRAWS), 4% of P at P = 6e-4)
TAIL_SEED = 2718


def tail_mass(link: Link, cap: float, draws: int = TAIL_DRAWS) -> float:
    """P(y > cap) under the target law, by Monte Carlo over ``draws`` labels of a fixed stream (the same draws at
    every cap, so that the mass is monotone in it; drawn once per link)."""
    y = _sorted_labels(link, draws)
    return float((y.size - np.searchsorted(y, cap, side="right")) / y.size)   # the share of draws > cap


@functools.lru_cache(maxsize=8)
def _sorted_labels(link: Link, draws: int) -> np.ndarray:
    y, _, _ = draw_targets(link, draws, 0, np.random.default_rng(TAIL_SEED))
    return np.sort(np.asarray(y, dtype=float))


def y_moments(link: Link):
    """Eq. (2): exact E[y], E[y^2]: SymPy when the integrals close; else, for a noiseless single-index
    link, mpmath quadrature in g (split at the kinks); else the level-set engine."""
    from .hermite import expect_exact_multi
    out = []
    for power in (1, 2):
        val = expect_exact_multi(link.expr**power, link.variables)
        if val is None and link.k == 1 and link.noise is None:
            from .catalog import lambdify_mpmath
            from .gaussian import expect_numeric, kinks
            var = link.variables[0]
            val = expect_numeric(lambdify_mpmath([var], link.expr**power), dps=20,
                                 breakpoints=kinks(link.expr, var)).value
        elif val is None:
            from .levelset import LevelSetGram
            res = LevelSetGram(link.expr, link.variables, [link.expr ** (power - 1)]).run(level=4)
            val = res.L[0]
        out.append(float(val))
    return out[0], out[1]

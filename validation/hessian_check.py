"""Hessian after the first phase: DMFT + spectral engine versus finite-d GD.

For each case, GD restricted to the complement of theta_* runs for ``steps``
at d = 1000 and 2000 (``SEEDS`` seeds each); the lowest eigenvalues of the full
Hessian and the squared overlaps of their eigenvectors with theta_* are
compared with the predicted left bulk edge and negative hard outlier (z*,
overlap^2) from the DMFT law at the same step (thresholds.hessian).

    python -m validation.hessian_check              # runs, writes validation/reports/hessian/README.md
    python -m validation.hessian_check mixed        # y = z1 + z2^2 (one easy direction): mixed.md

For the link with an easy direction, GD is restricted to the complement of the hard direction
(the easy one is learned) and overlaps are measured with the hard direction.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from thresholds.dmft import DMFTSetup
from thresholds.hessian import hessian_spectrum
from validation.gd_law import hessian_spectra_gd
from validation.simulate import GDSetup, hessian_probe, run_gd

OUT = Path(__file__).parent / "reports" / "hessian"
SEEDS = 4
DIMS = (1000, 2000)
# (activation, delta, eta, steps): transient window (outlier predicted) and horizon (none predicted)
CASES = [("quad", 16.0, 0.05, 50), ("quad", 16.0, 0.05, 400), ("gelu", 24.0, 0.1, 50), ("gelu", 24.0, 0.1, 400)]
LINK_CASES = {"phase_retrieval": CASES,
              "mixed": [("gelu", 24.0, 0.1, 50), ("gelu", 24.0, 0.1, 400)]}


def predicted(act, delta, eta, steps, law="dmft", link="phase_retrieval"):
    """Prediction from the DMFT law (40000 paths, 4 replicas) or the finite-d GD law (d = 1000, 3 seeds)."""
    setup = DMFTSetup(act, link, delta, eta, steps, paths=40_000, replicas=4 if law == "dmft" else 3)
    h = hessian_spectrum(setup) if law == "dmft" else hessian_spectra_gd(setup, 1000)[steps]
    left = [o for o in h.outliers if o["side"] == "left"]
    return h, (left[0] if left else None)


def simulated(act, delta, eta, steps, d, seed, link="phase_retrieval"):
    from thresholds.alg import latent_split
    from thresholds.catalog import get_link
    res = run_gd(GDSetup(act, link, delta, d, eta, steps, complement=True, seed=10_000 + seed, n_test=500))
    X, y = res.data
    return hessian_probe(X, y, res.theta, act, k=get_link(link).k, count=3, axes=latent_split(link).hard)["lowest"]


def main(link="phase_retrieval"):
    OUT.mkdir(parents=True, exist_ok=True)
    target = "Noiseless phase retrieval" if link == "phase_retrieval" else f"Link {link}"
    lines = ["# Hessian after the first phase: prediction versus finite-d GD", "",
             f"{target}, a = 1, b = 0, rho0 = 1, no weight decay, GD restricted to the complement "
             f"of the hard direction for `steps` steps, then the 3 lowest eigenvalues of the full Hessian (Lanczos) at d = "
             f"{', '.join(map(str, DIMS))}, {SEEDS} seeds (mean +- s.e.).  Prediction: DMFT law at the same step "
             "(40000 paths, 4 replicas) and the law of finite-d GD restricted to the complement (d = 1000, 3 "
             "other seeds), both through the d = inf spectral equations.  `hard lambda` is the simulated "
             "eigenvalue whose eigenvector has the largest overlap with the hard direction.", "",
             "| sigma | delta | eta | steps | law | predicted left edge | predicted hard outlier z* (overlap^2) | d | "
             "lowest eigenvalue | hard lambda (overlap^2) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for act, delta, eta, steps in LINK_CASES[link]:
        preds = {law: predicted(act, delta, eta, steps, law, link) for law in ("dmft", "gd")}
        for law, (h, out) in preds.items():
            pred_o = "none" if out is None else f"{out['z']:.3f} +- {out['z_err']:.3f} ({out['overlap2']:.2f})"
            lines.append(f"| {act} | {delta:g} | {eta:g} | {steps} | {law} | {h.left_edge:.3f} +- "
                         f"{h.left_edge_err:.3f} | {pred_o} | | | |")
        for d in DIMS:
            runs = [simulated(act, delta, eta, steps, d, s, link) for s in range(SEEDS)]
            low = np.array([r[0][0] for r in runs])
            best = [max(r, key=lambda vo: vo[1]) for r in runs]
            hv = np.array([b[0] for b in best])
            ho = np.array([b[1] for b in best])
            se = (lambda v: v.std(ddof=1) / math.sqrt(v.size))
            lines.append(f"| {act} | {delta:g} | {eta:g} | {steps} | GD, d = {d} | | | {d} | "
                         f"{low.mean():.3f} +- {se(low):.3f} | {hv.mean():.3f} +- {se(hv):.3f} "
                         f"({ho.mean():.2f} +- {se(ho):.2f}) |")
            print(lines[-1], flush=True)
    (OUT / ("README.md" if link == "phase_retrieval" else f"{link}.md")).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    import sys
    main(*sys.argv[1:2])

"""Figures (PNG) for the CLI and the validation reports.  Rendering only:
every function takes computed data and a path; nothing here computes."""

from __future__ import annotations

import numpy as np


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def spectrum_figure(path, xs, rho, outliers, edges, *, title="", eigenvalues=None):
    """Bulk density ``rho`` on ``xs``, outliers as vertical lines, optional histogram
    of finite-d eigenvalues."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    if eigenvalues is not None:
        ev = np.asarray(eigenvalues)
        ev = ev[(ev >= xs[0]) & (ev <= xs[-1])]
        ax.hist(ev, bins=120, density=True, alpha=0.4, color="tab:gray",
                label=f"finite-d eigenvalues (d = {len(eigenvalues)})")
    ax.plot(xs, rho, color="tab:blue", lw=1.5, label="predicted bulk density")
    for i, z in enumerate(outliers):
        ax.axvline(z, color="tab:red", ls="--", lw=1.2, label="predicted outlier" if i == 0 else None)
    for e in edges:
        if np.isfinite(e):
            ax.axvline(e, color="tab:blue", ls=":", lw=0.8)
    ax.set_xlabel("eigenvalue")
    ax.set_ylabel("density")
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

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


def dmft_figure(path, t, series, *, title=""):
    """Curves with error bands: ``series`` maps a label to (values, errors, axis) with
    axis 0 (norms) or 1 (losses)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for label, (vals, errs, axis) in series.items():
        ax = axes[axis]
        ax.plot(t, vals, label=label)
        ax.fill_between(t, vals - 2 * errs, vals + 2 * errs, alpha=0.25)
    axes[0].set_xlabel("GD step t")
    axes[1].set_xlabel("GD step t")
    axes[0].set_title("norms (band: +- 2 s.e.)")
    axes[1].set_title("losses")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

"""Figures (PNG) for the CLI and the validation reports.  Rendering only:
every function takes computed data and a path; nothing here computes."""

from __future__ import annotations

import textwrap

import numpy as np


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _legend_and_save(plt, fig, ax, path):
    ax.legend(fontsize=8)
    save_figure(plt, fig, path)


def save_figure(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def spectrum_figure(path, xs, rho, outliers, edges, *, title="", eigenvalues=None):
    """Bulk density ``rho`` on ``xs``, outliers as vertical lines, optional histogram
    of finite-d eigenvalues."""
    plt = pyplot()
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
    save_figure(plt, fig, path)


def spectral_plot(path, res, link, preprocessing, delta, *, level, dps):
    """The density of a spectral estimator (thresholds.spectral, result ``res`` at ``delta``) on a grid that
    covers its bulk (an unbounded side gets 6 bulk widths) and its outliers, with the outliers marked."""
    import math

    from .spectral import spectral_density
    left, right = res.bulk_edges
    zs = [o["z"] for o in res.outliers]
    scale = max(1.0, abs(right) if math.isfinite(right) else 1.0)
    lo = left if math.isfinite(left) else (right - 6 * scale if math.isfinite(right) else -6.0)
    hi = right if math.isfinite(right) else lo + 12 * scale
    pad = 0.15 * (hi - lo)
    xs = np.linspace(min([lo - pad] + zs), max([hi + pad] + [z + pad for z in zs]), 1500)
    rho = spectral_density(link, preprocessing, delta, xs, level=level, dps=dps)
    spectrum_figure(path, xs, rho, zs, res.bulk_edges, title=f"{link}, T = {preprocessing}, delta = {delta:g}")


def dmft_figure(path, t, series, *, title=""):
    """Curves with error bands: ``series`` maps a label to (values, errors, axis) with
    axis 0 (norms) or 1 (losses)."""
    plt = pyplot()
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
    save_figure(plt, fig, path)


def _finite_points(crossings):
    """(x, value, low, high) of the crossings that were found."""
    return [(x, c.value, c.low, c.high) for x, c in crossings if c.found]


def _interval_plot(ax, crossings, label, color):
    pts = _finite_points(crossings)
    if pts:
        x, v, lo, hi = map(np.asarray, zip(*pts))
        ax.errorbar(x, v, yerr=[v - lo, hi - v], fmt="o-", capsize=3, color=color, label=label)
    missing = [x for x, c in crossings if not c.found]
    if missing:
        top = ax.get_ylim()[1] if pts else 1.0
        ax.scatter(missing, [top] * len(missing), marker="^", color=color, label=f"{label}: none found")


def t_curve_figure(result, path):
    """delta_NN(t) over the checkpoints, with delta_alg."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    eta = result.setup.eta
    _interval_plot(ax, [(s * eta, c) for s, c in result.t_curve], "delta_NN(t)", "tab:red")
    ax.axhline(result.delta_alg, color="tab:blue", ls="--", label="delta_alg")
    ax.set_xlabel("t = eta x steps")
    ax.set_ylabel("delta")
    ax.set_title(f"{result.setup.activation} / {result.setup.link}", fontsize=9)
    _legend_and_save(plt, fig, ax, path)


def scan_figure(results, name, values, path):
    """delta_NN at the horizon and the transient minimum versus one setup parameter."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    _interval_plot(ax, [(v, r.crossing_at_horizon) for v, r in zip(values, results)], "delta_NN", "tab:red")
    _interval_plot(ax, [(v, r.transient) for v, r in zip(values, results)], "min_t delta_NN(t)", "tab:orange")
    if results:
        ax.axhline(results[0].delta_alg, color="tab:blue", ls="--", label="delta_alg")
    ax.set_xlabel(name)
    ax.set_ylabel("delta")
    _legend_and_save(plt, fig, ax, path)


def grok_figure(out, path):
    """Predicted first-phase train/test loss and the predicted escape steps."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    c = out["curves"]
    t = np.asarray(c["t"])
    for key, color in (("train_loss", "tab:blue"), ("test_loss", "tab:orange")):
        v, e = np.asarray(c[key]), np.asarray(c[key + "_err"])
        ax.plot(t, v, color=color, label=key.replace("_", " ") + " (DMFT, first phase)")
        ax.fill_between(t, v - 2 * e, v + 2 * e, color=color, alpha=0.25)
    if out.get("escape"):
        for row in out["escape"]["rows"]:
            if row["steps"] is None:
                continue
            ax.axvline(row["steps"], color="tab:red", ls=":", lw=1)
            ax.text(row["steps"], ax.get_ylim()[1], f"d={row['d']}", rotation=90, va="top", fontsize=7)
    ax.set_xlabel("GD step")
    ax.set_ylabel("loss")
    ax.set_title(f"delta = {out['delta']:g}: predicted escape steps (dotted)", fontsize=9)
    _legend_and_save(plt, fig, ax, path)


def finite_d_figure(path, predicted, simulated, *, title="", delta_nn=None, forced=None, theory=None,
                    delta_nn_label="delta_NN (d = inf)", theory_label="delta_NN, edge of n = delta d samples"):
    """Crossing delta_1/2 against d: ``predicted`` = [(d, value, low, high)] as a line with a band,
    ``simulated`` = [(d, value, s.e.)] with error bars, ``forced`` = [(d, value, s.e.)] (thresholds.forced)
    with error bars, ``delta_nn`` (the d = inf threshold) as a horizontal line labelled ``delta_nn_label``, and
    ``theory`` = [(d, value, low, high)] (delta_NN with the left edge of n = delta d samples) as points with
    intervals labelled ``theory_label``, when given.  The y axis starts at 0 when ``theory`` or ``delta_nn`` is drawn."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    if predicted:
        d, v, lo, hi = (np.array(c, dtype=float) for c in zip(*predicted))
        ax.plot(d, v, "o-", color="tab:blue", label="predicted (thresholds.planted)")
        ax.fill_between(d, lo, hi, color="tab:blue", alpha=0.2, label="predicted range")
    if forced:
        d, v, e = (np.array(c, dtype=float) for c in zip(*forced))
        ax.errorbar(d * 1.04, v, yerr=e, fmt="D-", color="tab:green", capsize=3,
                    label="forced DMFT trials +- s.e. (thresholds.forced)")
    if simulated:
        d, v, e = (np.array(c, dtype=float) for c in zip(*simulated))
        ax.errorbar(d, v, yerr=e, fmt="s", color="tab:red", capsize=3, label="GD crossing +- s.e.")
    if theory:
        d, v, lo, hi = (np.array(c, dtype=float) for c in zip(*theory))
        ax.errorbar(d, v, yerr=[v - lo, hi - v], fmt="^", color="tab:gray", capsize=3,
                    label=theory_label)
    if delta_nn is not None:
        ax.axhline(delta_nn, color="tab:gray", ls="--", label=f"{delta_nn_label} = {delta_nn:.3g}")
    if theory or delta_nn is not None:
        ax.set_ylim(bottom=0)
    ax.set_xscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("delta_1/2 (half of the runs learn by the horizon)")
    ax.set_title(title, fontsize=9)
    _legend_and_save(plt, fig, ax, path)


def widths_figure(path, series, *, title=""):
    """Crossing delta_1/2 against d for several setups (e.g. widths): ``series`` = [(label, predicted,
    simulated)] with ``predicted`` = [(d, value, low, high)] (line and band) and ``simulated`` = [(d, value,
    s.e.)] (error bars), one colour per series."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    for k, (label, predicted, simulated) in enumerate(series):
        color = f"C{k}"
        if predicted:
            d, v, lo, hi = (np.array(c, dtype=float) for c in zip(*predicted))
            ax.plot(d, v, "o-", color=color, label=f"{label}: predicted")
            ax.fill_between(d, lo, hi, color=color, alpha=0.2)
        if simulated:
            d, v, e = (np.array(c, dtype=float) for c in zip(*simulated))
            ax.errorbar(d, v, yerr=e, fmt="s", color=color, mfc="white", capsize=3, label=f"{label}: GD +- s.e.")
    ax.set_xscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("delta_1/2 (half of the runs learn by the horizon)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the axes: many series
    save_figure(plt, fig, path)


def crossing_vs_m_figure(path, series, *, title="", limits=None, brackets=None, settled=None, settled_d=None):
    """Crossing delta_1/2 against the width m: ``series`` = [(label, forced, simulated)] with ``forced`` and
    ``simulated`` = [(m, value, s.e.)] (forced DMFT trials as filled diamonds joined by a line, GD as open
    squares), one colour per series; ``limits``: label -> [(m, value, low, high)], the d = inf delta_NN of the
    same setup (``thresholds nn``; triangles with their intervals, dashed; low nan: a bound, an arrow down from the
    value; high inf: an arrow up); ``brackets``: label -> [(m, low,
    high)], d = inf brackets without a value (the signs of the indicator at a few deltas; bars between the ends,
    an open triangle at the middle; low None: an open triangle at high with an arrow down); ``settled``: label ->
    [(m, low, high)], infinite-horizon brackets at finite d (validation.settled_hessian; drawn as ``brackets``, with
    downward triangles), at the one d ``settled_d`` when given (the legend says which)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    tips = []   # the arrows' ends, which do not widen the axes by themselves
    for k, (label, forced, simulated) in enumerate(series):
        color = f"C{k}"
        if limits and limits.get(label):
            m, v, lo, hi = (np.array(c, dtype=float) for c in zip(*sorted(limits[label])))
            open_ = ~np.isfinite(hi)   # an interval without an upper end: an arrow up from the value
            bound = np.isnan(lo)       # a bound (the search's lower end): an arrow down from the value
            ax.errorbar(m * 0.97, v, yerr=[np.where(bound, 0.0, v - lo), np.where(open_ | bound, 0.0, hi - v)],
                        fmt="^--", color=color, capsize=3, alpha=0.8, label=f"{label}: delta_NN, d = inf (thresholds nn)")
            for mm, vv, up in [(mm, vv, True) for mm, vv in zip(m[open_], v[open_])] + \
                    [(mm, vv, False) for mm, vv in zip(m[bound], v[bound])]:
                ax.annotate("", xy=(mm * 0.97, vv * 1.3 if up else vv / 1.3), xytext=(mm * 0.97, vv),
                            arrowprops={"arrowstyle": "->", "color": color, "alpha": 0.8})
                if not up:
                    tips.append(vv / 1.3)
        for marks, shift, fmt, text in ((brackets, 0.97, "^", "delta_NN bracket, d = inf (signs of I_T)"),
                                        (settled, 0.94, "v", "infinite-horizon bracket, GD's first phase at "
                                         + ("finite d" if settled_d is None else f"d = {settled_d}"))):
            if marks and marks.get(label):
                m, lo, hi = (np.array([np.nan if v is None else v for v in c], dtype=float)
                             for c in zip(*sorted(marks[label], key=lambda b: b[0])))
                below = ~np.isfinite(lo)   # open below: only an upper end
                mid = np.where(below, hi, (lo + hi) / 2)
                ax.errorbar(m * shift, mid, yerr=[np.where(below, 0.0, mid - lo), hi - mid], fmt=fmt, color=color,
                            mfc="white", capsize=5, alpha=0.8, label=f"{label}: {text}")
                for mm, hh in zip(m[below], hi[below]):
                    ax.annotate("", xy=(mm * shift, hh / 1.3), xytext=(mm * shift, hh),
                                arrowprops={"arrowstyle": "->", "color": color, "alpha": 0.8})
                    tips.append(hh / 1.3)
        if forced:
            m, v, e = (np.array(c, dtype=float) for c in zip(*forced))
            ax.errorbar(m * 1.03, v, yerr=e, fmt="D-", color=color, capsize=3, label=f"{label}: forced DMFT")
        if simulated:
            m, v, e = (np.array(c, dtype=float) for c in zip(*simulated))
            ax.errorbar(m, v, yerr=e, fmt="s", color=color, mfc="white", capsize=3, label=f"{label}: GD +- s.e.")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")   # thresholds from about 1.5 (quad, m = 16) to 45 (gelu's brackets) on one axis
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    low, high = ax.get_ylim()
    if tips and min(tips) < low * 1.05:
        low = min(tips) / 1.1
        ax.set_ylim(low, high)
    ax.set_yticks([v for v in (1, 1.5, 2, 3, 4, 6, 8, 10, 15, 20, 30, 40, 60, 100) if low <= v <= high])
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("width m")
    ax.set_ylabel("delta_1/2 (half of the runs learn by the horizon)")
    ax.set_title("\n".join(textwrap.wrap(title, 70)), fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save_figure(plt, fig, path)


def crossings_with_limits_figure(path, series, *, title=""):
    """Crossing delta_1/2 against d for several setups, each with its d = inf threshold: ``series`` = [(label, nn
    record (the dict of ``thresholds nn --json``), [(d, value, s.e.)])]: GD's crossings as points joined by a line, the
    record's delta_NN as a dashed line with its interval shaded, one colour per series; the horizon of the record
    and whether its t-curve converged go into the label."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for k, (label, nn, points) in enumerate(series):
        color = f"C{k}"
        d, v, e = zip(*points)
        ax.errorbar(d, v, yerr=e, fmt="s-", color=color, mfc="white", capsize=3, label=f"{label}: GD +- s.e.")
        state = "converged" if nn.get("converged") else "not converged"
        value, low, high = (float(nn[key]) for key in ("delta_nn", "delta_nn_low", "delta_nn_high"))   # "inf" allowed
        ax.axhline(value, color=color, ls="--", label=f"{label}: delta_NN = {value:.2f} (T = {nn['setup']['steps']}, "
                   f"t-curve {state}{'' if np.isfinite(high) else ', interval open above'})")
        if np.isfinite(high):
            ax.axhspan(low, high, color=color, alpha=0.12)
    ax.set_xscale("log")
    dims = sorted({d for _, _, points in series for d, _, _ in points})
    ax.set_xticks(dims)
    ax.set_xticklabels([str(d) for d in dims])
    ax.minorticks_off()
    ax.set_xlabel("d")
    ax.set_ylabel("delta_1/2 (half of the runs learn by the horizon)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save_figure(plt, fig, path)


def settling_figure(path, panels, *, title=""):
    """Log-log against the step, one column per entry of ``panels`` (title -> curves): the train loss above and |z_H|
    (validation.settled_hessian eq. (1)) below, one line per curve (label, steps, loss, |z_H|), nan where there is no
    hard outlier."""
    plt = pyplot()
    cols = len(panels)
    fig, axes = plt.subplots(2, cols, figsize=(3.6 * cols, 6.5), squeeze=False)
    for c, (name, curves) in enumerate(panels.items()):
        top, bottom = axes[0][c], axes[1][c]
        for label, steps, loss, z in curves:
            line, = top.loglog(steps, loss, marker="o", ms=3, label=label)
            bottom.loglog(steps, z, marker="o", ms=3, color=line.get_color())
        top.set_title(name, fontsize=9)
        top.legend(fontsize=6)
        bottom.set_xlabel("step")
    axes[0][0].set_ylabel("train loss")
    axes[1][0].set_ylabel("|z_H|, lowest hard eigenvalue")
    if title:
        fig.suptitle(title, fontsize=10)
    save_figure(plt, fig, path)


def _bracket_bars(plt, ax, series, marker, label, offset, cmap):
    """Brackets {d: [(m, low, high)]} as bars at m shifted by 2^offset (and a little more per d), one color per d;
    low None: a marker at high and an arrow down."""
    dims = sorted(series)
    for j, d in enumerate(dims):
        shift = 2 ** (0.07 * (j - (len(dims) - 1) / 2) + offset)
        rows = sorted(series[d], key=lambda b: b[0])
        m = np.array([r[0] for r in rows], dtype=float) * shift
        hi = np.array([r[2] for r in rows], dtype=float)
        lo = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=float)
        below = np.isnan(lo)
        mid = np.where(below, hi, (lo + hi) / 2)
        color = plt.get_cmap(cmap)(j / max(len(dims) - 1, 1) * 0.85)
        ax.errorbar(m, mid, yerr=[np.where(below, 0.0, mid - lo), hi - mid], fmt=marker,
                    mfc="white" if marker == "v" else color, color=color, capsize=4, label=label.format(d=d))
        for mm, hh in zip(m[below], hi[below]):
            ax.annotate("", xy=(mm, hh * 0.75), xytext=(mm, hh), arrowprops={"arrowstyle": "->", "color": color})


def horizon_vs_m_figure(path, curves, limits, brackets, *, D, title="", released=None,
                        released_label="GD released, d = {d}"):
    """Two panels.  Left: the d = inf delta_NN against the step, ``curves`` = {m: [(step, value, low, high)]} (a
    line per width, its interval shaded where finite).  Right: against the width, ``limits`` = [(m, step, value,
    low, high)] (the last checkpoint's value, filled circles, the step beside it) and ``brackets`` = {d: [(m, low,
    high)]} (GD's infinite-horizon brackets at finite d, open triangles offset per d; low None: open below, an
    arrow down from high); ``released`` likewise (GD released from its first phase, filled squares, offset to the
    other side)."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(14 if released else 11, 4.5))
    for k, (m, points) in enumerate(sorted(curves.items())):
        if not points:
            continue
        s, v, lo, hi = (np.array(c, dtype=float) for c in zip(*points))
        left.plot(s, v, "o-", ms=3, color=f"C{k}", label=f"m = {m}")
        band = np.isfinite(hi)
        left.fill_between(s, np.where(band, lo, np.nan), np.where(band, hi, np.nan), color=f"C{k}", alpha=0.15)
    left.set_xscale("log")
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    left.xaxis.set_major_formatter(ScalarFormatter())
    left.xaxis.set_minor_formatter(NullFormatter())
    steps = [s for points in curves.values() for s, *_ in points]
    if steps:   # a 1-2-5 sequence of ticks over the steps drawn (a log axis alone marks only the decades)
        left.set_xticks([v for v in (c * 10 ** e for e in range(1, 6) for c in (1, 2, 5))
                         if min(steps) / 1.5 <= v <= max(steps) * 1.5])
    left.set_xlabel("DMFT step")
    left.set_ylabel(f"delta_NN, d = inf law (data sets of n = delta {D})")
    left.set_title("the d = inf law: delta_NN per checkpoint", fontsize=9)
    if any(curves.values()):
        left.legend(fontsize=8)
    widths = sorted({m for m, *_ in limits} | {m for rows in brackets.values() for m, *_ in rows})
    if limits:
        m, step, v, lo, hi = (np.array(c, dtype=float) for c in zip(*sorted(limits)))
        hi_bar = np.where(np.isfinite(hi), hi - v, 0.0)
        right.errorbar(m, v, yerr=[v - lo, hi_bar], fmt="o-", color="k", capsize=4,
                       label="d = inf law, last checkpoint")
        for mm, ss, vv in zip(m, step, v):
            right.annotate(f"T = {ss:.0f}", (mm, vv), textcoords="offset points", xytext=(6, 4), fontsize=7)
    widths = sorted(set(widths) | {m for rows in (released or {}).values() for m, *_ in rows})
    _bracket_bars(plt, right, brackets, "v", "Hessian verdicts of GD's first phase, d = {d}", -0.25, "viridis")
    _bracket_bars(plt, right, released or {}, "s", released_label, 0.25, "autumn")
    right.set_xscale("log", base=2)
    right.set_xticks(widths)
    right.set_xticklabels([str(w) for w in widths])
    right.minorticks_off()
    right.set_ylim(bottom=0)
    right.set_xlabel("width m")
    right.set_ylabel("infinite-horizon threshold delta")
    right.set_title("against the width: d = inf law and GD's brackets at finite d", fontsize=9)
    if released:   # more series than the panel has room for: the legend beside it
        right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        right.legend(fontsize=7, loc="upper left")
    if title:
        fig.suptitle(title, fontsize=10)
    save_figure(plt, fig, path)


def scaled_profile_figure(path, profiles, released, limits, *, title="", law="eq. (9)"):
    """The crossing against d: ``profiles`` = {(m, d): [(d', value, s.e.)]} (a profile at d read at d' >= d by the
    ``law`` named in the legend, d' None for d = inf, s.e. None or inf (an open s.e.) for no bar: open circles joined by a dashed line, one
    colour per width), ``released`` = {m: [(d, value, s.e.)]}
    (GD's measured crossings, filled squares joined by a solid line) and ``limits`` = {m: (value, low, high)} (the
    d = inf law's delta_NN, a diamond with its interval); d = inf sits at a tick of its own right of the largest d."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.8))
    finite = [x for rows in profiles.values() for x, *_ in rows if x is not None]
    finite += [x for rows in released.values() for x, *_ in rows]
    inf_x = 4 * max(finite) if finite else 1.0
    widths = sorted({m for m, _ in profiles} | set(released) | set(limits))
    color = {m: f"C{k}" for k, m in enumerate(widths)}
    shift = {m: 1 + 0.025 * (k - (len(widths) - 1) / 2) for k, m in enumerate(widths)}   # equal values stay apart
    marker = {d: "o^vpho"[k % 6] for k, d in enumerate(sorted({d for _, d in profiles}))}
    for (m, d), rows in sorted(profiles.items()):
        kept = [((inf_x if x is None else x) * shift[m], v, np.nan if e is None or not np.isfinite(e) else e)
                for x, v, e in rows
                if v is not None and np.isfinite(v)]
        if kept:
            x, v, e = zip(*kept)
            ax.errorbar(x, v, yerr=e, fmt=marker[d] + "--", color=color[m], mfc="white", capsize=3, alpha=0.8,
                        label=f"m = {m}: profiles at d = {d}, {law} at d' >= d")
    for m, rows in sorted(released.items()):
        x, v, e = zip(*sorted(rows))
        ax.errorbar(np.array(x) * shift[m], v, yerr=e, fmt="s-", color=color[m], capsize=3,
                    label=f"m = {m}: GD released")
    for m, (value, low, high) in sorted(limits.items()):
        upper = high - value if np.isfinite(high) else 0.0
        ax.errorbar([inf_x * 1.08 * shift[m]], [value], yerr=[[value - low], [upper]], fmt="D", color=color[m],
                    capsize=4, label=f"m = {m}: d = inf law, delta_NN = {value:.2f}")
    ax.set_xscale("log")
    ticks = sorted(set(finite))
    ax.set_xticks(ticks + [inf_x])
    ax.set_xticklabels([f"{t:g}" for t in ticks] + ["inf"])
    ax.minorticks_off()
    ax.set_xlabel("d (d' for the profiles)")
    ax.set_ylabel("delta_1/2")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save_figure(plt, fig, path)


def settings_figure(path, panels, *, title=""):
    """Crossings of several settings against published figures, one panel per activation: ``panels`` =
    [(name, figure, band, rows)] with ``rows`` = [(label, gd, forced)], ``gd`` and ``forced`` each (value, s.e.)
    or None; the figure is drawn as a line with the band figure +- band."""
    plt = pyplot()
    width = max(len(rows) for *_, rows in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(7.0, 0.55 * width + 2), 3.4 * len(panels)), squeeze=False)
    for ax, (name, figure, band, rows) in zip(axes[:, 0], panels):
        x = np.arange(len(rows))
        ax.axhspan(figure - band, figure + band, color="0.85", label=f"published {figure:g} +- {band:g}")
        ax.axhline(figure, color="0.4", lw=1)
        for k, (kind, marker, shift) in enumerate((("GD", "s", -0.12), ("forced prediction", "o", 0.12))):
            pts = [(i + shift, r[1 + k]) for i, r in enumerate(rows) if r[1 + k] is not None]
            if pts:
                xs, vs = zip(*pts)
                ax.errorbar(xs, [v[0] for v in vs], yerr=[v[1] for v in vs], fmt=marker, color=f"C{k}", capsize=3,
                            mfc="white" if k == 0 else f"C{k}", label=f"{kind} +- s.e.")
        ax.set_xticks(x)
        ax.set_xticklabels([r[0] for r in rows], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(f"{name}: delta_1/2")
        ax.legend(fontsize=7)
    axes[0, 0].set_title(title, fontsize=9)
    save_figure(plt, fig, path)

"""Forced DMFT trials (thresholds.forced, eq. (1m)) against GD across widths m, at one d and a 600-step horizon.

The records are those of ``validation.forced_trials`` (one file per setup and width); the GD crossings and
rates come from ``thresholds validate`` reports at the same horizon (``--t0 60 --c 0`` for eta 0.1, ``--t0 30
--c 0`` for eta 0.05).  Prints, per (activation, m), the forced and GD crossings at ``--d`` with z = difference
/ combined s.e., and the per-point rates; ``--plot`` draws the crossing against m for both activations.

    F=validation/reports/planted/forced
    python -m validation.forced_width --d 200 --out $F/stratified $F/paths20000_m4 $F/eq4b $F/paths80000 \\
        --plot validation/reports/planted/width/forced_vs_m_d200.png \\
        --reference validation/reports/conventions/finite_d_width.md
    (and --d 800 --plot .../forced_vs_m_d800.png with the same --out; ``--delta-nn FILE ...`` draws the d = inf
    delta_NN of `thresholds nn -T 600 [--m M] --json` files at their width, ``--brackets ACT:ETA:M=FILE,...`` the
    brackets of validation.indicator_points records where no search was run, ``--settled ACT:ETA:M=FILE,...`` the
    infinite-horizon brackets of validation.settled_hessian records, ``--settle ACT:ETA:M=FILE`` a column with the
    d = inf law's delta_NN at the last checkpoint of a validation.settle file)

Joint offset over k cells (``--joint 200,800``), each z_k = (forced - GD) / sqrt(se_forced^2 + se_GD^2):

    mean z ~ N(0, 1 / k),   sum z_k^2 ~ chi-square(k),   #{z_k > 0} ~ binomial(k, 1/2)            (1)

under "no offset" (two cells share no trial and no GD run).  A route whose every cell lies within 2 s.e. can still
carry a joint offset that eq. (1) detects.  Its size, the inverse-variance mean r of r_k = forced_k / GD_k - 1 (s.e.
s_k = combined s.e. / GD_k, weights w_k = s_k^-2), and whether one common r explains every cell:

    Q = sum_k w_k (r_k - r)^2 ~ chi-square(k - 1)   (Cochran's Q)                                  (2)

The order of ``--out`` matters: the last directory that holds a point gives its crossing.  eq4b holds the m = 8
trials with 40k paths at source tolerance 1e-2 that thresholds.forced eq. (4b) found too few (width section 8f), so
paths80000 (80k paths, the converged law) comes after it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from thresholds.problem import Problem
from validation import records
from validation.forced_trials import OUT, crossings, records_path, summarize
from validation.indicator_points import bracket
from validation.planted_threshold import gd_crossings

REPORTS = Path(__file__).resolve().parent / "reports" / "planted"
# the forced trial records of finite_d_width.md and width section 9e, in the order of ``--out`` (module docstring)
RECORD_DIRS = tuple(REPORTS / "forced" / name for name in ("stratified", "paths20000_m4", "eq4b", "paths80000"))

# (activation, eta, m) -> GD reports at the 600-step horizon (validate runs, 40 trials per point unless the
# report says otherwise)
GD = {
    ("quad", 0.05, 1): ["gd_T600/report.md", "gd_T600_d1600/report.md", "gd_T600_d3200/report.md"],
    ("quad", 0.05, 2): ["width/gd_quad_m2_T600/report.md", "width/gd_quad_m2_T600_d800_1600/report.md"],
    ("quad", 0.05, 4): ["width/gd_quad_m4_T600/report.md", "width/gd_quad_m4_T600_d1600/report.md"],
    ("quad", 0.05, 8): ["width/gd_quad_m8_T600/report.md", "width/gd_quad_m8_T600_d800/report.md",
                        "width/gd_quad_m8_T600_d1600/report.md"],
    ("quad", 0.05, 16): ["width/gd_quad_m16_T600/report.md", "width/gd_quad_m16_T600_d800/report.md",
                         "width/gd_quad_m16_T600_d1600/report.md"],
    ("gelu", 0.1, 1): ["gd_gelu_T600/report.md", "gd_gelu_T600_d1600/report.md", "gd_gelu_T600_d3200/report.md"],
    ("gelu", 0.1, 2): ["width/gd_gelu_m2_T600/report.md", "width/gd_gelu_m2_T600_d800/report.md",
                       "width/gd_gelu_m2_T600_d1600/report.md", "width/gd_gelu_m2_T600_d3200/report.md"],
    ("gelu", 0.1, 4): ["width/gd_gelu_m4_T600/report.md", "width/gd_gelu_m4_T600_d800/report.md"],
    ("gelu", 0.1, 8): ["width/gd_gelu_m8_T600/report.md", "width/gd_gelu_m8_T600_d800/report.md"],
    ("gelu", 0.1, 16): ["width/gd_gelu_m16_T600/report.md", "width/gd_gelu_m16_T600_d800/report.md"],
}


def rows_for(activation: str, eta: float, m: int, out: Path = OUT) -> list:
    """The forced trial records of one setup and width (empty when none were run)."""
    return records.read(records_path(Problem(activation, "phase_retrieval", eta=eta, steps=600, m=m), out))


def rows_by_d(act: str, eta: float, m: int, out=OUT) -> dict:
    """d -> the forced trial records at d of one setup and width.  ``out``: a directory of records, or several, of
    which the last that holds a d gives its records there (e.g. records with more paths per trial after the first
    ones)."""
    by_d = {}
    for directory in ([out] if isinstance(out, (str, Path)) else out):
        here = {}
        for r in rows_for(act, eta, m, Path(directory)):
            here.setdefault(int(r["d"]), []).append(r)
        by_d.update(here)
    return by_d


def setup_crossings(act: str, eta: float, m: int, out=OUT) -> tuple[dict, dict]:
    """d -> (crossing, s.e.) of the forced trials (the records of :func:`rows_by_d`) and of GD (the reports of
    ``GD``) for one setup and width."""
    forced = {d: (c, se) for rows in rows_by_d(act, eta, m, out).values() for d, c, se in crossings(rows)}
    gd = {}
    for rep in GD[(act, eta, m)]:
        if (REPORTS / rep).exists():
            gd.update(gd_crossings(REPORTS / rep))
    return forced, gd


def cells(dims, out=OUT) -> list:
    """((activation, eta, m), forced (crossing, s.e.) or None, GD (crossing, s.e.) or None) per setup and d of
    ``dims`` (each setup's records read once)."""
    rows = []
    for act, eta, m in GD:
        forced, gd = setup_crossings(act, eta, m, out)
        rows += [((act, eta, m), forced.get(d), gd.get(d)) for d in dims]
    return rows


def combined_z(f, g) -> float:
    """(forced - GD) / combined s.e. of one cell's two (crossing, s.e.) pairs."""
    return (f[0] - g[0]) / math.hypot(f[1], g[1])


@dataclass(frozen=True)
class JointOffset:
    """The forced crossings against GD's over several (setup, width, d) cells, each z_k = (forced - GD) / combined
    s.e. (eq. (1)): under "no offset" the z_k are independent standard normals (the trials and the GD runs of two
    cells share no draw), so their mean has s.e. 1 / sqrt(k), sum z_k^2 is chi-square with k degrees of freedom and
    the count of positive z_k is binomial(k, 1/2).  ``relative``: the inverse-variance weighted mean of (forced -
    GD) / GD, with its s.e."""
    cells: int
    positive: int
    mean_z: float
    chi2: float
    chi2_p: float     # P(chi-square_k >= chi2)
    sign_p: float     # two-sided binomial P of a count of positive z_k at least this far from k / 2
    within_2: int     # cells with |z_k| <= 2
    relative: float
    relative_se: float
    q: float          # Cochran's Q: sum_k w_k (r_k - relative)^2, chi-square(k - 1) if one common relative offset
    q_p: float        # P(chi-square_{k-1} >= q)
    worst: float      # the largest |r_k - relative| / s.e._k: the cell least explained by the common offset


def joint_offset(pairs) -> JointOffset:
    """Eq. (1) over ``pairs`` of ((forced, s.e.), (GD, s.e.)) crossings; cells missing either side are skipped."""
    from scipy.stats import binomtest, chi2
    pairs = [(f, g) for f, g in pairs if f and g]
    if not pairs:
        raise ValueError("no cell holds both a forced and a GD crossing")
    z = [combined_z(f, g) for f, g in pairs]
    k, pos = len(z), sum(v > 0 for v in z)
    rel = [((f[0] - g[0]) / g[0], math.hypot(f[1], g[1]) / g[0]) for f, g in pairs]
    w = [1 / e**2 for _, e in rel]
    x2 = sum(v * v for v in z)
    r_bar = sum(wi * r for wi, (r, _) in zip(w, rel)) / sum(w)
    q = sum(wi * (r - r_bar) ** 2 for wi, (r, _) in zip(w, rel))
    return JointOffset(cells=k, positive=pos, mean_z=sum(z) / k, chi2=x2, chi2_p=float(chi2.sf(x2, k)),
                       sign_p=float(binomtest(pos, k, 0.5).pvalue), within_2=sum(abs(v) <= 2 for v in z),
                       relative=r_bar, relative_se=1 / math.sqrt(sum(w)), q=q,
                       q_p=float(chi2.sf(q, k - 1)) if k > 1 else float("nan"),
                       worst=max(abs(r - r_bar) / e for r, e in rel))


def joint_line(j: JointOffset) -> str:
    """One line of :class:`JointOffset` for the printed table."""
    return (f"{j.cells} cells: {j.within_2} with |z| <= 2, {j.positive} with z > 0 (sign test p = {j.sign_p:.2g}); "
            f"mean z {j.mean_z:+.2f} +- {1 / math.sqrt(j.cells):.2f}; sum z^2 = {j.chi2:.1f} on {j.cells} degrees "
            f"of freedom (p = {j.chi2_p:.2g}); forced / GD - 1 = {100 * j.relative:+.1f}% +- "
            f"{100 * j.relative_se:.1f}% (inverse-variance mean); about it Cochran's Q = {j.q:.1f} on {j.cells - 1} "
            f"degrees of freedom (p = {j.q_p:.2g}), the farthest cell {j.worst:.1f} s.e. away")


def table(d: int, out=OUT) -> tuple[list[str], list]:
    """Markdown lines (crossings per (activation, m) at d) and the figure's series."""
    lines = ["| activation, eta | m | forced DMFT crossing | GD crossing | z |", "|---|---|---|---|---|"]
    series = {}
    for (act, eta, m), f, g in cells([d], out):
        text = [f"{v:.2f} +- {e:.2f}" if v is not None else "-" for v, e in (f or (None, None), g or (None, None))]
        z = f"{combined_z(f, g):+.1f}" if f and g else ""
        lines.append(f"| {act}, {eta:g} | {m} | {text[0]} | {text[1]} | {z} |")
        label = f"{act}, eta {eta:g}"
        fs, gs = series.setdefault(label, ([], []))
        if f:
            fs.append((m, *f))
        if g:
            gs.append((m, *g))
    return lines, [(label, fs, gs) for label, (fs, gs) in series.items()]


REFERENCE = {"gelu": 6.0, "quad": 3.6}   # the published figures (phase retrieval) the width issue asks about


def reference_table(dims=(200, 400, 800), out=OUT, tol: float = 0.5, nn=None, settled=None,
                    law=None) -> list[str]:
    """Markdown: per (activation, m) the GD and forced crossings at each d against the published figure, and
    the (m, d) at which both activations have a crossing (GD or forced) within ``tol`` of their figures.  ``nn``
    ((activation, eta, m) -> `thresholds nn --json` record, :func:`delta_nn_records`): a column with the d = inf
    delta_NN and the widths whose interval holds the figure.  ``settled`` ((activation, eta, m) ->
    :class:`SettledBracket`, :func:`settled_brackets`): a column with the infinite-horizon bracket of GD's first
    phase at finite d, over every d of the records and, where they hold several, at each d alone, and the widths
    whose bracket holds the figure (a closed bracket) or does not exclude it (open below: no delta under its high
    end where every run is bounded), over every d and at some d alone.  ``law`` ((activation, eta, m) ->
    :class:`LawThreshold`, :func:`settle_thresholds`): a column with the unbiased d = inf law's delta_NN at its last
    checkpoint, and the widths whose interval there holds the figure."""
    from validation.settle import crossing_text
    from validation.settled_hessian import bracket_text
    near, held, admitted, admitted_at, law_held = {}, {}, {}, {}, {}
    lines = ["| activation, eta | m | " + " | ".join(f"GD, d = {d}" for d in dims) + " | "
             + " | ".join(f"forced, d = {d}" for d in dims) + " | published figure |"
             + (" delta_NN, d = inf (600 steps) |" if nn else "")
             + (" infinite horizon, GD's first phase (finite d) |" if settled else "")
             + (" d = inf law, last checkpoint (step) |" if law else ""),
             "|---|---|" + "---|" * (2 * len(dims) + 1 + bool(nn) + bool(settled) + bool(law))]
    for act, eta, m in GD:
        forced, gd = setup_crossings(act, eta, m, out)
        cell = lambda v: f"{v[0]:.2f} +- {v[1]:.2f}" if v else "-"  # noqa: E731
        row = (f"| {act}, {eta:g} | {m} | " + " | ".join(cell(gd.get(d)) for d in dims) + " | "
               + " | ".join(cell(forced.get(d)) for d in dims) + f" | {REFERENCE[act]:g} |")
        if nn:
            r = nn.get((act, eta, m))
            if r is None:
                row += " - |"
            else:
                low, high = float(r["delta_nn_low"]), float(r["delta_nn_high"])   # "inf": open above
                if r.get("below_range"):   # a bound: I_T > 0 at the lower end of the search
                    row += f" <= {high:.2f} (I_T > 0 at the lower end of the search) |"
                    held[(act, m)] = REFERENCE[act] <= high
                else:
                    row += (f" {r['delta_nn']:.2f} [{low:.2f}, {high:.2f}]"
                            + ("" if r.get("converged") else ", t-curve not converged") + " |")
                    held[(act, m)] = low <= REFERENCE[act] <= high
        if settled:
            b = settled.get((act, eta, m))
            if b is None:
                row += " - |"
            else:
                row += f" {bracket_text(b.low, b.high)} (d = {', '.join(map(str, b.dims))})"
                if len(b.per_d) > 1:
                    row += "; " + ", ".join(f"d = {d}: {bracket_text(*lh)}" for d, lh in sorted(b.per_d.items()))
                row += " |"
                admitted[(act, m)] = _admits(b.low, b.high, REFERENCE[act])
                admitted_at[(act, m)] = {d: _admits(*lh, REFERENCE[act]) for d, lh in sorted(b.per_d.items())}
        if law:
            t = law.get((act, eta, m))
            row += " - |" if t is None else f" {crossing_text(t.crossing)} ({t.step}) |"
            if t is not None:
                c = t.crossing
                law_held[(act, m)] = c.found and c.low > 0.0 and c.low <= REFERENCE[act] <= c.high
        lines.append(row)
        for d in dims:
            near[(m, d, act)] = [src for src, v in (("GD", gd.get(d)), ("forced", forced.get(d)))
                                 if v and abs(v[0] - REFERENCE[act]) <= tol]
    both = [f"m = {m}, d = {d} ({', '.join(f'{a}: ' + '+'.join(near[(m, d, a)]) for a in REFERENCE)})"
            for m in sorted({k[0] for k in near}) for d in dims
            if all(near.get((m, d, a)) for a in REFERENCE)]
    lines += ["", f"Settings where a crossing of each activation lies within {tol:g} of its figure: "
              + ("; ".join(both) if both else "none") + "."]
    if nn:
        per_act, text = _widths_holding(held)
        common = sorted(set.intersection(*(set(v) for v in per_act.values())))
        lines += ["", "Widths whose d = inf delta_NN interval holds the figure: " + text
                  + "; both activations at one width: " + (", ".join(f"m = {m}" for m in common) or "none") + "."]
    if settled:
        def at_one(kind):   # "m = M (d = ...)" per activation: the widths with a d whose bracket is of this kind
            cells = {a: [f"m = {m} (d = {', '.join(str(d) for d, k in ds.items() if k == kind)})"
                         for (b, m), ds in sorted(admitted_at.items()) if b == a and kind in ds.values()]
                     for a in REFERENCE}
            return "; ".join(f"{a}: " + (", ".join(cells[a]) or "none") for a in REFERENCE)
        lines += ["", "Widths whose infinite-horizon bracket (GD's first phase at finite d, every d together) holds "
                  "the figure: " + _widths_holding({k: v == "holds" for k, v in admitted.items()})[1]
                  + "; open below and not excluding it: "
                  + _widths_holding({k: v == "open" for k, v in admitted.items()})[1] + ".",
                  "", "At one d alone, holding it: " + at_one("holds") + "; open below and not excluding it: "
                  + at_one("open") + "."]
    if law:
        lines += ["", "Widths whose d = inf law's interval at its last checkpoint holds the figure: "
                  + _widths_holding(law_held)[1] + "."]
    return lines


def _admits(low, high, figure: float) -> str | None:
    """"holds" when the closed bracket [low, high] holds ``figure``, "open" when a bracket open below (low None: no
    delta under high where every run is bounded) does not exclude it, None otherwise (high None: no delta keeps the
    outlier)."""
    if high is None or figure > high:
        return None
    return "open" if low is None else "holds" if low <= figure else None


def _widths_holding(ok: dict) -> tuple[dict, str]:
    """(activation -> the widths m whose ``ok[(activation, m)]`` is true, their text per activation with the widths
    tried)."""
    per_act = {a: [m for (b, m), v in sorted(ok.items()) if b == a and v] for a in REFERENCE}
    done = {a: sorted(m for (b, m) in ok if b == a) for a in REFERENCE}
    return per_act, "; ".join(f"{a}: " + (", ".join(f"m = {m}" for m in per_act[a]) or "none")
                              + f" (of m = {', '.join(map(str, done[a])) or '-'})" for a in REFERENCE)


def delta_nn_records(files) -> dict:
    """(activation, eta, m) -> the `thresholds nn --json` record of each file, which must be phase retrieval at the
    600-step horizon of the crossings (a file of another setup is an error: it would be set against the wrong
    crossings)."""
    out = {}
    for f in files:
        r = json.loads(Path(f).read_text())
        s = r["setup"]
        if s["link"] != "phase_retrieval" or s["steps"] != 600 or not r.get("found"):
            raise SystemExit(f"{f}: not a delta_NN found at phase retrieval and 600 steps")
        out[(s["activation"], float(s["eta"]), int(s["m"]))] = r
    return out


def delta_nn_limits(files) -> dict:
    """Series label -> [(m, delta_NN, low, high)] from `thresholds nn --json` files (:func:`delta_nn_records`); low nan
    where the record is a bound (``below_range``: a negative hard outlier already at the lower end of its search)."""
    out = {}
    for (act, eta, m), r in delta_nn_records(files).items():
        low = math.nan if r.get("below_range") else r["delta_nn_low"]   # a bound at the search's lower end: nan
        out.setdefault(f"{act}, eta {eta:g}", []).append((m, r["delta_nn"], low, r["delta_nn_high"]))
    return out


def _width_spec(option: str, spec: str) -> tuple:
    """(activation, eta, m, files) of an ``ACT:ETA:M=FILE[,FILE...]`` spec; SystemExit naming ``option`` otherwise."""
    try:
        head, files = spec.split("=", 1)
        act, eta, m = head.split(":")
        return act, float(eta), int(m), files
    except ValueError:
        raise SystemExit(f"{option} {spec!r}: expected ACT:ETA:M=FILE[,FILE...]") from None


def indicator_brackets(specs) -> dict:
    """Series label -> [(m, low, high)] from ``ACT:ETA:M=FILE[,FILE...]`` specs: the bracket of delta_NN(600) by the
    signs of I_T in validation.indicator_points records (its ``bracket``, on the replicas that settle), for the
    widths where no full search was run (low None: I_T > 0 at every delta done where a replica settles, the bracket
    open below).  Every row must be at the 600-step horizon, and some delta must have I_T > 0."""
    out = {}
    for spec in specs:
        act, eta, m, files = _width_spec("--brackets", spec)
        rows = [r for f in files.split(",") for r in records.read(Path(f))]
        if not rows or any(r["steps"][-1] != 600 for r in rows):
            raise SystemExit(f"--brackets {spec!r}: no records, or records not at the 600-step horizon")
        low, high = bracket(rows)
        if high is None or (low is not None and low >= high):
            raise SystemExit(f"--brackets {spec!r}: the records do not bracket delta_NN (I_T <= 0 up to {low}, "
                             f"> 0 from {high})")
        out.setdefault(f"{act}, eta {eta:g}", []).append((m, low, high))
    return out


@dataclass(frozen=True)
class SettledBracket:
    """The infinite-horizon bracket of one width (validation.settled_hessian.settled_bracket) over every d of its
    records (``low``, ``high``; None for an open end), those ``dims``, and the bracket at each d alone (``per_d``:
    d -> (low, high)), which can differ (validation/reports/planted/width section 12c)."""

    low: float | None
    high: float | None
    dims: list
    per_d: dict


def settled_brackets(specs) -> dict:
    """(activation, eta, m) -> :class:`SettledBracket` from ``ACT:ETA:M=FILE[,FILE...]`` specs: the infinite-horizon
    bracket of validation.settled_hessian records (settled_bracket: where the hard outlier of GD's first phase stays
    or vanishes over 3 x 10^4 steps, finite d), over every d together and at each d.  Every record must be of the
    spec's activation (records of other widths or step sizes in the files are skipped); over every d together some
    delta must keep its outlier."""
    from validation.settled_hessian import settled_bracket
    from validation.width_horizon import finite_d_brackets
    out = {}
    for spec in specs:
        act, eta, m, files = _width_spec("--settled", spec)
        rows = [r for f in files.split(",") for r in records.read(Path(f)) if r["m"] == m and r["eta"] == eta]
        if any(r["activation"] != act for r in rows):
            raise SystemExit(f"--settled {spec!r}: the records are not all of activation {act}")
        low, high = settled_bracket(rows)
        if high is None:
            raise SystemExit(f"--settled {spec!r}: no delta of the records keeps its outlier")
        per_d = finite_d_brackets(rows, m)
        out[(act, eta, m)] = SettledBracket(low, high, list(per_d), per_d)
    return out


@dataclass(frozen=True)
class LawThreshold:
    """delta_NN of the unbiased d = inf law at the last checkpoint of a validation.settle file (settle eq. (1) on the
    data sets of n = delta D; ``crossing`` a thresholds.nn.Crossing), that ``step`` and the ``deltas`` it rests on."""

    crossing: object
    step: int
    deltas: list


def settle_thresholds(specs, D: int = 400) -> dict:
    """(activation, eta, m) -> :class:`LawThreshold` from ``ACT:ETA:M=FILE`` specs, one validation.settle file each,
    whose name must be of that setup (``ACT_phase_retrieval_etaETA_T<T>[_mM].jsonl``: the lines do not carry it) and
    whose lines must give eq. (1) a threshold at some checkpoint (two deltas or more)."""
    from validation.width_horizon import gather
    out = {}
    for spec in specs:
        act, eta, m, file = _width_spec("--settle", spec)
        width = "" if m == 1 else f"_m{m}"
        if not Path(file).is_file():
            raise SystemExit(f"--settle {spec!r}: no such file")
        if not re.fullmatch(rf"{re.escape(act)}_phase_retrieval_eta{re.escape(f'{eta:g}')}_T\d+{width}\.jsonl",
                            Path(file).name):
            raise SystemExit(f"--settle {spec!r}: the file is not a validation.settle file of {act}, phase "
                             f"retrieval, eta {eta:g}, m = {m}")
        (w,) = gather({m: records.read(Path(file))}, [], D)
        if w.last is None:
            raise SystemExit(f"--settle {spec!r}: fewer than two deltas with the cut n = delta {D}")
        out[(act, eta, m)] = LawThreshold(w.last[1], w.last[0], w.deltas)
    return out


def by_series(brackets: dict, d: int = None) -> dict:
    """Series label -> [(m, low, high)] of :func:`settled_brackets`' output, as the figure draws them: the bracket
    over every d, or with ``d`` the bracket at that d alone (a width without records there, or none of whose deltas
    keeps its outlier there, is left out: the bracket moves with d, width section 12d)."""
    out = {}
    for (act, eta, m), b in brackets.items():
        low, high = (b.low, b.high) if d is None else b.per_d.get(d, (None, None))
        if high is not None:
            out.setdefault(f"{act}, eta {eta:g}", []).append((m, low, high))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=200)
    ap.add_argument("--points", action="store_true", help="also the per-point rates of every width")
    ap.add_argument("--out", type=Path, nargs="+", default=[OUT], help="directories of the forced trial records "
                    "(a later one that holds a point replaces the earlier ones' crossing there)")
    ap.add_argument("--dims", default="200,400,800", help="with --reference: the dimensions of its columns")
    ap.add_argument("--plot", type=Path, help="the crossing against m as a PNG")
    ap.add_argument("--reference", type=Path, help="write the table of crossings against the published figures "
                    "(markdown) to this file")
    ap.add_argument("--delta-nn", type=Path, nargs="*", default=[], help="`thresholds nn --json` files (phase "
                    "retrieval, 600 steps): with --plot their delta_NN is drawn at their width, with --reference it "
                    "is a column of the table")
    ap.add_argument("--joint", default=None, help="D1,D2,...: also the joint offset of the forced crossings from "
                    "GD's over every (setup, width) cell at these d (eq. (1) of JointOffset); default: --d alone")
    ap.add_argument("--brackets", nargs="*", default=[], help="ACT:ETA:M=FILE[,FILE...]: with --plot, the bracket of "
                    "delta_NN(600) from validation.indicator_points records drawn at width M")
    ap.add_argument("--settled", nargs="*", default=[], help="ACT:ETA:M=FILE[,FILE...]: the "
                    "infinite-horizon bracket of validation.settled_hessian records, drawn at width M with --plot (the "
                    "bracket at --d), a column with --reference")
    ap.add_argument("--settle", nargs="*", default=[], help="ACT:ETA:M=FILE: with --reference, a column with "
                    "delta_NN of the d = inf law at the last checkpoint of a validation.settle file (eq. (1), n = "
                    "delta 400 data sets)")
    args = ap.parse_args(argv)
    settled = settled_brackets(args.settled)
    law = settle_thresholds(args.settle)
    lines, series = table(args.d, args.out)
    print("\n".join(lines))
    joint_dims = [int(v) for v in args.joint.split(",")] if args.joint else [args.d]
    pairs = [(f, g) for _, f, g in cells(joint_dims, args.out) if f and g]
    if pairs:
        print(f"\nd = {', '.join(map(str, joint_dims))}: " + joint_line(joint_offset(pairs)))
    if args.points:
        for (act, eta, m), reports in GD.items():
            rows = rows_by_d(act, eta, m, args.out).get(args.d)   # the records the crossings use
            if rows:
                print(f"\n{act}, eta {eta:g}, m = {m}, d = {args.d}:\n")
                print("\n".join(summarize(rows, [REPORTS / r for r in reports if (REPORTS / r).exists()])))
    if args.reference:
        head = ["# Finite-d crossings across widths against the published figures (phase retrieval)", "",
                f"Generated by `python -m validation.forced_width --out {' '.join(map(str, args.out))} --dims "
                f"{args.dims} --reference FILE"
                + (" --delta-nn " + " ".join(map(str, args.delta_nn)) if args.delta_nn else "")
                + (" --settled " + " ".join(args.settled) if args.settled else "")
                + (" --settle " + " ".join(args.settle) if args.settle else "") + "` "
                "(a = 1, b = 0, rho0 = 1, no weight decay, square loss, mean-field step, a fixed "
                "horizon of 600 steps; GD: `thresholds validate` with 30-40 trials per point, as its report says; "
                "forced: "
                "thresholds.forced, stratified overlaps, paired s.e., the records of the last directory that holds "
                "a point).  The published figures (about 6.0 for gelu, 3.6 "
                "for quad) come with conventions this project does not know; a finite-d, fixed-horizon crossing "
                "near them is a setting in which both land there, not a reproduction."
                + ("  delta_NN: the d = inf threshold of `thresholds nn -T 600 [--m M] --json` on the default DMFT "
                   "law at the crossings' horizon (validation/reports/planted/width section 10)." if args.delta_nn
                   else "")
                + ("  Infinite horizon: the bracket of validation.settled_hessian records (GD restricted to the "
                   "complement of the hard subspace for 3 x 10^4 steps at the dimensions given; [low, high]: at low "
                   "every run's hard outlier goes with a growth below sqrt(d), at high every run's stays or lets GD "
                   "escape first (validation.settled_hessian.verdict); <= high: no delta below high where every "
                   "run's growth is bounded; over every d of the records, then at each d alone where they hold "
                   "several, since the bracket moves with d; a bracket open below does not exclude a figure under "
                   "its high end, it does not hold it; width sections 11-12c)." if args.settled else "")
                + ("  d = inf law, last checkpoint: delta_NN of the unbiased DMFT law run to T steps "
                   "(validation.settle eq. (1) on data sets of n = 400 delta, with the replicas' jackknife where the "
                   "lines keep them) at its last checkpoint, whose step is given; still rising there from m = 2 on "
                   "(width sections 12b, 12e)." if args.settle else ""), ""]
        dims = tuple(int(v) for v in args.dims.split(","))
        nn = delta_nn_records(args.delta_nn) if args.delta_nn else None
        text = head + reference_table(dims, out=args.out, nn=nn, settled=settled, law=law)
        args.reference.write_text("\n".join(text) + "\n")
    if args.plot:
        from thresholds.plots import crossing_vs_m_figure
        crossing_vs_m_figure(args.plot, series, title=f"phase retrieval, d = {args.d}, 600 steps: forced DMFT trials "
                             "(thresholds.forced) against GD" + (", and the d = inf delta_NN" if args.delta_nn else ""),
                             limits=delta_nn_limits(args.delta_nn), brackets=indicator_brackets(args.brackets),
                             settled=by_series(settled, args.d), settled_d=args.d)


if __name__ == "__main__":
    main()

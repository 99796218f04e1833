"""Which committed logistic crossings are collapsed fits (thresholds.crossing.collapsed_gap).

A success curve steeper than its grid (one rate strictly between 0 and 1, or none) leaves the logistic width
unresolved: thresholds.crossing.logistic_crossing then returns the midpoint of the gap that brackets 1/2 with
the standard deviation of a uniform law on it,

    c = (lo + hi) / 2,   s.e. = (hi - lo) / sqrt(12),                                                    (1)

an honest statement of where the crossing may lie, but not a measurement of it: a finer grid inside the gap can move
c by up to (hi - lo) / 2, about 1.7 of that s.e., and usually shrinks the s.e. several-fold (quad, m = 8, d = 200:
3.25 +- 0.14 collapsed, 3.04 +- 0.02 refined; validation.conventions_width eq. (2b)).  A z test that reads eq. (1)'s
s.e. as Gaussian is then a test against a flat band.  This module refits every success curve the project has
committed and lists the collapsed ones:

- GD: the per-d "successes / trials" tables of ``thresholds validate`` reports (report.md);
- the forced trials: JSON-lines records of one trial a line ("delta", "d", "trial", "success"; validation.
  forced_trials, validation.forced_width), per file and d, on the rates summed over the trials (the central value
  of thresholds.crossing.paired_crossing is this fit);
- the settings of validation.conventions_width (settings_width.jsonl; GD rows with "deltas" and "successes",
  forced rows with "points").

The released runs of validation.release_check (3-8 runs per delta, read at a horizon) are not audited here: that
module reports each crossing next to its bracket (``released_bracket``), so a collapsed fit shows as a bracket.

Run:  python -m validation.crossing_audit [--out validation/reports/crossing_audit.md]
"""

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from thresholds.crossing import bracketing_gap, gap_crossing, logistic_fit
from validation import records

REPORTS = Path(__file__).resolve().parent / "reports"
ROW = re.compile(r"\|\s*(\d+)\s*\|\s*([\d.eE+-]+)\s*\|\s*(\d+)\s*/\s*(\d+)\s*\|")


@dataclass(frozen=True)
class Curve:
    """One success curve: where it was read, its d, and (delta, successes, trials) by increasing delta."""

    source: str
    kind: str
    label: str
    d: int
    deltas: tuple
    successes: tuple
    trials: tuple

    @property
    def spacing(self) -> float:
        """The least step of the grid (the width-only rule's scale)."""
        return min(b - a for a, b in zip(self.deltas, self.deltas[1:]))


@dataclass(frozen=True)
class Finding:
    """A curve's logistic crossing (eq. (1) where collapsed) and the gap that brackets 1/2 when it collapses."""

    curve: Curve
    crossing: float | None
    se: float | None
    gap: tuple | None
    width: float | None   # the fitted logistic width (maximum likelihood), where the rates bracket 1/2

    @property
    def intermediate(self) -> int:
        """The deltas with a rate strictly between 0 and 1: below two the likelihood is largest as the width goes
        to 0 (the width is not identified); from two on a collapse is a fitted width under the criterion's quarter
        of the least grid spacing, with the crossing identified by the rates themselves."""
        return sum(0 < k < n for k, n in zip(self.curve.successes, self.curve.trials))

    @property
    def was_collapsed(self) -> bool:
        """Resolved now, but collapsed by the width-only rule used before thresholds.crossing eq. (6) (a fitted width
        below a quarter of the least spacing, whatever the rates): its crossing was the gap's midpoint."""
        return self.crossing is not None and self.gap is None and self.width <= 0.25 * self.curve.spacing

    @property
    def before(self) -> tuple:
        """(crossing, s.e.) by the width-only rule: eq. (6) on the bracketing gap where :attr:`was_collapsed`."""
        if not self.was_collapsed:
            return self.crossing, self.se
        return gap_crossing(bracketing_gap(self.curve.deltas, self.curve.successes, self.curve.trials))


def report_curves(path: Path, root: Path = REPORTS) -> list[Curve]:
    """The success curves of one ``thresholds validate`` report, one per d."""
    by_d = {}
    for line in path.read_text().splitlines():
        m = ROW.match(line.strip())
        if m:
            by_d.setdefault(int(m[1]), []).append((float(m[2]), int(m[3]), int(m[4])))
    return [_curve(path, root, "GD (validate)", "GD (validate)", d, pts) for d, pts in sorted(by_d.items())]


def trial_curves(path: Path, root: Path = REPORTS) -> list[Curve]:
    """The success curves of a records file of one trial a line, per d (rates summed over its trials)."""
    counts = {}
    for r in records.read(path):
        if not {"delta", "d", "trial", "success"} <= r.keys():
            return []
        k, n = counts.get((int(r["d"]), float(r["delta"])), (0, 0))
        counts[(int(r["d"]), float(r["delta"]))] = (k + bool(r["success"]), n + 1)
    by_d = {}
    for (d, delta), (k, n) in counts.items():
        by_d.setdefault(d, []).append((delta, k, n))
    return [_curve(path, root, "forced trials", "forced trials", d, pts) for d, pts in sorted(by_d.items())]


def settings_curves(path: Path, root: Path = REPORTS) -> list[Curve]:
    """The success curves of validation.conventions_width's records (GD and forced rows)."""
    out = []
    for r in records.read(path):
        label = f"{r['route']} {r['activation']} m = {r['m']} {r['setting']}"
        if "deltas" in r and "successes" in r:
            pts = [(x, k, r["trials"]) for x, k in zip(r["deltas"], r["successes"])]
        elif "points" in r:
            pts = [tuple(p) for p in r["points"]]
        else:
            continue
        out.append(_curve(path, root, "conventions_width", label, int(r["d"]), pts))
    return out


def _curve(path, root, kind, label, d, pts) -> Curve:
    pts = sorted(pts)
    return Curve(str(path.relative_to(root)) if path.is_relative_to(root) else str(path), kind, label, d,
                 tuple(p[0] for p in pts), tuple(p[1] for p in pts), tuple(p[2] for p in pts))


def audit(curve: Curve) -> Finding:
    fit = logistic_fit(curve.deltas, curve.successes, curve.trials)
    if fit is None:
        return Finding(curve, None, None, None, None)
    return Finding(curve, *fit.crossing, fit.gap, fit.width)


def curves(root: Path = REPORTS) -> list[Curve]:
    """Every success curve under ``root`` (report.md tables, one-trial-a-line records, settings_width.jsonl)."""
    out = []
    for path in sorted(root.rglob("report.md")):
        out += report_curves(path, root)
    for path in sorted(root.rglob("*.jsonl")):
        if path.name == "settings_width.jsonl":
            out += settings_curves(path, root)
        else:
            out += trial_curves(path, root)
    return out


def table(findings: list[Finding]) -> list[str]:
    """Markdown: the collapsed curves, with their rates inside and about the gap."""
    lines = [("| source | curve | d | crossing (eq. (1)) | gap | rates about the gap | rates in (0, 1) | fitted width / "
              "least spacing |"), "|---|---|---|---|---|---|---|---|"]
    for f in findings:
        c = f.curve
        lo, hi = f.gap
        near = [f"{x:g}: {k}/{n}" for x, k, n in zip(c.deltas, c.successes, c.trials)
                if lo - 1e-9 <= x <= hi + 1e-9]
        lines.append(f"| {c.source} | {c.label} | {c.d} | {f.crossing:.3f} +- {f.se:.3f} | [{lo:g}, {hi:g}] | "
                     + ", ".join(near) + f" | {f.intermediate} | {f.width / c.spacing:.3f} |")
    return lines


def report(root: Path = REPORTS) -> str:
    found = [audit(c) for c in curves(root)]
    bracketing = [f for f in found if f.crossing is not None]
    collapsed = [f for f in bracketing if f.gap is not None]
    kinds = sorted({f.curve.kind for f in found})
    lines = ["# Collapsed logistic crossings in the committed records", "",
             ("Generated by `python -m validation.crossing_audit` (module docstring).  A collapsed fit's crossing is "
              "the midpoint of the gap that brackets 1/2, its s.e. the gap / sqrt(12) (eq. (1)): where the crossing "
              "may lie, not a measurement of it.  Every curve is refitted here by thresholds.crossing as it is now; "
              "a report.md prints the crossing of the code that wrote it."), "",
             (f"{len(found)} success curves read ({', '.join(kinds)}); {len(bracketing)} bracket 1/2; "
              f"**{len(collapsed)} collapsed**."), ""]
    if collapsed:
        lines += table(collapsed)
    changed = [f for f in bracketing if f.was_collapsed]
    lines += ["", (f"**{len(changed)} resolved by eq. (6)'s two-rate rule** (collapsed by the width-only rule before "
                   "it: two rates inside (0, 1), a fitted width under a quarter of the least spacing):"), ""]
    if changed:
        lines += changed_table(changed)
    return "\n".join(lines) + "\n"


def changed_table(findings: list[Finding]) -> list[str]:
    """Markdown: the curves eq. (6) resolves, their crossing before (the gap's midpoint) and now."""
    lines = ["| source | curve | d | before | now | rates |", "|---|---|---|---|---|---|"]
    for f in findings:
        c, (b, bse) = f.curve, f.before
        rates = ", ".join(f"{x:g}: {k}/{n}" for x, k, n in zip(c.deltas, c.successes, c.trials))
        lines.append(f"| {c.source} | {c.label} | {c.d} | {b:.3f} +- {bse:.3f} | {f.crossing:.3f} +- {f.se:.3f} | "
                     f"{rates} |")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", metavar="MD", help="also write the report here")
    args = ap.parse_args(argv)
    text = report()
    if args.out:
        Path(args.out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()

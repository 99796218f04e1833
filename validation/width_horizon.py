"""Infinite-horizon thresholds against the width: the d = inf law per checkpoint and GD's first phase at finite d.

Two routes to the delta above which the first phase keeps a negative hard outlier, per width m
(validation/reports/planted/width sections 12-12f):

* d = inf: the unbiased DMFT law run to T steps (validation.settle), delta_NN at every checkpoint on the data
  sets of n = delta D (settle eq. (1), widened to the replicas' jackknife where the lines keep them);
* finite d: the Hessian verdicts of GD restricted to the complement of the hard subspace for 3 x 10^4 steps
  (validation.settled_hessian; GD released from that first phase learns lower, validation.release_check),
  the infinite-horizon bracket of each (m, d) alone (``settled_bracket`` on that d's runs), its hard outlier by
  settled_hessian eq. (1) or, with ``--rule detached``, eq. (1'): only left of the bulk, as the d = inf indicator
  counts it.

This module computes nothing those two do not: it takes one settle file per width and the settled_hessian
records, and gives per width a :class:`WidthHorizon` record, a markdown table and a figure with two panels,
(a) the d = inf delta_NN against the step, one curve per width, and (b) against m, the d = inf value at the last
checkpoint beside GD's brackets at each d.

Run:  python -m validation.width_horizon --settle 1=S1.jsonl --settle 2=S2.jsonl ... --settled R1.jsonl,R2.jsonl
      --edge-d 400 --out F.png [--markdown F.md]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click

from validation.records import read_file
from validation.release_check import at_horizon, released_bracket
from validation.settle import crossing_text, threshold_lines, thresholds_by_step
from validation.settled_hessian import RULES, bracket_text, settled_bracket, under_rule


@dataclass
class WidthHorizon:
    """One width: the d = inf delta_NN per checkpoint [(step, Crossing)] (empty without a settle file or with
    fewer than two deltas), the deltas it rests on, GD's infinite-horizon bracket per d from the Hessian verdicts,
    {d: (low, high)}, and the bracket of GD released from its first phase per d (:func:`released_bracket`)."""
    m: int
    by_step: list = field(default_factory=list)
    deltas: list = field(default_factory=list)
    brackets: dict = field(default_factory=dict)
    released: dict = field(default_factory=dict)   # {d: (low, high)} of GD released from its first phase

    @property
    def last(self):
        """(step, Crossing) at the last checkpoint, or None."""
        return self.by_step[-1] if self.by_step else None


def finite_d_brackets(rows: list, m: int) -> dict:
    """{d: settled_bracket of the runs at width m and that d}, d ascending."""
    dims = sorted({r["d"] for r in rows if r["m"] == m})
    return {d: settled_bracket([r for r in rows if r["m"] == m and r["d"] == d]) for d in dims}


def released_brackets(rows: list, m: int, t1: int) -> dict:
    """{d: :func:`released_bracket`} of the release records at width m released at step t1 with a random start's
    hard component (scale 1), d ascending, each d read at its common horizon (release_check eq. (4))."""
    rows = [r for r in rows if r["m"] == m and r["t1"] == t1 and r.get("scale", 1.0) == 1.0]
    dims = sorted({r["d"] for r in rows})
    return {d: released_bracket(at_horizon([r for r in rows if r["d"] == d]).rows) for d in dims}


def gather(settle_lines: dict, settled_rows: list, D: int, rule: str = "weighted", released_rows: tuple = (),
           t1: int = 10000) -> list[WidthHorizon]:
    """One :class:`WidthHorizon` per width found in any input, m ascending; ``settle_lines``: {m: lines of one
    settle file}, ``D``: the cut of settle eq. (1) (n = delta D), ``rule``: settled_hessian's eq. (1) or (1'),
    ``released_rows``: validation.release_check records, those released at ``t1`` taken."""
    settled_rows = under_rule(settled_rows, rule)
    widths = sorted(set(settle_lines) | {r["m"] for r in settled_rows} | {r["m"] for r in released_rows})
    out = []
    for m in widths:
        lines = settle_lines.get(m, [])
        out.append(WidthHorizon(m, thresholds_by_step(lines, D), [line["delta"] for line in threshold_lines(lines)],
                                finite_d_brackets(settled_rows, m), released_brackets(released_rows, m, t1)))
    return out


def table(widths: list[WidthHorizon], D: int, rule: str = "weighted", t1: int = 10000) -> list[str]:
    """Markdown: per width the d = inf threshold at the last checkpoint (with the step and the deltas), GD's
    bracket at each d of the records (``rule``: the one :func:`gather` took, named in the header when detached)
    and the released runs' bracket at each d (released at ``t1``)."""
    dims = sorted({d for w in widths for d in w.brackets})
    rdims = sorted({d for w in widths for d in w.released})
    name = "Hessian verdicts of GD's first phase" + (", outlier left of the bulk" if rule == "detached" else "")
    heads = [f"m | d = inf, delta_NN at the last checkpoint (n = delta {D}) | step | deltas"]
    heads += [f"{name}, d = {d}" for d in dims] + [f"GD released at t1 = {t1}, d = {d}" for d in rdims]
    lines = ["| " + " | ".join(heads) + " |", "|---|---|---|---|" + "---|" * (len(dims) + len(rdims))]
    for w in widths:
        last = w.last
        cells = [crossing_text(last[1]) if last else "-", str(last[0]) if last else "-",
                 ", ".join(f"{x:g}" for x in w.deltas) or "-"]
        cells += [bracket_text(*w.brackets[d]) if d in w.brackets else "-" for d in dims]
        cells += [bracket_text(*w.released[d]) if d in w.released else "-" for d in rdims]
        lines.append(f"| {w.m} | " + " | ".join(cells) + " |")
    return lines


def settle_spec(text: str) -> tuple[int, Path]:
    m, sep, path = text.partition("=")
    if not sep or not m.strip().isdigit() or int(m) < 1 or not path:
        raise click.BadParameter(f"{text!r}: expected M=FILE with M a width >= 1", param_hint="--settle")
    return int(m), Path(path)


SETTLE_KEYS = ("delta", "paths", "replicas", "checkpoints")
SETTLED_KEYS = ("m", "d", "delta", "eta", "period_two", "points")
RELEASED_KEYS = ("m", "d", "delta", "t1", "learned")


def read_records(path: Path, keys: tuple, kind: str) -> list:
    """The records of ``path``, each a dict with ``keys``; a one-line click error otherwise."""
    rows = read_file(path)
    bad = next((k for k, r in enumerate(rows, 1) if not isinstance(r, dict) or any(key not in r for key in keys)), None)
    if bad is not None:
        raise click.ClickException(f"{path}, record {bad}: not a {kind} record (needs {', '.join(keys)})")
    return rows


def read_settle(specs) -> dict:
    """{m: the lines of its validation.settle file} from ``--settle`` M=FILE texts; one file per width."""
    pairs = [settle_spec(text) for text in specs]
    if len({m for m, _ in pairs}) < len(pairs):
        raise click.ClickException("--settle: one file per width")
    return {m: read_records(path, SETTLE_KEYS, "validation.settle") for m, path in pairs}


@click.command()
@click.option("--settle", "settle_specs", multiple=True, help="M=FILE: a validation.settle file of width M")
@click.option("--settled", default="", help="validation.settled_hessian records, comma-separated")
@click.option("--edge-d", "D", type=click.IntRange(min=1), default=400, show_default=True,
              help="the cut of settle eq. (1): data sets of n = delta D")
@click.option("--out", type=click.Path(dir_okay=False), help="PNG of the two panels")
@click.option("--markdown", type=click.Path(dir_okay=False), help="write the table here as well")
@click.option("--rule", type=click.Choice(RULES), default="weighted", show_default=True,
              help="GD's hard outlier: settled_hessian eq. (1), or (1') left of the bulk only")
@click.option("--released", default="", help="validation.release_check records, comma-separated: GD released from "
              "its first phase, the bracket where half the runs learn")
@click.option("--release-t1", "t1", type=click.IntRange(min=1), default=10000, show_default=True,
              help="the release step of the --released records taken")
@click.option("--title", default="")
def main(settle_specs, settled, D, out, markdown, rule, released, t1, title):
    settle_lines = read_settle(settle_specs)
    rows = [r for p in settled.split(",") if p
            for r in read_records(Path(p), SETTLED_KEYS, "validation.settled_hessian")]
    released_rows = [r for p in released.split(",") if p for r in read_records(Path(p), RELEASED_KEYS,
                                                                            "validation.release_check")]
    try:
        widths = gather(settle_lines, rows, D, rule, released_rows, t1)
    except (KeyError, TypeError, IndexError, ValueError) as exc:   # a checkpoint or point without its fields
        raise click.ClickException(f"a record's checkpoints or points are malformed ({exc!r})") from None
    if not widths:
        raise click.ClickException("nothing to show: give --settle, --settled and/or --released")
    text = "\n".join(table(widths, D, rule, t1))
    print(text)
    if markdown:
        Path(markdown).write_text(text + "\n")
    if out:
        from thresholds.plots import horizon_vs_m_figure
        curves = {w.m: [(s, c.value, c.low, c.high) for s, c in w.by_step if c.found and c.low > 0.0]
                  for w in widths}
        limits = [(w.m, w.last[0], w.last[1].value, w.last[1].low, w.last[1].high) for w in widths
                  if w.last and w.last[1].found and w.last[1].low > 0.0]
        series = {"brackets": {}, "released": {}}
        for w in widths:
            for kind, per_d in series.items():
                for d, (low, high) in getattr(w, kind).items():
                    if high is not None:
                        per_d.setdefault(d, []).append((w.m, low, high))
        horizon_vs_m_figure(out, curves, limits, series["brackets"], D=D, title=title, released=series["released"],
                            released_label=f"GD released at t1 = {t1}, d = {{d}}")
        print(out)


if __name__ == "__main__":
    main()

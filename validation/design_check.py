"""The sequential design of thresholds.forced (eq. (2p)) replayed on committed forced-trial records.

A records file of validation.forced_trials holds, per (delta, d), trials 0 .. K - 1 run with a fixed design on a
grid of deltas.  Each (file, d) with at least four deltas is replayed: the first K_p = max(4, K / 4) trials at
every delta (the pilot), then all K at the two deltas around the crossing fitted so far
(thresholds.forced.refine_at) until it lies between two such deltas.  The same trials' outcomes enter both fits,
so the table shows what the design changes on real trials: its crossing and s.e. against the fixed design's
(thresholds.crossing.paired_crossing on every trial), and the trials it needs.

    python -m validation.design_check validation/reports/planted/forced/stratified/*.jsonl \\
        --out validation/reports/planted/forced/design.md
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

from thresholds.crossing import paired_crossing
from thresholds.forced import pilot_for, refine_at
from validation import records


def replay(deltas, outcomes, trials: int, pilot: int):
    """Eq. (2p) on a fixed grid: ``outcomes[i][k]`` the success of trial k at ``deltas[i]`` (k < ``trials``).
    Returns (crossing, s.e., trials used); (None, None, used) when the pilot's rates do not bracket 1/2."""
    sizes = [pilot] * len(deltas)
    fit = lambda: paired_crossing(deltas, [o[:n] for o, n in zip(outcomes, sizes)])  # noqa: E731
    c, se = fit()
    for _ in range(len(deltas)):
        todo = [] if c is None else refine_at(deltas, sizes, c, trials)
        if not todo:
            break
        for i in todo:
            sizes[i] = trials
        c, se = fit()
    return c, se, sum(sizes)


def rows_of(path: Path):
    """(d, deltas, outcomes, K) per d of a records file with at least four deltas, K the trials that every
    delta of that d holds (trials 0 .. K - 1)."""
    wins = defaultdict(dict)
    for r in records.read(path):
        wins[(int(r["d"]), float(r["delta"]))][int(r["trial"])] = bool(r["success"])
    by_d = defaultdict(list)
    for (d, delta), trials in wins.items():
        by_d[d].append((delta, trials))
    for d, pts in sorted(by_d.items()):
        pts.sort()
        K = min(next(k for k in range(len(t) + 1) if k not in t) for _, t in pts)   # the common prefix
        if len(pts) >= 4 and K >= 16:
            yield d, [x for x, _ in pts], [[t[k] for k in range(K)] for _, t in pts], K


def table(paths) -> list[str]:
    lines = ["| records | d | K | fixed design: crossing +- s.e. (trials) | eq. (2p), K_p = K/4 | difference / s.e. |",
             "|---|---|---|---|---|---|"]
    for path in paths:
        for d, deltas, outcomes, K in rows_of(Path(path)):
            c0, s0 = paired_crossing(deltas, outcomes)
            if c0 is None:
                continue
            c1, s1, used = replay(deltas, outcomes, K, pilot_for(K))
            name = "/".join(Path(path).parts[-2:])
            two = (f"{c1:.3f} +- {s1:.3f} ({used})" if c1 is not None else f"not bracketed ({used})")
            diff = f"{(c1 - c0) / s0:+.2f}" if c1 is not None else "-"
            lines.append(f"| {name} | {d} | {K} | {c0:.3f} +- {s0:.3f} ({K * len(deltas)}) | {two} | {diff} |")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+", help="forced-trial records files (JSON lines)")
    ap.add_argument("--out", type=Path, help="write the table there too")
    args = ap.parse_args(argv)
    lines = table(args.records)
    diffs = [float(line.split("|")[-2]) for line in lines[2:] if line.split("|")[-2].strip() != "-"]
    if diffs:
        lines += ["", f"{len(diffs)} replays: difference (eq. (2p) - fixed) / fixed s.e. mean "
                  f"{sum(diffs) / len(diffs):+.2f}, rms {math.sqrt(sum(x * x for x in diffs) / len(diffs)):.2f}."]
    print("\n".join(lines))
    if args.out:
        head = ["# The sequential design (thresholds.forced eq. (2p)) replayed on committed records", "",
                __doc__.split("\n\n")[1].replace("\n", " "), "",
                "Made by `python -m validation.design_check " + " ".join(str(p) for p in args.records)
                + f" --out {args.out}`.", ""]
        args.out.write_text("\n".join(head + lines) + "\n")


if __name__ == "__main__":
    main()

"""Experiment records: one JSON object per line, appended as each trial ends (an interrupted
experiment resumes from the lines already written)."""

from __future__ import annotations

import json
from pathlib import Path


def read(path: Path) -> list[dict]:
    """Every record of ``path`` ([] when it does not exist yet).  A last line without its newline is the
    partial write of an interrupted experiment (killed, disk full) and is left out; any other malformed
    line raises ValueError naming its line."""
    if not path.exists():
        return []
    lines = path.read_text().split("\n")   # the last item is '' after a complete write, else a partial line
    out = []
    for k, line in enumerate(lines[:-1], 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}, line {k}: not JSON ({exc.msg})") from None
    return out


def append(path: Path, record: dict | None) -> None:
    """Append one record (None: nothing, e.g. a diverged trial), after removing a partial last line (read)."""
    if record is None:
        return
    text = json.dumps(record) + "\n"
    if path.exists() and path.stat().st_size:
        with open(path, "rb+") as fh:
            fh.seek(-1, 2)                      # only the last byte, unless the last line is partial
            if fh.read(1) != b"\n":
                fh.seek(0)
                data = fh.read()
                fh.truncate(data.rfind(b"\n") + 1)
    with open(path, "a") as fh:
        fh.write(text)


def print_block(path: Path, summarize, d: int, delta: float) -> None:
    """The summary rows (without the header) of the records at (d, delta)."""
    rows = [r for r in read(path) if r["d"] == d and r["delta"] == delta]
    print("\n".join(summarize(rows)[2:]), flush=True)


def trial_arguments(ap, trials: int):
    """The options of a trial experiment besides the setup: the trials per point and ``--summary``."""
    ap.add_argument("--trials", type=int, default=trials)
    ap.add_argument("--summary", action="store_true", help="Only print the summary table of the stored trials.")
    return ap


def experiment(out: Path, args) -> tuple[Path, list[dict]]:
    """The records file of an experiment on (activation, link, eta) under ``out``, and its records."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{args.activation}_{args.link}_eta{args.eta:g}.jsonl"
    return path, read(path)

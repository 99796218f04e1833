"""Experiment records: one JSON object per line, appended as each trial ends (an interrupted
experiment resumes from the lines already written)."""

from __future__ import annotations

import json
from pathlib import Path


def read(path: Path) -> list[dict]:
    """Every record of ``path`` ([] when it does not exist yet)."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def append(path: Path, record: dict | None) -> None:
    """Append one record (None: nothing, e.g. a diverged trial)."""
    if record is not None:
        with open(path, "a") as fh:
            fh.write(json.dumps(record) + "\n")


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

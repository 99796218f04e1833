"""Experiment records: one JSON object per line, appended as each trial ends (an interrupted
experiment resumes from the lines already written), and the command-line options of the experiments that write
them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click


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


def read_rows(path: str) -> list:
    """The rows of a JSON-lines record (:func:`read`: none when the file is missing); a click error naming the line
    when one does not parse."""
    try:
        return read(Path(path))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def read_file(path) -> list:
    """The records of an existing JSON-lines file; a one-line click error when it is missing or a line does not
    parse."""
    if not Path(path).is_file():
        raise click.ClickException(f"{path}: no such file")
    try:
        return read(Path(path))
    except ValueError as exc:
        raise click.ClickException(f"{path}: not a records file ({exc})") from None


def extend(out: str, rows: list, deltas, make_row, log=None) -> list:
    """``rows`` (read from ``out``) plus ``make_row(delta)`` for each delta not yet among them, each appended to
    ``out`` as it ends (:func:`append`) and passed to ``log``."""
    done = {r["delta"] for r in rows}
    for delta in deltas:
        if delta in done:
            continue
        row = make_row(delta)
        append(Path(out), row)
        rows.append(row)
        done.add(delta)
        if log is not None:
            log(row)
    return rows


def number_list(text: str, kind, option: str) -> list:
    """Comma-separated positive numbers of ``kind`` (float or int); click.BadParameter otherwise."""
    try:
        values = [kind(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise click.BadParameter(f"{text!r}: expected comma-separated positive numbers", param_hint=option)
    return values


def per_delta_options(command):
    """The options of a resumable per-delta record of the default DMFT law (validation.escape_horizon,
    validation.indicator_points): the setup, the deltas and the JSON-lines file."""
    options = [click.option("-a", "--activation", required=True),
               click.option("-l", "--link", default="phase_retrieval", show_default=True),
               click.option("--eta", type=float, required=True),
               click.option("--steps", type=int, default=600, show_default=True),
               click.option("--m", type=int, default=1, show_default=True),
               click.option("--delta", "deltas", required=True, help="Comma-separated sample ratios."),
               click.option("--out", required=True, help="JSON-lines file (appended; deltas already there are "
                            "skipped).")]
    for option in reversed(options):
        command = option(command)
    return command

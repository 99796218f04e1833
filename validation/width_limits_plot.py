"""Figure: GD's crossing against d at several widths, with each width's d = inf delta_NN.

The forced-trial figures (validation.forced_width) compare widths at one d; this one follows each width along d,
to see whether the crossings head toward their own width's delta_NN (validation/reports/planted/width sections 10, 10d).
Each series is a label, the GD reports (``thresholds validate --report``; the table "| d | crossing delta (p = 1/2) |
s.e. |", read by validation.ground_truth_plot.crossings) and a ``thresholds nn --json`` record drawn as a dashed
line with its interval.

Run:  python -m validation.width_limits_plot --out F.png --title T
      --series "m = 1=NN.json:REPORT1,REPORT2" --series "m = 2=NN.json:REPORT3,..."
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from thresholds.plots import crossings_with_limits_figure
from validation.ground_truth_plot import crossings


def parse_series(text: str) -> tuple[str, Path, list[Path]]:
    """``LABEL=NN.json:REPORT,REPORT`` -> (label, nn record, GD reports); click.BadParameter when malformed."""
    if "=" not in text or ":" not in text.rsplit("=", 1)[1]:
        raise click.BadParameter(f"{text!r}: expected LABEL=NN.json:REPORT[,REPORT...]", param_hint="--series")
    label, rest = text.rsplit("=", 1)   # the label may hold "=" (m = 2), the paths not
    nn, reports = rest.split(":", 1)
    return label, Path(nn), [Path(r) for r in reports.split(",") if r]


def series_points(reports) -> list[tuple[int, float, float]]:
    """The GD crossings (d, value, s.e.) of every report, sorted in d."""
    return sorted(row for r in reports for row in crossings(r))


@click.command()
@click.option("--series", "specs", multiple=True, required=True, help="LABEL=NN.json:REPORT,REPORT,...")
@click.option("--out", required=True, type=click.Path(dir_okay=False))
@click.option("--title", default="")
def main(specs, out, title):
    series = []
    for spec in specs:
        label, nn, reports = parse_series(spec)
        try:
            record, points = json.loads(nn.read_text()), series_points(reports)
        except (OSError, ValueError) as exc:   # a missing file, a record that is not JSON, a report without the table
            raise click.ClickException(f"--series {spec!r}: {exc}") from None
        missing = [k for k in ("delta_nn", "delta_nn_low", "delta_nn_high", "setup") if k not in record]
        if missing or not points:
            raise click.ClickException(f"--series {spec!r}: " + (f"{nn} is not a thresholds nn --json record "
                                       f"(no {', '.join(missing)})" if missing else "no GD crossing in the reports"))
        series.append((label, record, points))
        print(label, [f"d = {d}: {v:.2f} +- {e:.2f}" for d, v, e in series[-1][2]])
    crossings_with_limits_figure(out, series, title=title)
    print(out)


if __name__ == "__main__":
    main()

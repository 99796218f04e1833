"""DMFT with easy directions against finite-d GD (issue: width m and easy directions).

Targets with an easy direction: y = z1 + z2^2 (``mixed``: z1 easy, z2 hard) at widths 1, 2, 4
and the staircase y = z1 + z1 z2 (both directions easy) at width 1.  The DMFT (signal
overlaps M(t), thresholds.dmft) and GD restricted to the complement of the hard subspace at
d = 2000 are compared step by step, as in validation/width_check.py, including the squared
overlap with the easy directions.

    python -m validation.easy_check      # writes validation/reports/easy/README.md and PNGs
"""

from __future__ import annotations

from pathlib import Path

from validation.width_check import write_report

OUT = Path(__file__).parent / "reports" / "easy"
CASES = [("gelu", "mixed", 4.0, 0.2, 40, (1, 2, 4)),
         ("gelu", "staircase", 3.0, 0.2, 40, (1,))]


if __name__ == "__main__":
    write_report(CASES, OUT, "# DMFT with easy directions versus finite-d GD", "python -m validation.easy_check")

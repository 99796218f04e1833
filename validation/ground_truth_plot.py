"""Figure of the m = 1 ground truth: the simulated crossing against d, with the tool's d -> inf delta_NN.

Reads the crossings of the committed 40-trial sweeps (validation/reports/ground_truth/*/report.md, the
table "| d | crossing delta (p = 1/2) | s.e. |") and delta_NN at the horizon with its interval from the
committed `thresholds nn --json` results of the same setups (validation/reports/nn/), and writes
validation/reports/ground_truth/crossing_vs_d.png.  There is no finite-d prediction band: the
predictors tried do not predict these crossings (validation/reports/early_growth, finite_d).

Run:  python -m validation.ground_truth_plot
"""

from __future__ import annotations

import json
import re
from pathlib import Path

REPORTS = Path(__file__).resolve().parent / "reports"
SETUPS = (("quad", "quad_pr_eta0.05", "quad_gd_d1000_float32.json", "quad, eta 0.05"),
          ("gelu", "gelu_pr_eta0.1", "gelu_gd_d1000_float32.json", "gelu, eta 0.1"))


def crossings(report: Path) -> list[tuple[int, float, float]]:
    text = report.read_text()
    block = text[text.index("| d | crossing delta"):]
    block = block[: block.find("\n\n") if "\n\n" in block else len(block)]   # that table only
    return [(int(d), float(c), float(e)) for d, c, e in re.findall(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \|", block, re.M)]


def main():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, (name, sweep, nn_file, label) in zip(axes, SETUPS):
        rows = crossings(REPORTS / "ground_truth" / sweep / "report.md")
        nn = json.loads((REPORTS / "nn" / nn_file).read_text())
        ds, cs, es = zip(*rows)
        ax.errorbar(ds, cs, yerr=es, fmt="o", capsize=3, label="GD crossing (40 trials per point)")
        ax.axhline(nn["delta_nn"], color="C3", label=f"delta_NN (d -> inf) = {nn['delta_nn']:.2f}")
        ax.axhspan(nn["delta_nn_low"], nn["delta_nn_high"], color="C3", alpha=0.15)
        ax.axhline(nn["delta_alg"], color="k", ls=":", label=f"delta_alg = {nn['delta_alg']:g}")
        ax.set_xscale("log")
        ax.set_xticks(ds)
        ax.set_xticklabels([str(d) for d in ds])
        ax.minorticks_off()
        ax.set_xlabel("d")
        ax.set_ylabel("delta = n/d")
        ax.set_title(f"{label}, phase retrieval, m = 1", fontsize=9)
        ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 0.08))
    fig.tight_layout()
    out = REPORTS / "ground_truth" / "crossing_vs_d.png"
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()

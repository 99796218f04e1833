"""Grokking: predicted escape step versus unrestricted finite-d GD.

For delta above the threshold, unrestricted GD (theta^0 random, so the hard
overlap starts at order d^{-1/2}) is run at several d with several seeds; the
escape step is the first step with squared cosine to theta_* above 0.5.  The
prediction is thresholds.nn.escape_times: the log-growth L(t) of the hard
component along the negative hard outlier z*(t) of the Hessian over the first
phase, escape at L(t) = log sqrt(d).  The law of (u, y, g) is taken from
finite-d GD restricted to the complement (d = 1000, 2 seeds), see README.

    python -m validation.grok_check      # writes validation/reports/grokking/README.md and loss.png
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from thresholds.nn import NNSetup
from validation.gd_law import escape_times
from validation.threshold import escape_time, trial

OUT = Path(__file__).parent / "reports" / "grokking"
CASES = [("quad", 16.0, 0.05, 400), ("gelu", 24.0, 0.1, 400)]
DIMS = (500, 1000, 2000)
SEEDS = 4


def main():
    from thresholds.plots import pyplot
    OUT.mkdir(parents=True, exist_ok=True)
    lines = ["# Grokking: predicted versus measured escape step", "",
             "Unrestricted GD from theta^0 ~ N(0, I/d) (a = 1, b = 0, rho0 = 1, no weight decay), phase retrieval. "
             f"Escape = first step with cos^2(theta, theta_*) > 0.5; {SEEDS} seeds per d (mean +- s.e.; "
             "'never' counts runs without escape within the horizon).  Prediction: first t with "
             "L(t) = sum log(1 - eta z*(t)) = log sqrt(d), z*(t) the negative hard outlier of the Hessian on "
             "the finite-d GD law (d = 1000, 2 seeds) at 16 checkpoints.", "",
             "| sigma | delta | eta | d | predicted escape step | measured escape step | never |",
             "|---|---|---|---|---|---|---|"]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(CASES), figsize=(6 * len(CASES), 4))
    for ax, (act, delta, eta, steps) in zip(np.atleast_1d(axes), CASES):
        setup = NNSetup(act, eta=eta, steps=steps, law="gd", law_d=1000, replicas=2)
        pred = escape_times(setup, delta, DIMS)
        rows = {r["d"]: r for r in (pred["escape"] or {"rows": []})["rows"]}
        for d in DIMS:
            measured, never = [], 0
            for seed in range(SEEDS):
                _, run = trial(act, "phase_retrieval", delta, d, eta, steps, seed)
                t_esc = escape_time(run.cos2)
                if t_esc is None:
                    never += 1
                else:
                    measured.append(t_esc)
                if seed == 0:
                    ax.plot(run.train_loss, lw=1, label=f"train d={d}")
                    ax.plot(run.test_loss, lw=1, ls="--", label=f"test d={d}")
            p = rows.get(d)
            ptxt = "no escape" if p is None or p["steps"] is None else f"{p['steps']:.0f} +- {p['steps_err']:.0f}"
            m = np.array(measured, dtype=float)
            mtxt = "-" if m.size == 0 else (f"{m.mean():.0f} +- {m.std(ddof=1) / math.sqrt(m.size):.0f}"
                                            if m.size > 1 else f"{m[0]:.0f}")
            lines.append(f"| {act} | {delta:g} | {eta:g} | {d} | {ptxt} | {mtxt} | {never}/{SEEDS} |")
            print(lines[-1], flush=True)
            if p is not None and p["steps"] is not None:
                ax.axvline(p["steps"], color="gray", ls=":", lw=1)
        ax.set_xlabel("GD step")
        ax.set_ylabel("loss")
        ax.set_yscale("log")
        ax.set_title(f"{act}, delta = {delta:g} (dotted: predicted escape)", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "loss.png", dpi=110)
    lines += ["", "![loss curves](loss.png)"]
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

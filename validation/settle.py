"""Does the first phase settle at d = inf?  The Hessian after T steps of the DMFT law, over a long horizon.

delta_NN is defined at the point where the first phase of GD settles (THEORY.md section 4).  The finite-d GD
law at d = 1000 (validation/reports/nn/horizon.md) did not settle by t = eta T = 160: its left bulk edge stayed
below 0.  This check asks the d = inf law itself, now that the truncated source basis (thresholds.dmft eq. (6b))
makes long horizons affordable and free of the finite-paths bias (validation/reports/dmft_paths): one DMFT run
of T steps per delta, and at each of its 16 checkpoints (T/16, ..., T)

* ||theta||^2 and the train loss (has the first phase stopped moving?);
* the lower quantiles 1e-4, 1e-3, 1e-2 of the Hessian weight G (thresholds.hessian eq. (3)) and its minimum
  (m = 1; at ``--m`` >= 2 the weight is an m x m matrix and these columns are left out);
* the left bulk edge and the hard-outlier indicator (thresholds.hessian eq. (4)) on the law clipped at its 1e-3
  quantile (a tail cut with a d = inf limit) and on the law cut at the extreme of n = delta D samples for each
  D in ``--edge-d`` (eq. (5); the left edge of a data set at d = D).

One JSON line per delta in ``validation/reports/settle/<activation>_<link>_eta<eta>_T<T>[_m<m>].jsonl`` (a delta
already in the file with the same paths is skipped, so an interrupted job resumes); ``--summary`` prints the tables of the report.

Paths: the run takes ``--paths`` as given, and each line records the sources its replicas opened and the law's
self-interaction s = delta (r + m) / N of thresholds.dmft eq. (6f) (r the mean sources opened, N the paths per
replica); the summary flags a line whose s exceeds thresholds.nn.SELF_INTERACTION_MAX (the bound at which
``thresholds nn`` draws more paths, thresholds.evaluation eq. (4)): its law is biased by its paths, and the remedy
is ``--paths`` N s / SELF_INTERACTION_TARGET per replica.  Measured on gelu / phase retrieval, eta 0.1
(validation/reports/planted/width sections 12b, 12e): by 3000-5000 steps m = 1 opens 22-48 sources per replica,
m = 2 96-127 and m = 4 172-202, so 40000 paths per replica give s = 0.015-0.021 at m = 1 but 0.076-0.097 at m = 2
(delta 28-32) and 0.15-0.18 at m = 4 (delta 30-40); m = 8 opens 235-238 by step 1500 (s = 0.039 at delta 40 with
250000 per replica).  A biased law fits more: m = 2, delta 32, step 5000, train loss 0.928
at s = 0.097 against 0.950 at s = 0.029 (4 x 120000 paths), the indicator +0.009 +- 0.003 against +0.016 +- 0.005;
with 10000 paths per replica (s >= 0.29 with the sources of 5000 steps) the m = 2 law drifts to 0.815 at 10^4 steps.
Between path counts the settled ||theta||^2 moves within its replica spread (m = 1, delta 24, step 3000: 2.088 +-
0.083 / 1.993 / 1.949 +- 0.044 / 1.991 +- 0.037 at 4 x 5000 / 10000 / 20000 / 40000 paths): that 4 x 10000 and 4 x
40000 settle at the same four digits (1.9934) is chance.

Threshold per checkpoint: the summary ends with delta_NN at each checkpoint on the data sets of every ``--edge-d``
D, thresholds.crossing.first_crossing over the deltas' indicators (n = delta D) at that step: the first sign change
by linear interpolation, its interval the bracket's half-width and the Monte Carlo one in quadrature, or twice the
s.e. of a weighted line through the points within a factor 1.25 when that is wider (thresholds.crossing eqs.
(1)-(3)).  It takes one line per delta, the one with the most paths, and leaves out the lines flagged above (a law
biased by its paths); lines recorded before the sources were kept are taken and named.  The deltas are run with
the same seeds, so their errors may be shared (thresholds.crossing's caveat); when every line taken keeps its
replicas' indicators (``replicas`` in the cut, recorded since the lines of width 12e), the interval is widened to
the jackknife over the replicas, thresholds.crossing eq. (4), which sees what they share.                          (1)

Run:  python -m validation.settle -a quad --eta 0.05 --steps 6400 --delta 10,11,12 [--paths 160000]
      python -m validation.settle -a quad --eta 0.05 --steps 6400 --summary
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import click
import numpy as np

from thresholds.crossing import first_crossing, jackknife_widened
from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.hessian import hessian_weight, spectra_of_law
from thresholds.laws import dmft_law
from thresholds.nn import SELF_INTERACTION_MAX
from thresholds.numbers import mean_se
from validation.records import append, read

OUT = Path(__file__).parent / "reports" / "settle"
SOURCE_TOL = 1e-3   # thresholds.dmft eq. (6b): the law without the finite-paths bias at long horizons
QUANTILES = (1e-4, 1e-3, 1e-2)


def run_delta(setup: DMFTSetup, edge_dims) -> dict:
    """One DMFT run and its Hessian at every checkpoint (module docstring)."""
    start = time.time()
    res = solve_dmft(setup, cache=False, kernels=False)   # the law and the per-step curves only: the two-time
    # kernels would take 64 (T + 1)^2 bytes (13 GB at T = 20000)
    law = dmft_law(res)
    line = {"delta": setup.delta, "steps": setup.steps, "paths": setup.paths, "replicas": setup.replicas,
            "source_tol": setup.source_tol, "seconds_dmft": time.time() - start,
            "sources": [int(r) for r in res.sources],
            "self_interaction": res.self_interaction(), "checkpoints": []}
    cuts = {0: spectra_of_law(setup, law, outliers="none")}
    cuts.update({D: spectra_of_law(setup, law, outliers="none", edge_d=D) for D in edge_dims})
    for step in sorted(law.steps):
        row = {"step": step, "t": step * setup.eta, "norm2": float(res.norm2[step]),
               "norm2_err": float(res.norm2_err[step]), "train": float(res.train_loss[step]),
               "train_err": float(res.train_loss_err[step]), "G_quantiles": None, "G_min": None}
        if setup.m == 1:   # the scalar weight G of hessian eq. (3); at m >= 2 the weight is an m x m matrix
            Gs = [(hessian_weight(setup.activation, setup.a, setup.b, r.u, r.y), np.asarray(r.w))
                  for r in law.steps[step]]
            row["G_quantiles"] = {str(p): mean_se([_weighted_quantile(G, w, p) for G, w in Gs]) for p in QUANTILES}
            row["G_min"] = mean_se([float(np.min(G)) for G, _ in Gs])
        plain = cuts[0][step]
        row["clipped"] = [plain.negative_indicator_clipped, plain.negative_indicator_clipped_err]
        row["cut"] = {str(D): {"left_edge": [h.left_edge, h.left_edge_err],
                               "indicator": [h.negative_indicator, h.negative_indicator_err],
                               "replicas": [float(v) for v in h.indicator_replicas]}
                      for D, h in ((D, cuts[D][step]) for D in cuts)}
        line["checkpoints"].append(row)
    line["seconds"] = time.time() - start
    return line


def _weighted_quantile(G, w, p) -> float:
    """The lower p-quantile of G under the path weights w of one replica."""
    order = np.argsort(G)
    cum = np.cumsum(w[order])
    return float(G[order][min(int(np.searchsorted(cum, p)), len(G) - 1)])


def _fmt(pair, digits=3) -> str:
    v, e = pair
    return f"{v:+.{digits}f} +- {e:.{digits}f}" if math.isfinite(e) else f"{v:+.{digits}f}"


def _paths_note(line) -> str:
    """The sources opened and the self-interaction of thresholds.dmft eq. (6f), flagged above SELF_INTERACTION_MAX;
    nothing for lines recorded before the sources were kept."""
    size = line.get("self_interaction")
    if size is None:
        return ""
    flag = f" > {SELF_INTERACTION_MAX:g}: biased by its paths" if size > SELF_INTERACTION_MAX else ""
    return f"; sources {min(line['sources'])}-{max(line['sources'])}, self-interaction {size:.3f}{flag}"


def summary(lines: list, edge_dims) -> str:
    """Markdown tables, one per delta: the checkpoints' norm, train loss, G quantiles and indicators."""
    out = []
    for line in sorted(lines, key=lambda r: r["delta"]):
        out += [f"### delta = {line['delta']:g} ({line['replicas']} x {line['paths'] // line['replicas']} paths, "
                f"source_tol {line['source_tol']:g}, {line['seconds']:.0f} s{_paths_note(line)})", "",
                "| step | t | norm2 | train | G q1e-3 | G q1e-2 | G min | indicator, G clipped at 1e-3 | "
                + " | ".join(f"edge (n = delta {D}) | indicator (n = delta {D})" for D in edge_dims) + " |",
                "|" + "---|" * (8 + 2 * len(edge_dims))]
        for row in line["checkpoints"]:
            cells = [str(row["step"]), f"{row['t']:g}", f"{row['norm2']:.4f}", f"{row['train']:.4f}",
                     *((_fmt(row["G_quantiles"]["0.001"], 2), _fmt(row["G_quantiles"]["0.01"], 2),
                        _fmt(row["G_min"], 1)) if row["G_quantiles"] else ("-", "-", "-")), _fmt(row["clipped"])]
            for D in edge_dims:
                cut = row["cut"].get(str(D))
                cells += [_fmt(cut["left_edge"]), _fmt(cut["indicator"])] if cut else ["", ""]
            out.append("| " + " | ".join(cells) + " |")
        per_replica = line["paths"] // line["replicas"]
        short = [D for D in edge_dims if line["delta"] * D > per_replica]
        if short:   # eq. (5) of thresholds.hessian then takes one data set of all the replica's paths
            out += ["", "n = delta D above the " + f"{per_replica} paths of a replica for D = "
                    + ", ".join(map(str, short)) + f": those columns are one data set of {per_replica} paths, not n"]
        out.append("")
    return "\n".join(out)


def threshold_lines(lines: list) -> list:
    """The lines eq. (1) takes: per delta the one with the most paths among those not flagged as biased by their
    paths (self-interaction recorded and above SELF_INTERACTION_MAX), sorted in delta."""
    best = {}
    for line in lines:
        size = line.get("self_interaction")
        if size is not None and size > SELF_INTERACTION_MAX:
            continue
        if line["delta"] not in best or line["paths"] > best[line["delta"]]["paths"]:
            best[line["delta"]] = line
    return [best[d] for d in sorted(best)]


def thresholds_by_step(lines: list, D: int) -> list:
    """[(step, Crossing)] of eq. (1) on the data sets of n = delta D, at every checkpoint that each taken line has
    with that cut; empty with fewer than two deltas."""
    taken = threshold_lines(lines)
    if len(taken) < 2:
        return []
    out = []
    for row in taken[0]["checkpoints"]:
        cuts = []
        for line in taken:
            match = [c for c in line["checkpoints"] if c["step"] == row["step"] and str(D) in c["cut"]]
            if not match:
                break
            cuts.append(match[0]["cut"][str(D)])
        if len(cuts) < len(taken):
            continue
        found = first_crossing([(line["delta"], *cut["indicator"]) for line, cut in zip(taken, cuts)])
        reps = [np.asarray(cut.get("replicas") or [], dtype=float) for cut in cuts]
        if all(r.size for r in reps):   # every line with its replicas' values: the jackknife of crossing eq. (4)
            found = jackknife_widened(found, [line["delta"] for line in taken], reps)
        out.append((row["step"], found))
    return out


def crossing_text(c) -> str:
    """An eq. (1) crossing as text: "above X" without a sign change, "below X" when the first delta already has the
    outlier, else the value and its interval (its high end "inf" when a replica left out gives no crossing)."""
    if not c.found:
        return f"above {c.low:g}"
    if c.low == 0.0 and c.high == c.value:   # the first delta already has the outlier
        return f"below {c.value:g}"
    return f"{c.value:.2f} [{c.low:.2f}, {c.high:.2f}]"


def threshold_summary(lines: list, edge_dims) -> str:
    """Markdown table of eq. (1): delta_NN per checkpoint on the data sets of each D."""
    taken = threshold_lines(lines)
    tables = [(D, thresholds_by_step(lines, D)) for D in edge_dims]
    tables = [(D, rows) for D, rows in tables if rows]
    if not tables:
        return ""
    unknown = [f"{line['delta']:g}" for line in taken if line.get("self_interaction") is None]
    out = ["### delta_NN per checkpoint (eq. (1))", "",
           "Deltas taken: " + ", ".join(f"{line['delta']:g} ({line['replicas']} x {line['paths'] // line['replicas']})"
                                        for line in taken)
           + (f"; self-interaction not recorded for {', '.join(unknown)}" if unknown else "") + ".", "",
           "| step | " + " | ".join(f"delta_NN (n = delta {D})" for D, _ in tables) + " |",
           "|---|" + "---|" * len(tables)]
    steps = sorted({step for _, rows in tables for step, _ in rows})
    for step in steps:
        cells = [next((crossing_text(c) for s, c in rows if s == step), "") for _, rows in tables]
        out.append(f"| {step} | " + " | ".join(cells) + " |")
    return "\n".join(out + [""])


@click.command()
@click.option("-a", "--activation", default="quad")
@click.option("-l", "--link", default="phase_retrieval")
@click.option("--eta", type=float, default=0.05)
@click.option("--steps", type=int, default=6400)
@click.option("--delta", "deltas", default="10,11,12", help="comma-separated sample ratios")
@click.option("--paths", type=int, default=160_000, help="paths, all replicas together")
@click.option("--replicas", type=int, default=4)
@click.option("--edge-d", "edge_dims", default="1000,4000", help="the D of the eq. (5) cuts, comma-separated")
@click.option("--m", type=click.IntRange(min=1), default=1, help="width (m >= 2: the m x m engine on the law)")
@click.option("--summary", "only_summary", is_flag=True)
def main(activation, link, eta, steps, deltas, paths, replicas, edge_dims, m, only_summary):
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{activation}_{link}_eta{eta:g}_T{steps}{f'_m{m}' if m > 1 else ''}.jsonl"
    dims = [int(v) for v in edge_dims.split(",") if v]
    if not only_summary:
        for delta in (float(v) for v in deltas.split(",")):
            if any(r["delta"] == delta and r["paths"] == paths for r in read(path)):
                continue
            setup = DMFTSetup(activation, link, delta, eta, steps, m=m, paths=paths, replicas=replicas,
                              source_tol=SOURCE_TOL, population_risk=True)
            append(path, run_delta(setup, dims))
            print(f"delta {delta:g} done", flush=True)
    print(summary(read(path), dims))
    print(threshold_summary(read(path), dims))


if __name__ == "__main__":
    main()

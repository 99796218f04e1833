"""The lower tail of the Hessian weight G in the d = inf (DMFT) law, and the left edge of a data set of
n samples drawn from it by the median-minimum cut (the earlier form of thresholds.hessian eq. (5), which
now averages over data sets of n paths instead: ``validation.data_sets_check``).

Two records, one JSON line each in ``validation/reports/tail_edge/<case>.jsonl`` (runs already in the
file are skipped, so an interrupted job resumes):

* ``tail``: one DMFT replica of N paths (``--tail-paths``): the lowest values of G and its 1e-4 / 1e-3
  quantiles at T/4, T/2 and T.  A bounded law shows a minimum that stops moving with N; an exponential
  tail one that moves by a constant per factor of N.
* ``cut``: ``replicas`` x N paths (``--cut-paths N --per K1,K2``): the plain indicator at T/4, T/2 and T with
  the eq. (5) cut at n = delta d (d = ``--cut-d``) found from all N paths of a replica, and from each of the
  N // K disjoint subsets of K of its paths, by two estimators of the quantile: the weighted empirical one of
  thresholds.hessian (``_clip_lower``) and the median-unbiased order statistic (Hyndman & Fan's type 8, rank
  q (K + 1/3) + 1/3 interpolated).  With a few paths below the cut the first is biased toward the bulk; the record
  measures by how much the indicator moves, against the spread of one replica.
* ``edge``: ``replicas`` x N paths (``--paths``): the hard-outlier indicator at T on the plain law, on
  the law cut at the extreme of n = delta d samples for each d in ``--dims`` (eq. (5)), and with the
  1e-3 clip.  ``--summary`` sets them beside finite-d GD's plain indicator at the same d (the seeds of
  validation/reports/dmft_paths/<case>.jsonl, whose tail is that of their own n = delta d samples).

Run:  python -m validation.tail_edge --case quad16 [--tail-paths 20000,80000,320000,1280000]
                                      [--paths 80000] [--dims 250,1000,2000,4000,16000]
      python -m validation.tail_edge --case quad16 --summary
      python -m validation.tail_edge --case quad16 --steps 1600 --tail-paths 20000,80000,320000
      python -m validation.tail_edge --case quad11 --cut-paths 384000 --per 48000,96000
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

from thresholds.dmft import solve_dmft
from thresholds.hessian import _clip_lower, hessian_weight, sample_quantile, spectra_of_law
from thresholds.outlier import lowest_outlier
from thresholds.stieltjes import WeightLaw, bulk_edges, spike_weight
from thresholds.laws import FirstPhaseLaw, dmft_law
from thresholds.numbers import mean_se
from validation.dmft_paths import CASES, case_setup, read_lines

OUT = Path(__file__).parent / "reports" / "tail_edge"
SOURCE_TOL = 1e-3  # the unbiased DMFT law (thresholds.dmft eq. (6b), validation/reports/dmft_paths)
CUT_RESOLVED = 3  # the cut is resolved when at least this many paths per replica lie below its quantile


def paths_below_cut(paths: int, n: float) -> float:
    """Expected number of a replica's ``paths`` below the median-minimum cut at n samples."""
    return paths * sample_quantile(n)


def tail_line(case: str, n: int, seed: int = 1, steps: int = 0) -> dict:
    """One replica of ``n`` paths: the lowest G and two lower quantiles at T/4, T/2, T (``steps`` > 0:
    that horizon instead of the case's)."""
    setup = case_setup(case, paths=n, replicas=1, seed=seed, source_tol=SOURCE_TOL)
    if steps:
        setup = replace(setup, steps=steps)
    start = time.time()
    law = dmft_law(solve_dmft(setup, cache=False))
    line = {"kind": "tail", "n": n, "seed": seed, "seconds": time.time() - start, "steps": {}}
    for step in (setup.steps // 4, setup.steps // 2, setup.steps):
        r = law.steps[step][0]
        G = np.sort(hessian_weight(setup.activation, setup.a, setup.b, np.ravel(r.u), r.y))
        line["steps"][str(step)] = {"lowest": G[:8].tolist(), "q1e-4": float(G[int(1e-4 * n)]),
                                    "q1e-3": float(G[int(1e-3 * n)]), "mean": float(G.mean())}
    return line


def edge_line(case: str, n: int, replicas: int, dims: list, source_tol: float = SOURCE_TOL) -> dict:
    """``replicas`` x ``n`` paths: the indicator at T, plain, cut at n = delta d for each d, clipped."""
    setup = case_setup(case, paths=n * replicas, replicas=replicas, seed=0, source_tol=source_tol)
    start = time.time()
    law = dmft_law(solve_dmft(setup, cache=True))
    final = FirstPhaseLaw({setup.steps: law.steps[setup.steps]})
    line = {"kind": "edge", "n": n, "replicas": replicas, "source_tol": source_tol, "cut": {}}
    plain = spectra_of_law(setup, final, outliers="none")[setup.steps]
    line["plain"] = [plain.negative_indicator, plain.negative_indicator_err]
    line["clipped"] = [plain.negative_indicator_clipped, plain.negative_indicator_clipped_err]
    for d in dims:
        q = sample_quantile(setup.delta * d)
        v, e = mean_se([_cut_indicator(setup, r.u, r.y, r.g, q, "weighted") for r in final.steps[setup.steps]])
        line["cut"][str(d)] = [v, e, f"median-minimum cut at n = {setup.delta * d:.0f} samples"]
    line["seconds"] = time.time() - start
    return line


def _median_unbiased_cut(G, q):
    """G cut from below at its q-quantile estimated by the order statistic of fractional rank q (K + 1/3) + 1/3
    (1-based, linear between neighbours; K = G.size): the median-unbiased estimator (Hyndman & Fan 1996, type 8;
    numpy's method "median_unbiased")."""
    Gs = np.sort(G)
    k = q * (G.size + 1 / 3) + 1 / 3
    if k < 1:  # below the lowest sample's rank: the minimum
        return np.maximum(G, Gs[0])
    lo = min(int(k), G.size)
    hi = min(lo + 1, G.size)
    return np.maximum(G, Gs[lo - 1] + (k - lo) * (Gs[hi - 1] - Gs[lo - 1]))


def _cut_indicator(setup, u, y, g, q, estimator) -> float:
    """The plain indicator of eq. (4) of thresholds.hessian on equal-weight paths with G cut at the q-quantile
    (the scalar engine's route without the sphere shift)."""
    G = hessian_weight(setup.activation, setup.a, setup.b, np.ravel(u), y)
    w = np.full(G.size, 1.0 / G.size)
    G = _clip_lower(G, w, q) if estimator == "weighted" else _median_unbiased_cut(G, q)
    law = WeightLaw.from_nodes(G, w, spike_weight(g), description="Hessian weight")
    return float(lowest_outlier(law, setup.delta, 0.0, edges=bulk_edges(law, setup.delta))[1])


CUT_ESTIMATORS = ("weighted", "type8")


def cut_line(case: str, n: int, replicas: int, pers: list, d: int, seed: int = 5) -> dict:
    """``replicas`` x ``n`` paths: the indicator with the eq. (5) cut at n_d = delta d samples from all paths and
    from disjoint subsets of each size in ``pers``, by each of CUT_ESTIMATORS, at T/4, T/2 and T."""
    setup = case_setup(case, paths=n * replicas, replicas=replicas, seed=0, source_tol=SOURCE_TOL)
    start = time.time()
    law = dmft_law(solve_dmft(setup, cache=True))
    q = sample_quantile(setup.delta * d)
    rng = np.random.default_rng(seed)
    line = {"kind": "cut", "n": n, "replicas": replicas, "d": d, "pers": pers, "steps": {}}
    for step in (setup.steps // 4, setup.steps // 2, setup.steps):
        at = line["steps"][str(step)] = {}
        for est in CUT_ESTIMATORS:
            at[est] = {"all": [_cut_indicator(setup, r.u, r.y, r.g, q, est) for r in law.steps[step]]}
        for per in pers:
            subsets = [[] for _ in CUT_ESTIMATORS]
            for r in law.steps[step]:
                u, g = np.ravel(r.u), np.asarray(r.g)
                order = rng.permutation(r.y.shape[0])
                for k in range(r.y.shape[0] // per):
                    idx = order[k * per:(k + 1) * per]
                    for s, est in zip(subsets, CUT_ESTIMATORS):
                        s.append(_cut_indicator(setup, u[idx], r.y[idx], g[idx], q, est))
            for s, est in zip(subsets, CUT_ESTIMATORS):
                at[est][str(per)] = s
    line["seconds"] = time.time() - start
    return line


def cut_summary(rows: list, delta: float) -> list:
    """Per record and step: each estimator's mean indicator from all paths and from the subsets (mean, its s.e.
    over subsets, the spread of one subset, the paths below the cut per subset)."""
    out = []
    for r in sorted((r for r in rows if r["kind"] == "cut"), key=lambda r: r["n"]):
        q = sample_quantile(delta * r["d"])
        out.append(f"cut, {r['replicas']} x {r['n']} paths, n = {delta * r['d']:.0f} samples "
                   f"({r['n'] * q:.1f} paths per replica below the cut):")
        for step, at in r["steps"].items():
            for est in CUT_ESTIMATORS:
                m, se = mean_se(at[est]["all"])
                text = f"   step {step}, {est:8s}: all {m:+.4f} +- {se:.4f}"
                for per in r["pers"]:
                    v = np.asarray(at[est][str(per)])
                    text += (f" | {per} ({per * q:.1f} below, {v.size} subsets): {v.mean():+.4f} +- "
                             f"{v.std(ddof=1) / math.sqrt(v.size):.4f} (sd {v.std(ddof=1):.4f})")
                out.append(text)
    return out


def _path(case: str, steps: int) -> Path:
    return OUT / (f"{case}_T{steps}.jsonl" if steps else f"{case}.jsonl")


def summary(case: str, steps: int = 0) -> str:
    rows = read_lines(_path(case, steps))
    c = dict(CASES[case], **({"steps": steps} if steps else {}))
    out = [f"case {case}: {c}; DMFT law with source_tol {SOURCE_TOL:g}"] + cut_summary(rows, c["delta"])
    for r in sorted((r for r in rows if r["kind"] == "tail"), key=lambda r: r["n"]):
        out.append(f"tail N = {r['n']:>8d}: " + "  ".join(
            f"step {s}: min {v['lowest'][0]:.2f}, 8th {v['lowest'][7]:.2f}, q1e-4 {v['q1e-4']:.2f}"
            for s, v in r["steps"].items()))
    gd, gd_clip = {}, {}
    for g in read_lines(OUT.parent / "dmft_paths" / f"{case}.jsonl"):
        if g.get("kind") == "gd":
            gd.setdefault(g["d"], []).append(g["final"]["indicator"])
            gd_clip.setdefault(g["d"], []).append(g["final"]["indicator_clipped"])
    if gd_clip:
        out.append("GD, 1e-3 clip: " + "  ".join(f"d = {d}: {mean_se(v)[0]:.3f} +- {mean_se(v)[1]:.3f}"
                                               for d, v in sorted(gd_clip.items())))
    edges = sorted((r for r in rows if r["kind"] == "edge"), key=lambda r: (-r.get("source_tol", SOURCE_TOL), r["n"]))
    for r in edges:
        out.append(f"edge, {r['replicas']} x {r['n']} paths, source_tol {r.get('source_tol', SOURCE_TOL):g}: "
                   f"plain {r['plain'][0]:.3f} +- {r['plain'][1]:.3f}, "
                   f"1e-3 clip {r['clipped'][0]:.3f} +- {r['clipped'][1]:.3f}")
        for d, (v, e, _note) in sorted(r["cut"].items(), key=lambda kv: int(kv[0])):
            text = f"   d = {int(d):>6d} (n = {c['delta'] * int(d):.0f}): DMFT cut {v:.3f} +- {e:.3f}"
            if int(d) in gd:
                m, se = mean_se(gd[int(d)])
                text += (f"   GD plain {m:.3f} +- {se:.3f} ({len(gd[int(d)])} seeds), "
                         f"z = {(v - m) / math.hypot(e, se):+.1f}")
            if paths_below_cut(r["n"], c["delta"] * int(d)) < CUT_RESOLVED:
                text += "   (cut poorly resolved)"
            out.append(text)
    return "\n".join(out)


@click.command()
@click.option("--case", type=click.Choice(sorted(CASES)), default="quad16", show_default=True)
@click.option("--tail-paths", default="", help="Comma-separated path counts of the tail scan (one replica each).")
@click.option("--paths", default="", help="Comma-separated paths per replica of the edge record.")
@click.option("--replicas", default=4, show_default=True, type=click.IntRange(2, 64))
@click.option("--dims", default="250,1000,2000,4000,16000", show_default=True)
@click.option("--source-tol", default=SOURCE_TOL, show_default=True, type=click.FloatRange(0, 1, max_open=True),
              help="DMFT eq. (6b) tolerance of the edge record (the truncation check).")
@click.option("--steps", default=0, show_default=True, type=click.IntRange(0, 100_000),
              help="Tail scan at this horizon instead of the case's (records in <case>_T<steps>.jsonl).")
@click.option("--cut-paths", default="", help="Comma-separated paths per replica of the cut-estimator record.")
@click.option("--per", default="", help="Comma-separated subset sizes of the cut-estimator record.")
@click.option("--cut-d", default=1000, show_default=True, type=click.IntRange(1, None),
              help="The cut-estimator record's cut at n = delta d samples.")
@click.option("--summary", "only_summary", is_flag=True, help="Print the table of the records and exit.")
def main(case, tail_paths, paths, replicas, dims, source_tol, steps, cut_paths, per, cut_d, only_summary):
    if steps and paths:
        raise click.UsageError("--steps applies to the tail scan (the GD seeds of the edge record are at the "
                               "case's horizon)")
    path = _path(case, steps)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not only_summary:
        done = {(r["kind"], r["n"], r.get("source_tol", SOURCE_TOL) if r["kind"] == "edge" else SOURCE_TOL)
                for r in read_lines(path)}
        dims = [int(d) for d in dims.split(",") if d]
        pers = [int(k) for k in per.split(",") if k]
        jobs = ([("tail", int(n), SOURCE_TOL) for n in tail_paths.split(",") if n]
                + [("edge", int(n), source_tol) for n in paths.split(",") if n]
                + [("cut", int(n), SOURCE_TOL) for n in cut_paths.split(",") if n])
        if cut_paths and not pers:
            raise click.UsageError("--cut-paths needs --per (the subset sizes)")
        for kind, n, tol in jobs:
            if (kind, n, tol) in done:
                continue
            line = (tail_line(case, n, steps=steps) if kind == "tail" else
                    edge_line(case, n, replicas, dims, tol) if kind == "edge" else
                    cut_line(case, n, replicas, pers, cut_d))
            with path.open("a") as f:
                f.write(json.dumps(line) + "\n")
            click.echo(f"{kind} {n}: {line['seconds']:.0f} s")
    click.echo(summary(case, steps))


if __name__ == "__main__":
    main()

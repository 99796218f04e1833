"""The Hessian after the first phase, at any width m: the d = inf prediction against finite-d GD's own matrices.

Three routes per case (activation, link, delta, eta, steps, m) and dimension d:

  (a) the prediction of `thresholds nn --law dmft`: thresholds.evaluation.evaluate on the DMFT law (the paths of its
      eq. (4); the plain quantities over data sets of n = delta d paths, thresholds.hessian eq. (5)) at the last
      step: left bulk edge, lowest negative hard outlier z* with the overlap^2 of its eigenvector with the hard
      subspace, the indicator I of thresholds.evaluation eq. (1), and the DMFT train loss;
  (b) the same spectral engine (thresholds.hessian.spectra_of_law) on GD's own law: the n training samples
      (u_i = Theta^T x_i, y_i, g_i) of each run of (c), one replica per run (validation.gd_law eq. (1)); at m > 1
      also every hard outlier of the full m x m equations on those samples (thresholds.stieltjes_m.hard_outliers:
      a finite-d law is not exchangeable, so its multiplets are split as the matrix's are);
  (c) GD restricted to the complement of the hard subspace for ``steps`` steps at d (``--seeds`` runs), then the
      lowest K = m + 3 eigenvalues of the scaled Hessian H = m Hess R (Lanczos, validation.simulate.hessian_probe)
      and the squared overlaps of their eigenvectors with the hard subspace, summarised by

          lambda_1 = the lowest eigenvalue,   lambda_H = the eigenvalue of the eigenvector with the largest
          hard overlap o_H,   O_K = the hard overlaps summed over the K lowest,
          lambda_w = sum_k o_k lambda_k / O_K, their overlap-weighted mean                                 (1)

      (a width-m Hessian has up to m hard outliers, THEORY.md section 2: with exchangeable neurons one of the
      neurons' common mode and m - 1 degenerate ones, stieltjes_m eq. (7), which finite d splits by O(d^-1/2), so
      the lowest of a split multiplet lies below its d = inf place and lambda_w, its centre, is the comparison for
      z*; O_K is the hard weight the outliers carry together, m overlap^2 for m outliers at one place; at m = 1
      lambda_H and o_H are the outlier's).

(b) against (c) tests the engine alone (the same samples: d = inf equations against the finite-d matrix); (a)
against (b) tests the first-phase law (the DMFT at d = inf against GD at d), and so does the train loss.  A GD
run whose first phase ends in a period-2 orbit (thresholds.dmft eq. (10): one sample past its own step's stability
limit, whose residual puts m eigenvalues far below the bulk) is recorded with ``period_two`` and left out of the
tables, as thresholds.evaluation eq. (3) leaves such DMFT replicas out (records without the field predate it).  One
record per GD run and one per prediction go to a JSONL file, so an interrupted run resumes; ``--summary`` prints
the markdown tables.

    python -m validation.hessian_check --cases m1 --out validation/reports/hessian/m1.jsonl
    python -m validation.hessian_check --cases width --dims 1000,2000 --out validation/reports/hessian/width.jsonl
    python -m validation.hessian_check --summary validation/reports/hessian/width.jsonl

Cases: ``m1`` (quad delta 16, eta 0.05 and gelu delta 24, eta 0.1, phase retrieval, 50 and 400 steps), ``mixed``
(gelu on y = z1 + z2^2, whose easy direction GD learns, overlaps with the hard one), ``width`` (quad, eta 0.05,
600 steps, m = 2 at delta 4 and 12, m = 4 at delta 3 and 6: below and above delta_NN(600) = 8.01 and 4.44), ``m8``
(the same at m = 8, delta 2.5 and 4, above delta_NN(600) = 1.94: the outliers near the bulk edge).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from thresholds.alg import latent_split
from thresholds.catalog import get_link
from thresholds.dmft import period_two_orbit
from thresholds.evaluation import evaluate, first_phase
from thresholds.hessian import hessian_weight_m, spectra_of_law
from thresholds.laws import FirstPhaseLaw
from thresholds.nn import NNSetup
from thresholds.numbers import mean_se
from thresholds.problem import Problem
from thresholds.stieltjes import spike_weight
from thresholds.stieltjes_m import MatrixLaw, hard_outliers, left_edge
from validation import records
from validation.gd_law import run_law
from validation.simulate import GDSetup, hessian_probe, run_gd

OUT = Path(__file__).parent / "reports" / "hessian"
SEED0 = 10_000   # GD run s has seed SEED0 + s
# name -> [(activation, link, delta, eta, steps, m)]
CASES = {
    "m1": [("quad", "phase_retrieval", 16.0, 0.05, 50, 1), ("quad", "phase_retrieval", 16.0, 0.05, 400, 1),
           ("gelu", "phase_retrieval", 24.0, 0.1, 50, 1), ("gelu", "phase_retrieval", 24.0, 0.1, 400, 1)],
    "mixed": [("gelu", "mixed", 24.0, 0.1, 50, 1), ("gelu", "mixed", 24.0, 0.1, 400, 1)],
    "width": [("quad", "phase_retrieval", 4.0, 0.05, 600, 2), ("quad", "phase_retrieval", 12.0, 0.05, 600, 2),
              ("quad", "phase_retrieval", 3.0, 0.05, 600, 4), ("quad", "phase_retrieval", 6.0, 0.05, 600, 4)],
    "m8": [("quad", "phase_retrieval", 2.5, 0.05, 600, 8), ("quad", "phase_retrieval", 4.0, 0.05, 600, 8)],
}
KEYS = ("activation", "link", "delta", "eta", "steps", "m", "d")


def _setup(case, d: int) -> NNSetup:
    act, link, delta, eta, steps, m = case
    return NNSetup.from_problem(Problem(act, link, eta=eta, steps=steps, m=m), law="dmft", law_d=d)


def _outlier(spectrum) -> tuple[float, float]:
    """(z*, overlap^2) of the lowest left hard outlier of a HessianSpectrum ((nan, nan): none located)."""
    left = [o for o in spectrum.outliers if o["side"] == "left"]
    return (left[0]["z"], left[0]["overlap2"]) if left else (math.nan, math.nan)


def predicted(case, d: int) -> dict:
    """Route (a) for one case at dimension d."""
    t0 = time.time()
    setup = _setup(case, d)
    delta = case[2]
    run = first_phase(setup, delta)   # read (or run) once: the evaluation takes it, the train loss is its result's
    ev = evaluate(setup, delta, outliers="final", final_only=True, run=run)
    res = run.result
    return {"route": "predicted", **dict(zip(KEYS, (*case, d))), "edge": ev.left_edge[-1],
            "edge_err": ev.left_edge_err[-1], "z": ev.outlier_z[-1], "z_err": ev.outlier_z_err[-1],
            "overlap2": ev.overlap2[-1], "indicator": ev.indicator[-1], "indicator_err": ev.indicator_err[-1],
            "train_loss": float(res.train_loss[-1]), "train_loss_err": float(res.train_loss_err[-1]),
            "seconds": time.time() - t0}


def simulated(case, d: int, seed: int) -> dict:
    """Routes (b) and (c) for one GD run."""
    act, link, delta, eta, steps, m = case
    t0 = time.time()
    setup = _setup(case, d)
    run = run_gd(GDSetup.from_problem(setup.problem, delta, d, complement=True, seed=SEED0 + seed, n_test=200,
                                      test_loss=False), snapshots=[steps])
    X, y = run.data
    k = get_link(link).k
    low = hessian_probe(X, y, run.theta, act, a=setup.a, b=setup.b, k=k, count=m + 3,
                        axes=latent_split(link).hard)["lowest"]
    dsetup = setup.dmft(delta)
    law = run_law(run, dsetup, [steps])[steps]
    own = spectra_of_law(dsetup, FirstPhaseLaw({steps: [law]}), outliers="final")[steps]
    z, o2 = _outlier(own)
    every = [(z, o2)] if math.isfinite(z) else []
    if m > 1:   # every hard outlier of the full m x m equations on the same (not exchangeable) samples
        full = MatrixLaw(hessian_weight_m(act, setup.a, setup.b, law.u, law.y), spike_weight(law.g), law.w)
        edge = left_edge(full, delta)
        every = hard_outliers(full, delta, edge)
        rec_full = {"full_edge": edge.z}
    else:
        rec_full = {"full_edge": own.left_edge}
    best = max(low, key=lambda vo: vo[1])
    return {"route": "gd", **dict(zip(KEYS, (*case, d))), "seed": seed, "eigenvalues": [v for v, _ in low],
            "overlaps": [o for _, o in low], "lambda_1": low[0][0], "lambda_H": best[0], "o_H": best[1],
            "O_K": float(sum(o for _, o in low)), "train_loss": float(run.train_loss[-1]),
            "own_edge": own.left_edge, "own_z": z, "own_overlap2": o2, "own_indicator": own.negative_indicator,
            "own_outliers": [[float(v), float(o)] for v, o in every], **rec_full,
            "period_two": bool(period_two_orbit(run.train_loss)),
            "seconds": time.time() - t0}


def weighted_mean(rec) -> float:
    """lambda_w of eq. (1) for one GD record."""
    o = np.asarray(rec["overlaps"], dtype=float)
    return float(o @ np.asarray(rec["eigenvalues"], dtype=float) / o.sum()) if o.sum() > 0 else math.nan


def _key(rec) -> tuple:
    return tuple(rec[k] for k in KEYS) + (rec["route"], rec.get("seed"))


def run(cases, dims, seeds: int, out: Path, log=print):
    """Every route for every case and d, skipping the records already in ``out``."""
    done = {_key(r) for r in records.read(out)} if out.exists() else set()
    for case in cases:
        for d in dims:
            if _key({**dict(zip(KEYS, (*case, d))), "route": "predicted"}) not in done:
                records.append(out, predicted(case, d))
                log(f"{case} d = {d}: predicted")
            for s in range(seeds):
                if _key({**dict(zip(KEYS, (*case, d))), "route": "gd", "seed": s}) not in done:
                    records.append(out, simulated(case, d, s))
                    log(f"{case} d = {d}: GD run {s}")


def _pm(values, fmt=".4f") -> str:
    v = [x for x in values if np.isfinite(x)]
    if not v:
        return "none"
    m, se = mean_se(v)
    return (f"{m:{fmt}} +- {se:{fmt.lstrip('+')}}"
            + (f" ({len(v)} of {len(values)})" if len(v) < len(values) else ""))


def summary(rows: list) -> list[str]:
    """Markdown: per case and d, route (a) and the means +- s.e. over the GD runs of routes (b) and (c)."""
    lines = ["| case | d | route | left edge | lowest hard outlier z* (overlap^2) | I | lambda_1 | lambda_H (o_H) | "
             "lambda_w | O_K | train loss |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in KEYS), []).append(r)
    orbits = [(key, sum(bool(r.get("period_two")) for r in g)) for key, g in groups.items()]
    groups = {key: [r for r in g if not r.get("period_two")] for key, g in groups.items()}
    for key in sorted(groups, key=lambda k: (k[5], k[0], k[1], k[4], k[2], k[6])):
        act, link, delta, eta, steps, m, d = key
        name = f"{act}, {link}, m = {m}, delta {delta:g}, eta {eta:g}, {steps} steps"
        for p in (r for r in groups[key] if r["route"] == "predicted"):
            z = "none" if not np.isfinite(p["z"]) else f"{p['z']:.4f} +- {p['z_err']:.4f} ({p['overlap2']:.2f})"
            lines.append(f"| {name} | {d} | (a) DMFT law | {p['edge']:.4f} +- {p['edge_err']:.4f} | {z} | "
                         f"{p['indicator']:+.4f} +- {p['indicator_err']:.4f} | | | | | "
                         f"{p['train_loss']:.4g} +- {p['train_loss_err']:.2g} |")
        gd = [r for r in groups[key] if r["route"] == "gd"]
        if gd:
            lines.append(f"| {name} | {d} | (b) GD's own law, {len(gd)} runs | {_pm([r['own_edge'] for r in gd])} | "
                         f"{_pm([r['own_z'] for r in gd])} ({_pm([r['own_overlap2'] for r in gd], '.2f')}) | "
                         f"{_pm([r['own_indicator'] for r in gd], '+.4f')} | | | | | |")
            lines.append(f"| {name} | {d} | (c) GD's Hessian, {len(gd)} runs | | | | {_pm([r['lambda_1'] for r in gd])} "
                         f"| {_pm([r['lambda_H'] for r in gd])} ({_pm([r['o_H'] for r in gd], '.2f')}) | "
                         f"{_pm([weighted_mean(r) for r in gd])} | {_pm([r['O_K'] for r in gd], '.2f')} | {_pm([r['train_loss'] for r in gd], '.4g')} |")
    left_out = [f"{key[0]} m = {key[5]} delta {key[2]:g} d = {key[6]}: {k}" for key, k in orbits if k]
    if left_out:
        lines += ["", "GD runs in a period-2 orbit, left out: " + "; ".join(left_out)]
    return lines


def multiplets(rows: list) -> list[str]:
    """Markdown, width m > 1: the k-th hard outlier of the full m x m equations on each run's own samples against
    the k-th lowest eigenvalue of the same run's Hessian (mean +- s.e. over the runs that have a k-th outlier),
    with their overlaps^2, and the full equations' left edge against the (k+1)-th eigenvalue past the outliers."""
    lines = ["| case | d | k | engine, full m x m on the run's samples: z_k (overlap^2) | GD's Hessian: lambda_k "
             "(overlap^2) | runs |", "|---|---|---|---|---|---|"]
    groups = {}
    for r in rows:
        if r["route"] == "gd" and r["m"] > 1 and "own_outliers" in r and not r.get("period_two"):
            groups.setdefault(tuple(r[k] for k in KEYS), []).append(r)
    for key in sorted(groups, key=lambda k: (k[5], k[0], k[4], k[2], k[6])):
        act, link, delta, eta, steps, m, d = key
        runs = groups[key]
        name = f"{act}, m = {m}, delta {delta:g}"
        for k in range(max(len(r["own_outliers"]) for r in runs)):
            have = [r for r in runs if len(r["own_outliers"]) > k]
            lines.append(f"| {name} | {d} | {k + 1} | {_pm([r['own_outliers'][k][0] for r in have])} "
                         f"({_pm([r['own_outliers'][k][1] for r in have], '.2f')}) | "
                         f"{_pm([r['eigenvalues'][k] for r in have])} ({_pm([r['overlaps'][k] for r in have], '.2f')})"
                         f" | {len(have)} |")
        j = [len(r["own_outliers"]) for r in runs]
        lines.append(f"| {name} | {d} | edge | {_pm([r['full_edge'] for r in runs])} | next eigenvalue "
                     f"{_pm([r['eigenvalues'][min(n, len(r['eigenvalues']) - 1)] for n, r in zip(j, runs)])} | "
                     f"{len(runs)} |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", choices=sorted(CASES), default="m1")
    ap.add_argument("--dims", default="1000,2000")
    ap.add_argument("--seeds", type=int, default=4, help="GD runs per case and d")
    ap.add_argument("--out", type=Path, help="JSONL records (resumed when it exists)")
    ap.add_argument("--summary", type=Path, help="print the tables of a records file and stop")
    args = ap.parse_args(argv)
    out = args.summary or args.out or OUT / f"{args.cases}.jsonl"
    if not args.summary:
        run(CASES[args.cases], [int(v) for v in args.dims.split(",")], args.seeds, out)
    rows = records.read(out)
    print("\n".join(summary(rows)))
    if any(r.get("m", 1) > 1 for r in rows):
        print("\n" + "\n".join(multiplets(rows)))


if __name__ == "__main__":
    main()

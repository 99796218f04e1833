"""Width m from a planted start: the d = inf DMFT, the forced trial and GD from the same hard overlaps.

The forced trials of width m (thresholds.forced eq. (1m)) grow their hard overlaps more slowly than GD at m = 8
(validation/reports/planted/width section 8b).  Whether the d = inf dynamics of the hard overlaps or the finite-d
part is missing, this check separates, by starting every route from the same planted hard overlaps

    M_H,j(0) = q s_j,   s_j = +-1 a fixed pattern (SIGNS, its first m entries),                          (1)

so that neither the size of the initial overlaps nor their finite-d draw enters.  With ``--ramp`` the sizes differ,

    M_H,j(0) = q c_j s_j,   c_j proportional to 0.25 + 1.5 (j - 1) / (m - 1),   (1/m) sum_j c_j^2 = 1,          (1r)

the same hard part q^2 from neurons as unequal as the forcing makes them (records ``..._ramp.jsonl``).  Routes:

* GD (``validation.simulate``, unrestricted, ``planted`` = eq. (1), the other coordinates drawn as usual) at
  each d of ``--dims``, several data sets;
* the forced trial at each of these d (thresholds.forced eq. (1m) from eq. (1): the planted DMFT with the hard
  forcing of n = delta d samples), several forcing and path seeds, at the forced trials' source tolerance and
  paths (thresholds.forced eq. (4b): 1e-2 and 10000 m paths from m = 8 on; ``--forced-tol`` another);
* the planted DMFT without forcing (d = inf), at the paths and source tolerances of ``--dmft``.

Per step: the bulk (1/m) sum_j (||theta_j||^2 - M_H,j^2) and the hard part (1/m) sum_j M_H,j^2, mean +- s.e.
over the runs; for the DMFT routes also the sources opened (thresholds.dmft eq. (6b)) and the seconds per run
(records made before these fields leave them blank).  GD at two d and the forced trials at the same d say whether the forced model follows GD's
d-dependence; GD extrapolated in 1/d against the d = inf DMFT says whether the d = inf dynamics is right.

    python -m validation.width_growth --m 8 --delta 3.5 --q 0.1 --dims 800,3200 [--summary]

Resumable: one JSON line per run in validation/reports/planted/width/growth_m{m}_delta{delta}_q{q}.jsonl.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.forced import paths_for, source_tol_for
from thresholds.problem import Problem
from validation import records
from validation.simulate import GDSetup, run_gd
from validation.width_parts import STEPS, cell

OUT = Path(__file__).resolve().parent / "reports" / "planted" / "width"
SIGNS = (1, -1, 1, 1, -1, 1, -1, -1, 1, 1, -1, -1, -1, 1, 1, -1)   # eq. (1), a fixed pattern


def start(m: int, q: float, ramp: bool = False) -> tuple:
    """Eq. (1): the planted hard overlaps of the m neurons; with ``ramp`` (eq. (1r)) unequal sizes."""
    if not 1 <= m <= len(SIGNS):
        raise ValueError(f"m must be 1..{len(SIGNS)}, got {m}")
    size = np.ones(m)
    if ramp and m > 1:
        size = 0.25 + 1.5 * np.arange(m) / (m - 1)
        size /= np.sqrt(np.mean(size**2))
    return tuple(float(q * c * s) for c, s in zip(size, SIGNS[:m]))


def parts(hard, norm2) -> dict:
    """The curves a record keeps: hard part and bulk per step (lists)."""
    hard, norm2 = np.asarray(hard, float), np.asarray(norm2, float)
    return {"hard": [float(v) for v in hard], "bulk": [float(v) for v in norm2 - hard]}


def gd_run(problem: Problem, delta: float, d: int, q: float, seed: int, ramp: bool = False) -> dict:
    """GD from eq. (1) (eq. (1r) with ``ramp``) on one data set (seed)."""
    res = run_gd(GDSetup(problem.activation, problem.link, delta, d, problem.eta, problem.steps, m=problem.m,
                         complement=False, planted=start(problem.m, q, ramp), seed=seed, test_loss=False))
    return {"route": "gd", "d": d, "seed": seed, **parts(res.hard_overlap, res.norm2)}


def dmft_run(problem: Problem, delta: float, q: float, seed: int, *, d: int = 0, paths: int = 20000,
             source_tol: float = 1e-3, response_noise: float = 0.0, ramp: bool = False, joint: str = "",
             source_orth: bool = False) -> dict:
    """The planted DMFT from eq. (1): forced with n = delta d samples (thresholds.forced eq. (1m)) when d > 0,
    the d = inf dynamics when d = 0; ``response_noise`` k adds k times the response sums' Monte Carlo variance
    (thresholds.dmft eq. (6c)), so that N paths carry the noise of N / (1 + k); ``joint``: the forcing's data-set
    weights in the response sums too (thresholds.dmft eq. (7d)); ``source_orth``: thresholds.dmft eq. (6g)."""
    n = float(delta) * d
    setup = DMFTSetup.from_problem(problem, delta, paths=int(max(paths, math.ceil(n))), replicas=1, seed=seed,
                                   planted=start(problem.m, q, ramp), source_tol=source_tol, forcing_n=n,
                                   forcing_seed=seed, population_risk=False, response_noise=response_noise,
                                   forcing_joint=joint if d else "", source_orth=source_orth)
    res = solve_dmft(setup, cache=False)
    return {"route": "forced" if d else "dmft", "d": d, "seed": seed, "paths": setup.paths,
            "source_tol": source_tol, **({"response_noise": response_noise} if response_noise else {}),
            **({"source_orth": True} if source_orth else {}),
            **({"joint": joint} if joint and d else {}),
            "sources": res.sources[0], "seconds": round(res.seconds, 1), **parts(res.hard_overlap, res.norm2)}


def label(r: dict) -> str:
    if r["route"] == "gd":
        return f"GD, d = {r['d']}"
    tail = f"{r['paths'] / 1000:g}k paths, tol {r['source_tol']:g}" + (
        f", response noise x{r['response_noise']:g}" if r.get("response_noise") else "") + (
        f", joint forcing ({r['joint']})" if r.get("joint") else "") + (
        ", orthogonal sources" if r.get("source_orth") else "")
    return f"forced, d = {r['d']}, {tail}" if r["route"] == "forced" else f"DMFT d = inf, {tail}"


def summarize(rows: list[dict], steps=STEPS) -> list[str]:
    """Markdown: per route, the hard part and the bulk at ``steps`` (mean +- s.e. over its runs)."""
    groups: dict[str, list] = {}
    for r in rows:
        groups.setdefault(label(r), []).append(r)
    out = ["| route | runs | " + " | ".join(f"hard, t = {t}" for t in steps) + " | bulk, t = " + f"{steps[-1]} |"
           + " sources | seconds |", "|---|---|" + "---|" * (len(steps) + 3)]

    for name in sorted(groups):
        rs = groups[name]
        T = len(rs[0]["hard"]) - 1
        hard = [cell([r["hard"][t] for r in rs]) for t in steps if t <= T]
        extra = [f"{np.mean([r[k] for r in rs]):.0f}" if all(k in r for r in rs) else "" for k in ("sources", "seconds")]
        out.append(f"| {name} | {len(rs)} | " + " | ".join(hard) + f" | {cell([r['bulk'][T] for r in rs])} | "
                   + " | ".join(extra) + " |")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--delta", type=float, default=3.5)
    ap.add_argument("--q", type=float, default=0.1, help="planted hard overlap per neuron, eq. (1)")
    ap.add_argument("--dims", default="800,3200", help="GD and forced trials at these d")
    ap.add_argument("--gd-seeds", default="8,4", help="GD data sets per d (one number per d)")
    ap.add_argument("--forced-seeds", type=int, default=8, help="forced trials per d")
    ap.add_argument("--forced-tol", type=float, default=None,
                    help="source tolerance of the forced trials (default: thresholds.forced eq. (4b), 1e-3 at m < 8 "
                         "and 1e-2 at m >= 8; their paths follow it)")
    ap.add_argument("--dmft", default="20000:1e-3,40000:1e-3,20000:3e-4",
                    help="d = inf DMFT runs, paths:source_tol[:response_noise[:orth]] (comma list; response_noise, "
                    "thresholds.dmft eq. (6c), 0 when left out; 'orth': orthogonal sources, dmft eq. (6g))")
    ap.add_argument("--dmft-seeds", type=int, default=2)
    ap.add_argument("--ramp", action="store_true", help="unequal planted sizes, eq. (1r)")
    ap.add_argument("--joint", default="", choices=["", "all", "initial"],
                    help="forced trials with the data-set weights in the response sums too: all of them, or those along "
                    "the initial directions (thresholds.dmft eq. (7d))")
    ap.add_argument("--summary", action="store_true", help="print the table of the records so far")
    args = ap.parse_args(argv)
    problem = Problem(args.activation, "phase_retrieval", eta=args.eta, steps=args.steps, m=args.m)
    out = OUT / f"growth_{args.activation}_m{args.m}_delta{args.delta:g}_q{args.q:g}{'_ramp' if args.ramp else ''}.jsonl"
    rows = records.read(out)
    if args.summary:
        print("\n".join(summarize(rows)))
        return
    done = {(r["route"], r["d"], r["seed"], r.get("paths"), r.get("source_tol"), r.get("response_noise", 0.0),
             r.get("joint", ""), r.get("source_orth", False)) for r in rows}
    dims = [int(v) for v in args.dims.split(",")]
    seeds = [int(v) for v in args.gd_seeds.split(",")]
    jobs = []
    forced_tol = source_tol_for(args.m, args.forced_tol)
    for spec in filter(None, args.dmft.split(",")):   # d = inf first (cheap), then the forced trials and GD per d
        paths, tol, *more = spec.split(":")
        noise, orth = float(more[0]) if more and more[0] else 0.0, more[1:] == ["orth"]
        if more[1:] not in ([], ["orth"]):
            raise SystemExit(f"error: --dmft {spec!r}: the fourth field can only be 'orth'")
        jobs += [("dmft", 0, s, int(paths), float(tol), noise, orth) for s in range(args.dmft_seeds)]
    for d, k in zip(dims, seeds):
        jobs += [("forced", d, s, None, forced_tol, 0.0, False) for s in range(args.forced_seeds)]
        jobs += [("gd", d, 1000 + s, None, None, 0.0, False) for s in range(k)]
    for route, d, seed, paths, tol, noise, orth in jobs:
        if route == "gd":
            if (route, d, seed, None, None, 0.0, "", False) in done:
                continue
            rec = gd_run(problem, args.delta, d, args.q, seed, args.ramp)
        else:
            n_paths = paths if paths else paths_for(args.delta, d, m=args.m, source_tol=tol)   # forced eq. (4)
            joint = args.joint if route == "forced" else ""
            if (route, d, seed, n_paths, tol, noise, joint, orth) in done:
                continue
            rec = dmft_run(problem, args.delta, args.q, seed, d=d, paths=n_paths, source_tol=tol, response_noise=noise,
                           ramp=args.ramp, joint=joint, source_orth=orth)
        records.append(out, rec)
        print(f"{label(rec)}, seed {seed}: hard at t = {args.steps} {rec['hard'][-1]:.4f}", flush=True)
    print("\n".join(summarize(records.read(out))))


if __name__ == "__main__":
    main()

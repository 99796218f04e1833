"""How the DMFT's long-horizon law depends on its number of paths, against finite-d GD (issue: an
unbiased DMFT at long horizons).

For one case (activation, link, delta, eta, steps) this records, at the horizon T and at T/2:
||theta||^2, the train loss and the hard-outlier indicator of the Hessian (thresholds.hessian) from

* the ``sources`` DMFT (``replicas`` replicas of n paths each, n in ``--paths``), and
* finite-d GD restricted to the complement of theta_* at each d in ``--dims`` (one line per seed;
  the indicator of a seed is the d = inf spectral equations on that seed's n = delta d samples).

One JSON line per DMFT run or GD seed in ``validation/reports/dmft_paths/<case>.jsonl``; runs already
in the file are skipped, so an interrupted job resumes.  ``--summary`` prints the table: per path count
the DMFT value with its s.e. over replicas, the straight line in 1/N through the path counts (slope and
the N -> inf intercept), and GD per d with its line in 1/d.

Run:  python -m validation.dmft_paths --case quad16 [--paths 2500,5000,10000,20000] [--dims 1000,2000,4000]
      python -m validation.dmft_paths --case quad16 --summary
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import click
import numpy as np

from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.hessian import spectra_of_law
from thresholds.laws import FirstPhaseLaw, dmft_law
from validation.gd_law import run_law
from validation.simulate import GDSetup, run_gd

OUT = Path(__file__).parent / "reports" / "dmft_paths"
CASES = {"quad16": dict(activation="quad", link="phase_retrieval", delta=16.0, eta=0.05, steps=400),
         "gelu12": dict(activation="gelu", link="phase_retrieval", delta=12.0, eta=0.1, steps=2000),
         # near delta_NN of `thresholds nn` at its 400-step default (validation/tail_edge.py, the cut's estimator)
         "quad11": dict(activation="quad", link="phase_retrieval", delta=11.0, eta=0.05, steps=400),
         "gelu21": dict(activation="gelu", link="phase_retrieval", delta=21.0, eta=0.1, steps=400)}
QUANTITIES = ("norm2", "train_loss", "indicator", "indicator_clipped")


def case_setup(case: str, **numerics) -> DMFTSetup:
    """The DMFT setup of a case of ``CASES`` with the given numerical settings."""
    return DMFTSetup(**CASES[case], **numerics)


def dmft_line(case: str, n: int, replicas: int, response: str = "sources", source_tol: float = 0.0,
              own_term: bool = False) -> dict:
    """One DMFT run with ``replicas`` x ``n`` paths (``source_tol``: thresholds.dmft eq. (6b); ``own_term``: eq.
    (6e)): the quantities at T/2 and T, per replica."""
    setup = case_setup(case, paths=n * replicas, replicas=replicas, seed=0, response=response, source_tol=source_tol,
                       own_term=own_term)
    start = time.time()
    res = solve_dmft(setup, cache=True)
    T = setup.steps
    half = T // 2
    law = dmft_law(res)
    spectra = spectra_of_law(setup, FirstPhaseLaw({s: law.steps[s] for s in (half, T)}), outliers="none")
    line = {"kind": "dmft", "response": response, "source_tol": source_tol, "n": n, "replicas": replicas,
            "steps": [half, T], "seconds": time.time() - start, "notes": res.notes}
    if own_term:
        line["own_term"] = True
    for name, s in (("half", half), ("final", T)):
        sp = spectra[s]
        line[name] = {"norm2": [float(res.norm2[s]), float(res.norm2_err[s])],
                      "train_loss": [float(res.train_loss[s]), float(res.train_loss_err[s])],
                      "indicator": [sp.negative_indicator, sp.negative_indicator_err],
                      "indicator_clipped": [sp.negative_indicator_clipped, sp.negative_indicator_clipped_err]}
    return line


def gd_line(case: str, d: int, seed: int, dtype: str = "float64") -> dict:
    """One GD seed at dimension d restricted to the complement: the quantities at T/2 and T (``dtype``: the
    storage of the data, validation.simulate; float32 halves the memory of the largest d)."""
    setup = case_setup(case)
    T, half = setup.steps, setup.steps // 2
    start = time.time()
    run = run_gd(GDSetup.from_problem(setup.problem, setup.delta, d, complement=True, seed=seed,
                                      n_test=200, test_loss=False, dtype=dtype), snapshots=[half, T])
    law = FirstPhaseLaw({s: [one] for s, one in run_law(run, setup, (half, T)).items()})
    spectra = spectra_of_law(setup, law, outliers="none")
    line = {"kind": "gd", "d": d, "seed": seed, "steps": [half, T], "seconds": time.time() - start}
    if dtype != "float64":
        line["dtype"] = dtype
    for name, s in (("half", half), ("final", T)):
        line[name] = {"norm2": float(run.norm2[s]), "train_loss": float(run.train_loss[s]),
                      "indicator": spectra[s].negative_indicator,
                      "indicator_clipped": spectra[s].negative_indicator_clipped}
    return line


def read_lines(path: Path) -> list:
    """The JSON lines of a record file (none when it does not exist)."""
    return [json.loads(s) for s in path.read_text().splitlines() if s.strip()] if path.exists() else []


def line_fit(x, y, se) -> tuple:
    """Weighted straight line y = c0 + c1 x: (c0, se0, c1, se1); with two points the exact line."""
    x, y, w = np.asarray(x, float), np.asarray(y, float), 1.0 / np.asarray(se, float) ** 2
    A = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(A.T @ (w[:, None] * A))
    c = cov @ (A.T @ (w * y))
    return float(c[0]), math.sqrt(cov[0, 0]), float(c[1]), math.sqrt(cov[1, 1])


def _gd_points(gd: list, where: str, q: str) -> list:
    """(d, mean, s.e., seeds) per dimension."""
    pts = []
    for d in sorted({r["d"] for r in gd}):
        v = np.array([r[where][q] for r in gd if r["d"] == d])
        se = v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else math.nan
        pts.append((d, float(v.mean()), se, v.size))
    return pts


def _scheme(line: dict) -> tuple:
    """(response, source_tol, own_term, replicas) of a DMFT record (older records: tol 0, no own-term subtraction)."""
    return line["response"], line.get("source_tol", 0.0), line.get("own_term", False), line["replicas"]


def summary(case: str, fit_min: int = 10_000, path: Path = None) -> str:
    """The table of the recorded runs: per quantity the DMFT values per path count, the straight line in
    1/N through the path counts >= ``fit_min`` (N -> inf intercept and slope), the largest pairwise
    |difference| / combined s.e. among those path counts, GD per d with its line in 1/d, and the DMFT
    at the largest N against that line (z)."""
    lines = read_lines(path or OUT / f"{case}.jsonl")
    out = [f"case {case}: {CASES[case]}; 1/N lines and pairwise z over N >= {fit_min} paths per replica"]
    gd = [r for r in lines if r["kind"] == "gd"]
    for where in ("half", "final"):
        out.append(f"-- step {'T/2' if where == 'half' else 'T'}")
        gd_line_at = {}
        for q in QUANTITIES:
            pts = _gd_points(gd, where, q)
            row = "  ".join(f"d={d}: {m:.4f} +- {s:.4f} ({k})" for d, m, s, k in pts)
            good = [p for p in pts if p[3] > 1]
            fit = ""
            if len(good) >= 2:
                c0, s0, _, _ = line_fit([1 / p[0] for p in good], [p[1] for p in good], [p[2] for p in good])
                gd_line_at[q] = (c0, s0)
                fit = f" | 1/d line: d->inf {c0:.4f} +- {s0:.4f}"
            out.append(f"GD {q}: {row}{fit}")
        keys = sorted({_scheme(r) for r in lines if r["kind"] == "dmft"})
        for response, tol, own, reps in keys:
            dm = sorted((r for r in lines if r["kind"] == "dmft" and _scheme(r) == (response, tol, own, reps)),
                        key=lambda r: r["n"])
            for q in QUANTITIES:
                vals = [(r["n"], *r[where][q]) for r in dm]
                row = "  ".join(f"{n}: {v:.4f} +- {e:.4f}" for n, v, e in vals)
                big = [v for v in vals if v[0] >= fit_min]
                extra = ""
                if len(big) >= 2:
                    c0, s0, c1, s1 = line_fit([1 / v[0] for v in big], [v[1] for v in big], [v[2] for v in big])
                    zmax = max(abs(a[1] - b[1]) / math.hypot(a[2], b[2]) for i, a in enumerate(big) for b in big[i + 1:])
                    extra = (f" | 1/N line: N->inf {c0:.4f} +- {s0:.4f}, slope {c1:.4g} +- {s1:.2g} "
                             f"({c1 / s1:+.1f} s.e.); max pairwise z {zmax:.1f}")
                    if q in gd_line_at:
                        g0, gs = gd_line_at[q]
                        top = big[-1]
                        extra += f"; N = {top[0]} vs GD d->inf: z = {(top[1] - g0) / math.hypot(top[2], gs):+.1f}"
                out.append(f"DMFT {response} tol {tol:g}{' own' if own else ''} x{reps} {q}: {row}{extra}")
    return "\n".join(out)


@click.command()
@click.option("--case", type=click.Choice(sorted(CASES)), required=True)
@click.option("--paths", default="2500,5000,10000,20000", show_default=True, help="paths per replica")
@click.option("--replicas", default=4, show_default=True)
@click.option("--response", default="sources", show_default=True)
@click.option("--source-tol", default=0.0, show_default=True, help="thresholds.dmft eq. (6b); 0: every source")
@click.option("--own-term", is_flag=True, help="subtract each path's own term of the response sums (dmft eq. (6e))")
@click.option("--out", "out_file", default="", help="records file (default: reports/dmft_paths/CASE.jsonl)")
@click.option("--dims", default="", help="GD dimensions, e.g. 1000,2000,4000")
@click.option("--seeds", default=4, show_default=True, help="GD seeds per d")
@click.option("--gd-dtype", type=click.Choice(["float64", "float32"]), default="float64", show_default=True,
              help="storage of the GD data (float32 for the largest d)")
@click.option("--summary", "only_summary", is_flag=True, help="print the table of the recorded runs")
def main(case, paths, replicas, response, source_tol, own_term, out_file, dims, seeds, gd_dtype, only_summary):
    """Path dependence of the DMFT law at the horizon, against GD (module docstring)."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = Path(out_file) if out_file else OUT / f"{case}.jsonl"
    if not only_summary:
        done = read_lines(path)
        for n in [int(s) for s in paths.split(",") if s]:
            if any(r["kind"] == "dmft" and r["n"] == n and _scheme(r) == (response, source_tol, own_term, replicas)
                   for r in done):
                continue
            line = dmft_line(case, n, replicas, response, source_tol, own_term)
            with path.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
            print(f"DMFT n = {n}: {line['final']} ({line['seconds']:.0f} s)", flush=True)
        for d in [int(s) for s in dims.split(",") if s]:
            for seed in range(seeds):
                if any(r["kind"] == "gd" and r["d"] == d and r["seed"] == seed for r in done):
                    continue
                line = gd_line(case, d, seed, gd_dtype)
                with path.open("a") as fh:
                    fh.write(json.dumps(line) + "\n")
                print(f"GD d = {d} seed {seed}: {line['final']} ({line['seconds']:.0f} s)", flush=True)
    click.echo(summary(case, path=path))


if __name__ == "__main__":
    main()

"""GD's hard fraction against the forced DMFT trials' (thresholds.forced) step by step, and GD's success rate under
finite-d variants: where the forced route's offset from GD at m = 1 comes from (validation/reports/planted
section 6h).

Quad / phase retrieval (y = g^2, g = x . e_H), m = 1, mean-field GD with step eta on the square loss, from
theta^0 ~ N(0, I_d / d).  In the linear regime of the hard coordinate M_H = theta . e_H both routes start from
M_H(0) = xi / sqrt(d) and are forced by a sum of n = delta d samples, so

    d * hard fraction(t) = d M_H(t)^2 / ||theta(t)||^2                                                 (1)

has a law that does not depend on d in the forced trials (their bulk is the d = inf one; only the scale of the
start and of the forcing moves with d).  ``early`` prints the 10 / 50 / 90% quantiles of log10 of eq. (1) at steps
0-100 for GD at each dimension given (``validation.simulate.run_gd``, unrestricted) and for the forced-trial records
(``validation.forced_trials``) at those dimensions, the median's s.e. by bootstrap over runs.

``variants`` runs a plain NumPy GD (the hard direction is coordinate 0; an implementation independent of
validation.simulate's kernel) to the horizon T and counts the runs whose hard fraction exceeds 1/2 there
(the success rule of ``thresholds validate``), for one of:

    plain         X with iid N(0, 1) entries;
    rownorm       the rows' parts orthogonal to e_H scaled to norm sqrt(d - 1) (no sample-norm fluctuation;
                  the hard column g untouched);                                                          (2)
    fixed_norm0   theta^0's part orthogonal to e_H scaled to norm 1 (the d = inf bulk start; the hard
                  overlap xi / sqrt(d) untouched).

Run k uses seed ``first + k`` for every variant (X and theta^0 from one generator, drawn as validation.simulate
draws them), so two variants are paired, and ``plain`` with seed k is validation.simulate's run with seed k
(tests/test_early_growth.py: the same hard fractions to rounding).

    python -m validation.early_growth early --d 200 --delta 5 --runs 300 --records FILE [FILE ...]
    python -m validation.early_growth variants --d 200 --delta 5 --variant rownorm --runs 2000 --out FILE
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from validation import records

VARIANTS = ("plain", "rownorm", "fixed_norm0")
EVERY = 25   # steps between the stored hard fractions (the forced records' spacing)
N_TEST = 5_000   # validation.simulate.GDSetup.n_test


def numpy_gd(d: int, delta: float, seed: int, variant: str = "plain", steps: int = 600, eta: float = 0.05,
             every: int = EVERY) -> list:
    """Plain NumPy GD, quad / phase retrieval, m = 1, variant of eq. (2): the hard fraction theta_0^2 / ||theta||^2
    at steps 0, every, 2 every, ..., steps."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    rng = np.random.default_rng(seed)
    n = round(delta * d)
    X = rng.standard_normal((n, d))
    rng.standard_normal((N_TEST, d))   # validation.simulate's test set, drawn so that the streams stay equal
    if variant == "rownorm":
        rest = X[:, 1:]
        rest *= math.sqrt(d - 1) / np.linalg.norm(rest, axis=1, keepdims=True)
    y = X[:, 0] ** 2
    theta = rng.standard_normal(d) / math.sqrt(d)
    if variant == "fixed_norm0":
        theta[1:] /= np.linalg.norm(theta[1:])
    out = []
    for t in range(steps + 1):
        if t % every == 0:
            out.append(float(theta[0] ** 2 / (theta @ theta)))
        if t == steps:
            return out
        u = X @ theta
        theta += eta * (X.T @ ((y - u * u) * 2 * u)) / n


def gd_early(d: int, delta: float, runs: int, steps: int = 100, every: int = 5, first: int = 20_000) -> np.ndarray:
    """(runs, steps / every + 1) hard fractions of unrestricted GD (validation.simulate) at dimension d."""
    from validation.simulate import GDSetup, run_gd
    rows = []
    for k in range(runs):
        res = run_gd(GDSetup(activation="quad", link="phase_retrieval", delta=delta, d=d, eta=0.05, steps=steps,
                             complement=False, seed=first + k, test_loss=False))
        rows.append((res.hard_overlap / res.norm2)[::every])
    return np.array(rows)


def quantiles(hf: np.ndarray, d: int, seed: int = 0) -> tuple:
    """10 / 50 / 90% quantiles of log10 of eq. (1) over runs, and the median's bootstrap s.e."""
    x = np.log10(np.maximum(d * hf, 1e-300))
    rng = np.random.default_rng(seed)
    boot = [np.median(x[rng.integers(0, x.size, x.size)]) for _ in range(500)]
    return (*np.percentile(x, [10, 50, 90]), float(np.std(boot)))


def early_table(gd: dict, forced: dict, steps=(0, 25, 50, 100)) -> list[str]:
    """Markdown rows: per step, each source's quantiles of eq. (1).  ``gd``: d -> (runs, k) array at every 5 steps;
    ``forced``: (label, d) -> (trials, k) array at every EVERY steps."""
    cols = [(f"GD d = {d}", d, a, 5) for d, a in sorted(gd.items())]
    cols += [(f"forced {label} d = {d}", d, a, EVERY) for (label, d), a in sorted(forced.items())]
    lines = ["| step | " + " | ".join(f"{c[0]} ({c[2].shape[0]})" for c in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for t in steps:
        cells = []
        for _, d, a, every in cols:
            q10, q50, q90, se = quantiles(a[:, t // every], d)
            cells.append(f"{q10:.2f} / **{q50:.2f} +- {se:.2f}** / {q90:.2f}")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return lines


def forced_rows(path: Path, delta: float) -> dict:
    """d -> (trials, k) hard fractions of the forced records at ``delta``."""
    by_d = {}
    for r in records.read(path):
        if float(r["delta"]) == delta and int(r.get("every", EVERY)) == EVERY:
            by_d.setdefault(int(r["d"]), []).append(r["hard_fraction"])
    return {d: np.array(v) for d, v in by_d.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("early", "variants"))
    ap.add_argument("--d", default="200", help="dimensions, comma-separated (variants: one)")
    ap.add_argument("--delta", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--first", type=int, default=0, help="variants: seed of the first run")
    ap.add_argument("--variant", default="plain", choices=VARIANTS)
    ap.add_argument("--records", type=Path, nargs="*", default=[],
                    help="early: forced-trial records (validation.forced_trials), each labelled by its directory")
    ap.add_argument("--out", type=Path, help="variants: JSON lines, appended (one run a line)")
    args = ap.parse_args(argv)
    dims = [int(x) for x in args.d.split(",")]
    if args.what == "early":
        gd = {d: gd_early(d, args.delta, args.runs) for d in dims}
        forced = {(path.parent.name, d): a for path in args.records
                  for d, a in forced_rows(path, args.delta).items() if d in dims}
        print(f"log10 of d x hard fraction (eq. (1)), quad / phase retrieval, m = 1, eta 0.05, delta {args.delta:g}: "
              "10% / **median +- s.e.** / 90% (runs)\n")
        print("\n".join(early_table(gd, forced)))
        return
    (d,) = dims
    done = 0
    for k in range(args.first, args.first + args.runs):
        hf = numpy_gd(d, args.delta, k, args.variant)
        done += hf[-1] > 0.5
        records.append(args.out, {"d": d, "delta": args.delta, "variant": args.variant, "seed": k, "hard_fraction": hf,
                                  "success": bool(hf[-1] > 0.5)})
    p = done / args.runs
    print(f"{args.variant}, d = {d}, delta {args.delta:g}: {done} / {args.runs} = {p:.3f} +- "
          f"{math.sqrt(p * (1 - p) / args.runs):.3f}")


if __name__ == "__main__":
    main()

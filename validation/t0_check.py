"""The Hessian at initialization, finite n: the d = inf spectral equations on the n-sample law against
the d x d matrix built from the same samples.

At t = 0 with theta_0 in the complement of theta_* (||theta_0|| = rho0), u = theta_0^T x is a Gaussian
independent of g = theta_*^T x, so the law of (u, y, g) is known exactly.  For n = delta d samples
(x_i) the matrix H = (1/n) sum_i G_i x_i x_i^T (thresholds.hessian eq. (3)) is built and diagonalized
(dense); its lowest eigenvalue and the squared overlap of its eigenvector with theta_* are compared
with the scalar engine (thresholds.hessian) applied to the empirical law of the same n samples
(u_i, y_i, g_i), weights 1/n.  This is the "finite n on purpose" question: do the d = inf equations,
fed the n samples a data set of size n actually has, reproduce the competition between the hard
outlier and the modes localized on the most negative G_i?

Run:  python -m validation.t0_check [--dims 200,800] [--seeds 4]   (writes validation/reports/t0/)
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from thresholds.catalog import get_activation
from thresholds.dmft import DMFTSetup
from thresholds.hessian import ENGINES, hessian_weight
from thresholds.problem import Problem

OUT = Path(__file__).resolve().parent / "reports" / "t0"


def one(activation, delta, d, seed, rho0=1.0):
    rng = np.random.default_rng(seed)
    n = int(round(delta * d))
    X = rng.standard_normal((n, d))
    theta = rng.standard_normal(d)
    theta[0] = 0.0
    theta *= rho0 / np.linalg.norm(theta)
    u, g = X @ theta, X[:, 0]
    y = g ** 2
    G = hessian_weight(activation, 1.0, 0.0, u, y)
    vals, vecs = np.linalg.eigh((X.T * G) @ X / n)
    setup = DMFTSetup.from_problem(Problem(activation, "phase_retrieval", steps=1), delta)
    spec = ENGINES["scalar"](get_activation(activation), setup, delta, u, y, g, np.full(n, 1.0 / n), True)
    left = [o for o in spec.outliers if o.side == "left"]
    return {"activation": activation, "delta": delta, "d": d, "seed": seed,
            "matrix_lowest": float(vals[0]), "matrix_overlap2": float(vecs[0, 0] ** 2),
            "matrix_second": float(vals[1]), "best_overlap2_in_lowest5": float(np.max(vecs[0, :5] ** 2)),
            "engine_left_edge": spec.left_edge, "engine_lowest_z": spec.lowest_z,
            "engine_overlap2": left[0].overlap2 if left else math.nan, "G_min": float(G.min())}


def summarize(rows) -> list[str]:
    """Mean +- s.e. over seeds per (activation, d, delta); 'none' where the engine finds no outlier."""
    def stat(rs, key):
        v = np.array([r[key] for r in rs], dtype=float)
        v = v[np.isfinite(v)]
        if v.size == 0:
            return "none"
        return f"{v.mean():.3f} +- {v.std(ddof=1) / math.sqrt(v.size):.3f}" if v.size > 1 else f"{v[0]:.3f} (1 seed)"
    lines = ["| activation | d | delta | seeds | matrix lowest eigenvalue | engine hard outlier z | engine left edge "
             "| matrix overlap^2 (lowest eigenvector) | engine overlap^2 | engine finds an outlier |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for act, d, delta in sorted({(r["activation"], r["d"], r["delta"]) for r in rows}):
        rs = [r for r in rows if (r["activation"], r["d"], r["delta"]) == (act, d, delta)]
        found = sum(math.isfinite(r["engine_lowest_z"]) for r in rs)
        lines.append(f"| {act} | {d} | {delta:g} | {len(rs)} | {stat(rs, 'matrix_lowest')} | {stat(rs, 'engine_lowest_z')} "
                     f"| {stat(rs, 'engine_left_edge')} | {stat(rs, 'matrix_overlap2')} | {stat(rs, 'engine_overlap2')} "
                     f"| {found} / {len(rs)} |")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--dims", default="200,800")
    p.add_argument("--deltas", default="3,4,5,6,8")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--activations", default="quad,gelu")
    p.add_argument("--summary", action="store_true", help="Only print the table of the stored rows.")
    args = p.parse_args(argv)
    if args.summary:
        print("\n".join(summarize(json.loads((OUT / "rows.json").read_text()))))
        return None
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for act in args.activations.split(","):
        for d in [int(v) for v in args.dims.split(",")]:
            for delta in [float(v) for v in args.deltas.split(",")]:
                for seed in range(args.seeds):
                    rows.append(one(act, delta, d, seed))
                    print(json.dumps(rows[-1]), flush=True)
    (OUT / "rows.json").write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()

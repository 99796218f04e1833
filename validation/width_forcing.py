"""The hard forcing of width m in finite-d GD against its model in the forced trials (thresholds.forced eq. (1m)).

GD (plain NumPy; the data, test set and start drawn as validation.simulate.run_gd draws them) with the hard
overlaps held at

    M_H,j(t) = q s_j   (every step; s_j the sign pattern of validation.width_growth, q = ``--clamp``),        (1)

q = 0 being run_gd's complement run.  The hard gradient of neuron j, h_j(t) = (1/n) sum_i z_i psi_ij^t
(z_i = e_H . x_i), is then the drift E[z psi_j^t] plus the sample forcing (at q = 0 the drift is 0 for an even
link), and its cumulative sum is

    F_j(t) = sum_{s<t} h_j(s).                                                                             (2)

The forced trials draw the forcing as a Gaussian process with the covariance of n independent terms,

    Cov(F_j(t), F_k(t)) = Cov(z Psi_j(t), z Psi_k(t)) / n,   Psi_j(t) = sum_{s<t} psi_j^s,                  (3)

which neglects the O(1/d) correlations between the samples that training builds (they enter the variance of a
mean of n terms at the same order as eq. (3)).  Per data set this writes F(t) and the data set's estimate of eq.
(3), (1/n^2) sum_i (z_i Psi_i - mean)(z_i Psi_i - mean)^T (its diagonal and its value on the two combinations
below).  The summary compares the variance of F over data sets (the forcing plus, at q != 0, the finite-d
fluctuation of the drift: what moves the hard overlaps of GD) with the mean of the estimate (what moves those of
the forced trials): per neuron (averaged over j), for the neurons' mean (1/m) sum_j F_j and for the signed mean
(1/m) sum_j s_j F_j.  A ratio of 1 means eq. (3) is GD's; ``corr`` = m Var(mean) / Var(one neuron) under eq. (3)
says how far the neurons' forcings are correlated (1: independent, m: one common forcing).  Errors: a bootstrap
over data sets.

    python -m validation.width_forcing -a quad --eta 0.05 --m 16 --d 200 --delta 3.5 --steps 600 --seeds 40 [--clamp 0.3]

Resumable: one JSON line per data set in validation/reports/planted/width/forcing_*.jsonl; ``--summary``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from thresholds.alg import latent_split
from thresholds.catalog import get_activation, get_link
from thresholds.kernels import make_psi_kernel_m
from thresholds.problem import Problem, per_neuron
from validation import records
from validation.simulate import GDSetup, _data
from validation.width_growth import start

OUT = Path(__file__).resolve().parent / "reports" / "planted" / "width"
CHECK = (1, 5, 10, 25, 50, 100, 200, 400, 600)


def forcing_run(problem: Problem, delta: float, d: int, seed: int, clamp: float = 0.0) -> dict:
    """One data set: F(t) of eq. (2) and the data set's estimate of eq. (3) at the steps of CHECK, the hard
    overlaps held at ``clamp`` s_j (eq. (1))."""
    steps = [t for t in CHECK if t <= problem.steps]
    link = get_link(problem.link)
    rng = np.random.default_rng(seed)
    n, m, k = int(round(delta * d)), problem.m, link.k
    X, y = _data(link, n, d, rng, np.float64)
    _data(link, GDSetup.n_test, d, rng, np.float64)            # run_gd's test set: the same stream after it
    theta = rng.standard_normal((d, m)) * problem.rho0 / np.sqrt(d)
    split = latent_split(link)
    hard = np.zeros((split.hard.shape[0], d))
    hard[:, :k] = split.hard
    held = np.array(start(m, clamp))
    theta -= hard.T @ (hard @ theta - held)                     # eq. (1): the hard overlaps at clamp s_j
    z = X @ hard[0]
    kernel = make_psi_kernel_m(get_activation(problem.activation))
    a, b = per_neuron(problem.a, m), per_neuron(problem.b, m)
    cum, psi, loss = np.zeros((n, m)), np.empty((n, m)), np.empty(n)
    out = {"d": d, "seed": seed, "clamp": clamp, "F": {}, "cov": {}}
    for t in range(max(steps) + 1):
        if t in steps:
            zc = z[:, None] * cum
            zc -= zc.mean(axis=0)                                   # eq. (3), centred (the drift at clamp != 0)
            out["F"][str(t)] = (z @ cum / n).tolist()
            out["cov"][str(t)] = moments(zc.T @ zc / n**2)
        if t == problem.steps:
            break
        kernel(X @ theta, y, a, b, psi, loss)
        cum += psi
        theta += problem.eta * (X.T @ psi) / n - problem.eta * problem.weight_decay * theta
        theta -= hard.T @ (hard @ theta - held)
    return out


def combinations(m: int) -> dict:
    """The neurons' mean and signed mean (the planted start's signs) as weight vectors."""
    return {"mean": np.ones(m) / m, "signed": np.array(start(m, 1.0)) / m}


def moments(cov: np.ndarray) -> dict:
    """What the summary needs of one eq. (3) matrix: its diagonal and its value on the two combinations."""
    return {"diag": np.diag(cov).tolist(), **{k: float(v @ cov @ v) for k, v in combinations(len(cov)).items()}}


def ratios(rows: list, t: int, m: int) -> dict:
    """GD's variance over data sets against eq. (3), per neuron, for the mean and the signed mean."""
    F = np.array([r["F"][str(t)] for r in rows])
    trace = np.mean([np.sum(r["cov"][str(t)]["diag"]) for r in rows])
    out = {"diag": F.var(axis=0, ddof=1).mean() / trace * m}
    for name, v in combinations(m).items():
        pred = np.mean([r["cov"][str(t)][name] for r in rows])
        out[name] = (F @ v).var(ddof=1) / pred
        out[name + "_corr"] = pred * m**2 / trace
    return out


def summarize(rows: list, m: int, boot: int = 400) -> list[str]:
    rng = np.random.default_rng(0)
    lines = ["| t | data sets | Var F_j: GD / eq. (3) | mean: GD / eq. (3) | signed mean: GD / eq. (3) | corr (mean, signed) |",
             "|---|---|---|---|---|---|"]
    for t in CHECK:
        have = [r for r in rows if str(t) in r["F"]]
        if len(have) < 4:
            continue
        est = ratios(have, t, m)
        draws = [ratios([have[i] for i in rng.integers(len(have), size=len(have))], t, m) for _ in range(boot)]
        err = {k: float(np.std([dr[k] for dr in draws])) for k in est}
        lines.append(f"| {t} | {len(have)} | {est['diag']:.2f} +- {err['diag']:.2f} | {est['mean']:.2f} +- "
                     f"{err['mean']:.2f} | {est['signed']:.2f} +- {err['signed']:.2f} | {est['mean_corr']:.2f}, "
                     f"{est['signed_corr']:.2f} |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--d", type=int, default=200)
    ap.add_argument("--delta", type=float, default=3.5)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=40, help="data sets")
    ap.add_argument("--clamp", type=float, default=0.0, help="hard overlaps held at clamp s_j, eq. (1)")
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args(argv)
    problem = Problem(args.activation, args.link, eta=args.eta, steps=args.steps, m=args.m)
    out = OUT / (f"forcing_{args.activation}_eta{args.eta:g}_m{args.m}_d{args.d}_delta{args.delta:g}"
                 + (f"_clamp{args.clamp:g}" if args.clamp else "") + ".jsonl")
    rows = records.read(out)
    if not args.summary:
        done = {r["seed"] for r in rows}
        for seed in range(2000, 2000 + args.seeds):
            if seed not in done:
                records.append(out, forcing_run(problem, args.delta, args.d, seed, args.clamp))
        rows = records.read(out)
    print("\n".join(summarize(rows, args.m)))


if __name__ == "__main__":
    main()

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

Where GD's forcing goes (``--split``; records that carry the moments below).  Per sample and neuron, with the
signs s_j of eq. (1), a_ij = s_j z_i Psi_ij (so that F_j = s_j (1/n) sum_i a_ij) splits into the part that depends
on the sample's hard latent alone and the rest, which depends on its bulk fields,

    a_ij = phi(z_i) + e_ij,   phi(z) = E[a | z]   (pooled over data sets and neurons; a Hermite polynomial of
                                                     degree SPLIT_DEGREE, least squares),                    (4)

and Var(F_j) = Var(phi-bar) + Var(e-bar_j) + 2 Cov(phi-bar, e-bar_j) over data sets.  With independent terms
(eq. (3)) the first is Var(phi) / n (true by construction: phi is a fixed function of the iid latents), the
second E[e^2] / n and the third 0; ``rest`` and ``cov`` compare GD's with these.  The bulk's scaling modes,

    b_ij = sum_{s<t} psi_ij^s w_ij^s   (w_ij = theta_j^perp . x_i, theta_j^perp the part of theta_j off the hard
                                        subspace: the gradient of neuron j along theta_j^perp, summed over steps),   (5)

are the first of the bulk's collective coordinates; ``pinned`` is the variance of their sample means over data
sets against the independent-terms value, and ``given b`` compares GD's Var(F_j) with eq. (3) conditioned on
b-bar_j held fixed (the variance of a - beta b, beta pooled), what eq. (3) would be if the scaling modes did not
fluctuate.  ``signed`` repeats the last two for the signed mean over neurons, (1/m) sum_j a_ij against
(1/m) sum_j b_ij: the combination that moves the hard part from the planted start.

    python -m validation.width_forcing -a quad --eta 0.05 --m 16 --d 200 --delta 3.5 --steps 600 --seeds 40 [--clamp 0.3] [--split]

Resumable: one JSON line per data set in validation/reports/planted/width/forcing_*.jsonl; ``--summary``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from numpy.polynomial.hermite_e import hermevander

from thresholds.alg import latent_split
from thresholds.catalog import get_activation, get_link
from thresholds.kernels import make_psi_kernel_m
from thresholds.problem import Problem, per_neuron
from validation import records
from validation.simulate import GDSetup, _data
from validation.width_growth import start

OUT = Path(__file__).resolve().parent / "reports" / "planted" / "width"
CHECK = (1, 5, 10, 25, 50, 100, 200, 400, 600)
SPLIT_DEGREE = 8   # eq. (4): phi a Hermite polynomial of this degree (the split moves by < 0.02 from 4 to 12)


def forcing_run(problem: Problem, delta: float, d: int, seed: int, clamp: float = 0.0, split: bool = False) -> dict:
    """One data set: F(t) of eq. (2) and the data set's estimate of eq. (3) at the steps of CHECK, the hard
    overlaps held at ``clamp`` s_j (eq. (1)); with ``split`` also the moments of eqs. (4)-(5) (split_moments)."""
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
    Z = X @ hard.T                                              # the samples' hard latents (n, r_H)
    z = Z[:, 0]
    kernel = make_psi_kernel_m(get_activation(problem.activation))
    a, b = per_neuron(problem.a, m), per_neuron(problem.b, m)
    cum, psi, loss = np.zeros((n, m)), np.empty((n, m)), np.empty(n)
    scale = np.zeros((n, m))                                        # eq. (5)
    signs = np.array(start(m, 1.0))
    out = {"d": d, "seed": seed, "clamp": clamp, "n": n, "F": {}, "cov": {}, **({"split": {}} if split else {})}
    for t in range(max(steps) + 1):
        if t in steps:
            zc = z[:, None] * cum
            zc -= zc.mean(axis=0)                                   # eq. (3), centred (the drift at clamp != 0)
            out["F"][str(t)] = (z @ cum / n).tolist()
            out["cov"][str(t)] = moments(zc.T @ zc / n**2)
            if split:
                out["split"][str(t)] = split_moments(z, z[:, None] * cum * signs, scale)
        if t == problem.steps:
            break
        pre = X @ theta
        kernel(pre, y, a, b, psi, loss)
        cum += psi
        if split:
            scale += psi * (pre - Z @ (hard @ theta))               # eq. (5): psi times the bulk field
        theta += problem.eta * (X.T @ psi) / n - problem.eta * problem.weight_decay * theta
        theta -= hard.T @ (hard @ theta - held)
    return out


def split_moments(z: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict:
    """Sample means of one data set that eqs. (4)-(5) need: the Hermite basis H(z) (its mean and H^T H / n), H^T a / n
    per neuron, and per neuron the means of a^2, b, b^2, a b (``a`` the signed a_ij of eq. (4), ``b`` eq. (5))."""
    n = len(z)
    H = hermevander(z, SPLIT_DEGREE)
    sa, sb = a.mean(axis=1), b.mean(axis=1)                                  # the signed mean over neurons
    return {"H": H.mean(axis=0).tolist(), "HH": (H.T @ H / n).tolist(), "Ha": (H.T @ a / n).tolist(),
            "a2": (a * a).mean(axis=0).tolist(), "b": b.mean(axis=0).tolist(), "b2": (b * b).mean(axis=0).tolist(),
            "ab": (a * b).mean(axis=0).tolist(),
            "signed": [float(v) for v in (sa.mean(), (sa * sa).mean(), sb.mean(), (sb * sb).mean(), (sa * sb).mean())]}


def _given_b(a, a2, b, b2, ab):
    """Per data set, the variance of a - beta b (sample means a, a2 = mean a^2, b, b2, ab), beta the pooled
    least-squares slope of a on [1, b] over every data set (and neuron)."""
    beta = (ab.mean() - a.mean() * b.mean()) / (b2.mean() - b.mean()**2)
    return a2 - 2 * beta * ab + beta**2 * b2 - (a - beta * b)**2


def split_ratios(rows: list, t: int) -> dict:
    """Eqs. (4)-(5) over data sets (each row carrying ``split`` and ``n``): GD's variance of the rest's mean
    against E[e^2] / n (``rest``), 2 Cov(phi-bar, e-bar) against eq. (3) (``cov``), the share of eq. (3) that phi
    carries (``phi_share``), GD's Var(F_j) against eq. (3) given b-bar (``given_b``) and the scaling modes' variance
    against independent terms (``pinned``), per neuron, averaged over neurons; with records that carry it, the
    signed mean over neurons against eq. (3) (``signed_total``) and given its own b (``signed_given_b``)."""
    S = [r["split"][str(t)] for r in rows]
    n = np.array([r["n"] for r in rows], float)[:, None]
    Hm, HH = np.array([s["H"] for s in S]), np.array([s["HH"] for s in S])
    Ha = np.array([s["Ha"] for s in S])                                  # (rows, degree + 1, m)
    a2, bm, b2, ab = (np.array([s[k] for s in S]) for k in ("a2", "b", "b2", "ab"))
    am, m = Ha[:, 0], Ha.shape[2]                                        # mean of a (He_0 = 1)
    c = np.linalg.solve(HH.sum(axis=0) * m, Ha.sum(axis=(0, 2)))        # eq. (4): pooled least squares
    phi = Hm @ c                                                         # phi-bar per data set
    phi2 = np.einsum("k,rkl,l->r", c, HH, c)                             # mean of phi^2
    e = am - phi[:, None]                                                # e-bar_j
    var_e = a2 - 2 * np.einsum("k,rkj->rj", c, Ha) + phi2[:, None] - e**2
    var_a = a2 - am**2
    pred = np.mean(var_a / n)                                            # eq. (3), per neuron
    cov = np.mean([np.cov(phi, e[:, j])[0, 1] for j in range(m)])
    var_given = _given_b(am, a2, bm, b2, ab)
    vF = am.var(axis=0, ddof=1).mean()
    out = {"rest": e.var(axis=0, ddof=1).mean() / np.mean(var_e / n), "cov": 2 * cov / pred,
           "phi_share": np.mean((phi2 - phi**2) / n[:, 0]) / pred, "total": vF / pred,
           "given_b": vF / np.mean(var_given / n),
           "pinned": bm.var(axis=0, ddof=1).mean() / np.mean((b2 - bm**2) / n)}
    if all("signed" in s for s in S):   # the signed mean over neurons (what moves the hard part from eq. (1))
        sa, sa2, sb, sb2, sab = np.array([s["signed"] for s in S]).T
        out["signed_total"] = sa.var(ddof=1) / np.mean((sa2 - sa**2) / n[:, 0])
        out["signed_given_b"] = sa.var(ddof=1) / np.mean(_given_b(sa, sa2, sb, sb2, sab) / n[:, 0])
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
    split = [r for r in rows if "split" in r]
    if len(split) >= 4:
        keys = ("total", "phi_share", "rest", "cov", "given_b", "pinned", "signed_total", "signed_given_b")
        lines += ["", "| t | data sets | Var F_j: GD / eq. (3) | phi's share of eq. (3) | rest: GD / E[e^2] / n | "
                  "2 Cov(phi, rest) / eq. (3) | GD / eq. (3) given b | scaling modes: GD / independent | signed mean: "
                  "GD / eq. (3) | signed mean, given its b |", "|---|---|---|---|---|---|---|---|---|---|"]
        for t in CHECK:
            have = [r for r in split if str(t) in r["split"] and "signed" in r["split"][str(t)]]
            if len(have) < 4:
                continue
            est = split_ratios(have, t)
            draws = [split_ratios([have[i] for i in rng.integers(len(have), size=len(have))], t) for _ in range(boot)]
            err = {k: float(np.std([dr[k] for dr in draws])) for k in keys}
            lines.append(f"| {t} | {len(have)} | " + " | ".join(f"{est[k]:+.2f} +- {err[k]:.2f}" if k == "cov" else
                                                               f"{est[k]:.2f} +- {err[k]:.2f}" for k in keys) + " |")
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
    ap.add_argument("--split", action="store_true", help="new records carry the moments of eqs. (4)-(5)")
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
                records.append(out, forcing_run(problem, args.delta, args.d, seed, args.clamp, args.split))
        rows = records.read(out)
    print("\n".join(summarize(rows, args.m)))


if __name__ == "__main__":
    main()

"""Which samples end in a period-2 orbit (thresholds.dmft eq. (10)): finite-d GD at growing d, and the DMFT paths.

A DMFT replica of quad, m = 16, eta 0.05 at delta 1.5-1.7 ends in a period-2 orbit while the others settle, and GD at
d <= 3200 was seen to settle there (validation/reports/planted/width section 10).  This check names the samples that
flip.  Per GD run (``run``): the train loss's eq. (10) flag and the step from which it alternates, and per sample i
the flip

    F_i = max_j |u_ij(T) - u_ij(T - 1)|,   u_ij = theta_j . x_i,                                              (1)

with the label y_i of the sample that flips most, its rank among the n labels (1: the largest) and how many samples
flip by more than 0.1; and for the sample with the largest label the lowest eigenvalue of its own step's Jacobian
(thresholds.dmft eq. (10b) for any activation),

    lambda_i = lowest eigenvalue of  I + eta (||x_i^perp||^2 / n) [(y_i - f_i) diag(a_j sigma''(u_ij))
                                                                   - (1/m) v_i v_i^T],   v_ij = a_j sigma'(u_ij),   (2)

at step T (below -1: that sample alone cannot settle), with its f_i; for a sample in an orbit (f_i away from y_i)
also at the point fitted along its direction, u_i* = s u_i with f(u_i*) = y_i (where (y_i - f_i) drops out):

    lambda_i* = 1 - eta (||x_i^perp||^2 / n) |v(u_i*)|^2 / m   (quad: 1 - 4 eta y_i ||x_i^perp||^2 / n).    (3)

Per DMFT replica (``dmft_flips``, on a cached run whose checkpoints include an odd and an even step, such as an
``evaluate`` of the default law): eq. (1) with u at those two checkpoints.

A single sample with a large label has its own step unstable: its pre-activations alternate between two values
while every other sample settles.  GD meets such a sample once n = delta d is large enough to draw one, and the
DMFT once a replica's paths do; the count of samples beyond the instability grows like n P(y > y_c).

Run (validation/reports/planted/width section 10e):
      python -m validation.orbit_check -a quad --eta 0.05 --m 16 --delta 1.5,1.6 --dims 400,1600,3200,6400
      --seeds 3 --out validation/reports/planted/width/orbit_quad_m16.jsonl
"""

from __future__ import annotations

import time
from pathlib import Path

import click
import numpy as np

from thresholds.catalog import get_activation, get_link
from thresholds.dmft import fitted_eigenvalues, period_two_orbit
from thresholds.errors import ThresholdsError
from thresholds.problem import Problem, per_neuron
from validation.records import append, number_list, read_rows
from validation.simulate import GDSetup, run_gd

FLIP = 0.1   # a sample "flips" when one of its pre-activations moves by more than this in the last step


def flips(u_before, u_last, y) -> dict:
    """Eq. (1) from the pre-activations (n x m) at two consecutive steps (or two checkpoints of opposite
    parity) and the labels: the sample that flips most, its label and rank, and the count beyond ``FLIP``."""
    f = np.abs(np.asarray(u_last, float) - np.asarray(u_before, float))
    f = f.max(axis=1) if f.ndim == 2 else f
    y = np.asarray(y, float).ravel()
    top = int(np.argmax(f))
    return {"n": int(y.size), "max_flip": float(f[top]), "median_flip": float(np.median(f)),
            "flipping": int(np.sum(f > FLIP)), "y_of_top": float(y[top]),
            "rank_of_top": int(np.sum(y > y[top]) + 1), "max_y": float(y.max())}


def own_step(problem: Problem, X, y, U, i: int) -> dict:
    """Eq. (2) for sample i: its label, f_i, ||x_i^perp||^2 / n (the latent coordinates left out, as the complement
    run trains) and lambda_i, from the pre-activations U (n x m) at step T."""
    act = get_activation(problem.activation)
    sigma, d1, d2 = (act.numpy(order) for order in (0, 1, 2))
    k = get_link(problem.link).k
    m = U.shape[1]
    a, b = (np.asarray(per_neuron(v, m), float) for v in (problem.a, problem.b))
    u = np.asarray(U[i], float)
    f = float(np.mean(a * sigma(u + b)))
    v = a * d1(u + b) * np.ones(m)
    c = problem.eta * float(np.sum(np.asarray(X[i, k:], float) ** 2)) / len(y)
    J = np.eye(m) + c * ((y[i] - f) * np.diag(a * d2(u + b) * np.ones(m)) - np.outer(v, v) / m)
    fitted = float(fitted_eigenvalues(problem.activation, a, b, u[None, :], y[i], c)[0])   # eq. (3): dmft eq. (10c)
    return {"label": float(y[i]), "f": f, "x_norm2_over_n": c / problem.eta,
            "own_eigenvalue": float(np.linalg.eigvalsh(J)[0]), "fitted_eigenvalue": fitted}


def run(problem: Problem, delta: float, d: int, seed: int) -> dict:
    """One GD run (the complement run of validation.simulate, as the DMFT's first phase): eq. (10) and eq. (1)
    (``diverged`` and no more where GD blows up)."""
    T = problem.steps
    row = {"d": int(d), "delta": float(delta), "seed": int(seed)}
    try:
        res = run_gd(GDSetup.from_problem(problem, delta, d, seed=seed, test_loss=False), snapshots=(T - 1, T))
    except FloatingPointError as exc:   # the step is above the stability limit of the whole network
        return {**row, "diverged": str(exc)}
    loss = np.asarray(res.train_loss, float)
    change = np.diff(loss)
    steady = np.flatnonzero(change[1:] * change[:-1] >= 0)   # the last step without alternation
    X, y = res.data
    y = np.asarray(y, float).ravel()
    return {**row, "orbit": period_two_orbit(loss),
            "alternating_since": int(steady[-1] + 2) if steady.size else 0,
            "loss": [float(loss[T - 1]), float(loss[T])],
            **flips(res.snapshots[T - 1], res.snapshots[T], y),
            "largest_label": own_step(problem, X, y, np.asarray(res.snapshots[T]), int(np.argmax(y))),
            "seconds": res.seconds}


def dmft_flips(res, odd: int, even: int) -> list:
    """Eq. (1) per replica of a DMFT result with snapshots at the checkpoints ``odd`` and ``even`` (u at the
    two parities of an orbit) and the replicas' final labels."""
    return [dict(flips(res.snapshots[odd][r], res.snapshots[even][r], res.replica_laws[r][1]), replica=r,
                 orbit=(res.period_two or []).count(r) > 0) for r in range(len(res.replica_laws))]


@click.command()
@click.option("-a", "--activation", required=True)
@click.option("-l", "--link", default="phase_retrieval", show_default=True)
@click.option("--eta", type=float, required=True)
@click.option("--steps", type=int, default=600, show_default=True)
@click.option("--m", type=int, default=1, show_default=True)
@click.option("--delta", "deltas", required=True, help="Comma-separated sample ratios.")
@click.option("--dims", required=True, help="Comma-separated dimensions.")
@click.option("--seeds", type=int, default=3, show_default=True, help="GD data sets per (d, delta): seeds 0..S-1.")
@click.option("--out", required=True, help="JSON-lines file (appended; runs already there are skipped).")
def main(activation, link, eta, steps, m, deltas, dims, seeds, out):
    try:
        problem = Problem(activation, link, eta=eta, steps=steps, m=m).validate(min_steps=2)
        get_activation(activation), get_link(link)
    except ThresholdsError as exc:
        raise click.ClickException(str(exc)) from None
    rows = read_rows(out)
    done = {(r["d"], r["delta"], r["seed"]) for r in rows}
    for d in number_list(dims, int, "--dims"):
        for delta in number_list(deltas, float, "--delta"):
            for seed in range(seeds):
                if (d, delta, seed) not in done:
                    t0 = time.time()
                    row = run(problem, delta, d, seed)
                    row["seconds"] = time.time() - t0
                    append(Path(out), row)
                    rows.append(row)
    for r in sorted(rows, key=lambda r: (r["delta"], r["d"], r["seed"])):
        if "diverged" in r:
            print(f"delta {r['delta']:g}, d {r['d']}, seed {r['seed']}: {r['diverged']}")
            continue
        print(f"delta {r['delta']:g}, d {r['d']}, seed {r['seed']}: "
              + (f"period-2 orbit since step {r['alternating_since']}" if r["orbit"] else "settles")
              + f"; largest flip {r['max_flip']:.3f} (median {r['median_flip']:.2g}) at y = {r['y_of_top']:.2f} "
              f"(rank {r['rank_of_top']} of n = {r['n']}, max y {r['max_y']:.2f}), {r['flipping']} sample(s) "
              f"beyond {FLIP:g}" + _own_text(r))


def _own_text(r: dict) -> str:
    own = r.get("largest_label")
    return (f"; largest label's own step (eq. (2)) {own['own_eigenvalue']:+.2f} at f = {own['f']:.2f}, fitted (eq. (3)) "
            f"{own['fitted_eigenvalue']:+.2f}" if own else "")


if __name__ == "__main__":
    main()

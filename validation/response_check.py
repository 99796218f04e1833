"""GD's escape after the release, predicted from the first phase's state at t1: the frozen linear response.

validation.release_check restricts GD to the complement of the hard subspace until t1 and then releases it:
Theta(t1) = Theta_1 + D_0, with Theta_1 the restricted first phase (no hard component) and D_0 the released hard
component (validation.simulate ``release``).  Linearized about Theta_1, with the Hessian and the gradient frozen at
t1, the deviation D_tau = Theta(t1 + tau) - Theta_1 follows

    D_{tau+1} = D_tau + eta (F - H D_tau),    F = P_H G(Theta_1),                                       (1)

G the direction of GD's step (validation.simulate eqs. (2)-(3); no weight decay, as in release_check's runs),
H = m Hess R the scaled Hessian at Theta_1 (its eq. for ``hessian_spectrum``), P_H the projection on the hard
directions.  F is the data set's own gradient along
the hard directions: zero in expectation (the restricted first phase does not see the signs of the hard
covariates) and O(n^-1/2) at finite n.  The complement's drift P_C G(Theta_1), the first phase going on, is left out:
(1) is the deviation from the first phase.  With H v_k = lambda_k v_k,

    D_tau = sum_k v_k [ (1 - eta lambda_k)^tau <v_k, D_0> + (1 - (1 - eta lambda_k)^tau) / lambda_k <v_k, F> ]  (2)

(eta tau <v_k, F> at lambda_k = 0), and the predicted hard fraction and outcome are release_check's eqs. (1)-(2)
read on it, with no constant of their own:

    q_lin(t1 + tau) = ||P_H D_tau||^2 / ||Theta_1 + D_tau||^2,                                         (3)
    learned_lin = q_lin(T) > 1/2,   t_1/2,lin = the first step with q_lin > 1/2.                          (4)

A negative eigenvalue with a hard overlap makes (2) grow like (1 + eta |lambda_k|)^tau; with H positive definite
(2) saturates at the static response H^{-1} F, whose hard fraction is O(1/n) unless H^{-1} is large along the hard
directions.  The records keep the parts of (3) with F = 0 (``q_start``, the released component alone) and with
D_0 = 0 (``q_force``, the data set's force alone), the lowest eigenvalue of H, the number of negative ones and the
squared hard overlap of the lowest eigenvector.

Where H has negative eigenvalues (2) grows without bound along them and q_lin(T) is the hard overlap^2 of the
fastest; ``--check`` sets q_lin beside the released GD run step by step; ``--modes`` says what the negative
eigenvectors move: which neurons, whether within the plane of the neurons' weights, and how many samples (eq. (5),
:func:`unstable_modes`).  At d = 400 (run 0, m = 1-8) they move one or two neurons (up to about 4.4 of 8),
lie outside the plane of the weights (span at most 0.035 against m / d) and move 2-12 per cent of the samples
(about 1/3 for a random direction; 16-18 per cent for the spread ones at m = 8): the first phase still fitting
single samples neuron by neuron (section 12j).

Measured (gelu / phase retrieval, eta 0.1, t1 = 10^4; validation/reports/planted/width section 12i): the
linearization is exact at first (q / q_lin within 0.5 per cent for 30 steps, 1-2.5 per cent at 100), and GD leaves
it after 300-1000 steps, at q ~ 10^-3, by factors of 1.5-7 where it does not learn and 50-200 where it does.
learned_lin holds in none of the 33 releases of section 12g (q_lin(T) <= 0.32), so it meets only the 9 that do
not learn.  In the seven runs with H positive definite at t1, q_force(T) is at most 0.0015 where GD does not learn
and at least 0.0038 where it does, a gap at the scale where GD leaves the linear response (read off these runs, not
derived); on nine new positive-definite runs (m = 1, d = 400) seven meet that order, one falls in the gap, one goes
against it: 15 of 16 on one side of a scale near 0.003-0.005, an indicator, not a rule.  With negative eigenvalues
q_lin(T) (their hard overlap) does not order the outcomes.  The escape after
the release is not the linear response to the data set's force: it is decided beyond second order.

Run:  python -m validation.response_check -a gelu --eta 0.1 --m 1 --delta 12,16 --dims 400 --seeds 0 \\
          --t1 10000 --steps 30000 --out P.jsonl
      python -m validation.response_check --summary P.jsonl --releases release_gelu_t10000.jsonl
      python -m validation.response_check --m 2 --delta 8 --dims 400 --seeds 0 --t1 10000 --modes 8   (eq. (5))
"""

from __future__ import annotations

import dataclasses
import time

import click
import numpy as np

from thresholds.alg import latent_split
from thresholds.catalog import get_link
from thresholds.errors import ThresholdsError
from validation.release_check import (LEARNED, _read, _values, beside_releases, final_q, grid, log_steps,
                                      release_options, run_grid)
from validation.settled_hessian import KEYS, check_dense, first_phase
from validation.simulate import dense_hessian, gd_direction, hessian_weights, released_component, run_gd

PER_DECADE = 200   # steps of (3) per decade, for t_1/2,lin


def linear_response(vals, vecs, theta1, D0, F, eta: float, taus, hard_rows) -> dict:
    """Eqs. (2)-(3) at the steps ``taus`` after t1: q_lin and its parts q_start (F = 0) and q_force (D_0 = 0).
    ``vecs`` are the eigenvectors of H (columns, in Theta's layout flattened), ``hard_rows`` (r x d m) the
    orthonormal rows spanning the hard directions in that layout."""
    c0, f = vecs.T @ D0.ravel(), vecs.T @ F.ravel()
    t1_along = vecs.T @ theta1.ravel()
    PV = hard_rows @ vecs                       # (r, d m): P_H v_k in the hard basis
    base = float(theta1.ravel() @ theta1.ravel())
    small = np.abs(vals) < 1e-12                 # eq. (2) at lambda_k = 0: eta tau <v_k, F>
    safe = np.where(small, 1.0, vals)
    out = {"q": [], "q_start": [], "q_force": []}
    for tau in taus:
        decay = (1.0 - eta * vals) ** tau
        gain = np.where(small, eta * tau, (1.0 - decay) / safe)
        for name, coef in (("q", decay * c0 + gain * f), ("q_start", decay * c0), ("q_force", gain * f)):
            hard2 = float(np.sum((PV @ coef) ** 2))
            out[name].append(hard2 / (base + 2.0 * float(t1_along @ coef) + float(coef @ coef)))
    return out


def frozen_state(activation: str, link: str, eta: float, m: int, delta: float, d: int, seed: int, t1: int,
                 scale: float = 1.0) -> dict:
    """What eqs. (1)-(2) need for release_check.run_one's run with the same arguments: the restricted run of the
    same seed to t1 (the released run's own first phase, ``setup`` with the release added), Theta_1, D_0 the
    released component, F, the eigenpairs of H and the hard rows P_H in Theta's flattened layout."""
    check_dense(d, m)
    setup = first_phase(activation, link, eta, m, delta, d, seed, t1)
    run = run_gd(setup)
    X, y = run.data
    theta1 = np.asarray(run.theta, dtype=float)
    k = get_link(link).k
    hard = latent_split(link).hard                              # (r, k)
    released = dataclasses.replace(setup, release=t1, release_scale=scale)
    D0 = np.zeros_like(theta1)
    D0[:k] = released_component(released, hard)
    U = X @ theta1
    G = gd_direction(X, y, U, activation, a=setup.a, b=setup.b)
    F = np.zeros_like(G)
    F[:k] = hard.T @ (hard @ G[:k])
    vals, vecs = np.linalg.eigh(dense_hessian(X, hessian_weights(y, U, activation, a=setup.a, b=setup.b)))
    hard_rows = np.zeros((hard.shape[0] * m, d * m))            # P_H in Theta's flattened layout (coordinate, neuron)
    for r in range(hard.shape[0]):
        for j in range(m):
            hard_rows[r * m + j, j:k * m:m] = hard[r]
    return {"setup": released, "theta1": theta1, "D0": D0, "F": F, "vals": vals, "vecs": vecs, "hard_rows": hard_rows,
            "X": np.asarray(X, dtype=float)}


def _respond(state: dict, eta: float, taus) -> dict:
    return linear_response(state["vals"], state["vecs"], state["theta1"], state["D0"], state["F"], eta, taus,
                           state["hard_rows"])


def run_one(activation: str, link: str, eta: float, m: int, delta: float, d: int, seed: int, t1: int, T: int,
            scale: float = 1.0) -> dict:
    """The prediction of eqs. (1)-(4) for release_check.run_one with the same arguments (:func:`frozen_state`)."""
    if not 0 < t1 < T:
        raise ThresholdsError(f"need 0 < t1 < T, got t1 = {t1}, T = {T}")
    start = time.time()
    state = frozen_state(activation, link, eta, m, delta, d, seed, t1, scale)
    vals, vecs, theta1, F = state["vals"], state["vecs"], state["theta1"], state["F"]
    coarse = log_steps(t1, T)                                   # release_check's steps, kept in the record
    steps = sorted(set(log_steps(t1, T, PER_DECADE)) | set(coarse))
    pred = _respond(state, eta, [s - t1 for s in steps])
    q = np.array(pred["q"])
    above = np.nonzero(q > LEARNED)[0]
    pick = [steps.index(s) for s in coarse]
    return {**dict(zip(KEYS, (activation, link, eta, m, delta, d))), "seed": seed, "t1": t1, "steps": T,
            "scale": scale, "lowest": float(vals[0]), "negative": int(np.sum(vals < 0)),
            "lowest_hard2": float(np.sum((state["hard_rows"] @ vecs[:, 0]) ** 2)),
            "force2": float(np.sum(F * F)) / m, "norm2": float(np.sum(theta1 * theta1)) / m,
            **{name: [[steps[i], pred[name][i]] for i in pick] for name in ("q", "q_start", "q_force")},
            "learned": bool(q[-1] > LEARNED), "t_half": int(steps[above[0]]) if above.size else None,
            "seconds": time.time() - start}


def early_check(activation: str, link: str, eta: float, m: int, delta: float, d: int, seed: int, t1: int, taus,
                scale: float = 1.0) -> list[str]:
    """Markdown: q_lin of eq. (3) and its force part beside the released run's q (validation.simulate, the same
    setup) at t1 + tau, ``taus`` > 0: where the linearization holds and where GD leaves it."""
    taus = sorted(int(t) for t in taus)
    state = frozen_state(activation, link, eta, m, delta, d, seed, t1, scale)
    run = run_gd(dataclasses.replace(state["setup"], steps=t1 + taus[-1]))
    q = run.hard_overlap / run.norm2
    pred = _respond(state, eta, taus)
    lines = [f"m = {m}, d = {d}, delta {delta:g}, run {seed}, released at t1 = {t1} (start x {scale:g}):", "",
             "| tau | q_lin | q_force | q (GD) | q / q_lin |", "|---|---|---|---|---|"]
    for tau, lin, force in zip(taus, pred["q"], pred["q_force"]):
        lines.append(f"| {tau} | {lin:.4g} | {force:.4g} | {q[t1 + tau]:.4g} | {q[t1 + tau] / lin:.3f} |")
    return lines


def unstable_modes(state: dict, count: int | None = None) -> list[dict]:
    """What H's negative eigenvectors at t1 are made of (:func:`frozen_state`), the lowest first (all, or ``count``):
    with v the eigenvector in Theta's layout (d x m, unit norm), v_j its column of neuron j and w_j = ||v_j||^2,

        hard2 = ||P_H v||^2,   neurons = 1 / sum_j w_j^2 (how many neurons it moves, 1 to m),             (5)
        span = sum_j ||Q^T v_j||^2,   radial = sum_j (theta_j^T v_j)^2 / ||theta_j||^2,
        samples = (sum_i z_i)^2 / (n sum_i z_i^2),   z_i = sum_j (x_i^T v_j)^2,

    Q an orthonormal basis of the neurons' own weights theta_1 .. theta_m at t1: ``span`` is the part of v that
    moves the neurons within the plane of their weights (a random direction's is m / d), ``radial`` the part that
    rescales each neuron along itself (contained in span), ``samples`` the fraction of the n samples whose
    pre-activations it moves (about 1/3 for a random direction, chi-square z_i; 1/n for one sample)."""
    vals, vecs, theta1, X = state["vals"], state["vecs"], state["theta1"], state["X"]
    d, m = theta1.shape
    Q, _ = np.linalg.qr(theta1)
    norms2 = np.sum(theta1 * theta1, axis=0)
    picked = np.flatnonzero(vals < 0)[:count]
    modes = []
    for k in picked:
        v = vecs[:, k].reshape(d, m)
        w = np.sum(v * v, axis=0)
        z = np.sum((X @ v) ** 2, axis=1)
        modes.append({"eigenvalue": float(vals[k]), "hard2": float(np.sum((state["hard_rows"] @ vecs[:, k]) ** 2)),
                      "neurons": float(1 / np.sum(w * w)), "span": float(np.sum((Q.T @ v) ** 2)),
                      "radial": float(np.sum(np.sum(theta1 * v, axis=0) ** 2 / norms2)),
                      "samples": float(np.sum(z) ** 2 / (len(z) * np.sum(z * z)))})
    return modes


def modes_table(activation: str, link: str, eta: float, m: int, delta: float, d: int, seed: int, t1: int,
                count: int) -> list[str]:
    """Markdown: :func:`unstable_modes` of the first phase of one release (``count`` lowest)."""
    state = frozen_state(activation, link, eta, m, delta, d, seed, t1)
    modes = unstable_modes(state, count)
    lines = [f"m = {m}, d = {d}, delta {delta:g}, run {seed}, step {t1}: {int(np.sum(state['vals'] < 0))} negative "
             f"eigenvalues (a random direction: span {m / d:.2g}, radial {1 / d:.2g})", "",
             "| eigenvalue | hard2 | neurons | span | radial | samples |", "|---|---|---|---|---|---|"]
    lines += [f"| {x['eigenvalue']:.3g} | {x['hard2']:.3g} | {x['neurons']:.2f} | {x['span']:.3f} | {x['radial']:.3f} "
              f"| {x['samples']:.3f} |" for x in modes]
    return lines


def summary(predicted: list, released: list) -> list[str]:
    """Markdown: each prediction beside the release of the same setup, seed, t1, T and start (release_check
    records), and how often learned_lin meets learned."""
    def row(p, rel):
        measured = ([f"{final_q(rel):.3f}", str(rel["t_half"] or "-"), "yes" if rel["learned"] == p["learned"] else "no"]
                    if rel else ["-"] * 3)
        return [str(p["m"]), str(p["d"]), f"{p['delta']:g}", str(p["seed"]), str(p["t1"]), str(p["steps"]),
                f"{p['scale']:g}", f"{p['lowest']:.2g}", str(p["negative"]), f"{p['q'][-1][1]:.3g}",
                f"{p['q_start'][-1][1]:.3g}", f"{p['q_force'][-1][1]:.3g}", str(p["t_half"] or "-"), *measured]
    return beside_releases(predicted, released, ["m", "d", "delta", "seed", "t1", "T", "start", "lowest", "negative",
                                                 "q_lin(T)", "q_start(T)", "q_force(T)", "t_1/2,lin", "q(T)", "t_1/2",
                                                 "agree"], row, "learned_lin (eq. (4))")


def _print_tables(cells: list, table) -> None:
    """Print ``table(m, d, delta, seed)`` (markdown lines) for every cell of release_check.grid; a refused setup is a
    one-line error."""
    for m, d, delta, s in cells:
        try:
            print("\n".join(table(m, d, delta, s)) + "\n", flush=True)
        except (ThresholdsError, FloatingPointError) as exc:
            raise click.ClickException(str(exc)) from None


@click.command()
@release_options(widths="1", seeds="0", t1=10000, what="prediction")
@click.option("--releases", "release_files", multiple=True, type=click.Path(dir_okay=False),
              help="validation.release_check records to set beside the predictions of --summary")
@click.option("--check", "taus", help="steps after t1, comma-separated: print q_lin beside the released GD run's q "
              "(early_check) for every setup, and stop")
@click.option("--modes", "count", type=click.IntRange(min=1), help="print what the COUNT lowest negative eigenvectors "
              "of H at t1 are made of (eq. (5)) for every setup, and stop")
def main(activation, link, eta, widths, deltas, dims, seeds, t1, T, scale, out, summary_files, release_files, taus,
         count):
    if summary_files:
        print("\n".join(summary(_read(summary_files), _read(release_files))))
        return
    if count is not None:
        _print_tables(grid(widths, dims, deltas, seeds),
                      lambda m, d, delta, s: modes_table(activation, link, eta, m, delta, d, s, t1, count))
        return
    if taus is not None:
        taus = _values(taus, "--check", int)
        if not taus or min(taus) < 1:
            raise click.BadParameter(f"{taus}: steps after t1 must be positive", param_hint="--check")
        _print_tables(grid(widths, dims, deltas, seeds),
                      lambda m, d, delta, s: early_check(activation, link, eta, m, delta, d, s, t1, taus, scale))
        return
    run_grid(out, run_one, lambda m, d, delta, s, rec: f"m = {m}, d = {d}, delta {delta:g}, run {s}: q_lin(T) = "
             f"{rec['q'][-1][1]:.3g}, lowest eigenvalue {rec['lowest']:.3g} ({rec['seconds']:.0f} s)",
             (activation, link, eta), grid(widths, dims, deltas, seeds), t1, T, scale)


if __name__ == "__main__":
    main()

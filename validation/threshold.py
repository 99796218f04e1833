"""Empirical recovery thresholds from finite-d GD (issue: validation simulator).

* A trial is one unrestricted GD run (fresh data and initialisation) for a
  horizon that grows like log d: ``T(d) = ceil((t0 + c log d) / eta)`` steps
  (defaults t0 = 50, c = 10, in units of eta * steps).  It succeeds when the
  fraction of ||Theta||_F^2 in the hard subspace exceeds 1/2 at the end (the squared
  cosine with the latent subspace for one neuron and a target without easy directions;
  easy directions are learned in the first phase whatever delta is, so they do not count).
* Success rates carry Wilson score intervals.
* For each d the crossing point (success probability 1/2) is fitted by a
  binomial-likelihood logistic curve in delta; its standard error comes from
  the observed information.
* Crossing points are extrapolated linearly in 1/log d (finite-size effects:
  the hard overlap starts at d^{-1/2}, so escape times grow like log d) by
  weighted least squares; the intercept and its standard error estimate the
  d -> inf threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from thresholds.catalog import get_link
from thresholds.crossing import logistic_crossing as fit_crossing  # noqa: F401 (the sweep's fit, re-exported)
from validation.simulate import GDSetup, run_gd


def horizon(d: int, eta: float, t0: float = 50.0, c: float = 10.0) -> int:
    """Number of GD steps for dimension d: (t0 + c log d) / eta."""
    return int(math.ceil((t0 + c * math.log(d)) / eta))


def wilson(k: int, n: int, z: float = 1.96):
    """Wilson score interval for k successes out of n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


TEST_POINTS = 64  # test-loss evaluations per trial (the success decision does not use the test loss)


def trial(activation, link, delta, d, eta, steps, seed, **setup):
    """One unrestricted GD run: (final fraction of ||Theta||_F^2 in the hard subspace, the run).  A run that
    diverges is a DivergenceError naming the step size (a sweep cannot count it as a success or a failure)."""
    from thresholds.errors import DivergenceError
    try:
        res = run_gd(GDSetup(activation, link, delta, d, eta, steps, complement=False, seed=seed, n_test=1000,
                             test_every=max(1, steps // TEST_POINTS), **setup))
    except FloatingPointError as exc:
        raise DivergenceError(f"GD diverged ({exc}) at d = {d}, delta = {delta:g}, eta = {eta:g}: lower the "
                              "step size") from None
    cos2 = res.hard_overlap / np.maximum(res.norm2, 1e-300)
    res.cos2 = cos2
    return float(cos2[-1]), res


def escape_time(cos2, level=0.5):
    """First step at which the fraction in the hard subspace exceeds ``level`` (None if never)."""
    idx = np.nonzero(np.asarray(cos2) > level)[0]
    return int(idx[0]) if idx.size else None


def hessian_at_first_phase(activation, link, delta, d, eta, steps, seed, **setup):
    """GD restricted to the complement of the hard subspace for ``steps`` (the first phase), then the
    lowest Hessian eigenvalues and their squared overlaps with the hard subspace."""
    from thresholds.alg import latent_split
    from validation.simulate import hessian_probe
    res = run_gd(GDSetup(activation, link, delta, d, eta, steps, complement=True, seed=seed, n_test=1000, **setup))
    X, y = res.data
    return hessian_probe(X, y, res.theta, activation, a=setup.get("a", 1.0), b=setup.get("b", 0.0),
                         k=get_link(link).k, count=2, axes=latent_split(link).hard)


def extrapolate(dims, crossings, errors):
    """Weighted least squares of the crossing point against 1/log d; returns
    (intercept, standard error) = the d -> inf estimate, or (None, None) with < 2 points."""
    pts = [(1 / math.log(d), c, e) for d, c, e in zip(dims, crossings, errors)
           if c is not None and e is not None and np.isfinite(e) and e > 0]
    if len(pts) < 2:
        return None, None
    x = np.array([p[0] for p in pts])
    yv = np.array([p[1] for p in pts])
    w = 1 / np.array([p[2] for p in pts]) ** 2
    A = np.vstack([np.ones_like(x), x]).T
    cov = np.linalg.inv(A.T @ (A * w[:, None]))
    beta = cov @ (A.T @ (w * yv))
    return float(beta[0]), float(math.sqrt(cov[0, 0]))


@dataclass
class ThresholdScan:
    """Success counts per (d, delta) and the fitted crossings."""

    setup: dict
    dims: list
    deltas: list
    successes: dict = field(default_factory=dict)   # (d, delta) -> k
    trials: dict = field(default_factory=dict)      # (d, delta) -> n
    crossings: dict = field(default_factory=dict)   # d -> (delta_c, se)
    extrapolated: tuple = (None, None)
    interrupted: bool = False
    curves: dict = field(default_factory=dict)      # d -> (train, test, cos2) of one trial at the largest delta
    escapes: dict = field(default_factory=dict)     # (d, delta) -> list of escape steps of successful trials
    hessian: dict = field(default_factory=dict)     # (d, delta) -> hessian_probe output
    reused: int = 0                                 # trials read from the store instead of run
    executor: str = "this process"                  # where the other trials ran (validation.sweep)


def scan(activation, link, dims, deltas, trials_per_point, *, eta=0.2, t0=50.0, c=10.0, seed=0,
         progress=None, hessian=False, should_stop=None, store=True, workers=0, scheduler=None,
         **setup) -> ThresholdScan:
    """Run the success-rate grid; Ctrl-C (KeyboardInterrupt) stops it and returns the partial scan,
    and so does ``should_stop()`` returning True, checked after every trial (a cooperative stop
    that cannot land inside a JIT compilation).  Every finished trial is stored as it ends
    (validation.trials; ``store``), and a trial stored by an earlier run of the same grid is reused
    (``reused`` counts them), so an interrupted sweep resumes where it stopped.  The other trials run
    in this process (``workers = 0``) or on Dask (``workers``, ``scheduler``: validation.sweep).
    ``progress(done, total, label)`` is called after every trial.  The scan is assembled in grid order
    whatever the order the trials finish in.
    With ``hessian``, also probe the Hessian after the first phase (complement run) at each (d, delta)."""
    from functools import partial

    from thresholds.problem import Problem
    from validation import sweep, trials
    out = ThresholdScan({"activation": activation, "link": link, "eta": eta, "t0": t0, "c": c,
                         "horizon": {d: horizon(d, eta, t0, c) for d in dims}, **setup},
                        list(dims), list(deltas))
    problem_key = Problem(activation, link, eta=eta, **setup).simulation_key()
    specs = [sweep.TrialSpec(d, delta, j, _trial_seed(seed, d, delta, j), horizon(d, eta, t0, c),
                             delta == max(deltas) and j == 0)
             for d in dims for delta in deltas for j in range(trials_per_point)]
    key = {s: trials.trial_key(problem_key, s.d, s.delta, s.steps, s.seed) for s in specs}
    done = {}
    for s in specs:
        rec = trials.load(key[s], curves=s.keep_curves) if store else None
        if rec is not None:
            done[s] = rec
    out.reused = len(done)

    def finished(spec, rec):
        done[spec] = trials.store(key[spec], rec["cos2"], rec["escape"], rec.get("curves")) if store else rec
        if progress:
            progress(len(done), len(specs), f"d = {spec.d}, delta = {spec.delta:g}")
    pending = [s for s in specs if s not in done]
    if workers == "auto":
        workers = sweep.default_workers(len(pending)) if scheduler is None else 0
    out.executor = (f"Dask scheduler {scheduler}" if scheduler else
                    f"Dask LocalCluster of {workers} workers" if workers else "this process")
    try:
        sweep.execute(partial(sweep.run_trial, activation, link, eta, setup), pending,
                      workers=workers, scheduler=scheduler, on_result=finished, should_stop=should_stop)
    except KeyboardInterrupt:
        out.interrupted = True
    _assemble(out, specs, done, trials_per_point)
    if hessian and not out.interrupted:
        for d in dims:
            for delta in deltas:
                out.hessian[(d, delta)] = hessian_at_first_phase(activation, link, delta, d, eta,
                                                                 horizon(d, eta, t0, c),
                                                                 _trial_seed(seed, d, delta, 10**6), **setup)
    return out


def _trial_seed(seed: int, d: int, delta: float, j: int) -> int:
    return int(np.random.SeedSequence([seed, d, int(round(delta * 1000)), j]).generate_state(1)[0])


def _assemble(out: ThresholdScan, specs, done: dict, trials_per_point: int) -> None:
    """Counts, escapes and curves in grid order from the finished trials; crossings for the d whose every
    point is complete; the extrapolation over those d."""
    for s in specs:
        rec = done.get(s)
        if rec is None:
            continue
        out.successes[(s.d, s.delta)] = out.successes.get((s.d, s.delta), 0) + (rec["cos2"] > 0.5)
        out.trials[(s.d, s.delta)] = out.trials.get((s.d, s.delta), 0) + 1
        if rec["cos2"] > 0.5 and rec["escape"] is not None:
            out.escapes.setdefault((s.d, s.delta), []).append(rec["escape"])
        if s.keep_curves:
            out.curves[s.d] = (rec["curves"]["train"], rec["curves"]["test"], rec["curves"]["cos2"])
    for d in out.dims:
        if all(out.trials.get((d, x)) == trials_per_point for x in out.deltas):
            ks = [out.successes[(d, x)] for x in out.deltas]
            out.crossings[d] = fit_crossing(out.deltas, ks, [trials_per_point] * len(out.deltas))
    ds = [d for d in out.dims if d in out.crossings]
    out.extrapolated = extrapolate(ds, [out.crossings[d][0] for d in ds], [out.crossings[d][1] for d in ds])


def _nn_lines(nn, dims):
    """The prediction paragraph: delta_NN at the horizon, the transient threshold and the
    finite-d thresholds at the scanned d from a cached ``thresholds nn`` result."""
    if nn is None:
        return ("Predicted delta_NN: no cached `thresholds nn` result for this setup (run `thresholds nn` with "
                "the same eta, a, b, rho0, weight decay and m first).")
    s, tr = nn.setup, nn.transient
    fd = {row["d"]: row for row in nn.finite_d(list(dims))}
    finite = ", ".join(f"d = {d}: " + (f"{fd[d]['value']:.3g}" if isinstance(fd[d].get("value"), float) else "none")
                       for d in dims if d in fd)
    return (f"Predicted by `thresholds nn` (law {s.law}, d = {s.law_d}, {s.replicas} seeds, horizon {s.steps} "
            f"steps, searched to {s.search_max:g} at rtol {s.rtol:g}): delta_NN = "
            + (f"{nn.delta_nn:.4g} [{nn.low:.4g}, {nn.high:.4g}]" if nn.found else
               f"> {s.search_max:g} (no negative hard outlier up to the search limit)")
            + " at the horizon; transient "
            + (f"min_t delta_NN(t) = {tr.value:.4g} [{tr.low:.4g}, {tr.high:.4g}] at step {nn.transient_step}"
               if tr.found else "none") + f"; finite-d threshold (growth sqrt(d) within the horizon): {finite}.")


def write_report(result: ThresholdScan, directory, *, delta_alg=None, delta_nn=None):
    """Markdown report with the success table, crossings, extrapolation and two PNGs; ``delta_nn``
    is a cached NNResult of the same setup (or None)."""
    from pathlib import Path

    from thresholds.plots import pyplot
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    st = result.setup
    lines = [f"# Empirical GD threshold: sigma = {st['activation']}, y = {st['link']}", "",
             f"Setup: {', '.join(f'{k} = {v}' for k, v in st.items() if k != 'horizon')}.",
             "Horizon T(d) = ceil((t0 + c log d)/eta) steps: "
             + ", ".join(f"d = {d}: {t}" for d, t in st["horizon"].items()) + ".",
             "Success: fraction of ||Theta||_F^2 in the hard subspace > 1/2 at the horizon (for one neuron "
             "and a target without easy directions, the squared cosine between theta and the latent "
             "subspace; easy directions do not count) (unrestricted GD, fresh data and initialisation per "
             "trial).",
             "" if not result.interrupted else "**Interrupted: partial results.**", "",
             "| d | delta | successes / trials | rate | Wilson 95% |", "|---|---|---|---|---|"]
    for (d, delta), k in sorted(result.successes.items()):
        n = result.trials[(d, delta)]
        lo, hi = wilson(k, n)
        lines.append(f"| {d} | {delta:g} | {k} / {n} | {k / n:.2f} | [{lo:.2f}, {hi:.2f}] |")
    lines += ["", "| d | crossing delta (p = 1/2) | s.e. |", "|---|---|---|"]
    for d, (c, e) in result.crossings.items():
        lines.append(f"| {d} | {'-' if c is None else f'{c:.3f}'} | {'-' if e is None else f'{e:.3f}'} |")
    c, e = result.extrapolated
    lines += ["", "Extrapolation in 1/log d: " + ("not enough crossings" if c is None else f"{c:.3f} +- {e:.3f}"),
              "", f"Predicted delta_alg: {delta_alg if delta_alg is not None else 'n/a'}.", "",
              _nn_lines(delta_nn, result.dims), ""]
    if result.escapes:
        lines += ["Escape time (first step with hard fraction > 1/2) of the successful trials; THEORY.md",
                  "section 5 predicts t_1 + log(c sqrt d)/(eta |z*|), i.e. growth like log d at fixed delta:", "",
                  "| d | delta | successful trials | median escape step | log d |", "|---|---|---|---|---|"]
        for (d, delta), esc in sorted(result.escapes.items()):
            lines.append(f"| {d} | {delta:g} | {len(esc)} | {int(np.median(esc))} | {math.log(d):.2f} |")
        lines.append("")
    if result.hessian:
        lines += ["Hessian after the first phase (GD restricted to the complement for the same horizon):",
                  "lowest eigenvalues and the squared overlaps of their eigenvectors with the hard subspace.", "",
                  "| d | delta | lowest (overlap2) | second (overlap2) |", "|---|---|---|---|"]
        for (d, delta), h in sorted(result.hessian.items()):
            (v1, o1), (v2, o2) = h["lowest"][:2]
            lines.append(f"| {d} | {delta:g} | {v1:.4f} ({o1:.3f}) | {v2:.4f} ({o2:.3f}) |")
        lines.append("")
    plt = pyplot()
    if result.curves:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for d, (train, test, cos2) in result.curves.items():
            axes[0].plot(train, label=f"train, d = {d}")
            at = np.flatnonzero(np.isfinite(test))  # the test loss is evaluated on a schedule
            axes[0].plot(at, np.asarray(test)[at], "--", label=f"test, d = {d}")
            axes[1].plot(cos2, label=f"d = {d}")
        axes[0].set_xlabel("step")
        axes[0].set_title(f"losses at delta = {max(result.deltas):g}")
        axes[1].set_xlabel("step")
        axes[1].set_title("fraction of ||Theta||^2 in the hard subspace")
        for ax in axes:
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(directory / "curves.png", dpi=110)
        plt.close(fig)
        lines.append("![curves](curves.png)")
    fig, ax = plt.subplots(figsize=(6, 4))
    for d in result.dims:
        xs = [x for x in result.deltas if (d, x) in result.successes]
        if not xs:
            continue
        ks = np.array([result.successes[(d, x)] for x in xs])
        ns = np.array([result.trials[(d, x)] for x in xs])
        lo_hi = np.array([wilson(k, n) for k, n in zip(ks, ns)])
        rate = ks / ns
        ax.errorbar(xs, rate, yerr=[rate - lo_hi[:, 0], lo_hi[:, 1] - rate], fmt="o-", capsize=2, label=f"d = {d}")
    lines_at = [(delta_alg, "delta_alg", ":")]
    if delta_nn is not None:
        lines_at += [(delta_nn.delta_nn, "delta_NN (horizon)", "--"),
                     (delta_nn.transient.value if delta_nn.transient.found else None, "transient delta_NN(t)", "-.")]
    for value, name, style in lines_at:
        if value is not None and np.isfinite(value):
            ax.axvline(value, ls=style, color="k", label=name)
    ax.set_xlabel("delta = n/d")
    ax.set_ylabel("success rate")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(directory / "success.png", dpi=110)
    plt.close(fig)
    ds = [d for d, (c, e) in result.crossings.items() if c is not None]
    if ds:
        fig, ax = plt.subplots(figsize=(5, 4))
        ax.errorbar([1 / math.log(d) for d in ds], [result.crossings[d][0] for d in ds],
                    yerr=[result.crossings[d][1] for d in ds], fmt="o", capsize=3)
        if c is not None:
            ax.errorbar([0], [c], yerr=[e], fmt="s", color="tab:red", capsize=3, label="extrapolation")
            ax.legend(fontsize=8)
        ax.set_xlabel("1 / log d")
        ax.set_ylabel("crossing delta")
        fig.tight_layout()
        fig.savefig(directory / "crossings.png", dpi=110)
        plt.close(fig)
        lines.append("![crossings](crossings.png)")
    lines.append("![success](success.png)")
    (directory / "report.md").write_text("\n".join(lines) + "\n")
    return directory / "report.md"


@dataclass
class Validation:
    """A finished (or interrupted) ``thresholds validate`` run: the scan, where its report is, and the
    problem it measured."""

    problem: object
    scan: ThresholdScan
    report: object
    delta_alg: float


def check_measurable(problem, *, hessian: bool = False) -> None:
    """One-line errors before any GD run: a link with no hard direction has no recovery threshold; the
    Hessian probe needs sigma''."""
    from thresholds.alg import latent_split
    from thresholds.catalog import get_activation
    from thresholds.errors import UnsupportedError
    act = get_activation(problem.activation)
    if latent_split(get_link(problem.link)).hard.shape[0] == 0:
        raise UnsupportedError(f"link {problem.link!r} has no hard direction: every direction is learned in the "
                               "first phase, there is no recovery threshold to measure")
    if hessian:
        act.derivative(2)  # one-line error for relu-like activations


def validate(problem, dims, deltas, trials: int, report_dir, *, t0: float = 50.0, c: float = 10.0, seed: int = 0,
             hessian: bool = False, should_stop=None, progress=None, workers=0, scheduler=None) -> Validation:
    """The success-rate grid of ``problem`` (its horizon replaced by T(d)), its report (quoting a cached
    ``thresholds nn`` result of the same problem), and the extrapolated crossing stored for ``table``
    when the grid is complete."""
    from thresholds.alg import delta_alg
    from thresholds.nn import NNSetup
    from thresholds.store import cached_delta_nn, store_validation
    problem.validate()
    check_measurable(problem, hessian=hessian)
    short = [d for d in dims if horizon(d, problem.eta, t0, c) < 1]
    if short or not (math.isfinite(t0) and math.isfinite(c)):
        from thresholds.errors import ThresholdsError
        raise ThresholdsError(f"the horizon (t0 + c log d)/eta must be at least one step (t0 = {t0:g}, c = {c:g}, "
                              f"d = {short[0] if short else dims[0]})")
    alg = delta_alg(problem.link).delta_alg
    result = scan(problem.activation, problem.link, dims, deltas, trials, eta=problem.eta, t0=t0, c=c, seed=seed,
                  hessian=hessian, should_stop=should_stop, progress=progress, workers=workers, scheduler=scheduler,
                  a=problem.a, b=problem.b,
                  rho0=problem.rho0, weight_decay=problem.weight_decay, m=problem.m)
    same = NNSetup.from_problem(problem)
    path = write_report(result, report_dir, delta_alg=alg, delta_nn=cached_delta_nn(same, any_search=True))
    if result.crossings and not result.interrupted:
        store_validation(same, result.extrapolated[0], result.extrapolated[1], str(path), t0=t0, c=c,
                         crossings=result.crossings)
    return Validation(problem, result, path, alg)

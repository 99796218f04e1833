"""Command-line interface of thresholds (installed as the ``thresholds`` command).

Each command parses its options, calls one library function, and renders the
result with the shared rich console (or prints one JSON object with
``--json``).  Heavy imports happen inside the commands.  Every user error
goes through :func:`abort`: a one-line message on stderr and a non-zero exit
code (2 for bad input, 3 for numerical failures), never a traceback.
"""

from __future__ import annotations

import json
import math
import sys

import click
from rich.console import Console
from rich.table import Table

console = Console(emoji=False)  # user text (names, expressions) is printed as it is
err_console = Console(stderr=True, emoji=False)


class NeuronValues(click.ParamType):
    """--a / --b: one number for every neuron, or per-neuron values: a comma-separated list of m numbers,
    '@FILE' (m numbers separated by commas or white space), 'pm1' (independent random signs) or
    'normal' / 'normal:S' (independent N(0, S^2)); the random ones are drawn from --seed (``neuron_values``)."""

    name = "value"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float, tuple)):
            return value
        text = str(value).strip()
        try:
            return float(text)
        except ValueError:
            pass
        if text == "pm1":
            return ("pm1", 1.0)
        if text == "normal" or text.startswith("normal:"):
            try:
                scale = float(text.split(":", 1)[1]) if ":" in text else 1.0
            except ValueError:
                scale = math.nan
            if not (math.isfinite(scale) and scale > 0):
                self.fail(f"{value!r}: 'normal:S' needs a finite scale S > 0", param, ctx)
            return ("normal", scale)
        if text.startswith("@"):
            try:
                with open(text[1:], encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError) as exc:
                self.fail(f"cannot read {value[1:]!r} ({exc.__class__.__name__})", param, ctx)
        try:
            values = tuple(float(v) for v in text.replace(",", " ").split())
        except ValueError:
            values = ()
        if not values or not all(math.isfinite(v) for v in values):
            self.fail(f"{value!r}: give a number, a comma-separated list, @FILE, 'pm1', 'normal' or 'normal:S'",
                      param, ctx)
        return values


def neuron_values(spec, m, seed, name: str):
    """The value(s) of --a or --b for m neurons: a number, or a tuple of m numbers (a list of the wrong
    length is a one-line error; the laws are drawn from ``seed``, with separate streams for a and b)."""
    if isinstance(spec, (int, float)):
        return float(spec)
    if not (isinstance(m, int) and m >= 1):
        abort(f"per-neuron --{name} values need a finite width --m", 2)
    if isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        import numpy as np
        rng = np.random.default_rng([int(seed), 1 if name == "a" else 2])
        kind, scale = spec
        values = rng.choice([-1.0, 1.0], size=m) if kind == "pm1" else scale * rng.standard_normal(m)
        return tuple(float(v) for v in values)
    if len(spec) == 1:
        return float(spec[0])
    if len(spec) != m:
        abort(f"--{name} has {len(spec)} values for m = {m} neurons", 2)
    return tuple(spec)


def show(value) -> str:
    """A number, or per-neuron values, for a setup line."""
    if isinstance(value, tuple):
        return "(" + ", ".join(f"{v:g}" for v in value) + ")"
    return f"{value:g}"


def _problem_default(name):
    from thresholds.problem import Problem
    return Problem.__dataclass_fields__[name].default


def _training_options(func):
    """--eta, --rho0, --a, --b, --weight-decay: one spelling, help and default (thresholds.problem.Problem)
    for every command that trains the network (dmft, hessian, nn, table, grok, validate)."""
    opts = [
        click.option("--eta", default=_problem_default("eta"), show_default=True, type=float,
                     help="Step size (mean-field scaling: theta_j += eta m grad_j(-R))."),
        click.option("--rho0", default=_problem_default("rho0"), show_default=True, type=float,
                     help="Initialization scale ||theta_j^0||."),
        click.option("--a", "a_", default=_problem_default("a"), show_default=True, type=NeuronValues(),
                     help="Second-layer weights a_j: a number, a list of m numbers, @FILE, 'pm1' (random "
                          "signs) or 'normal[:S]' (drawn from --seed)."),
        click.option("--b", "b_", default=_problem_default("b"), show_default=True, type=NeuronValues(),
                     help="Biases b_j: a number, a list of m numbers, @FILE, 'pm1' or 'normal[:S]'."),
        click.option("--weight-decay", default=_problem_default("weight_decay"), show_default=True, type=float,
                     help="Weight decay lambda_wd."),
    ]
    return _with_options(func, opts)


def _with_options(func, opts):
    """``func`` decorated with the click options ``opts``, listed in the order --help shows them."""
    for opt in reversed(opts):
        func = opt(func)
    return func


LINK_HELP = ("Link: name or expression (easy directions are learned in the first phase; "
             "delta_NN is that of the hard subspace: one direction, or several with m = 1).")


MAX_MESSAGE = 400  # characters of an error message (messages may quote user input)


def abort(message: str, code: int = 2):
    """Print a one-line error and exit with ``code``.  The message is shown as text (never as rich markup:
    it may quote user input), on one line, shortened to MAX_MESSAGE characters."""
    from rich.markup import escape
    text = " ".join(str(message).split())
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 5] + " ..."
    err_console.print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def print_table(table: Table, key_columns: int = 1):
    """Print ``table`` on the console without cutting or wrapping a value: as it is when it fits the width;
    else split into several tables, each repeating the first ``key_columns`` columns and taking as many of
    the others as fit (headers may wrap, values never do)."""
    def part(indices, first, no_wrap=True):
        out = Table(title=table.title if first else None, show_header=table.show_header)
        columns = [table.columns[i] for i in indices]
        for col in columns:
            out.add_column(col.header, no_wrap=no_wrap, overflow="fold")
        for row in zip(*(list(col.cells) for col in columns)):
            out.add_row(*row)
        return out

    def natural(t):  # width the table takes when nothing limits it
        from rich.measure import Measurement
        return Measurement.get(console, console.options.update(max_width=100_000), t).maximum

    width = console.width
    if natural(table) <= width or len(table.columns) <= key_columns + 1:
        console.print(table)
        return
    keys = list(range(key_columns))
    parts, current = [], []
    for i in range(key_columns, len(table.columns)):
        if current and natural(part(keys + current + [i], not parts)) > width:
            parts.append(current)
            current = []
        current.append(i)
    parts.append(current)
    for n, cols in enumerate(parts):
        sub = part(keys + cols, n == 0)
        if natural(sub) > width:  # one column wider than the console by itself: let its values wrap
            sub = part(keys + cols, n == 0, no_wrap=False)
        if n == len(parts) - 1:
            sub.caption = table.caption
        console.print(sub)


def check_writable(path, *, directory: bool = False):
    """One-line error, before any computation, when ``path`` cannot be written: a file must be (or become)
    a regular file in an existing folder; a folder is created now (with its parents)."""
    import os
    from pathlib import Path
    target = Path(path)
    try:
        if directory:
            target.mkdir(parents=True, exist_ok=True)
            probe = target / f".thresholds-write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
            return
        if target.exists() and not target.is_file():
            raise OSError("not a regular file")
        existed = target.exists()
        with open(target, "ab"):
            pass
        if not existed:
            target.unlink()
    except OSError as exc:
        abort(f"cannot write {str(path)!r}: {exc.strerror or exc}", 2)


def _writable_file(ctx, param, value):
    if value is not None:
        check_writable(value)
    return value


def _writable_folder(ctx, param, value):
    if value is not None:
        check_writable(value, directory=True)
    return value


def _json_default(obj):
    return str(obj)


def _finite_json(value):
    """Non-finite floats as JSON can hold them: inf -> "inf", -inf -> "-inf", nan -> null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_json(v) for v in value]
    return value


def emit_json(payload: dict):
    """One JSON object on stdout (strict JSON: no NaN or Infinity literals)."""
    click.echo(json.dumps(_finite_json(payload), indent=2, default=_json_default, allow_nan=False))


# old option spellings, accepted for one release with a note on stderr: one name per quantity across the
# commands, --delta (-d) for the sample ratio n/d (one value or a list) and --dims for dimensions
DEPRECATED = {"--d": "--dims", "--deltas": "--delta"}


def modernize(args):
    """``args`` with the DEPRECATED spellings replaced, and the notes to print about them."""
    out, notes = [], []
    for i, token in enumerate(args):
        if token == "--":
            out.extend(args[i:])
            break
        name, eq, value = token.partition("=")
        if name in DEPRECATED:
            notes.append(f"note: {name} is deprecated and will be removed in the next release; use {DEPRECATED[name]}")
            token = DEPRECATED[name] + eq + value
        out.append(token)
    return out, list(dict.fromkeys(notes))


class _Group(click.Group):
    """Turns the project's errors (and any unexpected one) into abort(); accepts the DEPRECATED spellings."""

    def main(self, args=None, *rest, **kw):
        args, notes = modernize(sys.argv[1:] if args is None else list(args))
        for note in notes:
            err_console.print(note, style="yellow", highlight=False)
        return super().main(args, *rest, **kw)

    def invoke(self, ctx):
        from thresholds.errors import ThresholdsError
        try:
            return super().invoke(ctx)
        except ThresholdsError as exc:
            abort(str(exc), exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            abort("interrupted", 130)
        except Exception as exc:  # noqa: BLE001 - last-resort one-line report
            abort(f"internal error ({type(exc).__name__}): {exc}", 1)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="thresholds")
def main():
    """Sample-complexity thresholds for learning multi-index targets.

    delta_alg: optimal spectral / first-order threshold of the hard
    directions.  delta_NN: threshold of a two-layer network trained by GD.
    Activations and links are catalogue names (see `thresholds catalog`) or
    expressions such as "x*erf(x)" or "z1**2 - z2 + 0.5*eps".
    """


@main.command("catalog")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def catalog_cmd(as_json):
    """List the catalogue of activations and links."""
    from thresholds.catalog import activation_names, get_activation, get_link, link_names

    acts = {n: get_activation(n) for n in activation_names()}
    links = {n: get_link(n) for n in link_names()}
    if as_json:
        emit_json({
            "activations": {n: {"expr": str(a.expr), "description": a.description, "smooth": a.smooth}
                            for n, a in acts.items()},
            "links": {n: {"expr": str(l.expr), "description": l.description, "k": l.k,
                          "noise": l.noise is not None} for n, l in links.items()},
        })
        return
    table = Table(title="Activations sigma(x)")
    for col in ("name", "expression", "C^2", "description"):
        table.add_column(col)
    for n, a in acts.items():
        table.add_row(n, str(a.expr), "yes" if a.smooth else "no", a.description)
    print_table(table)
    table = Table(title="Links y = h(z, eps)")
    for col in ("name", "expression", "k", "noise", "description"):
        table.add_column(col)
    for n, l in links.items():
        table.add_row(n, str(l.expr), str(l.k), "yes" if l.noise is not None else "no", l.description)
    print_table(table)


@main.command("hermite")
@click.option("--activation", "-a", help="Activation: catalogue name or expression in x.")
@click.option("--link", "-l", help="Link: catalogue name or expression in z / z1..zk / eps.")
@click.option("--order", "-n", default=8, show_default=True, type=click.IntRange(0, 30),
              help="Highest Hermite order.")
@click.option("--dps", default=30, show_default=True, type=click.IntRange(15, 200),
              help="Decimal digits for numerical quadrature.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def hermite_cmd(activation, link, order, dps, as_json):
    """Hermite coefficients c_k = E[f(G) He_k(G)]/k! (probabilists' He_k)."""
    from thresholds.hermite import activation_hermite, information_exponent, link_hermite

    if (activation is None) == (link is None):
        abort("give exactly one of --activation or --link", 2)
    if activation is not None:
        series = {"x": activation_hermite(activation, order, dps=dps)}
        subject, info = {"activation": activation}, {}
    else:
        series = link_hermite(link, order, dps=dps)
        subject = {"link": link}
        info = {"information_exponent": information_exponent(link, max_order=max(order, 1))}
    if as_json:
        emit_json({**subject, "order": order, "convention": "c_k = E[f(G) He_k(G)]/k!, probabilists' He_k",
                   **info, "coefficients": {v: [c.to_json() for c in cs] for v, cs in series.items()}})
        return
    from thresholds.numbers import format_with_error
    for var, coeffs in series.items():
        from rich.markup import escape
        table = Table(title=escape(f"Hermite coefficients of {next(iter(subject.values()))} along {var} "
                                   "(c_k = E[f He_k]/k!, probabilists')"))
        for col in ("k", "c_k", "exact", "method"):
            table.add_column(col)
        for c in coeffs:
            shown = f"{c.value:.16g}" if c.exact is not None else format_with_error(c.value, c.error)
            table.add_row(str(c.k), shown, c.exact or "", c.method)
        print_table(table)
    if info:
        ie = info["information_exponent"]
        console.print(f"information exponent: {ie if ie is not None else f'> {max(order, 1)}'}")


@main.command("alg")
@click.option("--link", "-l", required=True, help="Link: catalogue name or expression.")
@click.option("--dps", default=30, show_default=True, type=click.IntRange(15, 200),
              help="Decimal digits (noiseless single-index links).")
@click.option("--max-order", default=4, show_default=True, type=click.IntRange(2, 8),
              help="Highest order tried for the generative exponent.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def alg_cmd(link, dps, max_order, as_json):
    """delta_alg: optimal spectral threshold of the hard directions of a link."""
    from thresholds.alg import delta_alg
    from thresholds.numbers import format_with_error

    res = delta_alg(link, dps=dps, max_order=max_order)
    if as_json:
        emit_json(res.to_json())
        return
    from rich.markup import escape
    table = Table(title=escape(f"delta_alg for y = {res.expr}"), show_header=False)
    table.add_column("quantity", no_wrap=True)
    table.add_column("value")
    table.add_row("latent dimension k", str(res.k) + (" (+ noise eps)" if res.noise else ""))
    table.add_row("easy dimension", str(res.easy_dim))
    table.add_row("hard dimension", str(res.hard_dim))
    if res.easy_basis:
        table.add_row("easy directions", "; ".join(str(v) for v in res.easy_basis))
    if res.hard_basis:
        table.add_row("hard directions", "; ".join(str(v) for v in res.hard_basis))
    gen = res.generative_exponent
    table.add_row("generative exponent", str(gen) if gen is not None else f"> {res.max_order}")
    if res.hard_dim and not math.isnan(res.lambda_max):
        table.add_row("lambda_max(F)", format_with_error(res.lambda_max, res.lambda_error))
    if res.hard_dim == 0:
        shown = "0 (no hard direction: every direction is learned at any delta > 0)"
    elif math.isinf(res.delta_alg):
        shown = "inf (F = 0: no proportional sample size suffices)"
    else:
        shown = format_with_error(res.delta_alg, res.error)
    table.add_row("delta_alg = n/d", shown)
    table.add_row("method", res.method)
    print_table(table)


def _within(lo: float, hi: float):
    """Callback: a finite number in [lo, hi] (None passes: the option is optional)."""
    def check(ctx, param, value):
        if value is not None and not (math.isfinite(value) and lo <= value <= hi):
            raise click.BadParameter(f"must be a finite number in [{lo:g}, {hi:g}], got {value!r}")
        return value
    return check


RATIO = _within(1e-6, 1e6)  # delta = n/d
SEED = click.IntRange(0, 2**32 - 1)


@main.command("spectral")
@click.option("--link", "-l", required=True, help="Link: catalogue name or expression.")
@click.option("--preprocessing", "-p", default="optimal", show_default=True,
              help="T(y): 'optimal' (1 - 1/E[g^2|y]), 'mm' (Mondelli-Montanari), or an expression in y "
                   "(and delta).")
@click.option("--delta", "-d", type=float, callback=RATIO,
              help="n/d. With it: bulk edges and outliers; without: the threshold delta_T.")
@click.option("--level", default=6, show_default=True, type=click.IntRange(3, 9),
              help="Quadrature level of the law of y (the error compares it with level+1).")
@click.option("--dps", default=20, show_default=True, type=click.IntRange(15, 100),
              help="Decimal digits of the mpmath law (noiseless single-index links).")
@click.option("--search-max", default=1000.0, show_default=True, type=float, callback=RATIO,
              help="Largest delta searched for delta_T.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), callback=_writable_file,
              help="With --delta: save the bulk density and outliers as a PNG.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def spectral_cmd(link, preprocessing, delta, level, dps, search_max, plot_path, as_json):
    """Spectrum of the estimator (1/n) sum_i T(y_i) x_i x_i^T: bulk, outliers, delta_T."""
    from rich.markup import escape

    from thresholds.numbers import format_with_error
    from thresholds.spectral import spectral

    if plot_path and delta is None:
        abort("--plot needs --delta", 2)
    res = spectral(link, preprocessing, delta, level=level, dps=dps, search_max=search_max)
    if plot_path:
        from thresholds.plots import spectral_plot
        spectral_plot(plot_path, res, link, preprocessing, delta, level=level, dps=dps)
    if as_json:
        emit_json(res.to_json())
        return
    table = Table(title=escape(f"spectral estimator T(y) = {preprocessing} for {link}"), show_header=False)
    table.add_column("quantity", no_wrap=True)
    table.add_column("value")
    if delta is not None:
        table.add_row("delta", f"{delta:g}")
        for name, z, e, kind in zip(("left edge", "right edge"), res.bulk_edges, res.bulk_edges_error,
                                    res.edge_kinds):
            shown = format_with_error(z, e) if math.isfinite(z) else f"{z} (G unbounded: no edge)"
            table.add_row(name, shown + ("" if kind in ("root", "none") else f" [{kind}]"))
        if not res.outliers:
            table.add_row("outliers", "none")
        for i, o in enumerate(res.outliers, 1):
            table.add_row(f"outlier {i} ({o['side']})", format_with_error(o["z"], o["z_error"]))
            table.add_row("  overlap^2 with latent space", format_with_error(o["overlap2"], o["overlap2_error"]))
    else:
        t = res.delta_T
        if math.isinf(t.value):
            shown = f"inf (no outlier above the bulk for delta <= {t.search_max:g})"
        elif t.below_range:
            shown = f"<= {t.search_min:g}"
        else:
            shown = format_with_error(t.value, t.error)
        table.add_row("delta_T (outlier above the bulk)", shown)
        table.add_row("negative outlier appears at", f"never (searched up to {t.search_max:g})"
                      if math.isinf(t.negative) else format_with_error(t.negative, t.negative_error))
        if t.law_undefined_between is not None:
            a, b = t.law_undefined_between
            table.add_row("note", f"T has a pole inside the support of y for delta in [{a:.4g}, {b:.4g}]")
    table.add_row("quadrature", res.setup["nodes"])
    print_table(table)


@main.command("dmft")
@click.option("--activation", "-a", "activation", required=True, help="Activation: name or expression in x.")
@click.option("--link", "-l", required=True,
              help="Link: name or expression (easy directions: their overlaps are printed per step).")
@click.option("--delta", "-d", required=True, type=float, callback=RATIO, help="n/d.")
@_training_options
@click.option("--steps", "-T", required=True, type=click.IntRange(1, 100_000), help="Number of GD steps.")
@click.option("--m", "width", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Width: number of neurons (m > 1 with the sources back-end).")
@click.option("--sphere", is_flag=True, help="Spherical GD: every theta_j rescaled to norm rho0 after each step.")
@click.option("--paths", default=100_000, show_default=True, type=click.IntRange(2, 10**8),
              help="Monte Carlo paths (split over replicas).")
@click.option("--replicas", default=4, show_default=True, type=click.IntRange(1, 1000),
              help="Independent replicas (error bars = their standard error).")
@click.option("--response", default="sources", show_default=True,
              type=click.Choice(["sources", "pathwise", "linear"]), help="Response method.")
@click.option("--source-tol", default=0.0, show_default=True, type=click.FloatRange(0, 1, max_open=True),
              help="sources: relative innovation variance below which a psi column opens no new source (dmft "
                   "eq. (6b); 0: every column opens one). 1e-3 removes most of the finite-paths bias at long horizons.")
@click.option("--response-noise", default=0.0, show_default=True, type=click.FloatRange(0, 1e6),
              help="sources, a diagnostic: add K times the Monte Carlo variance of every response sum (dmft eq. "
                   "(6c)), so that N paths carry the response noise of N/(1+K) paths; a law that moves with it has "
                   "the noise bias, one that moves with --paths only the self-interaction.")
@click.option("--own-term", is_flag=True,
              help="sources: subtract each path's own term of the response sums from its field (dmft eq. (6e), the "
                   "first-order removal of the finite-paths self-interaction; it over-corrects while sources open).")
@click.option("--label-cap", default=0.0, show_default=True, type=click.FloatRange(0, None),
              help="sources: draw the paths from the law conditioned on labels y <= LABEL_CAP (dmft eq. (10d); 0: the "
                   "full law). `thresholds nn --settled-labels` sets it to the own step's stability limit.")
@click.option("--g-nodes", default=0, show_default=True, type=click.IntRange(0, 400),
              help="Gauss-Hermite nodes for g (0: Monte Carlo).")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--every", default=0, type=int, help="Print every k-th step (default: about 20 rows).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the on-disk cache.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), callback=_writable_file, help="Save the curves as a PNG.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def dmft_cmd(activation, link, delta, eta, steps, width, sphere, rho0, a_, b_, weight_decay, paths, replicas,
             response, source_tol, response_noise, own_term, label_cap, g_nodes, seed, every, no_cache, plot_path,
             as_json):
    """DMFT of the first phase of GD (square loss): norms (means over the m neurons), losses and,
    for targets with easy directions, the overlaps with them, per step."""

    from thresholds.dmft import DMFTSetup, solve_dmft
    from thresholds.numbers import format_with_error
    from thresholds.problem import Problem

    problem = Problem(activation, link, a=neuron_values(a_, width, seed, "a"), b=neuron_values(b_, width, seed, "b"),
                      m=width, eta=eta, steps=steps, rho0=rho0, weight_decay=weight_decay, sphere=sphere)
    a_, b_ = problem.a, problem.b
    setup = DMFTSetup.from_problem(problem, delta, paths=paths, replicas=replicas, seed=seed, response=response,
                                   g_nodes=g_nodes, source_tol=source_tol, response_noise=response_noise,
                                   own_term=own_term, label_cap=label_cap)
    with Activity("DMFT", disable=as_json) as act:
        act.begin(f"{steps} steps, {paths} paths")
        res = solve_dmft(setup, progress=act.update, cache=not no_cache)
    step = every if every > 0 else max(1, steps // 20)
    if plot_path:
        from thresholds.plots import dmft_figure
        dmft_figure(plot_path, res.t, {
            "||theta||^2": (res.norm2, res.norm2_err, 0),
            "<theta^t, theta^0>": (res.overlap_init, res.overlap_init_err, 0),
            "train loss": (res.train_loss, res.train_loss_err, 1),
            "test loss": (res.test_loss, res.test_loss_err, 1),
            **({"|M|^2 (easy)": (res.easy_overlap, res.easy_overlap_err, 0)} if res.easy_basis else {})},
            title=f"DMFT {activation} / {link}: delta={delta:g} eta={eta:g} m={width} rho0={rho0:g} a={show(a_)} "
                  f"b={show(b_)} wd={weight_decay:g}" + (" sphere" if sphere else ""))
    if as_json:
        emit_json(res.to_json(every=1 if every <= 0 else every))
        return
    from rich.markup import escape
    table = Table(title=escape(f"DMFT: sigma = {activation}, y = {link}, delta = {delta:g}, eta = {eta:g}, "
                               f"rho0 = {rho0:g}, a = {show(a_)}, b = {show(b_)}, weight decay = {weight_decay:g}, "
                               f"square loss, m = {width}" + (", spherical GD" if sphere else "")))
    easy = bool(res.easy_basis)
    for col in ("t", "||theta||^2", "<theta^t,theta^0>", "train loss", "test loss") + (
            ("|M|^2 (easy overlap)",) if easy else ()):
        table.add_column(col)
    for i in list(range(0, steps + 1, step)) + ([steps] if steps % step else []):
        table.add_row(str(i), format_with_error(res.norm2[i], res.norm2_err[i], max_digits=6),
                      format_with_error(res.overlap_init[i], res.overlap_init_err[i], max_digits=6),
                      format_with_error(res.train_loss[i], res.train_loss_err[i], max_digits=6),
                      format_with_error(res.test_loss[i], res.test_loss_err[i], max_digits=6),
                      *([format_with_error(res.easy_overlap[i], res.easy_overlap_err[i], max_digits=6)]
                        if easy else []))
    print_table(table)
    for note in res.notes:
        console.print(f"[dim]{escape(note)}[/]")
    console.print(f"[dim]{res.seconds:.1f} s[/]")


@main.command("hessian")
@click.option("--activation", "-a", "activation", required=True, help="Activation (C^2): name or expression.")
@click.option("--link", "-l", required=True, help=LINK_HELP)
@click.option("--delta", "-d", "delta_text", required=True,
              help="n/d: one value, a list '4,6,8' or a range 'start:stop:step' (one row per delta).")
@_training_options
@click.option("--steps", "-T", required=True, type=click.IntRange(1, 100_000), help="Length of the first phase.")
@click.option("--paths", default=40_000, show_default=True, type=click.IntRange(2, 10**8))
@click.option("--replicas", default=4, show_default=True, type=click.IntRange(2, 1000))
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (a list under 'scan' for several deltas).")
def hessian_cmd(activation, link, delta_text, eta, steps, rho0, a_, b_, weight_decay, paths, replicas, seed,
                as_json):
    """Hessian spectrum after the first phase: bulk edges, hard-direction outliers (m = 1, square loss).

    With several deltas it prints one row per delta: a scan of the negative hard outlier
    at this step (a delta_NN(t) scan; no threshold is claimed from it).
    """
    from rich.markup import escape

    from thresholds.dmft import DMFTSetup
    from thresholds.hessian import hessian_spectrum
    from thresholds.numbers import format_with_error
    from thresholds.problem import Problem

    deltas = _parse_range(delta_text)
    if not deltas or min(deltas) <= 0:
        abort("--delta must be > 0", 2)
    problem = Problem(activation, link, a=neuron_values(a_, 1, seed, "a"), b=neuron_values(b_, 1, seed, "b"), eta=eta,
                      steps=steps, rho0=rho0, weight_decay=weight_decay)
    a_, b_ = problem.a, problem.b
    results = []
    with Activity("Hessian after the first phase (DMFT, then the spectral equations)", disable=as_json) as act:
        for d in deltas:
            act.begin(f"delta = {d:g} ({len(results) + 1} of {len(deltas)}): DMFT steps")
            results.append(hessian_spectrum(DMFTSetup.from_problem(problem, d, paths=paths, replicas=replicas,
                                                                   seed=seed), progress=act.update))
    if as_json:
        emit_json(results[0].to_json() if len(results) == 1 else {"scan": [r.to_json() for r in results]})
        return
    title = escape(f"Hessian after {steps} GD steps: sigma = {activation}, y = {link}, eta = {eta:g}, "
                   f"rho0 = {rho0:g}, a = {show(a_)}, b = {show(b_)}, weight decay = {weight_decay:g}, square loss, m = 1, "
                   f"{paths} paths in {replicas} replicas")
    table = Table(title=title)
    for col in ("delta", "left edge", "right edge", "edge >= 0", "negative hard outlier", "outliers (z, overlap^2)"):
        table.add_column(col)
    for res in results:
        neg = res.negative_outlier
        outs = "; ".join(f"{o['side']}: {o['z']:.4g} +- {o['z_err']:.1g}, {o['overlap2']:.3g} "
                         f"({o['replicas_with_outlier']}/{o['replicas']})" for o in res.outliers) or "none"
        table.add_row(f"{res.setup.delta:g}", format_with_error(res.left_edge, res.left_edge_err, max_digits=5),
                      format_with_error(res.right_edge, res.right_edge_err, max_digits=5),
                      "yes" if res.settled else "no",
                      "undecided" if neg is None else ("yes" if neg else "no"), outs)
    print_table(table)
    for note in dict.fromkeys(n for r in results for n in r.notes):
        console.print(f"[dim]{escape(note)}[/]")


def _terminate_as_interrupt():
    """SIGTERM (and SIGINT, which background shells ignore) stop a long run like Ctrl-C, so
    that the partial report is still written.  The first signal asks the scan to stop after the
    current trial (returned callable, polled by the scan: an exception raised at an arbitrary
    point could land inside a JIT compilation and be lost); a second one interrupts at once."""
    import signal
    requested = []

    def handler(signum, frame):
        if requested:
            raise KeyboardInterrupt
        requested.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    return lambda: bool(requested)


MAX_VALUES = 1000  # values of a range or a scan (each one is a full computation)


def _parse_range(text: str) -> list:
    """'3:8:0.5' -> [3, 3.5, ..., 8]; '3,4,6' -> [3, 4, 6]; finite values, at most MAX_VALUES of them."""
    try:
        if ":" in text:
            lo, hi, step = (float(v) for v in text.split(":"))
            if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(step)) or step <= 0 or hi < lo:
                raise ValueError
            count = int(round((hi - lo) / step)) + 1
            if count > MAX_VALUES:
                raise click.BadParameter(f"{text!r} has {count} values; at most {MAX_VALUES}")
            return [round(lo + i * step, 10) for i in range(count)]
        values = [float(v) for v in text.split(",") if v.strip()]
        if not all(math.isfinite(v) for v in values):
            raise ValueError
        if len(values) > MAX_VALUES:
            raise click.BadParameter(f"{len(values)} values; at most {MAX_VALUES}")
        return values
    except ValueError:
        raise click.BadParameter(f"{text!r}: use start:stop:step or a comma-separated list of finite "
                                 "numbers") from None


def _parse_dims(text: str) -> list:
    """--dims: comma-separated integers >= 2, sorted and without repeats (aborts with a one-line error otherwise)."""
    try:
        dims = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        abort(f"--dims {text!r}: give comma-separated integers", 2)
    if not dims or min(dims) < 2:
        abort("--dims needs dimensions >= 2", 2)
    return sorted(set(dims))


def parse_scan(text: str):
    """``--scan name=start:stop:count`` -> (name, values) for a field of thresholds.nn.SCANNABLE."""
    import numpy as np

    from thresholds.errors import ThresholdsError
    from thresholds.nn import SCANNABLE
    try:
        name, rng = text.split("=", 1)
        name = name.strip().replace("-", "_")
        start, stop, count = rng.split(":")
        if not (math.isfinite(float(start)) and math.isfinite(float(stop))) or int(count) > MAX_VALUES:
            raise ValueError
        values = np.linspace(float(start), float(stop), int(count))
    except ValueError:
        raise ThresholdsError(f"bad --scan {text!r}: expected name=start:stop:count with finite ends and at most "
                              f"{MAX_VALUES} values, e.g. rho0=0.1:2:10")
    if name not in SCANNABLE:
        raise ThresholdsError(f"cannot scan {name!r}; choose from {', '.join(SCANNABLE)}")
    if int(count) < 1:
        raise ThresholdsError("--scan needs at least one value")
    if name == "steps":
        values = np.unique(np.round(values).astype(int))
    return name, [v.item() for v in values]


class WidthType(click.ParamType):
    """A width m: an integer in [1, 64], or "inf" (the m -> inf Hessian on a law of width --population)."""

    name = "m"

    def convert(self, value, param, ctx):
        text = str(value).strip().lower()
        if text == "inf":
            return math.inf
        try:
            m = int(text)
        except ValueError:
            m = 0
        if not 1 <= m <= 64:
            self.fail(f"{value!r}: give an integer from 1 to 64 or 'inf'", param, ctx)
        return m


def _nn_setup_options(func):
    """Setup options shared by nn, table and grok (defaults of thresholds.nn.NNSetup)."""
    opts = [
        click.option("--steps", "-T", default=_problem_default("steps"), show_default=True, type=click.IntRange(8, 100_000),
                     help="Horizon of the first phase in GD steps (16 checkpoints T/16 ... T)."),
        click.option("--m", "width", default="1", show_default=True, type=WidthType(),
                     help="Width: number of neurons (m > 1: m x m Stieltjes transform, on the relabelling average of the "
                          "neurons when a and b are the same for all; not with --sphere), or "
                     "'inf': the m -> inf limit of the Hessian on the first-phase law of width --population."),
        click.option("--population", default=16, show_default=True, type=click.IntRange(2, 256),
                     help="With --m inf: number of neurons of the finite-d law that stands in for the m -> inf "
                     "population (the limit of the law itself is not taken; compare two values)."),
        click.option("--sphere", is_flag=True, help="Spherical GD: theta rescaled to ||theta|| = rho0 each step "
                     "(Hessian = Riemannian Hessian on the sphere)."),
        click.option("--law", type=click.Choice(["dmft", "gd"]), default=None,
                     help="Law of (u, y, g) after the first phase. dmft (the default): the DMFT, d = inf, on the "
                     "truncated source basis (--source-tol 1e-3), its plain indicator the mean over data sets of "
                     "n = delta * LAW_D paths (--edge-d), 4 per replica with auto --paths; a path check, "
                     "t tests at family-wise level 0.05 against twice the paths, is printed. gd (the cross-check, "
                     "and the default with --m inf): finite-d GD restricted to the complement of theta_* (seeds = "
                     "--replicas, dimension --law-d)."),
        click.option("--law-d", default=1000, show_default=True, type=click.IntRange(50, 10**6),
                     help="The data set size n = delta * LAW_D the threshold is stated for: the default --edge-d of "
                     "the DMFT law, the dimension of the GD law."),
        click.option("--law-dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True,
                     help="Storage of the finite-d law's data and weights (sums are float64 either way; float32 "
                     "halves the memory traffic of the GD runs, the indicators agree far inside their errors)."),
        click.option("--paths", default=None, type=click.IntRange(0, 10**8),
                     help="DMFT paths (all replicas together); 0 or unset: auto, at least 20000 and, with --edge-d, "
                     "4 data sets of n = delta EDGE_D paths per replica at every delta, run again with more paths "
                     "where the law's self-interaction exceeds 0.05 (the Hessian still reads the first count; "
                     "thresholds.evaluation eq. (4))."),
        click.option("--replicas", default=3, show_default=True, type=click.IntRange(2, 1000),
                     help="Independent seeds (--law gd) or DMFT replicas (error bars)."),
        click.option("--source-tol", default=None, type=click.FloatRange(0, 1, max_open=True),
                     help="--law dmft: relative innovation variance below which a psi column opens no new source "
                     "(dmft eq. (6b)); default 1e-3, which removes the law's finite-paths bias at long horizons "
                     "(0: every column, the plain scheme)."),
        click.option("--own-term/--no-own-term", default=None,
                     help="--law dmft: subtract each path's own term of the response sums from its field (dmft eq. "
                     "(6e), the first-order removal of the finite-paths self-interaction)."),
        click.option("--settled-labels/--no-settled-labels", default=None,
                     help="--law dmft: draw the DMFT paths with labels below the stability limit of a sample's own "
                     "step (dmft eq. (10d); quad: y <= delta / (2 eta)), the law of GD's samples at the dimensions "
                     "whose data set holds no label past it; without it a fraction P of the paths ends in period-2 "
                     "orbits where the step is above that limit (wide quad networks). Refused where the limit "
                     "depends on the direction of u."),
        click.option("--edge-d", default=None, type=click.IntRange(0, 10**9),
                     help="--law dmft: the plain indicator is the mean over disjoint data sets of n = delta * EDGE_D "
                     "paths, each a data set at d = EDGE_D from the d = inf law (thresholds/hessian.py eq. (5)); "
                     "default --law-d; 0: all paths of a replica as one law (their own extremes)."),
        click.option("--seed", default=0, show_default=True, type=SEED),
        click.option("--search-max", default=64.0, show_default=True, type=float, callback=RATIO,
                     help="Largest delta searched; beyond it delta_NN is reported as 'inf' (> search-max)."),
        click.option("--rtol", default=0.02, show_default=True, type=float, help="Relative width of the bracket."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the on-disk cache."),
    ]
    return _training_options(_with_options(func, opts))


def _nn_setup(activation, link, kw):
    """The NNSetup of the shared options (``--m inf``: the m -> inf Hessian on a law of width --population)."""
    from thresholds.errors import ThresholdsError
    from thresholds.nn import NNSetup
    from thresholds.problem import Problem
    wide = kw["width"] == math.inf
    a, b = (neuron_values(kw[k], kw["width"], kw["seed"], k[0]) for k in ("a_", "b_"))
    problem = Problem(activation, link, a=a, b=b, m=kw["population"] if wide else kw["width"],
                      eta=kw["eta"], steps=kw["steps"], rho0=kw["rho0"], weight_decay=kw["weight_decay"],
                      sphere=kw["sphere"])
    if kw["paths"] is not None and 0 < kw["paths"] < 16:
        raise ThresholdsError(f"--paths must be 0 (auto) or at least 16, got {kw['paths']}")
    given = {k: kw[k] for k in ("law", "paths", "source_tol", "edge_d", "own_term", "settled_labels")
             if kw[k] is not None}  # else defaults
    return NNSetup.from_problem(problem, mean_field=wide, law_d=kw["law_d"],
                                law_dtype=kw["law_dtype"], replicas=kw["replicas"], seed=kw["seed"],
                                search_max=kw["search_max"], rtol=kw["rtol"], **given)


def _setup_line(setup) -> str:
    return (f"sigma = {setup.activation}, y = {setup.link}, a = {show(setup.a)}, b = {show(setup.b)}, m = {setup.width}, "
            f"rho0 = {setup.rho0:g}, eta = {setup.eta:g}, weight decay = {setup.weight_decay:g}, "
            + ("spherical GD, " if setup.sphere else "")
            + f"{setup.loss} loss, horizon {setup.steps} steps (t = {setup.steps * setup.eta:g}), "
            + (f"{setup.paths or 'auto'} DMFT paths in {setup.replicas} replicas"
               + (f", source tolerance {setup.source_tol:g}" if setup.source_tol else "")
               + (", own terms subtracted" if setup.own_term else "")
               + (", labels below the own step's stability limit (dmft eq. (10d))" if setup.settled_labels else "")
               + (f", data sets of n = delta * {setup.edge_d} samples" if setup.edge_d else "")
               if setup.law == "dmft" else
               f"law from finite-d GD at d = {setup.law_d} ({setup.law_dtype}), {setup.replicas} seeds")
            + f", seed {setup.seed}")


def _pm(value, err, fmt: str, err_fmt: str) -> str:
    """``value +- err``; without the error when it is not a finite number (never "+- nan")."""
    if err is None or not math.isfinite(err):
        return f"{value:{fmt}} (no error estimate: fewer than two replicas give one)"
    return f"{value:{fmt}} +- {err:{err_fmt}}"


def _interval(value, low, high, found, search_max=None) -> str:
    if not found:
        return f"> {search_max:g}" if search_max is not None else "inf"
    return f"{value:.4g}  [{low:.4g}, {high:.4g}]"


class Activity:
    """What a long computation shows on stderr.  On a terminal: a rich bar with the stage, the steps done
    and the elapsed and remaining time of the current stage, plus the total elapsed time.  Redirected: a
    plain line when a stage starts, and at a quarter of it when nothing was printed for 30 s, so that a log
    file shows that work goes on."""

    def __init__(self, label: str, *, disable: bool = False):
        self.label, self.disable, self.stage, self._quarter = label, disable, "", -1
        self._bar = self._task = None

    def __enter__(self):
        import time
        self._start = self._last = time.time()
        if self.disable:
            return self
        if err_console.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("stage left"), TimeRemainingColumn(), TextColumn("total"),
                                 TimeElapsedColumn(), console=err_console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=None)
        else:
            self.line(f"{self.label} ...")
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)
        return False

    def begin(self, stage: str):
        """A new stage (its steps count from 0 again)."""
        self.stage, self._quarter = stage, -1
        if self._bar is not None:
            self._bar.reset(self._task, total=None, description=f"{self.label}: {stage}")
        elif not self.disable:
            self.line(f"{self.label}: {stage}")

    def update(self, done: int, total: int):
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total)
        elif not self.disable and total:
            import time
            quarter = int(4 * done / total)
            if quarter > self._quarter and 0 < quarter < 4 and time.time() - self._last >= 30:
                self._quarter = quarter
                self.line(f"{self.label}: {self.stage + ', ' if self.stage else ''}{25 * quarter}%")

    def line(self, text: str):
        import time
        if self.disable:
            return
        from rich.markup import escape
        self._last = time.time()
        stamp = f"[{self._last - self._start:6.0f} s] " if self._bar is None else ""
        (self._bar.console if self._bar is not None else err_console).print(f"[dim]{stamp}{escape(text)}[/]",
                                                                            highlight=False, soft_wrap=True)


def _run_nn(setup, no_cache, quiet=False, activity=None, name=""):
    """delta_NN with a progress display (the first phase of each evaluated delta, numbered; on
    ``activity`` when given, its stages prefixed by ``name``) and one log line per evaluated delta.  A
    cached result is returned at once and says so (``from_cache``)."""
    from thresholds.store import cached_delta_nn
    from validation.gd_law import delta_nn

    hit = None if no_cache else cached_delta_nn(setup)
    if hit is not None:
        hit.from_cache = True
        return hit
    law = (f"GD law at d = {setup.law_d}" if setup.law == "gd" else f"DMFT, {setup.paths or 'auto'} paths")
    count = {"evaluations": 0, "last": None}
    import contextlib
    with (contextlib.nullcontext(activity) if activity is not None
          else Activity(f"delta_NN search ({law})", disable=quiet)) as act:
        def progress(done, total):
            if count["last"] is None or done < count["last"]:
                count["evaluations"] += 1
                act.begin(f"{name}first phase of evaluation {count['evaluations']}")
            count["last"] = done
            act.update(done, total)

        res = delta_nn(setup, cache=not no_cache, progress=progress,
                       log=(lambda text: act.line(name + text)) if activity is None or name else act.line)
    res.from_cache = False
    return res


def _executor_options(what: str, per_worker: str):
    """--workers / --scheduler: where the independent tasks (``what``) of a command run."""
    def decorate(func):
        func = click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
                            help=f"Run the {what} on an existing Dask cluster (`dask scheduler` and "
                                 "`dask worker`).")(func)
        return click.option("--workers", default="auto", show_default=True,
                            help=f"Dask worker processes for the {what} (one thread each): N starts a "
                                 f"LocalCluster, 0 runs them in this process, 'auto' = one per core while "
                                 f"there are {per_worker} per worker.")(func)
    return decorate


def _executor(workers, scheduler):
    """The parsed --workers ('auto' or an int); aborts on a bad --workers or --scheduler."""
    if workers != "auto":
        try:
            workers = int(workers)
            if not 0 <= workers <= 1024:
                raise ValueError
        except ValueError:
            abort(f"--workers {workers!r}: give 'auto' or an integer from 0 to 1024", 2)
    if scheduler is not None and not scheduler.startswith(("tcp://", "tls://", "inproc://")):
        abort(f"--scheduler {scheduler!r}: give the scheduler's address, e.g. tcp://127.0.0.1:8786", 2)
    return workers


def _run_nn_many(setups, no_cache, workers, scheduler):
    """delta_NN of each setup (validation.searches): cached ones at once, the others in this process
    (the display follows each search) or as Dask tasks; a line as each one ends."""
    from validation.searches import delta_nn_many

    done = []
    with Activity(f"{len(setups)} delta_NN searches") as act:
        def here(setup):
            return _run_nn(setup, no_cache, activity=act, name=f"search {len(done) + 1}/{len(setups)}, ")

        def finished(i, entry, cached):
            done.append(i)
            st = setups[i]
            act.line(f"search {len(done)}/{len(setups)} done: {st.activation}, {st.link}, m = {st.width}"
                     + (" (from cache)" if cached else ""))

        if workers != 0 or scheduler is not None:
            act.begin("running on Dask workers")
        return delta_nn_many(setups, cache=not no_cache, workers=workers, scheduler=scheduler, run_here=here,
                             on_result=finished)


FINITE_LOW = 0.25  # the smallest delta of a finite-d prediction's grid


def _finite_d_options(dims_help: str):
    """--dims / --finite-paths / --finite-start of the finite-d prediction (nn, table)."""
    def decorate(func):
        opts = [
            click.option("--dims", "dims", default=None, metavar="D1,D2,...",
                         help=dims_help + " From an empty cache (forced, 2 cores): about 15-20 s per d at m = 1, "
                         "2 minutes at m = 2, 4-5 at m = 4, 18 at m = 8; planted tens of minutes at m > 1 "
                         "(validation/bench_forced.py, bench_planted.py); every run is cached, so an interrupted "
                         "command resumes."),
            click.option("--finite-paths", default=None, type=click.IntRange(1000, 10**7),
                         help="With --dims: paths of each DMFT run; default: forced max(delta d, 2500 m, 1250 m^2), "
                         "at m = 1 max(delta d, 4000 delta), from m = 8 on max(delta d, 10000 m) (thresholds.forced "
                         "eqs. (4), (4e), (4b)), planted 80000 at "
                         "m = 1 (the spread uses twice as many), 20000 at m > 1 (thresholds.modes)."),
            click.option("--finite-start", default=8.0, show_default=True, type=float,
                         help="With --dims: the first delta of the prediction's grid (grown by factors of 1.15 "
                         "(forced) or 1.5 (planted))."),
            click.option("--finite-source-tol", default=0.0, show_default=True,
                         type=click.FloatRange(0, 1, max_open=True),
                         help="With --dims: the source basis of the horizon-long planted DMFT runs (dmft eq. (6b); "
                         "0: every source, as in the committed checks at m = 1, 2; 1e-3 removes their finite-paths "
                         "bias and was checked at m = 4, validation/reports/planted/width section 5b)."),
            click.option("--finite-method", type=click.Choice(["auto", "planted", "forced"]), default="auto",
                         show_default=True,
                         help="With --dims: 'auto' is forced at every finite m (checked against GD at m = 1-16, "
                         "thresholds.forced); 'planted' "
                         "(thresholds.planted / modes: the forcing up to t* = 50, then the "
                         "unforced d = inf escape from an effective overlap) or 'forced' (thresholds.forced, any m: "
                         "trials of the d = inf bulk with one data set's initial overlap and hard forcing at every "
                         "step; the success rate per delta, its logistic crossing and standard error; its runs use the "
                         "truncated source basis of thresholds.forced eq. (4b), 1e-3 or 1e-2 from m = 8, whatever "
                         "--finite-source-tol says).  planted at m > 1 is checked only for quad at m = 2, 4."),
            click.option("--finite-trials", default=40, show_default=True, type=click.IntRange(4, 10_000),
                         is_eager=True,   # parsed before --finite-pilot, whose callback compares the two
                         help="With --finite-method forced: trials per delta (each one DMFT run, cached; their "
                         "initial overlaps stratified over the trials, thresholds.forced eq. (2s)); the deltas "
                         "of the search get --finite-pilot of them, the two around the crossing all."),
            click.option("--finite-pilot", default=None, type=click.IntRange(4, 10_000), callback=_pilot_callback,
                         help="With --finite-method forced: trials per delta of the search and of the two end "
                         "deltas (thresholds.forced eq. (2p)); default a quarter of --finite-trials (at least 4); "
                         "equal to --finite-trials: every delta gets them all."),
        ]
        return _with_options(func, opts)
    return decorate


def _pilot_callback(ctx, param, value):
    """--finite-pilot: at most --finite-trials (an eager option, so already parsed)."""
    trials = ctx.params.get("finite_trials", 40)
    if value is not None and value > trials:
        raise click.BadParameter(f"{value} is more than --finite-trials {trials}", ctx, param)
    return value


def _finite_method(setup, method: str) -> str:
    """--finite-method with 'auto' resolved: forced at every finite width (thresholds.forced, checked against GD at
    m = 1-16 for quad and gelu; thresholds.modes, the planted route at m > 1, only for quad at m = 2 and 4)."""
    return "forced" if method == "auto" else method


def _finite_refusal(setup, method: str = "auto") -> str:
    """Why the finite-d prediction is not derived for ``setup`` ('' when it is)."""
    from thresholds.modes import any_refusal
    if setup.mean_field:
        return "the finite-d prediction needs a finite width --m"
    if _finite_method(setup, method) == "forced":
        from thresholds.forced import refusal
        return refusal(setup.problem)
    return any_refusal(setup.problem)


def _finite_dims(dims, start, search_max):
    """The parsed --dims (None without it); aborts when --finite-start lies outside the search range."""
    if dims is None:
        return None
    dim_list = _parse_dims(dims)
    if not FINITE_LOW < start < search_max:
        abort(f"--finite-start {start:g} must lie inside the search range ({FINITE_LOW:g}, {search_max:g})", 2)
    return dim_list


@main.command("nn")
@click.option("--activation", "-a", "activation", required=True, help="Activation (C^2): name or expression.")
@click.option("--link", "-l", default="phase_retrieval", show_default=True,
              help=LINK_HELP)
@_nn_setup_options
@click.option("--scan", "scan_text", help="Sensitivity: delta_NN for each value of one parameter, "
              "e.g. rho0=0.1:2:10 (name=start:stop:count; rho0, a, b, eta, weight_decay, steps).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), callback=_writable_file,
              help="Save the t-curve (or the --scan curve) as a PNG.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (a list under 'scan' with --scan).")
@_finite_d_options("Also predict the finite-d threshold at these d: the delta at which GD succeeds by step "
                   "--steps with probability 1/2 (forced DMFT trials, thresholds.forced; finite --m only; see "
                   "--finite-method).")
@_executor_options("searches of --scan and the forced trials of --dims", "one task")
def nn_cmd(activation, link, scan_text, plot_path, as_json, workers, scheduler, dims, finite_paths, finite_start,
           finite_source_tol, finite_method, finite_trials, finite_pilot, **kw):
    """delta_NN: smallest n/d at which the Hessian after the first phase of GD has a
    negative outlier in the hard subspace (any width --m and number of hard directions;
    square loss).

    Prints delta_NN with its interval (bracket and Monte Carlo error), delta_alg, the
    t-curve delta_NN(t) over the checkpoints and the rule used to call it converged.
    """
    from rich.markup import escape

    from thresholds.errors import ThresholdsError

    setup = _nn_setup(activation, link, kw)
    setup.validate()
    dim_list = _finite_dims(dims, finite_start, setup.search_max)
    if dim_list and (scan_text or _finite_refusal(setup, finite_method)):
        abort("--dims (the finite-d prediction): " + (_finite_refusal(setup, finite_method) or "not with --scan"), 2)
    if scan_text:
        from dataclasses import replace
        name, values = parse_scan(scan_text)
        results = _run_nn_many([replace(setup, **{name: v}) for v in values], kw["no_cache"],
                               _executor(workers, scheduler), scheduler)
        refused = next((r for r in results if isinstance(r, ThresholdsError)), None)
        if refused is not None:
            raise refused
        if plot_path:
            from thresholds.plots import scan_figure
            scan_figure(results, name, values, plot_path)
        if as_json:
            emit_json({"parameter": name, "scan": [dict(r.to_json(), value=v) for r, v in zip(results, values)]})
            return
        table = Table(title=escape(f"delta_NN versus {name}: " + _setup_line(setup)))
        for col in (name, "delta_NN [interval]", "transient min_t delta_NN(t)", "converged", "edge >= 0"):
            table.add_column(col)
        for r, v in zip(results, values):
            table.add_row(f"{v:g}", _interval(r.delta_nn, r.low, r.high, r.found, setup.search_max),
                          _interval(r.transient.value, r.transient.low, r.transient.high, r.transient.found,
                                    setup.search_max) + (f" (step {r.transient_step})" if r.transient.found else ""),
                          "yes" if r.converged else "no", "yes" if r.settled else "no")
        print_table(table)
        return
    res = _run_nn(setup, kw["no_cache"], quiet=as_json)
    finite = (_finite_d_prediction(setup, dim_list, finite_paths, finite_start, kw["no_cache"], quiet=as_json,
                                   source_tol=finite_source_tol, method=finite_method, trials=finite_trials,
                                   pilot=finite_pilot,
                                   workers=_executor(workers, scheduler), scheduler=scheduler)
              if dim_list else None)
    if plot_path:
        from thresholds.plots import t_curve_figure
        t_curve_figure(res, plot_path)
    if as_json:
        out = res.to_json()
        if finite is not None:
            out["finite_d"] = [c.to_json() for c in finite.crossings]
            out["finite_d_prediction"] = finite.to_json()
        emit_json(out)
        return
    console.print(escape(_setup_line(setup)), style="dim")
    console.print(f"delta_NN  = {_interval(res.delta_nn, res.low, res.high, res.found, setup.search_max)}"
                  + ("  (at or below the lower end of the search)" if res.below_range else ""))
    console.print(f"delta_alg = {res.delta_alg:.6g}" + (f"   ratio delta_NN/delta_alg = {res.ratio:.3g}"
                                                       if res.found else ""))
    c = res.clipped
    console.print(f"tail check (G clipped at its 1e-3 quantile): {_interval(c.value, c.low, c.high, c.found, setup.search_max)}")
    table = Table(title="t-curve: delta_NN(t) at the checkpoints")
    for col in ("step", "t = eta step", "delta_NN(t) [interval]"):
        table.add_column(col)
    # a checkpoint without a crossing is only known to have none up to the largest delta evaluated there
    evaluated = max((e.delta for e in res.evaluations), default=setup.search_max)
    for step, cr in res.t_curve:
        table.add_row(str(step), f"{step * setup.eta:g}", _interval(cr.value, cr.low, cr.high, cr.found, evaluated))
    print_table(table)
    fd = Table(title="escape model: smallest delta whose hard component grows by sqrt(d) at the checkpoints' "
               "Hessian outliers, or keeps an outlier at the horizon (no time limit; not predictive of GD, README; "
               "see --dims)")
    fd.add_column("d")
    fd.add_column("escape-model threshold [interval]")
    for row in res.finite_d((200, 400, 1000, 2000, 4000, 10_000, 100_000)):
        fd.add_row(str(row["d"]), "> search range" if not row["found"]
                   else f"{row['value']:.4g}  [{row['low']:.4g}, {row['high']:.4g}]")
    print_table(fd)
    if finite is not None:
        _print_finite_d(finite)
    console.print("converged (|delta_NN(T) - delta_NN(T/2)| <= half-interval + rtol delta_NN): "
                  + ("yes" if res.converged else "no") + f"; left bulk edge >= 0: {'yes' if res.settled else 'no'} "
                  f"(left bulk edge {res.left_edge:+.4f} +- {res.left_edge_err:.1g})")
    for note in res.notes:
        console.print(f"[dim]{escape(note)}[/]")
    console.print(f"[dim]{res.seconds:.1f} s ({len(res.evaluations)} deltas evaluated)"
                  + (", from cache" if getattr(res, "from_cache", False) else "") + "[/]")


def _finite_d_prediction(setup, dims, paths, start, no_cache, quiet=False, source_tol=0.0, method="auto",
                         trials=40, workers=0, scheduler=None, pilot=None):
    """thresholds.modes.prediction for the problem of ``setup`` (its grid grown from ``start``; ``source_tol``:
    the planted runs' source basis), or with ``method`` 'forced' thresholds.forced.predict (``trials`` per
    delta, its own source basis, the trials of a delta spread over ``workers`` Dask processes or the cluster at
    ``scheduler``; 'auto': one per core), with a log line per DMFT run or per delta."""
    from thresholds.modes import prediction
    if _finite_method(setup, method) == "forced":
        from thresholds.forced import pilot_for, predict
        from validation.sweep import default_workers, task_map
        if workers == "auto":
            workers = default_workers(trials, per_core=1)
        where = f" on {workers} worker processes" if workers else (" on the Dask cluster" if scheduler else "")
        with Activity(f"forced DMFT trials at d = {', '.join(map(str, dims))}", disable=quiet) as act, \
                task_map(workers, scheduler) as map_trials:
            act.begin(f"{pilot_for(trials, pilot)} trials per delta, {trials} at the two around the crossing "
                      f"({setup.steps} steps each){where}")
            return predict(setup.problem, dims, trials=trials, pilot=pilot, start=start, paths=paths,
                           search_min=max(setup.search_min, FINITE_LOW), search_max=setup.search_max,
                           cache=not no_cache, log=act.line, map_trials=map_trials)
    with Activity(f"finite-d prediction at d = {', '.join(map(str, dims))}", disable=quiet) as act:
        act.begin(f"planted DMFT runs ({setup.steps} steps each) and spreads")
        return prediction(setup.problem, dims, paths=paths, start=start, search_min=max(setup.search_min, FINITE_LOW),
                          search_max=setup.search_max, seed=setup.seed, cache=not no_cache, log=act.line,
                          source_tol=source_tol)


def _print_finite_d(finite):
    from rich.markup import escape

    from thresholds.forced import ForcedPrediction
    forced = isinstance(finite, ForcedPrediction)
    t = Table(title=f"finite d: delta at which GD succeeds by step {finite.problem.steps} with probability 1/2 "
                    + ("(thresholds.forced; range: -+ 1 s.e.)" if forced else "(thresholds.planted)"))
    t.add_column("d")
    t.add_column("delta_1/2(d) [range]")
    for c in finite.crossings:
        t.add_row(str(c.d), (f"{c.value:.4g}  [{c.low:.4g}, {c.high:.4g}]" + (f" ({c.note})" if c.note else ""))
                  if c.found else f"not found ({c.note})")
    print_table(t)
    def show_point(p, name=""):
        if forced:
            return f"d {p.d}: {p.delta:g} ({p.successes}/{p.trials})"
        if hasattr(p, "angles"):   # one DeltaPoint per angle of the neurons' start (thresholds.modes)
            return f"{p.delta:g} (" + "; ".join(show_point(q, f"phi {math.degrees(phi):.0f}: ")
                                                 for phi, q in p.angles.items()) + ")"
        text = f"{name}q_c [{p.q_low:.3g}, {p.q_high:.3g}], s {p.s:.2f} +- {p.s_err:.2f}"
        return text if name else f"{p.delta:g} ({text})"

    console.print(escape("computed deltas: " + ", ".join(show_point(p) for p in finite.points)), style="dim")
    console.print(f"[dim]{escape(finite.scope)} {finite.seconds:.0f} s.[/]")


@main.command("table")
@click.option("--links", default="phase_retrieval", show_default=True, help="Comma-separated links.")
@click.option("--activations", default="gelu,quad,tanh", show_default=True, help="Comma-separated activations.")
@click.option("--widths", default=None, help="Comma-separated widths m (one row each; overrides --m).")
@_nn_setup_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a 'rows' list.")
@_finite_d_options("Add the finite-d prediction at these d (as `nn --dims`; rows of finite width, one after the "
                   "other) and the crossing at d of a cached `validate` run at the same fixed horizon "
                   "(--t0 steps*eta --c 0).")
@_executor_options("rows' searches and the forced trials of --dims", "one task")
def table_cmd(links, activations, widths, as_json, workers, scheduler, dims, finite_paths, finite_start,
              finite_source_tol, finite_method, finite_trials, finite_pilot, **kw):
    """One row per (link, activation, width): delta_alg, delta_NN, their ratio, and the
    simulated threshold when a validation of the same setup is cached; with --dims, the
    finite-d prediction next to the simulated crossing at each d."""
    from rich.markup import escape

    from thresholds.errors import ThresholdsError, UnsupportedError
    from thresholds.store import cached_validation

    try:
        width_list = ([WidthType().convert(v, None, None) for v in widths.split(",") if v.strip()]
                      if widths else [kw["width"]])
    except click.BadParameter:
        abort(f"--widths {widths!r}: give comma-separated integers from 1 to 64 or 'inf'", 2)
    if not width_list:
        abort("--widths needs at least one width", 2)
    link_list = [v.strip() for v in links.split(",") if v.strip()]
    act_list = [v.strip() for v in activations.split(",") if v.strip()]
    if not link_list or not act_list:
        abort("--links and --activations need at least one name each", 2)
    setups = [_nn_setup(act, link, dict(kw, width=m)) for link in link_list for act in act_list for m in width_list]
    dim_list = _finite_dims(dims, finite_start, kw["search_max"])
    rows = []
    for setup, res in zip(setups, _run_nn_many(setups, kw["no_cache"], _executor(workers, scheduler), scheduler)):
        if isinstance(res, UnsupportedError):  # e.g. a link with no hard direction
            rows.append((setup, None, str(res)))
        elif isinstance(res, ThresholdsError):
            raise res
        else:
            rows.append((setup, res, cached_validation(setup)))
    finite = {}
    if dim_list:
        from thresholds.store import cached_validation as cached
        for i, (st, r, _) in enumerate(rows):
            if r is not None and not _finite_refusal(st, finite_method):
                pred = _finite_d_prediction(st, dim_list, finite_paths, finite_start, kw["no_cache"], quiet=as_json,
                                            source_tol=finite_source_tol, method=finite_method, trials=finite_trials,
                                   pilot=finite_pilot,
                                            workers=_executor(workers, scheduler), scheduler=scheduler)
                sim = cached(st, t0=st.steps * st.eta, c=0.0) or {}
                finite[i] = (pred, sim.get("crossings", {}))
    if as_json:
        def fd_json(i):
            if i not in finite:
                return {}
            pred, sim = finite[i]
            return {"finite_d": [dict(c.to_json(), simulated=sim.get(str(c.d))) for c in pred.crossings],
                    "finite_d_prediction": pred.to_json()}
        emit_json({"rows": [dict(r.to_json(), simulated=v, **fd_json(i)) if r is not None else
                            {"link": st.link, "activation": st.activation, "m": st.width, "unsupported": v}
                            for i, (st, r, v) in enumerate(rows)]})
        return
    first = next((st for st, r, _ in rows if r is not None), None)
    table = Table(title=escape("delta_alg versus delta_NN: " + _setup_line(first).split(", ", 2)[2]
                               if first is not None else "delta_NN"))
    table.caption = "links with easy directions: delta_alg and delta_NN of the hard direction"
    laws = {(st.law, st.law_d) for st, r, _ in rows if r is not None}
    if len(laws) > 1:   # the title's setup line is the first row's; say which rows took the other law
        table.caption += "; law of the first phase per row: " + ", ".join(
            f"m = {st.width}: {'DMFT' if st.law == 'dmft' else f'GD at d = {st.law_d}'}"
            for st, r, _ in rows if r is not None and st.activation == first.activation and st.link == first.link)
    for col in ("link", "activation", "m", "delta_alg", "delta_NN [interval]", "ratio", "transient delta_NN(t)",
                "converged", "simulated"):
        table.add_column(col)
    for d in dim_list or []:
        table.add_column(f"d = {d}: predicted / simulated")
    unsupported = []
    for i, (setup, r, v) in enumerate(rows):
        if r is None:
            from thresholds.alg import latent_split
            reason = f"n/a (r_H = {latent_split(setup.link).hard.shape[0]})"
            table.add_row(setup.link, setup.activation, setup.width, "-", reason, "-", "-", "-", "-",
                          *["-"] * len(dim_list or []))
            unsupported.append(v)
            continue
        tr = r.transient
        table.add_row(setup.link, setup.activation, setup.width, f"{r.delta_alg:.4g}",
                      _interval(r.delta_nn, r.low, r.high, r.found, setup.search_max),
                      f"{r.ratio:.3g}" if r.found else "inf",
                      _interval(tr.value, tr.low, tr.high, tr.found, setup.search_max),
                      "yes" if r.converged else "no",
                      "-" if v is None or v.get("value") is None else (f"{v['value']:.3g} +- {v['error']:.2g} (d -> inf)"),
                      *_finite_cells(finite.get(i), dim_list or []))
    print_table(table, key_columns=3)
    console.print("[dim]simulated: extrapolated GD crossing from a cached `thresholds validate` run of the same "
                  "setup ('-' when none)[/]")
    if dim_list:
        console.print(f"[dim]d = D: the finite-d prediction ("
                      + ("thresholds.planted at m = 1, thresholds.modes at m > 1" if finite_method == "planted"
                         else "forced DMFT trials, thresholds.forced") + ") "
                      f"at the horizon of {kw['steps']} "
                      "steps / the crossing at d of a cached `validate --t0 steps*eta --c 0` run ('-' when none)[/]")
    for note in dict.fromkeys(unsupported):
        console.print(f"[dim]n/a: {escape(note)}[/]")


def _finite_cells(entry, dims):
    """The table cells 'predicted [range] / simulated +- s.e.' of one row, '-' where there is nothing."""
    if entry is None:
        return ["-"] * len(dims)
    pred, sim = entry
    cells = []
    for c in pred.crossings:
        p = f"{c.value:.3g} [{c.low:.3g}, {c.high:.3g}]" if c.found else "none"
        v = sim.get(str(c.d))
        cells.append(p + " / " + (f"{v[0]:.3g} +- {v[1]:.2g}" if v else "-"))
    return cells


@main.command("grok")
@click.option("--activation", "-a", "activation", required=True, help="Activation (C^2): name or expression.")
@click.option("--link", "-l", default="phase_retrieval", show_default=True, help="Link: name or expression.")
@click.option("--delta", "-d", required=True, type=float, callback=RATIO,
              help="n/d (above delta_NN for an escape).")
@click.option("--dims", "dims", default="1000,2000,4000,8000", show_default=True, help="Dimensions, comma-separated.")
@_nn_setup_options
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), callback=_writable_file,
              help="Save the predicted train/test loss curves with the escape times as a PNG.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def grok_cmd(activation, link, delta, dims, plot_path, as_json, **kw):
    """Predicted grokking: first-phase train/test loss (DMFT) and the escape step versus d."""
    from rich.markup import escape

    from validation.gd_law import escape_times

    dim_list = _parse_dims(dims)
    if delta <= 0:
        abort("--delta must be > 0", 2)
    setup = _nn_setup(activation, link, kw)
    setup.validate()
    law = f"GD law at d = {setup.law_d}" if setup.law == "gd" else f"DMFT, {setup.paths or 'auto'} paths"
    with Activity(f"escape times at delta = {delta:g}", disable=as_json) as act:
        act.begin(f"first phase ({law}), then the Hessian and the DMFT loss curves")
        out = escape_times(setup, delta, dim_list, cache=not kw["no_cache"], progress=act.update)
    if plot_path:
        from thresholds.plots import grok_figure
        grok_figure(out, plot_path)
    if as_json:
        emit_json(out)
        return
    console.print(escape(_setup_line(setup) + f", delta = {delta:g}"), style="dim")
    i = [len(out["curves"]["t"]) // 8 * k for k in (1, 2, 4, 8)]
    cur = out["curves"]
    console.print("first phase (DMFT): " + "; ".join(
        f"step {cur['t'][j]}: train {cur['train_loss'][j]:.4f}, test {cur['test_loss'][j]:.4f}"
        for j in sorted({min(k, len(cur['t']) - 1) for k in i})))
    if out["escape"] is None:
        console.print(out["note"])
        return
    g = out["growth"]
    console.print(f"log-growth of the hard component over the first phase L(T) = "
                  f"{_pm(g['log_growth'][-1], g['log_growth_err'][-1], '.3g', '.2g')}; hard outlier at the horizon: "
                  + ("none" if not out["outlier_z"] < 0 else _pm(out['outlier_z'], out['outlier_z_err'], '.4g', '.1g')))
    table = Table(title=escape("predicted escape step: first t with L(t) = log sqrt(d)"))
    table.add_column("d")
    table.add_column("escape step")
    for row in out["escape"]["rows"]:
        table.add_row(str(row["d"]), "never" if row["steps"] is None
                      else _pm(row['steps'], row['steps_err'], '.0f', '.0f') + (" (extrapolated)" if row.get("note")
                                                                             else ""))
    print_table(table)


@main.command("validate")
@click.option("--activation", "-a", "activation", required=True, help="Activation: name or expression in x.")
@click.option("--link", "-l", required=True, help="Link: name or expression.")
@click.option("--dims", "dims", default="200,400", show_default=True, help="Dimensions, comma-separated.")
@click.option("--delta", "-d", "deltas", default="2:8:1", show_default=True,
              help="Sample ratios n/d: start:stop:step or a comma-separated list.")
@click.option("--trials", default=10, show_default=True, type=click.IntRange(1, 100_000))
@_training_options
@click.option("--m", "width", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Width (success: the squared norm of Theta in the hard subspace exceeds half of ||Theta||^2).")
@click.option("--t0", default=50.0, show_default=True, type=float, help="Horizon: (t0 + c log d)/eta steps.")
@click.option("--c", "c_", default=10.0, show_default=True, type=float, help="Horizon slope in log d.")
@click.option("--jobs", default="auto", show_default=True,
              help="numba threads of the GD kernel in this process; 'auto' = all cores.")
@_executor_options("trials", "two trials")
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--hessian/--no-hessian", default=False, show_default=True,
              help="Also probe the Hessian after the first phase at each (d, delta) (needs sigma'').")
@click.option("--report", "report_dir", default="validation-report", show_default=True,
              type=click.Path(file_okay=False), callback=_writable_folder, help="Directory of the markdown report and PNGs.")
def validate_cmd(activation, link, dims, deltas, trials, eta, rho0, a_, b_, weight_decay, width, t0, c_, jobs,
                 workers, scheduler, seed, hessian, report_dir):
    """Empirical GD recovery threshold (success rate vs delta at several d) with a report.

    Ctrl-C (or SIGTERM) stops the scan after the current trial and writes the partial report;
    a second Ctrl-C interrupts at once.
    """
    from rich.progress import Progress

    from thresholds.problem import Problem
    from validation.threshold import check_measurable, validate

    problem = Problem(activation, link, a=neuron_values(a_, width, seed, "a"), b=neuron_values(b_, width, seed, "b"),
                      m=width, eta=eta, rho0=rho0, weight_decay=weight_decay)
    problem.validate()
    check_measurable(problem, hessian=hessian)
    dim_list = _parse_dims(dims)
    delta_list = _parse_range(deltas)
    if not delta_list or min(delta_list) <= 0:
        abort("--delta must be > 0", 2)
    if jobs != "auto":
        try:
            import numba
            numba.set_num_threads(max(1, min(int(jobs), numba.config.NUMBA_NUM_THREADS)))
        except ValueError:
            abort(f"--jobs {jobs!r}: give 'auto' or an integer", 2)
    workers = _executor(workers, scheduler)
    stop_requested = _terminate_as_interrupt()
    err_console.print(f"GD runs: {len(dim_list)} dimension(s) x {len(delta_list)} delta(s) x {trials} trials "
                      "(Ctrl-C or SIGTERM: stop after the current trial and write the partial report)")
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    columns = (TextColumn("GD trials {task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("", total=1)
        run = validate(problem, dim_list, delta_list, trials, report_dir, t0=t0, c=c_, seed=seed, hessian=hessian,
                       should_stop=stop_requested, workers=workers, scheduler=scheduler,
                       progress=lambda done, total, label: bar.update(task, completed=done, total=total,
                                                                      description=f"({label})"))
    result, path = run.scan, run.report
    done = sum(result.trials.values())
    console.print(f"report: {path}" + (" (interrupted: partial)" if result.interrupted else "")
                  + f"; {done} trials, {result.reused} of them reused from earlier runs (stored as they finish), "
                  f"the others run in {result.executor}")
    for d, (cr, se) in result.crossings.items():
        console.print(f"d = {d}: crossing " + ("not bracketed" if cr is None else f"{cr:.3f} +- {se:.3f}"))
    if result.extrapolated[0] is not None:
        console.print(f"extrapolated (1/log d -> 0): {result.extrapolated[0]:.3f} +- {result.extrapolated[1]:.3f}")
    if result.interrupted:
        sys.exit(130)


if __name__ == "__main__":
    main()

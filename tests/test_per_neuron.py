"""Per-neuron second-layer weights a_j and biases b_j: the record, eq. (2) of thresholds.hessian, the
DMFT against GD, and the CLI's ways of giving them."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from cli import NeuronValues, main, neuron_values
from thresholds.dmft import DMFTSetup, solve_dmft
from thresholds.errors import ThresholdsError, UnsupportedError
from thresholds.hessian import hessian_weight_m
from thresholds.nn import NNSetup
from thresholds.problem import Problem
from thresholds.store import result_key


def test_equal_values_are_one_number_and_lengths_are_checked():
    assert Problem("gelu", a=[0.5, 0.5], m=2).a == 0.5 and Problem("gelu", b=np.array([1.0, 2.0]), m=2).b == (1.0, 2.0)
    assert result_key(NNSetup("gelu", m=2, a=(1.0, 1.0))) == result_key(NNSetup("gelu", m=2))  # one cache key
    assert result_key(NNSetup("gelu", m=2, a=(1.0, -1.0))) != result_key(NNSetup("gelu", m=2))
    with pytest.raises(ThresholdsError, match="2 per-neuron values for m = 3"):
        Problem("gelu", a=(1.0, 2.0), m=3).validate()
    with pytest.raises(ThresholdsError, match="finite number or one per neuron"):
        Problem("gelu", b=(1.0, math.nan), m=2).validate()


def test_the_width_m_hessian_weight_is_the_hessian_of_the_risk():
    # H = m Hess R = (1/n) sum_i W_i (x) x_i x_i^T with per-neuron a_j, b_j, against central differences
    # of m grad R (an independent route: only f and its gradient are coded here)
    from thresholds.catalog import get_activation
    rng = np.random.default_rng(11)
    n, d, m = 400, 4, 3
    a, b = np.array([1.0, -0.6, 1.7]), np.array([0.2, -0.4, 0.0])
    X = rng.standard_normal((n, d))
    y = X[:, 0] ** 2
    Theta = rng.standard_normal((d, m)) / np.sqrt(d)
    act = get_activation("tanh")
    s0, s1 = act.numpy(0), act.numpy(1)

    def grad(T):  # m * grad R, (d, m) flattened neuron-major to match W (x) x x^T below
        U = X @ T + b
        r = y - np.mean(a * s0(U), axis=1)
        return (-(X.T @ (r[:, None] * a * s1(U))) / n).T.reshape(-1)

    h = 1e-6
    fd = np.column_stack([(grad(Theta + h * e.reshape(m, d).T) - grad(Theta - h * e.reshape(m, d).T)) / (2 * h)
                          for e in np.eye(d * m)])
    W = hessian_weight_m(act, a, b, X @ Theta, y)                     # (n, m, m)
    H = np.einsum("njk,na,nb->jakb", W, X, X).reshape(m * d, m * d) / n
    np.testing.assert_allclose(H, 0.5 * (fd + fd.T), atol=2e-6)
    # uniform values reduce to the scalar form
    np.testing.assert_allclose(hessian_weight_m(act, 0.7, 0.1, X @ Theta, y),
                               hessian_weight_m(act, np.full(m, 0.7), np.full(m, 0.1), X @ Theta, y))


def test_dmft_with_per_neuron_weights_matches_gd():
    # as tests/test_dmft.py::test_width_m_dmft_matches_gd, with a = (1, -0.6) and b = (0.2, -0.1), on both
    # source bases (dmft eq. (6b))
    from validation.simulate import GDSetup, run_gd
    T, a, b = 10, (1.0, -0.6), (0.2, -0.1)
    runs = [run_gd(GDSetup("gelu", "phase_retrieval", 4.0, 1000, 0.2, T, m=2, a=a, b=b, seed=s)) for s in range(6)]
    for tol in (0.0, 1e-3):
        res = solve_dmft(DMFTSetup("gelu", "phase_retrieval", 4.0, 0.2, T, m=2, a=a, b=b, paths=24_000, replicas=4,
                                   source_tol=tol))
        for key in ("norm2", "overlap_init", "train_loss", "test_loss"):
            sim = np.array([getattr(r, key)[T] for r in runs])
            se = math.hypot(sim.std(ddof=1) / math.sqrt(sim.size), getattr(res, key + "_err")[T])
            assert abs(sim.mean() - getattr(res, key)[T]) < 4 * se, (tol, key, sim.mean(), getattr(res, key)[T], se)
    res = solve_dmft(DMFTSetup("gelu", "phase_retrieval", 4.0, 0.2, T, m=2, a=a, b=b, paths=24_000, replicas=4))
    # a per-neuron network is not the uniform one: its population risk at step 0 (by quadrature) differs
    uniform = solve_dmft(DMFTSetup("gelu", "phase_retrieval", 4.0, 0.2, T, m=2, paths=24_000, replicas=4))
    assert abs(uniform.test_loss[0] - res.test_loss[0]) > 0.05, (uniform.test_loss[0], res.test_loss[0])


def test_cli_values_lists_files_and_laws(tmp_path):
    t = NeuronValues()
    assert t.convert("0.5", None, None) == 0.5 and t.convert("1,-1, 2", None, None) == (1.0, -1.0, 2.0)
    f = tmp_path / "a.txt"
    f.write_text("1 -1\n0.5\n")
    assert t.convert(f"@{f}", None, None) == (1.0, -1.0, 0.5)
    signs = neuron_values(t.convert("pm1", None, None), 8, 0, "a")
    assert set(signs) <= {-1.0, 1.0} and len(signs) == 8 and signs == neuron_values(("pm1", 1.0), 8, 0, "a")
    draws = neuron_values(t.convert("normal:0.5", None, None), 6, 3, "b")
    assert len(set(draws)) == 6 and draws != neuron_values(("normal", 0.5), 6, 4, "b")  # from --seed
    for bad in ("normal:-1", "1,x", "@/nonexistent/file", "nan"):
        res = CliRunner().invoke(main, ["dmft", "-a", "gelu", "-l", "phase_retrieval", "-d", "4", "-T", "2",
                                        "--a", bad])
        assert res.exit_code == 2 and "Traceback" not in res.output, (bad, res.output)
    res = CliRunner().invoke(main, ["dmft", "-a", "gelu", "-l", "phase_retrieval", "-d", "4", "-T", "2", "--m", "3",
                                    "--a", "1,2"])
    assert res.exit_code == 2 and "2 values for m = 3" in res.output


def test_cli_runs_a_per_neuron_network_and_refuses_it_at_m_inf(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    res = CliRunner().invoke(main, ["dmft", "-a", "gelu", "-l", "phase_retrieval", "-d", "4", "-T", "4", "--m", "2",
                                    "--a", "1,-0.5", "--b", "normal:0.3", "--paths", "2000", "--json"])
    assert res.exit_code == 0, res.output
    setup = json.loads(res.stdout)["setup"]
    assert setup["a"] == [1.0, -0.5] and len(setup["b"]) == 2
    res = CliRunner().invoke(main, ["nn", "-a", "gelu", "--m", "inf", "--a", "pm1"])
    assert res.exit_code == 2 and "finite width" in res.output and res.output.count("\n") <= 2, res.output
    with pytest.raises(UnsupportedError, match="same a and b for every neuron"):
        from thresholds.hessian import ENGINES
        from thresholds.catalog import get_activation
        U = np.zeros((10, 2))
        ENGINES["mean_field"](get_activation("gelu"), DMFTSetup("gelu", "phase_retrieval", 2.0, 0.1, 1, m=2,
                                                                a=(1.0, -1.0)), 2.0, U, np.ones(10), np.ones(10),
                              np.full(10, 0.1))

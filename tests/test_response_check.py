import json

import numpy as np
import pytest
from click.testing import CliRunner

from validation import release_check
from validation.response_check import linear_response, main, run_one, summary, unstable_modes


def test_the_closed_form_is_the_iterated_linear_map():
    # eq. (2) against eq. (1) iterated step by step (a plain NumPy reference), with one negative, one zero and
    # positive eigenvalues; P_H picks the first coordinate of a d = 3, m = 2 layout (index coordinate * m + neuron)
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    vals = np.array([-0.3, 0.0, 0.2, 0.5, 1.0, 3.0])
    H = Q @ np.diag(vals) @ Q.T
    theta1, D0, F = (rng.standard_normal((3, 2)) for _ in range(3))
    D0[1:] = F[1:] = 0.0
    hard_rows = np.zeros((2, 6))
    hard_rows[0, 0] = hard_rows[1, 1] = 1.0
    eta, taus = 0.1, [0, 1, 7, 40]
    got = linear_response(vals, Q, theta1, D0, F, eta, taus, hard_rows)
    D, ref = D0.ravel().copy(), []
    for tau in range(41):
        if tau in taus:
            ref.append(np.sum((hard_rows @ D) ** 2) / np.sum((theta1.ravel() + D) ** 2))
        D = D + eta * (F.ravel() - H @ D)
    np.testing.assert_allclose(got["q"], ref, rtol=1e-10)
    assert got["q_force"][0] == 0.0 and got["q_start"][0] == got["q"][0]


def test_the_prediction_starts_from_the_released_run_and_follows_it_at_first():
    # the same setup, seed and release as release_check.run_one: q_lin equals the released run's q at t1 (the same
    # Theta_1 and D_0), and its growth over the next six steps (2.6 e-4 here, from 9.4e-5 at t1) is the released
    # run's within 20 per cent: at d = 100 the released component is not small (|D_0| ~ 0.1, the quadratic terms
    # of G left out of eq. (1) are ~10 per cent of the linear ones) and the first phase at step 50 still moves (its
    # drift and the change of H are frozen out); at d = 400 after 10^4 steps the two agree within 0.1 per cent over
    # 10 steps and 2.4 per cent over 100 (width report 12i)
    args = ("gelu", "phase_retrieval", 0.1, 2, 12.0, 100, 1, 50, 56)
    pred, rel = run_one(*args), release_check.run_one(*args)
    assert [s for s, _ in pred["q"]] == [s for s, _ in rel["q"]] == [50, 56]
    assert pred["q"][0][1] == pytest.approx(rel["q"][0][1], rel=1e-12)
    grown = pred["q"][1][1] - pred["q"][0][1]
    assert grown > 2 * pred["q"][0][1] and grown == pytest.approx(rel["q"][1][1] - rel["q"][0][1], rel=0.2)
    assert pred["learned"] == (pred["q"][-1][1] > 0.5) and pred["negative"] >= 0 and pred["force2"] > 0
    with pytest.raises(Exception, match="t1"):
        run_one("gelu", "phase_retrieval", 0.1, 2, 24.0, 40, 1, 24, 24)
    with pytest.raises(Exception, match="dense spectrum"):
        run_one("gelu", "phase_retrieval", 0.1, 16, 24.0, 1000, 1, 20, 24)


def _pred(delta, learned):
    q = 0.7 if learned else 0.01
    return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": 1, "delta": delta, "d": 400,
            "seed": 0, "t1": 100, "steps": 300, "scale": 1.0, "lowest": 0.01, "negative": 0,
            "q": [[100, 0.001], [300, q]], "q_start": [[100, 0.001], [300, 0.0]], "q_force": [[100, 0.0], [300, q]],
            "learned": learned, "t_half": 250 if learned else None}


def test_summary_sets_each_prediction_beside_its_release():
    released = [{**_pred(16.0, True), "q": [[100, 0.001], [300, 0.98]], "t_half": 200},
                {**_pred(12.0, True), "q": [[100, 0.001], [300, 0.9]], "t_half": 280}]
    lines = summary([_pred(12.0, False), _pred(16.0, True), _pred(20.0, True)], released)
    assert lines[2] == "| 1 | 400 | 12 | 0 | 100 | 300 | 1 | 0.01 | 0 | 0.01 | 0 | 0.01 | - | 0.900 | 280 | no |"
    assert lines[3].endswith("| 0.7 | 0 | 0.7 | 250 | 0.980 | 200 | yes |")
    assert lines[4].endswith("| - | - | - |")
    assert lines[-1] == "- learned_lin (eq. (4)) meets the release in 1 of 2 runs with a release"


def test_the_command_resumes_and_refuses_bad_input(tmp_path):
    out = tmp_path / "p.jsonl"
    args = ["--m", "1", "--delta", "12", "--dims", "30", "--t1", "10", "--steps", "30", "--out", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and "q_lin(T)" in res.output, res.output
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and res.output == "" and len(out.read_text().splitlines()) == 1
    assert json.loads(out.read_text())["scale"] == 1.0
    res = CliRunner().invoke(main, ["--summary", str(out)])
    assert res.exit_code == 0 and "meets the release in 0 of 0" in res.output
    for bad, words in ((["--t1", "30", "--steps", "30", "--out", str(out)], "must be below"),
                       (["--m", "16", "--dims", "1000", "--out", str(out)], "dense spectrum"),
                       (["--seeds", "x", "--out", str(out)], "comma-separated integers"),
                       (["--summary", str(tmp_path / "none.jsonl")], "no such file"),
                       ([], "--out or --summary")):
        res = CliRunner().invoke(main, bad)
        assert res.exit_code != 0 and words in res.output and "Traceback" not in res.output, (bad, res.output)


def test_the_early_check_sets_the_prediction_beside_gd():
    res = CliRunner().invoke(main, ["--m", "2", "--delta", "12", "--dims", "100", "--seeds", "1", "--t1", "50",
                                    "--check", "1,6"])
    assert res.exit_code == 0, res.output
    rows = [line.split("|") for line in res.output.splitlines() if line.startswith("| 1 ") or line.startswith("| 6 ")]
    assert len(rows) == 2
    for row in rows:
        assert float(row[5]) == pytest.approx(float(row[4]) / float(row[2]), rel=2e-3)
        assert 0.85 < float(row[5]) < 1.15          # within the quadratic terms and the drift (previous test)
    for bad in ("0,5", "x", ""):
        res = CliRunner().invoke(main, ["--check", bad])
        assert res.exit_code != 0 and "--check" in res.output and "Traceback" not in res.output, (bad, res.output)


def test_the_modes_say_which_neurons_and_samples_a_negative_direction_moves():
    # d = 6, m = 2, X = I (sample i is coordinate i).  Mode 0 rescales neuron 0 along its own weight (one neuron,
    # span = radial = 1); mode 1 moves both neurons equally along coordinate 5, outside their weights' plane and
    # the hard coordinate 0 (two neurons, span = radial = 0, one sample of six); a positive eigenvalue is left out
    d, m = 6, 2
    theta1 = np.zeros((d, m))
    theta1[:3, 0] = [0.0, 3.0, 4.0]
    theta1[1:4, 1] = [1.0, -1.0, 2.0]
    v0 = np.zeros((d, m))
    v0[:, 0] = theta1[:, 0] / 5.0
    v1 = np.zeros((d, m))
    v1[5, :] = 1 / np.sqrt(2)
    rest = np.linalg.qr(np.column_stack([v0.ravel(), v1.ravel(), np.eye(d * m)]))[0][:, 2:]
    vecs = np.column_stack([v0.ravel(), v1.ravel(), rest])
    hard_rows = np.zeros((m, d * m))
    hard_rows[0, 0], hard_rows[1, 1] = 1.0, 1.0                     # coordinate 0 of each neuron
    state = {"vals": np.array([-1.0, -0.5] + [1.0] * (d * m - 2)), "vecs": vecs, "theta1": theta1,
             "hard_rows": hard_rows, "X": np.eye(d)}
    radial, spread = unstable_modes(state)
    assert radial == pytest.approx({"eigenvalue": -1.0, "hard2": 0.0, "neurons": 1.0, "span": 1.0, "radial": 1.0,
                                    "samples": (0.36 + 0.64) ** 2 / (6 * (0.36**2 + 0.64**2))})
    assert spread == pytest.approx({"eigenvalue": -0.5, "hard2": 0.0, "neurons": 2.0, "span": 0.0, "radial": 0.0,
                                    "samples": 1 / 6})
    assert len(unstable_modes(state, 1)) == 1
    v1[0, 1] = v1[5, 1] = 0.5                                       # half of neuron 1's part on its hard coordinate
    state["vecs"][:, 1] = v1.ravel() / np.linalg.norm(v1)
    assert unstable_modes(state)[1]["hard2"] == pytest.approx(0.25 / 1.0)


def test_the_modes_command_prints_a_table_per_setup():
    res = CliRunner().invoke(main, ["--m", "2", "--delta", "12", "--dims", "40", "--seeds", "0", "--t1", "20",
                                    "--modes", "3"])
    assert res.exit_code == 0, res.output
    assert "m = 2, d = 40, delta 12, run 0, step 20:" in res.output and "| eigenvalue | hard2 |" in res.output
    res = CliRunner().invoke(main, ["--modes", "0"])
    assert res.exit_code != 0 and "--modes" in res.output and "Traceback" not in res.output

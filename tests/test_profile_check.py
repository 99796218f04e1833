import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from validation.profile_check import GTOL, Landscape, main, profile, stall
from validation.settled_hessian import first_phase
from validation.simulate import run_gd


def _landscape(m, delta=12.0, d=30, seed=0, t1=60):
    setup = first_phase("gelu", "phase_retrieval", 0.1, m, delta, d, seed, t1)
    run = run_gd(setup)
    X, y = run.data
    land = Landscape(np.asarray(X, float), np.asarray(y, float), "gelu", "phase_retrieval", setup.a, setup.b, m)
    return land, np.asarray(run.theta, float)


@pytest.mark.parametrize("m", [1, 2])
def test_the_push_is_minus_m_times_the_slope_of_the_relaxed_loss(m):
    # eq. (2)'s two forms: the hard part of GD's direction at the relaxed point, and the derivative of the relaxed
    # loss R(Theta(h)) along h by central differences (the envelope theorem), each side relaxed from Theta(h)
    land, theta1 = _landscape(m)
    rng = np.random.default_rng(1)
    E = rng.normal(size=(1, m))
    E /= np.linalg.norm(E)
    h, eps = 0.3, 1e-3

    def clamped(theta, hh):
        out = land.complement(theta)
        out[: land.k] += land.hard.T @ (hh * E)
        return land.relax(out)

    theta, R, G, _ = clamped(theta1, h)
    assert np.linalg.norm(land.hard_part(theta)) == pytest.approx(h, rel=1e-12)   # the clamp holds
    E = land.hard_part(theta) / h                                           # turned by the relaxation (m = 2)
    assert np.abs(land.complement(G)).max() <= m * GTOL * (1 + 1e-9)       # the complement relaxed
    tangent = land.hard_part(G) - E * float(np.sum(E * land.hard_part(G)))
    assert np.abs(tangent).max() < 1e-5                                     # and the direction on its sphere
    up, down = clamped(theta, h + eps)[1], clamped(theta, h - eps)[1]
    push = float(np.sum(E * land.hard_part(G)))
    assert push == pytest.approx(-m * (up - down) / (2 * eps), rel=1e-3, abs=1e-6)


@pytest.mark.parametrize("m", [1, 2])
def test_the_profile_follows_the_force_at_the_relaxed_start_and_the_requested_hard_fractions(m):
    land, theta1 = _landscape(m)
    qs = [1e-3, 1e-2, 0.1]
    rows = profile(land, theta1, qs)
    start = land.relax(theta1)
    force = land.hard_part(start[2])
    assert np.allclose(rows["start_direction"], force / np.linalg.norm(force))
    if m == 1:
        assert rows["direction"] == rows["start_direction"]                   # a sign: kept
    assert rows["q"][0] == 0.0 and rows["push"][0] == pytest.approx(np.linalg.norm(force)) and len(rows["push"]) == 4
    # h is set by eq. (3) from the previous point's complement, and the relaxation then changes the complement's
    # norm (by up to about 20 % at m = 2 in this small, unsettled first phase): the recorded q, eq. (3) at the relaxed
    # point, follow the requested grid in order and within that change
    assert np.all(np.diff(rows["q"]) > 0)
    assert rows["q"][1:] == pytest.approx(qs, rel=0.3)
    assert max(rows["residual"]) <= m * GTOL * (1 + 1e-9)       # L-BFGS's gtol on grad R = -G / m


def test_the_stall_is_the_first_zero_of_the_push_interpolated_in_log_q():
    qs = [0.0, 1e-3, 1e-2, 1e-1]
    assert stall(qs, [1.0, 0.5, 0.2, 0.1]) is None
    assert stall(qs, [1.0, 0.5, -0.5, 0.3]) == pytest.approx(math.sqrt(1e-3 * 1e-2))   # halfway in log q
    assert stall(qs, [-1.0, 0.5, 0.2, 0.1]) == 0.0
    assert stall(qs, [1.0, -3.0, 0.2, 0.1]) == pytest.approx(0.25e-3)                  # linear in q from q = 0


def test_the_command_resumes_sets_the_release_beside_and_refuses_bad_input(tmp_path):
    out = tmp_path / "p.jsonl"
    args = ["--m", "1", "--delta", "12", "--dims", "30", "--t1", "20", "--steps", "40", "--points", "4",
            "--out", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and "q_stall" in res.output, res.output
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and res.output == "" and len(out.read_text().splitlines()) == 1
    rec = json.loads(out.read_text())
    assert len(rec["q"]) == 5 and rec["learned"] == (rec["stall"] is None)
    released = tmp_path / "r.jsonl"
    released.write_text(json.dumps({**{k: rec[k] for k in ("activation", "link", "eta", "m", "delta", "d", "seed",
                                                          "t1", "steps", "scale")},
                                    "q": [[20, 0.0], [40, 0.9]], "learned": True, "t_half": 30}) + "\n")
    res = CliRunner().invoke(main, ["--summary", str(out), "--releases", str(released)])
    assert res.exit_code == 0 and "| 1 | 30 | 12 | 0 | 20 | 40 |" in res.output
    assert f"meets the release in {int(rec['learned'])} of 1" in res.output
    for bad, words in ((["--t1", "40", "--steps", "40", "--out", str(out)], "must be below"),
                       (["--points", "1", "--out", str(out)], "--points"),
                       (["--summary", str(tmp_path / "none.jsonl")], "no such file"),
                       ([], "--out or --summary")):
        res = CliRunner().invoke(main, bad)
        assert res.exit_code != 0 and words in res.output and "Traceback" not in res.output, (bad, res.output)


def test_the_crossings_set_the_profiles_beside_gd_on_the_same_runs():
    from thresholds.crossing import logistic_crossing
    from validation.profile_check import crossings

    def rec(delta, seed, learned, **extra):
        return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": 1, "delta": delta, "d": 400,
                "seed": seed, "t1": 100, "steps": 300, "scale": 1.0, "learned": learned, **extra}

    prof = {4.0: [False, False, True, False], 8.0: [True, False, True, False], 12.0: [True, True, True, False]}
    gd = {4.0: [False, False, False, False], 8.0: [True, True, True, False], 12.0: [True, True, True, True]}
    predicted = [rec(x, s, v) for x, vs in prof.items() for s, v in enumerate(vs)] + [rec(16.0, 0, True)]
    released = [rec(x, s, v, t_half=200 if v else None) for x, vs in gd.items() for s, v in enumerate(vs)]
    lines = crossings(predicted, released)                           # delta 16 has no release: left out
    c1, s1 = logistic_crossing([4, 8, 12], [1, 2, 3], [4, 4, 4])
    c2, s2 = logistic_crossing([4, 8, 12], [0, 3, 4], [4, 4, 4])
    assert lines[2:] == [f"| 1 | 400 | 100 | 300 | 12 | {c1:.1f} +- {s1:.1f} | {c2:.1f} +- {s2:.1f} |"]

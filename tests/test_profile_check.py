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
    assert rows["h"][0] == 0 and np.all(np.diff(rows["h"]) > 0)
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
    assert res.exit_code == 0 and "| 1 | 30 | 12 | 0 | 20 |" in res.output and "| 40 | 0.9 | yes |" in res.output
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


class _Tilted(Landscape):
    """A landscape plus eps <c, hard part>: an odd term along the hard direction, the rest untouched (G = -m grad R
    gains -m eps c in the hard rows)."""

    def __init__(self, base: Landscape, eps: float, c):
        self.__dict__.update(base.__dict__)
        self.eps, self.c = eps, np.asarray(c, float)

    def loss_and_direction(self, theta):
        R, G = super().loss_and_direction(theta)
        G = G.copy()
        G[: self.k] -= self.hard.T @ (self.m * self.eps * self.c)
        return R + self.eps * float(np.sum(self.c * self.hard_part(theta))), G


def test_the_mirror_cancels_an_odd_term_exactly_and_keeps_the_even_part():
    # eq. (7) on a data set even under the reflection of the hard coordinate (every sample beside its mirror image,
    # same label) plus a linear term eps <c, hard part>: the relaxed loss is then even plus eps c h exactly, so the
    # restoring push r must not depend on eps, and the force part f must be m eps |c| at every h
    from validation.profile_check import parts

    land, theta1 = _landscape(1)
    X = np.vstack([land.X, land.X * np.r_[-1.0, np.ones(land.X.shape[1] - 1)]])
    even = Landscape(X, np.r_[land.y, land.y], "gelu", "phase_retrieval", land.a, land.b, 1)
    assert np.allclose(even.hard_part(even.loss_and_direction(theta1)[1]), 0, atol=1e-12)   # no force of its own
    qs = [1e-3, 1e-2, 0.1, 0.3]
    split = {eps: parts(profile(_Tilted(even, eps, [[1.0]]), theta1, qs)) for eps in (0.01, 0.03)}
    r1, f1 = split[0.01]
    r3, f3 = split[0.03]
    assert r1[0] == 0 and r3[0] == 0
    assert np.abs(r1 - r3).max() < 1e-5 and np.abs(r1).max() > 1e-3                 # r: no eps, and not nothing
    assert f1 == pytest.approx(np.full(len(qs) + 1, 0.01), abs=1e-5)
    assert f3 == pytest.approx(np.full(len(qs) + 1, 0.03), abs=1e-5)


def test_the_mirror_push_is_minus_m_times_the_slope_of_its_relaxed_loss_at_m_1():
    land, theta1 = _landscape(1)
    rows = profile(land, theta1, [1e-2, 0.05])
    E = np.asarray(rows["direction"])
    theta = land.complement(land.relax(theta1)[0])
    h = math.sqrt(rows["q"][-1] / (1 - rows["q"][-1])) * np.linalg.norm(theta)       # any h will do
    eps = 1e-3

    def mirror(hh):
        out = land.complement(theta)
        out[: land.k] -= land.hard.T @ (hh * E)
        return land.relax(out, turn=False)

    at, up, down = mirror(h), mirror(h + eps), mirror(h - eps)
    assert np.allclose(land.hard_part(at[0]), -h * E)                             # not turned
    push = -float(np.sum(E * land.hard_part(at[2])))
    assert push == pytest.approx(-(up[1] - down[1]) / (2 * eps), rel=1e-3, abs=1e-6)


def test_the_even_parts_table_counts_and_crosses_eq_9_at_each_d():
    from thresholds.crossing import logistic_crossing
    from validation.profile_check import even_parts, learned_at

    def rec(delta, r, f, f0=0.02):
        # p = r + f, p_- = r - f (eq. (7)); r(0) = 0, f(0) = f0
        return {"m": 1, "d": 400, "t1": 100, "delta": delta, "push": [f0] + [a + b for a, b in zip(r, f)],
                "push_mirror": [-f0] + [a - b for a, b in zip(r, f)],
                "q": [0.0] + [10.0 ** (k - 3) for k in range(len(r))]}

    f = [0.15, 0.15, 0.15]
    runs = [rec(4.0, [-0.3, -0.2, 0.1], f), rec(4.0, [-0.1, 0.1, 0.2], f),    # eq. (9): learned down to d' = 2d
            rec(8.0, [0.1, -0.1, 0.2], f), rec(8.0, [0.1, 0.1, 0.2], f),
            rec(12.0, [0.1, 0.2, 0.3], f), {"m": 1, "d": 400, "t1": 100, "delta": 12.0, "push": [0.1]}]
    r = np.array([0, -0.1, 0.1, 0.2])
    fa = np.array([0.02] + f)
    assert learned_at(r, fa, 1) and learned_at(r, fa, 2) and not learned_at(r, fa, 4)
    assert not learned_at(r, fa, None) and learned_at(r + 0.2, fa, None)
    lines = even_parts(runs)                          # the record without a mirror is left out
    assert lines[2] == "| 1 | 400 | 100 | 4 | 2 | 0.02 | -0.2 | 2 | -0.2 (0.1) | 1 | 0 |"
    assert lines[3] == "| 1 | 400 | 100 | 8 | 2 | 0.02 | 0 | 0 | 0.1 (0) | 2 | 1 |"
    assert lines[4] == "| 1 | 400 | 100 | 12 | 1 | 0.02 | 0.1 | 0 | 0.1 | 1 | 1 |"
    counts = {1: [1, 2, 1], 2: [1, 2, 1], 4: [0, 1, 1], 16: [0, 1, 1], None: [0, 1, 1]}
    text = []
    for ratio in (1, 2, 4, 16, None):
        c, se = logistic_crossing([4, 8, 12], counts[ratio], [2, 2, 1])
        text.append("-" if c is None else f"{c:.1f} +- {se:.1f}")
    c, se = logistic_crossing([4, 8, 12], [0, 2, 1], [2, 2, 1])          # r > 0 at the first q: eq. (10)
    text.append(f"{c:.1f} +- {se:.1f}")
    assert lines[-1] == "| 1 | 400 | 100 | 5 | " + " | ".join(text) + " |"
    assert even_parts([{"push": [0.1]}]) == ["(no profile with a mirror: eqs. (6)-(9) need records made with it)"]


def test_the_restoring_push_starts_as_minus_the_schur_complement_of_the_dense_hessian():
    # eq. (7) at small h: r = -m Phi_even'(h) = -S h + O(h^3), S = H_EE - H_EC H_CC^-1 H_CE the Schur complement of
    # m x the Hessian of R (validation.simulate's dense_hessian) at the relaxed Theta(0) in the hard coordinate, at
    # m = 1 (E = +- e_0): the profile's curvature is the settled Hessian's hard verdict
    from validation.profile_check import parts
    from validation.simulate import dense_hessian, hessian_weights

    land, theta1 = _landscape(1)
    theta0 = land.relax(theta1)[0]
    H = dense_hessian(land.X, hessian_weights(land.y, land.X @ theta0, "gelu", a=land.a, b=land.b))
    S = H[0, 0] - H[0, 1:] @ np.linalg.solve(H[1:, 1:], H[1:, 0])
    assert np.linalg.eigvalsh(H[1:, 1:]).min() > 0                               # a minimum over the complement
    rows = profile(land, theta1, [1e-6, 1e-5, 1e-4])
    r, _ = parts(rows)
    h = np.asarray(rows["h"][1:])
    slopes = -r[1:] / h
    assert abs(S) > 0.01 and slopes[0] == pytest.approx(S, rel=1e-3)
    # r is odd in h (the even part's derivative), so the slope's error is O(h^2): from q = 1e-5 to 1e-4 it grows
    # tenfold, as h^2, where an h^2 term in r (an odd term of the loss left over) would make it grow 3.2-fold, as h
    growth = (slopes[2] - S) / (slopes[1] - S) / (h[2] / h[1]) ** 2
    assert 0.8 < growth < 1.25


def test_the_plot_sets_eq_9_beside_gd_and_the_d_inf_law(tmp_path, monkeypatch):
    import validation.profile_check as pc
    from thresholds.crossing import logistic_crossing
    from thresholds.nn import Crossing

    def prof(delta, r, f):
        return {"m": 1, "d": 400, "t1": 100, "delta": delta, "push": [0.02] + [a + b for a, b in zip(r, f)],
                "push_mirror": [-0.02] + [a - b for a, b in zip(r, f)],
                "q": [0.0] + [10.0 ** (k - 3) for k in range(len(r))]}

    def rel(m, d, delta, seed, learned, t1=100):
        return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": m, "d": d, "delta": delta,
                "seed": seed, "t1": t1, "steps": 300, "scale": 1.0, "learned": learned}

    predicted = [prof(4.0, [-0.1, -0.2], [0.15, 0.15]), prof(8.0, [0.1, -0.05], [0.1, 0.1]),
                 prof(12.0, [0.1, 0.2], [0.0, 0.0])]
    released = ([rel(1, 800, x, s, v) for x, vs in {4.0: [0, 0], 8.0: [1, 0], 12.0: [1, 1]}.items()
                 for s, v in enumerate(vs)] + [rel(1, 800, 4.0, 9, True, t1=50)])     # another t1: left out
    seen = {}
    monkeypatch.setattr("thresholds.plots.scaled_profile_figure",
                        lambda path, profiles, measured, limits, title="", law="": seen.update(
                            profiles=profiles, measured=measured, limits=limits, law=law))
    monkeypatch.setattr(pc, "thresholds_by_step",
                        lambda lines, D: [(100, Crossing(9.0, 8.0, 10.0, True)), (200, Crossing(*lines[0], True))])
    pc.figure(tmp_path / "f.png", predicted, released, {1: [(11.0, 10.0, 12.0)]}, 400)
    scaled = pc.scaled_crossings(predicted)[(1, 400, 100)]
    assert seen["profiles"] == {(1, 400): [(d, c, se) for d, (_, c, se) in zip((400, 800, 1600, 6400, None), scaled)]}
    assert seen["measured"] == {1: [(800, *logistic_crossing([4, 8, 12], [0, 1, 2], [2, 2, 2]))]}
    assert seen["limits"] == {1: (11.0, 10.0, 12.0)}                   # the last checkpoint
    assert seen["law"] == "eq. (9)"
    monkeypatch.undo()
    pc.figure(tmp_path / "f.png", predicted, released, {}, 400)        # rendered for real
    assert (tmp_path / "f.png").stat().st_size > 10000
    res = CliRunner().invoke(main, ["--plot", str(tmp_path / "g.png"), "--out", str(tmp_path / "p.jsonl")])
    assert res.exit_code != 0 and "--summary" in res.output and "Traceback" not in res.output


def test_the_quasi_static_time_integrates_one_over_the_push_along_h():
    from validation.profile_check import quasi_static_time
    # a profile with the complement's norm 1 at every point: h = sqrt(q / (1 - q)); q = 1/2 at h = 1
    q = np.array([0.0, 1e-4, 1e-3, 1e-2, 0.1, 0.3, 0.5, 0.6])
    h = np.sqrt(q / (1 - q))
    flat = {"q": q.tolist(), "h": h.tolist(), "push": [0.02] * len(q)}
    h0 = math.sqrt(1e-5 / (1 - 1e-5))
    assert quasi_static_time(flat, 1e-5, 0.1) == pytest.approx((1 - h0) / (0.1 * 0.02), rel=1e-9)
    # a push linear in h between the points (rising, then falling): against a plain midpoint rule
    push = np.array([0.03, 0.01, 0.02, 0.05, 0.2, 0.1, 0.04, 0.03])
    rec = {"q": q.tolist(), "h": h.tolist(), "push": push.tolist()}
    grid = np.linspace(h0, 1.0, 400001)
    mid = (grid[1:] + grid[:-1]) / 2
    reference = float(np.sum(np.diff(grid) / (0.1 * np.interp(mid, h, push))))
    assert quasi_static_time(rec, 1e-5, 0.1) == pytest.approx(reference, rel=1e-6)
    # a zero of the push on the way: no escape; one beyond q = 1/2 does not count; a grid short of 1/2: none
    assert quasi_static_time({**rec, "push": [*push[:4], -1e-3, *push[5:]]}, 1e-5, 0.1) == math.inf
    assert quasi_static_time({**rec, "push": [*push[:7], -1.0]}, 1e-5, 0.1) == pytest.approx(reference, rel=1e-6)
    assert quasi_static_time({k: v[:6] for k, v in rec.items()}, 1e-5, 0.1) == math.inf
    assert quasi_static_time(rec, 0.7, 0.1) == 0.0

"""validation.conventions_width: the settings' horizons, the grid's widening (eq. (2)), eq. (1) and the table."""

import math

import pytest

from validation import conventions_width as cw
from validation import records


def test_settings_keep_the_horizon_in_time():
    for s in cw.settings():
        for d in s.dims:
            p = s.problem(d)
            eta0, time_ = cw.BASE[s.activation]
            assert math.isclose(p.eta, eta0 * s.eta_factor)
            assert p.steps == round(time_ / p.eta)          # eta T fixed: 600 steps at the base step
            assert p.m == s.m and p.rho0 == s.rho0 and p.link == "phase_retrieval"
    halved = next(s for s in cw.settings() if s.label == "eta / 2" and s.activation == "quad")
    assert halved.problem(200).steps == 1200
    labels = [(s.activation, s.m, s.label) for s in cw.settings()]
    assert len(labels) == len(set(labels))
    assert ("quad", 2, "eta x 2") not in labels            # quad diverges at twice its step


def test_widen_adds_deltas_only_where_the_rates_do_not_bracket():
    grid = [2.0, 3.0, 4.0]
    assert cw.widen(grid, [0.1, 0.5, 0.9]) == []
    assert cw.widen(grid, [0.1, 0.4, 0.6]) == [5.0, 6.0]
    assert cw.widen(grid, [0.4, 0.6, 0.9]) == [1.3, 1.6]
    assert cw.widen(grid, [0.5, 0.5, 0.5]) == [1.3, 1.6, 5.0, 6.0]
    assert cw.widen([0.5, 64.0], [0.5, 0.5]) == []        # the range's ends


def test_refine_splits_the_gap_only_where_the_logistic_fit_collapses():
    grid = [2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0]
    assert cw.refine([2.5, 3.0, 3.5, 4.0], [0, 0, 31, 40], 40) == [3.125, 3.25, 3.375]    # one rate inside (0, 1)
    assert cw.refine(grid, [0, 1, 18, 40, 40, 40, 40, 40], 40) == []   # two: resolved (thresholds.crossing eq. (6))
    assert cw.refine(grid, [0, 4, 12, 25, 33, 38, 40, 40], 40) == []                       # a resolved curve
    assert cw.refine([3.0, 3.125, 3.25, 3.375, 3.5], [18, 27, 35, 39, 40], 40) == []       # refined: resolved
    assert cw.refine(grid, [0] * 8, 40) == []                                            # nothing brackets 1/2


def test_lands_is_eq_1():
    row = {"crossing": 6.85, "se": 0.2}
    assert cw.lands(row, 6.0)                              # 0.85 <= 0.5 + 0.4
    assert not cw.lands({"crossing": 7.0, "se": 0.2}, 6.0)
    assert cw.lands({"crossing": 5.1, "se": 0.15}, 6.0) is False   # 0.9 > 0.8
    assert not cw.lands({"crossing": None, "se": None}, 6.0)
    assert not cw.lands(None, 6.0)
    wild = {"crossing": 7.53, "se": 26.84}                 # a blown-up paired s.e. would land anywhere
    assert not cw.resolved(wild) and not cw.lands(wild, 6.0)
    assert cw.z_value({"crossing": 7.4, "se": 0.2}, wild) is None
    assert cw.cell(wild) == "7.53 +- 26.84 (unresolved)"


def test_report_rows_z_and_the_settings_that_land(tmp_path):
    path, out = tmp_path / "r.jsonl", tmp_path / "r.md"

    def add(act, label, route, c, se):
        records.append(path, {"activation": act, "m": 2, "setting": label, "d": 200, "route": route,
                              "crossing": c, "se": se})
    add("gelu", "default", "gd", 6.2, 0.2)
    add("gelu", "default", "forced", 5.6, 0.4)
    add("quad", "default", "gd", 3.3, 0.1)
    add("quad", "default", "forced", 3.5, 0.1)
    add("gelu", "eta / 2", "gd", 6.3, 0.2)               # 0.1 from the default
    add("gelu", "eta / 2", "forced", 5.9, 0.3)
    add("quad", "rho0 = 2", "gd", None, None)
    add("quad", "rho0 = 2, eta / 4", "gd", 3.5, 0.1)
    add("quad", "rho0 = 2, eta / 4", "forced", 3.4, 0.1)
    add("gelu", "rho0 = 2", "gd", 6.4, 0.2)
    add("gelu", "rho0 = 2", "forced", 6.1, 0.2)
    add("gelu", "rho0 = 0.5", "gd", 8.0, 0.2)
    add("quad", "rho0 = 0.5", "gd", 3.6, 0.1)
    add("quad", "rho0 = 0.5", "forced", None, None)
    text = cw.report(path, out, widths=())   # default_meetings: its own test
    assert out.read_text() == text
    line = next(t for t in text.splitlines() if t.startswith("| gelu | 2 | default |"))
    z = (5.6 - 6.2) / math.hypot(0.4, 0.2)
    assert f"{z:+.1f}" in line and "6.20 +- 0.20" in line and "| +0.20 / -0.40 | yes / yes |" in line
    assert "| quad | 2 | rho0 = 0.5 | 0.05, 600 | 200 | 3.60 +- 0.10 | none | - | +0.00 / - | yes / no |" in text
    assert "| gelu | 2 | rho0 = 0.5 | 0.1, 600 | 200 | 8.00 +- 0.20 | (not run) | - | +2.00 / - | no / no |" in text
    zs = [(5.6 - 6.2) / math.hypot(0.4, 0.2), (3.5 - 3.3) / math.hypot(0.1, 0.1), (6.1 - 6.4) / math.hypot(0.2, 0.2),
          (5.9 - 6.3) / math.hypot(0.3, 0.2), (3.4 - 3.5) / math.hypot(0.1, 0.1)]
    assert f"GD against the prediction: 5 rows, 5 with |z| <= 2, 1 with z > 0, mean z {sum(zs) / 5:+.2f}." in text
    assert "Settings with both activations run: 3; where GD and the prediction both land for both " \
           "activations: m = 2, default, d = 200." in text    # rho0 = 2: quad diverges; eta / 2: gelu alone
    assert "moves GD's crossing by at most 0.10 (each scaled step" in text   # quad rho0 = 2: no base crossing
    assert ("in parentheses: m = 2, rho0 = 1, d = 200 (gelu eta 0.1/0.05, quad eta 0.05); "
            "m = 2, rho0 = 2, d = 200 (gelu eta 0.1, quad eta 0.0125).") in text


def test_a_diverging_setting_is_recorded_and_its_prediction_skipped(tmp_path, monkeypatch):
    from thresholds.errors import DivergenceError
    path = tmp_path / "r.jsonl"
    calls = []

    def gd(s, d, **kw):
        if s.label == "rho0 = 2":
            raise DivergenceError("GD diverged at step 4")
        return {"crossing": 3.0, "se": 0.1}

    monkeypatch.setattr(cw, "run_gd", gd)
    monkeypatch.setattr(cw, "run_forced", lambda s, d, start, **kw: calls.append((s.label, start)) or
                        {"crossing": 3.1, "se": 0.1})
    monkeypatch.setattr(cw, "settings", lambda: [cw.Setting("quad", 2, "default"),
                                                 cw.Setting("quad", 2, "rho0 = 2", rho0=2.0)])
    cw.run(dims=(200,), path=path, log=lambda text: None)
    rows = cw.done_rows(path)
    assert calls == [("default", 3.0)]                     # the anchor: GD's crossing to 2 digits
    bad = rows[("quad", 2, "rho0 = 2", 200, "gd")]
    assert bad["crossing"] is None and bad["note"].startswith("diverges")
    assert ("quad", 2, "rho0 = 2", 200, "forced") not in rows
    assert cw.cell(bad) == "diverges"
    cw.run(dims=(200,), path=path, log=lambda text: None)  # resumes: nothing is run again
    assert calls == [("default", 3.0)] and len(rows) == 3


def test_route_and_width_filters_run_gd_first_then_the_predictions(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    calls = []
    monkeypatch.setattr(cw, "run_gd", lambda s, d, **kw: calls.append(("gd", s.m, d)) or {"crossing": 3.0, "se": 0.1})
    monkeypatch.setattr(cw, "run_forced", lambda s, d, start, **kw: calls.append(("forced", s.m, d)) or
                        {"crossing": 3.1, "se": 0.1})
    monkeypatch.setattr(cw, "settings", lambda: [cw.Setting("quad", 2, "default"),
                                                 cw.Setting("quad", 8, "default", dims=(200, 800))])
    cw.run(path=path, log=lambda text: None, widths=(8,), routes=("forced",))   # no GD row yet: nothing to anchor
    assert calls == []
    cw.run(path=path, log=lambda text: None, widths=(8,), routes=("gd",))
    assert calls == [("gd", 8, 200), ("gd", 8, 800)]
    cw.run(path=path, log=lambda text: None, widths=(8,))
    assert calls[2:] == [("forced", 8, 200), ("forced", 8, 800)]
    assert sorted(cw.done_rows(path)) == [("quad", 8, "default", d, r) for d in (200, 800) for r in ("forced", "gd")]
    assert cw._widths("2,8") == (2, 8)


def test_setting_and_d_filters_keep_only_those_rows(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    calls = []
    monkeypatch.setattr(cw, "run_gd", lambda s, d, **kw: calls.append(("gd", s.label, d)) or {"crossing": 3.0,
                                                                                              "se": 0.1})
    monkeypatch.setattr(cw, "run_forced", lambda s, d, start, **kw: calls.append(("forced", s.label, d)) or
                        {"crossing": 3.1, "se": 0.1})
    monkeypatch.setattr(cw, "settings", lambda: [cw.Setting("quad", 8, "default", dims=(200,)),
                                                 cw.Setting("quad", 8, "rho0 = 2", rho0=2.0, dims=(200, 400))])
    cw.run(path=path, log=lambda text: None, labels=("rho0 = 2",), dims=(400, 800))   # 800: not one of its d
    assert calls == [("gd", "rho0 = 2", 400), ("forced", "rho0 = 2", 400)]
    assert cw._labels("rho0 = 2, default") == ("rho0 = 2", "default") and cw._dims_arg("200,400") == (200, 400)


def test_bad_filters_are_one_line_errors(capsys):
    for argv in (["--setting", "rho0 = 3"], ["--d", "two"], ["--d", "0"], ["--m", "3"]):
        with pytest.raises(SystemExit) as exc:
            cw.main(argv + ["--report-only"])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("usage:") is False and "error:" in err[-1]


def test_the_m_8_settings_run_rho0_at_the_base_step_at_two_d():
    rows = [(s.activation, s.label, s.dims) for s in cw.settings() if s.m == 8]
    assert sorted({r[1] for r in rows}) == ["default", "rho0 = 0.5", "rho0 = 2"]
    dims = {"default": (200,), "rho0 = 0.5": (200, 400, 800), "rho0 = 2": (200, 400)}
    assert all(r[2] == dims[r[1]] for r in rows) and len(rows) == 6
    assert cw.grid("gelu", 8, 400) == [4.0, 5.0, 6.0, 7.0, 8.0] and cw.grid("gelu", 8, 200) == cw.GRID["gelu"]


def test_plot_draws_the_rows_that_were_run(tmp_path, monkeypatch):
    path, png = tmp_path / "r.jsonl", tmp_path / "r.png"
    records.append(path, {"activation": "gelu", "m": 2, "setting": "default", "d": 200, "route": "gd",
                          "crossing": 6.2, "se": 0.2})
    records.append(path, {"activation": "quad", "m": 2, "setting": "default", "d": 400, "route": "forced",
                          "crossing": None, "se": None})
    seen = {}
    monkeypatch.setattr("thresholds.plots.settings_figure", lambda p, panels, title="": seen.update(panels=panels))
    cw.plot(png, path)
    assert seen["panels"] == [("gelu", 6.0, 0.5, [("m 2, default, d 200", (6.2, 0.2), None)]),
                              ("quad", 3.6, 0.5, [("m 2, default, d 400", None, None)])]
    monkeypatch.undo()
    cw.plot(png, path)
    assert png.stat().st_size > 1000


def test_step_shifts_compare_at_the_same_rho0(monkeypatch):
    monkeypatch.setattr(cw, "settings", lambda: [cw.Setting("quad", 4, "default", dims=(400,)),
                                                 cw.Setting("quad", 4, "rho0 = 2", rho0=2.0, dims=(400,)),
                                                 cw.Setting("quad", 4, "rho0 = 2, eta / 4", rho0=2.0, eta_factor=0.25,
                                                            dims=(400,))])
    def row(c):
        return {"crossing": c, "se": 0.1}
    done = {("quad", 4, "default", 400, "gd"): row(3.0), ("quad", 4, "rho0 = 2", 400, "gd"): row(3.35),
            ("quad", 4, "rho0 = 2, eta / 4", 400, "gd"): row(3.25)}
    assert [round(x, 6) for x in cw.step_shifts(done)] == [0.1]   # against rho0 = 2's base step, not the default
    done[("quad", 4, "rho0 = 2", 400, "gd")] = row(None)
    assert cw.step_shifts(done) == []


def test_meeting_d_is_eq_3_on_a_line_in_log_d():
    import numpy as np
    line = [(d, 5.0 + math.log2(d / 200), 0.1) for d in (200, 400, 800)]   # c = 5 + log2(d / 200)
    meet = cw.meeting_d(line, 6.5)                     # between 400 and 800: d* = 200 * 2^1.5
    assert math.isclose(meet.d, 200 * 2**1.5) and not meet.extrapolated
    assert meet.low < meet.d < meet.high
    out = cw.meeting_d(line, 4.0)                      # below every crossing: from the first pair, flagged
    assert math.isclose(out.d, 100.0) and out.extrapolated
    assert math.isclose(cw.meeting_d(line, 8.0).d, 1600.0) and cw.meeting_d(line, 8.0).extrapolated
    falling = [(200, 6.0, 0.1), (400, 5.0, 0.1), (800, 4.5, 0.1)]   # a crossing that falls with d
    assert math.isclose(cw.meeting_d(falling, 6.5).d, 200 / math.sqrt(2))   # from the first pair
    assert math.isclose(cw.meeting_d(falling, 4.0).d, 1600.0)               # from the last: 400 * 2^2
    assert cw.meeting_d(line[:1], 6.0) is None and cw.meeting_d([(200, 5, 0.1), (400, 5, 0.1)], 6.0) is None
    # the s.e. of eq. (3) against a plain Monte Carlo of the two crossings (small s.e.: the delta method holds)
    rng = np.random.default_rng(0)
    c1, c2, s1, s2, figure = 5.6, 6.3, 0.03, 0.04, 6.0
    a = c1 + s1 * rng.standard_normal(200000)
    b = c2 + s2 * rng.standard_normal(200000)
    draws = np.log2(200) + (figure - a) / (b - a)
    meet = cw.meeting_d([(200, c1, s1), (400, c2, s2)], figure)
    assert math.isclose(math.log2(meet.high / meet.d), np.std(draws), rel_tol=0.03)


def test_meeting_lines_use_a_scaled_step_where_the_base_one_diverges(tmp_path):
    path = tmp_path / "r.jsonl"

    def add(act, label, d, c, se):
        records.append(path, {"activation": act, "m": 2, "setting": label, "d": d, "route": "gd",
                              "crossing": c, "se": se})
    add("gelu", "rho0 = 2", 200, 5.5, 0.2)
    add("gelu", "rho0 = 2", 400, 6.5, 0.2)
    add("quad", "rho0 = 2", 200, None, None)               # diverges at the base step
    add("quad", "rho0 = 2, eta / 4", 200, 3.4, 0.05)
    add("quad", "rho0 = 2, eta / 4", 400, 3.8, 0.05)
    lines = cw.meeting_lines(cw.done_rows(path))
    (row,) = [ln for ln in lines if ln.startswith("| 2 | 2 |")]
    assert row.startswith("| 2 | 2 | 283 [") and "(eta 0.0125)" in row   # 200 * 2^0.5; 200 * 2^0.5 for quad too
    assert row.count("283 [") == 2 and "extrapolated" not in row


def test_default_meetings_give_each_routes_d_star_and_the_ratio_of_eq_4(monkeypatch):
    crossings = {   # (act, m) -> (forced, gd): d -> (crossing, s.e.)
        ("gelu", 8): ({200: (5.3, 0.1), 800: (6.7, 0.1)}, {200: (5.0, 0.1), 800: (7.0, 0.1)}),
        ("quad", 8): ({200: (3.0, 0.05), 800: (3.5, 0.05)}, {200: (3.0, 0.05), 800: (3.4, 0.05)}),
    }
    monkeypatch.setattr(cw, "setup_crossings", lambda act, eta, m, dirs: crossings[(act, m)])
    lines = cw.default_meetings(widths=(8,))
    (row,) = [t for t in lines if t.startswith("| 8 |")]
    g = cw.meeting_d([(200, 5.0, 0.1), (800, 7.0, 0.1)], 6.0)          # inside: d = 400
    q = cw.meeting_d([(200, 3.0, 0.05), (800, 3.4, 0.05)], 3.6)        # past 800: extrapolated
    assert math.isclose(g.d, 400.0) and not g.extrapolated and q.extrapolated
    err = math.hypot(math.log2(q.high / q.d), math.log2(g.high / g.d))
    r = q.d / g.d
    assert f"| {r:.2g} [{r * 2 ** -err:.2g}, {r * 2 ** err:.2g}] (an extrapolated d*) |" in row
    gf = cw.meeting_d([(200, 5.3, 0.1), (800, 6.7, 0.1)], 6.0)
    qf = cw.meeting_d([(200, 3.0, 0.05), (800, 3.5, 0.05)], 3.6)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-1].startswith(f"{qf.d / gf.d:.2g} [") and cells[-2].startswith(f"{r:.2g} [")   # forced, GD
    assert row.startswith("| 8 | 400 [") and "(extrapolated from d = 200-800)" in row
    assert cw.default_meetings(widths=(3,))[-1] == "| 3 | - | - | - | - | - | - |"   # no such width in finite_d_width
    assert cw.default_meetings(widths=()) == []

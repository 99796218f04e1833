"""validation.forced_width: forced crossings read from several record directories, the last holding a d winning."""

import json
import math

from thresholds.problem import Problem
from validation.forced_trials import records_path
from validation.forced_width import setup_crossings


def _write(directory, d, successes):
    """Records of 20 trials at delta 2, 3, 4 whose success counts are ``successes``."""
    path = records_path(Problem("quad", "phase_retrieval", eta=0.05, steps=600, m=2), directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for delta, wins in zip((2.0, 3.0, 4.0), successes):
            for k in range(20):
                fh.write(json.dumps({"delta": delta, "d": d, "trial": k, "success": k < wins}) + "\n")


def test_the_last_directory_holding_a_dimension_gives_its_crossing(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    _write(first, 200, (2, 10, 18))     # crossing near delta 3
    _write(second, 200, (6, 16, 20))    # crossing near delta 2.4
    forced_first, _ = setup_crossings("quad", 0.05, 2, first)
    both, _ = setup_crossings("quad", 0.05, 2, [first, second])
    assert 2.8 < forced_first[200][0] < 3.2
    assert 2.2 < both[200][0] < 2.7
    assert setup_crossings("quad", 0.05, 2, [second, first])[0][200] == forced_first[200]


def test_delta_nn_files_are_drawn_at_their_width_and_other_setups_refused(tmp_path):
    import pytest
    from validation.forced_width import delta_nn_limits

    def nn_json(name, **setup):
        s = {"activation": "quad", "link": "phase_retrieval", "eta": 0.05, "steps": 600, "m": 2, **setup}
        path = tmp_path / name
        path.write_text(json.dumps({"setup": s, "found": True, "delta_nn": 8.0, "delta_nn_low": 6.2,
                                    "delta_nn_high": 9.8}))
        return path
    assert delta_nn_limits([nn_json("a.json")]) == {"quad, eta 0.05": [(2, 8.0, 6.2, 9.8)]}
    path = nn_json("bound.json", m=8)   # a negative outlier already at the search's lower end: a bound, low nan
    path.write_text(json.dumps({**json.loads(path.read_text()), "below_range": True, "delta_nn": 1.95,
                                "delta_nn_low": 0.0, "delta_nn_high": 1.95}))
    ((m, v, low, high),) = delta_nn_limits([path])["quad, eta 0.05"]
    assert (m, v, high) == (8, 1.95, 1.95) and math.isnan(low)
    with pytest.raises(SystemExit, match="600 steps"):
        delta_nn_limits([nn_json("b.json", steps=400)])


def test_an_open_delta_nn_interval_is_an_arrow(monkeypatch, tmp_path):
    # a delta_NN whose interval has no upper end ("inf" in the nn --json record) is drawn with a finite lower bar and an
    # arrow up from its value, not an infinite bar
    import numpy as np
    from matplotlib.text import Annotation
    from thresholds import plots
    captured = {}
    monkeypatch.setattr(plots, "save_figure", lambda plt, fig, path: captured.setdefault("fig", fig))
    limits = {"quad, eta 0.05": [(1, 11.0, 10.0, 12.0), (8, 2.15, 2.05, float("inf")), (16, 1.95, float("nan"), 1.95)]}
    plots.crossing_vs_m_figure(tmp_path / "f.png", [("quad, eta 0.05", [(1, 5.3, 0.1)], [(1, 5.0, 0.1)])],
                               limits=limits)
    ax = captured["fig"].axes[0]
    arrows = [c for c in ax.get_children() if isinstance(c, Annotation)]
    up = [a for a in arrows if a.xy[0] == 8 * 0.97]
    down = [a for a in arrows if a.xy[0] == 16 * 0.97]   # the bound (low nan): an arrow down, inside the axes
    assert len(arrows) == 2 and up[0].xy[1] > 2.15 and down[0].xy[1] < 1.95
    assert ax.get_ylim()[0] <= down[0].xy[1]
    segments = [seg for coll in ax.collections for seg in coll.get_segments()]
    assert segments and all(np.all(np.isfinite(seg)) for seg in segments)


def test_crossings_with_limits_figure_reads_reports_and_nn_records(monkeypatch, tmp_path):
    # validation.width_limits_plot: GD crossings from the reports' crossing table, one dashed delta_NN per series;
    # an nn record whose interval is open above ("inf") gets no band and says so
    from click.testing import CliRunner
    from thresholds import plots
    from validation.width_limits_plot import main
    report = tmp_path / "report.md"
    report.write_text("x\n\n| d | crossing delta (p = 1/2) | s.e. |\n|---|---|---|\n| 800 | 7.601 | 0.193 |\n"
                      "| 200 | 6.170 | 0.190 |\n\nmore\n")
    nn = tmp_path / "nn.json"
    nn.write_text(json.dumps({"delta_nn": 2.15, "delta_nn_low": 2.05, "delta_nn_high": "inf", "converged": True,
                              "setup": {"steps": 600}}))
    captured = {}
    monkeypatch.setattr(plots, "save_figure", lambda plt, fig, path: captured.setdefault("fig", fig))
    res = CliRunner().invoke(main, ["--series", f"m = 2={nn}:{report}", "--out", str(tmp_path / "f.png")])
    assert res.exit_code == 0, res.output
    assert "d = 200: 6.17 +- 0.19" in res.output and res.output.index("d = 200") < res.output.index("d = 800")
    ax = captured["fig"].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "m = 2: delta_NN = 2.15 (T = 600, t-curve converged, interval open above)" in labels
    assert [tuple(line.get_ydata()) for line in ax.get_lines() if line.get_linestyle() == "--"] == [(2.15, 2.15)]
    assert not [p for p in ax.patches if p.get_height() > 0]   # no band for the open interval


def test_width_limits_plot_and_escape_horizon_reject_bad_input_in_one_line(tmp_path):
    from click.testing import CliRunner
    from validation.escape_horizon import main as horizon_main
    from validation.width_limits_plot import main as plot_main
    report = tmp_path / "report.md"
    report.write_text("| d | crossing delta (p = 1/2) | s.e. |\n|---|---|---|\n| 200 | 6.170 | 0.190 |\n")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"delta_nn": 2.0}))
    (tmp_path / "bad.jsonl").write_text('{"delta": 2.0}\n{broken\n')
    out = str(tmp_path / "f.png")
    runs = [(plot_main, ["--series", f"m = 2={tmp_path / 'missing.json'}:{report}", "--out", out], "No such file"),
            (plot_main, ["--series", f"m = 2={tmp_path / 'bad.json'}:{report}", "--out", out], "Expecting"),
            (plot_main, ["--series", f"m = 2={tmp_path / 'other.json'}:{report}", "--out", out], "no delta_nn_low"),
            (plot_main, ["--series", "no-separator", "--out", out], "expected LABEL"),
            (horizon_main, ["-a", "quad", "--eta", "0.05", "--delta", "3,x", "--out", out], "positive numbers"),
            (horizon_main, ["-a", "quad", "--eta", "0.05", "--delta", "3", "--dims", "0", "--out", out],
             "positive numbers"),
            (horizon_main, ["-a", "quad", "--eta", "0.05", "--delta", "3", "--out", str(tmp_path / "bad.jsonl")],
             "line 2: not JSON")]
    for main, args, message in runs:
        res = CliRunner().invoke(main, args)
        assert res.exit_code != 0 and (res.exception is None or isinstance(res.exception, SystemExit)), args
        assert message in res.output and "Traceback" not in res.output, (args, res.output)


def test_reference_table_sets_delta_nn_beside_the_crossings(tmp_path):
    # the d = inf column and the widths whose interval holds the published figure (quad 3.6, gelu 6.0); an open
    # interval ("inf") holds every figure above its low end
    from validation.forced_width import reference_table
    rec = lambda v, lo, hi, conv=True: {"delta_nn": v, "delta_nn_low": lo, "delta_nn_high": hi,  # noqa: E731
                                        "converged": conv}
    nn = {("quad", 0.05, 4): rec(4.44, 3.48, 5.40), ("quad", 0.05, 8): rec(2.15, 2.05, "inf"),
          ("quad", 0.05, 1): rec(11.1, 10.9, 11.3), ("gelu", 0.1, 2): rec(28.7, 27.0, 30.5, conv=False),
          ("quad", 0.05, 16): {**rec(1.95, 0.0, 1.95), "below_range": True}}
    lines = reference_table((200,), out=tmp_path, nn=nn)
    assert lines[0].endswith("| published figure | delta_NN, d = inf (600 steps) |")
    assert len({line.count("|") for line in lines[:12] if line.startswith("|")}) == 1
    row = next(line for line in lines if line.startswith("| gelu, 0.1 | 2 |"))
    assert row.endswith("| 6 | 28.70 [27.00, 30.50], t-curve not converged |")
    assert next(line for line in lines if line.startswith("| gelu, 0.1 | 4 |")).endswith("| 6 | - |")
    assert next(line for line in lines if line.startswith("| quad, 0.05 | 16 |")).endswith(
        "| 3.6 | <= 1.95 (I_T > 0 at the lower end of the search) |")   # a bound below the figure does not hold it
    assert lines[-1] == ("Widths whose d = inf delta_NN interval holds the figure: gelu: none (of m = 2); quad: "
                         "m = 4, m = 8 (of m = 1, 4, 8, 16); both activations at one width: none.")


def test_indicator_brackets_are_read_per_width_and_bad_specs_refused(tmp_path):
    # --brackets: validation.indicator_points records -> (m, low, high) per series, the bracket taken on the settled
    # replicas across every file of a spec; a record at another horizon or without a sign change is refused
    import pytest
    from validation.forced_width import indicator_brackets

    def rows(name, pairs, steps=600, orbit=None):
        path = tmp_path / name
        path.write_text("".join(json.dumps({"delta": d, "steps": [steps], "indicator": [v],
                                            "indicator_replicas": [[v, v]], "period_two": orbit}) + "\n"
                                for d, v in pairs))
        return str(path)
    first = rows("a.jsonl", [(1.7, 0.001), (2.0, 0.002)])
    second = rows("b.jsonl", [(1.5, -0.001), (1.6, 0.0003)])
    assert indicator_brackets([f"quad:0.05:16={first},{second}"]) == {"quad, eta 0.05": [(16, 1.5, 1.6)]}
    with pytest.raises(SystemExit, match="600-step horizon"):
        indicator_brackets([f"gelu:0.1:2={rows('c.jsonl', [(25, -0.1), (30, 0.1)], steps=1200)}"])
    assert indicator_brackets([f"quad:0.05:16={first}"]) == {"quad, eta 0.05": [(16, None, 1.7)]}   # open below
    with pytest.raises(SystemExit, match="do not bracket"):
        indicator_brackets([f"quad:0.05:16={rows('d.jsonl', [(1.5, -0.1), (1.6, -0.2)])}"])
    with pytest.raises(SystemExit, match="ACT:ETA:M"):
        indicator_brackets([f"quad:16={first}"])


def test_brackets_are_drawn_as_bars_on_a_log_axis(monkeypatch, tmp_path):
    import numpy as np
    from thresholds import plots
    captured = {}
    monkeypatch.setattr(plots, "save_figure", lambda plt, fig, path: captured.setdefault("fig", fig))
    plots.crossing_vs_m_figure(tmp_path / "f.png", [("gelu, eta 0.1", [(1, 9.9, 0.3)], [(1, 9.7, 0.3)])],
                               brackets={"gelu, eta 0.1": [(4, 35.0, 45.0), (16, None, 2.0)]})
    ax = captured["fig"].axes[0]
    assert ax.get_yscale() == "log"
    bars = [seg for coll in ax.collections for seg in coll.get_segments()]
    assert any(abs(seg[0][0] - 4 * 0.97) < 1e-12 and {seg[0][1], seg[1][1]} == {35.0, 45.0} for seg in bars)
    from matplotlib.text import Annotation
    arrows = [c for c in ax.get_children() if isinstance(c, Annotation)]   # the open bracket: an arrow down from 2
    assert len(arrows) == 1 and arrows[0].xy[1] < 2.0 and arrows[0].xy[0] == 16 * 0.97
    # brackets of one d say which d in the legend
    captured.clear()
    plots.crossing_vs_m_figure(tmp_path / "g.png", [("gelu, eta 0.1", [(1, 9.9, 0.3)], [(1, 9.7, 0.3)])],
                               settled={"gelu, eta 0.1": [(2, 20.0, 28.0)]}, settled_d=800)
    labels = [t.get_text() for t in captured["fig"].axes[0].get_legend().get_texts()]
    assert "gelu, eta 0.1: infinite-horizon bracket, GD's first phase at d = 800" in labels
    assert all(np.all(np.isfinite(seg)) for seg in bars)


def test_joint_offset_against_hand_computed_cells():
    """Eq. (1) of validation.forced_width on three cells (z = +2, 0, -0.5) and one with no forced crossing."""
    import pytest
    from validation.forced_width import joint_offset
    j = joint_offset([((3.0, 0.3), (2.0, 0.4)), ((1.0, 0.3), (1.0, 0.4)), ((2.0, 0.6), (2.5, 0.8)),
                      (None, (1.0, 0.1))])
    assert (j.cells, j.positive, j.within_2) == (3, 1, 3)
    assert j.mean_z == pytest.approx(0.5)
    assert j.chi2 == pytest.approx(4.25)
    x = 4.25   # chi-square with 3 degrees of freedom: P(X >= x) = erfc(sqrt(x / 2)) + sqrt(2 x / pi) e^{-x / 2}
    assert j.chi2_p == pytest.approx(math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2))
    assert j.sign_p == pytest.approx(1.0)   # 1 of 3 positive: as far from 3/2 as 2 of 3
    # relative offsets 0.5, 0, -0.2 with s.e. 0.25, 0.5, 0.4: weights 16, 4, 6.25
    assert j.relative == pytest.approx((16 * 0.5 - 6.25 * 0.2) / 26.25)
    assert j.relative_se == pytest.approx(1 / math.sqrt(26.25))
    r = (16 * 0.5 - 6.25 * 0.2) / 26.25   # eq. (2): Cochran's Q about it, chi-square with 2 dof: P = e^{-Q/2}
    q = 16 * (0.5 - r) ** 2 + 4 * r**2 + 6.25 * (0.2 + r) ** 2
    assert j.q == pytest.approx(q)
    assert j.q_p == pytest.approx(math.exp(-q / 2))
    assert j.worst == pytest.approx((0.2 + r) / 0.4)
    # every positive: the sign test's two-sided p is 2 / 2^k
    assert joint_offset([((2.0, 0.1), (1.0, 0.1))] * 5).sign_p == pytest.approx(2 / 32)
    with pytest.raises(ValueError):
        joint_offset([(None, (1.0, 0.1))])


def test_reference_table_adds_the_infinite_horizon_brackets(tmp_path):
    # --settled with --reference: a column [low, high] (or <= high, open below) with the records' d, and the widths
    # whose bracket holds the published figure (quad 3.6, gelu 6.0) or, open below, does not exclude it, over every d
    # and at one d alone
    from validation.forced_width import SettledBracket, reference_table
    settled = {("quad", 0.05, 8): SettledBracket(2.0, 2.5, [400, 800], {400: (2.0, 2.5), 800: (None, 2.5)}),
               ("quad", 0.05, 4): SettledBracket(None, 4.0, [400, 800, 1600],
                                                 {400: (None, 4.0), 800: (4.0, None), 1600: (3.0, 5.0)}),
               ("gelu", 0.1, 1): SettledBracket(20.0, 28.0, [400], {400: (20.0, 28.0)}),
               ("gelu", 0.1, 8): SettledBracket(None, 6.0, [200, 400], {200: (None, 6.0), 400: (6.0, 10.0)})}
    lines = reference_table((200,), out=tmp_path, settled=settled)
    assert lines[0].endswith("| published figure | infinite horizon, GD's first phase (finite d) |")
    assert len({line.count("|") for line in lines if line.startswith("|")}) == 1
    assert next(x for x in lines if x.startswith("| quad, 0.05 | 8 |")).endswith(
        "| 3.6 | [2, 2.5] (d = 400, 800); d = 400: [2, 2.5], d = 800: <= 2.5 |")
    assert next(x for x in lines if x.startswith("| quad, 0.05 | 4 |")).endswith(
        "| <= 4 (d = 400, 800, 1600); d = 400: <= 4, d = 800: -, d = 1600: [3, 5] |")
    assert next(x for x in lines if x.startswith("| gelu, 0.1 | 1 |")).endswith("| 6 | [20, 28] (d = 400) |")
    assert next(x for x in lines if x.startswith("| quad, 0.05 | 2 |")).endswith("| 3.6 | - |")
    assert lines[-3:] == [
        "Widths whose infinite-horizon bracket (GD's first phase at finite d, every d together) holds the figure: "
        "gelu: none (of m = 1, 8); quad: none (of m = 4, 8); open below and not excluding it: gelu: m = 8 "
        "(of m = 1, 8); quad: m = 4 (of m = 4, 8).", "",
        "At one d alone, holding it: gelu: m = 8 (d = 400); quad: m = 4 (d = 1600); open below and not excluding "
        "it: gelu: m = 8 (d = 200); quad: m = 4 (d = 400)."]


def test_settled_brackets_refuse_records_of_another_activation(tmp_path):
    import pytest
    from validation.forced_width import SettledBracket, by_series, settled_brackets

    def rec(act, delta, z):
        point = lambda step, zz: {"step": step, "z_H": zz, "overlap": 0.3}  # noqa: E731
        return json.dumps({"activation": act, "eta": 0.05, "m": 8, "delta": delta, "d": 400, "period_two": None,
                           "points": [point(600, z), point(30000, z)]}) + "\n"
    f = tmp_path / "s.jsonl"
    f.write_text(rec("quad", 2.0, float("nan")) + rec("quad", 3.0, -0.05))
    got = settled_brackets([f"quad:0.05:8={f}"])
    assert got == {("quad", 0.05, 8): SettledBracket(2.0, 3.0, [400], {400: (2.0, 3.0)})}
    assert by_series(got) == {"quad, eta 0.05": [(8, 2.0, 3.0)]}
    # a second d whose run at delta 2 keeps its outlier: the bracket over both d opens below, each d keeps its own
    f.write_text(f.read_text() + rec("quad", 2.0, -0.05).replace('"d": 400', '"d": 800'))
    assert settled_brackets([f"quad:0.05:8={f}"])[("quad", 0.05, 8)] == SettledBracket(
        None, 3.0, [400, 800], {400: (2.0, 3.0), 800: (None, 2.0)})
    # the figure at one d draws that d's bracket, and leaves out a width without records there
    both = settled_brackets([f"quad:0.05:8={f}"])
    assert by_series(both) == {"quad, eta 0.05": [(8, None, 3.0)]}
    assert by_series(both, 800) == {"quad, eta 0.05": [(8, None, 2.0)]}
    assert by_series(both, 200) == {}
    with pytest.raises(SystemExit, match="not all of activation gelu"):
        settled_brackets([f"gelu:0.05:8={f}"])


def test_reference_table_adds_the_d_inf_law_at_its_last_checkpoint(tmp_path):
    # --settle with --reference: the settle file's eq. (1) threshold at its last checkpoint and that step, named by
    # the file's setup; the widths whose interval holds the figure (gelu 6.0: an interval [4, 8] holds it)
    import pytest
    from tests.test_settle import settle_line
    from validation.forced_width import reference_table, settle_thresholds
    good = tmp_path / "gelu_phase_retrieval_eta0.1_T200_m2.jsonl"
    good.write_text("".join(json.dumps(settle_line(delta, 880000, [(100, -0.03, 0.001), (200, f, 0.001)])) + "\n"
                            for delta, f in ((30.0, -0.01), (40.0, 0.03))))
    quad = tmp_path / "quad_phase_retrieval_eta0.05_T200.jsonl"    # crosses at 3.5, its interval holds 3.6
    quad.write_text("".join(json.dumps(settle_line(delta, 880000, [(200, f, 0.001)])) + "\n"
                            for delta, f in ((3.0, -0.01), (4.0, 0.01))))
    law = settle_thresholds([f"gelu:0.1:2={good}", f"quad:0.05:1={quad}"])
    t = law[("gelu", 0.1, 2)]
    assert (t.step, t.deltas, t.crossing.found) == (200, [30.0, 40.0], True)
    assert t.crossing.value == pytest.approx(32.5)          # -0.01 at 30, +0.03 at 40
    lines = reference_table((200,), out=tmp_path, law=law)
    assert lines[0].endswith("| published figure | d = inf law, last checkpoint (step) |")
    row = next(x for x in lines if x.startswith("| gelu, 0.1 | 2 |"))
    assert row.startswith("| gelu, 0.1 | 2 |") and row.endswith(" (200) |") and "| 32.50 [" in row
    assert next(x for x in lines if x.startswith("| gelu, 0.1 | 4 |")).endswith("| 6 | - |")
    assert lines[-1] == ("Widths whose d = inf law's interval at its last checkpoint holds the figure: gelu: none "
                         "(of m = 2); quad: m = 1 (of m = 1).")
    # a file named for another setup, or with one delta, is refused
    other = tmp_path / "gelu_phase_retrieval_eta0.1_T200_m4.jsonl"
    other.write_text(good.read_text())
    with pytest.raises(SystemExit, match="not a validation.settle file of gelu"):
        settle_thresholds([f"gelu:0.1:2={other}"])
    with pytest.raises(SystemExit, match="not a validation.settle file of gelu"):
        settle_thresholds([f"gelu:0.1:1={good}"])
    with pytest.raises(SystemExit, match="no such file"):
        settle_thresholds([f"gelu:0.1:2={tmp_path / 'gelu_phase_retrieval_eta0.1_T9_m2.jsonl'}"])
    one = tmp_path / "gelu_phase_retrieval_eta0.1_T200.jsonl"
    one.write_text(good.read_text().splitlines()[0] + "\n")
    with pytest.raises(SystemExit, match="fewer than two deltas"):
        settle_thresholds([f"gelu:0.1:1={one}"])

import itertools
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from validation.escape_law import (
    EscapeData,
    EscapeLaw,
    cell_data,
    check,
    escaped_by,
    fit,
    fit_with_errors,
    main,
    neg_log_likelihood,
    with_level,
)

T1 = 10000


def record(delta, seed, t_half, steps, m=16, d=400):
    """A release_check record with what the law reads (eq. (1)): t_half or None, and its T."""
    return {"activation": "gelu", "link": "phase_retrieval", "eta": 0.1, "m": m, "delta": float(delta), "d": d,
            "seed": seed, "t1": T1, "steps": steps, "scale": 1.0, "t_half": t_half,
            "learned": t_half is not None and t_half <= steps, "q": [[T1, 0.001], [steps, 0.0]]}


def drawn(law, deltas, runs, steps, seed=0):
    """Records drawn from eq. (2) or (2b) (``law.spread``) with ``law``'s parameters, each run censored at its T =
    ``steps``."""
    rng = np.random.default_rng(seed)
    out = []
    for delta in deltas:
        for k in range(runs):
            own = law.delta_c + (law.sigma * rng.standard_normal() if law.spread == "threshold" else 0.0)
            if delta <= own:
                tau = math.inf
            elif law.spread == "threshold":
                tau = math.exp(law.log_A - law.nu * math.log(delta - own))
            else:
                tau = math.exp(law.log_A - law.nu * math.log(delta - law.delta_c) + law.sigma * rng.standard_normal())
            t_half = T1 + math.ceil(tau) if T1 + tau <= steps else None
            out.append(record(delta, k, t_half, steps))
    return out


TRUE = EscapeLaw(log_A=math.log(8000.0), delta_c=3.6, sigma=0.4, nu=1.0, spread="time")
SPREAD = EscapeLaw(log_A=math.log(7000.0), delta_c=3.7, sigma=0.25, nu=1.0, spread="threshold")


def test_the_likelihood_is_the_censored_normal_of_log_tau():
    # eq. (3) against scipy.stats term by term: the density of tau (log-normal) where observed, the survival of
    # log tau where censored, and no term for a censored run at delta <= delta_c
    data = EscapeData(np.array([3.0, 4.0, 5.0, 5.0, 6.0]), np.array([30000.0, 9000.0, 4000.0, 40000.0, 2500.0]),
                      np.array([True, False, False, True, False]))
    log_A, delta_c, sigma, nu = math.log(7000.0), 3.5, 0.6, 1.3
    mu = log_A - nu * np.log(data.delta[1:] - delta_c)
    ref = 0.0
    for t, c, m in zip(data.tau[1:], data.censored[1:], mu):
        ref -= stats.norm.logsf(math.log(t), m, sigma) if c else stats.lognorm.logpdf(t, sigma, scale=math.exp(m))
    assert neg_log_likelihood(log_A, delta_c, sigma, nu, data, "time") == pytest.approx(ref, rel=1e-12)
    # an observed escape at or below delta_c has likelihood 0
    assert neg_log_likelihood(log_A, 4.0, sigma, nu, data, "time") == math.inf


def test_eq_3b_is_the_law_of_tau_when_each_run_has_its_own_threshold():
    # eq. (3b) against the distribution function of eq. (2b), P(tau <= t) = Phi((delta - (A / t)^(1/nu) -
    # delta_c) / s): its numerical derivative where observed, its complement where censored
    log_A, delta_c, s, nu = math.log(7000.0), 3.6, 0.3, 1.4

    def cdf(delta, t):
        return stats.norm.cdf((delta - math.exp((log_A - math.log(t)) / nu) - delta_c) / s)
    for delta, t in ((4.0, 30000.0), (5.0, 4000.0), (3.5, 90000.0)):
        h = 1e-3 * t
        density = (cdf(delta, t + h) - cdf(delta, t - h)) / (2 * h)
        one = EscapeData(np.array([delta]), np.array([t]), np.array([False]))
        assert neg_log_likelihood(log_A, delta_c, s, nu, one, "threshold") == pytest.approx(-math.log(density),
                                                                                              rel=1e-6)
        cut = EscapeData(np.array([delta]), np.array([t]), np.array([True]))
        assert neg_log_likelihood(log_A, delta_c, s, nu, cut, "threshold") == pytest.approx(
            -math.log(1 - cdf(delta, t)), rel=1e-9)
    # eq. (4b) is that distribution function at t = S - t1
    law = EscapeLaw(log_A, delta_c, s, nu, spread="threshold")
    assert law.p_learned(4.2, 40000, T1) == pytest.approx(cdf(4.2, 30000.0), rel=1e-12)


def test_eq_1_censors_each_run_at_its_own_horizon():
    rows = [record(4, 0, 25000, 30000), record(4, 1, None, 30000), record(5, 0, 45000, 50000),
            record(5, 1, None, 20000)]
    data = cell_data(rows)
    assert data.tau.tolist() == [15000, 20000, 35000, 10000]
    assert data.censored.tolist() == [False, True, False, True]
    # read at 3 x 10^4: the escape at 45000 becomes a run censored there; the run that stopped at 2 x 10^4 stays
    # censored at its own T
    data = cell_data(rows, horizon=30000)
    assert data.tau.tolist() == [15000, 20000, 20000, 10000]
    assert data.censored.tolist() == [False, True, True, True]
    # a run recorded to several T is read from its longest record
    assert cell_data([record(4, 0, None, 30000), record(4, 0, 41000, 50000)]).tau.tolist() == [31000]


def test_eqs_4_and_5_agree():
    for S in (20000, 50000, 10 ** 6):
        c = TRUE.crossing(S, T1)
        assert TRUE.p_learned(c, S, T1) == pytest.approx(0.5, abs=1e-12)
        assert TRUE.p_learned(c + 0.1, S, T1) > 0.5 > TRUE.p_learned(c - 0.05, S, T1)
    assert TRUE.crossing(None, T1) == TRUE.delta_c and TRUE.p_learned(3.5, 10 ** 9, T1) == 0.0


@pytest.mark.parametrize("truth", [TRUE, SPREAD], ids=["time", "threshold"])
def test_the_fit_recovers_the_law_it_was_drawn_from(truth):
    # 4 deltas x 12 runs censored at 3 x 10^4: delta 3.5 below delta_c rarely escapes, 4 escapes in part
    rows = drawn(truth, [3.5, 4.0, 5.0, 6.0], 12, 30000, seed=3)
    law = fit_with_errors(cell_data(rows), nu=1.0, spread=truth.spread, resamples=60)
    se = law.crossing_se(None, T1, 60)
    assert law.escaped < law.runs and se is not None and 0 < se < 0.3
    assert abs(law.delta_c - truth.delta_c) < 3 * se
    assert law.sigma == pytest.approx(truth.sigma, rel=0.5)
    assert law.crossing(50000, T1) == pytest.approx(truth.crossing(50000, T1), abs=3 * law.crossing_se(50000, T1, 60))
    # the exponent fitted too comes back near 1 (a weak constraint with 48 runs; the test is its order)
    free, _ = fit(cell_data(rows), nu=None, spread=truth.spread)
    assert 0.4 < free.nu < 2.5


def test_escapes_at_one_delta_identify_no_law():
    rows = [record(5, k, 14000 + 100 * k, 30000) for k in range(4)] + [record(4, k, None, 30000) for k in range(4)]
    assert not cell_data(rows).identified and fit(cell_data(rows)) is None


def test_eq_6_counts_only_the_runs_censored_at_S0_and_decided_at_S1():
    rows = [record(5, 0, 12000, 60000),          # learned before S0: not in the check
            record(5, 1, 45000, 60000),          # censored at S0, escapes by S1
            record(5, 2, None, 60000),           # censored at S0, not by S1
            record(5, 3, None, 35000),           # censored at S0, undecided at S1 (its T is below S1)
            record(4, 0, None, 60000)]
    got = check(rows, TRUE, 30000, 50000)
    p = [(TRUE.p_learned(5.0, 50000, T1) - TRUE.p_learned(5.0, 30000, T1)) / (1 - TRUE.p_learned(5.0, 30000, T1)),
         (TRUE.p_learned(4.0, 50000, T1) - TRUE.p_learned(4.0, 30000, T1)) / (1 - TRUE.p_learned(4.0, 30000, T1))]
    assert got["runs"] == 3 and got["escaped"] == 1
    assert got["expected"] == pytest.approx(2 * p[0] + p[1], rel=1e-12)
    # the exact two-sided p of one escape among three runs of these chances, by enumeration
    chances = [p[0], p[0], p[1]]
    pmf = {k: sum(math.prod(c if i in pick else 1 - c for i, c in enumerate(chances))
                  for pick in itertools.combinations(range(3), k)) for k in range(4)}
    assert got["p"] == pytest.approx(min(1.0, 2 * min(pmf[0] + pmf[1], pmf[1] + pmf[2] + pmf[3])), rel=1e-12)


def test_the_command_prints_a_law_per_cell_and_refuses_bad_input(tmp_path):
    path = tmp_path / "r.jsonl"
    rows = drawn(TRUE, [3.5, 4.0, 5.0, 6.0], 6, 60000, seed=1) + [
        record(5, k, 14000 + 100 * k, 30000, m=8) for k in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    out = runner.invoke(main, ["--released", str(path), "--resamples", "20", "--at", "50000"])
    assert out.exit_code == 0, out.output
    assert "| 8 | 400 | 10000 | 1 | 3 | not identified" in out.output
    line = next(x for x in out.output.splitlines() if x.startswith("| 16 | 400"))
    assert "+-" in line and len(line.split("|")) == len(out.output.splitlines()[0].split("|"))
    out = runner.invoke(main, ["--released", str(path), "--resamples", "20", "--check", "30000:60000", "--json"])
    assert out.exit_code == 0, out.output
    cell = [json.loads(x) for x in out.output.splitlines()][1]
    assert cell["m"] == 16 and cell["check"]["S0"] == 30000 and cell["horizon"] == 30000
    for args, message in ((["--nu", "zero"], "--nu"), (["--nu", "-1"], "--nu"), (["--check", "5:3"], "--check"),
                          (["--check", "x"], "--check"), (["--at", "a,b"], "--at"), (["--at", "0"], "--at")):
        bad = runner.invoke(main, ["--released", str(path), *args])
        assert bad.exit_code != 0 and message in bad.output and "Traceback" not in bad.output
    other = tmp_path / "other.jsonl"
    other.write_text('{"m": 1, "delta": 3.0}\n')
    bad = runner.invoke(main, ["--released", str(other)])
    assert bad.exit_code != 0 and "not a validation.release_check record" in bad.output and "Traceback" not in bad.output
    # a horizon at or before the release: no run has escaped there, the crossing is inf, not an error
    early = runner.invoke(main, ["--released", str(path), "--resamples", "20", "--at", "5000"])
    assert early.exit_code == 0 and "inf" in early.output
    missing = runner.invoke(main, ["--released", str(tmp_path / "none.jsonl")])
    assert missing.exit_code != 0 and "no such file" in missing.output


def test_eq_1_prime_reads_the_escape_at_a_lower_level():
    # a run that levels off below 1/2 has escaped at 0.2 though never at 1/2; records without passage steps are
    # left out at a lower level, and the command says so when none has them
    plateau = {**record(4, 0, None, 60000), "t_levels": {"0.01": 12000, "0.03": 15000, "0.1": 20000, "0.2": 26000,
                                                        "0.3": 33000, "0.5": None}}
    old = record(4, 1, 21000, 60000)
    assert escaped_by(plateau, 30000, 0.2) and not escaped_by(plateau, 30000, 0.3)
    assert escaped_by(plateau, 60000, 0.5) is False and escaped_by(plateau, 90000, 0.3)
    assert escaped_by(plateau, 90000, 0.5) is None and escaped_by({**plateau, "t_levels": {
        **plateau["t_levels"], "0.3": None}}, 90000, 0.3) is None
    data = cell_data(with_level([plateau, old], 0.2), level=0.2)
    assert data.tau.tolist() == [16000] and data.censored.tolist() == [False]
    data = cell_data([plateau, old], horizon=30000)
    assert data.tau.tolist() == [20000, 11000] and data.censored.tolist() == [True, False]


def test_the_command_refuses_a_level_its_records_do_not_carry(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in drawn(TRUE, [4.0, 5.0], 3, 60000)))
    runner = CliRunner()
    bad = runner.invoke(main, ["--released", str(path), "--level", "0.2"])
    assert bad.exit_code != 0 and "level 0.2" in bad.output and "Traceback" not in bad.output
    bad = runner.invoke(main, ["--released", str(path), "--level", "0.25"])
    assert bad.exit_code != 0 and "--level" in bad.output

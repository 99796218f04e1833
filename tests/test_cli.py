import json

import pytest
from click.testing import CliRunner

from cli import main


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_alg_json_keys():
    res = run("alg", "--link", "phase_retrieval", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert abs(data["delta_alg"] - 0.5) < 1e-12
    assert data["easy_dim"] == 0 and data["hard_dim"] == 1 and data["generative_exponent"] == 2


def test_alg_json_inf_and_zero():
    assert json.loads(run("alg", "--link", "parity3", "--json").output)["delta_alg"] == "inf"
    assert json.loads(run("alg", "--link", "sign", "--json").output)["delta_alg"] == 0


def test_alg_table():
    res = run("alg", "--link", "abs")
    assert res.exit_code == 0 and "delta_alg" in res.output and "0.5" in res.output


def test_hermite_table_and_json():
    res = run("hermite", "--activation", "gelu", "--order", "8")
    assert res.exit_code == 0 and "3/(8*sqrt(pi))" in res.output
    data = json.loads(run("hermite", "--link", "he3", "--order", "4", "--json").output)
    assert data["information_exponent"] == 3
    assert data["coefficients"]["z"][3]["value"] == pytest.approx(1.0)


def test_catalog_lists_both_tables():
    res = run("catalog")
    assert res.exit_code == 0 and "gelu" in res.output and "parity3" in res.output
    data = json.loads(run("catalog", "--json").output)
    assert "relu" in data["activations"] and "mixed" in data["links"]


@pytest.mark.parametrize("args, fragment", [
    (("alg", "--link", "__import__('os')"), "unknown function '__import__'"),
    (("alg", "--link", "z**"), "syntax error"),
    (("alg", "--link", "nosuchlink"), "unknown link 'nosuchlink'"),
    (("alg", "--link", "z1**2 + w"), "unknown symbol 'w'"),
    (("hermite", "--activation", "bogus"), "unknown activation 'bogus'"),
    (("hermite", "--activation", "foo(x)"), "unknown function 'foo'"),
    (("hermite",), "exactly one of --activation or --link"),
    (("alg", "--link", "Abs(z1) + z2"), "kinks"),
])
def test_errors_are_one_line_with_exit_code_2(args, fragment):
    res = run(*args)
    assert res.exit_code == 2
    assert fragment in res.output
    assert "Traceback" not in res.output
    assert len([line for line in res.output.strip().splitlines() if line.strip()]) <= 3

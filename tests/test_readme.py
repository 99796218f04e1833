"""The README's quick starts run as written (with small settings appended, so that the suite stays fast):
the commands are read from the README itself, so the README cannot drift from the code."""

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main

README = Path(__file__).resolve().parent.parent / "README.md"

# appended to each command (click keeps the last value of a repeated option): tiny laws and sweeps
SMALL = {
    "alg": [],
    "nn": ["--law-d", "60", "-T", "8", "--replicas", "2", "--search-max", "2"],
    "table": ["--law-d", "60", "-T", "8", "--replicas", "2", "--search-max", "2", "--workers", "0"],
    "validate": ["--dims", "30", "--delta", "2,4", "--trials", "1", "--t0", "2", "--c", "1", "--workers", "0"],
}
EXPECT = {"alg": "delta_alg", "nn": "delta_NN", "table": "delta_NN", "validate": "crossing"}


def quick_start_commands():
    text = README.read_text()
    out = []
    for section in re.split(r"^## ", text, flags=re.M):
        if not section.startswith("Quick start"):
            continue
        for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
            for line in block.splitlines():
                line = line.split(" #")[0].strip()
                if line.startswith("thresholds "):
                    out.append(shlex.split(line)[1:])
    return out


def test_the_readme_has_three_quick_starts_with_commands():
    sections = re.findall(r"^## Quick start \d", README.read_text(), flags=re.M)
    assert len(sections) == 3
    assert {args[0] for args in quick_start_commands()} == set(SMALL)
    # A short README: capped in characters, what a reader has to read.  The cap was 150 lines, which ever-longer
    # lines met (the status was one paragraph of 9000 characters, the whole file 19181); it is now 12000
    # characters, and 170 lines so that tables and wrapped lines are not squeezed into long ones.
    text = README.read_text()
    assert len(text) < 12000 and len(text.splitlines()) < 170


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    # one cache for the quick starts, as for a user running them in order (delta_alg, latent splits)
    return tmp_path_factory.mktemp("readme-cache")


@pytest.mark.parametrize("args", quick_start_commands(), ids=lambda a: " ".join(a)[:60])
def test_quick_start_command_runs(args, tmp_path, monkeypatch, shared_cache):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(shared_cache))
    extra = SMALL[args[0]] + (["--report", str(tmp_path / "report")] if args[0] == "validate" else [])
    res = CliRunner().invoke(main, args + extra)
    assert res.exit_code == 0, res.output
    assert EXPECT[args[0]] in res.stdout, res.stdout

"""A non-editable install carries what the commands need: the catalogue and the theory as package data."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_ships_the_catalogue_and_the_commands_find_it(tmp_path):
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(ROOT), "-w", str(tmp_path)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(tmp_path.glob("thresholds-*.whl"))
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(site)
    assert {"thresholds/catalog_data/activations.toml", "thresholds/catalog_data/links.toml",
            "thresholds/THEORY.md", "thresholds/METHODS.md", "cli.py"} <= names
    # run from the unpacked wheel alone, away from the source tree (PYTHONPATH comes before the editable finder)
    env = {k: v for k, v in os.environ.items() if k != "THRESHOLDS_CATALOG"}
    env["PYTHONPATH"] = str(site)
    probe = ("import thresholds.catalog as c, cli; print(c.catalog_dir()); print(c.__file__); "
             "cli.main(['catalog'], standalone_mode=False)")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    where, module = run.stdout.splitlines()[:2]
    assert Path(module).is_relative_to(site) and Path(where) == site / "thresholds" / "catalog_data"
    assert "gelu" in run.stdout and "phase_retrieval" in run.stdout

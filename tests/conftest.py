"""The suite never reads or writes the user's files: the result cache and $HOME point into a
temporary directory for the whole session (tests that need their own cache set THRESHOLDS_CACHE
again with monkeypatch)."""

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    saved = {k: os.environ.get(k) for k in ("HOME", "THRESHOLDS_CACHE")}
    os.environ["HOME"] = str(home)
    os.environ["THRESHOLDS_CACHE"] = str(home / ".cache" / "thresholds")
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


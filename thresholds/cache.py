"""On-disk cache of expensive results, keyed by their full setup.

Location: ``$THRESHOLDS_CACHE`` or ``~/.cache/thresholds``.  The key is the
SHA-256 of the JSON of (kind, setup, code version), so any change of a
parameter or of the package version gives a new entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path

VERSION = "3"


def cache_dir() -> Path:
    return Path(os.environ.get("THRESHOLDS_CACHE", Path.home() / ".cache" / "thresholds"))


def key_for(kind: str, setup: dict) -> str:
    text = json.dumps({"kind": kind, "setup": setup, "version": VERSION}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(kind: str, setup: dict):
    return load_key(kind, key_for(kind, setup))


def load_key(kind: str, key: str):
    """The entry of ``kind`` stored under the hash ``key`` (None when missing or unreadable)."""
    path = cache_dir() / f"{kind}-{key}.pkl"
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
        return None


def store(kind: str, setup: dict, value) -> None:
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{kind}-{key_for(kind, setup)}.tmp"
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh)
        tmp.replace(directory / f"{kind}-{key_for(kind, setup)}.pkl")
    except OSError:
        pass  # a read-only home must not break a computation

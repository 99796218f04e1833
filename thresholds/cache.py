"""On-disk cache of expensive results, keyed by their full setup, in a format that cannot run code.

Location: ``$THRESHOLDS_CACHE`` or ``~/.cache/thresholds``.  The key is the SHA-256 of the JSON of
(kind, setup, code version), so any change of a parameter or of the package version gives a new
entry ``{kind}-{key}.json``.

Format.  An entry is one JSON object ``{"kind", "key", "record"}``; the record is plain JSON (numbers,
strings, lists, objects) with four tagged forms: ``{"__ndarray__": [dtype, shape, base64 bytes]}``
(numeric arrays, bit for bit), ``{"__tuple__": [...]}``, ``{"__items__": [[key, value], ...]}`` (a
dict with keys that are not strings) and ``{"__record__": name, "fields": {...}}`` for the dataclass
records of ``RECORDS`` (an allow-list: results, setups and their parts).  Reading builds nothing
else: an unknown tag or record name, a malformed file, a record of another type than the caller
expects (``expect``) or an entry stored under another key is a miss, and the result is recomputed.

Entries of earlier versions (``.pkl``, pickle) are read once with an unpickler that resolves only the
record classes and NumPy's array reconstruction (anything else, e.g. a planted ``os.system``, is
refused and the file is a miss), stored again as JSON and removed.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import importlib
import io
import json
import math
import os
import pickle
from pathlib import Path

import numpy as np

VERSION = "3"

# the dataclasses an entry may contain: module -> names
_RECORD_MODULES = {
    "thresholds.nn": ("NNSetup", "NNResult", "Evaluation", "Crossing"),
    "thresholds.dmft": ("DMFTSetup", "DMFTResult"),
    "thresholds.alg": ("LatentSplit",),
}
RECORDS = tuple(f"{module}.{name}" for module, names in _RECORD_MODULES.items() for name in names)
_NUMERIC_KINDS = "biufc"


def cache_dir() -> Path:
    return Path(os.environ.get("THRESHOLDS_CACHE", Path.home() / ".cache" / "thresholds"))


@contextlib.contextmanager
def empty():
    """A fresh, empty cache for the duration of the block (benchmarks from an empty cache); the previous
    ``$THRESHOLDS_CACHE`` is restored after it."""
    import tempfile
    old = os.environ.get("THRESHOLDS_CACHE")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["THRESHOLDS_CACHE"] = tmp
        try:
            yield Path(tmp)
        finally:
            if old is None:
                os.environ.pop("THRESHOLDS_CACHE")
            else:
                os.environ["THRESHOLDS_CACHE"] = old


def key_for(kind: str, setup: dict) -> str:
    text = json.dumps({"kind": kind, "setup": setup, "version": VERSION}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _record_class(name: str):
    module, _, cls = name.rpartition(".")
    if name not in RECORDS:
        raise ValueError(f"not a cached record: {name}")
    return getattr(importlib.import_module(module), cls)


# --- encoding -----------------------------------------------------------------------------------------

def encode(value):
    """``value`` as plain JSON with the tagged forms of the module docstring (ValueError for anything
    that is not a number, string, container, numeric array or allow-listed record)."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, np.generic):
        return encode(value.item())
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(f"cannot store an array of dtype {value.dtype}")
        data = base64.b64encode(np.ascontiguousarray(value).tobytes()).decode()
        return {"__ndarray__": [value.dtype.str, list(value.shape), data]}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__items__": [[encode(k), encode(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = f"{type(value).__module__}.{type(value).__qualname__}"
        if name not in RECORDS:
            raise ValueError(f"cannot store a {name}")
        return {"__record__": name, "fields": {f.name: encode(getattr(value, f.name))
                                               for f in dataclasses.fields(value)}}
    raise ValueError(f"cannot store a {type(value).__name__}")


def decode(data):
    """The value of ``encode``'s output; ValueError (a miss for the caller) on anything else."""
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        raise ValueError("malformed entry")
    if "__float__" in data:
        return float(data["__float__"])
    if "__ndarray__" in data:
        dtype, shape, raw = data["__ndarray__"]
        dtype = np.dtype(dtype)
        if dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(f"array of dtype {dtype} in an entry")
        return np.frombuffer(base64.b64decode(raw), dtype=dtype).reshape(shape).copy()
    if "__tuple__" in data:
        return tuple(decode(v) for v in data["__tuple__"])
    if "__items__" in data:
        return {decode(k): decode(v) for k, v in data["__items__"]}
    if "__record__" in data:
        cls = _record_class(data["__record__"])
        fields = {f.name for f in dataclasses.fields(cls)}
        given = data["fields"]
        if not isinstance(given, dict) or not set(given) <= fields:
            raise ValueError(f"fields of {data['__record__']} do not match")
        return cls(**{k: decode(v) for k, v in given.items()})
    if any(k.startswith("__") for k in data):
        raise ValueError("unknown tag in an entry")
    return {k: decode(v) for k, v in data.items()}


# --- legacy pickle entries ------------------------------------------------------------------------------

_PICKLE_GLOBALS = {(m, n) for m, names in _RECORD_MODULES.items() for n in names} | {
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("builtins", "complex"),
}


class _RecordUnpickler(pickle.Unpickler):
    """Resolves only the record classes and NumPy's array reconstruction; anything else is refused."""

    def find_class(self, module, name):
        if (module, name) not in _PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cache entry")
        return super().find_class(module, name)


def _read_legacy(path: Path):
    with open(path, "rb") as fh:
        return _RecordUnpickler(io.BytesIO(fh.read())).load()


# --- load and store -------------------------------------------------------------------------------------

def load(kind: str, setup: dict, *, expect=None):
    """The entry of ``kind`` for ``setup`` (None when missing, unreadable or not an ``expect`` instance)."""
    return load_key(kind, key_for(kind, setup), expect=expect)


def load_key(kind: str, key: str, *, expect=None):
    """The entry of ``kind`` stored under the hash ``key`` (None when missing or unreadable)."""
    path = cache_dir() / f"{kind}-{key}.json"
    try:
        with open(path, encoding="utf-8") as fh:
            entry = json.load(fh)
        if entry.get("kind") != kind or entry.get("key") != key:
            return None
        value = decode(entry["record"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        value = _migrate(kind, key)
    if expect is not None and not isinstance(value, expect):
        return None
    return value


def _migrate(kind: str, key: str):
    """A legacy pickle entry, read with the restricted unpickler and stored again as JSON (None: none
    or refused)."""
    legacy = cache_dir() / f"{kind}-{key}.pkl"
    if not legacy.exists():
        return None
    try:
        value = _read_legacy(legacy)
        encode(value)  # only what the JSON format can hold
    except Exception:  # noqa: BLE001 - any failure of a legacy file is a miss, never an error
        return None
    _write(kind, key, value)
    try:
        legacy.unlink()
    except OSError:
        pass
    return value


def store(kind: str, setup: dict, value) -> None:
    _write(kind, key_for(kind, setup), value)


def _write(kind: str, key: str, value) -> None:
    directory = cache_dir()
    text = json.dumps({"kind": kind, "key": key, "record": encode(value)})
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{kind}-{key}.{os.getpid()}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(directory / f"{kind}-{key}.json")
    except OSError:
        pass  # a read-only home must not break a computation


def keys(kind: str) -> list[str]:
    """The keys of the stored entries of ``kind`` (JSON and legacy), sorted."""
    found = set()
    for path in cache_dir().glob(f"{kind}-*"):
        stem, suffix = path.stem, path.suffix
        rest = stem[len(kind) + 1:]
        if suffix in (".json", ".pkl") and len(rest) == 32 and all(c in "0123456789abcdef" for c in rest):
            found.add(rest)
    return sorted(found)

"""The on-disk cache stores JSON and never runs code from its directory."""

import json
import math
import pickle

import numpy as np
import pytest

from thresholds import cache
from thresholds.nn import Crossing, Evaluation, NNSetup


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    return tmp_path


def _evaluation():
    return Evaluation(2.5, [1, 2], [-0.1, math.nan], [0.01, 0.02], [0.3, 0.4], [0.0, 0.0], [1.0, -0.5],
                      [0.1, 0.1], [math.nan, -1.5], [math.nan, 0.2], [math.nan, 0.4], [[math.nan], [-1.5]],
                      ((0.1, 0.01, -0.2, 0.02),))


def _same(a, b):
    return json.dumps(cache.encode(a), sort_keys=True) == json.dumps(cache.encode(b), sort_keys=True)


def test_records_round_trip_bit_for_bit(cache_dir):
    from thresholds.dmft import DMFTSetup, solve_dmft
    res = solve_dmft(DMFTSetup("tanh", "abs", 4.0, 0.2, 5, paths=400, replicas=2))
    cache.store("dmft", {"x": 1}, res)
    back = cache.load("dmft", {"x": 1}, expect=type(res))
    assert back is not None and back.setup == res.setup
    for name in ("norm2", "C", "Cpsi", "final_u", "final_w"):
        got, want = getattr(back, name), getattr(res, name)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert list(back.snapshots) == list(res.snapshots)  # integer keys survive
    assert all(np.array_equal(a, b) for a, b in zip(back.replica_laws[0], res.replica_laws[0]))
    ev = _evaluation()
    cache.store("nn-eval", {"y": 2}, ev)
    again = cache.load("nn-eval", {"y": 2}, expect=Evaluation)
    assert _same(again, ev) and isinstance(again.sectors[0], tuple) and math.isnan(again.indicator[1])
    assert list(cache_dir.glob("*.json")) and not list(cache_dir.glob("*.pkl"))


class _Planted:
    """What an attacker could place in the cache directory: unpickling it would run a command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_pickle_is_never_executed(cache_dir):
    marker = cache_dir / "executed"
    setup = {"s": 1}
    key = cache.key_for("nn", setup)
    (cache_dir / f"nn-{key}.pkl").write_bytes(pickle.dumps(_Planted(marker)))
    assert cache.load("nn", setup) is None
    assert not marker.exists()
    # the same through the code path that scans every stored search (cached_delta_nn with any_search)
    from thresholds.store import cached_delta_nn
    assert cached_delta_nn(NNSetup("gelu"), any_search=True) is None
    assert not marker.exists()


def test_json_entries_build_only_allow_listed_records(cache_dir):
    key = cache.key_for("nn", {"s": 2})
    bad = {"kind": "nn", "key": key, "record": {"__record__": "os.system", "fields": {}}}
    (cache_dir / f"nn-{key}.json").write_text(json.dumps(bad))
    assert cache.load("nn", {"s": 2}) is None
    with pytest.raises(ValueError):
        cache.encode(object())
    with pytest.raises(ValueError):
        cache.encode(np.array([object()]))


def test_wrong_type_or_corrupt_entries_are_misses(cache_dir):
    cache.store("nn", {"s": 3}, {"not": "a result"})
    assert cache.load("nn", {"s": 3}) == {"not": "a result"}
    assert cache.load("nn", {"s": 3}, expect=Crossing) is None
    key = cache.key_for("nn", {"s": 4})
    (cache_dir / f"nn-{key}.json").write_text("{ truncated")
    assert cache.load("nn", {"s": 4}) is None
    # an entry copied under another key is not that key's entry
    other = cache.key_for("nn", {"s": 5})
    (cache_dir / f"nn-{other}.json").write_text((cache_dir / f"nn-{cache.key_for('nn', {'s': 3})}.json").read_text())
    assert cache.load("nn", {"s": 5}) is None


def test_legacy_pickle_entries_are_migrated_once(cache_dir):
    ev = _evaluation()
    key = cache.key_for("nn-eval", {"z": 1})
    legacy = cache_dir / f"nn-eval-{key}.pkl"
    legacy.write_bytes(pickle.dumps(ev))
    back = cache.load("nn-eval", {"z": 1}, expect=Evaluation)
    assert back is not None and _same(back, ev)
    assert not legacy.exists() and (cache_dir / f"nn-eval-{key}.json").exists()
    assert _same(cache.load("nn-eval", {"z": 1}), ev)


def test_legacy_pickles_with_arrays_and_numpy_scalars_are_read(cache_dir):
    from thresholds.alg import LatentSplit
    split = LatentSplit(np.array([[1.0, 0.0]]), np.array([[0.0, np.float32(1.0)]]))
    key = cache.key_for("latent_split", {"w": 1})
    (cache_dir / f"latent_split-{key}.pkl").write_bytes(pickle.dumps(split))
    back = cache.load("latent_split", {"w": 1}, expect=LatentSplit)
    assert back is not None and np.array_equal(back.easy, split.easy) and np.array_equal(back.hard, split.hard)
    key = cache.key_for("validation", {"w": 2})
    (cache_dir / f"validation-{key}.pkl").write_bytes(pickle.dumps({"value": np.float64(5.5), "error": 0.2}))
    assert cache.load("validation", {"w": 2}, expect=dict) == {"value": 5.5, "error": 0.2}


def test_the_suite_never_uses_the_users_cache(_private_home):
    # tests/conftest.py points $HOME and the cache into the session's temporary directory
    import os
    from pathlib import Path
    assert Path(os.environ["HOME"]) == _private_home == Path.home()
    assert cache.cache_dir().is_relative_to(_private_home)


def test_empty_cache_block_restores_the_location(monkeypatch, tmp_path):
    monkeypatch.setenv("THRESHOLDS_CACHE", str(tmp_path))
    with cache.empty() as fresh:
        assert cache.cache_dir() == fresh and fresh != tmp_path and not list(fresh.iterdir())
        cache.store("nn", {"s": 9}, {"x": 1})
        assert cache.load("nn", {"s": 9}) == {"x": 1}
    assert cache.cache_dir() == tmp_path and not fresh.exists() and cache.load("nn", {"s": 9}) is None

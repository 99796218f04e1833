import numpy as np
import pytest

from thresholds.dmft import DMFTSetup
from thresholds.errors import NotDifferentiableError
from thresholds.hessian import hessian_spectrum, hessian_weight


def test_hessian_weight_is_minus_psi_prime():
    # quad: f = u^2, psi = (y - u^2) 2u, psi' = 2y - 6u^2, G = -psi' = 6u^2 - 2y
    u = np.array([-1.0, 0.3, 2.0])
    y = np.array([0.5, 1.0, 4.0])
    assert np.allclose(hessian_weight("quad", 1.0, 0.0, u, y), 6 * u**2 - 2 * y)


def test_linear_activation_hessian_is_marchenko_pastur():
    # sigma linear: G = a^2 = 1 for every sample, H = X^T X / n: MP edges, no outlier
    res = hessian_spectrum(DMFTSetup("linear", "abs", delta=4.0, eta=0.2, steps=3, paths=4000, replicas=2),
                           cache=False)
    assert res.left_edge == pytest.approx(0.25, abs=1e-9) and res.right_edge == pytest.approx(2.25, abs=1e-9)
    assert res.settled and res.outliers == [] and res.negative_outlier is False


def test_hessian_needs_second_derivative():
    with pytest.raises(NotDifferentiableError):
        hessian_spectrum(DMFTSetup("relu", "abs", delta=4.0, eta=0.2, steps=3, paths=400, replicas=2))


def test_sample_quantile_is_the_median_of_the_minimum():
    """The earlier cut of eq. (5) (validation.tail_edge): (1 - q)^n = 1/2; the median of the minimum of n uniforms
    is that q."""
    from thresholds.hessian import sample_quantile
    for n in (1, 7, 1000, 1e6):
        assert n * np.log1p(-sample_quantile(n)) == pytest.approx(-np.log(2), rel=1e-12)
    mins = np.random.default_rng(1).random((4001, 50)).min(axis=1)
    assert np.median(mins) == pytest.approx(sample_quantile(50), rel=0.05)


def _pr_sample(N, seed=0):
    """Phase retrieval at t = 0 (u independent of g, y = g^2): G = 6 u^2 - 2 y is unbounded below."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal(N)
    return rng.standard_normal(N) * 0.8, g * g, g


def test_data_sets_give_the_mean_indicator_of_n_samples():
    """Eq. (5): with edge_d the plain indicator of a replica is the mean of the engine's plain indicators on its
    disjoint data sets of n = delta edge_d consecutive paths (a plain NumPy mean over slices here), the left edge
    likewise, and the clipped indicator is that of all its paths; the replicas' mean +- s.e. follows.  The plain
    law of all paths (its own, far lower, minimum) is several s.e. away."""
    from thresholds.catalog import get_activation
    from thresholds.hessian import ENGINES, spectra_of_law
    from thresholds.laws import FirstPhaseLaw, ReplicaLaw
    act = get_activation("quad")
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=2 * 40_000, replicas=2)
    N, n = 40_000, 400   # edge_d = 25: n = 16 x 25, 100 data sets per replica, of which MAX_DATA_SETS = 16 are used
    reps = [_pr_sample(N, seed) for seed in (0, 1)]
    law = FirstPhaseLaw({10: [ReplicaLaw(u, y, g, np.full(N, 1 / N)) for u, y, g in reps]})
    sp = spectra_of_law(setup, law, outliers="none", edge_d=25)[10]
    one = ENGINES["scalar"]
    per_ind, per_left, per_clip, all_sets = [], [], [], []
    for u, y, g in reps:
        sets = [one(act, setup, 16.0, u[k:k + n], y[k:k + n], g[k:k + n], np.full(n, 1 / n), False)
                for k in range(0, 16 * n, n)]
        all_sets += [s.indicator for s in sets]
        per_ind.append(np.mean([s.indicator for s in sets]))
        per_left.append(np.mean([s.left_edge for s in sets]))
        per_clip.append(one(act, setup, 16.0, u, y, g, np.full(N, 1 / N), False).indicator_clipped)
    assert sp.negative_indicator == pytest.approx(np.mean(per_ind), rel=1e-12)
    assert sp.negative_indicator_err == pytest.approx(np.std(per_ind, ddof=1) / np.sqrt(2), rel=1e-9)
    assert sp.left_edge == pytest.approx(np.mean(per_left), rel=1e-12)
    assert sp.negative_indicator_clipped == pytest.approx(np.mean(per_clip), rel=1e-12)
    assert "the mean over data sets of n = 400 paths (16 per replica" in sp.notes[-1]
    plain = spectra_of_law(setup, law, outliers="none")[10]
    se = np.std(all_sets, ddof=1) / np.sqrt(len(all_sets))
    # 3 s.e. of the 32 data sets (MAX_DATA_SETS per replica; one data set's indicator has sd 1.6 at n = 400):
    # the difference is 1.05, 3.7 s.e. (10 s.e. held with all 100 data sets per replica, before the cap)
    assert abs(plain.negative_indicator - sp.negative_indicator) > 3 * se


def test_data_set_beyond_the_paths_is_the_plain_law():
    """A data set of more samples than the replica has paths is all of them: the plain indicator, with a note."""
    from thresholds.laws import FirstPhaseLaw, ReplicaLaw
    from thresholds.hessian import spectra_of_law
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=2000, replicas=2)
    law = FirstPhaseLaw({10: [ReplicaLaw(*_pr_sample(1000, s), np.full(1000, 1e-3)) for s in (0, 1)]})
    plain = spectra_of_law(setup, law, outliers="none")[10]
    far = spectra_of_law(setup, law, outliers="none", edge_d=10**6)[10]
    near = spectra_of_law(setup, law, outliers="none", edge_d=10)[10]
    assert far.negative_indicator == pytest.approx(plain.negative_indicator, rel=1e-12)
    assert "fewer than the n = 16000000 samples" in far.notes[-1]
    assert abs(near.negative_indicator - plain.negative_indicator) > 0.1 and "fewer" not in near.notes[-1]
    assert "n = 160 paths (6 per replica" in near.notes[-1]


def test_data_sets_keep_the_outliers_of_the_first_and_refuse_the_wide_limit():
    """With outliers located (the final step), those of a replica are its first data set's; the m -> inf sectors
    run on a finite-d law and refuse data sets (its tail is that of its own samples)."""
    from thresholds.catalog import get_activation
    from thresholds.errors import UnsupportedError
    from thresholds.hessian import ENGINES, spectra_of_law
    from thresholds.laws import FirstPhaseLaw, ReplicaLaw
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=8000, replicas=2)
    reps = [_pr_sample(4000, s) for s in (0, 1)]
    law = FirstPhaseLaw({10: [ReplicaLaw(u, y, g, np.full(4000, 1 / 4000)) for u, y, g in reps]})
    sp = spectra_of_law(setup, law, outliers="final", edge_d=100)[10]
    first = [ENGINES["scalar"](get_activation("quad"), setup, 16.0, u[:1600], y[:1600], g[:1600],
                               np.full(1600, 1 / 1600), True) for u, y, g in reps]
    for side in ("left", "right"):
        mine = [o for o in sp.outliers if o["side"] == side]
        theirs = [min((o.z for o in f.outliers if o.side == side), default=None) if side == "left" else
                  max((o.z for o in f.outliers if o.side == side), default=None) for f in first]
        theirs = [z for z in theirs if z is not None]
        assert len(mine) == (1 if theirs else 0)
        if theirs:
            assert mine[0]["z"] == pytest.approx(np.mean(theirs), rel=1e-12)
    with pytest.raises(UnsupportedError, match="data sets"):
        spectra_of_law(DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=8000, replicas=2, m=2), law,
                       mean_field=True, edge_d=100)


def test_median_unbiased_cut_is_numpys_type_8_quantile():
    # validation.tail_edge's second estimator of the eq. (5) cut against numpy's "median_unbiased" quantile
    # (Hyndman & Fan type 8), from the tail (a rank below the minimum) to the middle of the sample
    from validation.tail_edge import _median_unbiased_cut
    rng = np.random.default_rng(0)
    for K, q in [(1000, 3e-3), (48_000, 6.3e-5), (100, 0.2), (50, 1e-3)]:
        G = rng.normal(size=K)
        cut = _median_unbiased_cut(G, q)
        assert cut.min() == pytest.approx(np.quantile(G, q, method="median_unbiased"), abs=1e-12)
        assert np.array_equal(cut, np.maximum(G, cut.min()))


def test_the_cut_records_weighted_route_is_the_scalar_engines():
    # validation.tail_edge composes the plain indicator from the engine's pieces so that both cut estimators share
    # one route; with the weighted quantile at q = 0 (no cut) it is the scalar engine's plain indicator (no sphere shift)
    from thresholds.catalog import get_activation
    from thresholds.hessian import ENGINES
    from validation.tail_edge import _cut_indicator
    setup = DMFTSetup("quad", "phase_retrieval", 16.0, 0.05, 10, paths=1000, replicas=2)
    u, y, g = _pr_sample(20_000)
    engine = ENGINES["scalar"](get_activation("quad"), setup, 16.0, u, y, g, np.full(u.size, 1 / u.size), False).indicator
    assert _cut_indicator(setup, u, y, g, 0.0, "weighted") == pytest.approx(engine, rel=1e-12)

def test_data_sets_record_pairs_the_replicas():
    """validation.data_sets_check's summary: per replica the cut against the mean over its data sets, paired, and the
    seeds at one delta pooled (plain NumPy means and s.e. here)."""
    from validation.data_sets_check import summary
    rng = np.random.default_rng(2)

    def line(seed):
        reps = [{"cut": float(rng.normal()), "sets": rng.normal(size=4).tolist(), "shuffled": rng.normal(size=4).tolist()}
                for _ in range(5)]
        return {"activation": "quad", "eta": 0.05, "d": 1000, "delta": 11.0, "replicas": 5, "seed": seed,
                "steps": {"400": reps}}

    rows = [line(0), line(1)]
    text = summary(rows)
    diff = np.array([p["cut"] - np.mean(p["sets"]) for r in rows for p in r["steps"]["400"]])
    pooled = [s for s in text.splitlines() if "seeds pooled (10 replicas)" in s]
    assert len(pooled) == 1
    assert f"cut - sets {diff.mean():+.3f} +- {diff.std(ddof=1) / np.sqrt(10):.3f}" in pooled[0]


def test_data_sets_at_width_two_are_the_matrix_engines_means():
    """Eq. (5) at m = 2: the plain indicator over data sets is the mean of the matrix engine's on each data set."""
    from thresholds.catalog import get_activation
    from thresholds.hessian import ENGINES, spectra_of_law
    from thresholds.laws import FirstPhaseLaw, ReplicaLaw
    setup = DMFTSetup("quad", "phase_retrieval", 8.0, 0.05, 10, paths=2 * 1600, replicas=2, m=2)
    rng = np.random.default_rng(4)
    reps = []
    for _ in range(2):
        g = rng.standard_normal(1600)
        reps.append((rng.standard_normal((1600, 2)) * 0.8, g * g, g))
    law = FirstPhaseLaw({10: [ReplicaLaw(u, y, g, np.full(1600, 1 / 1600)) for u, y, g in reps]})
    sp = spectra_of_law(setup, law, outliers="none", edge_d=100)[10]   # n = 800: 2 data sets per replica
    one = ENGINES["matrix"]
    w = np.full(800, 1 / 1600)   # the data set's weights as eq. (5) renormalises them (the last bit moves the fold)
    per = [np.mean([one(get_activation("quad"), setup, 8.0, u[k:k + 800], y[k:k + 800], g[k:k + 800],
                        w / w.sum(), False).indicator for k in (0, 800)]) for u, y, g in reps]
    assert np.isfinite(sp.negative_indicator) and sp.negative_indicator == pytest.approx(np.mean(per), rel=1e-10)
    assert sp.indicator_replicas == pytest.approx(per, rel=1e-10)

"""Speed benchmarks of the foundation issue (pytest-benchmark, not timed unit tests).

Goals on the 2-core CI machine:
* single-index delta_alg to 12 digits (phase retrieval): under 2 s;
* two-index delta_alg (y = z1 z2): under 30 s.

Run:  python -m pytest validation/bench_foundation.py --benchmark-only -n 0 -p no:cacheprovider
"""

from thresholds.alg import delta_alg


def test_single_index_phase_retrieval(benchmark):
    res = benchmark.pedantic(delta_alg, args=("phase_retrieval",), kwargs={"dps": 20},
                             rounds=3, iterations=1)
    assert abs(res.delta_alg - 0.5) < 1e-12 and res.error < 1e-12


def test_single_index_abs(benchmark):
    res = benchmark.pedantic(delta_alg, args=("abs",), kwargs={"dps": 20}, rounds=3, iterations=1)
    assert abs(res.delta_alg - 0.5) < 1e-12


def test_two_index_product(benchmark):
    res = benchmark.pedantic(delta_alg, args=("product",), rounds=1, iterations=1)
    assert res.error < 1e-6


def test_two_index_mixed(benchmark):
    res = benchmark.pedantic(delta_alg, args=("mixed",), rounds=1, iterations=1)
    assert abs(res.delta_alg - 0.5) < 1e-6


# --- spectral engine goals: outlier + overlap at a delta to 8 digits under 5 s;
#     delta_T of a single-index link under 20 s
def test_spectral_outlier_at_delta(benchmark):
    from thresholds.spectral import spectral
    res = benchmark.pedantic(spectral, args=("phase_retrieval", "Min(y, 3)", 2.0), rounds=1, iterations=1)
    (out,) = res.outliers
    assert out["z_error"] < 1e-8 * out["z"] and out["overlap2_error"] < 1e-8


def test_spectral_threshold_single_index(benchmark):
    from thresholds.spectral import spectral
    res = benchmark.pedantic(spectral, args=("phase_retrieval", "optimal"), rounds=1, iterations=1)
    assert abs(res.delta_T.value - 0.5) < 1e-8

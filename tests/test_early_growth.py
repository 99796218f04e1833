"""validation.early_growth: its NumPy GD against validation.simulate on the same draws, and its variants."""

import numpy as np
import pytest

from validation.early_growth import numpy_gd, quantiles
from validation.simulate import GDSetup, run_gd


def test_numpy_gd_is_validation_simulate_on_the_same_draws():
    d, delta, seed = 40, 5.0, 3
    mine = numpy_gd(d, delta, seed, steps=100)
    res = run_gd(GDSetup(activation="quad", link="phase_retrieval", delta=delta, d=d, eta=0.05, steps=100,
                         complement=False, seed=seed, test_loss=False))
    theirs = (res.hard_overlap / res.norm2)[::25]
    assert len(mine) == 5
    np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-15)


def test_variants_keep_the_hard_start_and_change_what_they_say():
    d, delta, seed = 30, 4.0, 1
    plain, rownorm, fixed = (numpy_gd(d, delta, seed, v, steps=25) for v in ("plain", "rownorm", "fixed_norm0"))
    assert plain[0] == rownorm[0]                 # rownorm changes X only
    assert plain[1] != rownorm[1]
    rng = np.random.default_rng(seed)             # the stream of numpy_gd: X, the test set, theta^0
    rng.standard_normal((int(delta * d), d))
    rng.standard_normal((5000, d))
    theta0 = rng.standard_normal(d) / np.sqrt(d)
    assert fixed[0] == pytest.approx(theta0[0] ** 2 / (theta0[0] ** 2 + 1.0))
    with pytest.raises(ValueError):
        numpy_gd(d, delta, seed, "sphere")


def test_quantiles_of_eq_1():
    hf = np.full(100, 1e-2)
    q10, q50, q90, se = quantiles(hf, 200)
    assert (q10, q50, q90) == pytest.approx((np.log10(2.0),) * 3)
    assert se == pytest.approx(0.0)

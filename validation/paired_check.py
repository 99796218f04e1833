"""The two GD simulators on the same data: the numba kernel (validation.threshold.trial) and a plain
NumPy loop (validation.tangent_check.gradient), quad / phase retrieval, eta = 0.05, m = 1.

For each seed, run_gd's data and initialization are redrawn in its documented order (training X, test
X, theta_0) and the NumPy loop runs the same horizon on them; the script prints both final hard
fractions and counts the trials on which the success decisions agree.

Run:  python -m validation.paired_check D DELTA TRIALS      (e.g. 200 5 30)
"""
import math, numpy as np, sys
from thresholds.catalog import get_activation
from validation.threshold import trial, horizon
from validation.tangent_check import gradient
d, delta, eta = int(sys.argv[1]), float(sys.argv[2]), 0.05
fns = tuple(get_activation("quad").numpy(k) for k in range(3))
T = horizon(d, eta); n = int(round(delta * d))
agree = 0; sn = sp = 0
for seed in range(int(sys.argv[3])):
    cos2, run = trial("quad", "phase_retrieval", delta, d, eta, T, seed)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)); y = X[:, 0] ** 2
    rng.standard_normal((1000, d))
    th = rng.standard_normal((d, 1)) / math.sqrt(d)
    assert np.array_equal(X, run.data[0])
    for t in range(T):
        th = th + eta * gradient(th, X, y, fns)
    fr = th[0, 0] ** 2 / np.sum(th ** 2)
    sn += cos2 > 0.5; sp += fr > 0.5; agree += (cos2 > 0.5) == (fr > 0.5)
    print(seed, round(cos2, 4), round(float(fr), 4), flush=True)
print(f"d = {d}, delta = {delta}: numba {sn}, numpy {sp}, same decision {agree}")

"""Speed benchmark of the forced finite-d prediction (thresholds.forced.predict; pytest-benchmark, not a timed
test).

Goal (finite-d issue): delta_1/2(d) for one setup and one d from an empty cache in under 3 minutes on the
2-core machine, each extra d in under 20 s.  Measured here: quad / phase retrieval, eta 0.05, at the 600-step
horizon of validation/reports/planted, 40 trials per delta, first d = 400 alone from an empty cache, then
d = 800 on the same cache (a further d needs trials of its own: the initial overlap and the forcing scale with
d, so no trial is shared between two d).

Measured (validation/reports/planted section 6c):
- before the Dask spread and the skipped population risk (one core, a test run on the other): 1023 s for d = 400
  from an empty cache (4 deltas x 40 trials, iid overlaps; 5.34 [5.18, 5.49] against GD 5.40 +- 0.10), 983 s
  more for d = 800 (5.63 [5.50, 5.76] against 5.63 +- 0.10);
- now (2 worker processes on the 2 cores, nothing else running; stratified overlaps, paired s.e.): 372 s for
  d = 400 (5.07 [4.90, 5.24]), 361 s more for d = 800 (5.49 [5.33, 5.64] against 5.63 +- 0.10).  The goals are
  missed by about 2x and 18x: a further d needs trials of its own;
- now (no quadrature test loss in planted runs, compact trial cache, paths per trial max(n, 2500 m), eq. (4) of
  thresholds.forced): 32 s for d = 400 (5.82 [5.63, 6.02] against GD 5.40 +- 0.10), 35 s more for d = 800
  (5.92 [5.75, 6.09] against 5.63 +- 0.10).  The first goal is met; the second is missed by 1.75x;
- now (the sources DMFT builds u from one product on combined source rows and skips the second Gram-Schmidt pass
  where no column opens a source, outputs equal to 1e-13; a trial at d = 800 0.27 s -> 0.24 s): 21 s for d = 400,
  23 s more for d = 800, the same crossings.  The second goal is missed by 1.15x: 160 trials of about 0.25 s on two
  cores are 20 s before any overhead; a further d needs trials of its own;
- now (C and Cpsi of a sources run formed once after the loop; the truncated basis's no-source test from the
  projection coefficients, so that such a step reads the past sources once; the signal gradient and the hard
  forcing from one product; outputs equal to 1e-13; a trial at d = 800 0.21 s -> 0.14 s alone on a core): 15 s
  for d = 400, **17 s more for d = 800** (goal 20 s: met), the same crossings (5.821 [5.625, 6.018], 5.922
  [5.751, 6.094]);
- now (the sequential design of thresholds.forced eq. (2p): 10 trials per delta in the search and at the ends, 40
  at the two around the crossing; Dask workers without MALLOC_TRIM_THRESHOLD_): 15 s for d = 400 (5.838 [5.642,
  6.033]), 16 s more for d = 800 (5.700 [5.526, 5.873] against GD 5.63 +- 0.10).  At m = 1 a trial is too short for
  either change to show: the time is the cluster's start and the deltas' sequence;
- since thresholds.forced eq. (4e) (m = 1: max(n, 4000 delta) paths, 20000 at delta 5 against 2500): not re-run; one
  trial at d = 200, delta 5, to the horizon, alone on a core: 0.61 s against 0.55 s with 2500 paths.

The trials of a delta run on BENCH_WORKERS Dask processes (default 2, one per core; 0: in this process),
as ``thresholds nn --dims`` runs them with ``--workers auto``.

Run:  python -m pytest validation/bench_forced.py --benchmark-only -n 0 -p no:cacheprovider -s [-k width, BENCH_M=4]
"""

import os
import time

from thresholds import cache
from thresholds.forced import predict
from thresholds.problem import Problem
from validation.sweep import task_map


def test_forced_prediction_cold_then_one_more_d(benchmark):
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=600)
    lines = []

    def log(text):  # every delta, as its trials end
        lines.append(text)
        print(text, flush=True)

    workers = int(os.environ.get("BENCH_WORKERS", "2"))
    with cache.empty():
        t0 = time.time()   # the cluster's start and the workers' compilation count in the cold time
        with task_map(workers) as map_trials:
            one = predict(problem, [400], start=5.0, log=log, map_trials=map_trials)
            cold = time.time() - t0
            t0 = time.time()
            two = predict(problem, [400, 800], start=5.0, log=log, map_trials=map_trials)
            more = time.time() - t0
    benchmark.pedantic(lambda: None, rounds=1)
    fmt = (lambda c: f"d = {c.d}: {c.value:.3f} [{c.low:.3f}, {c.high:.3f}]" if c.found else f"d = {c.d}: {c.note}")
    print(f"\n{workers} worker process(es); empty cache, d = 400: {cold:.0f} s ({len(one.points)} deltas), "
          f"{fmt(one.crossings[0])}")
    print(f"then d = 400, 800: {more:.0f} s more: " + "; ".join(fmt(c) for c in two.crossings))
    assert one.crossings[0].found


def test_forced_width_prediction_cold(benchmark):
    """Goal (width issue): one width-m prediction for m <= 8 in under 5 minutes from an empty cache.  quad / phase
    retrieval, eta 0.05, 600 steps, d = 200, 40 trials per delta, width BENCH_M (default 2), from delta 3.5.

    Measured (2 worker processes, the machine otherwise idle): m = 2 (5000 paths per trial, eq. (4)) in 182 s,
    3.34 [3.25, 3.42] against GD 3.24 +- 0.07 (deltas 2.647 (2/40), 3.043 (13), 3.5 (25), 4.025 (36)); 152 s with
    the faster sources step (the same crossing); 125 s with C and Cpsi formed after the loop (the same crossing).  Not
    measured at m = 4 and 8: a trial's cost is O(N r T) with r, the sources opened, growing with m and N = max(n,
    2500 m, 1250 m^2) paths (eq. (4); single trials on a core: about 13 s at m = 4 and 20000 paths, 78 s at m = 8 and
    80000), so 160 trials on two cores take roughly 17 minutes and 1.7 hours there.  With eq. (4b) (m >= 8: source
    tolerance 1e-2, then 5000 m paths) an m = 8 trial is 2.5x faster (97 s against 244 s back to back on a loaded
    machine), about 40 minutes per prediction; m = 16 (80k paths, r about 290 sources): 410 s per trial with six jobs
    sharing the two cores.  The compact whitening (dmft eq. (6b), residuals only for the columns that can open a
    source) makes a trial 1.45x (m = 4) to 1.7x (m = 8) faster: an m = 8 prediction estimated at 24 minutes, about
    5x over the goal; m = 16 trials about 120 s with three jobs on the two cores.  With float32 path arrays
    (thresholds.forced eq. (4c); 1.5-1.7x per trial on one core), measured at m = 4 (BENCH_M=4, 2 worker processes,
    the machine otherwise idle): 926 s from an empty cache, 5 deltas x 40 trials (3.5: 33/40, 3.043: 20/40, 2.647:
    3/40, 2.301: 0/40, 4.025: 40/40), 3.105 [3.046, 3.163] against GD 2.87 +- 0.04 (the committed stratified forced
    crossing, 3.03 +- 0.09, is also above GD); about 9 s per trial per core with two trials sharing the memory bus.
    The goal is missed by about 3x at m = 4.  That speed was Dask's: its workers ran with MALLOC_TRIM_THRESHOLD_, which
    fixes glibc's mmap threshold, and every per-step temporary faulted its pages in anew (36x the page faults, 4x the
    system time of a plain process).  Spawned without it (validation.sweep.worker_environ), on another machine of the
    same kind: the same 200 trials and crossing in 935 s before, 562 s after (BENCH_PILOT=40, the fixed design).  With
    the sequential design (thresholds.forced eq. (2p), 10 trials per delta in the search and at the ends, 40 at the two
    around the crossing): m = 4 in 325 s (110 trials; 3.5: 8/10 then 33/40, 3.043: 5/10 then 20/40, 2.647: 1/10,
    2.301: 0/10, 4.025: 10/10), 3.084 [3.013, 3.155]; m = 8 (BENCH_M=8, 40k paths at 1e-2, eq. (4b) then, about 11 s per trial with two at once)
    in 667 s (100 trials; 3.5: 8/10 then 32/40, 3.043: 2/10 then 12/40, 2.647: 0/10, 4.025: 10/10), 3.222 [3.166,
    3.279] against GD 2.99.  The goal (300 s) is missed by 8% at m = 4 and 2.2x at m = 8.  That m = 8 crossing lies
    above the one with 80k paths, 3.04, and eq. (4b) is now 10000 m paths at 1e-2 (80k at m = 8, about 23 s per trial
    with two at once): measured, 1236 s (100 trials; 3.5: 8/10 then 37/40, 3.043: 2/10 then 15/40, 2.647: 0/10, 4.025:
    10/10), 3.125 [3.069, 3.182] against GD 2.99 +- 0.02 (+2.2 combined s.e.; 40k paths gave +3.3), 4.1x the goal.
    Since then the trials skip the two-time kernels C and Cpsi (dmft ``kernels``; 2-4% of one m = 4 trial alone on a
    core): m = 4 in **266 s** (the same 110 trials and crossing, 3.084 [3.013, 3.155]; goal met), more than those
    2-4% explain: two workers no longer allocate 2 x 46 MB per trial, and part may be the machine's variance.
    m = 8 again with those kernels skipped and Bt, Lpsi sized by the sources' room (dmft eq. (6b); BENCH_M=8, the
    machine otherwise idle): 1287 s (the same 100 trials, 3.5: 8/10 then 37/40, 3.043: 2/10 then 15/40, 2.647:
    0/10, 4.025: 10/10, and crossing 3.125 [3.069, 3.182]), 4.3x the goal: at m = 8 neither change shows, as the
    analysis below expects of a run bound by its passes over the path arrays.

    Where an m = 8 trial's time goes (quad, delta 3, d = 200, trial 0, 80k paths at 1e-2, float32; py-spy at 50 Hz,
    1366 samples, three processes on the two cores): the product u = Bt (eps / sqrt(delta) + psit / delta) of dmft
    eq. (1) 22%, the whitening's coefficients on the past sources 17%, the responses RB on the sources 19%, the
    candidates' residuals of the compact whitening (dmft eq. (6b)) 19%, the rest (kernel, bookkeeping) 23%.  The first
    three each read one (r x N) float32 array of source rows per step, r the sources open (mean 182 over the 600
    steps, 241 at the end): 105 GB per trial, read at 2.8 GB/s in that run (37.9 s).  They cannot share a pass: u
    comes before psi^t, the other two after it.  On the same machine and load, one such product ((8 x N) @ (N x 182)
    or (8 x 182) @ (182 x N), float32, one thread) runs at 4.2 GB/s and a plain sum over the array at 8.2 GB/s: the
    three passes alone take 25 s of the trial at the products' speed and 12.8 s at the sum's.  So a trial is
    memory-bound, and even at streaming speed an m = 8 prediction of 100 trials needs about 640 s on two cores: the
    300 s goal is out of reach of this algorithm at N = 80k paths (eq. (4b), set by the Monte Carlo noise of the
    response sums, width section 8d), whatever the code does per pass; it needs fewer paths (a lower-variance
    estimate of the response sums) or fewer trials.

    On an idle machine the passes are not memory-bound (:func:`test_source_products_whole_against_fused`, one
    thread, r = 200 sources, N = 80k paths, m = 8, float32): each of the three products takes 8.3 ms, about 31
    GFlop/s and 7.7 GB/s, against 4.1 ms for a plain sum over the same array (16 GB/s); the four products of one step
    fused over chunks of 512-8192 paths, each chunk's two arrays read once and left in cache for the other two
    products, take 33 ms, the same 8.3 ms per product.  So the products run at OpenBLAS's speed for these skinny
    shapes, not at the memory's, and fusing the passes gains nothing; three products per step are about 15 s of
    an m = 8 trial (600 steps), the floor of this algorithm at these N and r.

    Since a prediction's trial ends once its hard fraction passes 1/2 (thresholds.forced eq. (2e)): m = 8 in 1109 s
    (BENCH_M=8, the machine otherwise idle; the same 100 trials and outcomes, 3.125 [3.084, 3.167], the interval
    of thresholds.crossing eq. (6)), 3.7x the goal.  On the same machine, one trial alone on a core (delta 3.5,
    trials 0 and 1 of 40 strata, run side by side): 17.3 s ended at step 370 against 25.0 s to the horizon, 11.0 s
    ended at step 221 against 24.8 s.  62 of the 100 trials escape, most of them in the refinement at 3.5.
    Dropping the two end deltas of the search (20 of the 100 trials) was replayed on the committed fixed-design
    records (23 (file, d) pairs whose pilot brackets 1/2 next to the fixed design's crossing, the refinement on
    the bracket alone against the bracket and one delta beyond each side): 79% of the trials, but 3 of the 23 end
    with no crossing (their full rates at the bracket no longer straddle 1/2), against 1 with the ends; the ends
    stay.

    Fewer paths through a lower-variance estimate of the response sums, one control variate tried: sources drawn
    orthogonal to the whitened psi paths so far (thresholds.dmft eq. (6g)).  It halves the d = inf law's bias at
    10k-20k paths, but in the forced trials at 40k paths it adds +0.009 +- 0.005 to the final hard fraction against
    the 0.041 that 40k lacks (16 escapes of 40 either way, 24 at 80k; width section 8g), so the 80k paths of eq. (4b)
    stay and the m = 8 prediction is not made faster by it (thresholds.forced eq. (4d))."""
    m = int(os.environ.get("BENCH_M", "2"))
    pilot = int(os.environ["BENCH_PILOT"]) if os.environ.get("BENCH_PILOT") else None   # None: eq. (2p)'s default
    problem = Problem("quad", "phase_retrieval", eta=0.05, steps=600, m=m)
    workers = int(os.environ.get("BENCH_WORKERS", "2"))
    with cache.empty():
        t0 = time.time()
        with task_map(workers) as map_trials:
            pred = predict(problem, [200], start=3.5, log=lambda text: print(text, flush=True), map_trials=map_trials,
                           pilot=pilot)
        cold = time.time() - t0
    benchmark.pedantic(lambda: None, rounds=1)
    (c,) = pred.crossings
    print(f"\nm = {m}, {workers} worker process(es), pilot {pred.pilot}, empty cache, d = 200: {cold:.0f} s "
          f"({len(pred.points)} deltas, {sum(p.trials for p in pred.points)} trials), "
          + (f"{c.value:.3f} [{c.low:.3f}, {c.high:.3f}]" if c.found else c.note))
    assert c.found


def test_source_products_whole_against_fused(benchmark):
    """The three source products of one sources-DMFT step (dmft eq. (1) and (6): u = Bt both, the whitening's
    coefficients on PsitT, the responses on epsT), whole arrays against a fused pass over chunks of paths in which
    u comes from epsT and PsitT while they are in cache; a plain sum over one array as the memory's bound.  One
    thread (OPENBLAS_NUM_THREADS=1 for the figures of the docstring above)."""
    import numpy as np
    rng = np.random.default_rng(0)
    N, r, m = int(os.environ.get("BENCH_PATHS", "80000")), 200, 8
    eps, psit = (rng.standard_normal((r, N)).astype(np.float32) for _ in range(2))
    both = eps / 2 + psit / 3
    Bt = rng.standard_normal((m, r)).astype(np.float32)
    w = rng.standard_normal((m, N)).astype(np.float32)

    def timed(f, k=10):
        f()
        t0 = time.perf_counter()
        for _ in range(k):
            f()
        return 1e3 * (time.perf_counter() - t0) / k

    def fused(chunk):
        coef, resp = np.zeros((m, r), np.float32), np.zeros((m, r), np.float32)
        for s in range(0, N, chunk):
            e, p = eps[:, s : s + chunk], psit[:, s : s + chunk]
            u = Bt @ e
            u += Bt @ p
            coef += u @ p.T
            resp += u @ e.T

    rows = {"u = Bt both": timed(lambda: Bt @ both), "coefficients w PsitT^T": timed(lambda: w @ psit.T),
            "responses epsT w^T": timed(lambda: eps @ w.T), "sum over one array": timed(both.sum)}
    rows.update({f"fused, chunks of {c} (four products)": timed(lambda c=c: fused(c)) for c in (512, 2048, 8192)})
    benchmark.pedantic(lambda: None, rounds=1)
    for name, ms in rows.items():
        print(f"{name}: {ms:.2f} ms")
    assert all(v > 0 for v in rows.values())

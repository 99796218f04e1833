"""Finite-d success of GD from the d = inf bulk and a finite-d hard coordinate: forced DMFT trials.

thresholds.planted predicts P(success) from two d = inf numbers: the spread s of the effective initial
overlap after the forced first steps (t* = 50), and the critical planted overlap q_c from which the
unforced d = inf dynamics escapes.  Its approximation "the forcing after t* is dropped" was measured small in
the linear regime (s grows by 6-7 % from t = 50 to 100), yet for gelu finite-d GD escapes from smaller
overlaps than q_c: in the growth check of validation/reports/planted (section 6) the outcome of GD at gelu,
delta 10, d = 400 is decided by its hard amplitude at step 25 (AUC 1.00 over 30 data sets) at an effective
overlap of 0.039-0.041, where the planted q_c is [0.077, 0.086]; at delta 12 runs escape from amplitudes far
below q_c (AUC 0.78).  Near q_c the d = inf trajectory creeps for hundreds of steps, and the sample forcing of
the hard gradient, of the same order d^{-1/2} as the initial overlap and drawn from the same samples at every
step, keeps pushing it.

This module keeps every part of one finite-d data set that acts on the hard coordinate and nothing else: a
trial is one run of the planted ``sources`` DMFT (the d = inf bulk, thresholds.dmft eq. (7)) with

    M_H(0) = rho0 xi / sqrt(d),   xi ~ N(0, 1)                 (GD's initial hard overlap)
    M_H(t+1) = M_H(t) + eta E[g_H psi^t] + eta f_t,   Cov(f_t, f_s) = E[g^2 psi^t psi^s] / n,  n = delta d   (1)

(thresholds.dmft eq. (7b), the forcing of n samples at every step, not only before t*), and it succeeds when
its hard fraction exceeds 1/2 at the horizon T, the success rule of ``thresholds validate``.  Then

    P(delta, d) = Pr[hard fraction at T > 1/2],                                                           (2)

estimated by the fraction of K independent trials (xi, forcing weights and paths drawn anew per trial; trial
k uses path seed k, forcing seed k and the k-th xi, the same k at every (delta, d): common random numbers
across the grid; neuron 1 has the same xi at every m), with its binomial standard error.  The crossing
delta_1/2(d) is the logistic fit of thresholds.crossing, as for GD.  Nothing is fitted to GD: the inputs are
the setup and d.

A trial's run ends at the first step whose hard fraction exceeds 1/2 (dmft eq. (7e)), and such a trial counts as a
success:

    success = [hard fraction > 1/2 at some step t <= T],                                                 (2e)

which is eq. (2)'s event wherever a trial's hard fraction, once above 1/2, stays there.  Over the 8187 trials of
the committed records (m = 1-16, validation/reports, every 25th step kept, run to the horizon), 3832 pass 1/2 at
a kept step and none ends below it (tests/test_forced.py checks every record); ending them there would skip 29% of
the records' steps (10-21% at m = 8, where the hard fraction grows slowly and crosses late).  :func:`predict`
runs its trials so; ``run_trial`` does when asked (``stop``), and validation.forced_trials keeps whole runs.

Stratified initial overlaps.  Trial k has the same xi at every (delta, d) (common random numbers), so the K
trials of every point share one sample of K initial overlaps, and the outcome depends strongly on |xi|: a sample
whose |xi| run large moves every rate of the grid, and the crossing, the same way.  By default (``strata`` = K)
the overlaps are stratified:

    |xi_k|^2 = F_m^{-1}((pi(k mod K) + U_k) / K),   xi_k / |xi_k| uniform on the sphere (a sign at m = 1),  (2s)

F_m the chi-square law of m degrees of freedom, pi a random permutation per block of K and U_k uniform, so
that each block of K trials is an exact stratified sample of the law of |xi| (the rate stays an unbiased
estimate of eq. (2), with no more variance than iid draws; the forcing and the paths are iid as before).
``strata`` = 0 gives iid draws (the stream of the records made before eq. (2s)).

Sequential design (:func:`predict`).  The logistic fit of the crossing learns little from a delta whose rate is
near 0 or 1 (a trial's information on the crossing is proportional to p (1 - p)), yet the fixed design gave every
delta of the search and the two end deltas the same K trials.  The prediction now runs in two stages:

    search and ends:  K_p = PILOT_FRACTION K trials (trials 0 .. K_p - 1) per delta;
    refinement:       K trials (0 .. K - 1) at the two grid deltas on either side of the crossing fitted to
                      all trials so far, repeated until the crossing lies between two such deltas,          (2p)

and, where the logistic fit of the counts then collapses (thresholds.crossing eq. (6): a curve so steep that
one rate lies strictly between 0 and 1; quad, m = 8, rho0 = 2, d = 400: 19 / 40 at delta 3.4 and 40 / 40 at 3.91),

    halving:          K trials at the geometric midpoint of the gap that brackets 1/2 (grid index k + 1/2),
                      at most HALVINGS times,                                                                 (2q)

(where a delta inside the gap has a rate of exactly 1/2, the gap spans two grid steps and each gets its midpoint:
quad, m = 8, rho0 = 0.5, d = 400, 0 / 10, 20 / 40, 40 / 40 at 2.783 / 3.2 / 3.68, read 3.23 +- 0.26 with the one
midpoint, 3.2 itself; 3.19 +- 0.04 with 8 / 40 and 34 / 40 at 2.984 and 3.432), and the crossing and its s.e. are those of :func:`thresholds.crossing.paired_crossing` on all trials (trial k
observed at the deltas where it ran; the bootstrap resamples trials with their outcomes there).  The first K_p
trials of a block are a random subset of its strata (eq. (2s)), so every rate stays an unbiased estimate of
eq. (2); the choice of the refined deltas depends on the pilot, which the bootstrap does not repeat.  On a stub
with per-trial thresholds c_k = 3.17 + 0.21 Logistic (iid, outcomes nested across the deltas as under common random
numbers; the spread of quad m = 4, d = 200), K = 40, start 3.5: K_p = 40 (the fixed design) gave RMSE 0.054 with
160 trials on average, K_p = 10 gave RMSE 0.054 with 107 (40 predictions each, coverage of two s.e. 0.95 for
both).  Replayed on 26 committed fixed-design records (validation.design_check, reports/planted/forced/design.md)
it runs 65% of their trials, and its crossing lies -0.06 s.e. from theirs on average (rms 0.40 s.e.) on the same
trials, its s.e. 0.98 of theirs (median).  The checked crossings of the reports come from fixed designs
(validation.forced_trials).

Width m > 1.  GD draws theta_j^0 with iid N(0, rho0^2 / d) entries, so the m hard overlaps start independent,
and one sample set forces all of them: the hard gradient of neuron j is (1/n) sum_i g_i psi_ij^t, whose
fluctuations are correlated across neurons through the common samples.  The trial is the planted DMFT of
width m (every neuron's hard overlap a signal coordinate, thresholds.dmft eq. (7)) with

    M_H,j(0) = rho0 xi_j / sqrt(d),   xi_j iid N(0, 1),   Cov(f_t^j, f_s^k) = E[g^2 psi_j^t psi_k^s] / n,   (1m)

the second from eq. (7b) with one weight per path shared by the m neurons; the hard fraction is
(1/m) sum_j |M_H,j|^2 / ((1/m) sum_j ||theta_j||^2), the fraction of ||Theta||_F^2 in the hard subspace that
``thresholds validate`` tests.  The mode structure that thresholds.modes builds by hand (symmetric and
antisymmetric growth, critical amplitudes per angle) is inside the run.  What the d = inf bulk drops at m > 1
besides the m = 1 approximations below: the O(d^{-1/2}) initial overlaps theta_j^T theta_k between neurons.

The bulk's own finite-d start (``gram``).  GD's neurons start with the Gram theta_j^0 . theta_k^0 =
rho0^2 W_jk / d, W ~ Wishart(d, I_m): norms and mutual overlaps off their d = inf values by O(d^{-1/2}), the
order of the hard overlaps.  With ``gram`` a trial's bulk starts from it (thresholds.dmft eq. (7c)),

    A(0) = chol(W / d),   W = Z^T Z,   Z ~ N(0, 1)^{(d-1) x m}   (the parts orthogonal to e_H)           (3)

drawn per trial from its own stream; the default (identity) is the d = inf start.

Approximations: the bulk is the d = inf DMFT (its O(d^{-1/2}) fluctuations are dropped, only the hard
coordinate is finite-d); the forcing is Gaussian with the covariance of eq. (1) (a sum of n independent
terms); the DMFT is the truncated source basis (thresholds.dmft eq. (6b)) on N >= n paths, with its Monte
Carlo error (the paths' own forcing is counted in eq. (1), dmft eq. (7b)).

Where the independent-terms covariance fails (measured, not yet corrected).  Training correlates the samples
at O(1/d), and summed over the n^2 pairs that enters the variance of a mean of n terms at the order of eq. (1)
itself.  With the hard overlaps held at 0 the correlations do not touch the hard gradient: GD's cumulative hard
forcing varies over data sets as eq. (1) says (40 data sets, 600 steps: 0.91-1.20 of it per neuron at m = 1, 4,
8, 16; validation.width_forcing).  Held at the overlaps the escape reaches (0.3 or 0.6 per neuron), quad's varies
less, and the more so the wider the network: per neuron after 600 steps 0.8-1.1 of eq. (1) at m = 1, delta 5.5
(within errors; 0.6-0.7 at delta 3.5), 0.41-0.45 at m = 4, 0.35-0.38 at m = 8, 0.27-0.35 at m = 16 (d = 200 and
800 alike; 0.23 at delta 7), and 0.02-0.07 for the neurons' common part at m = 8, 16; gelu at m = 16 0.82-0.93,
near eq. (1) (validation/reports/planted/width section 9b).  So for quad from m = 4 on the trials force the grown hard overlaps harder than GD does, which
spreads their outcomes (m = 16 from a planted start: 2.3x GD's standard deviation at d = 200) and is the first
candidate for their miss at m = 16, d = 200.  Where the forcing goes (width section 9c): per sample, the part that
depends on the hard latent alone keeps its independent-terms variance; the part that depends on the bulk fields
varies at 0.3-0.6 of it and leans against the first.  The signed mean over neurons, which spreads the hard part from
a planted start, is at 0.5-0.74 of eq. (1) for quad (m = 4-16) and at 0.60 for gelu (m = 16), although gelu's
per-neuron forcing is eq. (1)'s; gelu's m = 16 trials from a planted start spread 2.6x GD's at d = 200 (quad 2.4x)
with the same mean, and the d = inf law there is GD's at d = 3200 (eq. (4b) is not the gap).  GD pins the bulk's
scaling modes (each neuron's gradient along its own bulk direction: 2-6% of their independent-terms variance by step
600), but eq. (1) conditioned on them is not GD's forcing (per neuron right at q = 0.6 and half-way at 0.3; the
signed mean 2-4x too weak).  A model with GD's forcing propagates the joint finite-n fluctuation of the bulk's
order parameters and of the hard coordinate; not built.

Paths per trial.  By default

    N = max(n, N_1 m, N_2 m^2),   N_1 = PATHS_PER_NEURON = 2500,   N_2 = PATHS_PER_NEURON_PAIR = 1250,       (4)

at least the n samples (eq. (7b)), and enough paths for the d = inf bulk at width m.  The first term of the
width was set on escape counts (validation/reports/planted section 6e, 30 stratified trials per delta, the same
overlaps, escapes summed over the deltas of a setup): at N = n (no added forcing) and m = 1 the escapes match
those at 20k paths (260 against 266 of 570 trials over quad d = 400 / 1600, gelu d = 200 / 400, |z| d = 400;
every crossing within 1.8 combined s.e.), while at m = 2 and 4, d = 200 (N = n = 500-800) escape is suppressed
(28 against 47, 1 against 43); at N = 2500 m (m = 2: 5000; m = 4: 8000 measured) the counts are again those of
20k (57 against 47, 36 against 43, within 1.9 s.e. either way).  The second term comes from a finer measure, the
planted d = inf run's hard part against GD's from the same start (validation/reports/planted/width section 8c,
quad, delta 3.5, hard part 0.01 per neuron at t = 0): at m = 8 it depends on N, 0.676 / 0.695 / 0.717 / 0.731
at step 600 with 10k / 20k / 40k / 80k paths against GD's 0.733 +- 0.003 (d = 3200, equal to d = 800's), and
the forced trials at m = 8 with 2500 m = 20k paths miss GD's crossing by 4 s.e. in that direction; at m = 4,
20k paths are 0.009 +- 0.007 below 80k.  So N_2 m^2 gives m = 4 20k and m = 8 80k paths (m <= 2: eq. (4) is
N_1 m as before).  The 1/N dependence at m = 8 is the Monte Carlo noise of the response sums, not the
self-interaction of the truncated basis: 40k paths with the response noise of 10k (dmft eq. (6c)) give 10k's law,
and 160k paths give 80k's (width section 8d).  Cost per trial: one planted run, O(N r T) with r the
sources opened (about 50 at m = 1, 290 at m = 8), independent of d beyond N >= n (0.1-0.2 s for 600 steps at
m = 1 and 2500-5000 paths; 2.5 s at m = 2 and 5000; about 14 s at m = 4 and 20000, 78 s at m = 8 and 80000, one
core; since the compact whitening of dmft eq. (6b) forms residuals only for the columns that can open a source,
1.45x faster at m = 4 and 1.7x at m = 8, measured back to back on a loaded machine: 24.3 s -> 16.7 s at m = 4, 20k
paths, tol 1e-3; 62.8 s -> 37.4 s at m = 8, 40k paths, tol 1e-2; the same law to 1e-14).

Where eq. (4) is too few: m = 1.  The first term was set on escape counts pooled
over five setups at 30 trials per delta.  With 400 stratified trials per delta and 250-400 GD runs (quad, eta 0.05, 600
steps; validation/reports/planted section 6h) the crossing with eq. (4)'s paths lies 7.5% / 6.2% / 3.7% above GD's
at d = 200 / 400 / 800 (5.24 +- 0.06, 5.63 +- 0.06, 5.89 +- 0.04 against 4.88 +- 0.04, 5.30 +- 0.04, 5.68 +- 0.06:
+5.1 / +4.7 / +3.0 combined s.e.).  There eq. (4) leaves the self-interaction of dmft eq. (6f) at

    s = delta (r + m) / N = 0.08-0.19 at d = 200-400 (N = 2500, r = 38-87 sources), 0.05-0.08 at d = 800 (N = n),

and it lowers escape: the same trials with 20000 paths (s <= 0.02) cross 0.58 +- 0.16 / 0.54 +- 0.15 / 0.28 +- 0.12
lower (paired over 114 / 128 / 150 trials), at 4.79 / 5.26 / 5.67, -0.7 / -0.4 / -0.0 s.e. from GD.  The initial
Gram (eq. (3)) changes nothing there (+0.000 +- 0.014 on 400 paired trials).  gelu (eta 0.1, d = 200, 150 trials,
delta 9-11) the same way: 10.62 +- 0.21 with eq. (4)'s paths against GD's 9.74 +- 0.28 (+2.5 s.e.), 20000 paths on
the same trials 1.02 +- 0.33 lower, 9.60 +- 0.28 (-0.4).  So at m = 1 the default is now

    N = max(n, N_s delta),   N_s = PATHS_PER_DELTA_SINGLE = 4000   (s = (r + 1) / 4000, about 0.02),          (4e)

the paths per replica of the d = inf law of thresholds.nn (dmft eq. (6f)): 20000 at delta 5, the checked count.
An m = 1 trial costs about the same (0.61 s against 0.55 s at d = 200, delta 5, one core: at m = 1 a step's fixed
costs dominate).  Width m >= 2 keeps eq. (4) (not measured this way; m = 2 has 5000 paths, s of order 0.05-0.1).
Records made before (4e) say so in their ``paths``.

Source tolerance at large width.  The response noise biases the law by roughly -c r / N (r the sources opened;
dmft eq. (6c)), and a trial costs O(N r T m), so fewer sources buy both.  The tolerance's own error grows with it:
quad, delta 3.5, planted 0.1, hard part at step 600 (validation/reports/planted/width section 8e; converged value
at 1e-3 0.7305, GD 0.729 at d = 3200), m = 8: r = 320 / 180 / 150 / 110 at eps = 1e-3 / 1e-2 / 3e-2 / 1e-1 and,
once converged in N, the last three are +0.003 / +0.015 / more than +0.03 off.  At 1e-2 the paths needed grow like m, not m^2: the hard part
at N = 5000 m is within 0.006 of its large-N value at m = 4, 8, 16 (0.837 / 0.733 / 0.667 against 0.842 / 0.734 /
0.667 at 80k-160k), and 2500 m is not (m = 4: 0.818, m = 8: 0.710, m = 16: 0.648).  The forced trials, whose
outcome near the crossing turns on small differences in the growth of the hard part, need more: m = 8, d = 200, quad,
delta 3 and 3.25, the 20 stratified trials of each delta in validation/reports/planted/forced/paths80000 (80k paths,
1e-3) run again with 5000 m = 40k paths at 1e-2 (records in forced/eq4b) and with 80k paths at 1e-2 (forced/
paths80000_tol1e-2), float32 (eq. (4c)):

    | paths, tolerance | escapes of 40 | final hard fraction minus 80k, 1e-3 | trials escaping in one run only |
    | 80k, 1e-3        | 24            | -                                   | -                               |
    | 80k, 1e-2        | 24            | +0.013 +- 0.006                     | 1 and 1                         |
    | 40k, 1e-2        | 16            | -0.028 +- 0.020                     | 3 (40k) and 11 (80k)            |

The tolerance changes nothing there; halving the paths does (40k against 80k at 1e-2: +0.041 +- 0.018 in favour
of 80k, 11 trials against 3, exact McNemar p = 0.06), and a prediction with 40k paths gave 3.22 +- 0.06
(validation/bench_forced.py) against 3.04 with 80k at 1e-3 and GD's 2.99.  (At d = 800, delta 3.5, 16 trials:
40k at 1e-2 -0.013 +- 0.019 against 80k at 1e-3, the same direction.)  So

    m >= WIDE_FROM = 8:   eps = WIDE_SOURCE_TOL = 1e-2,   N = max(n, PATHS_PER_NEURON_WIDE m),   10000 m      (4b)

(m = 8: 80k paths at r = 180 instead of r = 320, about 23 s per trial with two at once on the two cores; m = 16:
160k instead of eq. (4)'s 320k).  Records made with 5000 m paths (forced/eq4b, the m = 16 crossings of width
section 9) say so in their ``paths``.  At m = 16 (quad, d = 200, delta 3.25, 10 paired trials) 160k paths change the
final hard fraction by +0.003 +- 0.022 against 80k (4 against 2 escapes; width section 8f): the m = 16 miss is not
the path count.  m = 4 keeps eq. (4) at 1e-3: there eps = 1e-2 is +0.005 +- 0.002 off at 80k paths (m = 8: +0.003 +-
0.003), and the gain is smaller (r = 123 against 200).

Storage precision.  A trial's per-path source arrays are float32 (dmft eq. (6d)):

    path_dtype = PATH_DTYPE = "float32"   (the truncated basis, eps > 0; float64 with every source)      (4c)

A trial is memory-bound on those arrays, and single precision halves the bytes: the same trial at d = 200, 600
steps, float64 against float32, back to back on a loaded machine, is 1.51x faster at m = 2 (5000 paths), 1.69x at
m = 4 (20k) and 1.47x at m = 8 (40k paths at 1e-2), with the hard fraction within 6e-6 / 3.2e-4 / 1.1e-4 of the float64
run at every step (a trial's spread over data sets is about 0.1).  Over 20 paired trials (m = 4, delta 3.043, d = 200,
strata 40) the final hard fraction differs by at most 0.006 (mean +0.0006: a source that opens in one precision and
not the other changes the draw), and the same 6 of 20 escape.  Records made before (4c) are float64; a
record's ``path_dtype`` says which (``validation.forced_trials --path-dtype float64`` reproduces them).

Orthogonal sources (dmft eq. (6g)): measured, not a default.

    source_orth = False   (``run_trial(..., source_orth=True)``, ``validation.forced_trials --source-orth``)   (4d)

The m = 8 paths of eq. (4b) are the price of the response sums' noise (width section 8d), and eq. (6g) is a control
variate for it: each new source drawn orthogonal to the whitened psi paths so far.  It removes half to two thirds of
the d = inf law's bias at 10k-20k paths (hard part at step 600 0.724 / 0.721 against 0.701 / 0.710 without and 0.734
at 80k), but not the forced trials': m = 8, d = 200, delta 3 and 3.25, the 40 stratified trials of eq. (4b)'s check
(records in validation/reports/planted/forced/orth_paths20000 and orth_paths40000, width section 8g):

    | paths, sources      | escapes of 40 | final hard fraction minus 80k plain |
    | 80k plain           | 24            | -                                   |
    | 40k plain           | 16            | -0.041 +- 0.018                     |
    | 40k orthogonal      | 16            | -0.032 +- 0.018 (+0.009 +- 0.005 over 40k plain, same paths and forcing) |
    | 20k orthogonal      | 19            | -0.027 +- 0.019                     |

So eq. (4b)'s 80k paths stay, and with them the m = 8 prediction's cost (validation/bench_forced.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .dmft import DMFTSetup, solve_dmft
from .errors import ThresholdsError
from .planted import latent_refusal
from .problem import Problem

PATHS_PER_NEURON = 2500       # eq. (4): paths per trial max(n, PATHS_PER_NEURON m, PATHS_PER_NEURON_PAIR m^2)
PATHS_PER_NEURON_PAIR = 1250
PATHS_PER_DELTA_SINGLE = 4000   # eq. (4e): at m = 1, max(n, PATHS_PER_DELTA_SINGLE delta) (self-interaction (r + 1) / 4000)
PATHS_PER_NEURON_WIDE = 10000   # eq. (4b): paths per trial max(n, PATHS_PER_NEURON_WIDE m) at WIDE_SOURCE_TOL
SOURCE_TOL = 1e-3   # the truncated source basis (dmft eq. (6b)): no finite-paths bias at long horizons
WIDE_SOURCE_TOL = 1e-2   # eq. (4b): the source basis of trials at width m >= WIDE_FROM
WIDE_FROM = 8
XI_SEED = 1729      # the stream of the initial overlaps xi_k
PILOT_FRACTION = 0.25   # eq. (2p): trials per delta of the search, as a fraction of the trials per refined delta
HALVINGS = 2            # eq. (2q): at most this many deltas inside a collapsed fit's gap
SUCCESS_FRACTION = 0.5  # eq. (2): a trial succeeds when its hard fraction at the horizon exceeds this
PATH_DTYPE = "float32"   # eq. (4c): storage of a trial's per-path source arrays (dmft eq. (6d))


def path_dtype_for(source_tol: float, path_dtype: str = None) -> str:
    """``path_dtype`` when given, else eq. (4c): PATH_DTYPE on the truncated basis (``source_tol`` > 0), float64
    with every source."""
    if path_dtype is not None:
        return path_dtype
    return PATH_DTYPE if source_tol > 0 else "float64"


def source_tol_for(m: int, source_tol: float = None) -> float:
    """``source_tol`` when given, else the default source tolerance of a trial at width m (eq. (4b))."""
    if source_tol is not None:
        return source_tol
    return WIDE_SOURCE_TOL if int(m) >= WIDE_FROM else SOURCE_TOL


@dataclass
class ForcedTrial:
    """One trial of eq. (1): the initial overlap xi (units rho0 / sqrt(d)), the hard fraction per step of the
    run at ``steps`` (every ``every``-th step kept), and the outcome."""

    delta: float
    d: int
    trial: int
    steps: int
    xi: object          # a float at m = 1, a list of m floats otherwise (eq. (1m))
    hard_fraction: list
    every: int
    paths: int
    source_tol: float
    gram: bool = False  # the bulk started from the finite-d Gram of the neurons (eq. (3))
    strata: int = 0     # initial overlaps stratified in blocks of this many trials (eq. (2s)); 0: iid
    path_dtype: str = "float64"   # storage of the run's per-path arrays (eq. (4c))
    ended: int | None = None   # the step at which eq. (2e) ended the run (its hard fraction above 1/2); None: the horizon
    source_orth: bool = False   # the run's sources orthogonal to its whitened psi paths (dmft eq. (6g))

    @property
    def final(self) -> float:
        """The hard fraction at the horizon, or where eq. (2e) ended the run."""
        return float(self.hard_fraction[-1])

    @property
    def success(self) -> bool:
        return self.final > SUCCESS_FRACTION

    def to_json(self) -> dict:
        return {"delta": self.delta, "d": self.d, "trial": self.trial, "steps": self.steps, "xi": self.xi,
                "hard_fraction": self.hard_fraction, "every": self.every, "paths": self.paths,
                "source_tol": self.source_tol, "success": self.success, **({"gram": True} if self.gram else {}),
                **({"strata": self.strata} if self.strata else {}),
                **({"path_dtype": self.path_dtype} if self.path_dtype != "float64" else {}),
                **({"ended": self.ended} if self.ended is not None else {}),
                **({"source_orth": True} if self.source_orth else {})}


def refusal(problem: Problem) -> str:
    """Why forced trials do not cover ``problem`` ('' when they do): plain GD (no --sphere) and a link with one
    hard direction; any width m."""
    if problem.sphere:
        return "forced DMFT trials are derived for plain GD (no --sphere)"
    return latent_refusal(problem)


def initial_overlap(trial: int, m: int = 1, strata: int = 0):
    """xi_k of eq. (1): one N(0, 1) number per neuron for trial k (the same at every delta and d); a float at
    m = 1, a list of m floats otherwise.

    ``strata`` = 0: iid draws from the trial's own stream (neuron 1 of trial k has the same xi at every m).
    ``strata`` = K > 0: stratified in blocks of K trials (eq. (2s)): trial k lies in stratum j = pi_b(k mod K) of
    block b = k // K (pi_b a random permutation per block, so that the first trials of an interrupted block are
    a random subset of the strata), |xi|^2 = F_m^{-1}((j + U) / K) (F_m the chi-square law of m degrees of
    freedom, U uniform) along a uniform direction (a random sign at m = 1).  Each full block is then an exact
    stratified sample of the law of |xi|, so its success rate carries no luck of the initial overlaps' size."""
    rng = np.random.default_rng([XI_SEED, int(trial)] + ([int(strata), 2] if strata else []))
    xi = rng.standard_normal(int(m))
    if strata:
        from scipy.stats import chi2
        K, block = int(strata), int(trial) // int(strata)
        stratum = np.random.default_rng([XI_SEED, K, block, 3]).permutation(K)[int(trial) % K]
        u = (stratum + rng.uniform()) / K
        xi *= math.sqrt(chi2.ppf(u, int(m))) / max(float(np.linalg.norm(xi)), 1e-300)
    return float(xi[0]) if m == 1 else [float(v) for v in xi]


def initial_gram(trial: int, m: int, d: int) -> tuple:
    """The Gram matrix W / d of the neurons' parts orthogonal to the hard direction, W ~ Wishart(d - 1, I_m)
    (GD's theta_j^0 / rho0 have iid N(0, 1/d) entries), from the stream of trial ``trial`` (eq. (3))."""
    z = np.random.default_rng([XI_SEED, int(trial), 1]).standard_normal((int(d) - 1, int(m)))
    return tuple(float(v) for v in (z.T @ z / d).ravel())


def trial_setup(problem: Problem, delta: float, d: int, trial: int, *, paths: int = None,
                source_tol: float = None, gram: bool = False, strata: int = 0, path_dtype: str = None,
                source_orth: bool = False) -> DMFTSetup:
    """The planted, forced DMFT of trial ``trial`` at (delta, d) (eq. (1)), horizon ``problem.steps``; with
    ``gram`` its bulk starts from the finite-d Gram of the neurons (eq. (3)).  ``source_tol`` None: eq. (4b);
    ``path_dtype`` None: eq. (4c); ``source_orth``: dmft eq. (6g) (not a default: eq. (4d))."""
    why = refusal(problem)
    if why:
        raise ThresholdsError(why)
    if not (isinstance(d, int) and d >= 1):
        raise ThresholdsError(f"d must be a positive integer, got {d!r}")
    if not (isinstance(trial, int) and trial >= 0):
        raise ThresholdsError(f"a trial index must be an integer >= 0, got {trial!r}")
    n = float(delta) * d
    source_tol = source_tol_for(problem.m, source_tol)
    paths = paths_for(delta, d, paths, m=problem.m, source_tol=source_tol)
    if paths < n:
        raise ThresholdsError(f"a forced trial at n = delta d = {n:g} samples needs at least that many paths, "
                              f"got {paths}")
    xi = np.atleast_1d(initial_overlap(trial, problem.m, strata))
    q0 = problem.rho0 * xi / math.sqrt(d)    # eq. (1m): one overlap per neuron
    q0 = float(q0[0]) if problem.m == 1 else tuple(float(v) for v in q0)
    return DMFTSetup.from_problem(problem, delta, paths=int(paths), replicas=1, seed=int(trial), planted=q0,
                                  source_tol=source_tol, forcing_n=n, forcing_seed=int(trial),
                                  population_risk=False, path_dtype=path_dtype_for(source_tol, path_dtype),
                                  source_orth=bool(source_orth),
                                  initial_gram=initial_gram(trial, problem.m, d) if gram else ())


CURVES = ("hard_fraction", "hard_overlap", "norm2", "train_loss")   # what a trial keeps of its run, per step


def _valid_curves(hit, steps: int, stop_above: float | None = None) -> bool:
    """Whether a cache entry is a dict of the CURVES, finite arrays of steps + 1 floats, or with ``stop_above``
    of equal lengths up to steps + 1 whose hard fraction ends above it (a run ended by eq. (2e))."""
    if not (isinstance(hit, dict) and set(hit) == set(CURVES)
            and all(isinstance(v, np.ndarray) and v.ndim == 1 and np.all(np.isfinite(v)) for v in hit.values())):
        return False
    lengths = {v.shape[0] for v in hit.values()}
    if lengths == {steps + 1}:
        return True
    return (stop_above is not None and len(lengths) == 1 and 0 < lengths.pop() <= steps
            and hit["hard_fraction"][-1] > stop_above)


def trial_curves(setup: DMFTSetup, cache: bool = True, stop_above: float | None = None) -> dict:
    """The per-step CURVES of the forced run ``setup`` (arrays of steps + 1 floats; with ``stop_above``, eq. (2e),
    they end at the first step whose hard fraction exceeds it).  With ``cache`` they are read from / written to
    the disk cache (kind "forced", a few kB), never the run's DMFTResult: its C and Cpsi hold (T + 1)^2 m^2
    numbers each, 135 MB of JSON per trial at m = 4 and T = 600.  A run ended by eq. (2e) is stored under the
    setup's key plus ``stop_above``; a full run, under the setup's key, answers both.  An entry that is not a dict
    of finite arrays of the right length is a miss."""
    from . import cache as _cache
    key = setup.cache_key()
    ended_key = None if stop_above is None else {**key, "stop_above": float(stop_above)}
    if cache:
        hit = _cache.load("forced", key)
        if _valid_curves(hit, setup.steps):
            return hit
        if ended_key is not None:
            hit = _cache.load("forced", ended_key)
            if _valid_curves(hit, setup.steps, stop_above):
                return hit
    res = solve_dmft(setup, cache=False, kernels=False, stop_above=stop_above)   # the curves only, not C and Cpsi
    curves = {name: np.asarray(getattr(res, name), float) for name in CURVES}
    if cache:
        full = curves["hard_fraction"].shape[0] == setup.steps + 1
        _cache.store("forced", key if full else ended_key, curves)
    return curves


def run_trial(problem: Problem, delta: float, d: int, trial: int, *, paths: int = None,
              source_tol: float = None, every: int = 25, cache: bool = True, gram: bool = False,
              strata: int = 0, path_dtype: str = None, stop: bool = False, source_orth: bool = False) -> ForcedTrial:
    """Eq. (1) for one trial; its per-step curves are cached on disk unless ``cache`` is False
    (:func:`trial_curves`).  ``source_tol`` None: eq. (4b); ``path_dtype`` None: eq. (4c).  ``stop``: the run
    ends once its hard fraction exceeds 1/2 (eq. (2e)); the trial's curve then ends there (``ended``)."""
    setup = trial_setup(problem, delta, d, trial, paths=paths, source_tol=source_tol, gram=gram, strata=strata,
                        path_dtype=path_dtype, source_orth=source_orth)
    frac = trial_curves(setup, cache, SUCCESS_FRACTION if stop else None)["hard_fraction"]
    last = frac.shape[0] - 1
    keep = list(range(0, last + 1, every))
    if keep[-1] != last:
        keep.append(last)
    return ForcedTrial(float(delta), int(d), int(trial), int(setup.steps), initial_overlap(trial, problem.m, strata),
                       [float(frac[t]) for t in keep], int(every), int(setup.paths), float(setup.source_tol), bool(gram),
                       int(strata), setup.path_dtype, ended=last if last < setup.steps else None,
                       source_orth=setup.source_orth)


@dataclass
class ForcedPoint:
    """Eq. (2) at one (delta, d): successes out of trials."""

    delta: float
    d: int
    successes: int
    trials: int

    @property
    def rate(self) -> float:
        return self.successes / self.trials

    @property
    def se(self) -> float:
        p = self.rate
        return math.sqrt(max(p * (1 - p), 0.25 / self.trials) / self.trials)


def points(trials) -> list[ForcedPoint]:
    """Eq. (2) per (delta, d) from ForcedTrial records (or their JSON dicts), sorted by d then delta."""
    count = {}
    for tr in trials:
        rec = tr.to_json() if isinstance(tr, ForcedTrial) else tr
        key = (int(rec["d"]), float(rec["delta"]))
        k, n = count.get(key, (0, 0))
        count[key] = (k + bool(rec["success"]), n + 1)
    return [ForcedPoint(delta, d, k, n) for (d, delta), (k, n) in sorted(count.items())]


SCOPE = ("Forced DMFT trials (thresholds.forced): checked against GD at a fixed horizon of 600 steps. m = 1, "
         "stratified "
         "overlaps: gelu / phase retrieval (eta 0.1, d = 200-3200) within 0.9 s.e. and quad (eta 0.05, d = 200-3200) "
         "within 1.7 s.e., on both sides, quad / |z| (d = 200-1600) +0.6 to +1.4 s.e. (a 40-trial prediction, quad d = 400: -1.7 "
         "and +1.9 for two path draws; validation/reports/planted 6c-6e); at validate's own horizon quad d = 200-800 "
         "within 1.4 s.e. (6f). Paths per trial max(n, 2500 m, 1250 m^2) (eq. (4)): at m = 1 the escape counts of 20k "
         "paths (6e), but with 400 trials per delta quad m = 1 lies 7.5% / 6.2% / 3.7% above GD at d = 200 / 400 / 800 "
         "(+5.1 / +4.7 / +3.0 s.e.): eq. (4)'s paths leave a self-interaction delta (r + 1) / N of 0.05-0.19 (eq. (4e)), "
         "and the same trials with 20000 paths land on GD (-0.7 / -0.4 / -0.0 s.e.; gelu d = 200 +2.5 and -0.4; "
         "reports/planted 6h): at m = 1 the default is now max(n, 4000 delta) paths (eq. (4e)). m = 2, 4 at d = 200 "
         "(2500 m paths): within 2 s.e. but quad high (+1.8, +1.6 s.e.), gelu m = 2 low "
         "(-1.9), m = 4 +1.1 (reports/planted/width section 7). m = 8 with 2500 m = 20k paths misses (quad d = 200: 3.25 "
         "against GD 2.99, +4.3 s.e.; d = 800: 3.66 against 3.43, +4.2; gelu d = 200: 5.58 against 5.11, +2.1): the d = inf "
         "bulk at m = 8 is not converged there (width section 8c); with eq. (4)'s 80k paths quad gives 3.04 against "
         "2.99 (+0.7) at d = 200 and 3.52 against 3.43 (+1.5) at d = 800, gelu d = 200 5.30 against "
         "5.11 (+1.1). quad d = 800: m = 2 +0.1, m = 4 3.49 against 3.38, +1.6 (eq. (4)'s 20k paths). gelu d = 800: "
         "m = 2 7.72 against 7.60 (+0.4), m = 4 6.87 against 6.47 (+1.4), m = 8 6.68 against 6.50 (+0.8, 80k paths). "
         "At d = 800 7 of 8 checked points lie above "
         "GD; a candidate, untested as the cause: from a planted start at m = 8 GD's hard part is about 0.01 higher at d "
         "= 800 than at 3200, the forced trials' is not (0.682 +- 0.014 against 0.695 +- 0.004, width sections 8c, "
         "8d). From m = 8 on the default is eq. (4b) (source tolerance 1e-2, 10000 m paths): at m = 8, d = 200 (delta 3, "
         "3.25, 40 paired trials) 80k paths at 1e-2 give the escapes of 80k at 1e-3 (24 and 24), 5000 m = 40k paths "
         "fewer (16; a prediction with them 3.22 +- 0.06 against GD 2.99, 80k at 1e-3 3.04). "
         "m = 16 (5000 m paths) misses at d = 200: quad 3.30 +- 0.05 against GD 3.15 +- 0.03 (+2.9; 9 of 20 trials "
         "escape at delta 3.25 against 31 of 40 GD runs; 160k paths: +0.003 +- 0.022 in the final hard fraction of 10 "
         "of them), gelu 5.47 +- 0.12 against 5.33 +- 0.06 (+1.1; 3 / 11 / 17 of 20 at delta 5 / 5.5 / 6); at d = "
         "800 quad 3.68 +- 0.03 against 3.55 +- 0.02 (+3.0, 20 trials at two deltas) and gelu 6.90 +- 0.12 against "
         "6.76 +- 0.09 (+0.9; width section 9). "
         "The first candidate for the miss: at grown hard overlaps GD's hard forcing is weaker than the trials' "
         "(quad, 0.27-0.45 of it per neuron from m = 4 on; the neurons' signed mean, which spreads the hard part, "
         "0.5-0.74 for quad and 0.60 for gelu m = 16; width sections 9b, 9c): from a planted start the m = 16 trials "
         "spread 2.4x (quad) and 2.6x (gelu) GD's at d = 200 with GD's mean. "
         "Pooled over the 20 checked cells (quad and gelu, m = 1-16, d = 200 and 800): the trials' crossing lies "
         "3.2% +- 0.6% above GD's, 18 of 20 cells above; one common offset explains every cell (Cochran's Q p = "
         "0.79; quad m = 16 at d = 200 and 800 1.1 and 0.3 s.e. from it; width section 9e), its m = 1 cells from 30 "
         "trials per delta at eq. (4)'s paths, the self-interaction above. Others unchecked.")


@dataclass
class ForcedPrediction:
    """The crossing delta_1/2(d) of eq. (2) per d (thresholds.planted.FiniteDCrossing, its range the
    logistic fit's value -+ one standard error) and the points it rests on."""

    problem: Problem
    points: list        # ForcedPoint, by d then delta
    crossings: list     # FiniteDCrossing, by increasing d
    trials: int
    paths: int          # paths per trial as given; None: eq. (4) per delta
    source_tol: float
    seconds: float = 0.0
    scope: str = SCOPE
    strata: int = 0
    pilot: int = None   # trials per delta of the search (eq. (2p)); None: every delta has ``trials``

    def to_json(self) -> dict:
        return {"method": "forced DMFT trials (thresholds.forced, eqs. (1)-(2))", "horizon_steps": self.problem.steps,
                "trials": self.trials, "pilot": self.trials if self.pilot is None else self.pilot,
                "strata": self.strata,
                "paths": (self.paths if self.paths is not None
                          else f"max(n, {PATHS_PER_DELTA_SINGLE} delta)" if self.problem.m == 1
                          else f"max(n, {PATHS_PER_NEURON} m, {PATHS_PER_NEURON_PAIR} m^2)"),
                "source_tol": self.source_tol,
                "scope": self.scope,
                "seconds": self.seconds, "crossings": [c.to_json() for c in self.crossings],
                "points": [{"d": p.d, "delta": p.delta, "successes": p.successes, "trials": p.trials}
                           for p in self.points]}


def grid_delta(start: float, factor: float, k: int) -> float:
    """The k-th delta of the prediction's grid, start * factor^k to 4 significant digits (so that the trials
    of a delta are found again by a later call with the same start and factor)."""
    return float(f"{start * factor**k:.4g}")


def paths_for(delta: float, d: int, paths: int = None, per_sample: float = None, m: int = 1,
              source_tol: float = None) -> int:
    """``paths``; or ``per_sample`` paths per sample, ceil(per_sample delta d) (per_sample >= 1; at 1 the paths are
    the n samples and eq. (7b) adds no forcing); or by default eq. (4), max(n, PATHS_PER_NEURON m,
    PATHS_PER_NEURON_PAIR m^2), at m = 1 eq. (4e), max(n, PATHS_PER_DELTA_SINGLE delta), and at ``source_tol`` =
    WIDE_SOURCE_TOL eq. (4b), max(n, PATHS_PER_NEURON_WIDE m) (None: the default tolerance of width m)."""
    if per_sample is not None:
        if paths is not None:
            raise ThresholdsError("give a number of paths or paths per sample, not both")
        if not (isinstance(per_sample, (int, float)) and math.isfinite(per_sample) and per_sample >= 1):
            raise ThresholdsError(f"paths per sample must be a number >= 1, got {per_sample!r}")
        return int(math.ceil(per_sample * delta * d - 1e-9))
    if paths is not None:
        return int(paths)
    n = int(math.ceil(delta * d - 1e-9))
    if source_tol_for(m, source_tol) == WIDE_SOURCE_TOL:
        return max(PATHS_PER_NEURON_WIDE * int(m), n)
    if int(m) == 1:   # eq. (4e)
        return max(math.ceil(PATHS_PER_DELTA_SINGLE * delta - 1e-9), n)
    return max(PATHS_PER_NEURON * int(m), PATHS_PER_NEURON_PAIR * int(m) ** 2, n)


def trial_success(problem: Problem, source_tol: float, cache: bool, strata: int, job) -> bool:
    """Whether trial ``job`` = (delta, d, k, paths) escapes (a module-level function, so that a process pool or
    a Dask cluster can run it)."""
    delta, d, k, n_paths = job
    return run_trial(problem, delta, d, k, paths=n_paths, source_tol=source_tol, cache=cache, strata=strata,
                     stop=True).success   # eq. (2e)


def pilot_for(trials: int, pilot: int = None) -> int:
    """Trials per delta of eq. (2p)'s search: ``pilot`` when given (4 <= pilot <= trials), else
    max(4, PILOT_FRACTION trials)."""
    if pilot is None:
        return max(4, int(round(PILOT_FRACTION * trials)))   # <= trials: PILOT_FRACTION < 1, trials >= 4
    if not (isinstance(pilot, int) and 4 <= pilot <= trials):
        raise ThresholdsError(f"the pilot of a forced prediction needs 4 to {trials} trials per delta, got {pilot!r}")
    return pilot


def refine_at(deltas, sizes, c: float, trials: int) -> list[int]:
    """Eq. (2p)'s refinement step: the indices, among ``deltas`` (increasing, with ``sizes`` trials run), of the
    largest delta <= c and the smallest above it that have fewer than ``trials`` trials."""
    below = [i for i, x in enumerate(deltas) if x <= c]
    pair = ([below[-1]] if below else []) + ([len(below)] if len(below) < len(deltas) else [])
    return [i for i in pair if sizes[i] < trials]


def halving_at(ks, outcomes, anchor: float, factor: float) -> list:
    """Eq. (2q): the grid indices (fractional) of the geometric midpoints of the grid intervals inside the gap that
    brackets 1/2 where the logistic fit of the counts collapses (thresholds.crossing.collapsed_gap); [] where it
    resolves.  One interval as a rule; two where a delta inside the gap has a rate of exactly 1/2 (quad, m = 8,
    rho0 = 0.5, d = 400: 0/10, 20/40, 40/40 at 2.783 / 3.2 / 3.68), whose midpoint has its trials already.
    ``ks``: the grid indices run (increasing), ``outcomes`` the trials' outcomes at each."""
    from .crossing import collapsed_gap
    deltas = [grid_delta(anchor, factor, k) for k in ks]
    gap = collapsed_gap(deltas, [sum(o) for o in outcomes], [len(o) for o in outcomes])
    if gap is None:
        return []
    lo, hi = (deltas.index(x) for x in gap)   # positions in ks
    return [(ks[i] + ks[i + 1]) / 2 for i in range(lo, hi)]


def predict(problem: Problem, dims, *, trials: int = 40, start: float = 8.0, factor: float = 1.15,
            search_min: float = 0.5, search_max: float = 64.0, paths: int = None, source_tol: float = None,
            cache: bool = True, log=None, run=None, map_trials=None, strata: int = None,
            pilot: int = None) -> ForcedPrediction:
    """delta_1/2(d) of eq. (2) for each d, by the sequential design of eq. (2p).  On the grid start * factor^k,
    P is estimated from ``pilot`` trials at start, then one delta at a time toward 1/2 until the rates bracket
    it, and one more beyond each end of the bracket (the logistic fit then rests on at least four deltas); then
    the two deltas of the grid on either side of the fitted crossing get ``trials`` trials, again until the
    crossing lies between two such deltas.  ``pilot`` None: :func:`pilot_for`; ``pilot`` = ``trials``: every
    delta gets ``trials`` trials (the design before eq. (2p)).  Each d starts from the crossing of the
    previous one (the crossing rises with d).  A d whose rates do not reach 1/2 inside [search_min,
    search_max] gets a crossing that is not found, with a note.  ``run(delta, d, k, paths) -> bool`` replaces
    :func:`trial_success` (tests).  ``map_trials(fn, jobs) -> list`` runs the trials of one delta (in order of
    ``jobs``); default: one after the other here (validation.sweep.task_map spreads them over processes).
    The trials are independent and cached one by one, so the result does not depend on where they run; each
    ends once its hard fraction passes 1/2 (eq. (2e)).
    ``strata``: the initial overlaps of eq. (2s), by default stratified over the ``trials`` of a delta; 0: iid.
    ``source_tol`` None: eq. (4b)."""
    import time

    from .crossing import paired_crossing
    from .planted import FiniteDCrossing

    why = refusal(problem)
    if why:
        raise ThresholdsError(why)
    if not (isinstance(trials, int) and trials >= 4):
        raise ThresholdsError(f"a forced prediction needs at least 4 trials per delta, got {trials!r}")
    pilot = pilot_for(trials, pilot)
    if not (factor > 1 and search_min < start < search_max):
        raise ThresholdsError(f"the grid needs factor > 1 and search_min < start < search_max, got factor {factor}, "
                              f"start {start}, range ({search_min}, {search_max})")
    from functools import partial
    strata = trials if strata is None else int(strata)
    source_tol = source_tol_for(problem.m, source_tol)
    one = partial(trial_success, problem, source_tol, cache, strata) if run is None else (lambda job: run(*job))
    map_trials = map_trials or (lambda fn, jobs: [fn(job) for job in jobs])
    t0 = time.time()
    points_all, crossings = [], []
    anchor = float(start)
    for d in sorted(dims):
        outcome = {}   # grid index k -> outcomes of trials 0, 1, ... at its delta (common random numbers)

        def measure(k, upto):
            """Trials up to ``upto`` at the k-th delta; its rate, or None outside the search range."""
            delta = grid_delta(anchor, factor, k)
            if not search_min <= delta <= search_max:
                return None
            have = outcome.setdefault(k, [])
            if len(have) < upto:
                n_paths = paths_for(delta, d, paths, m=problem.m, source_tol=source_tol)
                have += [bool(w) for w in map_trials(one, [(delta, d, j, n_paths) for j in range(len(have), upto)])]
                if log:
                    log(f"d = {d}, delta = {delta:g}: {sum(have)}/{len(have)} escape")
            return sum(have) / len(have)

        def fit():
            ks = sorted(outcome)
            return ks, paired_crossing([grid_delta(anchor, factor, k) for k in ks], [outcome[k] for k in ks])

        if measure(0, pilot) is None:   # a previous d's crossing as the start, outside the search range
            crossings.append(FiniteDCrossing(d, math.nan, math.nan, math.nan, False,
                                             f"start {grid_delta(anchor, factor, 0):g} outside the search range"))
            continue
        step = 1 if measure(0, pilot) <= 0.5 else -1
        k = 0
        while True:   # toward 1/2 until a rate lies strictly on the other side of it
            k += step
            rate = measure(k, pilot)
            if rate is None or ((rate > 0.5) if step > 0 else (rate < 0.5)):
                break
        lo_k, hi_k = min(outcome), max(outcome)
        measure(lo_k - 1, pilot)
        measure(hi_k + 1, pilot)
        ks, (c, se) = fit()
        for _ in range(len(ks)):   # eq. (2p): full trials at the two deltas around the crossing
            todo = [] if c is None else refine_at([grid_delta(anchor, factor, k) for k in ks],
                                                   [len(outcome[k]) for k in ks], c, trials)
            if not todo:
                break
            for i in todo:
                measure(ks[i], trials)
            ks, (c, se) = fit()
        for _ in range(HALVINGS):   # eq. (2q): a collapsed fit gets full trials half a grid step inside its gap
            mids = [] if c is None else halving_at(ks, [outcome[k] for k in ks], anchor, factor)
            if not mids:
                break
            for k_mid in mids:   # inside a gap between two measured deltas, so inside the search range
                measure(k_mid, trials)
            ks, (c, se) = fit()
        deltas = [grid_delta(anchor, factor, k) for k in ks]
        points_all += [ForcedPoint(delta, d, sum(outcome[k]), len(outcome[k])) for delta, k in zip(deltas, ks)]
        if c is None:   # no rate strictly above 1/2, or none strictly below
            side = "above" if max(sum(outcome[k]) / len(outcome[k]) for k in ks) <= 0.5 else "below"
            crossings.append(FiniteDCrossing(d, math.nan, math.nan, math.nan, False,
                                             f"{side} the deltas computed ({deltas[0]:g} - {deltas[-1]:g})"))
            continue
        crossings.append(FiniteDCrossing(d, c, c - se, c + se, True))
        anchor = grid_delta(c, 1.0, 0)
    return ForcedPrediction(problem, points_all, crossings, trials, paths,
                            source_tol, time.time() - t0, strata=strata, pilot=pilot)

"""Discrete-time DMFT of the first phase of gradient descent (THEORY.md section 3).

Setup: f(x) = a sigma(theta^T x + b), square loss, theta^0 ~ N(0, rho0^2/d I),
GD theta^{t+1} = theta^t + eta (1/n) sum_i psi_i x_i - eta lambda_wd theta^t with
psi = (y - f) a sigma'(u + b) (mean-field step, m = 1), n = delta d.  Null case first
(targets with no easy direction: the trajectory stays orthogonal to Theta_*, so u is
independent of g given y); easy directions add a signal coordinate (below).

Sample side (one effective sample, paths p = 1..N with weights omega_p):
    u^t = w^t + (eta/delta) sum_{s<t} chi(t,s) psi^s,   w ~ GP(0, C)                   (1)
    Cpsi(t,s) = E[psi^t psi^s],  R(t,s) = E[d psi^t / d h^s]                          (2)
Weight side (linear, solved exactly):
    A(t+1) = (1 - eta lambda) A(t) + eta sum_{r<=t} R(t,r) A(r),                A(0) = 1       (3)
    B(t+1,s) = (1 - eta lambda) B(t,s) + eta sum_{r<=t} R(t,r) B(r,s) + eta 1[s=t]             (4)
    chi = B/eta,  C(t,t') = rho0^2 A(t) A(t') + sum B(t,s) Cpsi(s,s') B(t',s') / delta.        (5)
(THEORY.md section 3: the first phase of GD in the proportional regime n/d -> delta, d -> inf at fixed t.)

The Gaussian path is built from innovations, w^t = sum_{j<=t} L(t,j) xi_j with
L the (growing) Cholesky factor of C and xi_j iid N(0,1) per path, so it is
extended causally in one forward sweep.

Responses (the cost driver), chosen by ``response``:
* ``"sources"`` (default, O(N T^2) time, O(N T) memory, no matrix inverse):
  the weight side is written on independent sources,
  ``vartheta^t = A(t) rho0 nu + sum_j Bt(t,j) eps_j / sqrt(delta)`` with
  ``Bt = B Lpsi`` (``Lpsi Lpsi^T = Cpsi``, Cholesky), whose recursion is
  ``Bt(t+1,j) = (1 - eta lambda) Bt(t,j) + eta sum_r R(t,r) Bt(r,j) + eta Lpsi(t,j)``.
  The sample side draws its Gaussian path from the same kind of sources,
  ``w^t = rho0 A(t) nu + sum_j Bt(t,j) eps_j / sqrt(delta)`` (nu, eps_j iid
  N(0,1) per path, so Cov(w) = C exactly), and Gaussian integration by parts
  on the sources gives the two response sums the weight side needs directly:
  ``sum_r R(t,r) A(r) = E[psi^t nu]/rho0``, ``sum_r R(t,r) Bt(r,j) = sqrt(delta) E[psi^t eps_j]``   (6).
  The memory term is ``(eta/delta) sum_s chi(t,s) psi^s = (1/delta) sum_j Bt(t,j) psit^j``
  with ``psit`` the psi paths whitened by Gram-Schmidt (``psi^s = sum_j Lpsi(s,j) psit^j``,
  empirical Cpsi).  Nothing is inverted, so Monte Carlo noise is not
  amplified where the path stops moving (late times), which is what makes
  a plain Stein estimate R = C^{-1} E[psi w] blow up there.
  Truncated source basis (``source_tol`` = eps > 0)                                          (6b).
  On N paths the estimate sqrt(delta) (1/N) sum_p psi_p^t eps_pJ of eq. (6) holds each path's own
  term; through w_p = ... + sum_J Bt(t,J) eps_pJ / sqrt(delta) it returns to the same path with the
  weight sum_J eps_pJ^2 ~ r, the number of sources: a spurious memory of relative size ~ r delta / N.
  The plain scheme (eps = 0) opens a source for every column, r = t m, so this self-interaction grows
  with t and biases the long-horizon law (quad, phase retrieval, delta 16, eta 0.05, step 400:
  ||theta||^2 = 0.917 / 0.842 / 0.799 / 0.770 / 0.750 with 5k / 10k / 20k / 40k / 80k paths per
  replica, against 0.728 +- 0.004 for GD at d -> inf; validation/reports/dmft_paths).  After the
  first steps every psi column is almost in the span of the earlier ones (relative innovation
  variance 1e-6 - 1e-5 there), so a few sources carry nearly all the variance of the paths.  With
  eps > 0 a column opens a source only when its residual against the sources so far has relative
  variance above eps; otherwise the residual is dropped (psi^t is replaced by its projection on the
  r sources: at most eps of its variance is lost) and the column takes no source row (the rows J
  count opened sources only).  A source that is never opened never gets a response sum either, so
  its eps_J cannot carry the own term.  The self-interaction becomes O(r(eps) delta / N) with
  r(eps) << t m (22-29 of 400 at eps = 1e-3 in the case above, where ||theta||^2 at step 400 is
  0.721 / 0.726 / 0.725 / 0.726 from 10k to 80k paths per replica), and the cost per step falls
  from O(N t m) to O(N r), and the memory of the per-path arrays from O(N T m) to O(N r), that of the
  coefficients Bt and Lpsi from O(T^2 m^2) to O(T m r): their source axes start with room for
  INITIAL_SOURCE_ROWS sources per neuron and double when the opened sources fill it.  Error model:
  the Monte Carlo error (the spread over replicas), the truncation, O(eps), and the remaining
  self-interaction, O(r delta / N); the last two are not bounded a priori but measured: by the dependence
  on the number of paths (a straight line in 1/N whose slope must be consistent with 0) and by a second
  eps (validation/dmft_paths.py).  The tail of
  the law converges more slowly than its bulk: quad, delta 16, step 400, eps = 1e-3, the Hessian
  indicator with G clipped at its 1e-3 quantile is 1.198 +- 0.018 / 1.228 +- 0.004 at 80k / 320k paths
  per replica (1.177 +- 0.018 at 320k with eps = 1e-5), against 1.156 +- 0.010 for GD at d = 4000,
  while ||theta||^2 is flat from 10k paths on (validation/reports/tail_edge, section 4).
  Response noise (``response_noise`` = k > 0; a diagnostic of the error model)                          (6c).
  Every response sum of eq. (6) is a mean X = sum_p omega_p X_p over the N paths (X_p = psi_pk nu_pl / rho0 or
  sqrt(delta) psi_pk eps_pJ) with Monte Carlo variance v = sum_p omega_p^2 (X_p - X)^2.  The run adds to every
  entry, at every step, independent Gaussian noise of variance k v (a generator of its own: the paths do not
  change), so that N paths carry the response noise of N / (1 + k) paths without their self-interaction.  That
  separates the two finite-N biases.  The every-source bias above is the self-interaction: quad, delta 16,
  200 steps, ||theta||^2 = 0.865 +- 0.013 / 0.773 +- 0.007 with 4 x 4000 / 4 x 12000 paths, and 0.757 +- 0.013
  with 4 x 12000 and k = 2.  The truncated basis's remaining bias at width m = 8 is the noise: quad, phase
  retrieval, delta 3.5, planted hard overlaps 0.1 (tests/test_dmft.py; validation/reports/planted/width 8d),
  5000 paths with k = 3 give 1250 paths' law (bulk 0.743 against 0.744; 5000 without: 0.576).  Noise in
  the response sums moves the weight side like a gradient noise of variance ~ r / N per step.  Why it
  matters more at large m is not known; it is not only that m d weights against n = delta d samples leave
  flat directions when m > delta (at m = 8 and delta 12 the bulk at step 300 is still 0.131 +- 0.003 with
  1250 paths against 0.063 +- 0.001 with 5000).  So the paths a width-m run needs grow with m
  (thresholds.forced eq. (4)), and a lower-variance estimate of the response sums, not a leave-one-out
  subtraction, is what would remove that bias.
  Own-term subtraction (``own_term``)                                                                        (6e).
  The self-interaction of eq. (6b), to first order.  The weight recursion (4) carries an injection eta X into
  row s + 1 to row t as B(t, s) X (B(s + 1, s) = eta, then the homogeneous recursion).  Path p's own terms in the
  response sums of step s, sqrt(delta) omega_p psi_p^s eps_pJ for every source J in them and
  omega_p psi_p^s nu_p^T / rho0 for A, so sit in Bt(t, J) and A(t) as B(t, s) times them, and they return to the
  same path through w_p = rho0 A nu_p + sum_J Bt(., J) eps_pJ / sqrt(delta) with the weights eps_pJ^2 and |nu_p|^2:
      u_p^t  contains  omega_p sum_{s<t} B(t, s) c_p(s) psi_p^s,   c_p(s) = |nu_p|^2 + sum_{J in the sums of s} eps_pJ^2,
  next to the true memory term (1/delta) sum_s B(t, s) psi_p^s (the cross terms eps_pJ eps_qJ of other paths have
  mean 0: they are the response noise of eq. (6c)).  With ``own_term`` every field loses this term with c_p(s)
  taken at its last value c_p(t - 1):  omega_p c_p(t - 1) sum_J Bt(t, J) psit_pJ, i.e. delta omega_p c_p times the
  path's own memory term, one more product over the paths per step; the response sums are then taken on the
  corrected paths.  (Subtracting eta sum_s omega_p c_p psi_p^s, the injection without its propagation B, was tried
  before and diverged: validation/reports/planted/width 8c.)  Left over: (i) terms of order (delta omega c)^2;
  (ii) the sources opened between s and t, which c_p(t - 1) counts and c_p(s) does not, so the subtraction is exact
  only once the basis stops growing and over-corrects while it grows; (iii) the response noise of eq. (6c), which
  this leaves alone; (iv) the signal rows' own terms (easy directions, eq. (7)), of relative size r_E / N, which
  are not subtracted.  So it needs delta r / N small: with every source (quad, delta 16, 200 steps, delta r / N about
  0.3 at 4 x 12000 paths) ||theta||^2 moves by 1.8 s.e. from 4000 to 12000 paths against 6.3 without, but the train
  loss overshoots GD's (0.99 against 0.92; 0.84 without).  On the truncated basis the sources open all along a
  long run (quad, delta 16, tol 1e-3: half of them after step 97 of 400), so (ii) remains: the subtraction scales
  as 1/N (+0.18 / +0.024 / +0.006 on the clipped Hessian indicator at 10k / 80k / 320k paths) but turns the nearly
  flat tol-1e-3 law into one that falls with N.  An option, not a default: with the plain runs it brackets the
  self-interaction at small tolerances, where the tail of the law needs more sources (validation/reports/dmft_paths,
  "own-term subtraction": the d = inf tail at step 400 is 1.16-1.19 against 1.228 at tol 1e-3;
  at tol 1e-6 with the subtraction the law equals GD at d = 8000 within 0.6 s.e.).
  Size of the self-interaction (a note)                                                                       (6f).
  Path p's own term returns to it with the weight omega_p c_p = (|nu_p|^2 + sum_J eps_pJ^2) / N, about (r + m) / N
  (r sources, m initial directions, unit-variance coordinates), against the true memory term's 1 / delta, so its
  relative size is

      s = delta (r + m) / N      (N the paths per replica).

  The default law of thresholds.nn takes N = 4000 delta per replica (four data sets of hessian eq. (5)), so
  s = (r + m) / 4000 there (tolerance 1e-3, quad, eta 0.05, 600 steps): 0.010 at m = 1 (delta 11, r = 28-44), 0.11
  at m = 8 (delta 2.15, r = 446-456: the law of the committed m = 8 search) and 0.12-0.18 at m = 16 (r = 490-690).
  Measured (quad, phase retrieval, eta 0.05, m = 16, delta 2, step 600; validation/reports/planted/width 10f): the
  train loss is 0.00023 / 0.00034 / 0.00046-0.00049 at s = 0.18 / 0.08 / 0.03 (24000 paths at tolerance 1e-3, 24000
  at 1e-2, 80000 at 1e-2) against GD's 0.00047-0.00051 at d = 1600, and that replica's orbit limit (eq. (10b))
  moves from 15% below GD's to GD's.  A run with s > 0.05 says so in its notes; the automatic paths of thresholds.nn
  run again with more paths there (thresholds.evaluation eq. (4)).
  Storage precision (``path_dtype``, truncated basis only)                                                   (6d).
  The per-path source arrays (eps, the whitened psi paths and their combination for u; rows = sources) are
  read in full at every step by three products over the paths, which are memory-bound at small m.  With
  ``path_dtype`` "float32" they are stored, and those products taken, in single precision (the coefficients
  A, Bt, Lpsi, M and every per-path field u, psi stay float64): each product then carries a relative
  rounding of about 1e-7 times the square root of its length, against Monte Carlo errors of order
  N^(-1/2) ~ 1e-2 in the same sums, and the source test of eq. (6b) (a relative innovation of at least
  eps = 1e-3) is far from it.
  Orthogonal sources (``source_orth``; a control variate for the response sums)                            (6g).
  Source J, opened at step s, enters the fields from step s + 1 on, so E[psi^t eps_J] = 0 exactly for t <= s, and
  for t > s the response sum of eq. (6) is the response of psi^t to eps_J.  On N paths its estimate
  sum_p omega_p psi_p^t eps_pJ carries a noise of variance about E[(psi^t)^2] / N whatever the size of that
  response, and eq. (6c) makes this noise the m >= 8 bias.  But after the first steps psi^t lies almost entirely in
  the span of the whitened psi paths so far (eq. (6b)).  With ``source_orth`` each new source row is drawn, then made
  orthogonal in the path weights to the whitened paths psit^0 .. psit^(r-1) open at its draw (two projection passes)
  and scaled to unit weighted norm:

      eps_J <- (eps_J - sum_j <eps_J, psit^j>_omega psit^j) / || . ||_omega,

  so that the estimate at t > s sees only the part of psi^t outside the span of psi^0 .. psi^s, the part that has
  grown since the source opened.  The population is untouched (the span is independent of the fresh eps_J, and the
  row keeps unit variance); the finite-N law changes by O(r / N) in the sources' own law.  Cost: two products of
  the new rows with the past rows per step that opens sources (3%, below).  Measured (quad, phase retrieval, m = 8,
  delta 3.5, planted 0.1, tolerance 1e-2, hard part at step 600, two seeds each; validation/reports/planted/width
  section 8g):
  the d = inf law at 10k / 20k / 40k paths moves from 0.701 / 0.710 / 0.733 to 0.724 / 0.721 / 0.738, against 0.734
  at 80k, so it removes about half to two thirds of the response-noise bias at 10k-20k paths; but in forced trials
  (thresholds.forced, m = 8, d = 200, the 40 stratified trials at delta 3 and 3.25) it raises the final hard fraction
  at 40k paths by +0.009 +- 0.005 over the plain sources on the same paths and forcing, against the -0.041 +- 0.018
  by which 40k falls short of 80k (16 escapes of 40 with or without it, 24 at 80k).  The trials' outcome turns on
  more than the mean growth that the d = inf law measures.  So it is an option, not a default (thresholds.forced
  eq. (4d)).  An m = 8 trial at 40k paths takes 10.5 s with it against 10.2 s without (one core).
* ``"pathwise"`` (O(N T^3) time, O(N T^2) memory, exact per path):
  J(t,s) = 1[t=s] + (eta/delta) sum_{r=s}^{t-1} chi(t,r) psi'(u^r) J(r,s),
  R(t,s) = E[psi'(u^t) J(t,s)]; used to check the ``sources`` method.
* ``"linear"``: for affine activations every expectation is Gaussian
  algebra (no sampling): the closed-form DMFT used by the tests.

Spherical GD (``sphere``): after every step theta is rescaled to ||theta|| = rho0.
At d = inf the factor is deterministic, rho0 / sqrt(C_unnormalized(t+1, t+1)),
so it multiplies A(t+1) and the row B(t+1, .) (Bt for ``sources``); the sample
side uses the same coefficients, so nothing else changes.

Width m > 1 (``sources`` only): u, w, psi are m-vectors per path and every kernel is an
m x m block (THEORY.md section 2: f = (1/m) sum_j a sigma(u_j + b), psi_j = (y - f) a sigma'(u_j + b),
mean-field step theta_j += eta (1/n) sum_i psi_ij x_i).  The sources and the whitened psi
columns are indexed by pairs J = s m + k (step s, neuron k), so A(t) is m x m, Bt(t) is
m x (t m), ``sum_r R(t,r) A(r) = E[psi^t nu^T]/rho0`` (nu in R^m) and
``sum_r R(t,r) Bt(r,J) = sqrt(delta) E[psi^t eps_J]``; for m = 1 this is the scalar scheme above.
Reported norms are means over neurons, (1/m) sum_j ||theta_j||^2 and (1/m) sum_j <theta_j^t, theta_j^0>.
Per-neuron second-layer weights and biases (a_j, b_j; thresholds.problem) enter only the per-path
psi_j = (y - f) a_j sigma'(u_j + b_j), f = (1/m) sum_j a_j sigma(u_j + b_j), and the population risk;
the kernels are m x m blocks already, so nothing else changes (tests/test_per_neuron.py: against GD).

Easy directions (``sources`` only; THEORY.md sections 1 and 3).  Split x = Theta_* g + x_perp and
theta_j = Theta_* M_j + theta_perp,j.  The overlaps with the hard directions stay O(d^-1/2)
during the first phase (E[g_H | y, g_E] = 0, so they get no O(1) drift) and are 0 at d = inf;
the overlaps M (r_E x m, in the easy basis of ``thresholds.alg.latent_split``) start at 0 and obey
    M(t+1) = (1 - eta lambda) M(t) + eta E[g_E psi^t^T],
an exact projection of the GD step in which (1/n) sum_i g_i psi_i^t -> E[g_E psi^t^T] by the law
of large numbers over the effective samples (each sample's own contribution to M is O(1/n), so
there is no Onsager term); the sample side gains the signal term,
    u^t = g_E^T M(t) + w^t + (memory),   w ~ GP(0, C_perp),
with everything else (C_perp, the sources, the responses) as in the null case, since x_perp is
independent of (g, y).  Norms are ||theta_j||^2 = C_perp,jj + |M_j|^2; the population risk is an
average over the replica's (g, y) paths with fresh draws of the orthogonal part.  Checked
against GD restricted to the complement of the hard subspace (tests/test_easy.py,
validation/reports/easy).

Planted hard overlap (``planted``, ``sources`` only).  At d = inf the hard overlaps are 0 during the first
phase; a run that starts from theta_j^0 = Theta_* M(0) + theta_perp^0 with M_H(0) = ``planted`` (a number:
every neuron, every hard direction; a tuple of m numbers: M_H,j(0) of neuron j on every hard direction, zeros
allowed; or M_H = 0 until step ``planted_step`` and ``planted`` there) instead treats
the hard directions exactly like the easy ones above: they
join the signal coordinates, u^t = g_S^T M_S(t) + w^t + (memory), and obey the same recursion
    M_S(t+1) = (1 - eta lambda) M_S(t) + eta E[g_S psi^t^T],                                          (7)
now with an O(1) drift once M_H != 0 (the hard signal term of the gradient grows with M_H).  This is the
d = inf law of GD from an informed start; ``hard_overlap`` = (1/m) sum_j |M_H,j|^2 and ``hard_fraction`` =
hard_overlap / ||theta||^2 follow the escape (validation/reports/planted).  On N paths the hard drift
E[g_H psi] carries a Monte Carlo error that is the sample forcing of a data set of n = N samples: with a tuple
of zeros, M_H(t) is that forcing's response alone (thresholds.forcing, eq. (4)).

Finite-n hard forcing (``forcing_n`` = n > 0, planted runs only).  At finite d the hard gradient is the sample
mean (1/n) sum_i g_i psi_i^t, whose fluctuation f_t about E[g_H psi^t] is a centred Gaussian process of
covariance E[g^2 psi^t psi^s] / n (eq. (9): K_F / (delta d) with n = delta d), for as long as GD runs, not only
while the hard overlap is small.  It is added to eq. (7) on the same paths:
    M_H(t+1) = (1 - eta lambda) M_H(t) + eta E[g_H psi^t] + eta f_t,
    f_t = sum_p omega_p g_p psi_p^t zeta_p,    zeta_p = w_p sqrt(1 / (n omega_p) - 1),   w_p iid N(0, 1),   (7b)
with w_p drawn once per path (own generator, ``forcing_seed``; the paths themselves are those of the run
without it).  The paths' own Monte Carlo error of E[g_H psi] is already a forcing of covariance
sum_p omega_p^2 g_p^2 psi_p^t psi_p^s (the sample forcing of n = N paths, above); eq. (7b) adds the rest, so
that the two together have Cov = (1/n) sum_p omega_p g_p^2 psi_p^t psi_p^s = E[g^2 psi^t psi^s] / n on the paths
(it needs n omega_p <= 1: at least n paths of equal weight).  Started from M_H(0) = rho0 xi / sqrt(d)
(xi ~ N(0, 1), GD's random initial overlap), a run is the d = inf bulk with the hard coordinate of one finite-d
data set: its initial overlap and its forcing at every step (thresholds.forced, eq. (1)).

Finite-d initial Gram (``initial_gram`` = G, ``sources`` only).  At d = inf the neurons start orthonormal
(theta_j^0 . theta_k^0 = rho0^2 delta_jk); at finite d their Gram is rho0^2 W / d, W ~ Wishart(d, I_m), whose
norms and overlaps fluctuate by O(d^{-1/2}), the order of the hard overlaps.  A run from a given G starts from
    A(0) = chol(G),   so that   Cov(w_j^0, w_k^0) = rho0^2 G_jk                                         (7c)
(the rest of the recursion is unchanged: A(0) enters C, the memory and the responses as any A(t)).

Joint forcing (``forcing_joint``, with ``forcing_n``; a diagnostic of the forced trials' error model).  Eq. (7b)
gives the data set's fluctuation to the hard gradient alone.  The same n samples enter every other sample sum of
the update, and those along a fixed, finite set of directions are O(1) coordinates with O(n^{-1/2}) fluctuations
like M_H: the sums along the initial directions, RA = E[psi nu^T] / rho0 (the A coordinates, eq. (3)).  With
``forcing_joint`` the response sums take the data set's weights omega_p (1 + zeta_p) of eq. (7b), the same zeta as
the hard forcing,

    "initial":  RA = sum_p omega_p (1 + zeta_p) psi_p nu_p^T / rho0;   "all": RB likewise on the sources,   (7d)

so that the A coordinates and the hard coordinate fluctuate together, as one data set makes them.  "all" counts the
samples' fluctuation on the sources twice: the sources are the directions of the past psi, built from the samples
themselves, and their aggregate fluctuation is already the memory term psit / delta of eq. (1) (measured: the hard
part collapses, validation/reports/planted/width section 9d).

Ending at a hard fraction (``stop_above`` of :func:`solve_dmft`, a planted run of one replica without the two-time
kernels).  The run ends at the first step t_e with

    hard_fraction(t_e) > stop_above,                                                                    (7e)

and its per-step arrays hold steps 0 .. t_e.  Up to t_e the run is the full run's: the same draws (nothing after t_e
is drawn before it), its curves equal to rounding (1e-16).  thresholds.forced eq. (2e) uses it where
only the outcome at the horizon matters.

``population_risk`` False skips the test loss of runs with signal rows (a quarter of a planted run's time at
20k paths; NaN in its place); its generator is still drawn, so every other output is unchanged.

Linear response of the hard coordinate (``pathwise``, null case).  A small hard overlap M(t) enters the
sample side as g M(t); the kernels are even in M, so to first order u^t moves by
sum_{r<=t} J(t,r) g M(r) (J the pathwise tangent above) and eq. (7) linearizes to
    M(t+1) = (1 - eta lambda) M(t) + eta sum_{r<=t} K_M(t,r) M(r) + eta f_t,
    K_M(t,r) = E[g^2 psi'(u^t) J(t,r)],     K_F(s,r) = E[g^2 psi^s psi^r],                               (9)
where f_t is an external forcing of the hard coordinate (at finite d the sample fluctuation of the hard
gradient, Cov(sqrt(d) f_s, sqrt(d) f_r) = K_F(s,r)/delta; thresholds.forcing).  ``hard_kernels`` holds
(K_M, K_F) (t, r < T) per replica.

Period-2 orbits.  With a step above the stability limit of some direction (eta times its curvature above 2) GD
does not settle: it ends in a period-2 orbit, its train loss going up and down at alternate steps (with several
such directions, in a longer or irregular oscillation).  A replica is flagged (``period_two``) when over the last
W = min(20, T / 4) steps its train loss rises by more than 1e-3 of itself at least W / 4 times and falls by as much
at least W / 4 times:

    #{t : L(t+1) - L(t) > 1e-3 L(t)} >= W / 4   and   #{t : L(t) - L(t+1) > 1e-3 L(t)} >= W / 4,   T - W <= t < T.  (10)

(a period-2 orbit rises and falls W / 2 times each; a settling run only falls; one that grows steadily only rises).
Before, eq. (10) asked for a strict alternation at every step; a replica of quad, m = 16, delta 1.6 on 80000 paths
whose three labels above eq. (10b)'s limit make its loss change by +11%, +117%, -68%, +85%, -15%, ... per step
passed it and was read as settled (validation/reports/planted/width section 10f).

Its checkpoints (every T / 16 steps, even and odd) then alternate between the orbit's two points, so the Hessian
there is that of a point on the orbit, not of a settled state (quad, m = 16, eta 0.05, delta 1.70: one replica of
three, the mean left bulk edge -0.02 at odd checkpoints and -0.33 at even ones; finite-d GD at d = 200-3200 settles
there: validation/reports/planted/width section 10).  The Hessian evaluation states its indicators on the other
replicas (thresholds.evaluation eq. (3)).  An orbit can start late: at delta 1.6 (same setup) one replica's loss
falls to 1.0e-4 by step 500 and from step 568 alternates between 7.7e-4 and 5.4e-4, so W is 20 steps (it was 50,
which missed that replica).  The replicas' train losses are kept (``replica_train``) and eq. (10) is applied to
them whenever a result is read back from the cache (results cached before they were kept keep the list made
when they were run).

What orbits is one sample with a large label (validation.orbit_check).  Sample i's own term of the step moves
its pre-activations by (eta / delta) psi_i (||x_i||^2 / n = 1 / delta); for quad (sigma' = 2u, a = 1,
f_i = |u_i|^2 / m) that map has the eigenvalue 1 + (eta / delta)(2 (y_i - f_i) - 4 f_i) along u_i, below -1 at a
fitted sample (f_i = y_i) when

    y_i > y_c ~ delta / (2 eta)       (the sample's own term; the others' curvature along x_i adds about 1%)  (10b)

(15 at delta 1.5, 17 at 1.7, eta 0.05; at m = 1 quad's thresholds lie near delta 5, y_c about 50). Measured: in the
orbiting DMFT replica at delta 1.70 the path with the largest label (y = 15.2; the settled replicas' largest are
12.9 and 13.8) moves by 1.8 between odd and even checkpoints, every other path by at most 0.1; at delta 1.5 and 1.6
(the same labels) the replicas with 15.2 and 13.8 orbit. GD at delta 1.5 and 1.6, d = 400-6400, three data sets each
(validation/reports/planted/width section 10e): the 4 runs whose largest label is 16.7 or 18.4 (d = 6400) orbit,
that sample flipping by 2.2-4.1 (at 18.4 its f alternates 24.0 / 9.4 and its loss is all of the train loss's
alternation), and the 20 whose largest label is at most 13.55 settle. GD follows eq. (10b) with its own ||x_i||^2 /
n: at d = 3200 the settled sample with y = 13.55 is fitted (f = 13.55) and its eigenvalue is -0.83 (still settled
after 2400 steps, its loss down to 4.5e-6), every settled run -0.27 to -0.85 and every orbiting one -1.09 to -1.43.
The default law of ``thresholds nn`` at m = 16 (20000-24000 paths, tolerance 1e-3) orbits well inside it: the
replica whose largest label is 13.8 orbits at delta 1.5 and 1.6 (eigenvalue -0.84 and -0.72), not at 1.7 (-0.62),
and the one with 12.9 never (-0.72 at 1.5): a limit near -0.72. By its size and by its going with more paths, that
is the self-interaction of eq. (6e), of relative size (r + m) delta / N = 0.12-0.17 there (r = 490-690 sources, N =
6666 paths per replica): with 80000 paths at tolerance 1e-2 (0.03) the limit is eq. (10b)'s (delta 2.0: the replica
with label 20.2, eigenvalue -1.02, orbits; those with 17.9 and 17.7, -0.79 and -0.77, settle). So the orbit is GD's
once n P(y > y_c) is of order one (phase retrieval, y = z^2, y_c = 15: P = 1.1e-4), and at d = inf a fraction P(y >
y_c) of the samples never settles: the d = inf first phase of such a setup has no settled state, only one up to that
fraction.  For any activation (square loss, no weight decay) a path's own step at the point fitted along its own
direction, u* = s u with f(u*) = y (s in (0, FIT_SCALE_MAX]), has the eigenvalue

    lambda* = 1 - (eta / delta) sum_j (a_j sigma'(u*_j + b_j))^2 / m,     P = weight of the paths with lambda* < -1   (10c)

(validation.orbit_check eq. (3) with ||x_i||^2 / n = 1 / delta; quad, a = 1, b = 0: lambda* = 1 - 4 eta y / delta, so
P = P(y > y_c) of eq. (10b)).  ``unstable_fraction`` gives it on a replica's paths; a data set of n = delta d samples
holds about delta d P of them, one from d = 1 / (delta P) on.

Conditioned labels (``label_cap``).  Where the stability limit of eq. (10c) depends on the label alone (lambda* the
same along every direction of u, e.g. quad with a_j = a, b = 0 at any m: lambda* = 1 - 4 a eta y / delta), a run can
draw its paths from the law of (g, y) conditioned on the labels whose own step is stable,

    (g, y) ~ law of (g, y) given y <= y_cap,   lambda*(y_cap) = SETTLED_EIGENVALUE = -0.8 of eq. (10c)
                                               (quad: y_cap = 1.8 delta / (4 a eta) = 0.9 delta / (2 a eta)),   (10d)

by rejection (a replica draws batches of N paths until N are kept; a cap that keeps less than half the labels is
refused: eq. (10d) removes a tail, not the bulk of the law).  That is the law of the samples of GD's data set at the
dimensions where it holds no label past y_cap (n P << 1, d << 1 / (delta P), P the tail mass past the cap): the law
changes by P (1e-4 to 4e-3 at quad m = 8-16, eta 0.05, delta 1-2).  The cap sits below the own step's limit (-1)
because the DMFT's own limit lies above it by its self-interaction (eq. (6f)): quad, m = 8, eta 0.05, delta 1.5625,
capped at lambda* = -1 (y <= 15.625), 78000 paths (s = 0.020), 2 of 3 replicas still orbit, the flipping paths
those with lambda* = -0.95 to -0.998 (f alternating 12.0 / 17.8 at y = 15.2), those at -0.87 and above settle; the
isolated own map u -> u + 2 c u (y - u^2) converges at every lambda* > -1 from every start; finite-d GD at the same
setup (12 data sets at d = 800-3200, validation/reports/planted/width/orbit_quad_m8.jsonl) orbits in the one whose
largest label has lambda* = -0.986 and settles in the others (largest labels up to -0.917; m = 16: -0.83 settled,
-1.09 orbited), its limit near -0.98 (the others' curvature along x_i, eq. (10b)); at s = 0.12-0.17 the DMFT's limit
was near -0.72.  So -0.8 holds for the paths of evaluation eq. (4) (s <= 0.05), and GD's samples with lambda* in
(-1, -0.8), which settle, are left out with the orbiting ones (a further mass of about P).  ``stable_label_limit``
finds the cap by bisection along a set of directions and refuses an activation whose limit depends on the direction;
the run's notes give the drawn paths rejected per replica.  The test loss keeps the moments of the full law (population risk).

Error bars: the solver is run on ``replicas`` independent sets of paths and
every output is reported as the mean with the standard error across them.
"""

from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import sympy as sp
from scipy.linalg import solve_triangular

from .catalog import X, Activation, Link, get_activation, get_link
from .errors import BLOWUP, DivergenceError, ThresholdsError, UnsupportedError
from .kernels import compiled_activation, make_psi_kernel, make_psi_kernel_m
from .numbers import mean_se_rows
from .problem import Problem, per_neuron
from .targets import draw_targets, y_moments

def _memory_limit() -> int:
    """Bytes a DMFT run may take: $THRESHOLDS_MAX_MEMORY_GB (16 by default; a value that is not a positive
    number falls back to the default)."""
    try:
        gb = float(os.environ.get("THRESHOLDS_MAX_MEMORY_GB", "16"))
    except ValueError:
        gb = 16.0
    return int((gb if math.isfinite(gb) and gb > 0 else 16.0) * 2**30)


MAX_MEMORY = _memory_limit()  # larger runs are refused up front
INNOVATION_FLOOR = 1e-24  # relative variance below which a psi innovation opens no new source
INITIAL_SOURCE_ROWS = 64  # per neuron: the first room of a truncated basis's per-path arrays (eq. (6b))
CANDIDATE_MARGIN = 0.99  # eq. (6b): a column with less than this times the tolerance left against the past cannot open


@dataclass
class DMFTSetup:
    """Everything that determines a DMFT run (printed with every result)."""

    activation: str
    link: str
    delta: float
    eta: float
    steps: int
    a: float = 1.0
    b: float = 0.0
    rho0: float = 1.0
    weight_decay: float = 0.0
    paths: int = 100_000
    replicas: int = 4
    seed: int = 0
    response: str = "sources"
    g_nodes: int = 0
    loss: str = "square"
    m: int = 1
    sphere: bool = False  # spherical GD: theta rescaled to ||theta|| = rho0 after every step
    planted: float | tuple = 0.0  # M_H at step planted_step (eq. (7)): one number for every neuron, or m numbers
    planted_step: int = 0  # the step at which the hard overlap is set to ``planted`` (0 before it)
    source_tol: float = 0.0  # ``sources``: relative innovation variance below which no source opens (eq. (6b))
    forcing_n: float = 0.0  # planted runs: add the hard forcing of n samples (eq. (7b)); 0: none
    forcing_seed: int = 0  # the draw of the forcing weights w_p of eq. (7b)
    population_risk: bool = True  # runs with signal rows: False skips the test loss (NaN; same paths and outputs)
    initial_gram: tuple = ()  # ``sources``: the m x m Gram of theta_perp^0 / rho0 (row-major); (): the identity
    response_noise: float = 0.0  # ``sources``: add k times the Monte Carlo variance of the response sums (eq. (6c))
    path_dtype: str = "float64"  # ``sources``: storage of the per-path source arrays (eq. (6d)): "float64" or "float32"
    own_term: bool = False  # ``sources``: subtract each path's own term of the response sums from its field (eq. (6e))
    forcing_joint: str = ""  # with forcing_n: the data-set weights in the response sums too, "all" or "initial" (eq. (7d))
    label_cap: float = 0.0  # ``sources``: paths drawn with labels y <= label_cap (eq. (10d)); 0: the full law
    source_orth: bool = False  # ``sources``: each new source row orthogonal to the whitened psi paths so far (eq. (6g))

    @classmethod
    def from_problem(cls, problem: Problem, delta: float, **numerics) -> "DMFTSetup":
        """The DMFT of ``problem`` at sample ratio ``delta`` with the given numerical settings."""
        return cls(delta=float(delta), **problem.fields(), **numerics)

    @property
    def problem(self) -> Problem:
        return Problem.of(self)

    def cache_key(self) -> dict:
        """Every field, except the planted start when there is none and the source tolerance when it is 0
        (the keys of such runs are those of the versions before these fields)."""
        key = asdict(self)
        if not self.planted:
            del key["planted"], key["planted_step"]
        if not self.source_tol:
            del key["source_tol"]
        if not self.forcing_n:
            del key["forcing_n"], key["forcing_seed"]
        if self.population_risk:
            del key["population_risk"]
        if not self.initial_gram:
            del key["initial_gram"]
        if not self.response_noise:
            del key["response_noise"]
        if self.path_dtype == "float64":
            del key["path_dtype"]
        if not self.own_term:
            del key["own_term"]
        if not self.forcing_joint:
            del key["forcing_joint"]
        if not self.label_cap:
            del key["label_cap"]
        if not self.source_orth:
            del key["source_orth"]
        return key

    def validate(self, *, kernels: bool = True):
        """A ThresholdsError (UnsupportedError) for a setup the back-ends cannot run, or whose storage
        (``memory_bytes``, with or without the two-time ``kernels``) passes the limit."""
        if not (isinstance(self.delta, (int, float)) and math.isfinite(self.delta) and self.delta > 0):
            raise ThresholdsError(f"delta must be > 0, got {self.delta}")
        self.problem.validate()
        if self.sphere and self.response == "linear":
            raise UnsupportedError("spherical GD is solved by the sampling back-ends (sources, pathwise)")
        if self.response not in RESPONSES:
            raise ThresholdsError(f"unknown response method {self.response!r}; choose from {', '.join(RESPONSES)}")
        if self.response != "linear" and self.paths < 2 * self.replicas:
            raise ThresholdsError("paths must be at least twice the number of replicas")
        if self.replicas < 1:
            raise ThresholdsError("replicas must be >= 1")
        if not (isinstance(self.m, int) and self.m >= 1):
            raise ThresholdsError(f"m must be a positive integer, got {self.m}")
        if isinstance(self.planted, tuple):
            if not (len(self.planted) == self.m and all(isinstance(q, (int, float)) and math.isfinite(q)
                                                        for q in self.planted)):
                raise ThresholdsError(f"a per-neuron planted overlap needs m = {self.m} finite numbers, "
                                      f"got {self.planted!r}")
        elif not (isinstance(self.planted, (int, float)) and math.isfinite(self.planted)):
            raise ThresholdsError(f"planted must be a finite number or a tuple of m numbers, got {self.planted!r}")
        if not (isinstance(self.planted_step, int) and 0 <= self.planted_step <= self.steps):
            raise ThresholdsError(f"planted_step must be an integer in [0, steps], got {self.planted_step!r}")
        if not (isinstance(self.source_tol, (int, float)) and math.isfinite(self.source_tol)
                and 0 <= self.source_tol < 1):
            raise ThresholdsError(f"source_tol must be a number in [0, 1), got {self.source_tol!r}")
        if self.source_tol and self.response != "sources":
            raise UnsupportedError("a source tolerance applies to the 'sources' back-end")
        if self.planted and self.response != "sources":
            raise UnsupportedError("a planted hard overlap is solved by the 'sources' back-end")
        if not (isinstance(self.forcing_n, (int, float)) and math.isfinite(self.forcing_n) and self.forcing_n >= 0):
            raise ThresholdsError(f"forcing_n must be a sample count >= 0, got {self.forcing_n!r}")
        if not (isinstance(self.forcing_seed, int) and self.forcing_seed >= 0):
            raise ThresholdsError(f"forcing_seed must be an integer >= 0, got {self.forcing_seed!r}")
        if not isinstance(self.population_risk, bool):
            raise ThresholdsError(f"population_risk must be True or False, got {self.population_risk!r}")
        if self.initial_gram:
            gram = np.asarray(self.initial_gram, dtype=float)
            if not (gram.size == self.m * self.m and np.all(np.isfinite(gram))):
                raise ThresholdsError(f"initial_gram needs m^2 = {self.m * self.m} finite numbers")
            gram = gram.reshape(self.m, self.m)
            if not (np.allclose(gram, gram.T) and np.linalg.eigvalsh(gram)[0] > 0):
                raise ThresholdsError("initial_gram must be symmetric positive definite")
            if self.response != "sources":
                raise UnsupportedError("an initial Gram matrix is solved by the 'sources' back-end")
        if not (isinstance(self.response_noise, (int, float)) and math.isfinite(self.response_noise)
                and self.response_noise >= 0):
            raise ThresholdsError(f"response_noise must be a number >= 0, got {self.response_noise!r}")
        if self.path_dtype not in ("float64", "float32"):
            raise ThresholdsError(f"path_dtype must be 'float64' or 'float32', got {self.path_dtype!r}")
        if self.path_dtype != "float64" and not (self.response == "sources" and self.source_tol > 0):
            raise ThresholdsError("path_dtype float32 applies to the truncated source basis (response 'sources', "
                                  "source_tol > 0: dmft eq. (6d))")
        if self.response_noise and self.response != "sources":
            raise UnsupportedError("response noise (eq. (6c)) applies to the 'sources' back-end")
        if not isinstance(self.own_term, bool):
            raise ThresholdsError(f"own_term must be True or False, got {self.own_term!r}")
        if self.own_term and (self.response != "sources" or self.sphere):
            raise UnsupportedError("the own-term subtraction (eq. (6e)) applies to the 'sources' back-end without "
                                   "spherical GD")
        if not isinstance(self.source_orth, bool):
            raise ThresholdsError(f"source_orth must be True or False, got {self.source_orth!r}")
        if self.source_orth and self.response != "sources":
            raise UnsupportedError("orthogonal sources (eq. (6g)) apply to the 'sources' back-end")
        if self.forcing_n and not self.planted:
            raise UnsupportedError("the finite-n hard forcing (eq. (7b)) acts on a planted run's hard overlap")
        if self.forcing_joint not in ("", "all", "initial"):
            raise ThresholdsError(f"forcing_joint must be '', 'all' or 'initial', got {self.forcing_joint!r}")
        if self.forcing_joint and not self.forcing_n:
            raise UnsupportedError("the joint forcing (eq. (7d)) needs the finite-n forcing of eq. (7b) (forcing_n > 0)")
        if not (isinstance(self.label_cap, (int, float)) and not math.isnan(self.label_cap) and self.label_cap >= 0):
            raise ThresholdsError(f"label_cap must be a number >= 0 (0: the full law), got {self.label_cap!r}")
        if self.label_cap and (self.response != "sources" or self.g_nodes):
            raise UnsupportedError("conditioned labels (eq. (10d)) are drawn by the 'sources' back-end with Monte "
                                   "Carlo g (g_nodes = 0)")
        if self.m > 1 and self.response != "sources":
            raise UnsupportedError("m > 1 neurons are solved by the 'sources' back-end")
        need = self.memory_bytes(kernels=kernels)
        if need > MAX_MEMORY:
            raise ThresholdsError(f"this DMFT needs about {need / 2**30:.0f} GiB (steps = {self.steps}, "
                                  f"{self.paths // self.replicas} paths per replica, m = {self.m}); the limit is "
                                  f"{MAX_MEMORY / 2**30:.0f} GiB (THRESHOLDS_MAX_MEMORY_GB): fewer steps or paths")

    def first_source_rows(self) -> int:
        """Source rows of the per-path arrays at the start: T m (every source), or the first room of a truncated
        basis (eq. (6b)), which grows with the sources it opens."""
        full = self.steps * self.m
        return min(full, INITIAL_SOURCE_ROWS * self.m) if self.source_tol else full

    def memory_bytes(self, rows: int = None, *, kernels: bool = True) -> int:
        """Storage of one replica in bytes (float64, the per-path arrays at ``path_dtype``, eq. (6d)): the kernels
        C, Cpsi ((T+1)^2 m^2 each; not with ``kernels`` False, which solve_dmft(kernels=False) does not form), the
        sources' Bt and Lpsi ((T+1) m and T m by the source rows) and the per-path arrays (eps, the whitened psi
        and their combination for u, n per source row; a fourth for the squared sources of eq. (6c) with
        ``response_noise``; ``pathwise``: two more two-time arrays and the tangents, n T^2).  The source rows are
        ``rows``, by default T m with every source and the initial room of a truncated basis (eq. (6b)), whose
        arrays grow with the sources it opens (the run refuses to grow them past the limit)."""
        T, m, n = self.steps, self.m, self.paths // max(self.replicas, 1)
        rows = self.first_source_rows() if rows is None else rows
        kernels_size = (2 if kernels else 0) * (T + 1) ** 2 * m * m
        two_time = (kernels_size + (2 * T + 1) * m * rows if self.response == "sources"
                    else kernels_size + 2 * (T + 1) ** 2 * m * m)
        paths = (3 + bool(self.response_noise)) * n * rows if self.response != "pathwise" else n * (T + 1) ** 2
        return 8 * two_time + np.dtype(self.path_dtype).itemsize * paths


@dataclass
class DMFTResult:
    """Per-step outputs (t = 0..steps) with standard errors across replicas, the
    kernels of the first replica (C, R and chi are None for the ``sources``
    method, which never forms them), and the first replica's paths at the final
    time: the joint law of (u^T, y, g) as weighted samples (``final_weights``
    sum to 1), plus the Gaussian part w^T."""

    setup: DMFTSetup
    t: np.ndarray
    norm2: np.ndarray
    norm2_err: np.ndarray
    overlap_init: np.ndarray
    overlap_init_err: np.ndarray
    train_loss: np.ndarray
    train_loss_err: np.ndarray
    test_loss: np.ndarray
    test_loss_err: np.ndarray
    C: np.ndarray
    R: np.ndarray
    Cpsi: np.ndarray
    chi: np.ndarray
    final_u: np.ndarray
    final_y: np.ndarray
    final_g: np.ndarray
    final_w: np.ndarray
    final_weights: np.ndarray = None
    replica_laws: list = field(default_factory=list)  # per replica: (u, y, g, weights) at the final step
    snapshots: dict = field(default_factory=dict)  # step -> [u per replica] at the checkpoints(steps)
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    signal: np.ndarray = None           # (T+1, r_E, m): overlaps M(t) of theta_j with the easy directions
    signal_err: np.ndarray = None
    easy_overlap: np.ndarray = None     # (1/m) sum_j |M_j(t)|^2
    easy_overlap_err: np.ndarray = None
    hard_kernels: list = None            # ``pathwise``: per replica (K_M, K_F) of eq. (9)
    easy_basis: list = None              # rows: signal directions in the latent coordinates (None: null case);
    #                                      with ``planted`` the hard directions are the last r_H rows
    hard_overlap: np.ndarray = None      # (1/m) sum_j |M_H,j(t)|^2 (planted runs; else None)
    hard_overlap_err: np.ndarray = None
    hard_fraction: np.ndarray = None     # hard_overlap / ||theta||^2 per replica, then mean and s.e.
    hard_fraction_err: np.ndarray = None
    hard_signal: np.ndarray = None       # M_H,j(t) per replica (replicas, T+1, r_H, m) (planted runs; else None)
    sources: list = None                 # ``sources``: the source rows each replica used at the end (eq. (6b))
    period_two: list = None              # replicas ending in a period-2 orbit (eq. (10)); None: cached before
    label_tail: tuple = None             # with a label cap (eq. (10d)): (rejected, drawn) paths over the replicas
    replica_train: np.ndarray = None     # (replicas, T+1) train loss per replica (None: cached before it was kept)

    def self_interaction(self) -> float | None:
        """Eq. (6f) of this run: delta (r + m) / N over its replicas' sources and its paths per replica."""
        return self_interaction(self.setup, self.setup.paths // self.setup.replicas, self.sources)

    def to_json(self, every: int = 1) -> dict:
        steps = []
        for i in range(0, len(self.t), every):
            steps.append({"t": int(self.t[i]), "norm2": float(self.norm2[i]), "norm2_err": float(self.norm2_err[i]),
                          "overlap_init": float(self.overlap_init[i]),
                          "overlap_init_err": float(self.overlap_init_err[i]),
                          "train_loss": float(self.train_loss[i]), "train_loss_err": float(self.train_loss_err[i]),
                          "test_loss": float(self.test_loss[i]), "test_loss_err": float(self.test_loss_err[i])})
            if self.easy_basis:
                steps[-1].update(signal=self.signal[i].tolist(), signal_err=self.signal_err[i].tolist(),
                                 easy_overlap=float(self.easy_overlap[i]),
                                 easy_overlap_err=float(self.easy_overlap_err[i]))
            if self.hard_overlap is not None:
                steps[-1].update(hard_overlap=float(self.hard_overlap[i]),
                                 hard_overlap_err=float(self.hard_overlap_err[i]),
                                 hard_fraction=float(self.hard_fraction[i]),
                                 hard_fraction_err=float(self.hard_fraction_err[i]))
        return {"setup": asdict(self.setup), "seconds": self.seconds, "notes": self.notes,
                "easy_basis": self.easy_basis, "steps": steps}


def checkpoints(steps: int) -> list[int]:
    """Steps at which the sampling back-ends keep the pre-activations of every path
    (for the t-curve of delta_NN and the escape growth): k steps / 16, k = 1..16."""
    return sorted({max(1, (steps * k) // 16) for k in range(1, 17)})


def _affine_coefficients(act: Activation):
    """(c1, c0) when sigma(x) = c1 x + c0, else None."""
    expr = sp.expand(act.expr)
    if expr.is_polynomial(X) and sp.Poly(expr, X).degree() <= 1:
        poly = sp.Poly(expr, X)
        return float(poly.coeff_monomial(X)), float(poly.coeff_monomial(1))
    return None


# --- test loss ----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _gauss_hermite(nodes):
    """Probabilists' Gauss-Hermite nodes and weights normalised to sum 1 (read-only arrays)."""
    x, wts = np.polynomial.hermite_e.hermegauss(nodes)
    wts = wts / wts.sum()
    x.flags.writeable = wts.flags.writeable = False
    return x, wts


def _test_loss(act_fns, a, b, q, Ey, Ey2):
    """Population risk E[(y - a sigma(w + b))^2]/2, w ~ N(0, q) independent of y
    (null case), by 80-node Gauss-Hermite quadrature in w."""
    s0 = act_fns[0]
    x, wts = _gauss_hermite(80)
    vals = np.array([s0(math.sqrt(max(q, 0.0)) * xi + b) for xi in x])
    Es, Es2 = float(np.sum(wts * vals)), float(np.sum(wts * vals**2))
    return 0.5 * (Ey2 - 2 * a * Ey * Es + a * a * Es2)


def _test_loss_m(sig, a, b, Q, Ey, Ey2, nodes=40):
    """Population risk E[(y - f(w))^2]/2 of the width-m network, w ~ N(0, Q) independent of y
    (null case): E[f] from one-dimensional and E[f^2] from pairwise two-dimensional
    Gauss-Hermite quadrature (``nodes`` per axis); ``sig`` is sigma as a NumPy function, ``a`` and ``b``
    the per-neuron arrays."""
    m = Q.shape[0]
    x, wts = _gauss_hermite(nodes)
    std = np.sqrt(np.maximum(np.diag(Q), 0.0))
    Ef = sum(a[j] * float(wts @ sig(std[j] * x + b[j])) for j in range(m)) / m
    X1, X2 = np.meshgrid(x, x, indexing="ij")
    W2 = np.outer(wts, wts)
    Ef2 = 0.0
    for j in range(m):
        for k in range(j, m):
            if j == k:
                val = float(wts @ sig(std[j] * x + b[j]) ** 2)
            else:  # (w_j, w_k) = (l00 x1, l10 x1 + l11 x2), the 2 x 2 Cholesky factor
                l10 = Q[j, k] / std[j] if std[j] > 0 else 0.0
                l11 = math.sqrt(max(Q[k, k] - l10 * l10, 0.0))
                val = float(np.sum(W2 * sig(std[j] * X1 + b[j]) * sig(l10 * X1 + l11 * X2 + b[k])))
            Ef2 += a[j] * a[k] * val * (1 if j == k else 2)
    Ef2 /= m**2
    return 0.5 * (Ey2 - 2 * Ey * Ef + Ef2)


TEST_DRAWS = 4  # fresh Gaussian draws per path for the population risk with easy directions


def _test_loss_signal(sig, a, b, signal, y, omega, Cperp, Ey2, rng):
    """Population risk E[(y - f(signal + w))^2]/2 with easy directions: (g, y) from the replica's
    own paths (``signal`` = g_E Msig, n x m) and w ~ N(0, C_perp(t,t)) drawn fresh
    (``TEST_DRAWS`` per path), independent of everything else, as E[y^2]/2 - E[y f] + E[f^2]/2
    with the exact E[y^2] (a control variate, as in the simulator); unbiased, its Monte Carlo
    error is part of the spread across replicas."""
    m = signal.shape[1]
    vals, vecs = np.linalg.eigh(np.atleast_2d(Cperp))
    root = vecs * np.sqrt(np.maximum(vals, 0.0))
    total = 0.0
    for _ in range(TEST_DRAWS):
        f = (a * sig(signal + rng.standard_normal(signal.shape) @ root.T + b)).sum(axis=1) / m
        total += float(omega @ (0.5 * f * f - y * f))
    return 0.5 * Ey2 + total / TEST_DRAWS


# --- one replica ----------------------------------------------------------------

def _weight_side(t, R, A, B, eta, lam):
    """A(t+1), B(t+1, :t+1) from R(t, :t+1)."""
    r = R[t, : t + 1]
    A[t + 1] = (1 - eta * lam) * A[t] + eta * r @ A[: t + 1]
    B[t + 1, : t + 1] = (1 - eta * lam) * B[t, : t + 1] + eta * r @ B[: t + 1, : t + 1]
    B[t + 1, t] += eta


def _C_row(t, A, B, Cpsi, rho0, delta):
    """C(t, s) for s <= t."""
    bc = B[t, :t] @ Cpsi[:t, :t] if t > 0 else np.zeros(0)
    row = rho0**2 * A[t] * A[: t + 1]
    for s in range(t + 1):
        row[s] += bc[:s] @ B[s, :s] / delta
    return row


def _pivots(L):
    diag = np.diag(L)
    return diag <= 1e-13 * max(1.0, float(diag.max()) if diag.size else 1.0)


def _solve_lower(L, e):
    """x with L x = e for lower-triangular L; zero pivots (directions in which the
    Gaussian path has no new randomness) get x = 0 (a pseudo-inverse on the range of L)."""
    tiny = _pivots(L)
    if not tiny.any():
        return solve_triangular(L, e, lower=True, check_finite=False)
    Lc = L.copy()
    Lc[:, tiny] = 0.0
    Lc[np.ix_(tiny, tiny)] = np.eye(int(tiny.sum()))
    x = solve_triangular(Lc, e, lower=True, check_finite=False)
    return np.where(tiny, 0.0, x)


def _cholesky_row(t, L, c_row):
    """Extend the Cholesky factor of C by row t (a zero pivot when C(t,t) adds no new direction)."""
    if t > 0:
        L[t, :t] = _solve_lower(L[:t, :t], c_row[:t])
    rest = c_row[t] - L[t, :t] @ L[t, :t]
    L[t, t] = math.sqrt(rest) if rest > 1e-13 * max(c_row[t], 1e-300) else 0.0


def _run_replica(setup: DMFTSetup, act: Activation, link: Link, n: int, rng, Ey, Ey2, progress=None, split=None,
                 kernels=True, stop_above=None):
    """One replica of the setup's back-end (a :class:`ReplicaRun`)."""
    if setup.response == "sources":
        return _run_sources(setup, act, link, n, rng, progress, split, Ey2, kernels, stop_above)
    T = setup.steps
    A = np.zeros(T + 1)
    C = np.zeros((T + 1, T + 1))
    Cpsi = np.zeros((T + 1, T + 1))
    A[0] = 1.0
    B = np.zeros((T + 1, T + 1))
    R = np.zeros((T + 1, T + 1))
    if setup.response == "linear":
        affine = _affine_coefficients(act)
        if affine is None:
            raise UnsupportedError("the 'linear' response backend needs an affine activation")
        return _run_linear(setup, affine, A, B, C, Cpsi, R, Ey, Ey2)
    return _run_pathwise(setup, act, link, n, rng, A, B, C, Cpsi, R, progress)


def _check_finite(t, q, u, eta):
    """q = ||theta^t||^2 (mean over neurons)."""
    if not (np.isfinite(q) and q < BLOWUP):
        raise DivergenceError(f"DMFT diverged at step {t}: ||theta||^2 = {q:.3g} "
                              f"(step size eta = {eta:g} too large for this loss?)")
    if u is not None and not np.max(np.abs(u)) <= BLOWUP:   # one pass: a NaN fails the comparison too
        raise DivergenceError(f"DMFT diverged at step {t}: pre-activations overflow")


def _sample_step(t, C, u, y, omega, setup, kernel, s0, psi, dpsi, train, progress):
    """Sample side at step t, shared by the back-ends that draw paths: divergence check,
    psi and psi' on every path, train loss, progress."""
    _check_finite(t, C[t, t], u, setup.eta)
    kernel(u, y, setup.a, setup.b, psi, dpsi)
    train[t] = _train_loss(u, y, omega, setup.a, setup.b, s0)
    if progress is not None:
        progress(t)


def _sources_targets(link, n, g_nodes, rng, split, cap=0.0):
    """The target paths of the ``sources`` back-end: y, the law's g (the hard coordinate(s), (n,) for
    r_H = 1, (n, r_H) otherwise), the easy coordinates gE (n, r_E), the path weights and (rejected, drawn) paths
    (with ``cap`` > 0 the labels are conditioned on y <= cap, eq. (10d); else (0, n))."""
    if cap:
        y, g_all, tail = _targets_below(link, n, rng, cap)
        omega = np.full(n, 1.0 / n)
    else:
        (y, g_all, omega), tail = draw_targets(link, n, g_nodes, rng), (0, n)
    g = (g_all @ split.hard.T if split.hard.shape[0] else g_all[:, :1])
    g = g[:, 0] if g.shape[1] == 1 else g
    return y, g, g_all @ split.easy.T, omega, tail


LABEL_CAP_MIN_KEPT = 0.5   # eq. (10d): a cap that keeps less of the labels is refused


def _targets_below(link, n, rng, cap):
    """Eq. (10d): n Monte Carlo paths (y, g) of the law conditioned on y <= cap, by rejection in batches of n drawn
    from ``rng``; (y, g, (rejected, drawn))."""
    ys, gs, kept, drawn = [], [], 0, 0
    while kept < n:
        y, g, _ = draw_targets(link, n, 0, rng)
        ok = np.asarray(y) <= cap
        drawn += n
        if drawn == n and ok.mean() < LABEL_CAP_MIN_KEPT:
            raise ThresholdsError(f"label cap {cap:g} keeps {ok.mean():.3g} of the labels: eq. (10d) conditions on "
                                  f"a tail, and needs at least {LABEL_CAP_MIN_KEPT:g} of them kept")
        ys.append(y[ok])
        gs.append(g[ok])
        kept += int(ok.sum())
    y, g = np.concatenate(ys)[:n], np.concatenate(gs)[:n]
    return y, g, (drawn - kept, drawn)


def _own_generator(rng, *key):
    """A generator of its own, seeded by the replica's seed sequence and ``key``, so that the paths drawn from
    ``rng`` do not change."""
    seq = rng.bit_generator.seed_seq
    return np.random.default_rng(np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, *key)))


def _forcing_weights(setup, rng, omega):
    """zeta_p = w_p sqrt(1 / (n omega_p) - 1) of eq. (7b), w_p from a generator of its own (seeded by the replica's
    seed sequence and ``forcing_seed``), so that the paths drawn from ``rng`` do not change."""
    own = _own_generator(rng, 7, setup.forcing_seed)
    extra = 1.0 / (setup.forcing_n * omega) - 1.0   # eq. (7b): the paths' own forcing is the rest
    if np.any(extra < -1e-9):
        raise ThresholdsError(f"the forcing of n = {setup.forcing_n:g} samples needs at least that many paths per "
                              f"replica, got {omega.shape[0]}")
    return own.standard_normal(omega.shape[0]) * np.sqrt(np.maximum(extra, 0.0))


def _sources_step(t, setup, wpsi, nu, epsT, gE, Lpsi, A, Bt, Msig, r0, r1, gE_forced=None, hard_rows=None,
                  omega=None, noise_rng=None, joint=None):
    """From the whitened psi^t to step t + 1 (module docstring, ``sources``): the
    responses on the sources by Gaussian integration by parts, sum_r R(t,r) A(r) = E[psi^t nu^T]/rho0 and
    sum_r R(t,r) Bt(r,J) = sqrt(delta) E[psi^t eps_J] (eq. 6), and the weight-side recursions (3)-(4) of A,
    Bt and M.  ``wpsi`` = omega psi^t (paths x m).  r0 and r1 are the numbers of source rows before and after
    the whitening of step t (t m and (t + 1) m with every source); the sources r0..r1 - 1 opened at step t
    enter from step t + 1 on.  ``gE_forced``: None (no forcing), or the columns [gE, zeta g_H] whose last r_H
    give the finite-n fluctuation of the hard gradient on the signal rows ``hard_rows`` (eq. (7b), zeta the
    per-path forcing weights).  ``noise_rng`` (with the path weights ``omega``): eq. (6c).  ``joint`` (eq. (7d)): the
    factors 1 + zeta_p of the data set's weights, which the sums along the initial directions (RA) take, and with
    ``setup.forcing_joint`` "all" those on the sources (RB) too."""
    M, P = wpsi.shape[1], t * wpsi.shape[1]
    eta, lam, rho0 = setup.eta, setup.weight_decay, setup.rho0
    rows = Lpsi[P : P + M, :r1]
    wresp = wpsi if joint is None else wpsi * joint[:, None]   # eq. (7d)
    RA = wresp.T @ nu / rho0 if rho0 > 0 else np.zeros((M, M))
    RB = math.sqrt(setup.delta) * _times_paths(wresp if setup.forcing_joint == "all" else wpsi, epsT[:r0])
    if noise_rng is not None:
        RA, RB = _response_noise(setup, wpsi, omega, nu, epsT[:r0], RA, RB, noise_rng)
    A[t + 1] = (1 - eta * lam) * A[t] + eta * RA
    Bt[t + 1, :, :r0] = (1 - eta * lam) * Bt[t, :, :r0] + eta * RB + eta * rows[:, :r0]
    Bt[t + 1, :, r0:r1] = eta * rows[:, r0:]
    if gE_forced is None:
        Msig[t + 1] = (1 - eta * lam) * Msig[t] + eta * (gE.T @ wpsi)
    else:  # eq. (7b): the signal gradient and the hard gradient's finite-n fluctuation from one product
        rE, grad = gE.shape[1], gE_forced.T @ wpsi
        Msig[t + 1] = (1 - eta * lam) * Msig[t] + eta * grad[:rE]
        Msig[t + 1, hard_rows] += eta * grad[rE:]


def _times_paths(wpsi, rows):
    """(rows @ wpsi)^T, (m, r), for per-path columns ``wpsi`` (paths x m) and per-path rows ``rows`` (r x paths),
    as (m x paths, contiguous) @ (paths x r): the faster BLAS product for these shapes (about 1.5x at m = 8).  In
    the rows' precision (eq. (6d)), returned as float64."""
    return (np.ascontiguousarray(wpsi.T, dtype=rows.dtype) @ rows.T).astype(float, copy=False)


def _response_noise(setup, wpsi, omega, nu, eps, RA, RB, rng):
    """Eq. (6c): RA and RB plus independent Gaussian noise of ``response_noise`` times their Monte Carlo variance,
    sum_p omega_p^2 (X_p - X)^2 for the estimate X = sum_p omega_p X_p of each entry (X_p = psi_pk nu_pl / rho0,
    sqrt(delta) psi_pk eps_pJ)."""
    k, w2psi, s0 = setup.response_noise, omega[:, None] * wpsi, float(omega @ omega)
    wpsi2 = wpsi * wpsi                                         # omega^2 psi^2, shared by RA and RB

    def noisy(R, z, scale):
        x = R / scale                                           # the mean of psi_k z_J
        var = (z * z).T @ wpsi2 - 2 * x.T * (z.T @ w2psi) + s0 * x.T * x.T
        return R + scale * np.sqrt(k * np.maximum(var.T, 0.0)) * rng.standard_normal(R.shape)
    RA = noisy(RA, nu, 1.0 / setup.rho0) if setup.rho0 > 0 else RA
    return RA, (noisy(RB, eps.T, math.sqrt(setup.delta)) if eps.shape[0] else RB)


class _OwnTerm:
    """Eq. (6e): each path's own term in the response sums of the sources, subtracted from its field.

    ``c`` holds c_p = |nu_p|^2 + sum_J eps_pJ^2 over the sources the response sums of the last step held; the
    field of step t + 1 loses omega_p c_p sum_J Bt(t + 1, J) psit_pJ (delta omega_p c_p times the path's memory
    term)."""

    def __init__(self, nu, omega, rho0):
        self.omega, self.rows = omega, 0
        self.c = np.einsum("pk,pk->p", nu, nu) if rho0 > 0 else np.zeros(nu.shape[0])  # rho0 = 0: no A sums

    def subtract(self, u, Bt_t, psit):
        """u minus the own terms (in place)."""
        if psit.shape[0]:
            u -= (self.omega * self.c)[:, None] * (Bt_t.astype(psit.dtype, copy=False) @ psit).T

    def record(self, eps):
        """After the field of a step: the sources 0..r - 1 (``eps``) enter this step's response sums."""
        if eps.shape[0] > self.rows:
            new = eps[self.rows:]
            self.c += np.einsum("jp,jp->p", new, new, dtype=float)
            self.rows = eps.shape[0]


def _orthogonal_rows(X, past, omega):
    """Eq. (6g): the source rows ``X`` (k x paths) made orthogonal, in the path weights ``omega``, to the whitened psi
    paths ``past`` (orthonormal rows; two projection passes), each then scaled to unit weighted norm.  The products
    over the stored paths in their precision (eq. (6d)); returned in the rows' precision."""
    Y, dt = X.astype(float), past.dtype
    for _ in range(2 if past.shape[0] else 0):
        coef = _times_paths((Y * omega).T, past)           # (k, r): <eps_J, psit^j>_omega
        Y -= (coef.astype(dt, copy=False) @ past).astype(float, copy=False)
    Y /= np.sqrt((Y * Y) @ omega)[:, None]
    return Y.astype(X.dtype, copy=False)


def _rescale_to_sphere(t, width, A, Bt, Msig, rho0, delta):
    """Spherical GD (module docstring): rescale the coefficients of step t + 1 so that every
    ||theta_j||^2 = rho0^2 |A_j|^2 + |Bt_j|^2 / delta + |M_j|^2 equals rho0^2."""
    sq_norm = (rho0**2 * np.sum(A[t + 1] ** 2, axis=1) + np.sum(Bt[t + 1, :, :width] ** 2, axis=1) / delta
               + np.sum(Msig[t + 1] ** 2, axis=0))
    scale = rho0 / np.sqrt(sq_norm)
    A[t + 1] *= scale[:, None]
    Bt[t + 1, :, :width] *= scale[:, None]
    Msig[t + 1] *= scale[None, :]


def _whiten(P, psi, omega, PsitT, Lpsi, r=None, floor=INNOVATION_FLOOR, compact=False, wpsi=None):
    """Gram-Schmidt of the m columns psi_k^t (column rows P + k of Lpsi) against the r whitened source paths
    so far (r = P when omitted): fills the rows P + k of Lpsi (psi^t = sum_J Lpsi(t, J) psit^J) and, when
    the innovation's variance is above ``floor`` times the column's, opens a new source: whitened path
    PsitT[J], J = the next source row.  Returns the new number of source rows.  Without ``compact`` every
    column takes a row (J = P + k; one that opens no source leaves its row zero); with it only the columns
    that open a source do (eq. (6b), :func:`_whiten_compact`).  The m columns are projected on the past
    together (two passes, for orthogonality), so the past paths are read four times whatever m is; then each
    is orthogonalized against the new paths of the columns before it, again twice.  In exact arithmetic this
    is column-by-column Gram-Schmidt.  ``wpsi``: omega psi, when the caller has it."""
    M = psi.shape[1]
    r = P if r is None else r
    past = PsitT[:r]
    wpsi = omega[:, None] * psi if wpsi is None else wpsi
    coef = _times_paths(wpsi, past)                     # (m, r): <psi_k, psit^j>_omega
    if compact:
        return _whiten_compact(P, psi, omega, wpsi, coef, PsitT, Lpsi, r, floor)
    res = psi - (coef @ past).T
    fix = (past @ (omega[:, None] * res)).T
    res -= (fix @ past).T
    Lpsi[P : P + M, :r] = coef + fix
    J = r
    for k in range(M):
        J = _open_source(P + k, res[:, k], psi[:, k], omega, PsitT, Lpsi, r, J, floor, keep_row=True)
    return J


def _open_source(row, col, psi_k, omega, PsitT, Lpsi, r, J, floor, keep_row):
    """One column's residual ``col`` (orthogonal to the r past sources) against the sources r..J - 1 opened at
    this step, twice; it opens source J when its variance is above ``floor`` times psi_k's.  Returns the next
    free source row (J + 1 also when ``keep_row`` and no source opens: the plain scheme's zero row)."""
    if J > r:
        new = PsitT[r:J]
        c = new @ (omega * col)
        col = col - c @ new
        c2 = new @ (omega * col)
        col -= c2 @ new
        Lpsi[row, r:J] = c + c2
    norm2 = float(omega @ (col * col))
    if norm2 > floor * max(float(omega @ (psi_k * psi_k)), 1e-300):
        Lpsi[row, J] = math.sqrt(norm2)
        PsitT[J] = col / Lpsi[row, J]
        return J + 1
    return J + 1 if keep_row else J


def _whiten_compact(P, psi, omega, wpsi, coef, PsitT, Lpsi, r, floor):
    """:func:`_whiten` on a truncated basis (eq. (6b)), from the coefficients ``coef`` on the r past sources.
    A column's residual variance against the past is |psi_k|^2 - |coef_k|^2 (Pythagoras on the orthonormal
    past, exact to a relative O(u / floor) of the tolerance, far inside the margin 1 - CANDIDATE_MARGIN).  So
    only the candidates, the columns with at least CANDIDATE_MARGIN times the tolerance left, need their
    residual formed (two projection passes on the candidates only, as in :func:`_whiten`).  The others cannot
    open a source (the new sources of this step only lower the residual): they keep coef_k on the past, plus
    their projection on the sources the candidates before them opened, <psi_k, psit^J>_omega (equal to the
    residual's: the new paths are orthogonal to the past).  A step without candidates reads the past once; one
    with c candidates reads it once for the m columns and three times for the c.  Up to rounding this is the
    column-by-column scheme of :func:`_whiten` with its dropped residuals (m = 8, 40k paths, 600 steps: the
    same law to 6e-16, 1.7x faster than forming every column's residual at every step that opens a source)."""
    M = psi.shape[1]
    var = (wpsi * psi).sum(axis=0)                      # |psi_k|^2_omega
    Lpsi[P : P + M, :r] = coef
    cand = np.flatnonzero((var - (coef * coef).sum(axis=1)) >= CANDIDATE_MARGIN * floor * var)
    if cand.size == 0:
        return r
    past = PsitT[:r]
    dt = past.dtype  # eq. (6d): the products over the stored paths in their precision
    res = psi[:, cand] - (coef[cand].astype(dt, copy=False) @ past).T
    fix = (past @ (omega[:, None] * res).astype(dt, copy=False)).T.astype(float, copy=False)
    res -= (fix.astype(dt, copy=False) @ past).T
    Lpsi[P + cand, :r] += fix
    J, which = r, dict(zip(cand.tolist(), range(cand.size)))
    for k in range(M):
        if k in which:
            J = _open_source(P + k, res[:, which[k]], psi[:, k], omega, PsitT, Lpsi, r, J, floor, keep_row=False)
        elif J > r:
            Lpsi[P + k, r:J] = PsitT[r:J] @ wpsi[:, k].astype(PsitT.dtype, copy=False)
    return J


def _grow_source_rows(setup, t, arrays, coefficients, need, kernels=True):
    """The per-path arrays of a truncated basis (eq. (6b); rows = sources, columns = paths) and its coefficient
    arrays (Bt, Lpsi; last axis = sources) with room for ``need`` sources: twice the room (at least ``need``, at
    most T m), the entries so far copied, the rest zero.  A ThresholdsError when the replica (with the two-time
    ``kernels`` or without) would then pass the memory limit."""
    rows = min(setup.steps * setup.m, max(need, 2 * arrays[0].shape[0]))
    size = setup.memory_bytes(rows, kernels=kernels)
    if size > MAX_MEMORY:
        raise ThresholdsError(f"this DMFT opened {need - setup.m}+ sources by step {t} and needs more than "
                              f"{size / 2**30:.0f} GiB ({setup.paths // setup.replicas} paths per "
                              f"replica, m = {setup.m}); the limit is {MAX_MEMORY / 2**30:.0f} GiB "
                              "(THRESHOLDS_MAX_MEMORY_GB): fewer paths or a larger source tolerance")
    return [_with_room(a, rows, 0) for a in arrays], [_with_room(c, rows, -1) for c in coefficients]


def _with_room(old, size, axis):
    """A zero array like ``old`` with ``size`` entries along ``axis``, ``old`` copied into its leading corner."""
    shape = list(old.shape)
    shape[axis] = size
    new = np.zeros(shape, dtype=old.dtype)
    new[tuple(slice(0, k) for k in old.shape)] = old
    return new


def _C_equal_times(A, Bt, rho0, delta):
    """C(t, t) of eq. (5) on the sources, rho0^2 A(t) A(t)^T + Bt(t) Bt(t)^T / delta: (m, m) for one step's A (m, m)
    and Bt (m, r), (T + 1, m, m) for the stacked arrays."""
    return rho0**2 * A @ np.swapaxes(A, -1, -2) + Bt @ np.swapaxes(Bt, -1, -2) / delta


def _sources_covariances(A, Bt, Lpsi, rho0, delta):
    """C (eq. (5) on the sources) and Cpsi of a finished ``sources`` run, each one product over the stored rows:
    C(t, s)_jk = rho0^2 A(t)_j . A(s)_k + Bt(t)_j . Bt(s)_k / delta and Cpsi(t, s)_jk = Lpsi(t m + j) . Lpsi(s m + k)
    (psi^t = sum_J Lpsi(t m + j, J) psit^J on orthonormal psit; Cpsi(T, .) = 0, no psi^T is whitened).  Arrays
    (T + 1, T + 1, m, m).  The loop needs only tr C(t, t), so the full matrices wait for the end."""
    T1, M = A.shape[0], A.shape[1]
    A2, B2 = A.reshape(T1 * M, M), Bt.reshape(T1 * M, Bt.shape[2])
    C = (rho0**2 * (A2 @ A2.T) + (B2 @ B2.T) / delta).reshape(T1, M, T1, M)
    L2 = Lpsi[: (T1 - 1) * M]
    Cpsi = np.zeros((T1, T1, M, M))
    Cpsi[:-1, :-1] = np.transpose((L2 @ L2.T).reshape(T1 - 1, M, T1 - 1, M), (0, 2, 1, 3))
    return np.ascontiguousarray(np.transpose(C, (0, 2, 1, 3))), Cpsi


def _run_sources(setup, act, link, n, rng, progress, split, Ey2=0.0, kernels=True, stop_above=None):
    """The ``sources`` method of the module docstring, for m >= 1 neurons: sources and
    whitened psi columns are indexed by (step, neuron) pairs J = s m + k.  With easy
    directions (``split.easy`` non-empty) the signal overlaps Msig(t) (r_E x m) enter the
    sample side and follow their own recursion (module docstring, "Easy directions").
    Without ``kernels`` the two-time C and Cpsi are not formed (None), only C(t, t).
    ``stop_above`` (planted runs without kernels, eq. (7e)): the run ends at the first step whose hard fraction
    exceeds it, and every per-step array ends there."""
    T, eta, delta, rho0, M = setup.steps, setup.eta, setup.delta, setup.rho0, setup.m
    kernel = make_psi_kernel_m(act)
    a_j, b_j = per_neuron(setup.a, M), per_neuron(setup.b, M)  # per-neuron second layer
    y, g, gE, omega, tail = _sources_targets(link, n, setup.g_nodes, rng, split, setup.label_cap)
    rE = split.easy.shape[0]
    Msig = np.zeros((T + 1, rE, M))                # overlaps of theta_j with the signal directions
    hard_rows = slice(rE - split.hard.shape[0], rE)  # with ``planted``: the last r_H rows (_link_split)
    test = (np.zeros(T + 1) if setup.population_risk else np.full(T + 1, np.nan)) if rE else None
    if rE:  # population risk by fresh Gaussian draws of the orthogonal part (own generator, drawn either way)
        test_rng = np.random.default_rng(rng.integers(2**63))
        sig = act.numpy(0)
    zeta = _forcing_weights(setup, rng, omega) if setup.forcing_n else None
    noise_rng = _own_generator(rng, 8) if setup.response_noise else None   # eq. (6c); the paths do not change
    gE_forced = None if zeta is None else np.hstack([gE, gE[:, hard_rows] * zeta[:, None]])  # eq. (7b)
    joint = 1.0 + zeta if setup.forcing_joint else None   # eq. (7d)
    nu = rng.standard_normal((n, M))
    # Per-path arrays are stored (column J, path): row J of epsT is source J = s m + k (causal in the horizon),
    # row J of PsitT the whitened psi path J, so that X[:P] is one contiguous block (the memory-bound products).
    # The rows of epsT are drawn as sources open, in order from the same stream (the generator fills an array
    # row by row, and nothing else draws from ``rng`` below): the numbers of one draw of all T m rows, without
    # drawing the rows a truncated basis (eq. (6b)) never opens.
    rows = setup.first_source_rows()
    dt = np.dtype(setup.path_dtype)  # eq. (6d)
    epsT = np.empty((rows, n), dtype=dt)
    drawn = 0
    A = np.zeros((T + 1, M, M))
    A[0] = (np.linalg.cholesky(np.reshape(setup.initial_gram, (M, M))) if setup.initial_gram  # eq. (7c)
            else np.eye(M))
    Bt = np.zeros((T + 1, M, rows))      # Bt(t, k, J), J < r <= rows (the room for sources, as the path arrays')
    Lpsi = np.zeros((T * M, rows))      # Lpsi(s m + k, J)
    PsitT = np.zeros((rows, n), dtype=dt)   # whitened psi paths
    both = np.empty((rows, n), dtype=dt)    # eps / sqrt(delta) + psit / delta per source row (rows as drawn)
    snaps = dict.fromkeys(checkpoints(T))
    psi = np.empty((n, M))
    loss = np.empty(n)
    train = np.zeros(T + 1)
    sq = math.sqrt(delta)
    compact = setup.source_tol > 0  # eq. (6b): only the columns above the tolerance open a source
    floor = setup.source_tol if compact else INNOVATION_FLOOR
    r = 0  # source rows in use: every column's (t m) or, compact, the opened ones
    if setup.own_term:  # eq. (6e)
        own = _OwnTerm(nu, omega, rho0)
    for t in range(T + 1):
        P = t * M
        if setup.planted and t <= setup.planted_step:  # eq. (7): M_H = 0 (its d = inf value), then the planted start
            Msig[t, hard_rows] = np.asarray(setup.planted, dtype=float) if t == setup.planted_step else 0.0
        if r > drawn:
            epsT[drawn:r] = rng.standard_normal((r - drawn, n))
            if setup.source_orth:   # eq. (6g)
                epsT[drawn:r] = _orthogonal_rows(epsT[drawn:r], PsitT[:r], omega)
            # a source row's two path terms at once: u = rho0 nu A^T + Bt (eps / sqrt(delta) + psit / delta)
            both[drawn:r] = epsT[drawn:r] / sq + PsitT[drawn:r] / delta
            drawn = r
        Bt_t = Bt[t, :, :r]
        # eq. (1): the Gaussian part on the sources plus the memory term on the whitened psi paths
        u = rho0 * nu @ A[t].T + (Bt_t.astype(dt, copy=False) @ both[:r]).T
        if setup.own_term:
            own.subtract(u, Bt_t, PsitT[:r])
        if rE:
            u += gE * Msig[t, 0] if rE == 1 else gE @ Msig[t]   # (n, 1) @ (1, m) by broadcasting: faster
        # ||theta||^2: tr C(t, t) of eq. (5) plus the signal overlaps (C itself is formed after the loop)
        norm2 = (rho0**2 * np.vdot(A[t], A[t]) + np.vdot(Bt_t, Bt_t) / delta + np.vdot(Msig[t], Msig[t])) / M
        _check_finite(t, norm2, u, eta)
        kernel(u, y, a_j, b_j, psi, loss)
        train[t] = float(omega @ loss)
        if rE and setup.population_risk:
            test[t] = _test_loss_signal(sig, a_j, b_j, gE @ Msig[t], y, omega, _C_equal_times(A[t], Bt_t, rho0, delta),
                                        Ey2, test_rng)
        if progress is not None:
            progress(t)
        if t in snaps:
            snaps[t] = u.copy()
        ended = stop_above is not None and np.sum(Msig[t, hard_rows] ** 2) / M > stop_above * norm2   # eq. (7e)
        if t == T or ended:
            w = rho0 * nu @ A[t].T + (Bt_t.astype(dt, copy=False) @ epsT[:r]).T / sq   # the Gaussian part, kept with the law
            break
        wpsi = omega[:, None] * psi
        if setup.own_term:
            own.record(epsT[:r])
        if r + M > epsT.shape[0]:   # eq. (6b): room for the m sources this step may open
            (epsT, PsitT, both), (Bt, Lpsi) = _grow_source_rows(setup, t, (epsT, PsitT, both), (Bt, Lpsi), r + M,
                                                                kernels)
        r_new = _whiten(P, psi, omega, PsitT, Lpsi, r, floor, compact, wpsi)
        _sources_step(t, setup, wpsi, nu, epsT, gE, Lpsi, A, Bt, Msig, r, r_new, gE_forced, hard_rows, omega,
                      noise_rng, joint)
        r = r_new
        if setup.sphere:
            _rescale_to_sphere(t, r, A, Bt, Msig, rho0, delta)
    if t < T:   # eq. (7e): the run ended at step t
        A, Bt, Msig, train = A[: t + 1], Bt[: t + 1], Msig[: t + 1], train[: t + 1]
        test = None if test is None else test[: t + 1]
        snaps = {s: v for s, v in snaps.items() if s <= t}
    C, Cpsi, Ctt = None, None, None
    if kernels:
        C, Cpsi = _sources_covariances(A, Bt[:, :, :r], Lpsi[:, :r], rho0, delta)
    else:   # C(t, t) of eq. (5) alone
        Ctt = _C_equal_times(A, Bt[:, :, :r], rho0, delta)
    if M == 1:
        A, u, w = A[:, 0, 0], u[:, 0], w[:, 0]
        C, Cpsi, Ctt = (C[:, :, 0, 0], Cpsi[:, :, 0, 0], None) if kernels else (None, None, Ctt[:, 0, 0])
        snaps = {s: v[:, 0] for s, v in snaps.items()}
    return ReplicaRun(A, None, C, Cpsi, None, train, (u, y, g, w), omega, snaps, Msig, test, sources=r, Ctt=Ctt,
                      label_tail=tail)


def _run_pathwise(setup, act, link, n, rng, A, B, C, Cpsi, R, progress):
    """The ``pathwise`` method: Gaussian path by a growing Cholesky factor of C,
    exact pathwise responses (module docstring)."""
    T, eta, delta, lam, rho0 = setup.steps, setup.eta, setup.delta, setup.weight_decay, setup.rho0
    if not act.has_second_derivative:
        act.derivative(2)  # raises NotDifferentiableError with the standard message
    kernel = make_psi_kernel(act, True)
    s0 = compiled_activation(act, True)[0]
    y, g, omega = draw_targets(link, n, setup.g_nodes, rng)
    g = g[:, 0]
    xi = rng.standard_normal((T + 1, n)).T
    L = np.zeros((T + 1, T + 1))
    Psi = np.zeros((n, T + 1))
    dPsi = np.zeros((n, T + 1))
    J = np.zeros((n, T + 1, T + 1))
    snaps = dict.fromkeys(checkpoints(T))
    psi = np.empty(n)
    dpsi = np.empty(n)
    train = np.zeros(T + 1)
    for t in range(T + 1):
        C[t, : t + 1] = _C_row(t, A, B, Cpsi, rho0, delta)
        C[: t + 1, t] = C[t, : t + 1]
        _check_finite(t, C[t, t], None, eta)
        _cholesky_row(t, L, C[t, : t + 1])
        w = xi[:, : t + 1] @ L[t, : t + 1]
        u = w + (eta / delta) * (Psi[:, :t] @ (B[t, :t] / eta)) if t > 0 else w.copy()
        _sample_step(t, C, u, y, omega, setup, kernel, s0, psi, dpsi, train, progress)
        if t in snaps:
            snaps[t] = u.copy()
        if t == T:
            break
        Psi[:, t] = psi
        dPsi[:, t] = dpsi
        Cpsi[t, : t + 1] = (omega * psi) @ Psi[:, : t + 1]
        Cpsi[: t + 1, t] = Cpsi[t, : t + 1]
        J[:, t, t] = 1.0
        if t > 0:
            coef = (eta / delta) * (B[t, :t] / eta)
            J[:, t, :t] = np.einsum("r,nr,nrs->ns", coef, dPsi[:, :t], J[:, :t, :t])
        R[t, : t + 1] = (omega * dpsi) @ J[:, t, : t + 1]
        _weight_side(t, R, A, B, eta, lam)
        if setup.sphere:
            b_row = B[t + 1, : t + 1]
            scale = rho0 / math.sqrt(rho0**2 * A[t + 1] ** 2 + b_row @ Cpsi[: t + 1, : t + 1] @ b_row / delta)
            A[t + 1] *= scale
            B[t + 1, : t + 1] *= scale
    wg2 = omega * g * g  # eq. (9): the hard coordinate's linear response and the sample forcing
    KM = np.einsum("n,nt,nts->ts", wg2, dPsi[:, :T], J[:, :T, :T])
    KF = (wg2[:, None] * Psi[:, :T]).T @ Psi[:, :T]
    return ReplicaRun(A, B, C, Cpsi, R, train, (u, y, g, w), omega, snaps, hard_kernel=KM, hard_source=KF)


def _train_loss(u, y, omega, a, b, s0):
    from .kernels import train_loss_kernel
    return train_loss_kernel(u, y, omega, a, b, s0)


def _run_linear(setup, affine, A, B, C, Cpsi, R, Ey, Ey2):
    """Closed-form sample side for sigma(x) = c1 x + c0 (module docstring).

    psi = a c1 (yt - a c1 u) with yt = y - a (c1 b + c0); u^t = (F w)^t + kappa_t yt with
    F(t, .) = e_t - (eta/delta) a^2 c1^2 sum_{s<t} chi(t,s) F(s, .) and
    kappa_t = (eta/delta) a c1 sum_{s<t} chi(t,s) (1 - a c1 kappa_s); R = -a^2 c1^2 F.
    """
    c1, c0 = affine
    T, eta, delta, lam, a, b, rho0 = (setup.steps, setup.eta, setup.delta, setup.weight_decay,
                                       setup.a, setup.b, setup.rho0)
    k = a * (c1 * b + c0)
    Eyt2 = Ey2 - 2 * k * Ey + k * k
    ac = a * c1
    F = np.zeros((T + 1, T + 1))
    kappa = np.zeros(T + 1)
    train = np.zeros(T + 1)
    for t in range(T + 1):
        C[t, : t + 1] = _C_row(t, A, B, Cpsi, rho0, delta)
        C[: t + 1, t] = C[t, : t + 1]
        if not (np.isfinite(C[t, t]) and C[t, t] < BLOWUP):
            raise DivergenceError(f"DMFT diverged at step {t}: ||theta||^2 = {C[t, t]:.3g}")
        chi_t = B[t, :t] / eta
        F[t, t] = 1.0
        if t > 0:
            F[t, :t] = -(eta / delta) * ac * ac * (chi_t @ F[:t, :t])
            kappa[t] = (eta / delta) * ac * np.sum(chi_t * (1 - ac * kappa[:t]))
        Cu = F[: t + 1, : t + 1] @ C[: t + 1, : t + 1] @ F[: t + 1, : t + 1].T
        # E[u^t u^s] = Cu + kappa_t kappa_s E[yt^2]; E[yt u^s] = kappa_s E[yt^2]
        Euu = Cu[t] + kappa[t] * kappa[: t + 1] * Eyt2
        cp = ac * ac * (Eyt2 - ac * kappa[: t + 1] * Eyt2 - ac * kappa[t] * Eyt2 + ac * ac * Euu)
        train[t] = 0.5 * cp[t] / (ac * ac) if ac != 0 else 0.5 * Eyt2
        if t == T:
            break
        Cpsi[t, : t + 1] = cp
        Cpsi[: t + 1, t] = cp
        R[t, : t + 1] = -ac * ac * F[t, : t + 1]
        _weight_side(t, R, A, B, eta, lam)
    empty = np.zeros(0)
    return ReplicaRun(A, B, C, Cpsi, R, train, (empty, empty, empty, empty), np.zeros(0), {})


@dataclass
class ReplicaRun:
    """One replica of a back-end: kernels (B and R are None for ``sources``, which never forms them; A, C,
    Cpsi are m x m blocks per step for m > 1), the train loss per step, the paths at the final step
    ``law`` = (u, y, g, w) with weights ``omega``, the pre-activations at the checkpoints, and with easy
    directions the signal overlaps M(t) (T+1, r_E, m) and the population risk per step (else None)."""

    A: np.ndarray
    B: np.ndarray | None
    C: np.ndarray
    Cpsi: np.ndarray
    R: np.ndarray | None
    train: np.ndarray
    law: tuple
    omega: np.ndarray
    snapshots: dict
    signal: np.ndarray | None = None
    test: np.ndarray | None = None
    hard_kernel: np.ndarray | None = None   # ``pathwise``: K_M(t, r) = E[g^2 psi'(u^t) J(t, r)] (eq. (9))
    hard_source: np.ndarray | None = None   # ``pathwise``: K_F(s, r) = E[g^2 psi^s psi^r]
    sources: int | None = None              # ``sources``: source rows in use at the end (eq. (6b))
    Ctt: np.ndarray | None = None           # C(t, t) per step ((T+1,) or (T+1, m, m)); None: the diagonal of C
    label_tail: tuple = (0, 0)              # ``sources`` with a label cap (eq. (10d)): (rejected, drawn) paths

    def C_diag(self) -> np.ndarray:
        """C(t, t) per step: (T+1,) at m = 1, (T+1, m, m) otherwise."""
        if self.Ctt is not None:
            return self.Ctt
        return np.diag(self.C) if self.C.ndim == 2 else np.einsum("ttjk->tjk", self.C)


RESPONSES = {"sources": "Gaussian integration by parts on independent sources (O(N T^2), no inverse)",
             "pathwise": "pathwise tangent J(t,s) (O(N T^3), exact per path)",
             "linear": "closed form for affine activations (no sampling)"}


def solve_dmft(setup: DMFTSetup, *, progress=None, cache: bool = False, kernels: bool = True,
               stop_above: float | None = None) -> DMFTResult:
    """Run the DMFT for ``setup``; ``progress(done, total)`` is called once per step.
    With ``cache``, a result for the identical setup is read from / written to disk.  ``kernels`` False (the
    ``sources`` back-end only): the result's two-time C and Cpsi are None, the per-step curves unchanged
    (a forced trial keeps only those: at m = 4 and 600 steps C and Cpsi are 46 MB each, and forming them 2-4%
    of the run's time); such a result is never cached.  ``stop_above`` (eq. (7e); a planted run of one replica
    without kernels): the run ends at the first step whose hard fraction exceeds it, and the result's per-step
    arrays end there (``t`` says where)."""
    if not kernels and setup.response != "sources":
        raise ThresholdsError("only the 'sources' back-end can skip the two-time kernels")
    if stop_above is not None and (kernels or not setup.planted or setup.replicas != 1):
        raise ThresholdsError("a run that ends at a hard fraction (eq. (7e)) needs a planted start, one replica "
                              "and no two-time kernels")
    setup.validate(kernels=kernels)
    if cache and kernels:
        from . import cache as _cache
        hit = _cache.load("dmft", setup.cache_key(), expect=DMFTResult)
        if hit is not None:
            return _orbits_now(hit)
        result = solve_dmft(setup, progress=progress, cache=False)
        _cache.store("dmft", setup.cache_key(), result)
        return result
    act = get_activation(setup.activation)
    link = get_link(setup.link)
    split = _link_split(link, setup)
    Ey, Ey2 = y_moments(link)
    start = time.time()
    replicas = 1 if setup.response == "linear" else setup.replicas
    n = setup.paths // replicas
    outs = []
    total = replicas * (setup.steps + 1)
    for r in range(replicas):
        cb = (lambda t, r=r: progress(r * (setup.steps + 1) + t + 1, total)) if progress else None
        outs.append(_run_replica(setup, act, link, n, np.random.default_rng([setup.seed, r]), Ey, Ey2, cb, split,
                                 kernels, stop_above))
    rows = _per_replica_outputs(setup, act, outs, Ey, Ey2, split.easy.shape[0])
    (n2, n2e), (o2, o2e), (tr, tre), (te, tee), (sg, sge), (eo, eoe) = map(mean_se_rows, rows)
    hard = {}
    if setup.planted:  # the last r_H signal rows are the hard directions (_link_split)
        per = np.sum(rows[4][:, :, -split.hard.shape[0]:] ** 2, axis=2).mean(axis=2)   # (replicas, T+1)
        (ho, hoe), (hf, hfe) = mean_se_rows(per), mean_se_rows(per / np.maximum(rows[0], 1e-300))
        hard = dict(hard_overlap=ho, hard_overlap_err=hoe, hard_fraction=hf, hard_fraction_err=hfe,
                    hard_signal=rows[4][:, :, -split.hard.shape[0]:, :])
    if outs[0].hard_kernel is not None:
        hard["hard_kernels"] = [(o.hard_kernel, o.hard_source) for o in outs]
    first = outs[0]
    chi = first.B / setup.eta if first.B is not None else None
    train = np.array([o.train for o in outs])
    orbit = orbiting_replicas(train)   # eq. (10)
    return DMFTResult(setup, np.arange(train.shape[1]), n2, n2e, o2, o2e, tr, tre, te, tee,
                      first.C, first.R, first.Cpsi, chi, *first.law, final_weights=first.omega,
                      replica_laws=[(o.law[0], o.law[1], o.law[2], o.omega) for o in outs],
                      snapshots={t: [o.snapshots[t] for o in outs] for t in (first.snapshots or {})},
                      seconds=time.time() - start, notes=_notes(setup, split, replicas, n, Ey, Ey2, outs, orbit),
                      signal=sg, signal_err=sge, easy_overlap=eo, easy_overlap_err=eoe,
                      easy_basis=split.easy.tolist() or None,
                      sources=[o.sources for o in outs] if setup.response == "sources" else None,
                      period_two=orbit, replica_train=train, **hard,
                      label_tail=(tuple(int(sum(o.label_tail[i] for o in outs)) for i in (0, 1))
                                  if setup.label_cap else None))


PERIOD_TWO_WINDOW = 20     # eq. (10): the last W = min(20, T / 4) steps
PERIOD_TWO_AMPLITUDE = 1e-3  # eq. (10): the smallest change counted, relative to the loss


def _orbit_note(orbit: list, replicas: int) -> list:
    if not orbit:
        return []
    return [f"replica(s) {', '.join(map(str, orbit))} of {replicas} end in a period-2 orbit or a longer oscillation "
            "(eq. (10): the train loss keeps going up and down; the step is above the stability limit of some "
            "direction, e.g. that of a path with a large label, eq. (10b)): their checkpoints sit on the orbit, not "
            "at a settled state"]


def _orbits_now(res: DMFTResult) -> DMFTResult:
    """A cached result with ``period_two`` and its note made by eq. (10) as it stands, where the result kept its
    replicas' train losses."""
    if res.replica_train is None:
        return res
    orbit = orbiting_replicas(res.replica_train)
    if orbit != res.period_two:
        res.notes = ([n for n in res.notes if "end in a period-2 orbit" not in n]
                     + _orbit_note(orbit, len(res.replica_train)))
        res.period_two = orbit
    return res


def orbiting_replicas(train) -> list:
    """The replicas (rows of ``train``, losses over steps 0..T) flagged by eq. (10)."""
    return [r for r, row in enumerate(train) if period_two_orbit(row)]


FIT_SCALE_MAX = 50.0   # eq. (10c): the largest scale s of the fitted point u* = s u searched


def unstable_fraction(setup: DMFTSetup, u, y, w) -> float:
    """Eq. (10c) on one replica's paths (u (N,) or (N, m) pre-activations, labels y, weights w summing to 1): the
    weight of the paths whose own step at the point fitted along their own direction is unstable."""
    lam = fitted_eigenvalues(setup.activation, setup.a, setup.b, u, y, setup.eta / setup.delta)
    return float(np.sum(np.asarray(w, dtype=float)[lam < -1.0]))


def fitted_eigenvalues(activation: str, a, b, u, y, c) -> np.ndarray:
    """Eq. (10c) per sample: 1 - c sum_j (a_j sigma'(u*_j + b_j))^2 / m at u* = s u with f(u*) = y (c = eta ||x||^2 /
    n: eta / delta at d = inf), nan where no s in (0, FIT_SCALE_MAX] fits (f(0) < y < f(FIT_SCALE_MAX u) is
    required).  The scale is found by bisection on every sample at once."""
    act = get_activation(activation)
    sigma, d1 = act.numpy(0), act.numpy(1)
    y = np.atleast_1d(np.asarray(y, dtype=float)).ravel()
    u = np.asarray(u, dtype=float).reshape(len(y), -1)
    m = u.shape[1]
    a, b = per_neuron(a, m), per_neuron(b, m)
    ones = np.ones_like(u)
    gap = (lambda scale: np.mean(a * sigma(scale[:, None] * u + b) * ones, axis=1) - y)
    lo, hi = np.zeros(len(y)), np.full(len(y), FIT_SCALE_MAX)
    valid = (gap(lo) < 0) & (gap(hi) > 0)
    for _ in range(60):   # FIT_SCALE_MAX / 2^60: the scale to rounding
        mid = 0.5 * (lo + hi)
        below = gap(mid) < 0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    star = 0.5 * (lo + hi)[:, None] * u + b
    lam = 1.0 - c * np.sum((a * d1(star) * ones) ** 2, axis=1) / m
    return np.where(valid, lam, np.nan)


SETTLED_EIGENVALUE = -0.8   # eq. (10d): the own-step eigenvalue of eq. (10c) at the label cap of a settled law
LIMIT_DIRECTIONS = 32   # eq. (10d): random directions of u (and their negatives) on which the limit is compared
LIMIT_RTOL = 1e-6        # eq. (10d): the largest relative spread of y_c over the directions read as "label alone"


@functools.lru_cache(maxsize=256)
def stable_label_limit(activation: str, a, b, m: int, eta: float, delta: float, loss: str = "square",
                       weight_decay: float = 0.0, bound: float = -1.0) -> float:
    """Eq. (10d): the label y_c above which a sample's own step at its fitted point has lambda* < ``bound`` (eq.
    (10c); -1: unstable), inf where no fitted label is; UnsupportedError where it depends on the direction of u.  The
    directions are +-1 at m = 1, else LIMIT_DIRECTIONS Gaussian ones (seeded), the all-ones direction and their
    negatives, scaled to |u|^2 = m.  Along each direction the unstable labels it fits must be those above one y_c,
    the same for every direction (bisection from a log grid of labels y >= 0; a tail of negative labels is not looked
    for), and no direction may fit a stable label above it."""
    if loss != "square" or weight_decay:
        raise UnsupportedError("the stability limit of eq. (10c) is derived for the square loss without weight decay")
    act = get_activation(activation)
    a_j, b_j = per_neuron(a, m), per_neuron(b, m)
    if m == 1:
        dirs = np.array([[1.0], [-1.0]])
    else:
        raw = np.vstack([np.ones(m), np.random.default_rng(LIMIT_DIRECTIONS).standard_normal((LIMIT_DIRECTIONS, m))])
        raw = np.vstack([raw, -raw])
        dirs = raw * math.sqrt(m) / np.linalg.norm(raw, axis=1)[:, None]
    k, c = len(dirs), eta / delta
    sigma = act.numpy(0)
    ends = [np.mean(a_j * sigma(scale * dirs + b_j) * np.ones_like(dirs), axis=1) for scale in (0.0, FIT_SCALE_MAX)]
    lowest, top = np.minimum(*ends), np.maximum(*ends)          # the labels fitted along each direction
    base = max(float(np.min(lowest)), 0.0)
    grid = base + (float(np.max(top)) - base) * np.logspace(-6, 0, 241)[:-1]
    lam = fitted_eigenvalues(activation, a, b, np.tile(dirs, (len(grid), 1)), np.repeat(grid, k), c).reshape(-1, k)
    unstable, fitted = lam < bound, np.isfinite(lam)
    if not unstable.any():
        return math.inf
    refuse = UnsupportedError(f"the own step of {activation} (a = {a!r}, b = {b!r}) is not unstable on one tail of "
                              "labels y > y_c along every direction of u (eq. (10c)); conditioned labels (eq. (10d)) "
                              "need a limit of the label alone")
    has = unstable.any(axis=0)
    first = np.argmax(unstable, axis=0)
    for j in np.flatnonzero(has):   # along j: every fitted label from the first unstable one on is unstable
        if not np.all(unstable[first[j]:, j] | ~fitted[first[j]:, j]):
            raise refuse
    lo = np.where(first > 0, grid[np.maximum(first - 1, 0)], base)[has]
    hi = grid[first][has]
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        bad = fitted_eigenvalues(activation, a, b, dirs[has], mid, c) < bound
        lo, hi = np.where(bad, lo, mid), np.where(bad, mid, hi)
    limits = 0.5 * (lo + hi)
    y_c = float(limits.min())
    if (limits.max() - y_c) / limits.max() > LIMIT_RTOL:
        raise UnsupportedError(f"the stability limit of eq. (10c) depends on the direction of u for {activation} (a = "
                               f"{a!r}, b = {b!r}): y_c from {y_c:.4g} to {limits.max():.4g}; conditioned labels "
                               "(eq. (10d)) need a limit of the label alone")
    if np.any(fitted[grid > y_c * (1 + 1e-3)][:, ~has]):   # a direction fitting a stable label above y_c
        raise refuse
    return y_c


def period_two_orbit(train) -> bool:
    """Eq. (10): the train loss of one replica (steps 0..T) goes up and down over its last W = min(20, T / 4) steps,
    by more than 1e-3 of itself, at least W / 4 times each way (a period-2 orbit does each W / 2 times)."""
    train = np.asarray(train, dtype=float)
    window = min(PERIOD_TWO_WINDOW, (len(train) - 1) // 4)
    if window < 2 or not np.all(np.isfinite(train[-window - 1:])):
        return False
    tail = train[-window - 1:]
    change = np.diff(tail) / np.maximum(np.abs(tail[:-1]), 1e-300)
    need = window / 4
    return bool(np.sum(change > PERIOD_TWO_AMPLITUDE) >= need and np.sum(change < -PERIOD_TWO_AMPLITUDE) >= need)


def _per_replica_outputs(setup, act, outs, Ey, Ey2, rE):
    """Per replica and step: ||theta||^2 and <theta^t, theta^0> (means over neurons), train and test loss,
    the signal overlaps M(t) and (1/m) sum_j |M_j|^2 (arrays with one row per replica)."""
    fns = compiled_activation(act, False)
    train = np.array([o.train for o in outs])
    if setup.m == 1:
        norm2 = np.array([o.C_diag() for o in outs])
        ov = np.array([setup.rho0**2 * o.A * o.A[0] for o in outs])   # <theta^t, theta^0>, A(0) of eq. (7c)
        test = None if rE else np.array([[_test_loss(fns, setup.a, setup.b, q, Ey, Ey2) for q in row]
                                         for row in norm2])
    else:  # per-neuron means of ||theta_j||^2 and <theta_j^t, theta_j^0>
        diag = [np.einsum("tjj->tj", o.C_diag()) for o in outs]
        norm2 = np.array([dg.mean(axis=1) for dg in diag])
        ov = np.array([setup.rho0**2 * np.einsum("tjk,jk->t", o.A, o.A[0]) / setup.m for o in outs])
        sig = act.numpy(0)
        a_j, b_j = per_neuron(setup.a, setup.m), per_neuron(setup.b, setup.m)
        test = None if rE else np.array([[_test_loss_m(sig, a_j, b_j, ctt, Ey, Ey2) for ctt in o.C_diag()]
                                         for o in outs])
    signal = np.array([o.signal for o in outs]) if rE else np.zeros((len(outs), setup.steps + 1, 0, setup.m))
    easy = np.sum(signal**2, axis=2).mean(axis=2)  # (1/m) sum_j |M_j|^2 per replica and step
    if rE:  # ||theta_j||^2 = C_perp + |M_j|^2; population risk from the replica's own paths
        norm2 = norm2 + easy
        test = np.array([o.test for o in outs])
    return norm2, ov, train, test, signal, easy


def _notes(setup, split, replicas, n, Ey, Ey2, outs, orbit) -> list:
    notes = [f"response: {RESPONSES[setup.response]}",
             f"error bars: standard error over {replicas} replica(s) of {n} paths"
             if replicas > 1 else "closed form: no Monte Carlo error"]
    if setup.source_tol:
        opened = [o.sources for o in outs]
        notes.append(f"source basis truncated at relative innovation variance {setup.source_tol:g} (eq. (6b)): "
                     f"{min(opened)}-{max(opened)} of {setup.steps * setup.m} sources per replica")
    size = self_interaction(setup, n, [o.sources for o in outs])
    if size is not None and size > SELF_INTERACTION_NOTE:
        notes.append(f"self-interaction (eq. (6f)): each path's own term returns to it at about {size:.2g} of its "
                     f"memory term, above {SELF_INTERACTION_NOTE:g}: the law is biased by its paths (quad, m = 16, "
                     "delta 2: 0.18 halves the train loss at step 600 against 80000 paths at tolerance 1e-2, 0.03, "
                     "which agree with GD); use more paths or a larger source tolerance")
    if setup.planted:
        where = ("every hard direction and neuron" if not isinstance(setup.planted, tuple)
                 else "every hard direction, per neuron")
        value = (f"{setup.planted:g}" if not isinstance(setup.planted, tuple)
                 else "(" + ", ".join(f"{q:g}" for q in setup.planted) + ")")
        notes.append(f"planted start: M_H = {value} at step {setup.planted_step} (0 before) on {where}; the hard "
                     "directions are the last signal rows (eq. (7))")
    notes += _orbit_note(orbit, replicas)
    if setup.label_cap:
        rejected, drawn = (int(sum(o.label_tail[i] for o in outs)) for i in (0, 1))
        notes.append(f"labels conditioned on y <= {setup.label_cap:.6g} (eq. (10d)): {rejected} of {drawn} drawn paths "
                     f"rejected (P = {rejected / drawn:.2g}), the law of GD's samples at the dimensions whose data set "
                     "holds no label past the cap" + (f" (d << 1 / (delta P) = {drawn / (rejected * setup.delta):.3g})"
                                                      if rejected else ""))
    if split.easy.shape[0]:
        notes += [f"easy directions (rows, in the latent coordinates): {split.easy.tolist()}; "
                  "C is the covariance of the parts orthogonal to the latent subspace, "
                  "||theta||^2 = C(t,t) + |M(t)|^2",
                  f"test loss: population risk over the replica's (g, y) paths with {TEST_DRAWS} fresh "
                  "draws of the orthogonal part per path" if setup.population_risk
                  else "test loss: not computed (population_risk False), NaN"]
    else:
        notes.append("test loss: population risk with w ~ N(0, " + ("||theta||^2" if setup.m == 1 else "C(t,t)")
                     + f") independent of y (null case); E[y] = {Ey:.10g}, E[y^2] = {Ey2:.10g}")
    return notes


SELF_INTERACTION_NOTE = 0.05   # eq. (6f): the size above which a run's notes say its law is biased by its paths


def self_interaction(setup: DMFTSetup, paths: int, opened) -> float | None:
    """Eq. (6f): delta (r + m) / N, r the sources opened (mean over the replicas), N the paths per replica; None
    where there is none to size (not the ``sources`` back-end, the own term subtracted, or no sources listed)."""
    if setup.response != "sources" or setup.own_term or not opened:
        return None
    return float(setup.delta * (np.mean(opened) + setup.m) / paths)


def _link_split(link: Link, setup: DMFTSetup):
    """Easy / hard split of the link; easy directions are solved by the ``sources`` back-end.  With a
    planted hard overlap the hard rows are appended to the signal rows (``easy``) (eq. (7)) and kept
    as ``hard`` for the law's hard coordinate."""
    from .alg import LatentSplit, latent_split
    split = latent_split(link)
    if setup.planted:
        if not split.hard.shape[0]:
            raise UnsupportedError(f"link {link.name!r} has no hard direction to plant an overlap in")
        split = LatentSplit(np.vstack([split.easy.reshape(-1, split.k), split.hard]), split.hard)
    if split.easy.shape[0] and setup.response != "sources":
        raise UnsupportedError(
            f"link {link.name!r} has {split.easy.shape[0]} easy direction(s); the DMFT with easy "
            "directions is solved by the 'sources' back-end")
    return split

// Package seqcount is the count-based anytime-valid parity judge: per step (15-20 s), both tracks'
// request counts and an SLI's numerator, differenced from raw per-pod cumulative counters
// (Increase, LatencySteps), feed two one-sided e-processes: FAIL against the floor, PASS against
// the margin. It is a pure library: no Prometheus client, no I/O, no logging.
//
// The development record of its design, with earlier figures, is docs/seqcount-history.md.
//
// # The contrast
//
// Step i gives, per track, Requests R and a numerator N: errors (5xx), requests slower than a
// latency bound (Proportion), or CPU seconds or heap bytes summed over the step's requests
// (PerRequest). With stable's step rate r_s,i = N_s,i/R_s,i and a boundary B (gray's rate <=
// stable's x (1+B.Rel) + B.Abs), the linearised contrast is
//
//	x_i(B) = N_g,i - R_g,i (r_s,i (1+B.Rel) + B.Abs).
//
// Given the step's common conditions (load, the shared dependency's health), gray's expected count
// is R_g,i times its rate; if that rate is at most the boundary applied to stable's rate, E[x_i] is
// at most 0 up to the noise of r_s,i, which has mean zero. A drift shared by both tracks moves
// r_s,i and gray's rate together, so it cancels. Steps where either track has no requests are left
// out (counted and noted), as are steps with non-finite, negative or implausible (> 1e15) counts
// and, for Proportion, Num above Requests. More than a fifth of the steps seen left out holds any
// verdict (NO DATA naming the causes), and non-finite counts anywhere withhold a PASS.
//
// # The e-process
//
// With S_n = sum x_i and V_n a variance of S_n, exp(lambda S_n - lambda^2 V_n/2) is, for a fixed
// lambda >= 0, a nonnegative supermartingale under E[x_i] <= 0 when the x_i are conditionally
// sub-Gaussian with variance proxies summing to V_n (for counts of many requests, the normal
// approximation of a binomial or a sum). Mixing over lambda with a half-normal prior of scale c,
// density 2/(c sqrt(2 pi)) exp(-lambda^2/(2c^2)) on lambda >= 0, and completing the square,
//
//	E_n = int_0^inf exp(lambda S - lambda^2 V/2) 2 phi(lambda/c)/c dlambda
//	    = 2 (1 + c^2 V)^(-1/2) exp(S^2/(2a)) Phi(S/sqrt(a)),   a = V + 1/c^2,
//
// a mixture of supermartingales, so a supermartingale with E_0 = 1; by Ville's inequality P(E_n >=
// K/Alpha at any n) <= Alpha/K, however often it is read. It is computed in log space (logPhi uses
// Erfc, and its asymptotic series in the far tail). That is the e-process of PerRequest SLIs;
// Proportion SLIs, counts of few events whose tails are not a normal's, replace lambda^2 V/2 by
// their counts' cumulants and the integral by a grid (see "The variance"). The FAIL test is E_n of x(Floor): it rejects
// "gray within the floor". The PASS test is E_n of -x(Margin): it rejects "gray at or beyond the
// margin". Each is read at the bar K/Alpha; a union bound over K SLIs gives Alpha per rollout for
// each kind of error. A FAIL wins a tie (a gray between floor and margin can earn both). Judge runs
// over the steps in order and looks at every usable step from the MinSteps-th on. A FAIL stops it
// (Result.Rejected): a stopped e-process, so the verdict is the same whenever the window is read
// again with more steps. A PASS does not: the FAIL test goes on to the last step ("Watching after a
// PASS"), and a FAIL after the PASS replaces it (Result.Passed keeps the PASS's step).
//
// The prior scales are fixed at the first look, each the lambda that is best for the effect its
// test must see: c = mu_1/v_1, where mu_1 is that effect's expected contrast in one step and v_1
// the variance of one step at the test's null, the floor for FAIL and the margin for PASS (for
// Proportion, the model variance of the first usable step; for PerRequest, the empirical per-step
// variance of the first looks' contrasts, a plug-in). The FAIL test's effect is (margin - floor),
// mu_1 = R_g (r_s (M.Rel - F.Rel) + M.Abs - F.Abs); the PASS test's is the distance from parity to
// the margin, mu_1 = R_g (r_s M.Rel + M.Abs), which a gray at parity shows. The FAIL test's target
// is the margin, or twice the floor where the margin is nearer the floor than the floor is to
// parity (failTarget): the catalog's latency limits just above 50 ms put the 1.10 margin a hair
// beyond the 5 ms floor (1.096 at a 52 ms p99), and a prior tuned to that hair would weigh an
// effect too small to matter; with the target at twice the floor p99 +20% FAILs within 10
// minutes in 98 and 95 of 100 runs (TestLatencyFailAtTheFloorSwitch). If either is not a
// positive number, c^2 = 2 log(bar)/(10 v_1), which weighs most the evidence that reaches the bar
// in about 10 steps. The FAIL test of a Proportion SLI reads gray's counts at their Poisson
// cumulant ("The variance"), and its c is the lambda that bound's own likelihood picks for mu_1,
// the root of g (e^c - 1) + s c = mu_1 with g and s gray's and stable's parts of v_1: log(1 +
// d/p) for gray's part alone, p the floor's rate and d the effect. At the catalog's error limits
// (floor +0.1 point, margin +0.5) the normal's mu_1/v_1 is 2, about twice that, and weighs
// lambdas that no gray at the effect reaches. The PASS test keeps the normal's scale.
//
// # The variance
//
// For Proportion, v_i is the variance of x_i at the null boundary with stable's rate p_s the pooled
// rate of the PREVIOUS steps with half an event of prior, (N+0.5)/(R+1), so that no errors is not
// zero variance (the first step uses its own stable counts):
//
//	v_i = G_i + T_i,   G_i = R_g p_g,   T_i = (R_g (1+Rel))^2 p_s (1-p_s)/R_s,   p_g = p_s (1+Rel) + Abs (within [0, 1]),
//
// G_i the Poisson proxy of gray's binomial part (it bounds the binomial's cumulants) and T_i
// stable's part. Both tests are mixtures over lambda >= 0, on a grid of 40 values weighted as the
// half-normal prior above (normalised, so exactly a mixture of supermartingales), of exp(lambda
// S - Psi(lambda)), Psi an upper bound of the cumulant generating function of the sum under the
// test's null, G and T summed over the steps. The PASS test rejects on gray's lower tail, whose
// Poisson cumulant e^-lambda - 1 + lambda is below a normal's lambda^2/2 (a count cannot fall
// below 0), so it takes more evidence from a gray well under the margin than the normal mixture
// did; stable's events enter it upward, each with weight h = R_g (1+Rel)/R_s (the largest over
// the steps):
//
//	Psi_PASS(lambda) = max(Inflation x max(G (e^-lambda - 1 + lambda) + T (e^(lambda h) - 1 - lambda h)/h^2,
//	                                       n/(n-1) sum_i (x_i - mean x)^2 lambda^2/2), V_drift lambda^2/2).
//
// The error ratio at parity, 0.1% against a margin of 0.6%, PASSes in a median 3.7 minutes at 150
// req/s 90/10 on the simulation's counts.
//
// The FAIL test rejects on gray's upper tail, which at the few events per step of an error ratio
// is far heavier than a normal's, and its null is the floor, not what the steps show: a gray
// beyond the floor has counts that vary more because its rate is higher, which is no noise the
// floor has. So it reads the floor's variance times the dispersion the steps show beyond the
// binomial (stalls, bursts), a ratio free of the rate (quasi-likelihood):
//
//	D = n/(n-1) sum_i (x_i - R_g,i d)^2 / sum_i w_i,   d = S_n / sum_i R_g,i,
//
// w_i as v_i with p_g gray's pooled rate (half an event of prior), and gray's part enters with
// the Poisson cumulant:
//
//	Psi_FAIL(lambda) = max(Inflation max(1, D) (G (e^lambda - 1 - lambda) + T lambda^2/2), V_drift lambda^2/2).
//
// Reading the contrasts' empirical variance instead would charge every FAIL the variance of the
// regression it is about to find: errors +0.5 points (gray at 0.6% against a floor of 0.2%) carry
// three times the floor's variance. At 150 req/s split 90/10 they FAIL within 10 minutes in
// about 97% of runs (TestTimeToFail).
//
// The model variance at the boundary, with its half event of prior, is what keeps "five minutes
// with no errors on either track" from passing at low traffic:
// zero errors in N gray requests bound gray's rate only to about log(K/Alpha)/N. For PerRequest
// there is no model variance: both tests read the normal mixture at V_n = Inflation x n/(n-1)
// sum_i (x_i - mean x)^2, the empirical variance; a stream whose contrasts are all equal has no measured noise and is NO DATA ("no
// variation"), never a PASS. The empirical terms make V_n data-dependent; the supermartingale
// argument above holds for a predictable V, so validity under them is approximate, and the tests
// measure it.
//
// # Dependence
//
// Per-track drift (one track's rate wandering as an AR process: a noisy neighbour, a cache warming
// on one pod) makes the contrasts positively autocorrelated, and then sum v_i understates the
// variance of S_n by the long-run factor 1 + 2 sum_k rho_k. Inflation estimates it from the lag
// 1..Lag autocorrelations of x(Floor) with Bartlett weights,
//
//	Inflation = max(1, 1 + 2 sum_{k=1..Lag} (1 - k/(Lag+1)) rho_k),   rho_k clipped to [0, 0.95],
//
// recomputed at every look from the steps so far. It is a plug-in: an estimate, noisy over few
// steps, blind to dependence longer than Lag steps, and never below 1 (negative correlation is not
// credited), which costs some power on independent data. It protects against short-memory
// per-track drift, and only in part: at 150 req/s, 1% errors, gray at the floor (x1.1), 90 steps,
// the false FAIL rate measured (TestDependence, 600 runs over two seeds) is about 1% under
// independent binomial counts, about 2% under independent per-step overdispersion (sd 0.3 of the
// log rate) and about 5% under per-track AR(1) drift (phi 0.5, sd 0.2); drift slower than the
// window (phi 0.8-0.9) looks like a level shift that no autocorrelation about the mean can see, and
// fails 17-33% (measured once, not a test). The floor has to absorb such drift, unless stable's
// history is given (below).
//
// # Stable's history
//
// A drift slower than the window is a level shift within it: the window's own contrasts cannot
// show its variance, and the first looks FAIL on it. JudgeAfter takes stable's counts per step
// from before the gray started (the same step length) and bounds V_n from below by what stable's
// own wandering implies for the window's sum. With y_i = r_i/rbar - 1 stable's relative step rates
// over its history and the window so far (N steps), g(k) their autocovariances about their mean,
// each raised by the long-run variance over N that the mean took out, and L = min(n-1, N/3, 30),
//
//	V_drift = (1 + (1+Rel)^2) (rbar Rg)^2 max(0, n g(0) + 2 sum_{k=1..L} (n-k) g(k)) x F,
//
// the variance of a sum of n steps of two tracks wandering as stable does (gray's drift taken to
// be as large as stable's, which is an assumption), times a factor F for an estimate of df = N
// g(0)/lrv effective degrees of freedom (lrv the Bartlett long-run variance at lag L). With the
// bar e^L,
//
//	F = df (e^(2L/df) - 1) / (2L):
//
// a normal sum of variance V crosses the bar's boundary, about sqrt(2 L V), with probability at
// most e^-L; read at an estimate W V, W about chi-squared over df, the bound e^(-L F W) averages
// (1 + 2 L F/df)^(-df/2) over the estimate, and F makes that e^-L, the bar's own promise. It is
// 2.29 at 10 degrees of freedom and 1.48 at 20 (bar 1600), where Student's t plays the same part
// for a fixed-horizon test. With it a p99 +40% under per-track AR(1) drift FAILs after a median
// of 3 minutes (the oracle's 1.33).
//
// A drift shared by both tracks (load, a shared dependency) is in stable's history too, but it
// cancels in the contrast. So the factor 1 + (1+Rel)^2, which takes gray's drift to be stable's
// own and independent of it, becomes 1 + (1+Rel)^2 - 2 (1+Rel) f (at least Rel^2), f the share
// of the wandering that the two tracks share: if a share f of each track's variance is common,
// the contrast's is f Rel^2 + (1-f)(1 + (1+Rel)^2) times a track's, which is that. f is a lower 99% confidence bound
// (Fisher's) of the long-run correlation of gray's and stable's relative step rates over the
// window (Bartlett weights to lag min(n/3, 30)), on the effective number of independent pairs the
// window's and stable's longer series allow (n g(0)/lrv, the least of the three); it is 0 until
// those are more than four, and read again at every look. Gray's own sampling noise lowers the
// correlation, so at a small gray share a shared drift is credited only in part. The test reads
// max(Inflation x V_n, V_drift) (for a Proportion SLI, at each lambda the larger cumulant: see
// "The variance"). In docs/verdict-eval-counts.md (5 SLIs, 400 A/A rollouts per
// cell, stable's 30 minutes of history as the controller reads them, 95% Wilson intervals)
// per-track AR(1) drift (sd 0.095, 0.5 per minute) FAILs 1 of 400 A/A rollouts at 150 req/s 90/10
// and at 50/50, none at 20 req/s, and 2.2-7.2% at the null's boundary (the guarantee is
// approximate under drift, docs/controller.md); a drift shared by both tracks (sd 0.2, 0.5 per
// minute) FAILs none and PASSes 69.8% [65.1, 74.0] of A/A rollouts within the hour at 150 req/s
// 90/10 (99.8% under independence). A short history underestimates a drift's variance both ways.
//
// Stable's sampling noise is in g(0) too, so under independent counts V_drift is about stable's
// share of V_n and costs little; under drift it is the level's variance the window cannot see.
// Measured: per-track AR(1) drift of 0.8 per step, sd 0.3 of the log rate, gray at the floor, 90
// steps, 300 runs (TestJudgeAfterSlowDrift): 68 false FAILs with the window alone, 17 with 90
// steps of history. A drift shared by both tracks, gray at parity (TestJudgeAfterCommonDrift):
// PASS within the 90 steps in 147 of 200 runs. Crediting the shared share also credits chance
// correlations of two independent drifts, at a small cost in false FAILs under per-track drift.
// The estimates are themselves noisy (a few correlation times), so the guarantee is approximate;
// a longer history is better.
//
// # Pod offsets
//
// A lasting per-pod offset (one pod's rate e^u times the track's, u ~ (0, PodSpread^2)) is a fixed
// shift of the track's rate that no amount of data averages away, so the e-process would in time
// call it a regression. The judge spends Alpha/2 on it: with P_g and P_s pods per track, the
// offsets' mean differs between the tracks by at most
//
//	a = q PodSpread sqrt(1/P_g + 1/P_s)
//
// on the log-rate scale with probability 1 - Alpha/(2K), so the floor's whole limit is widened by
// e^a and the margin's narrowed by e^-a, and the e-processes read the bar 2K/Alpha (Result.Bar).
// A positive Test.PodSpread is taken as known, and q is the normal's z_{1-Alpha/(2K)} (3.22 at
// the catalog's K = 8). Otherwise the spread is estimated from the pods within each track, on
// df = (P_s - 1) + (P_g - 1) degrees of freedom (2 with two pods per track, 3 with 4 + 1). For
// PerRequest (CPU, heap per request) q is then Student's t_{1-Alpha/(2K)} on them (28.3 at df 2,
// 12.0 at 3, 6.5 at 5): the offsets' difference over the estimated spread is a t statistic, and
// at so few pods a spread read far below the truth is common (below a quarter of it in 6% of
// draws at df 2). A Proportion SLI (latency, errors) keeps the normal's quantile, a plug-in: a
// pod's offset of its latency exceedance rate is its latency offset magnified several times, and
// t's quantile on it blinds the latency tests under offsets, which no false-FAIL rate is worth.
// Its price is stated in docs/controller.md.
//
// The estimate is the method of moments of a one-way random-effects model: the within-track sums
// of squares of the pods' pooled log rates about their track's mean over df (gray's pods' spread
// about gray's own mean says nothing of gray against stable, so a regression does not widen it),
// less what the pods' own sampling noise puts into them times q95/df, q95 the 95% quantile of
// chi-squared with df degrees of freedom (noiseQuantile): the spread the pods show beyond what
// their noise gives them in 19 draws of 20. The t quantile multiplies whatever spread is read, so
// a spread read from sampling noise alone would be costly: at 12 times its size it keeps CPU per
// request from PASSing a gray at parity for minutes.
//
// For Proportion the pods' sampling noise is their mean of about 1/events. At a few events per pod
// it is the bulk of their scatter, and taken off at its mean it would leave a chance spread in
// about two draws in five. As the events add up the noise falls and a lasting offset
// comes through; in its first minutes the allowance is smaller, which costs some false FAILs at
// the null's boundary under lasting offsets (docs/controller.md).
//
// For PerRequest (CPU, heap per request) each pod's sampling variance of its pooled log rate is
// measured from its own step-to-step variation about its track's step rates, by the delta method
// on the ratio estimator: with r_j its pooled rate, rho_i and rbar its track's step and pooled
// rates and w its share of the track's requests,
//
//	v_j = n/(n-1) sum_i (N_i - r_j R_i rho_i/rbar)^2 / (1-w) / (sum_i N_i)^2
//
// (the residuals of a two-way layout of pods and steps: a drift of the whole track moves its pods
// together, is no noise of one pod against another, and is not taken off; rho_i holds the share w
// of the pod's own noise, hence 1/(1-w)). It is kept as per-pod sums of squares and
// cross-products; a pod with fewer than two steps, or that is its whole track, is left out. A
// track's pods add (P-1)/P sum_j v_j to its sum of squares. Stable's pods also carry their counts
// of stable's history (JudgeAfter): their offsets are the same lasting ones, and over 30 minutes
// more their pooled rates carry far less sampling noise, so a spread is read from it more rarely
// and real offsets are read nearer the truth (TestPodSpreadHistory: offsets of sd 0.05 at 4 + 1
// pods read as 0 in 10 of 300 draws over 5 minutes of window alone, in none with the history).
// A pod of the history alone is no pod of the window (P_s counts the window's). A Proportion
// spread reads the window alone: its noise term is one mean of 1/events over all pods, which
// would mix stable's precise history with gray's few events, and with the history its allowance
// would be paid in every rollout. So with no lasting offsets a PerRequest
// estimate is 0 in almost every draw: nothing is allowed and the bar is not doubled
// (TestPodSpreadPerRequest, 300 draws of 90 steps at 150 req/s, window alone: 0 in 97% and 95% of
// them with 4 + 1 and 2 + 2 pods, 96% under a track drift of sd 0.2 per step; offsets of sd 0.1
// read as 0.090 and 0.091 on average, with or without the drift). Where offsets are as small as
// the pods' sampling noise, taking off more than its mean reads them low, and the cover is
// approximate there.
//
// Without per-pod counts nothing is allowed (and Alpha is not split), which the Note says. If the
// narrowed margin's limit is no longer above the widened floor's at stable's pooled rate, a PASS
// is impossible and the Note says so (compared at that rate, not at every rate: an absolute
// margin, as of the error SLI, narrowed by any allowance is below the widened floor at a rate near
// 1, which no error SLI has, and any estimated spread made its PASS impossible).
//
// Measured in docs/verdict-eval-counts.md (400 A/A rollouts per cell, 95% Wilson intervals): at
// parity, 150 req/s 90/10, every SLI PASSed after a median of 5 minutes, 90th percentile 7.33
// (the fixed-horizon oracle needs 2 and 3.67), 99.8% [98.6, 100.0] within the hour; CPU per
// request PASSes with heap in about 2 minutes. Lasting offsets: pod018 FAILs 0.2% [0.0, 1.4] of
// A/A rollouts in its worst row, pod05 2.2% [1.2, 4.2] (two pods per track, 50/50); a gray at 1.5x
// the margin PASSes in 0 of 400 in every model. With such offsets
// not even a fixed-horizon test that knows the effect PASSes a gray at parity within the hour
// (the report's oracle): one gray pod's offset never averages out.
//
// # Rare events
//
// A fast service judged against an absolute latency floor (the catalog's 5 ms on a service
// answering in one or two) is judged at a bound where stable may have a few requests in minutes,
// and a gray at the margin would exceed it several to hundreds of times as often (LatencySteps).
// The PASS test above weighs each of stable's events by that ratio, h = R_g (1+Rel)/R_s, and its
// cumulant e^(lambda h) leaves it no lambda at which two or three events are evidence: a p99 at
// parity would stay NO DATA, its PASS e-value near 1. Where the margin is a pure ratio of at
// least eventsMinRatio (2), the PASS test conditions on each step's events instead
// (logEventsPass): given n events in a step, a gray at rho times stable's rate has N_g ~
// Binomial(n, rho R_g/(rho R_g + R_s)) whatever rate the tracks share, so a drift or a burst
// shared by both (load, a stall of the machine, a shared dependency) cancels exactly, and each
// stable event is a likelihood ratio of about rho_M/2 against the margin at 50/50. Its likelihood
// ratios against the margin, mixed over eventsGrid alternatives from the margin down to 1/rho_M of
// parity, are raised to 1/temper (eventsTemper): the dispersion of the steps' gray counts about
// their conditional binomial, times the inflation of those residuals' autocorrelation, which keeps
// a supermartingale for counts temper times as variable as the binomial and charges a track's own
// drift, not the shared one. Stable's history (V_drift) does not enter: the shared part of its
// wandering cancels here, and a track's own shows in the dispersion. The evaluations' latency
// margins (1.1 and 1.125 on tens of milliseconds) are exceedance ratios below 2, so their PASS
// tests and both reports are unchanged.
//
// Measured (TestRareEventsPass, 300 runs per seed and case, seeds 1 and 2, 1500 requests per track
// per 20 s step, 95% Wilson intervals). At exceedance 1e-4 and a margin of 300 x stable's rate (the
// demo's p99 at 5 ms): a gray at parity PASSes within 6 minutes in 73.0% [69.3, 76.4] of the runs,
// 75.8% [72.3, 79.1] under a shared drift of sd 0.5 per step,
// within 20 minutes in 99.7% [98.8, 99.9]; a gray at the margin is PASSed in 2 of 1200, with or
// without a shared drift, and in none of 600 under each track's own drift of sd 0.3 per step. At
// exceedance 1.4% and a margin of 3.1 x (the demo's A/A p99 at 5 ms): at parity under shared bursts
// of sd 0.5 per step, PASS within 3 minutes in 600 of 600; at the margin, none of 600 under the
// shared bursts, and 1.3% [0.7, 2.6] under each track's own drift of sd 0.3 per step, against
// alpha 1%: a dispersion read over few steps is itself noisy, and the guarantee is approximate under
// per-track drift, as everywhere else here.
//
// The FAIL side. A drift both tracks share moves stable's history as much as a track's own, so
// the unconditional FAIL test charges it as noise, and under a shared drift it is slow to see a
// regression. The conditional test cancels that drift. Where the floor is a pure ratio, a
// latency SLI's FAIL e-process is 0.9 x the unconditional one + 0.1 x the conditional one
// (logEventsFail: against rho <= rho_F, alternatives up to 4 rho_F, the floor widened by the pod
// allowance at Student's t), but only at looks where the two tracks' step-to-step changes of log
// rate correlate at least 0.5 (coMovement), which a shared drift makes and each track's own does
// not: its temper, the window's dispersion times the residuals' long-run variance factor
// (longRunFactor) times the small-sample factor at the bar over 0.1, does not see a track's own
// slow drift over the first minutes. A track that stalls for a step gives that step a likelihood
// ratio of e^50 or more. Over a window's first minutes the gate keeps
// such a step out (with no shared drift the tracks co-move by chance in one 3-minute window in
// eight, stall or not, and in almost none by the 49th step); beyond them each alternative leaves
// out its largest positive step terms, one per 50 steps completed (eventsFailTrimEvery).
// Leaving out positive terms makes each alternative's e-process smaller. The gate is read again
// at every look, so the FAIL test switches between the unconditional e-process U and the mixture
// 0.9 U + 0.1 C; a mixture at the bar has U or C at the bar, so the chance of ever FAILing a gray
// within its floor is at most U's plus C's, twice alpha's share at worst, and alpha's where C's
// model (a conditional binomial, tempered) is far from its boundary or the gate stays shut.
// Measured on the full count evaluation: the shared drift's p99 +40% median 3 minutes, +20%
// within 10 minutes 86%, AR(1)'s +20% 24%; 21 A/A FAILs over all 21 rows; the null's boundary 218
// FAILs of 8400 (AR(1) 70, the corpus model 40).
//
// # Counters and histograms
//
// Increase differences raw per-pod cumulative counters into per-step increases (resets, pods
// coming and going, bad samples, empty steps), and LatencySteps turns two tracks' histograms into
// Proportion steps of "requests slower than a bucket bound" with the latency ratio limits turned
// into exceedance ratios of stable's survival function; see their docs.
//
// # The tail
//
// The latency test counts the requests slower than the bucket bound just below stable's quantile
// and reads its limits from stable's survival curve as if gray's latencies were stable's scaled by
// a factor. A gray whose slowest requests alone got slower breaks that reading: with the slowest
// 2% of the requests twice as slow (p99 about doubled, on the evaluations' 20 ms / 60 ms
// log-normal), every request above the 50 ms bound below stable's 60 ms p99 was above it before
// and stays above it, so the count at 50 ms does not move, and a judge of that bound alone PASSes
// such a gray. Only a bound above sees it: at 100 ms, 2% of the gray's requests against 0.03% of stable's.
//
// So LatencyTest also builds the tail's test, the same contrast at the next bound up where stable
// still has some requests beyond it, with its limits read the same way, and JudgeTail adds it to
// the FAIL test: the FAIL e-process is (1 - w) E + w E_tail with w = 0.1 (tailWeight). A weighted
// mean of two e-processes is an e-process wherever both are, that is under the null they share (a
// gray slower than stable by at most the floor's factor at both bounds), so the FAIL's error rate
// is unchanged; it is read against the larger of the two bars (either may have spent half its
// alpha on a pod-offset allowance). The price is 1/(1-w) = 1.11 times the evidence for a FAIL on
// the judged bound alone, log(1.11) = 0.1 against a bar of log(800) = 6.7; a FAIL on the tail
// alone needs ten times the bar, which a tail several times stable's reaches in a few steps.
//
// The tail's FAIL test is itself a mixture (tailWideScale, tailWideWeight): half of it is the FAIL
// mixture tuned at the floor, half one four times as wide. A tail-only regression moves the few
// requests beyond the tail's bound by several times (the slowest 3% of requests 1.4 times as slow
// put 8 to 10 times stable's share beyond 100 ms on the evaluations' service), an effect the prior
// tuned at the floor weighs little; the wide half weighs it, for log 2 = 0.7 more evidence at the
// floor. A mixture of e-processes under one null is an e-process, so the guarantee is unchanged.
//
// The PASS is the judged bound's: the tail's few stable requests would hold every PASS for long if
// the tail had to PASS too. But a PASS at the judged bound says nothing of the requests beyond the
// tail's bound, so it is held while the tail's own FAIL e-value is at least tailHoldE = 2 (the
// result's note says so). Under the null the tail's FAIL e-process is at least 2 at a given look
// with chance at most 1/2 (Markov) and in practice seldom (it falls at parity), so at parity a
// PASS is rarely held (the count evaluation's PASS times at parity did not move); a hold only
// delays a PASS, so the PASS test's guarantee stands. On the shipped path (parity.JudgeCounts, 150
// req/s 90/10, iid, 60 rollouts of a gray whose slowest 3% are 1.4 times as slow) the p99 SLI
// PASSed before its FAIL in 15 without the hold, 3 with it; every one FAILed
// within 15 minutes, the watch overturning those PASSes.
//
// The judged bound and the limits are read from stable's survival over its history before the
// rollout when it has one (LatencyTestFrom), as the level is: then every look of a rollout judges
// against the same bound and limits, and a look judges only the steps up to it, so one judgement
// of a whole rollout gives every look's verdict (the count evaluation relies on it). A history with
// fewer than surveyMinTail = 30 of stable's requests beyond the tail's bound (a short or quiet one:
// 5 minutes at 20 req/s) would rest the tail's test on a handful of requests, or leave it out; the
// bound and limits are then read over every step, as the note says (TestLatencyTestFromHistory).
// Reading them from a 5-minute history regardless, the replay of docs/verdict-eval.md FAILed the
// slowest 2% twice as slow in 33 of 40 rollouts, and PASSed 2; over every step, 40 and none.
//
// # Watching after a PASS
//
// A PASS read once and kept would let a gray that degrades later (a pool that retains memory, a
// cache that warms into contention) ship: the FAIL test from the rollout's start, after twenty
// minutes at parity, has a sum of contrasts far below zero and needs as long again of regression to
// climb back, and a first-crossing judge never looks again. So after a PASS the judge keeps
// watching, to the last step, in the manner of an e-detector (Shin, Ramdas and Rinaldo): FAIL
// tests restarted over time and combined with weights fixed in advance.
//
//   - the FAIL test from the start, E_0, goes on;
//   - watches start on the step after the PASS and then every watchEvery steps (10, 200 s of 20 s
//     steps), whatever the data: each a new judge on the steps from its start (stable's steps
//     so far join its history) whose FAIL test E_k weighs in the rollout's FAIL e-process;
//   - a watch stops, its e-value kept as it stood (a stopped e-process), when its own PASS test
//     crosses (it has seen parity: its sum of contrasts could only hold a later regression back)
//     or when watchRunning (3) newer watches have started, so it runs 30 steps at most and at
//     most four judges read a step (about two at parity, where a watch PASSes within minutes).
//
// The rollout's FAIL e-process is the weighted sum
//
//	E = (1-w) E_0 + sum_{k>=1} w_k E_k,   w_k = w (m+1)/((k+m)(k+m+1)),
//
// with w = 0.25 (watchWeight) and m = 3 (watchShift), each E_k at 1 until its watch starts. The
// w_k telescope, w (m+1) (1/(k+m) - 1/(k+m+1)), to w, so the weights sum to 1 and are fixed
// before any data. Each watch's start is a stopping time (the
// first PASS, then fixed steps after it), and so is each stop; a supermartingale started at a
// stopping time at 1, and one stopped at a stopping time, are again supermartingales under the
// null, so E is a nonnegative supermartingale from the first step with E at 1 there, and by
// Ville's inequality P(E >= bar at any step) <= 1/bar: the FAIL's error rate over the whole
// rollout, every watch included, stays Alpha/K per SLI, however long the rollout runs. (E_0 and
// each E_k are e-processes with the approximations of "What is exact and what is approximate";
// the watches add none.)
//
// The cost is up front: before any PASS, a FAIL needs E_0 >= (bar - w)/(1 - w), 1.33 times the
// bar (log(1.33) = 0.29 against log(800) = 6.7): errors +0.5 points from the start at the
// catalog's limits (150 req/s 90/10, K = 8) FAIL in a mean of 14.6 steps, later than 10 minutes in
// 3.0% of runs (TestFailPriorAtTheCatalogsLimits). The k-th watch alone needs E_k >= bar/w_k:
// log(1/w_k) = 3.0, 3.4, 3.7, 4.0, 4.3, ... nats more than the bar for k = 1, 2, 3, 4, 5, .... The
// weights are flatter than 1/(k(k+1)) so that the watches of the rollout's first hour (k up to
// about 17) weigh more, at the price of the first ones; beyond the hour they thin as 1/k^2. A
// regression that starts after the PASS has a watch started at most watchEvery steps before it,
// with few parity steps to climb back from, and the two or three watches running through it add
// their evidence. Measured (150 req/s 90/10, K = 8, two seeds of 300 runs, 95% Wilson): errors
// +0.5 points from minute 20, after a PASS at parity, FAIL in every run, a median of 7.33 minutes
// after the regression's start, within 10 minutes in 79.3% [74.4, 83.5] and 83.3% [78.7, 87.1]
// of the runs (TestLateRegressionFailsAfterThePass); no PASS stands at the hour's end. That is
// short of a FAIL from the rollout's start (97% within 10 minutes, TestTimeToFail): a watch pays
// log(1/w_k) and whatever parity it saw before the regression. Latency p99 +40% from minute 20
// (every gray request 1.4 times as slow, the evaluations' 60 ms p99) FAILs within 10 minutes in
// every run, at a median of 3 minutes (TestLateLatencyRegressionFailsAfterThePass). A gray slower
// only in its slowest 3% (x1.4) from the start is the FAIL test from the start's to find, not a
// watch's: 90 and 92 of 100 within 10 minutes (TestTailOnlyRegressions). The PASS itself is not
// sought again: it is the first crossing of the PASS test, and its false PASS rate is that
// test's.
//
// # What is exact and what is approximate
//
// Exact, given the model: Ville's inequality for a nonnegative supermartingale that starts at 1
// (P(sup_n E_n >= 1/a) <= a); a mixture over lambda of such supermartingales, the weighted sums of
// e-processes (the tail's, the conditional FAIL test's, the watches') and an e-process stopped at
// a stopping time (a PASS, a FAIL, a watch stopped) or started at one at 1 (a watch) are again
// e-processes under the null they share; the union bound over K SLIs; the Poisson cumulant
// bounding a binomial count's (gray's part of a Proportion step).
//
// Approximate, and measured by this package's tests and hack/verdicteval rather than proved: the
// normal (sub-Gaussian) reading of a step's contrast where the counts are many (stable's part of
// a Proportion step, every PerRequest step); the variances, dispersion, autocorrelation inflation
// (a Bartlett-weighted long-run variance, as Newey and West's), drift bound and pod spread, each a
// plug-in estimated from the steps so far rather than known in advance (predictable); the
// Student's t allowance for pod offsets, which assumes them normal; the prior scales, fixed at
// the first look from its steps; and the latency limits, read from stable's survival curve as if
// gray's latencies were stable's scaled. Each approximation's cost in false verdicts is stated
// where it is made above, with the test that measures it.
//
// # References
//
//   - J. Ville, Étude critique de la notion de collectif, 1939: the maximal inequality for
//     nonnegative supermartingales.
//   - H. Robbins, Statistical methods related to the law of the iterated logarithm, Annals of
//     Mathematical Statistics 41(5), 1970: the normal mixture over lambda.
//   - S. R. Howard, A. Ramdas, J. McAuliffe, J. Sekhon, Time-uniform, nonparametric, nonasymptotic
//     confidence sequences, Annals of Statistics 49(2), 2021: sub-Gaussian and sub-Poisson
//     boundaries from cumulant bounds, mixtures on a grid.
//   - A. Ramdas, P. Grünwald, V. Vovk, G. Shafer, Game-theoretic statistics and safe anytime-valid
//     inference, Statistical Science 38(4), 2023: e-processes, their mixtures and stopping.
//   - J. Shin, A. Ramdas, A. Rinaldo, E-detectors: a nonparametric framework for sequential change
//     detection, arXiv 2203.03532: e-processes restarted over time and combined, as the watches
//     after a PASS are.
//   - M. Lindon, C. Sanden, V. Shirikian, Rapid regression detection in software deployments
//     through sequential testing, KDD 2022 (arXiv 2205.14762): anytime-valid tests of canaries
//     on counts.
//   - W. K. Newey, K. D. West, A simple, positive semi-definite, heteroskedasticity and
//     autocorrelation consistent covariance matrix, Econometrica 55(3), 1987: Bartlett weights.
//
// # Concurrency
//
// Every function is pure; Test and the inputs are read, never kept or modified.
package seqcount

// Package countsim simulates, fast, the counters Prometheus scrapes from the service during a
// gray (canary) rollout, and measures the parity judges on them as users face them.
//
// Per run, per track, per pod and per scrape it draws the cumulative series of the service:
// the latency histogram's buckets and _count, the 5xx counter, CPU seconds and heap bytes
// allocated, from the counts' distributions (Poisson requests, sequential binomials over the
// bucket probabilities, binomial errors, normal approximations of cost sums), never one request at
// a time. Noise models (Models) add drift, lasting pod offsets, stalls, shared drift or heavy
// tails; traffic rows (Traffics) split the requests over the tracks' pods; scenarios (Scenarios)
// move the gray. Evaluate judges every run with the shipped count-based test (parity.JudgeCounts,
// on the count rules' samples as Prometheus returns them: the simulator only draws counters)
// and today's per-minute sequential judge (internal/parity.SequentialTest) at looks every 20 s
// and every minute, and WriteReport writes the rates, times, an oracle's times and the issue's
// targets. Results are a function of the seeds only, whatever the parallelism.
//
// It is a library: it reads no flags or environment and does not log; `go run ./hack/verdicteval
// counts` runs it.
package countsim

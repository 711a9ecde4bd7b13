// Package diffcheck checks a gray build's responses against a stable
// build's, request by request: a differential check in the manner of
// Twitter's Diffy.
//
// # Method
//
// Each request of a requests file (package targets) is sent, one request
// at a time and in the file's order, to three tracks at once: stable A,
// stable B (a second stable instance, or stable A again when there is only
// one) and gray. Two comparisons are made of each request's responses:
// stable A with stable B, and stable A with gray. A comparison (Compare)
// looks at
//
//   - the status codes (path "status");
//   - the Content-Type headers, as media types with parameters (path
//     "content-type");
//   - the bodies: JSON (by the stable's Content-Type, or a valid JSON body
//     without one) as data, field by field, so that object key order, white
//     space and number formatting (1, 1.0, 1e0) do not count, each
//     difference named by its path ($.items[3].id); a JSON body that does
//     not parse, or has trailing data (a reused buffer appended to), where
//     the stable's parses, as one "invalid-json" diff; any other body as
//     bytes, one "bytes" diff at "$" when they differ (the report notes how
//     many requests were compared so).
//
// What differs between the two stables is noise: timestamps, request ids,
// random tokens. Learn counts, for each endpoint (method and path
// template, targets.Target.Key) and each path pattern (the path with array
// indices written [*]), the share of the endpoint's stable-vs-stable
// comparisons in which it differed; a pattern is noise at a share of
// Options.NoiseThreshold or more (DefaultNoiseThreshold, 20%), and a
// stable-vs-gray diff there is ignored. With one stable asked twice, the
// noise is only what changes from one request to the next.
//
// Options.Ignore names the paths where gray may legitimately differ
// whatever the stables say (".id", ".items[*].created_at", "status"): a diff
// at one of them, or under one, is left out too, and a note counts them.
//
// A request mismatches when a stable-vs-gray diff remains outside the
// noise. The Report gives the mismatch rate with its 95% Wilson interval,
// the outcome against Options.MaxMismatchRate (DefaultMaxMismatchRate, 1%):
// PASS when the interval's upper bound is at or under it, FAIL when its
// lower bound is over it, INCONCLUSIVE in between (too few requests to
// tell), NO DATA with none compared; and the most frequent mismatching
// paths with an example each, the noise learned, and notes.
//
// # Bounds
//
// At most MaxRequests requests; each request to each track bounded by
// Options.Timeout (DefaultTimeout, 5 s); of each response body, at most
// Options.MaxBodyBytes (DefaultMaxBodyBytes, 1 MiB) are read (a body over
// the cap on one side only is a "body-size" diff; over on both, the first
// MaxBodyBytes are compared as bytes); at most MaxDiffs diffs per
// comparison, the first of each pattern kept, each value shown cut at
// MaxShown bytes. The tracks' URLs and the targets' hosts must be on
// loopback (or named in Options.AllowHosts), as loadgen requires.
//
// A request that a stable did not answer is skipped (Report.Skipped); one
// that gray did not answer is a mismatch ("error"). Check's requests are
// sent sequentially, so a run of n requests takes about n times the
// slowest track's latency.
//
// # Under load
//
// Check sends one request at a time, so it never sees a response that only
// concurrency corrupts: a buffer put back to its pool before the response
// is written from it, one buffer shared by every request. Live compares
// gray's answers taken elsewhere, the responses a load got at its
// concurrency (loadgen.Sampling), with stable's answers to the same
// requests, asked (stable twice, for the noise) as each comparison is
// made while the load goes on, and judges them as Check does. A gray answer
// whose Content-Type says JSON and whose body does not parse is a mismatch
// even when stable did not answer.
//
// # Errors
//
// CompareErrors tests whether gray's load got more failed requests (a 5xx,
// no response, or malformed JSON) than stable's beyond chance: Fisher's
// exact test, one-sided, at DefaultErrorAlpha (1%) unless told otherwise.
package diffcheck

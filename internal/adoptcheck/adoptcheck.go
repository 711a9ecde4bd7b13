// Package adoptcheck states what `poolparity-parity local` must say about a
// gray build next to an unpooled stable one, for the pool modes teams
// adopt and the misuses they make: a correctly pooled gray passes, a pool
// whose buffers are never reset fails through the differential check and
// the response-size row, a pool whose objects are never put back fails
// through the sync.Pool hit-ratio row, a buffer used after Put or shared
// by all requests fails through the differential check under load, the
// count of failed requests or the race run. The end-to-end tests of the example
// service (app/cmd/poolparity-demo) and of docs/adopt.md's walk-through on
// a service outside this repository (testdata/csvjson, this package's
// test) hold their reports to it.
//
// It reads reports; it runs nothing and is safe for concurrent use.
package adoptcheck

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/diffcheck"
	"github.com/poolparity/poolparity/internal/parity"
)

// The gray pool modes Problems knows.
const (
	// Pooled pools correctly: PASS, the responses the same as stable's.
	Pooled = "pooled"
	// NeverReset puts buffers back without a reset, so that responses
	// carry the ones before them: FAIL through the differential check and
	// the response-size row.
	NeverReset = "never-reset"
	// NeverPut takes objects from a pool and never puts them back: FAIL
	// through the sync.Pool hit-ratio row, the responses unchanged.
	NeverPut = "never-put"
	// UseAfterPut puts its buffer back before the response is written
	// from it: FAIL through the differential check under load or the count
	// of gray's malformed answers (with poisoned Puts, every response is
	// corrupted; without, only those another request overwrote first).
	UseAfterPut = "use-after-put"
	// SharedBuffer shares one buffer between all requests, without a
	// lock: FAIL as UseAfterPut, or through the race run when there is one.
	SharedBuffer = "shared-buffer"
)

// Modes lists the modes Problems knows.
var Modes = []string{Pooled, NeverReset, NeverPut, UseAfterPut, SharedBuffer}

// concurrencyReasons are the starts of the reasons (parity.Report.Reasons)
// through which a concurrency misuse must FAIL: the differential check
// (parity.Report.AddDifferential), the tracks' failed requests
// (AddLoadErrors) or the race run.
var concurrencyReasons = []string{"responses differ", "more failed requests on gray", "data race"}

// The bounds the misuses' rows must pass: large effects only.
const (
	// MinResponseGrowth is the least gray/stable ratio of response bytes
	// per request that a never-reset gray must show.
	MinResponseGrowth = 1.5
	// MaxNeverPutHitRatio is the highest sync.Pool hit ratio a never-put
	// gray may show (some of its pools may still work, none of those it
	// never puts back to).
	MaxNeverPutHitRatio = 0.45
)

// Problems returns what is wrong with r, the report of a local run whose
// gray ran in mode against an unpooled stable, one sentence each; none when
// r says what it must. The rows are read as r's gate reads them
// (Report.GateRows: under the confirmed gate, a threshold FAIL the
// statistical test cannot confirm is not a FAIL). An unknown mode is a
// problem.
func Problems(mode string, r parity.Report) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	want := parity.Fail
	if mode == Pooled {
		want = parity.Pass
	}
	if r.Verdict != want {
		bad("verdict %s (%s), want %s", r.Verdict, strings.Join(r.Reasons, "; "), want)
	}
	d := r.Differential
	if d == nil {
		bad("the report has no differential check")
	}
	switch mode {
	case Pooled:
		if d != nil && (d.Outcome != diffcheck.Pass || d.Mismatches != 0 || d.Compared == 0) {
			bad("differential check %s, want PASS with no mismatch", parity.DiffLine(*d))
		}
	case NeverReset:
		if d != nil && (d.Outcome != diffcheck.Fail || d.Mismatches == 0) {
			bad("differential check %s, want FAIL: gray's responses carry the ones before them", parity.DiffLine(*d))
		}
		// The response-size SLI: its id names the response bytes per request.
		rw := gatedRow(r, func(rw parity.Row) bool { return strings.Contains(string(rw.ID), "response") })
		switch {
		case rw == nil:
			bad("no response-size row in the report; rows: %s", rowList(r))
		case rw.Verdict != parity.Fail:
			bad("response-size row %s (as gated): verdict %s (%s), want FAIL", rw.ID, rw.Verdict, rw.Note)
		case rw.Value == nil || *rw.Value < MinResponseGrowth:
			bad("response-size row %s: gray vs stable %s, want at least %g", rw.ID, fmtValue(rw.Value), MinResponseGrowth)
		}
	case NeverPut:
		if d != nil && d.Outcome != diffcheck.Pass {
			bad("differential check %s, want PASS: an object never put back changes no response", parity.DiffLine(*d))
		}
		rw := gatedRow(r, func(rw parity.Row) bool { return rw.ID == catalog.SyncPoolHitRatio })
		switch {
		case rw == nil:
			bad("no sync.Pool hit-ratio row in the report; rows: %s", rowList(r))
		case rw.Verdict != parity.Fail:
			bad("sync.Pool hit-ratio row (as gated): verdict %s (%s), want FAIL", rw.Verdict, rw.Note)
		case rw.Value == nil || *rw.Value > MaxNeverPutHitRatio:
			bad("sync.Pool hit ratio of gray %s, want at most %g", fmtValue(rw.Value), MaxNeverPutHitRatio)
		}
	case UseAfterPut, SharedBuffer:
		caught := false
		for _, reason := range r.Reasons {
			for _, p := range concurrencyReasons {
				caught = caught || strings.HasPrefix(reason, p)
			}
		}
		if !caught {
			bad("no reason names the differential check, the failed requests or a data race (%s): the misuse was not caught by what can see it", strings.Join(r.Reasons, "; "))
		}
	default:
		bad("unknown gray mode %q: want one of %s", mode, strings.Join(Modes, ", "))
	}
	return out
}

// gatedRow returns the first of r's gated rows match accepts, or nil.
func gatedRow(r parity.Report, match func(parity.Row) bool) *parity.Row {
	rows := r.GateRows()
	for i := range rows {
		if match(rows[i]) {
			return &rows[i]
		}
	}
	return nil
}

// rowList lists r's rows as id=verdict.
func rowList(r parity.Report) string {
	var s []string
	for _, rw := range r.Rows {
		s = append(s, string(rw.ID)+"="+string(rw.Verdict))
	}
	return strings.Join(s, ", ")
}

// fmtValue formats a row's value, or says it has none.
func fmtValue(v *float64) string {
	if v == nil {
		return "(no value)"
	}
	return strconv.FormatFloat(*v, 'g', 3, 64)
}

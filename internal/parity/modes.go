package parity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
)

// This file is the judge seam: a statistical mode is a Test, and the
// registry (Modes) names every mode a user can choose and every mode that
// was retired, with its replacement. Evaluate asks the mode of its Options
// for its test of each SLI and for the report's verdict; it compares no
// mode. The PoolCanary CRD's statistical.mode enum, poolparity-parity's
// -gate, the judge's mode parameter and the local commands' gates are the
// registry's names, which TestModeEnumsAreTheRegistrys holds.

// StatMode names a statistical mode: PoolCanary's statistical.mode.
type StatMode string

// The statistical modes: the registry's (Modes) and the retired ones.
const (
	// StatOff runs no test: the thresholds and the alerts decide.
	StatOff StatMode = "Off"
	// StatReport runs the windowed Mann-Whitney test and shows it beside
	// the thresholds, which alone decide (the verdict gate "thresholds").
	StatReport StatMode = "Report"
	// StatConfirm makes the windowed test a condition of a breach: a
	// threshold FAIL counts only where the test confirms it (the verdict
	// gate "confirmed"); where the test has too few samples the FAIL is NO
	// DATA and the step waits. Firing alerts still fail. It is the gate of
	// a single read after minutes of load (poolparity-parity local, the
	// kind run's one-shot reads): read again and again, its false-FAIL rate
	// grows with every read.
	StatConfirm StatMode = "Confirm"
	// StatCounts, the default, makes the count-based anytime-valid test
	// (counts.go) the judge of every SLI that has count inputs
	// (catalog.CountInputs): its evidence is the raw per-pod counters of
	// the poolparity.counts rules, step by step since StatSince (the
	// verdict gate "counts"); FAIL iff an SLI's FAIL e-process reaches its
	// bar, PASS iff every SLI's PASS e-process does, NO DATA before. The
	// SLIs without count inputs are judged by the sequential test of
	// per-minute samples (seq.go), and alpha is spent over all of them.
	StatCounts StatMode = "Counts"

	// StatSequential is retired (use StatCounts): the anytime-valid
	// sequential test of per-minute samples (seq.go) as the judge of every
	// SLI. Counts beat it on every target row of docs/verdict-eval.md and
	// docs/verdict-eval-counts.md; it lives on inside Counts for the SLIs
	// without count inputs, and hack/verdicteval still measures it.
	StatSequential StatMode = "Sequential"
	// StatGate is retired (use StatCounts): the windowed Mann-Whitney test
	// failing a passing evaluation. No evaluation measured a row it wins,
	// and read again and again it has no error control.
	StatGate StatMode = "Gate"
)

// Gate says which verdict is a Report's Verdict; it is how the commands
// name the modes people choose between (poolparity-parity -gate).
type Gate string

// The gates.
const (
	// GateThresholds: the threshold rows and the firing alerts decide; the
	// statistical test is shown beside them (StatReport).
	GateThresholds Gate = "thresholds"
	// GateConfirmed: a threshold FAIL counts only where the statistical
	// test confirms it (StatConfirm). docs/verdict-eval.md measures it.
	GateConfirmed Gate = "confirmed"
	// GateCounts: the count-based anytime-valid test decides (StatCounts).
	GateCounts Gate = "counts"
	// GateSequential is retired with StatSequential (use GateCounts).
	GateSequential Gate = "sequential"
)

// Test is a statistical mode: the test an evaluation runs on each SLI,
// and how its verdict gates the report's. The registry's Tests are values
// without state, safe for concurrent use. The interface is sealed (its
// judging methods read Prometheus through the evaluation): a new mode is a
// type in this package and an entry in Modes.
type Test interface {
	// Mode is the mode's name, PoolCanary's statistical.mode.
	Mode() StatMode
	// Gate is the -gate that chooses it; "" when none does.
	Gate() Gate
	// Doc says what its gate does, in a few words (a flag's help).
	Doc() string
	// AnytimeValid reports whether its evidence accumulates from
	// Options.StatSince and keeps its guarantee however often it is read
	// (a caller reading again, such as the controller, passes the
	// rollout's start and reads it at every analysis interval); the other
	// modes judge the sliding StatWindow at each read.
	AnytimeValid() bool
	// rules are the recording rules the mode reads for s beyond the
	// thresholds' (Evaluate checks they are loaded), and what to do when
	// they are not.
	rules(e evaluation, s catalog.SLI) (names []string, hint string)
	// gateRows returns the rows as its gate decides them (Report.GateRows).
	gateRows(rows []Row) []Row
	// gateLine says how its gate decides, for the text report ("" for no
	// gate).
	gateLine() string
	// note is the report's note on the mode's plan ("" for none).
	note(e evaluation) string
	// judge tests one SLI (nil when the mode runs no test), appending to
	// errs the failed queries, which do not fail the evaluation.
	judge(ctx context.Context, e evaluation, q Querier, s catalog.SLI, crit Criterion, errs *[]string) *TestResult
	// decide sets r's verdict from its rows, its alerts, the traffic guard
	// and the test's results; statErrs are judge's failed queries.
	decide(e evaluation, r *Report, quiet string, statErrs []string)
}

// Retired is a mode taken out of the registry: it is refused where a user
// names it, with its replacement.
type Retired struct {
	// Mode and Gate are its names ("" Gate when no -gate chose it).
	Mode StatMode
	Gate Gate
	// Use is the mode that replaces it.
	Use StatMode
	// Why is the evidence that retired it.
	Why string
}

// Error is the message refusing m: what to use instead and why.
func (m Retired) Error() string {
	return fmt.Sprintf("statistical mode %s was retired: use %s (%s)", m.Mode, m.Use, m.Why)
}

// Registry is the statistical modes a user can choose, in the order they
// are listed, and the retired ones. It is a value: Modes builds it.
type Registry struct {
	tests   []Test
	retired []Retired
}

// Modes returns the registry: Counts (the default), Confirm, Report and
// Off, and the retired Sequential and Gate.
func Modes() Registry {
	return Registry{
		tests: []Test{countsMode{}, confirmMode{}, reportMode{}, offMode{}},
		retired: []Retired{
			{Mode: StatSequential, Gate: GateSequential, Use: StatCounts,
				Why: "the count-based test beat the sequential test of per-minute samples on every target row of docs/verdict-eval.md and docs/verdict-eval-counts.md"},
			{Mode: StatGate, Use: StatCounts,
				Why: "no evaluation measured a row the windowed gate wins, and read again and again it has no error control"},
		},
	}
}

// DefaultMode is the mode of an evaluation, a PoolCanary or a request that
// names none: Counts. (Options' zero Stat is StatOff, no test.)
const DefaultMode = StatCounts

// Names returns the modes a user can choose, in the registry's order.
func (g Registry) Names() []StatMode {
	out := make([]StatMode, len(g.tests))
	for i, t := range g.tests {
		out[i] = t.Mode()
	}
	return out
}

// Gates returns the gates a user can choose, in the registry's order.
func (g Registry) Gates() []Gate {
	var out []Gate
	for _, t := range g.tests {
		if t.Gate() != "" {
			out = append(out, t.Gate())
		}
	}
	return out
}

// Retired returns the retired modes.
func (g Registry) Retired() []Retired { return slices.Clone(g.retired) }

// Lookup returns the Test of the mode named s: a retired mode's error
// names its replacement (errors.As gives the Retired), and an unknown
// name's lists the valid ones.
func (g Registry) Lookup(s string) (Test, error) {
	for _, t := range g.tests {
		if string(t.Mode()) == s {
			return t, nil
		}
	}
	for _, r := range g.retired {
		if string(r.Mode) == s {
			return nil, r
		}
	}
	return nil, fmt.Errorf("unknown statistical mode %q: want %s", s, orList(g.Names()))
}

// LookupGate returns the Test the gate named s chooses, as Lookup does.
func (g Registry) LookupGate(s string) (Test, error) {
	for _, t := range g.tests {
		if t.Gate() != "" && string(t.Gate()) == s {
			return t, nil
		}
	}
	for _, r := range g.retired {
		if r.Gate != "" && string(r.Gate) == s {
			use := ""
			if t, err := g.Lookup(string(r.Use)); err == nil {
				use = string(t.Gate())
			}
			return nil, fmt.Errorf("gate %s was retired: use %s (%s)", r.Gate, use, r.Why)
		}
	}
	return nil, fmt.Errorf("unknown gate %q: want %s", s, orList(g.Gates()))
}

// AnytimeValid reports whether m is a mode of the registry whose evidence
// is anytime-valid (Test.AnytimeValid); a retired or unknown one is not.
func (g Registry) AnytimeValid(m StatMode) bool {
	t, err := g.Lookup(string(m))
	return err == nil && t.AnytimeValid()
}

// test returns the Test that runs mode m in an evaluation: the registry's
// (Off for an empty m, Options' zero value), or a retired mode's (hack/verdicteval still measures them beside the
// kept ones; every entry point a user reaches refuses them through
// Lookup). ok is false for a name that was never a mode.
func (g Registry) test(m StatMode) (Test, bool) {
	if m == "" {
		return offMode{}, true
	}
	if t, err := g.Lookup(string(m)); err == nil {
		return t, true
	}
	switch m {
	case StatSequential:
		return sequentialMode{}, true
	case StatGate:
		return gateMode{}, true
	}
	return nil, false
}

// ParseStatMode returns the mode named s, or an error naming the valid
// ones (or a retired mode's replacement).
func ParseStatMode(s string) (StatMode, error) {
	t, err := Modes().Lookup(s)
	if err != nil {
		return "", err
	}
	return t.Mode(), nil
}

// ParseGate returns the gate named s, or an error naming the valid ones
// (or a retired gate's replacement).
func ParseGate(s string) (Gate, error) {
	t, err := Modes().LookupGate(s)
	if err != nil {
		return "", err
	}
	return t.Gate(), nil
}

// Mode returns the mode the gate chooses (a retired gate's own, which
// Evaluate still runs; ParseGate refuses it), StatReport for an unknown
// one.
func (g Gate) Mode() StatMode {
	reg := Modes()
	if t, err := reg.LookupGate(string(g)); err == nil {
		return t.Mode()
	}
	for _, r := range reg.retired {
		if r.Gate != "" && r.Gate == g {
			return r.Mode
		}
	}
	return StatReport
}

// GateHelp is the gates a user can choose with what each does, for a
// flag's help.
func GateHelp() string {
	reg := Modes()
	var parts []string
	for _, g := range reg.Gates() {
		t, _ := reg.LookupGate(string(g))
		parts = append(parts, fmt.Sprintf("%s (%s)", g, t.Doc()))
	}
	return strings.Join(parts, ", ")
}

// orList joins names as "a, b or c".
func orList[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// The modes. Each is a Test; the evaluation's shared steps (the windowed
// test, the sequential test, the count-based one, Decide) are in
// evaluate.go, seq.go and counts.go.

// offMode runs no test.
type offMode struct{ noRules }

func (offMode) Mode() StatMode                               { return StatOff }
func (offMode) Gate() Gate                                   { return "" }
func (offMode) Doc() string                                  { return "no test: the thresholds and alerts decide" }
func (offMode) AnytimeValid() bool                           { return false }
func (offMode) note(evaluation) string                       { return "" }
func (offMode) decide(evaluation, *Report, string, []string) {}
func (offMode) judge(context.Context, evaluation, Querier, catalog.SLI, Criterion, *[]string) *TestResult {
	return nil
}

// reportMode shows the windowed test beside the thresholds, which decide.
type reportMode struct{ noRules }

func (reportMode) Mode() StatMode { return StatReport }
func (reportMode) Gate() Gate     { return GateThresholds }
func (reportMode) Doc() string {
	return "the thresholds and alerts alone, with no error control: " + ThresholdsFalseFail + " of A/A rollouts failed, docs/verdict-eval.md"
}
func (reportMode) AnytimeValid() bool     { return false }
func (reportMode) note(evaluation) string { return ThresholdsNote }
func (reportMode) judge(ctx context.Context, e evaluation, q Querier, s catalog.SLI, crit Criterion, errs *[]string) *TestResult {
	return e.windowTest(ctx, q, s, crit, errs)
}
func (reportMode) decide(e evaluation, r *Report, quiet string, statErrs []string) {
	e.statVerdicts(r, quiet, statErrs)
	confirmed(r, quiet)
}

// confirmMode counts a threshold FAIL only where the windowed test
// confirms it.
type confirmMode struct{ noRules }

func (confirmMode) Mode() StatMode { return StatConfirm }
func (confirmMode) Gate() Gate     { return GateConfirmed }
func (confirmMode) Doc() string {
	return "a threshold FAIL needs the windowed statistical test's FAIL, for one read after minutes of load; alerts always count"
}
func (confirmMode) AnytimeValid() bool     { return false }
func (confirmMode) note(evaluation) string { return "" }
func (confirmMode) judge(ctx context.Context, e evaluation, q Querier, s catalog.SLI, crit Criterion, errs *[]string) *TestResult {
	return e.windowTest(ctx, q, s, crit, errs)
}
func (confirmMode) decide(e evaluation, r *Report, quiet string, statErrs []string) {
	e.statVerdicts(r, quiet, statErrs)
	r.Verdict, r.Reasons = r.Confirmed, confirmed(r, quiet)
}

// gateMode (retired) fails a passing evaluation on the windowed test.
type gateMode struct{ noRules }

func (gateMode) Mode() StatMode         { return StatGate }
func (gateMode) Gate() Gate             { return "" }
func (gateMode) Doc() string            { return "retired: the windowed test fails a passing evaluation" }
func (gateMode) AnytimeValid() bool     { return false }
func (gateMode) note(evaluation) string { return "" }
func (gateMode) judge(ctx context.Context, e evaluation, q Querier, s catalog.SLI, crit Criterion, errs *[]string) *TestResult {
	return e.windowTest(ctx, q, s, crit, errs)
}
func (gateMode) decide(e evaluation, r *Report, quiet string, statErrs []string) {
	e.statVerdicts(r, quiet, statErrs)
	confirmed(r, quiet)
	if r.Verdict == Pass && r.Statistical != Pass {
		msg := strings.Join(r.StatReasons, "; ")
		if len(r.Disagreements) > 0 {
			msg += "; disagreements: " + strings.Join(r.Disagreements, "; ")
		}
		r.Verdict, r.Reasons = r.Statistical, append([]string{"statistical test: " + msg}, r.Reasons...)
	}
}

// sequentialMode (retired) judges every SLI with the sequential test of
// per-minute samples.
type sequentialMode struct{ noRules }

func (sequentialMode) Mode() StatMode { return StatSequential }
func (sequentialMode) Gate() Gate     { return GateSequential }
func (sequentialMode) Doc() string {
	return "retired: the sequential test of per-minute samples from -since decides"
}
func (sequentialMode) AnytimeValid() bool { return true }
func (sequentialMode) note(e evaluation) string {
	k := len(e.cat.SLIs)
	return fmt.Sprintf("sequential test: per-rollout alpha %g over %d SLIs (Bonferroni, %.3g each): an SLI fails when its e-value reaches %.4g and passes when its confidence sequence at that level is within its margin, on the samples since %s",
		e.opts.Sequential.Alpha, k, e.opts.Sequential.Alpha/float64(k), e.opts.Sequential.Bar(k), e.opts.StatSince.UTC().Format(time.RFC3339))
}
func (sequentialMode) judge(ctx context.Context, e evaluation, q Querier, s catalog.SLI, crit Criterion, errs *[]string) *TestResult {
	return e.sampledTest(ctx, q, s, crit, true, errs)
}
func (sequentialMode) decide(e evaluation, r *Report, quiet string, statErrs []string) {
	e.statVerdicts(r, quiet, statErrs)
	r.Verdict, r.Reasons = sequentialVerdict(*r, quiet)
}

// countsMode judges the SLIs with count inputs by the count-based test and
// the others by the sequential test.
type countsMode struct{}

func (countsMode) Mode() StatMode { return StatCounts }
func (countsMode) Gate() Gate     { return GateCounts }
func (countsMode) Doc() string {
	return "the count-based anytime-valid test from -since decides; needs the poolparity.counts rules"
}
func (countsMode) AnytimeValid() bool { return true }
func (countsMode) note(e evaluation) string {
	k := len(e.cat.SLIs)
	return fmt.Sprintf("count-based test: per-rollout alpha %g for each of a false FAIL and a false PASS over %d SLIs (%.3g each), on the raw per-pod counters of the poolparity.counts rules step by step since %s; an SLI fails when its e-value against its floor reaches the bar, and passes when its e-value against its margin does",
		e.opts.Sequential.Alpha, k, e.opts.Sequential.Alpha/float64(k), e.opts.StatSince.UTC().Format(time.RFC3339))
}
func (countsMode) judge(ctx context.Context, e evaluation, q Querier, s catalog.SLI, crit Criterion, errs *[]string) *TestResult {
	if !readsCounts(e, s) {
		return e.sampledTest(ctx, q, s, crit, true, errs)
	}
	tr := e.countTest(ctx, q, s, crit, len(e.cat.SLIs))
	if tr.Verdict == Error {
		*errs = append(*errs, fmt.Sprintf("%s: %s", s.Name, tr.Note))
	}
	return &tr
}
func (countsMode) decide(e evaluation, r *Report, quiet string, statErrs []string) {
	e.statVerdicts(r, quiet, statErrs)
	r.Verdict, r.Reasons = sequentialVerdict(*r, quiet)
}

func (countsMode) rules(e evaluation, s catalog.SLI) ([]string, string) {
	if !readsCounts(e, s) {
		return nil, ""
	}
	return []string{s.Counts.Requests, s.Counts.Num}, fmt.Sprintf("the count-based test (a PoolCanary's statistical mode %s, the default; -gate %s) reads the poolparity.counts rules: load them (the chart's rules.counts.enabled) or choose another mode",
		StatCounts, GateCounts)
}

func (offMode) gateRows(rows []Row) []Row    { return rows }
func (offMode) gateLine() string             { return "" }
func (reportMode) gateRows(rows []Row) []Row { return rows }
func (reportMode) gateLine() string {
	return "the thresholds alone (no error control: at parity they failed " + ThresholdsFalseFail + " of simulated A/A rollouts, docs/verdict-eval.md)"
}
func (confirmMode) gateRows(rows []Row) []Row { return Confirm(rows) }
func (confirmMode) gateLine() string {
	return "thresholds confirmed by the test (a threshold FAIL needs the test's FAIL)"
}
func (gateMode) gateRows(rows []Row) []Row       { return rows }
func (gateMode) gateLine() string                { return "" }
func (sequentialMode) gateRows(rows []Row) []Row { return SequentialRows(rows) }
func (sequentialMode) gateLine() string {
	return "the sequential test (FAIL when an SLI's e-value reaches its bar, PASS when its confidence sequence is within its margin, else NO DATA; thresholds and alerts are notes, but for the alerts on a fault of gray's own that no SLI judges, which fail it)"
}
func (countsMode) gateRows(rows []Row) []Row { return SequentialRows(rows) }
func (countsMode) gateLine() string {
	return "the count-based test (FAIL when an SLI's e-value against its floor reaches its bar, PASS when its e-value against its margin does, else NO DATA; thresholds and alerts are notes, but for the alerts on a fault of gray's own that no SLI judges, which fail it)"
}

// GateLine says how the gate g decides, for a report ("" for none).
func GateLine(g Gate) string {
	if g == "" {
		return ""
	}
	t, err := Modes().LookupGate(string(g))
	if err != nil {
		return ""
	}
	return t.gateLine()
}

// readsCounts reports whether the count-based test judges s: it has count
// inputs and no sample rule of the user's own.
func readsCounts(e evaluation, s catalog.SLI) bool {
	return s.Counts != nil && e.opts.Overrides[s.ID].SampleRule == ""
}

// noRules is the rules method of the modes that read only the
// thresholds' rules and the samples' (which a missing one makes NO DATA).
type noRules struct{}

func (noRules) rules(evaluation, catalog.SLI) ([]string, string) { return nil, "" }

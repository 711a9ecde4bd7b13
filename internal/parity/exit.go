package parity

// Exit statuses of the commands that print a parity report (poolparity-demo,
// poolparity-parity): scripts and CI branch on them, so both use one set.
const (
	ExitPass        = 0   // the verdict is PASS
	ExitFail        = 1   // the verdict is FAIL
	ExitUsage       = 2   // a bad setting or argument
	ExitNoData      = 3   // the verdict is NO DATA
	ExitError       = 4   // the run or the read failed: the report says ERROR and why
	ExitInterrupted = 130 // interrupted (Ctrl-C, SIGTERM)
)

// ExitStatus returns the exit status for a report with verdict v.
func ExitStatus(v Verdict) int {
	switch v {
	case Pass:
		return ExitPass
	case Fail:
		return ExitFail
	case Error:
		return ExitError
	}
	return ExitNoData
}

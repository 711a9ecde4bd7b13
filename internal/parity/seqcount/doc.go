// Package seqcount is the count-based anytime-valid parity judge: per step, both tracks' request
// counts and an SLI's numerator feed two one-sided e-processes (FAIL against the floor, PASS against
// the margin). It is a pure library: no Prometheus client, no I/O.
package seqcount

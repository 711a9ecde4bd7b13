// Package cli holds what every command's main shares: how an error becomes
// an exit status and a message on stderr, and how LOG_LEVEL is read.
//
// A command's main stays a few lines. It builds a context with
// signal.NotifyContext, calls the command's run function, which returns an
// error (nil for success), and exits with Exit's status:
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
//		stop()
//		os.Exit(cli.Exit(os.Stderr, "poolparity", err))
//	}
//
// run chooses a status other than 1 with WithStatus, Usage or Status.
// Nothing in this package exits the process or reads flags or the
// environment.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Exit statuses every command shares. A command may define more (the
// report commands' are in internal/parity, with the same 0, 1 and 2).
const (
	ExitOK      = 0 // success, or -h
	ExitFailure = 1 // any error without a status of its own
	ExitUsage   = 2 // a bad flag, argument or setting, as the flag package exits
)

// Error is an error with the exit status it calls for. An Error whose Err
// is nil only sets the status: Exit prints nothing for it.
type Error struct {
	Status int
	Err    error
}

// Error returns Err's message, or the status when Err is nil.
func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Status)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// WithStatus returns err with the exit status status, or nil when err is
// nil.
func WithStatus(status int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Status: status, Err: err}
}

// Usage returns err with the status ExitUsage, for an error in the flags,
// arguments or settings. flag.ErrHelp and nil are returned as they are.
func Usage(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return WithStatus(ExitUsage, err)
}

// Status returns an error that makes Exit return status and print nothing,
// for an outcome that was already reported (a FAIL verdict); nil for
// ExitOK.
func Status(status int) error {
	if status == ExitOK {
		return nil
	}
	return &Error{Status: status}
}

// Exit prints err on w and returns the exit status it calls for: ExitOK
// for nil and for flag.ErrHelp (the usage, already printed, was the
// answer), the Status of the outermost *Error in err's chain, and
// ExitFailure for any other error. Each line of the message is printed
// with the prefix "name: ", so a joined error is one prefixed line per
// problem.
func Exit(w io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	status := ExitFailure
	var e *Error
	if errors.As(err, &e) {
		status = e.Status
		if e.Err == nil && err == error(e) {
			return status
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "%s: %s\n", name, line)
	}
	return status
}

// ParseLevel returns the slog.Level that a LOG_LEVEL value names: debug,
// info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
}

// NewLogger returns a JSON logger writing to w at the level that the
// LOG_LEVEL value level names (see ParseLevel).
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	l, err := ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("LOG_LEVEL=%w", err)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

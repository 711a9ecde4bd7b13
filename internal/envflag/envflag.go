// Package envflag binds each setting of a binary to both a command-line flag
// and an environment variable. The variable supplies the default, and a flag
// given on the command line wins over it. The flag's name is the variable's
// name in lower case with '-' for '_' (REDIS_ADDR is -redis-addr).
//
// The caller passes the flag.FlagSet and the function that reads the
// environment (os.Getenv in a binary, a map lookup in a test), so envflag
// never touches the process's flags or environment itself.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Set binds settings to the flags of a flag.FlagSet and to environment
// variables. Bind every setting, then call Parse once.
//
// A Set is not safe for concurrent use, like flag.FlagSet.
type Set struct {
	fs       *flag.FlagSet
	getenv   func(string) string
	trim     string
	sentinel error
	errs     []error
}

// Option configures a Set.
type Option func(*Set)

// TrimPrefix makes the flag of a variable whose name begins with prefix
// leave the prefix out: with TrimPrefix("DEMO_"), DEMO_RPS is -rps. Variables
// without the prefix are named as usual.
func TrimPrefix(prefix string) Option {
	return func(s *Set) { s.trim = prefix }
}

// WrapErrors makes the errors that Parse reports about a variable or about
// positional arguments wrap sentinel, so that callers can test them with
// errors.Is. Errors of the flag package itself are returned as they are.
func WrapErrors(sentinel error) Option {
	return func(s *Set) { s.sentinel = sentinel }
}

// New returns a Set that defines its flags on fs and reads variables through
// getenv (os.Getenv, or a map lookup in tests).
func New(fs *flag.FlagSet, getenv func(string) string, opts ...Option) *Set {
	s := &Set{fs: fs, getenv: getenv}
	for _, o := range opts {
		o(s)
	}
	return s
}

// FlagName returns the flag name for the environment variable env: env in
// lower case with '-' for '_'.
func FlagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(env), "_", "-")
}

// String binds *p to the variable env and to its flag. A variable that is
// set and not empty replaces *p; help gets " (env ENV)" appended.
func (s *Set) String(p *string, env, help string) {
	bind(s, p, env, help, func(v string) (string, error) { return v, nil }, s.fs.StringVar)
}

// Bool binds *p like String, parsing the variable with strconv.ParseBool.
func (s *Set) Bool(p *bool, env, help string) {
	bind(s, p, env, help, strconv.ParseBool, s.fs.BoolVar)
}

// Int binds *p like String, parsing the variable with strconv.Atoi.
func (s *Set) Int(p *int, env, help string) {
	bind(s, p, env, help, strconv.Atoi, s.fs.IntVar)
}

// Uint64 binds *p like String, parsing the variable as a decimal uint64.
func (s *Set) Uint64(p *uint64, env, help string) {
	bind(s, p, env, help, func(v string) (uint64, error) { return strconv.ParseUint(v, 10, 64) }, s.fs.Uint64Var)
}

// Float64 binds *p like String, parsing the variable as a float64.
func (s *Set) Float64(p *float64, env, help string) {
	bind(s, p, env, help, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, s.fs.Float64Var)
}

// Duration binds *p like String, parsing the variable with
// time.ParseDuration.
func (s *Set) Duration(p *time.Duration, env, help string) {
	bind(s, p, env, help, time.ParseDuration, s.fs.DurationVar)
}

// bind reads env into *p through parse, keeping the error if it fails, and
// defines the flag with *p as its default.
func bind[T any](s *Set, p *T, env, help string, parse func(string) (T, error), define func(*T, string, T, string)) {
	if v := s.getenv(env); v != "" {
		x, err := parse(v)
		if err != nil {
			s.errs = append(s.errs, s.errorf("parsing %s=%q: %w", env, v, err))
		} else {
			*p = x
		}
	}
	define(p, FlagName(strings.TrimPrefix(env, s.trim)), *p, help+" (env "+env+")")
}

// Parse reports every variable that did not parse, joined into one error.
// If there is none, it parses args (without the program name) into the flag
// set, returning the flag package's error as it is (flag.ErrHelp for -h),
// and then refuses positional arguments.
func (s *Set) Parse(args []string) error {
	if err := errors.Join(s.errs...); err != nil {
		return err
	}
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	if s.fs.NArg() > 0 {
		return s.errorf("unexpected arguments: %q", s.fs.Args())
	}
	return nil
}

func (s *Set) errorf(format string, a ...any) error {
	if s.sentinel == nil {
		return fmt.Errorf(format, a...)
	}
	return fmt.Errorf("%w: "+format, append([]any{s.sentinel}, a...)...)
}

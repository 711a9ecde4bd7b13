package envflag_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/envflag"
)

// settings is what each case binds.
type settings struct {
	Addr  string
	Gray  bool
	Size  int
	Seed  uint64
	Rate  float64
	Delay time.Duration
}

// bindAll binds every kind of setting, with defaults, on a fresh flag set
// whose usage output goes to usage.
func bindAll(env map[string]string, usage *bytes.Buffer, opts ...envflag.Option) (*settings, *envflag.Set) {
	s := &settings{Addr: ":8080", Size: 2, Seed: 1, Rate: 0.5, Delay: time.Second}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(usage)
	e := envflag.New(fs, func(k string) string { return env[k] }, opts...)
	e.String(&s.Addr, "HTTP_ADDR", "address to listen on")
	e.Bool(&s.Gray, "GRAY_STATUS", "gray track")
	e.Int(&s.Size, "POOL_SIZE", "pool size")
	e.Uint64(&s.Seed, "DEMO_SEED", "seed")
	e.Float64(&s.Rate, "ERROR_RATE", "error rate")
	e.Duration(&s.Delay, "SHUTDOWN_DELAY", "shutdown delay")
	return s, e
}

var errSentinel = errors.New("invalid test configuration")

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		opts    []envflag.Option
		want    settings
		wantErr []string // substrings of the error; none: no error
		wantIs  error    // an error the result must wrap
	}{
		{
			name: "defaults stand when nothing is set",
			want: settings{Addr: ":8080", Size: 2, Seed: 1, Rate: 0.5, Delay: time.Second},
		},
		{
			name: "environment values are used",
			env: map[string]string{
				"HTTP_ADDR": ":9090", "GRAY_STATUS": "true", "POOL_SIZE": "7", "DEMO_SEED": "42",
				"ERROR_RATE": "0.25", "SHUTDOWN_DELAY": "3s",
			},
			want: settings{Addr: ":9090", Gray: true, Size: 7, Seed: 42, Rate: 0.25, Delay: 3 * time.Second},
		},
		{
			name: "an empty variable keeps the default",
			env:  map[string]string{"HTTP_ADDR": ""},
			want: settings{Addr: ":8080", Size: 2, Seed: 1, Rate: 0.5, Delay: time.Second},
		},
		{
			name: "a flag wins over its variable",
			env:  map[string]string{"HTTP_ADDR": ":9090", "POOL_SIZE": "7", "GRAY_STATUS": "true"},
			args: []string{"-http-addr", ":7070", "-pool-size=9", "-gray-status=false", "-demo-seed", "5"},
			want: settings{Addr: ":7070", Size: 9, Seed: 5, Rate: 0.5, Delay: time.Second},
		},
		{
			name: "a trimmed prefix is left out of the flag name but not the variable",
			env:  map[string]string{"DEMO_SEED": "42"},
			args: []string{"-seed", "43", "-pool-size", "3"},
			opts: []envflag.Option{envflag.TrimPrefix("DEMO_")},
			want: settings{Addr: ":8080", Size: 3, Seed: 43, Rate: 0.5, Delay: time.Second},
		},
		{
			name:    "a bad value is reported with the variable's name and value",
			env:     map[string]string{"SHUTDOWN_DELAY": "soon"},
			wantErr: []string{`parsing SHUTDOWN_DELAY="soon"`, "invalid duration"},
		},
		{
			name:    "every bad value is reported at once",
			env:     map[string]string{"GRAY_STATUS": "maybe", "POOL_SIZE": "many", "ERROR_RATE": "half"},
			wantErr: []string{"GRAY_STATUS", "POOL_SIZE", "ERROR_RATE"},
		},
		{
			name:    "bad values are reported before the flags are parsed",
			env:     map[string]string{"POOL_SIZE": "many"},
			args:    []string{"-no-such-flag"},
			wantErr: []string{"POOL_SIZE"},
		},
		{
			name:    "extra arguments are rejected",
			args:    []string{"-pool-size=3", "extra", "more"},
			wantErr: []string{`unexpected arguments: ["extra" "more"]`},
		},
		{
			name:    "an unknown flag is the flag package's error",
			args:    []string{"-no-such-flag"},
			wantErr: []string{"flag provided but not defined: -no-such-flag"},
		},
		{
			name:    "a bad value wraps the sentinel when asked",
			env:     map[string]string{"POOL_SIZE": "many"},
			opts:    []envflag.Option{envflag.WrapErrors(errSentinel)},
			wantErr: []string{`invalid test configuration: parsing POOL_SIZE="many"`},
			wantIs:  errSentinel,
		},
		{
			name:    "extra arguments wrap the sentinel when asked",
			args:    []string{"extra"},
			opts:    []envflag.Option{envflag.WrapErrors(errSentinel)},
			wantErr: []string{"invalid test configuration: unexpected arguments"},
			wantIs:  errSentinel,
		},
		{
			name:    "help is the flag package's ErrHelp",
			args:    []string{"-h"},
			wantErr: []string{"help requested"},
			wantIs:  flag.ErrHelp,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := bindAll(tt.env, &bytes.Buffer{}, tt.opts...)
			err := e.Parse(tt.args)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Parse = %v", err)
				}
				if *s != tt.want {
					t.Errorf("got %+v, want %+v", *s, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse = nil, want an error containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse = %v, want it to contain %q", err, w)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Parse = %v, want it to wrap %v", err, tt.wantIs)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		name string
		opts []envflag.Option
		want []string
	}{
		{
			name: "help names each flag and its variable",
			want: []string{"-http-addr", "address to listen on (env HTTP_ADDR)", "-demo-seed", "seed (env DEMO_SEED)"},
		},
		{
			name: "help names the full variable when a prefix is trimmed from the flag",
			opts: []envflag.Option{envflag.TrimPrefix("DEMO_")},
			want: []string{"-seed", "seed (env DEMO_SEED)", "-pool-size", "pool size (env POOL_SIZE)"},
		},
		{
			name: "help shows a default taken from the environment",
			want: []string{`(env HTTP_ADDR) (default ":8080")`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var usage bytes.Buffer
			_, e := bindAll(nil, &usage, tt.opts...)
			if err := e.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("Parse(-h) = %v, want flag.ErrHelp", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(usage.String(), w) {
					t.Errorf("help lacks %q:\n%s", w, usage.String())
				}
			}
		})
	}
}

func TestFlagName(t *testing.T) {
	for _, tt := range []struct{ env, want string }{
		{"REDIS_ADDR", "redis-addr"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "otel-exporter-otlp-endpoint"},
		{"RPS", "rps"},
	} {
		t.Run(fmt.Sprintf("%s is -%s", tt.env, tt.want), func(t *testing.T) {
			if got := envflag.FlagName(tt.env); got != tt.want {
				t.Errorf("FlagName(%q) = %q, want %q", tt.env, got, tt.want)
			}
		})
	}
}

func ExampleSet() {
	addr := ":8080"
	var size int
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	getenv := func(k string) string { return map[string]string{"HTTP_ADDR": ":9090", "POOL_SIZE": "4"}[k] }
	e := envflag.New(fs, getenv)
	e.String(&addr, "HTTP_ADDR", "address to listen on")
	e.Int(&size, "POOL_SIZE", "pool size")
	if err := e.Parse([]string{"-pool-size", "8"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(addr, size)
	// Output: :9090 8
}

package redishealth

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// script is a Pinger that answers from a list, one error (or nil) a ping.
type script struct{ errs []error }

func (s *script) Ping(context.Context) error {
	err := s.errs[0]
	s.errs = s.errs[1:]
	return err
}

func TestWatcherCountsFailuresAndLogsAtABoundedRate(t *testing.T) {
	down := errors.New("i/o timeout")
	tests := []struct {
		name         string
		pings        []error
		wantUp       float64
		wantFailures float64
		wantLines    []string // messages, in order
	}{
		{"a healthy Redis logs nothing", []error{nil, nil, nil}, 1, 0, nil},
		{
			"a 12s outage pinged every second logs the first failure, one line per 10s and the recovery",
			append(append([]error{nil}, repeat(down, 12)...), nil), 1, 12,
			[]string{"redis unreachable", "redis still unreachable", "redis reachable again"},
		},
		{"a Redis still down shows 0", []error{nil, down, down}, 0, 2, []string{"redis unreachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			clock := time.Unix(0, 0)
			reg := prometheus.NewRegistry()
			w, err := New(&script{errs: tt.pings}, reg, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			w.o.now = func() time.Time { return clock }
			for range tt.pings {
				_ = w.Check(context.Background())
				clock = clock.Add(time.Second)
			}
			if got := testutil.ToFloat64(w.up); got != tt.wantUp {
				t.Errorf("%s = %v, want %v", UpName, got, tt.wantUp)
			}
			if got := testutil.ToFloat64(w.failures); got != tt.wantFailures {
				t.Errorf("%s = %v, want %v", FailuresName, got, tt.wantFailures)
			}
			var msgs []string
			for line := range strings.Lines(logs.String()) {
				_, rest, _ := strings.Cut(line, `msg="`)
				msg, _, _ := strings.Cut(rest, `"`)
				msg, _, _ = strings.Cut(msg, ":")
				msgs = append(msgs, msg)
			}
			if strings.Join(msgs, "|") != strings.Join(tt.wantLines, "|") {
				t.Errorf("log lines %q, want %q\n%s", msgs, tt.wantLines, logs.String())
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(nil, prometheus.NewRegistry()); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := New(&script{}, prometheus.NewRegistry(), WithInterval(0)); err == nil {
		t.Error("a zero interval was accepted")
	}
}

package judge_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/parity"
)

func TestParseParams(t *testing.T) {
	since := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	t.Run("every key parses", func(t *testing.T) {
		got, err := judge.ParseParams("shop", map[string]string{
			"selector": `app=shop, job="pool,parity"`, "slis": "latency-p99, error-ratio", "mode": "Counts",
			"window": "1m", "since": since.Format(time.RFC3339), "warmup": "90s", "prometheus": "http://prom:9090/",
			"step": "20s", "sample": "20s",
		})
		if err != nil {
			t.Fatal(err)
		}
		want := judge.Request{
			Namespace: "shop", MatchLabels: map[string]string{"app": "shop", "job": "pool,parity"},
			SLIs: []catalog.ID{catalog.LatencyP99, catalog.ErrorRatio}, Mode: parity.StatCounts, Window: "1m",
			Since: since, Warmup: 90 * time.Second, Prometheus: "http://prom:9090", Step: 20 * time.Second, Sample: "20s",
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
	t.Run("empty values are defaults", func(t *testing.T) {
		got, err := judge.ParseParams("shop", map[string]string{"mode": " ", "selector": ""})
		if err != nil || !reflect.DeepEqual(got, judge.Request{Namespace: "shop"}) {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	for _, tc := range []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"an unknown key", map[string]string{"slo": "x"}, "slo: unknown parameter"},
		{"a selector pair without =", map[string]string{"selector": "app"}, "want key=value"},
		{"a selector key that is no label name", map[string]string{"selector": "a.b=c"}, "label name"},
		{"a selector key given twice", map[string]string{"selector": "a=b,a=c"}, "given twice"},
		{"an unterminated quote", map[string]string{"selector": `a="b`}, "quoted"},
		{"text after a quoted value", map[string]string{"selector": `a="b"c`}, "want ','"},
		{"an unknown SLI", map[string]string{"slis": "latency-p42"}, "slis"},
		{"an unknown mode", map[string]string{"mode": "sequential"}, "mode"},
		{"a window that is no duration", map[string]string{"window": "5 minutes"}, "window"},
		{"a start that is no RFC 3339 time", map[string]string{"since": "yesterday"}, "since"},
		{"a negative warm-up", map[string]string{"warmup": "-1s"}, "warmup"},
		{"a step that is no duration", map[string]string{"step": "20"}, "step"},
		{"a step shorter than a scrape", map[string]string{"step": "1s"}, "want 5s to 1h"},
		{"a step beyond an hour", map[string]string{"step": "2h"}, "want 5s to 1h"},
		{"a sample family that is no duration", map[string]string{"sample": "20 s"}, "sample"},
		{"a Prometheus URL with a query", map[string]string{"prometheus": "http://p:9090/?x=1"}, "prometheus"},
		{"a value too long", map[string]string{"selector": strings.Repeat("a", judge.MaxParamBytes+1)}, "longer than"},
		{"too many label pairs", map[string]string{"selector": manyPairs(judge.MaxLabels + 1)}, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := judge.ParseParams("shop", tc.params)
			if !errors.Is(err, judge.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func manyPairs(n int) string {
	var p []string
	for i := range n {
		p = append(p, fmt.Sprintf("l%d=v", i))
	}
	return strings.Join(p, ",")
}

// FuzzParseParams: no input panics, and an accepted selector renders
// matchers the evaluator accepts.
func FuzzParseParams(f *testing.F) {
	for _, s := range []string{`app=shop,job="a,b"`, `a="\"x"`, "=", ",,", `a="`, "a=b,", " a = b "} {
		f.Add("shop", s, "latency-p99", "Counts", "90s")
	}
	f.Fuzz(func(t *testing.T, ns, selector, slis, mode, warmup string) {
		req, err := judge.ParseParams(ns, map[string]string{"selector": selector, "slis": slis, "mode": mode, "warmup": warmup})
		if err != nil {
			if !errors.Is(err, judge.ErrInvalid) {
				t.Fatalf("an error that is not ErrInvalid: %v", err)
			}
			return
		}
		if _, err := parity.Matchers(req.MatchLabels); err != nil {
			t.Fatalf("accepted selector %q renders no matchers: %v", selector, err)
		}
	})
}

func ExampleParseParams() {
	req, err := judge.ParseParams("shop", map[string]string{"selector": "app=shop", "slis": "latency-p99", "mode": "Confirm"})
	fmt.Println(req.Namespace, req.MatchLabels, req.SLIs, req.Mode, err)
	// Output: shop map[app:shop] [latency-p99] Confirm <nil>
}

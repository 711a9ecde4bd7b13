package judge

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// The parameter keys of a request's text form: Flagger's webhook metadata,
// the web provider's query parameters and the Argo plugin's config.
const (
	// ParamSelector is the service's label selector: key=value pairs,
	// comma-separated (app=shop,job=poolparity); a value may be quoted
	// ("a,b") to hold a comma.
	ParamSelector = "selector"
	// ParamSLIs lists the catalog SLI IDs to judge, comma-separated; empty
	// judges every SLI.
	ParamSLIs = "slis"
	// ParamMode is the statistical mode, one of parity.Modes (Counts by
	// default: DefaultMode; a retired one is refused naming its
	// replacement).
	ParamMode = "mode"
	// ParamWindow is the threshold rules' family, a Prometheus duration
	// (5m, the chart's; 1m).
	ParamWindow = "window"
	// ParamSince is the rollout's start, RFC 3339: the sequential evidence
	// starts there.
	ParamSince = "since"
	// ParamWarmup is how long after the start the samples are left out, a
	// Go duration (90s, 2m).
	ParamWarmup = "warmup"
	// ParamPrometheus names one of the allowed Prometheus endpoints.
	ParamPrometheus = "prometheus"
	// ParamStep is the statistical step, a Go duration from 5s to 1h: the
	// test takes one sample per step (the catalog's, 1m, when empty).
	ParamStep = "step"
	// ParamSample is the rule family the test samples, a Prometheus
	// duration (20s for the ..._rate20s rules; the catalog's, 1m, when
	// empty). Its range must not exceed step, or samples overlap: the
	// request is refused as invalid, saying so.
	ParamSample = "sample"
)

// Params lists every parameter key, sorted.
var Params = []string{ParamMode, ParamPrometheus, ParamSample, ParamSelector, ParamSince, ParamSLIs, ParamStep, ParamWarmup, ParamWindow}

// Bounds of a request's text form: a request beyond them is refused
// before anything is parsed further.
const (
	// MaxParamBytes bounds one parameter's value.
	MaxParamBytes = 4096
	// MaxLabels bounds the selector's pairs.
	MaxLabels = 32
	// MinStep is the shortest statistical step: below a scrape interval
	// the samples repeat one scrape.
	MinStep = 5 * time.Second
)

// ParseParams returns the request that params (keys of Params) describe
// for namespace. An unknown key, a value beyond MaxParamBytes or a value
// that does not parse is an error wrapping ErrInvalid that names the key;
// it never panics.
func ParseParams(namespace string, params map[string]string) (Request, error) {
	req := Request{Namespace: namespace}
	bad := func(key string, format string, a ...any) (Request, error) {
		return Request{}, fmt.Errorf("%w: %s: "+format, append([]any{ErrInvalid, key}, a...)...)
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		if len(v) > MaxParamBytes {
			return bad(safe(k), "longer than %d bytes", MaxParamBytes)
		}
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		var err error
		switch k {
		case ParamSelector:
			req.MatchLabels, err = ParseSelector(v)
		case ParamSLIs:
			for f := range strings.SplitSeq(v, ",") {
				if f = strings.TrimSpace(f); f != "" {
					req.SLIs = append(req.SLIs, catalog.ID(f))
				}
			}
			if len(req.SLIs) > 0 {
				_, err = catalog.Default().Select(req.SLIs...)
			}
		case ParamMode:
			req.Mode, err = parity.ParseStatMode(v)
		case ParamWindow:
			if _, err = model.ParseDuration(v); err == nil {
				req.Window = v
			}
		case ParamSince:
			req.Since, err = time.Parse(time.RFC3339, v)
		case ParamWarmup:
			req.Warmup, err = time.ParseDuration(v)
			if err == nil && (req.Warmup < 0 || req.Warmup > 24*time.Hour) {
				err = fmt.Errorf("%s: want 0 to 24h", v)
			}
		case ParamStep:
			req.Step, err = time.ParseDuration(v)
			if err == nil && (req.Step < MinStep || req.Step > time.Hour) {
				err = fmt.Errorf("%s: want %s to 1h", v, MinStep)
			}
		case ParamSample:
			if _, err = model.ParseDuration(v); err == nil {
				req.Sample = v
			}
		case ParamPrometheus:
			if req.Prometheus, err = promread.CheckURL(v); err != nil {
				err = fmt.Errorf("%s", promread.Sanitize(err.Error(), 256))
			}
		default:
			return bad(safe(k), "unknown parameter (known: %s)", strings.Join(Params, ", "))
		}
		if err != nil {
			return bad(k, "%v", err)
		}
	}
	return req, nil
}

// CheckNamespace returns an error unless ns is a Kubernetes namespace name
// (an RFC 1123 label).
func CheckNamespace(ns string) error {
	if ns == "" {
		return fmt.Errorf("namespace: required")
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", safe(ns), strings.Join(errs, "; "))
	}
	return nil
}

// ParseSelector parses key=value pairs, comma-separated, into equality
// matchers: each key a Prometheus label name, each value plain or
// double-quoted (Go syntax, to hold a comma or a quote). At most MaxLabels
// pairs; a key given twice is an error.
func ParseSelector(s string) (map[string]string, error) {
	out := map[string]string{}
	for rest := strings.TrimSpace(s); rest != ""; {
		if len(out) == MaxLabels {
			return nil, fmt.Errorf("more than %d label pairs", MaxLabels)
		}
		eq := strings.IndexByte(rest, '=')
		if eq < 0 {
			return nil, fmt.Errorf("%q: want key=value", safe(rest))
		}
		key := strings.TrimSpace(rest[:eq])
		if err := promread.CheckLabelName(key); err != nil {
			return nil, fmt.Errorf("%s", promread.Sanitize(err.Error(), 256))
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("label %s given twice", key)
		}
		rest = strings.TrimLeft(rest[eq+1:], " ")
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("label %s: unterminated or bad quoted value", key)
			}
			if val, err = strconv.Unquote(q); err != nil {
				return nil, fmt.Errorf("label %s: bad quoted value", key)
			}
			rest = strings.TrimSpace(rest[len(q):])
			if rest != "" && rest[0] != ',' {
				return nil, fmt.Errorf("label %s: want ',' after the quoted value", key)
			}
		} else {
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			val = strings.TrimSpace(rest[:end])
			rest = rest[end:]
		}
		out[key] = val
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	return out, nil
}

// safe is s fit for an error message: printable, at most 64 runes.
func safe(s string) string { return promread.Sanitize(s, 64) }

// SplitList returns the comma-separated items of s, trimmed, blanks
// dropped: the allowed endpoints of the judge's and the plugin's
// configuration.
func SplitList(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

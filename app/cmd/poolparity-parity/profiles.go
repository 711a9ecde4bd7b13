package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
	"github.com/poolparity/poolparity/internal/profdiff"
)

// profileSlack is how long a capture may take beyond its seconds (the
// allocation profiles, the request-rate query).
const profileSlack = 30 * time.Second

// profileTop is how many functions each comparison keeps.
const profileTop = 8

// addProfiles profiles the instances at cfg.PprofGray and cfg.PprofStable
// for cfg.ProfileSeconds and puts the comparison into report. A profile that
// cannot be taken never changes the verdict: it leaves a note in the report
// and one line on stderr.
func addProfiles(ctx context.Context, q parity.Querier, cfg Config, report *parity.Report, stdout, stderr io.Writer) {
	fmt.Fprintf(stdout, "parity: FAIL: profiling gray at %s and stable at %s for %ds ...\n", cfg.PprofGray, cfg.PprofStable, cfg.ProfileSeconds)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.ProfileSeconds)*time.Second+profileSlack)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}} // bounded by ctx
	defer client.CloseIdleConnections()
	var notes []string
	requests := func(ctx context.Context) (gray, stable float64, err error) {
		rates, err := instanceRates(ctx, q, cfg.Selector, cfg.Window, time.Now())
		if err != nil {
			return 0, 0, err
		}
		var reqs [2]float64
		for i, t := range []struct{ track, base, status string }{{"gray", cfg.PprofGray, instrument.GrayStatusGray}, {"stable", cfg.PprofStable, instrument.GrayStatusStable}} {
			rate, note, err := rates.of(t.status, hostOf(t.base))
			if err != nil {
				return 0, 0, fmt.Errorf("%s track: %w", t.track, err)
			}
			if note != "" {
				notes = append(notes, fmt.Sprintf("profiles: the %s instance's requests are %s", t.track, note))
			}
			reqs[i] = rate * float64(cfg.ProfileSeconds)
		}
		return reqs[0], reqs[1], nil
	}
	diffs, err := profdiff.Capture(ctx, client, cfg.PprofGray, cfg.PprofStable, cfg.ProfileSeconds, requests,
		profdiff.Options{Own: profdiff.ServiceCode(), Top: profileTop})
	report.Profiles = diffs
	report.Notes = append(report.Notes, notes...)
	if err != nil {
		why := strings.ReplaceAll(err.Error(), "\n", "; ")
		report.Notes = append(report.Notes, "profiles not compared: "+why)
		fmt.Fprintf(stderr, "poolparity-parity: profiles missing (the verdict stands): %s\n", why)
	}
}

// rates are request rates per second by gray_status, then by the instance
// label.
type rates map[string]map[string]float64

// instanceRates reads each instance's request rate over window:
// sum by (gray_status, instance) (rate(http_requests_total{selector}[window])).
func instanceRates(ctx context.Context, q parity.Querier, selector, window string, at time.Time) (rates, error) {
	expr := fmt.Sprintf("sum by (gray_status, instance) (rate(http_requests_total{%s}[%s]))", selector, window)
	vec, err := promread.Vector(ctx, q, expr, at)
	if err != nil {
		return nil, err
	}
	out := rates{}
	for _, s := range vec {
		gs := string(s.Metric["gray_status"])
		if out[gs] == nil {
			out[gs] = map[string]float64{}
		}
		if f := float64(s.Value); f >= 0 && !math.IsInf(f, 0) { // NaN fails f >= 0: no rate
			out[gs][string(s.Metric["instance"])] += f
		}
	}
	return out, nil
}

// of returns the request rate of the instance of the track (a gray_status
// value) whose instance label has host as its host: the pod IP that a pprof
// URL names. When none has (a port-forward's 127.0.0.1), it returns the
// track's mean rate per instance and a note saying it is an estimate.
func (r rates) of(grayStatus, host string) (rate float64, note string, err error) {
	byInstance := r[grayStatus]
	if len(byInstance) == 0 {
		return 0, "", fmt.Errorf("no http_requests_total series with gray_status=%q", grayStatus)
	}
	var sum float64
	for inst, v := range byInstance {
		h, _, err := net.SplitHostPort(inst)
		if err != nil {
			h = inst
		}
		if h == host {
			return v, "", nil
		}
		sum += v
	}
	n := len(byInstance)
	return sum / float64(n), fmt.Sprintf("estimated as its track's mean per instance (%d instances; none at %s)", n, host), nil
}

// hostOf returns the host of a pprof base URL (Validate has parsed it).
func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

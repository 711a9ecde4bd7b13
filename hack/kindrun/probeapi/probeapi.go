// Package probeapi is the control API of the kind run's chaos probe (hack/kindrun/chaosprobe):
// the answers it gives, and a client for the harness, which reaches it over a port-forward.
//
// A Client is safe for concurrent use; the probe runs one load at a time.
package probeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Counts classifies the answers the probe's load got so far.
type Counts struct {
	Requests     uint64            `json:"requests"`      // answered or failed, not cut off by the load's end
	OK           uint64            `json:"ok"`            // 1xx-3xx
	ClientErrors uint64            `json:"client_errors"` // 4xx: a read of a deleted item, a shed request
	JSON5xx      uint64            `json:"json_5xx"`      // 5xx with the service's JSON error body
	Other5xx     uint64            `json:"other_5xx"`     // 5xx without it
	Transport    uint64            `json:"transport"`     // no HTTP answer: refused, reset, timed out
	ByCode       map[string]uint64 `json:"by_code"`
	Errors       []string          `json:"errors,omitempty"` // the first transport errors and odd 5xx
}

// Failed counts the requests that got no answer or a 5xx.
func (c Counts) Failed() uint64 { return c.JSON5xx + c.Other5xx + c.Transport }

// ConnectionErrors counts the requests the service did not answer itself: no HTTP answer at
// all, or a 5xx without its JSON error body.
func (c Counts) ConnectionErrors() uint64 { return c.Other5xx + c.Transport }

// Sub is c minus an earlier snapshot of the same load; the error samples are those c added.
func (c Counts) Sub(before Counts) Counts {
	d := Counts{
		Requests: c.Requests - before.Requests, OK: c.OK - before.OK, ClientErrors: c.ClientErrors - before.ClientErrors,
		JSON5xx: c.JSON5xx - before.JSON5xx, Other5xx: c.Other5xx - before.Other5xx, Transport: c.Transport - before.Transport,
		ByCode: map[string]uint64{},
	}
	for code, n := range c.ByCode {
		if n > before.ByCode[code] {
			d.ByCode[code] = n - before.ByCode[code]
		}
	}
	if len(c.Errors) > len(before.Errors) {
		d.Errors = c.Errors[len(before.Errors):]
	}
	return d
}

// Written is what one write call did.
type Written struct {
	Acked  int      `json:"acked"`
	Failed int      `json:"failed"`
	Total  int      `json:"total_acked"` // acknowledged items of the set so far
	Errors []string `json:"errors,omitempty"`
}

// Verified is what one read-back of a set found.
type Verified struct {
	Checked     int      `json:"checked"`
	Matched     int      `json:"matched"`
	Lost        int      `json:"lost"`        // 404: an acknowledged write is gone
	Mismatched  int      `json:"mismatched"`  // an answer with other bytes than the PUT's
	Unavailable int      `json:"unavailable"` // no answer or a 5xx: ask again later
	Mismatches  []string `json:"mismatches,omitempty"`
}

// Client calls a probe's control API at Base.
type Client struct {
	Base string
	HTTP *http.Client
}

// NewClient returns a client of the probe at base (a loopback port-forward: no proxy).
func NewClient(base string) Client {
	return Client{Base: base, HTTP: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{Proxy: nil}}}
}

// call sends method path?q and decodes the JSON answer into out.
func (p Client) call(ctx context.Context, method, path string, q url.Values, out any) error {
	u := p.Base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("chaosprobe %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("chaosprobe %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("chaosprobe %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("chaosprobe %s: decoding %q: %w", path, b, err)
	}
	return nil
}

// StartLoad starts rps requests a second on concurrency keep-alive connections, and fresh more
// each on a new connection, for at most d.
func (p Client) StartLoad(ctx context.Context, rps float64, concurrency int, fresh float64, d time.Duration) error {
	var out map[string]any
	return p.call(ctx, http.MethodPost, "/load/start", url.Values{
		"rps": {strconv.FormatFloat(rps, 'g', -1, 64)}, "concurrency": {strconv.Itoa(concurrency)},
		"fresh": {strconv.FormatFloat(fresh, 'g', -1, 64)}, "duration": {d.String()},
	}, &out)
}

// Counts returns the running load's counts so far.
func (p Client) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	return c, p.call(ctx, http.MethodGet, "/load/counts", nil, &c)
}

// StopLoad stops the load and returns its final counts.
func (p Client) StopLoad(ctx context.Context) (Counts, error) {
	var c Counts
	return c, p.call(ctx, http.MethodPost, "/load/stop", nil, &c)
}

// Write PUTs n new items of set, one after another.
func (p Client) Write(ctx context.Context, set string, n int) (Written, error) {
	var w Written
	return w, p.call(ctx, http.MethodPost, "/items/write", url.Values{"set": {set}, "n": {strconv.Itoa(n)}}, &w)
}

// Verify reads every acknowledged item of set back.
func (p Client) Verify(ctx context.Context, set string) (Verified, error) {
	var v Verified
	return v, p.call(ctx, http.MethodPost, "/items/verify", url.Values{"set": {set}}, &v)
}

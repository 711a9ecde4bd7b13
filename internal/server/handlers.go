package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/poolparity/poolparity/internal/item"
	"github.com/poolparity/poolparity/internal/pools"
	"github.com/poolparity/poolparity/internal/store"
	"github.com/poolparity/poolparity/internal/termstats"
)

// List limits.
const (
	// DefaultListLimit is the page size of GET /api/v1/items without limit.
	DefaultListLimit = 50
	// MaxListLimit is the largest limit accepted.
	MaxListLimit = 500
)

// itemResponse is an item as the API returns it.
type itemResponse struct {
	ID string `json:"id"`
	*item.Item
}

// summary is what the store keeps beside an item for the list: its name
// and tags, without the payload.
type summary struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// listEntry is an item as the list returns it: no payload.
type listEntry struct {
	ID   string   `json:"id"`
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

type listResponse struct {
	Count int         `json:"count"`
	Items []listEntry `json:"items"`
}

func (s *Server) putItem(w http.ResponseWriter, r *http.Request) {
	id, ok := itemID(w, r)
	if !ok {
		return
	}
	if r.ContentLength > item.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "body larger than 1 MiB")
		return
	}
	rs, leased := s.takeScratch(r)
	if !leased {
		defer s.scratch.Put(rs)
	}

	var err error
	rs.body, err = readAll(rs.body, http.MaxBytesReader(w, r.Body, item.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "body larger than 1 MiB")
			return
		}
		writeError(w, http.StatusBadRequest, "reading body failed")
		return
	}
	if err := item.Decode(rs.body, &rs.item); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}

	enc, leasedEnc := s.takeEncoder(r)
	if !leasedEnc {
		defer s.enc.Put(enc)
	}
	if err := enc.Enc.Encode(&rs.item); err != nil {
		s.internalError(w, r, "encoding item", err)
		return
	}
	n := enc.Buf.Len()
	if err := enc.Enc.Encode(summary{Name: rs.item.Name, Tags: rs.item.Tags}); err != nil {
		s.internalError(w, r, "encoding item summary", err)
		return
	}
	b := enc.Buf.Bytes()
	if err := s.store.Put(r.Context(), id, trimNewline(b[:n]), trimNewline(b[n:])); err != nil {
		s.unavailable(w, r, err)
		return
	}
	enc.Buf.Reset()
	s.writeItem(w, r, enc, id, &rs.item)
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) {
	id, ok := itemID(w, r)
	if !ok {
		return
	}
	v, err := s.store.Get(r.Context(), id)
	if err != nil {
		s.itemLookupFailed(w, r, err)
		return
	}
	rs, leased := s.takeScratch(r)
	if !leased {
		defer s.scratch.Put(rs)
	}
	rs.body = append(rs.body, v...)
	if err := json.Unmarshal(rs.body, &rs.item); err != nil {
		s.internalError(w, r, "decoding stored item", err)
		return
	}
	rs.item.Normalize()
	enc, leasedEnc := s.takeEncoder(r)
	if !leasedEnc {
		defer s.enc.Put(enc)
	}
	s.writeItem(w, r, enc, id, &rs.item)
}

// writeItem encodes the item with its id into the empty enc and writes it.
func (s *Server) writeItem(w http.ResponseWriter, r *http.Request, enc *pools.Encoder, id string, it *item.Item) {
	if err := enc.Enc.Encode(itemResponse{ID: id, Item: it}); err != nil {
		s.internalError(w, r, "encoding item", err)
		return
	}
	writeJSON(w, http.StatusOK, enc.Buf.Bytes())
}

func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) {
	id, ok := itemID(w, r)
	if !ok {
		return
	}
	err := s.store.Delete(r.Context(), id)
	if err != nil {
		s.itemLookupFailed(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listItems(w http.ResponseWriter, r *http.Request) {
	limit := DefaultListLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to "+strconv.Itoa(MaxListLimit))
			return
		}
		limit = n
	}
	rs, leased := s.takeScratch(r)
	if !leased {
		defer s.scratch.Put(rs)
	}
	var err error
	if rs.ids, err = s.store.ScanIDs(r.Context(), rs.ids, limit); err != nil {
		s.unavailable(w, r, err)
		return
	}
	slices.Sort(rs.ids)
	rs.ids = slices.Compact(rs.ids) // SCAN may return a key more than once
	// A summary and a whole item both decode into a listEntry: the store
	// returns the whole item for one stored before summaries existed.
	var read int64
	rs.keys, err = s.store.GetSummaries(r.Context(), rs.ids, rs.keys, func(i int, v string, found bool) error {
		if !found {
			return nil
		}
		if read += int64(len(v)); s.listBudget > 0 && read > s.listBudget {
			return &termstats.BudgetError{Bound: termstats.BoundReadBytes, Limit: s.listBudget, Needed: read, Fit: len(rs.entries)}
		}
		rs.body = append(rs.body[:0], v...)
		rs.entries = append(rs.entries, listEntry{ID: rs.ids[i]})
		e := &rs.entries[len(rs.entries)-1]
		if err := json.Unmarshal(rs.body, e); err != nil {
			return err
		}
		if e.Tags == nil {
			e.Tags = []string{}
		}
		return nil
	})
	if err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		var over *termstats.BudgetError
		switch {
		case errors.As(err, &syn) || errors.As(err, &typ):
			s.internalError(w, r, "decoding stored item", err)
		case errors.As(err, &over):
			s.refuse(w, r, over, "the list", "limit")
		default:
			s.unavailable(w, r, err)
		}
		return
	}
	entries := rs.entries
	if entries == nil {
		entries = []listEntry{}
	}
	enc, leasedEnc := s.takeEncoder(r)
	if !leasedEnc {
		defer s.enc.Put(enc)
	}
	if err := enc.Enc.Encode(listResponse{Count: len(entries), Items: entries}); err != nil {
		s.internalError(w, r, "encoding list", err)
		return
	}
	writeJSON(w, http.StatusOK, enc.Buf.Bytes())
}

func (s *Server) getReport(w http.ResponseWriter, r *http.Request) {
	n, err := termstats.ParseN(r.URL.Query().Get("n"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	err = s.report.Build(r.Context(), n, func(body []byte) error {
		writeJSON(w, http.StatusOK, body)
		return nil
	})
	if errors.Is(err, termstats.ErrCorrupt) {
		s.internalError(w, r, "building report", err)
		return
	}
	if over := (*termstats.BudgetError)(nil); errors.As(err, &over) {
		s.refuse(w, r, over, "the report", "n")
		return
	}
	if err != nil {
		s.unavailable(w, r, err)
	}
}

// itemID returns the request's {id}, or answers 400 and reports false when
// it is not a valid item id.
func itemID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if err := item.ValidateID(id); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return id, true
}

// itemLookupFailed answers a failed store call on one item: 404 when the
// item does not exist, otherwise as unavailable does.
func (s *Server) itemLookupFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "item not found")
		return
	}
	s.unavailable(w, r, err)
}

// StatusClientClosedRequest is the non-standard 499 (as nginx logs it): the
// client went away, or its deadline passed, before the answer was ready.
// It is counted under code="499", so a client's own timeout is not charged
// to the service's 5xx error ratio.
const StatusClientClosedRequest = 499

// unavailable answers 503 for a storage failure, and logs it at a bounded
// rate (one line per LogEvery, counting the ones held back): the handler
// is where the error ends, and during an outage every request fails. When
// the request's own context is done, the storage call failed because the
// client left: that is a 499, not a storage failure.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		writeError(w, StatusClientClosedRequest, "client closed request")
		return
	}
	if n, ok := s.storageLog.allow(time.Now()); ok {
		s.log.WarnContext(r.Context(), "storage unavailable", "route", r.Pattern, "err", err, "suppressed_since_last", n)
	}
	writeError(w, http.StatusServiceUnavailable, "storage unavailable")
}

// ShedInFlight is the reason label of http_requests_shed_total: a heavy
// request found HeavyMaxInFlight others in flight and no slot freed within
// HeavyQueueWait. It is the only reason a request is shed (429): a request
// past a per-request bound is refused (422), not shed.
const ShedInFlight = "in_flight"

// RetryAfterSeconds is the Retry-After of a shed request.
const RetryAfterSeconds = 1

// Bound settings: the "bound" of a refusal, named as the setting that
// sets it (internal/config).
const (
	BoundHeavyMaxReadBytes = "HEAVY_MAX_READ_BYTES"
	BoundHeavyMaxHeldBytes = "HEAVY_MAX_HELD_BYTES"
)

// boundSetting names a termstats bound by its setting.
func boundSetting(b termstats.Bound) string {
	if b == termstats.BoundHeldBytes {
		return BoundHeavyMaxHeldBytes
	}
	return BoundHeavyMaxReadBytes
}

// Refusal is the body of a 422 answer: the request passed a per-request
// bound, so the same request fails the same way on every pod and at every
// retry while the data stays the same. Its shape is stable
// (docs/service.md, "Refusals: 422, 429 and 503").
type Refusal struct {
	// Error is a sentence for people.
	Error string `json:"error"`
	// Bound is the setting whose value the request passed, e.g.
	// HEAVY_MAX_HELD_BYTES.
	Bound string `json:"bound"`
	// Limit is that setting's value, in bytes.
	Limit int64 `json:"limit"`
	// Needed is the bytes counted when the request stopped: more than
	// Limit, and a lower bound on what the whole request needs.
	Needed int64 `json:"needed"`
	// Fits holds the query parameter of the largest request of the same
	// kind estimated to fit, from how far this one got (e.g. {"n": 123});
	// absent when not even one item fits.
	Fits map[string]int `json:"fits,omitempty"`
}

// refuse answers 422 with a Refusal for a request past a bound of its
// budget, and counts it. what is the request ("the report") and param the
// query parameter that sizes it ("n").
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, over *termstats.BudgetError, what, param string) {
	s.metrics.ObserveRefused(routeLabel(r), string(over.Bound))
	setting := boundSetting(over.Bound)
	verb := "read"
	if over.Bound == termstats.BoundHeldBytes {
		verb = "hold"
	}
	ref := Refusal{Bound: setting, Limit: over.Limit, Needed: over.Needed}
	if over.Fit > 0 {
		ref.Fits = map[string]int{param: over.Fit}
		ref.Error = fmt.Sprintf("%s would %s more than %s (%d bytes): retrying cannot help; ask for %s<=%d", what, verb, setting, over.Limit, param, over.Fit)
	} else {
		ref.Error = fmt.Sprintf("%s would %s more than %s (%d bytes) for a single item: retrying cannot help; the bound must be raised", what, verb, setting, over.Limit)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "n<=12", not "n\u003c=12"
	if err := enc.Encode(ref); err != nil {
		s.internalError(w, r, "encoding refusal", err)
		return
	}
	writeJSON(w, http.StatusUnprocessableEntity, buf.Bytes())
}

// bounded runs a heavy request when fewer than HeavyMaxInFlight are in
// flight, after waiting up to HeavyQueueWait for a slot; otherwise it sheds
// the request.
func (s *Server) bounded(next http.HandlerFunc) http.HandlerFunc {
	if s.heavy == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.acquireHeavy(r.Context()) {
			if r.Context().Err() != nil {
				writeError(w, StatusClientClosedRequest, "client closed request")
				return
			}
			s.shed(w, r, ShedInFlight, "too many heavy requests in flight: retry later")
			return
		}
		defer func() { <-s.heavy }()
		next(w, r)
	}
}

// acquireHeavy takes a heavy slot, waiting up to heavyWait for one.
func (s *Server) acquireHeavy(ctx context.Context) bool {
	select {
	case s.heavy <- struct{}{}:
		return true
	default:
	}
	if s.heavyWait <= 0 {
		return false
	}
	t := time.NewTimer(s.heavyWait)
	defer t.Stop()
	select {
	case s.heavy <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// shed answers 429 with Retry-After for a heavy request that found no free
// slot, and counts it. A shed request is not a server error: it is not in
// the 5xx ratio nor in the latency histogram (see docs/service.md).
func (s *Server) shed(w http.ResponseWriter, r *http.Request, reason, msg string) {
	s.metrics.ObserveShed(routeLabel(r), reason)
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	writeError(w, http.StatusTooManyRequests, msg)
}

func (s *Server) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.log.ErrorContext(r.Context(), what, "route", r.Pattern, "err", err)
	writeError(w, http.StatusInternalServerError, "internal error")
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

// writeJSON writes body (which ends with a newline) as a JSON response.
func writeJSON(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body) // a failed write means the client went away
}

func writeJSONString(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body+"\n")
}

// writeError writes {"error": msg}.
func writeError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg}) // a struct of one string always encodes
	writeJSON(w, code, append(b, '\n'))
}

// readAll appends everything from r to dst, like io.ReadAll but into a
// reused buffer.
func readAll(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}

// lease holds the objects pools.ModeMisuseHold takes for a request before
// anything else happens: before the fault latency, the wait for a
// heavy-request slot and every Redis round trip.
type lease struct {
	rs  *requestScratch
	enc *pools.Encoder
}

type leaseKey struct{}

// holding wraps h for pools.ModeMisuseHold: it takes a scratch and an
// encoder when the request arrives and gives them back when h returns,
// the misuse of taking pooled objects early "to have them ready". In every
// other mode it returns h.
func (s *Server) holding(h http.HandlerFunc) http.HandlerFunc {
	if !s.hold {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		l := &lease{rs: s.scratch.Get(), enc: s.enc.Get()}
		defer func() {
			s.enc.Put(l.enc)
			s.scratch.Put(l.rs)
		}()
		h(w, r.WithContext(context.WithValue(r.Context(), leaseKey{}, l)))
	}
}

// heldLease returns the request's lease under ModeMisuseHold, or nil. In
// every other mode it returns at once, without a context lookup on the
// hot path.
func (s *Server) heldLease(r *http.Request) *lease {
	if !s.hold {
		return nil
	}
	l, _ := r.Context().Value(leaseKey{}).(*lease)
	return l
}

// takeScratch returns the request's scratch: the held one under
// ModeMisuseHold (leased is true: the caller must not Put it), else a
// fresh Get.
func (s *Server) takeScratch(r *http.Request) (rs *requestScratch, leased bool) {
	if l := s.heldLease(r); l != nil {
		return l.rs, true
	}
	return s.scratch.Get(), false
}

// takeEncoder is takeScratch for the encoder.
func (s *Server) takeEncoder(r *http.Request) (enc *pools.Encoder, leased bool) {
	if l := s.heldLease(r); l != nil {
		return l.enc, true
	}
	return s.enc.Get(), false
}

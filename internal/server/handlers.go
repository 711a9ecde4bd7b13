package server

import (
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
			return fmt.Errorf("%w: more than %d bytes of items to read", termstats.ErrOverBudget, s.listBudget)
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
		switch {
		case errors.As(err, &syn) || errors.As(err, &typ):
			s.internalError(w, r, "decoding stored item", err)
		case errors.Is(err, termstats.ErrOverBudget):
			s.shed(w, r, ShedBytes, "the list would read more than the byte budget of a heavy request: ask for fewer items (limit)")
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
	if errors.Is(err, termstats.ErrOverBudget) {
		s.shed(w, r, ShedBytes, "the report would read or hold more than the byte budget of a heavy request: ask for fewer items (n)")
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

// unavailable answers 503 for a storage failure, and logs it: the handler
// is where the error ends. When the request's own context is done, the
// storage call failed because the client left: that is a 499, not a
// storage failure.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		writeError(w, StatusClientClosedRequest, "client closed request")
		return
	}
	s.log.WarnContext(r.Context(), "storage unavailable", "route", r.Pattern, "err", err)
	writeError(w, http.StatusServiceUnavailable, "storage unavailable")
}

// Shed reasons: the reason label of http_requests_shed_total.
const (
	// ShedInFlight: HeavyMaxInFlight heavy requests were already in flight.
	ShedInFlight = "in_flight"
	// ShedBytes: the request would read or hold more than HeavyBudget.
	ShedBytes = "bytes"
)

// RetryAfterSeconds is the Retry-After of a shed request.
const RetryAfterSeconds = 1

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

// shed answers 429 with Retry-After for a request past the cost budget,
// and counts it. A shed request is not a server error: it is not in the
// 5xx ratio nor in the latency histogram (see docs/service.md).
func (s *Server) shed(w http.ResponseWriter, r *http.Request, reason, msg string) {
	s.metrics.ObserveShed(routeLabel(r.Pattern), reason)
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

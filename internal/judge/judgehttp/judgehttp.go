// Package judgehttp serves the judge (internal/judge) over HTTP for the
// rollout tools that call a URL: Flagger's webhooks and Argo Rollouts' web
// metric provider (docs/flagger.md, docs/argo-rollouts.md).
//
// Routes:
//
//	POST /flagger/rollout            Flagger rollout hook: non-2xx only on FAIL or ERROR
//	POST /flagger/confirm-promotion  Flagger confirm-promotion hook: 200 only on PASS
//	GET|POST /argo                   Argo's web provider: the verdict as JSON ($.phase)
//
// A Flagger hook's body is Flagger's webhook payload ({name, namespace,
// phase, checksum, metadata}); its metadata are judge.ParseParams' keys.
// The status codes: PASS 200; FAIL 412 (Precondition Failed: Flagger counts
// it, and its retrying client does not retry a 4xx); NO DATA 200 on a
// rollout hook (no regression shown: the step goes on, nothing is counted)
// and 425 (Too Early) on a confirm-promotion hook (the promotion waits);
// ERROR 503 (Prometheus could not be read; Flagger counts it like a failed
// metric query, and retries it when the hook has retries). A bad request
// is a 4xx with a JSON {"error": ...}.
//
// The Argo route answers 200 with the verdict for PASS, FAIL and NO DATA,
// its Argo phase in "phase" (Successful, Failed, Inconclusive) for a
// successCondition to read, and 503 for ERROR (Argo counts an Error).
//
// # Tenancy
//
// The judge cannot tell who calls it: a request names its namespace. A
// Server answers only for the namespaces of its allow-list
// (judge.Namespaces): a request for another is refused with 403 and
// {"error": ..., "namespace": ...} before Prometheus is read. Who may reach
// the port at all is the NetworkPolicy's business (docs/security.md).
//
// # Concurrency
//
// The handler is safe for concurrent use.
package judgehttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/parity"
)

// MaxBodyBytes bounds a request's body: Flagger's payload with its
// metadata is well under 1 KiB.
const MaxBodyBytes = 64 << 10

// The hooks, as the metrics' hook label names them.
const (
	HookRollout          = "flagger-rollout"
	HookConfirmPromotion = "flagger-confirm-promotion"
	HookArgo             = "argo-web"
)

// FlaggerPayload is Flagger's webhook payload (flagger v1beta1
// CanaryWebhookPayload).
type FlaggerPayload struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Phase     string            `json:"phase"`
	Checksum  string            `json:"checksum"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// Answer is the body of a judgement's answer.
type Answer struct {
	// Verdict is the evaluator's: PASS, FAIL, NO DATA or ERROR.
	Verdict parity.Verdict `json:"verdict"`
	// Phase is the verdict as an Argo measurement phase: Successful,
	// Failed, Inconclusive or Error.
	Phase string `json:"phase"`
	// Proceed says whether the answer lets the rollout go on (status 2xx).
	Proceed   bool      `json:"proceed"`
	Reasons   []string  `json:"reasons"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	Endpoint  string    `json:"endpoint,omitempty"`
	// Report is the parity table and its tests (parity.Report's JSON).
	Report json.RawMessage `json:"report,omitempty"`
}

// Phase returns v as an Argo measurement phase.
func Phase(v parity.Verdict) string {
	switch v {
	case parity.Pass:
		return "Successful"
	case parity.Fail:
		return "Failed"
	case parity.NoData:
		return "Inconclusive"
	}
	return "Error"
}

// Status returns the HTTP status of verdict v on hook.
func Status(hook string, v parity.Verdict) int {
	switch v {
	case parity.Pass:
		return http.StatusOK
	case parity.Fail:
		if hook == HookArgo {
			return http.StatusOK
		}
		return http.StatusPreconditionFailed
	case parity.NoData:
		if hook == HookConfirmPromotion {
			return http.StatusTooEarly
		}
		return http.StatusOK
	}
	return http.StatusServiceUnavailable
}

// The reasons of a refusal, as poolparity_judge_refusals_total's reason
// label names them.
const (
	// RefusedNamespace: the request's namespace is not in the allow-list (403).
	RefusedNamespace = "namespace"
	// RefusedInvalid: the request does not parse or asks for something
	// refused (400).
	RefusedInvalid = "invalid"
	// RefusedMethod: a method the route does not serve (405).
	RefusedMethod = "method"
	// RefusedTooLarge: a body beyond MaxBodyBytes (413).
	RefusedTooLarge = "too-large"
)

// Server is the judge's HTTP handler.
type Server struct {
	judge   *judge.Judge
	allow   judge.Namespaces
	starts  *judge.Starts
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
}

type metrics struct {
	requests *prometheus.CounterVec
	refusals *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New returns the handler judging through j the requests of the
// namespaces allow allows (its zero value refuses every request),
// remembering rollout starts in starts (a new Starts for nil), logging to
// log (none for nil), with its metrics registered on reg (none for nil).
func New(j *judge.Judge, allow judge.Namespaces, starts *judge.Starts, log *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	if starts == nil {
		starts = judge.NewStarts(0)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "poolparity_judge_requests_total",
			Help: "Judge requests by hook and answer: PASS, FAIL, NO DATA, ERROR or invalid (refused).",
		}, []string{"hook", "verdict"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "poolparity_judge_refusals_total",
			Help: "Judge requests refused, by hook and reason: namespace (not in NAMESPACES, 403), invalid (400), method (405) or too-large (413).",
		}, []string{"hook", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "poolparity_judge_duration_seconds",
			Help:    "Time to answer a judge request, by hook.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20},
		}, []string{"hook"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.refusals, m.duration} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering the judge's metrics: %w", err)
			}
		}
	}
	s := &Server{judge: j, allow: allow, starts: starts, log: log, metrics: m, mux: http.NewServeMux()}
	s.mux.HandleFunc("/flagger/rollout", s.flagger(HookRollout))
	s.mux.HandleFunc("/flagger/confirm-promotion", s.flagger(HookConfirmPromotion))
	s.mux.HandleFunc("/argo", s.argo)
	return s, nil
}

// ServeHTTP serves the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// httpError is a refused request: its status and message.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }

func refuse(status int, format string, a ...any) *httpError {
	return &httpError{status: status, err: fmt.Errorf(format, a...)}
}

// ParseFlagger reads Flagger's payload from body and returns the request
// it asks for and the payload. Errors wrap judge.ErrInvalid; it never
// panics.
func ParseFlagger(body []byte) (judge.Request, FlaggerPayload, error) {
	var p FlaggerPayload
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&p); err != nil {
		return judge.Request{}, p, fmt.Errorf("%w: the body is not Flagger's webhook payload: %v", judge.ErrInvalid, err)
	}
	if dec.More() {
		return judge.Request{}, p, fmt.Errorf("%w: the body holds more than one JSON value", judge.ErrInvalid)
	}
	if err := judge.CheckNamespace(p.Namespace); err != nil {
		return judge.Request{}, p, fmt.Errorf("%w: %v", judge.ErrInvalid, err)
	}
	if p.Name == "" || len(p.Name) > 253 || len(p.Checksum) > 256 {
		return judge.Request{}, p, fmt.Errorf("%w: name: want the canary's name (1 to 253 bytes), and a checksum of at most 256", judge.ErrInvalid)
	}
	req, err := judge.ParseParams(p.Namespace, p.Metadata)
	if err != nil {
		return judge.Request{}, p, fmt.Errorf("metadata: %w", err)
	}
	return req, p, nil
}

// ParseArgo reads the web provider's request from r's query (GET) or its
// form or JSON object of strings (POST): namespace, an optional run key
// (the rollout's identity, e.g. its name and pod-template hash) and the
// judge.ParseParams keys. A sequential mode needs since or run: without
// either the evidence would restart at every measurement.
func ParseArgo(r *http.Request) (judge.Request, string, error) {
	params := map[string]string{}
	switch r.Method {
	case http.MethodGet:
		for k, v := range r.URL.Query() {
			if len(v) != 1 {
				return judge.Request{}, "", fmt.Errorf("%w: %s given %d times", judge.ErrInvalid, safeKey(k), len(v))
			}
			params[k] = v[0]
		}
	case http.MethodPost:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return judge.Request{}, "", refuse(http.StatusRequestEntityTooLarge, "reading the body: %v", err)
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			if err := json.Unmarshal(body, &params); err != nil {
				return judge.Request{}, "", fmt.Errorf("%w: the body is not a JSON object of strings: %v", judge.ErrInvalid, err)
			}
		}
		for k, v := range r.URL.Query() {
			if _, dup := params[k]; dup || len(v) != 1 {
				return judge.Request{}, "", fmt.Errorf("%w: %s given more than once", judge.ErrInvalid, safeKey(k))
			}
			params[k] = v[0]
		}
	default:
		return judge.Request{}, "", refuse(http.StatusMethodNotAllowed, "method %s: want GET or POST", r.Method)
	}
	ns, run := params["namespace"], params["run"]
	rest := maps.Clone(params)
	delete(rest, "namespace")
	delete(rest, "run")
	if len(run) > 512 {
		return judge.Request{}, "", fmt.Errorf("%w: run: at most 512 bytes", judge.ErrInvalid)
	}
	req, err := judge.ParseParams(ns, rest)
	if err != nil {
		return judge.Request{}, "", err
	}
	if err := judge.CheckNamespace(ns); err != nil {
		return judge.Request{}, "", fmt.Errorf("%w: %v", judge.ErrInvalid, err)
	}
	if parity.Modes().AnytimeValid(modeName(req.Mode)) && req.Since.IsZero() && run == "" {
		return judge.Request{}, "", fmt.Errorf("%w: the %s mode needs since (the rollout's start) or run (the rollout's identity, e.g. {{args.rollout}}-{{args.hash}})", judge.ErrInvalid, modeName(req.Mode))
	}
	key := ""
	if run != "" {
		key = ns + "/" + run
	}
	return req, key, nil
}

func modeName(m parity.StatMode) parity.StatMode {
	if m == "" {
		return judge.DefaultMode
	}
	return m
}

func safeKey(k string) string {
	if len(k) > 64 {
		k = k[:64]
	}
	return fmt.Sprintf("%q", k)
}

// flagger serves a Flagger hook.
func (s *Server) flagger(hook string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			s.refused(w, hook, refuse(http.StatusMethodNotAllowed, "method %s: Flagger's webhooks POST", r.Method))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			s.refused(w, hook, refuse(http.StatusRequestEntityTooLarge, "reading the body (at most %d bytes): %v", MaxBodyBytes, err))
			return
		}
		req, p, err := ParseFlagger(body)
		if err == nil {
			err = s.allowed(req.Namespace)
		}
		if err != nil {
			s.refused(w, hook, err)
			return
		}
		// A new revision (checksum) of the canary is a new rollout: its evidence starts again.
		s.judgeAndAnswer(r.Context(), w, hook, req, p.Namespace+"/"+p.Name+"/"+p.Checksum, p.Name)
	}
}

// argo serves the web provider.
func (s *Server) argo(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	req, key, err := ParseArgo(r)
	if err == nil {
		err = s.allowed(req.Namespace)
	}
	if err != nil {
		s.refused(w, HookArgo, err)
		return
	}
	s.judgeAndAnswer(r.Context(), w, HookArgo, req, key, "")
}

// judgeAndAnswer judges req (its start remembered under key when it names
// none) and writes the answer of hook.
func (s *Server) judgeAndAnswer(ctx context.Context, w http.ResponseWriter, hook string, req judge.Request, key, name string) {
	begin := time.Now()
	defer func() { s.metrics.duration.WithLabelValues(hook).Observe(time.Since(begin).Seconds()) }()
	if req.Since.IsZero() && key != "" {
		req.Since = s.starts.Since(key, begin)
	}
	res, err := s.judge.Evaluate(ctx, req)
	if errors.Is(err, judge.ErrInvalid) {
		s.refused(w, hook, err)
		return
	}
	ans := Answer{Verdict: res.Verdict, Phase: Phase(res.Verdict), Reasons: res.Reasons, Namespace: req.Namespace, Name: name, Since: res.Since, Endpoint: res.Endpoint}
	if ans.Reasons == nil {
		ans.Reasons = []string{}
	}
	if err == nil {
		if ans.Report, err = res.ReportJSON(); err != nil {
			ans.Verdict, ans.Phase, ans.Reasons = parity.Error, Phase(parity.Error), []string{err.Error()}
		}
	}
	status := Status(hook, ans.Verdict)
	// Argo reads the phase, not the status: only a PASS proceeds there.
	ans.Proceed = status/100 == 2 && (hook != HookArgo || ans.Verdict == parity.Pass)
	s.metrics.requests.WithLabelValues(hook, string(ans.Verdict)).Inc()
	s.log.Info("judged", "hook", hook, "namespace", req.Namespace, "name", name, "verdict", ans.Verdict, "status", status, "since", res.Since, "reasons", strings.Join(ans.Reasons, "; "))
	writeJSON(w, status, ans)
}

// namespaceError is a request for a namespace the allow-list refuses.
type namespaceError struct {
	namespace string
	err       error
}

func (e *namespaceError) Error() string { return e.err.Error() }
func (e *namespaceError) Unwrap() error { return e.err }

// allowed returns nil if the allow-list allows ns, else a *namespaceError.
func (s *Server) allowed(ns string) error {
	if err := s.allow.Check(ns); err != nil {
		return &namespaceError{namespace: ns, err: err}
	}
	return nil
}

// refused answers a refused request with its status (400 unless err says
// otherwise) and {"error": ...}; a refused namespace is a 403 whose body
// names it in "namespace".
func (s *Server) refused(w http.ResponseWriter, hook string, err error) {
	status, reason := http.StatusBadRequest, RefusedInvalid
	body := map[string]string{"error": err.Error()}
	var he *httpError
	var ne *namespaceError
	switch {
	case errors.As(err, &ne):
		status, reason = http.StatusForbidden, RefusedNamespace
		body["namespace"] = ne.namespace
	case errors.As(err, &he):
		status = he.status
		switch status {
		case http.StatusMethodNotAllowed:
			reason = RefusedMethod
		case http.StatusRequestEntityTooLarge:
			reason = RefusedTooLarge
		}
	}
	s.metrics.requests.WithLabelValues(hook, "invalid").Inc()
	s.metrics.refusals.WithLabelValues(hook, reason).Inc()
	s.log.Info("refused", "hook", hook, "status", status, "reason", reason, "error", err)
	if status == http.StatusMethodNotAllowed {
		allow := "POST"
		if hook == HookArgo {
			allow = "GET, POST"
		}
		w.Header().Set("Allow", allow)
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

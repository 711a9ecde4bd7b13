package promread_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/poolparity/poolparity/internal/parity/promread"
)

// okVector is a Prometheus answer with one sample per track.
const okVector = `{"status":"success","data":{"resultType":"vector","result":[` +
	`{"metric":{"gray_status":"false"},"value":[%d,"1"]},{"metric":{"gray_status":"true"},"value":[%d,"2"]}]}}`

func TestClientBoundsAndSanitises(t *testing.T) {
	secret := "SECRET_TOKEN=hunter2 db=postgres://admin:pw@db"
	tests := []struct {
		name    string
		handler http.HandlerFunc
		cfg     promread.ClientConfig
		want    string // in the error; "" for no error
		wantNot string // never in the error
		isErr   error
	}{
		{"an answer within the cap is read", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, okVector, time.Now().Unix(), time.Now().Unix())
		}, promread.ClientConfig{}, "", "", nil},
		{"a streamed answer past the cap is refused", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
			chunk := strings.Repeat(`{"metric":{"gray_status":"true"},"value":[1,"1"]},`, 1000)
			for range 1000 { // about 50 MB, unless the client stops reading
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}, promread.ClientConfig{MaxResponseBytes: 1 << 20}, "larger than the response-size cap", "", promread.ErrResponseTooLarge},
		{"an announced answer past the cap is refused unread", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(50<<20))
			w.WriteHeader(http.StatusOK)
		}, promread.ClientConfig{MaxResponseBytes: 1 << 20}, "52428800 bytes announced", "", promread.ErrResponseTooLarge},
		{"another service's error page is never copied", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, secret, http.StatusForbidden)
		}, promread.ClientConfig{}, "403", "SECRET", nil},
		{"a 5xx page is never copied", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, secret, http.StatusBadGateway)
		}, promread.ClientConfig{}, "502", "SECRET", nil},
		{"Prometheus' own error field is kept, bounded and without control characters", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":"parse error\u0000\n%s"}`, strings.Repeat("x", 5000))
		}, promread.ClientConfig{}, "parse error x", "\x00", nil},
		{"a server that never answers costs the timeout", func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm() // the server notices a closed connection only once the body is read
			<-r.Context().Done()
		}, promread.ClientConfig{Timeout: 300 * time.Millisecond}, "", "", context.DeadlineExceeded},
		{"a redirect is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		}, promread.ClientConfig{}, "302", "169.254", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			q, err := promread.New(srv.URL, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = promread.ReadTracks(context.Background(), q, "x", time.Now(), "")
			if tt.want == "" && tt.isErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if tt.wantNot != "" && strings.Contains(err.Error(), tt.wantNot) {
				t.Errorf("error %q shows %q", err, tt.wantNot)
			}
			if tt.isErr != nil && !errors.Is(err, tt.isErr) && !strings.Contains(err.Error(), "Timeout") {
				t.Errorf("error %v is not %v", err, tt.isErr)
			}
			if len(err.Error()) > 1200 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestClientsAllowOnlyTheListedEndpoints(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, okVector, time.Now().Unix(), time.Now().Unix())
	}))
	defer srv.Close()
	c, err := promread.NewClients([]string{"http://prometheus.monitoring.svc:9090/", srv.URL}, false, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, url, want string
		allowed         bool
	}{
		{"no URL is the default, the first listed", "", "http://prometheus.monitoring.svc:9090", true},
		{"a listed URL is itself, trailing slash or not", srv.URL + "/", srv.URL, true},
		{"another path on a listed host is refused", srv.URL + "/admin", "", false},
		{"another host is refused", "http://169.254.169.254", "", false},
		{"user information is refused", "http://user:pw@" + strings.TrimPrefix(srv.URL, "http://"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Resolve(tt.url)
			if tt.allowed != (err == nil) || got != tt.want {
				t.Fatalf("Resolve(%q) = %q, %v; want %q, allowed %v", tt.url, got, err, tt.want, tt.allowed)
			}
			if _, _, err := c.For(tt.url); !tt.allowed && err == nil {
				t.Fatal("For gave a client of a refused endpoint")
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the server while resolving", n)
	}
	q, _, err := c.For(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := promread.Vector(context.Background(), q, "up", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := promread.NewClients(nil, false, promread.ClientConfig{}); err == nil {
		t.Error("no endpoint and not allowAny is accepted")
	}
}

// warned answers every query with warnings.
type warned struct{ fixed }

func (w warned) Query(context.Context, string, time.Time, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	return w.vec, v1.Warnings{"partial\x00 result"}, nil, nil
}

func (w warned) QueryRange(context.Context, string, v1.Range, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	return w.mat, v1.Warnings{"partial result"}, nil, nil
}

// twice returns s with every point sent twice.
func twice(s *model.SampleStream) *model.SampleStream {
	var vs []model.SamplePair
	for _, v := range s.Values {
		vs = append(vs, v, v)
	}
	return &model.SampleStream{Metric: s.Metric, Values: vs}
}

func TestGarbageIsNoData(t *testing.T) {
	end := time.Unix(10_000, 0)
	start := end.Add(-10 * time.Minute)
	step := 20 * time.Second
	series := func(gs string, from, to time.Time, v float64) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"gray_status": model.LabelValue(gs)}}
		for t := from; !t.After(to); t = t.Add(step) {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v)})
		}
		return s
	}
	y2001 := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		q            promread.Querier
		stable, gray int // samples kept
		why          string
	}{
		{"samples in the range are kept", fixed{mat: model.Matrix{series("false", start, end, 1), series("true", start, end, 1)}}, 31, 31, ""},
		{"points outside the range are not data", fixed{mat: model.Matrix{series("false", y2001, y2001.Add(5*time.Minute), 1), series("true", y2001, y2001.Add(5*time.Minute), 1)}}, 0, 0, "points outside"},
		{"a track that stopped reporting has no samples", fixed{mat: model.Matrix{series("false", start, end, 1), series("true", start, end.Add(-3*time.Minute), 1)}}, 31, 0, "stopped reporting"},
		{"a negative point spoils its track", fixed{mat: model.Matrix{series("false", start, end, 1), series("true", start, end, -1)}}, 31, 0, "is negative"},
		{"points repeated at one timestamp spoil their track (31 points, not 62)", fixed{mat: model.Matrix{series("false", start, end, 1), twice(series("true", start, end, 1))}}, 31, 0, "repeated at one timestamp"},
		{"warnings spoil both tracks", warned{fixed{mat: model.Matrix{series("false", start, end, 1), series("true", start, end, 1)}}}, 0, 0, "may be partial"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := promread.ReadSamples(context.Background(), tt.q, "x", start, end, step, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Stable) != tt.stable || len(got.Gray) != tt.gray {
				t.Errorf("kept %d stable and %d gray samples, want %d and %d (%v)", len(got.Stable), len(got.Gray), tt.stable, tt.gray, got.Why)
			}
			if w := strings.Join(got.Why, "; "); !strings.Contains(w, tt.why) || (tt.why == "" && w != "") {
				t.Errorf("why %q, want %q", w, tt.why)
			}
		})
	}
	tv, err := promread.ReadTracks(context.Background(), warned{fixed{vec: model.Vector{sample("false", 1), sample("true", 1)}}}, "x", time.Unix(0, 0), "")
	if err != nil || tv.Stable != nil || tv.Gray != nil || !strings.Contains(strings.Join(tv.Why, ";"), "partial") || strings.Contains(strings.Join(tv.Why, ";"), "\x00") {
		t.Errorf("a warned instant answer gave %+v, %v; want no values, the warning sanitised", tv, err)
	}
}

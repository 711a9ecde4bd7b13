package main

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/poolparity/poolparity/instrument"
)

// earlyPut is the misuse poisoning exists for, as a handler of the
// service's pools might write it: the output buffer goes back to the pool
// before the response is written from its bytes. Alone on a goroutine the
// response is right; under load another request overwrites it.
func (s *service) earlyPut(w http.ResponseWriter, r *http.Request) {
	img := s.image(32)
	render(img, seed(r.PathValue("id")))
	out := s.out()
	err := png.Encode(out, img)
	s.putImage(img)
	body := out.Bytes()
	s.putOut(out) // too early: body is written below
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	_, _ = w.Write(body)
}

// TestPoisonMakesAUseAfterPutVisible serves earlyPut from one goroutine:
// without poisoning every response is still a valid PNG, which is why the
// bug ships; with POOLPARITY_POISON every response is the poison.
func TestPoisonMakesAUseAfterPutVisible(t *testing.T) {
	for _, tt := range []struct {
		name       string
		poison     bool
		wantPoison bool
	}{
		{"poisoning off: the misuse answers valid PNGs", false, false},
		{"poisoning on: every response carries the poison", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := newService(ModePooled, tt.poison, instrument.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			mux.HandleFunc("GET /early/{id}", svc.earlyPut)
			for i := range 5 {
				rec := httptest.NewRecorder()
				mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/early/img"+strconv.Itoa(i), nil))
				body := rec.Body.Bytes()
				poisoned := len(body) > 0 && instrument.BytesPoisoned(body[:0:len(body)])
				if poisoned != tt.wantPoison {
					t.Fatalf("response %d: %d bytes starting % x, poisoned %v, want %v", i, len(body), body[:min(len(body), 8)], poisoned, tt.wantPoison)
				}
				if _, err := png.Decode(bytes.NewReader(body)); (err == nil) == tt.wantPoison {
					t.Fatalf("response %d decodes as a PNG: %v, want %v", i, err == nil, !tt.wantPoison)
				}
			}
		})
	}
}

// TestPoisonCountsAWriteAfterPut writes into an image and into an output
// buffer after their Put: the next Get of each pool catches it, counts it
// under the pool's name and hands out a fresh object instead.
func TestPoisonCountsAWriteAfterPut(t *testing.T) {
	// One P and no GC: the next Get takes the object the Put pooled.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	pools := instrument.NewRegistry()
	svc, err := newService(ModePooled, true, pools)
	if err != nil {
		t.Fatal(err)
	}
	img := svc.image(16)
	svc.putImage(img)
	img.Pix[0] = 1 // a write after Put
	if got := svc.image(16); got == img {
		t.Error("the image written after its Put was handed out again")
	}
	out := svc.out()
	out.WriteString("first")
	svc.putOut(out)
	out.WriteString("late") // a write after Put
	if got := svc.out(); got == out || got.Len() != 0 {
		t.Errorf("Get handed out the buffer written after its Put (%q)", got.String())
	}
	want := map[string]uint64{"image_rgba": 1, "png_out": 1, "png_encoder": 0}
	for _, ps := range pools.Snapshot() {
		if ps.Dirty != want[ps.Name] {
			t.Errorf("pool %s: dirty %d, want %d", ps.Name, ps.Dirty, want[ps.Name])
		}
	}
}

// TestPoisonedPoolsAnswerTheSameBytes: with poisoning on and the handlers
// correct, the service answers the unpooled service's bytes and no pool
// counts a poisoned object, in every mode.
func TestPoisonedPoolsAnswerTheSameBytes(t *testing.T) {
	want := map[string][]byte{}
	plain, _ := newTestServer(t, ModeUnpooled)
	queries := []string{"/thumbnail/a?w=16", "/thumbnail/img-00042", "/thumbnail/Z_9?w=512", "/thumbnail/a?w=16", "/thumbnail/b?w=64"}
	for _, q := range queries {
		_, _, want[q] = get(t, plain.URL+q)
	}
	for _, mode := range Modes {
		if mode == ModeUnpooled || mode == ModeNeverReset {
			continue // never-reset's misuse is the bytes: TestNeverResetResponsesGrow
		}
		t.Run(mode, func(t *testing.T) {
			srv, pools := newTestServerPoisoned(t, mode, true)
			for range 3 {
				for _, q := range queries {
					if code, _, body := get(t, srv.URL+q); code != http.StatusOK || !bytes.Equal(body, want[q]) {
						t.Fatalf("GET %s: %d, %d bytes: not the unpooled service's %d bytes", q, code, len(body), len(want[q]))
					}
				}
			}
			for _, ps := range pools.Snapshot() {
				if ps.Dirty != 0 {
					t.Errorf("pool %s: %+v, want nothing poisoned with correct handlers", ps.Name, ps.Stats)
				}
			}
		})
	}
}

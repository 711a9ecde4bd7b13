package pools_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/internal/pools"
)

func TestUnpooledSourceAllocatesAndRegistersNothing(t *testing.T) {
	reg := instrument.NewRegistry()
	src, err := pools.NewSource(pools.Settings{Mode: pools.ModeUnpooled, Registry: reg}, pools.EncoderConfig(pools.JSONBuffer))
	if err != nil {
		t.Fatal(err)
	}
	a := src.Get()
	a.Buf.WriteString("x")
	src.Put(a)
	if b := src.Get(); b == a || b.Buf.Len() != 0 {
		t.Fatalf("unpooled Get returned a used object")
	}
	if got := reg.Snapshot(); len(got) != 0 {
		t.Fatalf("unpooled source registered %v", got)
	}
}

func TestPooledSourceResetsAndDropsOversizedBuffers(t *testing.T) {
	reg := instrument.NewRegistry()
	src, err := pools.NewSource(pools.Settings{Mode: pools.ModePooled, Registry: reg}, pools.EncoderConfig(pools.ReportBuffer))
	if err != nil {
		t.Fatal(err)
	}
	e := src.Get()
	if err := e.Enc.Encode(map[string]string{"k": "<v>"}); err != nil {
		t.Fatal(err)
	}
	if got := e.Buf.String(); got != `{"k":"<v>"}`+"\n" {
		t.Errorf("encoder wrote %q (HTML must not be escaped)", got)
	}
	src.Put(e)
	big := src.Get()
	if big.Buf.Len() != 0 {
		t.Fatalf("pooled Get returned a buffer holding %q", big.Buf.String())
	}
	big.Buf.WriteString(strings.Repeat("x", pools.MaxBufferCap+1))
	src.Put(big)
	snap := reg.Snapshot()
	if len(snap) != 1 || snap[0].Name != pools.ReportBuffer || snap[0].Drops != 1 || snap[0].Gets != 2 {
		t.Fatalf("snapshot = %+v, want one report_buffer pool with 2 gets and 1 drop", snap)
	}
	if _, err := pools.NewSource(pools.Settings{Mode: pools.ModePooled, Registry: reg}, pools.EncoderConfig(pools.ReportBuffer)); err == nil {
		t.Fatal("registering a second pool under the same name succeeded")
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range pools.Modes {
		got, err := pools.ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "Pooled", "misuse", "misuse-leak", "sometimes"} {
		if _, err := pools.ParseMode(bad); err == nil || !strings.Contains(err.Error(), "misuse-dirty") {
			t.Errorf("ParseMode(%q) = %v, want an error listing the modes", bad, err)
		}
	}
}

// TestMisuseModesConfigureThePoolWrongly checks what each mode does to one
// Encoder pool: retain keeps oversized buffers, reset pre-sizes every
// buffer and zeroes it on Put, and pooled drops oversized buffers.
func TestMisuseModesConfigureThePoolWrongly(t *testing.T) {
	tests := []struct {
		mode      pools.Mode
		wantDrops uint64
		minCap    int
	}{
		{pools.ModePooled, 1, 0},
		{pools.ModeMisuseRetain, 0, 0},
		{pools.ModeMisuseReset, 0, pools.PresizeBytes},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			reg := instrument.NewRegistry()
			src, err := pools.NewSource(pools.Settings{Mode: tt.mode, Registry: reg}, pools.EncoderConfig(pools.JSONBuffer))
			if err != nil {
				t.Fatal(err)
			}
			e := src.Get()
			if e.Buf.Cap() < tt.minCap {
				t.Errorf("new buffer cap %d, want >= %d", e.Buf.Cap(), tt.minCap)
			}
			e.Buf.WriteString(strings.Repeat("x", pools.MaxBufferCap+1))
			src.Put(e)
			if got := reg.Snapshot()[0].Drops; got != tt.wantDrops {
				t.Errorf("drops = %d, want %d", got, tt.wantDrops)
			}
			if tt.mode == pools.ModeMisuseReset {
				b := src.Get().Buf.AvailableBuffer()
				for i, c := range b[:cap(b)] {
					if c != 0 {
						t.Fatalf("byte %d of a reset buffer is %q, want every byte zeroed", i, c)
					}
				}
			}
		})
	}
}

// TestChartAndCRDNameEveryMode holds the chart's values.schema.json and the
// PoolCanary CRD to the service's set of modes: a mode the service accepts
// but the chart or the CRD refuses fails here. The chart takes any mode that
// is a label value (a team's own service has modes of its own); the CRD
// names the service's.
func TestChartAndCRDNameEveryMode(t *testing.T) {
	var want []string
	for _, m := range pools.Modes {
		want = append(want, string(m))
	}
	slices.Sort(want)
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "poolparity", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Tracks struct {
				Properties map[string]struct {
					Properties struct {
						PoolMode struct {
							Pattern string `json:"pattern"`
						} `json:"poolMode"`
					} `json:"properties"`
				} `json:"properties"`
			} `json:"tracks"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	for _, track := range []string{"stable", "gray"} {
		re, err := regexp.Compile(schema.Properties.Tracks.Properties[track].Properties.PoolMode.Pattern)
		if err != nil {
			t.Fatalf("values.schema.json tracks.%s.poolMode pattern: %v", track, err)
		}
		for _, m := range append(slices.Clone(want), "misuse-cap") {
			if !re.MatchString(m) {
				t.Errorf("values.schema.json tracks.%s.poolMode refuses mode %s", track, m)
			}
		}
		for _, bad := range []string{"", "Pooled", "pooled_1", "-pooled", strings.Repeat("a", 64)} {
			if re.MatchString(bad) {
				t.Errorf("values.schema.json tracks.%s.poolMode accepts %q, which is no label value", track, bad)
			}
		}
	}
	crd, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "poolparity", "crds", "poolparity.dev_poolcanaries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range want {
		if !strings.Contains(string(crd), "- "+m+"\n") {
			t.Errorf("the PoolCanary CRD does not accept pool mode %s", m)
		}
	}
}

// TestPoisonReachesThePools: with Settings.Poison a pooled Encoder's bytes
// read after its Put are the poison, and a write after Put is counted
// under the pool's name and the encoder replaced; without it, or
// unpooled, the bytes are the response's.
func TestPoisonReachesThePools(t *testing.T) {
	const body = `{"id":"a"}` + "\n"
	poison := string(bytes.Repeat([]byte{instrument.PoisonByte}, len(body)))
	tests := []struct {
		name      string
		st        pools.Settings
		wantRead  string
		wantDirty uint64
	}{
		{"pooled and poisoned", pools.Settings{Mode: pools.ModePooled, Poison: true}, poison, 1},
		{"misuse-reset and poisoned: the poison follows the scrub", pools.Settings{Mode: pools.ModeMisuseReset, Poison: true}, poison, 1},
		{"pooled, not poisoned", pools.Settings{Mode: pools.ModePooled}, body, 0},
		{"unpooled: nothing to poison", pools.Settings{Mode: pools.ModeUnpooled, Poison: true}, body, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One P and no GC: the next Get takes the encoder the Put pooled.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			tt.st.Registry = instrument.NewRegistry()
			src, err := pools.NewSource(tt.st, pools.EncoderConfig(pools.JSONBuffer))
			if err != nil {
				t.Fatal(err)
			}
			e := src.Get()
			if err := e.Enc.Encode(map[string]string{"id": "a"}); err != nil {
				t.Fatal(err)
			}
			view := e.Buf.Bytes()
			src.Put(e)
			if string(view) != tt.wantRead {
				t.Errorf("after Put the response bytes read %q, want %q", view, tt.wantRead)
			}
			e.Buf.WriteString("late") // a write after Put
			if next := src.Get(); next == e && tt.wantDirty > 0 {
				t.Error("Get handed out the encoder written after its Put")
			}
			var dirty uint64
			for _, ps := range tt.st.Registry.Snapshot() {
				if ps.Name != pools.JSONBuffer {
					t.Errorf("unexpected pool %s", ps.Name)
				}
				dirty += ps.Dirty
			}
			if dirty != tt.wantDirty {
				t.Errorf("%s dirty = %d, want %d", pools.JSONBuffer, dirty, tt.wantDirty)
			}
		})
	}
}

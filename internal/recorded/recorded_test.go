package recorded_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/recorded"
)

func sample() recorded.Recording {
	return recorded.Recording{
		Name: "aa-1", Scenario: "aa", Start: time.Unix(600, 0).UTC(), Step: 5 * time.Second,
		Series: []recorded.Series{
			{Labels: map[string]string{"__name__": "http_requests_total", "gray_status": "true", "code": "200"}, Values: []float64{10, 20, 35, -1, 50, 3}},
			{Labels: map[string]string{"__name__": "process_cpu_seconds_total", "gray_status": "false"}, Values: []float64{1.23456789, 1.3, 1.4, 1.5, 1.6, 1.7}},
		},
	}
}

func TestWriteAndReadKeepTheRecording(t *testing.T) {
	var buf bytes.Buffer
	if err := sample().Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := recorded.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "aa-1" || got.Step != 5*time.Second || !got.Start.Equal(time.Unix(600, 0)) || got.Len() != 6 {
		t.Errorf("read back %+v", got)
	}
	if v := got.Series[1].Values[0]; v != 1.234568 {
		t.Errorf("value %v, want 1.234568 (seven significant digits)", v)
	}
}

func TestReadRefusesWhatIsNoRecording(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"not gzip", []byte("{}")},
		{"no step", gz(t, `{"name":"x","series":[]}`)},
		{"a series without gray_status", gz(t, `{"name":"x","step":1000000000,"series":[{"labels":{"__name__":"up"},"values":[1]}]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := recorded.Read(bytes.NewReader(tt.in)); err == nil {
				t.Error("no error")
			}
		})
	}
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestIncrementsSkipGapsAndResets(t *testing.T) {
	got := sample().Increments()[0]
	want := []float64{0, 10, 15, 0, 0, 3} // a gap gives nothing on either side; a reset counts from zero
	if !slices.Equal(got, want) {
		t.Errorf("increments %v, want %v", got, want)
	}
}

func ExampleRecording_Increments() {
	r := recorded.Recording{Step: 15 * time.Second, Series: []recorded.Series{
		{Labels: map[string]string{"__name__": "http_requests_total", "gray_status": "false"}, Values: []float64{100, 400, 700}},
	}}
	fmt.Println(r.Increments()[0], "requests every", r.Step)
	// Output:
	// [0 300 300] requests every 15s
}

// FuzzRead feeds Read arbitrary gzip JSON: it must return a recording or an error, never panic,
// and whatever it returns must write and read back the same.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	if err := sample().Write(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"step":1000000000,"series":[{"labels":{"__name__":"x","gray_status":"true"},"values":[1,-1,2]}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(in)
		w.Close()
		for _, data := range [][]byte{in, z.Bytes()} {
			r, err := recorded.Read(bytes.NewReader(data))
			if err != nil {
				continue
			}
			_ = r.Increments()
			var out bytes.Buffer
			if err := r.Write(&out); err != nil {
				t.Fatalf("a recording read back does not write: %v", err)
			}
			if _, err := recorded.Read(&out); err != nil {
				t.Fatalf("a recording written does not read back: %v", err)
			}
		}
	})
}

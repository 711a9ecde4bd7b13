package catalogtest_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/catalog/catalogtest"
)

func TestWriteRules(t *testing.T) {
	rec := httptest.NewRecorder()
	catalogtest.WriteRules(rec)
	var body struct {
		Status string
		Data   struct {
			Groups []struct {
				Rules []struct{ Type, Name, Health string }
			}
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Status != "success" || len(body.Data.Groups) != 1 {
		t.Fatalf("%s: %v", rec.Body, err)
	}
	var names []string
	for _, r := range body.Data.Groups[0].Rules {
		if r.Type != "recording" || r.Health != "ok" {
			t.Errorf("rule %+v", r)
		}
		names = append(names, r.Name)
	}
	c := catalog.Default()
	for _, want := range []string{c.Guard.RequestRule + "5m", c.Guard.MinTrackRule + "1m", c.SLIs[0].Rules("5m")[0]} {
		if !slices.Contains(names, want) {
			t.Errorf("no rule %s in %v", want, names)
		}
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

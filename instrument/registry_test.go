package instrument_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/poolparity/poolparity/instrument"
	"github.com/poolparity/poolparity/instrument/instrumenttest"
)

func TestRegistryRegister(t *testing.T) {
	tests := []struct {
		name      string
		existing  []string
		register  []string
		wantErr   error
		wantNames []string
	}{
		{"new names are registered", nil, []string{"b", "a"}, nil, []string{"a", "b"}},
		{"a name already registered is refused", []string{"a"}, []string{"a"}, instrument.ErrDuplicateName, []string{"a"}},
		{"a name twice in one call is refused", nil, []string{"a", "a"}, instrument.ErrDuplicateName, nil},
		{"one bad name refuses the whole call", []string{"a"}, []string{"b", "Bad"}, instrument.ErrInvalidName, []string{"a"}},
		{"an empty name is refused", nil, []string{""}, instrument.ErrInvalidName, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r instrument.Registry // the zero value is ready to use
			for _, n := range tt.existing {
				if err := r.Register(instrumenttest.Fixed{PoolName: n}); err != nil {
					t.Fatal(err)
				}
			}
			var srcs []instrument.StatsSource
			for _, n := range tt.register {
				srcs = append(srcs, instrumenttest.Fixed{PoolName: n})
			}
			err := r.Register(srcs...)
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("Register = %v, want %v", err, tt.wantErr)
			}
			var got []string
			for _, ps := range r.Snapshot() {
				got = append(got, ps.Name)
			}
			if !reflect.DeepEqual(got, tt.wantNames) {
				t.Errorf("Snapshot names = %q, want %q", got, tt.wantNames)
			}
		})
	}
}

func TestRegistrySnapshotAndUnregister(t *testing.T) {
	r := instrument.NewRegistry()
	a := instrumenttest.Fixed{PoolName: "a", Counts: instrument.Stats{Gets: 3, Misses: 1, Puts: 2, Drops: 1}}
	p, err := instrument.NewBufferPool("b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(p, a); err != nil {
		t.Fatal(err)
	}
	p.Put(p.Get())
	want := []instrument.PoolStats{
		{Name: "a", Stats: a.Counts},
		{Name: "b", Stats: p.Stats()},
	}
	if got := r.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot() = %+v, want %+v", got, want)
	}
	if !r.Unregister("a") {
		t.Error(`Unregister("a") = false, want true`)
	}
	if r.Unregister("a") {
		t.Error(`second Unregister("a") = true, want false`)
	}
	if got := r.Snapshot(); len(got) != 1 || got[0].Name != "b" {
		t.Errorf("Snapshot() after Unregister = %+v, want only b", got)
	}
	if err := r.Register(instrumenttest.Fixed{PoolName: "a"}); err != nil {
		t.Errorf("re-registering an unregistered name: %v", err)
	}
}

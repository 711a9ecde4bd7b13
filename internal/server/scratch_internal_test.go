package server

import (
	"testing"

	"github.com/poolparity/poolparity/internal/item"
	"github.com/poolparity/poolparity/internal/pools"
)

func TestRequestScratchKeepPolicy(t *testing.T) {
	for _, tt := range []struct {
		name string
		rs   requestScratch
		want bool
	}{
		{"a fresh scratch object is kept", requestScratch{}, true},
		{"buffers at their caps are kept", requestScratch{
			body: make([]byte, 0, pools.MaxBufferCap), item: item.Item{Tags: make([]string, 0, 4*item.MaxTags)},
			ids: make([]string, 0, 2*MaxListLimit), keys: make([]string, 0, 2*MaxListLimit), entries: make([]listEntry, 0, 2*MaxListLimit),
		}, true},
		{"an oversize body buffer is dropped", requestScratch{body: make([]byte, 0, pools.MaxBufferCap+1)}, false},
		{"a tag list grown by a refused item is dropped", requestScratch{item: item.Item{Tags: make([]string, 0, 4*item.MaxTags+1)}}, false},
		{"an oversize id list is dropped", requestScratch{ids: make([]string, 0, 2*MaxListLimit+1)}, false},
		{"an oversize key list is dropped", requestScratch{keys: make([]string, 0, 2*MaxListLimit+1)}, false},
		{"an oversize entry list is dropped", requestScratch{entries: make([]listEntry, 0, 2*MaxListLimit+1)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rs.small(); got != tt.want {
				t.Errorf("small() = %v, want %v", got, tt.want)
			}
		})
	}
}

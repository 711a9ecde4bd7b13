package pools_test

import (
	"strings"
	"testing"

	"github.com/poolparity/poolparity/app/internal/pools"
	"github.com/poolparity/poolparity/instrument"
)

func TestUnpooledSourceAllocatesAndRegistersNothing(t *testing.T) {
	reg := instrument.NewRegistry()
	src, err := pools.NewSource(false, reg, pools.EncoderConfig(pools.JSONBuffer))
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
	src, err := pools.NewSource(true, reg, pools.EncoderConfig(pools.ReportBuffer))
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
	if _, err := pools.NewSource(true, reg, pools.EncoderConfig(pools.ReportBuffer)); err == nil {
		t.Fatal("registering a second pool under the same name succeeded")
	}
}

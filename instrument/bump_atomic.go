//go:build race || !(amd64 || arm64 || ppc64le || ppc64 || s390x || riscv64 || loong64 || mips64 || mips64le)

package instrument

import (
	"sync/atomic"
	"unsafe"
)

// bump increments a stripe counter atomically: on 32-bit platforms a plain
// 64-bit add could be torn, and under the race detector the single-writer
// argument of the plain version is not visible to the detector.
func bump(p *uint64) { atomic.AddUint64(p, 1) }

// loadSlot reads a stripe's slot. See bump for why this file uses atomics.
func loadSlot(p *unsafe.Pointer) unsafe.Pointer { return atomic.LoadPointer(p) }

// storeSlot writes a stripe's slot. See bump for why this file uses atomics.
func storeSlot(p *unsafe.Pointer, v unsafe.Pointer) { atomic.StorePointer(p, v) }

// tick increments a stripe's WithCheck counter and returns the new value.
func tick(p *uint64) uint64 { return atomic.AddUint64(p, 1) }

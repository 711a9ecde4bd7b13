//go:build !race && (amd64 || arm64 || ppc64le || ppc64 || s390x || riscv64 || loong64 || mips64 || mips64le)

package instrument

import "unsafe"

// bump increments a stripe counter with a plain add. The caller is pinned
// to the P that owns the stripe, so there is exactly one writer; readers
// load the word atomically, and on these 64-bit platforms an aligned
// 64-bit store is never torn, so a reader sees either the old or the new
// count.
func bump(p *uint64) { *p++ }

// loadSlot reads a stripe's slot with a plain load. Only the pinned owner
// of the stripe stores a non-nil object in it; the one other writer, the
// GC sentinel's clearSlots, only ever stores nil. A pointer is one aligned
// machine word, so a racing load sees either the old or the new pointer
// (the Go memory model's rule for word-sized racy accesses), never a torn
// one, and every pointer store still goes through the GC write barrier.
// The worst case of the race is that the owner's Put lands just before the
// sentinel's clear, and the object is dropped: counted as a Put, then left
// to the GC, as sync.Pool does with its contents at a GC.
func loadSlot(p *unsafe.Pointer) unsafe.Pointer { return *p }

// storeSlot writes a stripe's slot with a plain store; see loadSlot.
func storeSlot(p *unsafe.Pointer, v unsafe.Pointer) { *p = v }

// tick increments a stripe's WithCheck counter and returns the new value;
// single writer, as for bump.
func tick(p *uint64) uint64 { *p++; return *p }

//go:build !race && (amd64 || arm64 || ppc64le || ppc64 || s390x || riscv64 || loong64 || mips64 || mips64le)

package instrument

// bump increments a stripe counter with a plain add. The caller is pinned
// to the P that owns the stripe, so there is exactly one writer; readers
// load the word atomically, and on these 64-bit platforms an aligned
// 64-bit store is never torn, so a reader sees either the old or the new
// count.
func bump(p *uint64) { *p++ }

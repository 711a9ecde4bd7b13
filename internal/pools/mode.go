package pools

import (
	"fmt"
	"strings"
)

// Mode is where a track takes its hot-path objects from: POOL_MODE. It
// becomes the pool_mode label, so the set is fixed here.
type Mode string

// The modes. ModePooled is pooling done right; each misuse mode is pooled
// too, with one real anti-pattern that docs/pool-misuse.md describes and
// one alert names.
const (
	// ModeUnpooled allocates every object per use.
	ModeUnpooled Mode = "unpooled"
	// ModePooled takes objects from instrumented sync.Pools, with size caps
	// and resets that clear every field.
	ModePooled Mode = "pooled"
	// ModeMisuseHold takes every object a request may need when the request
	// starts, before it waits for a heavy-request slot and for Redis, and
	// holds them all until it ends; the report takes one scratch per item
	// up front (a deferred Put in a loop). Raises
	// PoolParityLowSyncPoolHitRatio and PoolParityNoAllocationGain.
	ModeMisuseHold Mode = "misuse-hold"
	// ModeMisuseReset gives every pooled buffer the largest size a request
	// may need and zeroes all of it on every Put. Raises
	// PoolParityCPUPerRequestRegression (and PoolParityLatencyRegression).
	ModeMisuseReset Mode = "misuse-reset"
	// ModeMisuseRetain drops the size caps: a pooled buffer keeps the
	// largest capacity any request gave it. Raises
	// PoolParityLiveHeapRegression.
	ModeMisuseRetain Mode = "misuse-retain"
	// ModeMisuseDirty uses a reset that forgets the decoded item, so one
	// request's fields can reach the next one's response. Raises
	// PoolParityDirtyObjects (the sanitizer).
	ModeMisuseDirty Mode = "misuse-dirty"
)

// Modes lists every mode, the complete set of pool_mode values.
var Modes = []Mode{ModeUnpooled, ModePooled, ModeMisuseHold, ModeMisuseReset, ModeMisuseRetain, ModeMisuseDirty}

// ParseMode returns the Mode named s, or an error listing the valid ones.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown pool mode %q: want one of %s", s, strings.Join(names, ", "))
}

// Pooled reports whether the mode takes objects from pools: every mode but
// ModeUnpooled (and the zero Mode, which means unpooled).
func (m Mode) Pooled() bool { return m != ModeUnpooled && m != "" }

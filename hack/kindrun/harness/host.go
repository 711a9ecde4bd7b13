package harness

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CapSysResourceMissing reports whether this process's capability bounding set lacks
// CAP_SYS_RESOURCE (bit 24). Some sandboxes, this project's CI machines among them, drop it;
// runc then cannot start a privileged container (kind's nodes are privileged). This is an
// environment workaround, detected at run time; a normal machine never needs it.
func CapSysResourceMissing() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("parsing CapBnd %q: %w", v, err)
			}
			return bits&(1<<24) == 0, nil
		}
	}
	return false, errors.New("no CapBnd line in /proc/self/status")
}

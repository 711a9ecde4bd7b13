//go:build !unix

package instrument

import "time"

func processCPU() (time.Duration, bool) { return 0, false }

package parity

import (
	"fmt"
	"math"
)

// FormatValue prints v in unit u: "4.21ms", "38.2KiB", "97.5%".
func FormatValue(u Unit, v float64) string {
	switch u {
	case Seconds:
		return formatSeconds(v)
	case Bytes:
		return formatBytes(v)
	case Ratio:
		return fmt.Sprintf("%.1f%%", v*100)
	case PerSec:
		return fmt.Sprintf("%.1f/s", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// FormatDelta prints a difference in unit u with its sign; ratios are in
// percentage points ("+0.50pt").
func FormatDelta(u Unit, v float64) string {
	if u == Ratio {
		return fmt.Sprintf("%+.2fpt", v*100)
	}
	s := FormatValue(u, math.Abs(v))
	if v < 0 {
		return "-" + s
	}
	return "+" + s
}

func formatSeconds(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0s"
	case a < 1e-3:
		return fmt.Sprintf("%.0fµs", v*1e6)
	case a < 1:
		return fmt.Sprintf("%.2fms", v*1e3)
	}
	return fmt.Sprintf("%.2fs", v)
}

func formatBytes(v float64) string {
	a := math.Abs(v)
	switch {
	case a < 1024:
		return fmt.Sprintf("%.0fB", v)
	case a < 1024*1024:
		return fmt.Sprintf("%.1fKiB", v/1024)
	}
	return fmt.Sprintf("%.2fMiB", v/(1024*1024))
}

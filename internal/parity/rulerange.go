package parity

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// RuleRange returns the range a recording rule's name ends in, by the
// level:metric:operations convention (rate5m, avg_over_time1m,
// increase30s, ratio_rate1h: the last operation ends in a Prometheus
// duration), and false for a name without one.
func RuleRange(rule string) (time.Duration, bool) {
	ops := rule[strings.LastIndexByte(rule, ':')+1:]
	i := len(ops)
	for i > 0 && strings.IndexByte("smhdwy", ops[i-1]) >= 0 {
		i--
	}
	unit := len(ops) - i
	j := i
	for j > 0 && ops[j-1] >= '0' && ops[j-1] <= '9' {
		j--
	}
	if unit != 1 || j == i {
		return 0, false
	}
	d, err := model.ParseDuration(ops[j:])
	if err != nil || d <= 0 {
		return 0, false
	}
	return time.Duration(d), true
}

// OverlapHint explains, for a sampled rule whose range is longer than the
// step, that its samples overlap; "" otherwise.
func OverlapHint(rule string, step time.Duration) string {
	r, ok := RuleRange(rule)
	if !ok || r <= step {
		return ""
	}
	return fmt.Sprintf("samples of %s (range %s) taken every %s overlap and make the test overconfident: set sampleRule to a rule whose range is at most %s",
		rule, model.Duration(r), model.Duration(step), model.Duration(step))
}

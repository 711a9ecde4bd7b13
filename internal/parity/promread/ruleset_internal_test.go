package promread

import (
	"strings"
	"testing"
)

// FuzzDecodeRuleList: any answer decodes to a rule set or to an error, never a panic, and a
// decoded set's maps are there to read.
func FuzzDecodeRuleList(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"groups":[{"name":"g","interval":15,"rules":[{"type":"recording","name":"a:b","query":"sum(rate(x[1m]))"},{"type":"alerting","name":"A","query":"a:b > 1","alerts":[{"state":"pending"}]}]}]}}`,
		`{"status":"success","data":{"groups":[]}}`,
		`{"status":"error","errorType":"bad_data","error":"x"}`,
		`{"data":{"groups":[{"rules":[{"type":"recording","name":"r","query":"sum("}]}]},"status":"success"}`,
		`[]`,
		``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		set, err := decodeRuleList(strings.NewReader(body))
		if err != nil {
			return
		}
		if set.Intervals == nil || set.Reads.Records == nil || set.Reads.Alerts == nil {
			t.Fatalf("a decoded set without its maps: %+v", set)
		}
		for name, reads := range set.Reads.Records {
			if reads == nil {
				t.Fatalf("rule %s: nil reads", name)
			}
		}
	})
}

package harness

import (
	"strings"
	"testing"
)

// TestParseSamples: labelled samples are read with their labels and value (a timestamp after the
// value ignored), comments and unlabelled samples skipped, and a value that is not a number is
// an error naming the line; Sum adds by the key given.
func TestParseSamples(t *testing.T) {
	ss, err := ParseSamples(`# HELP scheduler_batch_attempts_total x
# TYPE scheduler_batch_attempts_total counter
scheduler_batch_attempts_total{profile="a",result="hint_used"} 395
scheduler_batch_attempts_total{profile="b",result="hint_used"} 5 1700000000000
scheduler_batch_attempts_total{profile="b",result="no_hint"} 2
process_cpu_seconds_total 12.5
scheduler_pending_pods{queue="active"} +Inf
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 4 || ss[0].Name != "scheduler_batch_attempts_total" || ss[0].Label("profile") != "a" || ss[0].Value != 395 {
		t.Fatalf("samples %+v", ss)
	}
	got := ss.Sum("scheduler_batch_attempts_total", func(s Sample) string { return s.Label("result") })
	if len(got) != 2 || got["hint_used"] != 400 || got["no_hint"] != 2 {
		t.Errorf("sums %v, want hint_used 400, no_hint 2", got)
	}
	if _, err := ParseSamples("scheduler_pending_pods{queue=\"active\"} many\n"); err == nil || !strings.Contains(err.Error(), `queue=\"active\"`) {
		t.Errorf("error %v, want one naming the line", err)
	}
}

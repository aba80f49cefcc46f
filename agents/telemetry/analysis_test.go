package telemetry

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestHolds(t *testing.T) {
	for _, c := range []struct {
		op   string
		v    float64
		want bool
	}{
		{GreaterThan, 91, true}, {GreaterThan, 90, false}, {GreaterThan, 89.5, false},
		{LessThan, 89.5, true}, {LessThan, 90, false},
		{Equals, 90, true}, {Equals, 90.5, false},
		{"Bogus", 90, false},
	} {
		if got := Holds(Rule{Operator: c.op, Target: 90}, c.v); got != c.want {
			t.Errorf("%s 90 with value %v: %v, want %v", c.op, c.v, got, c.want)
		}
	}
}

func TestJudge(t *testing.T) {
	v := Values{
		"cpu":   {"n": {Value: 93, Time: t0.Add(-12 * time.Second)}},
		"mem":   {"n": {Value: 10, Time: t0}},
		"power": {"n": {Value: 500, Time: t0.Add(-2 * time.Minute)}}, // stale at max age 60 s
	}
	cpuHot := Rule{Metricname: "cpu", Operator: GreaterThan, Target: 90}
	memLow := Rule{Metricname: "mem", Operator: LessThan, Target: 5} // 10 < 5 does not hold
	powerHigh := Rule{Metricname: "power", Operator: GreaterThan, Target: 100}
	gone := Rule{Metricname: "gone", Operator: Equals, Target: 1}
	for _, c := range []struct {
		name                string
		s                   Strategy
		violated, undecided bool
		held, unknown       []string
	}{
		{name: "anyOf: one rule holds", s: Strategy{Rules: []Rule{memLow, cpuHot}},
			violated: true, held: []string{"cpu 93 > 90 (12s old)"}},
		{name: "allOf: one of two holds", s: Strategy{LogicalOperator: AllOf, Rules: []Rule{memLow, cpuHot}},
			held: []string{"cpu 93 > 90 (12s old)"}},
		{name: "allOf: both hold", s: Strategy{LogicalOperator: AllOf, Rules: []Rule{cpuHot, {Metricname: "mem", Operator: Equals, Target: 10}}},
			violated: true, held: []string{"cpu 93 > 90 (12s old)", "mem 10 == 10 (0s old)"}},
		// A stale value is not taken as current: the rule is unknown, not held, even though
		// 500 > 100.
		{name: "anyOf: stale rule alone", s: Strategy{Rules: []Rule{powerHigh}},
			undecided: true, unknown: []string{"power 500 stale (2m0s old, max 1m0s)"}},
		{name: "anyOf: missing metric beside a failing rule", s: Strategy{Rules: []Rule{memLow, gone}},
			undecided: true, unknown: []string{"gone missing"}},
		{name: "anyOf: violated whatever the unknown", s: Strategy{Rules: []Rule{gone, cpuHot}},
			violated: true, held: []string{"cpu 93 > 90 (12s old)"}, unknown: []string{"gone missing"}},
		// allOf with a known failing rule: the unknown one cannot make it violated.
		{name: "allOf: decided by a failing rule", s: Strategy{LogicalOperator: AllOf, Rules: []Rule{memLow, gone}},
			unknown: []string{"gone missing"}},
		{name: "allOf: held and unknown", s: Strategy{LogicalOperator: AllOf, Rules: []Rule{cpuHot, gone}},
			undecided: true, held: []string{"cpu 93 > 90 (12s old)"}, unknown: []string{"gone missing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := Judge(&c.s, v, "n", t0, time.Minute)
			want := Judgement{Violated: c.violated, Undecided: c.undecided, Held: c.held, Unknown: c.unknown}
			if diff := cmp.Diff(want, j); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReason(t *testing.T) {
	j := Judgement{Held: []string{"a 1 > 0 (0s old)", "b 2 > 0 (1s old)"}}
	if got := j.Reason("ns/p", false); got != "telemetry policy ns/p: a 1 > 0 (0s old) or b 2 > 0 (1s old)" {
		t.Errorf("anyOf reason %q", got)
	}
	if got := j.Reason("ns/p", true); !strings.Contains(got, " and ") {
		t.Errorf("allOf reason %q", got)
	}
}

func TestScores(t *testing.T) {
	vals := []float64{10, 20, 40, 0}
	ok := []bool{true, true, true, false}
	for _, c := range []struct {
		name string
		r    Rule
		want []int64
	}{
		// Nodes with a value score 1..10, 1+(good-worst)/(best-worst)*9; no value: 0.
		// higher is better: 1+(v-10)/30*9: 1, 4, 10
		{"GreaterThan", Rule{Operator: GreaterThan}, []int64{1, 4, 10, 0}},
		// lower is better: 1+(40-v)/30*9: 10, 7, 1
		{"LessThan", Rule{Operator: LessThan}, []int64{10, 7, 1, 0}},
		// closer to 20 is better: distances 10, 0, 20: 1+(20-d)/20*9: 5.5 -> 6, 10, 1
		{"Equals", Rule{Operator: Equals, Target: 20}, []int64{6, 10, 1, 0}},
	} {
		if got := Scores(c.r, vals, ok); !cmp.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// The worst of many values still outscores a node without one (TAS ranks every node with a
	// value above every node without).
	if got := Scores(Rule{Operator: GreaterThan}, []float64{0, 1000, 0.001}, []bool{false, true, true}); !cmp.Equal(got, []int64{0, 10, 1}) {
		t.Errorf("worst value against none: %v", got)
	}
	// NaN is no value; an infinite one is the best or the worst.
	if got := Scores(Rule{Operator: GreaterThan}, []float64{math.NaN(), math.Inf(1), 3, 5}, []bool{true, true, true, true}); got[0] != 0 || got[1] != 10 || got[2] < 1 {
		t.Errorf("NaN and Inf: %v", got)
	}
	// Every value equally good: all best; none: all 0.
	if got := Scores(Rule{Operator: GreaterThan}, []float64{5, 5}, []bool{true, true}); !cmp.Equal(got, []int64{10, 10}) {
		t.Errorf("equal values: %v", got)
	}
	if got := Scores(Rule{Operator: GreaterThan}, []float64{5, 7}, []bool{false, false}); !cmp.Equal(got, []int64{0, 0}) {
		t.Errorf("no values: %v", got)
	}
	// Many nodes: scores stay within 0..10 (TAS's ordinal scores go negative past 11 nodes).
	many := make([]float64, 50)
	manyOK := make([]bool, 50)
	for i := range many {
		many[i], manyOK[i] = float64(i), true
	}
	for i, s := range Scores(Rule{Operator: LessThan}, many, manyOK) {
		if s < 0 || s > 10 {
			t.Fatalf("node %d scores %d", i, s)
		}
	}
}

func TestLabelerHold(t *testing.T) {
	l := newLabeler(30 * time.Second)
	desch := map[string]bool{"p": true}
	violating := map[string]string{"p": ViolatingValue}
	step := func(at time.Duration, current, want map[string]string) map[string]*string {
		return l.changes("n", current, want, desch, t0.Add(at))
	}
	if due := step(0, nil, violating); len(due) != 0 {
		t.Fatalf("a new violation was written at once: %v", due)
	}
	if due := step(20*time.Second, nil, violating); len(due) != 0 {
		t.Fatalf("written after 20s of 30: %v", due)
	}
	// The violation ends before the hold: the clock starts over when it comes back.
	step(25*time.Second, nil, nil)
	if due := step(40*time.Second, nil, violating); len(due) != 0 {
		t.Fatalf("written although the violation was interrupted: %v", due)
	}
	due := step(70*time.Second, nil, violating)
	if v, ok := due["p"]; !ok || v == nil || *v != ViolatingValue {
		t.Fatalf("not written after holding 30s: %v", due)
	}
	// Labelled: nothing to do while it holds; removal waits for the hold too.
	if due := step(80*time.Second, violating, violating); len(due) != 0 {
		t.Fatalf("rewritten: %v", due)
	}
	step(90*time.Second, violating, nil)
	due = step(120*time.Second, violating, nil)
	if v, ok := due["p"]; !ok || v != nil {
		t.Fatalf("not removed after its end held 30s: %v", due)
	}
	// Labels the agent does not manage stay: another value of the key, or another key.
	if due := step(200*time.Second, map[string]string{"p": "mine", "other": "x"}, nil); len(due) != 0 {
		t.Fatalf("touched labels it does not manage: %v", due)
	}
	// Labeling labels are managed by prefix: a stale one goes (hold 0 here).
	l0 := newLabeler(0)
	due = l0.changes("n", map[string]string{LabelingPrefix + "p/card0": "true"}, nil, nil, t0)
	if v, ok := due[LabelingPrefix+"p/card0"]; !ok || v != nil {
		t.Fatalf("labeling label not removed: %v", due)
	}
}

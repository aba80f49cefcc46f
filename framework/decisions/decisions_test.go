package decisions

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// The ring keeps the inputs of at most InputsKept nodes: the newest decisions keep theirs.
func TestInputsBounded(t *testing.T) {
	l := NewLog(10)
	in := make([]framework.Inputs, InputsKept/4)
	for i := range 6 {
		l.Add(Decision{Pod: fmt.Sprint(i), Inputs: in})
	}
	kept := l.Last("", 10)
	for i, d := range kept { // newest first
		if has := d.Inputs != nil; has != (i < 4) {
			t.Errorf("decision %s (%d newest): inputs kept %v", d.Pod, i+1, has)
		}
	}
	if l.inputNodes != 4*len(in) {
		t.Errorf("inputNodes %d, want %d", l.inputNodes, 4*len(in))
	}
}

// judged is a filter's verdicts judged while the cycle runs: node i of a list of n, judged
// when set.
type judged struct {
	mu    sync.Mutex
	names []string
	v     map[int]framework.Verdict
}

func (j *judged) EachJudged(fn func(i int, node string, v framework.Verdict)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, n := range j.names {
		if v, ok := j.v[i]; ok {
			fn(i, n, v)
		}
	}
}

func (j *judged) judge(i int, v framework.Verdict) {
	j.mu.Lock()
	j.v[i] = v
	j.mu.Unlock()
}

// A decision judged while its cycle runs (plugin mode) shows the nodes judged by the time it is
// read, each with what the agent saw of it; its inputs count against the same bound as the
// others', and once they are dropped (or the decision leaves the ring) none are added.
func TestJudgedInputsBounded(t *testing.T) {
	l := newLog(3, 4, math.MaxInt64)
	j := &judged{names: []string{"a", "b", "c", "d"}, v: map[int]framework.Verdict{}}
	e := l.Add(Decision{Pod: "ns/p", Verb: "filter", Judged: j})
	j.judge(2, framework.Verdict{Reason: "too hot"})
	e.Explained(2, []framework.Inputs{{"x": 2}})
	j.judge(0, framework.Verdict{})
	e.Explained(0, []framework.Inputs{{"x": 0}})

	got := l.Render("ns/p", 1)
	want := []framework.NodeDecision{
		{Node: "a", Verdict: "pass", Inputs: framework.Inputs{"x": 0}},
		{Node: "c", Verdict: "fail", Reason: "too hot", Inputs: framework.Inputs{"x": 2}},
	}
	if diff := cmp.Diff(want, got[0].Nodes); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if l.inputNodes != 2 {
		t.Errorf("inputNodes %d, want 2", l.inputNodes)
	}

	// A newer decision with 3 nodes' inputs: 5 > 4, the judged one, the oldest, loses its inputs
	// and takes no more.
	l.Add(Decision{Pod: "ns/q", Verb: "prioritize", Names: []string{"a", "b", "c"}, Scores: []int64{1, 2, 3},
		Inputs: []framework.Inputs{{"y": 1}, {"y": 2}, {"y": 3}}})
	e.Explained(1, []framework.Inputs{{"x": 1}})
	if l.inputNodes != 3 {
		t.Errorf("inputNodes %d, want 3", l.inputNodes)
	}
	for _, n := range l.Render("ns/p", 1)[0].Nodes {
		if n.Inputs != nil {
			t.Errorf("node %s shows inputs %v after they were dropped", n.Node, n.Inputs)
		}
	}

	// Pushed out of the ring: what it is told later is not counted.
	l.Add(Decision{Pod: "ns/r"})
	l.Add(Decision{Pod: "ns/s"})
	l.Add(Decision{Pod: "ns/t"})
	e.Explained(3, []framework.Inputs{{"x": 3}})
	if l.inputNodes != 0 {
		t.Errorf("inputNodes %d after the ring turned over, want 0", l.inputNodes)
	}
}

// Render shows every node asked about: a name left out of Index is unknown to the extender's
// cache (a failure, or a score of 0); scores are clamped to 0..10; an error shows no node.
func TestRender(t *testing.T) {
	score := func(v int64) *int64 { return &v }
	filter := Decision{Names: []string{"a", "ghost", "b"}, Index: []int{0, 2},
		Verdicts: []framework.Verdict{{}, {Reason: "no gpu", Unresolvable: true}}}
	want := []framework.NodeDecision{{Node: "a", Verdict: "pass"}, {Node: "ghost", Verdict: "fail", Reason: ReasonUnknownNode},
		{Node: "b", Verdict: "unresolvable", Reason: "no gpu"}}
	if diff := cmp.Diff(want, filter.Render().Nodes); diff != "" {
		t.Errorf("filter (-want +got):\n%s", diff)
	}
	prio := Decision{Names: []string{"a", "ghost", "b"}, Index: []int{0, 2}, Scores: []int64{-3, 12}}
	want = []framework.NodeDecision{{Node: "a", Score: score(0)}, {Node: "ghost", Score: score(0)}, {Node: "b", Score: score(10)}}
	if diff := cmp.Diff(want, prio.Render().Nodes); diff != "" {
		t.Errorf("prioritize (-want +got):\n%s", diff)
	}
	failed := Decision{Err: "filter failed: x", Names: []string{"a"}, Verdicts: []framework.Verdict{{}}}
	if got := failed.Render(); got.Error != "filter failed: x" || got.Nodes != nil {
		t.Errorf("an error shows %+v", got)
	}
}

type explaining struct{ n int }

func (e explaining) Explain(_ context.Context, function, verb string, _ *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	out := make([]framework.Inputs, e.n)
	for i := range out {
		out[i] = framework.Inputs{"function": function, "verb": verb}
	}
	return out
}

// An agent's explanation is asked for the function and verb given; an answer of the wrong length
// is none, and an agent that does not explain has no explanation.
func TestExplainerOf(t *testing.T) {
	nodes := []*corev1.Node{{}, {}}
	got := ExplainerOf(explaining{n: 2}, "f", "filter").Inputs(context.Background(), nil, nodes)
	if diff := cmp.Diff([]framework.Inputs{{"function": "f", "verb": "filter"}, {"function": "f", "verb": "filter"}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := ExplainerOf(explaining{n: 1}, "f", "filter").Inputs(context.Background(), nil, nodes); got != nil {
		t.Errorf("one entry for two nodes: %v, want none", got)
	}
	if ex := ExplainerOf(struct{}{}, "f", "filter"); ex != nil || ex.Inputs(context.Background(), nil, nodes) != nil {
		t.Error("an agent that does not explain has an explanation")
	}
	var none framework.Explainer
	if ExplainerOf(none, "f", "filter") != nil {
		t.Error("a nil Explainer has an explanation")
	}
}

// DECISIONS_KEPT read from the environment (plugin mode): unset keeps the default given; a value
// out of range or not a number is an error naming the variable.
func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		env     map[string]string
		want    int
		wantErr string
	}{
		{nil, 0, ""},
		{map[string]string{"DECISIONS_KEPT": "500"}, 500, ""},
		{map[string]string{"DECISIONS_KEPT": "0"}, 0, ""},
		{map[string]string{"DECISIONS_KEPT": "100000"}, 100000, ""},
		{map[string]string{"DECISIONS_KEPT": "-1"}, 0, "invalid DECISIONS_KEPT (or --decisions-kept): -1 is out of range [0, 100000]"},
		{map[string]string{"DECISIONS_KEPT": "100001"}, 0, "invalid DECISIONS_KEPT (or --decisions-kept): 100001 is out of range [0, 100000]"},
		{map[string]string{"DECISIONS_KEPT": "many"}, 0, `invalid DECISIONS_KEPT (or --decisions-kept): "many" is not an integer`},
	} {
		got, err := FromEnv(env(tc.env), Config{InputsBytes: DefaultInputsBytes})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one containing %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.Kept != tc.want {
			t.Errorf("%v: %d, %v; want %d", tc.env, got.Kept, err, tc.want)
		}
	}
}

// DECISIONS_INPUTS_BYTES read from the environment: unset keeps the default given; 0 keeps none;
// a value out of range or not a number is an error naming the variable.
func TestFromEnvInputsBytes(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    int64
		wantErr string
	}{
		{nil, DefaultInputsBytes, ""},
		{map[string]string{"DECISIONS_INPUTS_BYTES": "0"}, 0, ""},
		{map[string]string{"DECISIONS_INPUTS_BYTES": "67108864"}, 64 << 20, ""},
		{map[string]string{"DECISIONS_INPUTS_BYTES": "-1"}, 0, "invalid DECISIONS_INPUTS_BYTES (or --decisions-inputs-bytes): -1 is out of range [0, 17179869184]"},
		{map[string]string{"DECISIONS_INPUTS_BYTES": "16Mi"}, 0, `invalid DECISIONS_INPUTS_BYTES (or --decisions-inputs-bytes): "16Mi" is not an integer`},
	} {
		got, err := FromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, Config{InputsBytes: DefaultInputsBytes})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one containing %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.InputsBytes != tc.want {
			t.Errorf("%v: %d, %v; want %d", tc.env, got.InputsBytes, err, tc.want)
		}
	}
}

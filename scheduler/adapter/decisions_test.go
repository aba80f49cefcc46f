package adapter_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// TestDecisionsKept: with KeepDecisions, a cycle leaves the filter's verdicts of exactly the
// nodes it judged (the chunks the scheduler asked about) with their reasons, and the
// prioritizer's scores (0..10) of the nodes scored, each with what the agent saw, newest first,
// in the JSON of the extender's /debug/decisions.
func TestDecisionsKept(t *testing.T) {
	now := time.Now()
	var nodes []*corev1.Node
	for i := range 40 {
		n := fixtures.Node(i, fixtures.UsageStatistics(i, 16000, 64<<30, now))
		n.ResourceVersion = strconv.Itoa(i + 1)
		nodes = append(nodes, &n)
	}
	a := newAdapter(t, agents.All...)
	kept := a.KeepDecisions(decisions.Config{Kept: 10, InputsBytes: decisions.DefaultInputsBytes})
	// The filter "pod" judges node by node (adaptive judges the whole list at once).
	fw, snap := mustFramework(t, a, profileYAML("multiPoint:\n  enabled:\n  - name: safe-overload\n",
		"- name: safe-overload\n  args:\n    filter: pod\n"), nodes, nil)
	infos, _ := snap.NodeInfos().List()
	pod := fixtures.Pod("p", "3000m", "4Gi")
	state := schedframework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
	// The scheduler asks about the first nodes of the list until one passes (the list's order is
	// the snapshot's, not the nodes'), then about node 20: chunks 0-15 and 16-31 are judged,
	// 32-39 not.
	want := map[string]string{}
	var feasible []fwk.NodeInfo
	ask := func(i int) bool {
		s := fw.RunFilterPlugins(t.Context(), state, pod, infos[i])
		want[infos[i].Node().Name] = "pass"
		if s != nil {
			want[infos[i].Node().Name] = "fail"
			return false
		}
		feasible = append(feasible, infos[i])
		return true
	}
	for i := 0; i < 16 && !ask(i); i++ {
	}
	ask(20)
	if len(feasible) == 0 {
		t.Fatal("no feasible node: the test needs one")
	}
	if s := fw.RunPreScorePlugins(t.Context(), state, pod, feasible); !s.IsSuccess() {
		t.Fatal(s)
	}

	b, err := json.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind      string `json:"kind"`
		Capacity  int    `json:"capacity"`
		Decisions []struct {
			Pod, Agent, Function, Verb string
			Nodes                      []struct {
				Node, Verdict, Reason string
				Score                 *int64
				Inputs                map[string]any
			}
		} `json:"decisions"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "Decisions" || got.Capacity != 10 || len(got.Decisions) != 2 {
		t.Fatalf("kind %q, capacity %d, %d decisions; want Decisions, 10, 2:\n%s", got.Kind, got.Capacity, len(got.Decisions), b)
	}
	score, filter := got.Decisions[0], got.Decisions[1]
	if score.Verb != "prioritize" || filter.Verb != "filter" || score.Pod != "default/p" || filter.Agent != "safe" || filter.Function != "safe-overload" {
		t.Fatalf("decisions %+v / %+v: want the prioritize decision, then the filter's, of safe-overload about default/p", score, filter)
	}
	if len(filter.Nodes) != 32 {
		t.Errorf("the filter decision shows %d nodes, want the 32 judged", len(filter.Nodes))
	}
	for _, n := range filter.Nodes {
		if w, ok := want[n.Node]; ok && n.Verdict != w {
			t.Errorf("node %s: verdict %q, the scheduler got %q", n.Node, n.Verdict, w)
		}
		if (n.Verdict == "fail") != (n.Reason != "") || n.Inputs["mu"] == nil && n.Inputs["cpu"] == nil {
			t.Errorf("node %s: verdict %q reason %q inputs %v: want a reason exactly on failure, and the agent's inputs", n.Node, n.Verdict, n.Reason, n.Inputs)
		}
	}
	if len(score.Nodes) != len(feasible) {
		t.Fatalf("the prioritize decision shows %d nodes, want the %d feasible", len(score.Nodes), len(feasible))
	}
	for i, n := range score.Nodes {
		if n.Node != feasible[i].Node().Name || n.Score == nil || *n.Score < 0 || *n.Score > 10 || n.Inputs == nil {
			t.Errorf("scored node %d: %+v, want %s with a score 0..10 and inputs", i, n, feasible[i].Node().Name)
		}
	}
}

package telemetry

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// Explain shows the policy's metric on each node with its age, or that it has none; nothing for
// a pod without a policy.
func TestExplain(t *testing.T) {
	src := &fakeSource{data: map[string]map[string]Sample{"node_cpu": {
		"hot":   {Value: 93, Time: t0.Add(-12 * time.Second)},
		"stale": {Value: 10, Time: t0.Add(-5 * time.Minute)},
	}}}
	a, _ := testAgent(t, DefaultConfig(), src, policyObject(t, demoPolicy))
	a.refresh(t.Context())
	nodes := []*corev1.Node{fixtures.MakeNode().Name("hot").Obj(), fixtures.MakeNode().Name("stale").Obj(), fixtures.MakeNode().Name("none").Obj()}
	pod := fixtures.MakePod().Name("p").Namespace("default").Label(PodLabel, "demo-policy").Obj()
	got := a.Explain(t.Context(), FilterPolicy, "filter", pod, nodes)
	want := []framework.Inputs{
		{"policy": "default/demo-policy", "strategy": DontSchedule, "node_cpu": framework.Inputs{"value": 93.0, "age": "12s", "fresh": true}},
		{"policy": "default/demo-policy", "strategy": DontSchedule, "node_cpu": framework.Inputs{"value": 10.0, "age": "5m0s", "fresh": false}},
		{"policy": "default/demo-policy", "strategy": DontSchedule, "node_cpu": "no value"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := a.Explain(t.Context(), PriorityPolicy, "prioritize", pod, nodes[:1]); got[0]["strategy"] != ScheduleOnMetric {
		t.Errorf("prioritize explains %v, want the scheduleonmetric strategy", got)
	}
	if got := a.Explain(t.Context(), FilterPolicy, "filter", fixtures.MakePod().Name("q").Namespace("default").Obj(), nodes); got != nil {
		t.Errorf("a pod without a policy: %v", got)
	}
}

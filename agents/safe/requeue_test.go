package safe

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// TestRequeueOnCoversWhatTheFilterReads changes each annotation of nodes near the threshold,
// one at a time: every change that turns a verdict must be of an annotation RequeueOn declares
// (else a pod the filter rejected would wait for an unrelated event), and an undeclared one
// must turn none.
func TestRequeueOnCoversWhatTheFilterReads(t *testing.T) {
	a := newAgent(t, DefaultConfig(), nil)
	on := a.RequeueOn(FilterOverload)
	if on == nil || !on.NodeAllocatable {
		t.Fatalf("RequeueOn(%s) = %+v, want the statistics annotations and allocatable", FilterOverload, on)
	}
	if a.RequeueOn("no-such-filter") != nil {
		t.Errorf("RequeueOn of an unknown filter is not nil")
	}
	now := time.Now()
	pod := makePod("500m", "1Gi")
	turned := 0
	for i := range 200 {
		ann := fixtures.UsageStatistics(i, 16000, 64<<30, now)
		ann["unrelated"] = "x"
		node := func(ann map[string]string) *corev1.Node {
			return fixtures.MakeNode().Name("n").Annotations(ann).
				Allocatable(fixtures.Res{corev1.ResourceCPU: "16", corev1.ResourceMemory: "64Gi"}).Obj()
		}
		before, err := a.filterOverload(context.Background(), pod, []*corev1.Node{node(ann)})
		if err != nil {
			t.Fatal(err)
		}
		for k := range ann {
			changed := map[string]string{}
			for k2, v := range ann {
				changed[k2] = v
			}
			// Cool the node down (more free, no spread) or, for the timestamp, make it stale.
			changed[k] = "0"
			if k == "mean-free-cpu" || k == "mean-free-memory" || k == "forcasted-free-cpu" || k == "forcasted-free-memory" {
				changed[k] = "68719476736"
			}
			after, err := a.filterOverload(context.Background(), pod, []*corev1.Node{node(changed)})
			if err != nil {
				t.Fatal(err)
			}
			if after[0] != before[0] {
				turned++
				if !slices.Contains(on.NodeAnnotations, k) {
					t.Errorf("node %d: changing annotation %s turns the verdict (%+v -> %+v) but RequeueOn does not declare it", i, k, before[0], after[0])
				}
			}
		}
	}
	if turned == 0 {
		t.Fatal("no change turned a verdict: the test proves nothing")
	}
}

package gang

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// roomView is the part of the cluster view freeRoom reads: nodes, their allocated requests and
// the bound pods.
type roomView struct {
	framework.Cluster
	nodes     []*corev1.Node
	allocated map[string]framework.Amounts
	pods      []*corev1.Pod
}

func (v roomView) Nodes() []*corev1.Node                   { return v.nodes }
func (v roomView) Allocated(node string) framework.Amounts { return v.allocated[node] }
func (v roomView) Pods() []*corev1.Pod                     { return v.pods }

// whereView is roomView selecting pods by namespace and labels (framework.PodsWhere), as the
// extender's cache does; its Pods, which freeRoom must not call then, gives nothing.
type whereView struct{ roomView }

func (v whereView) Pods() []*corev1.Pod { return nil }
func (v whereView) PodsWhere(keep func(string, map[string]string) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range v.pods {
		if keep(p.Namespace, p.Labels) {
			out = append(out, p)
		}
	}
	return out
}

// The gang filter rejects a group whose spec.minResources the cluster's free room cannot hold,
// though it has its quorum, with a reason naming the resource, the request and the room; the
// group's own bound members give their room back, found among every pod or selected by label
// (PodsWhere).
func TestFilterMinResources(t *testing.T) {
	t.Run("Pods", func(t *testing.T) { testFilterMinResources(t, false) })
	t.Run("PodsWhere", func(t *testing.T) { testFilterMinResources(t, true) })
}

func testFilterMinResources(t *testing.T, where bool) {
	member := func(name, node string) *corev1.Pod {
		return fixtures.MakePod().Name(name).Namespace("ns").Label(LabelPodGroupName, "pg").Node(node).
			Req(fixtures.Res{corev1.ResourceCPU: "1"}).Obj()
	}
	pg := podGroupObject("ns", "pg", 2)
	pg.Object["spec"].(map[string]any)["minResources"] = map[string]any{"cpu": "3"}
	f := newFakeCluster([]runtime.Object{member("pg-0", "n1"), member("pg-1", "")}, pg)
	view := roomView{
		nodes: []*corev1.Node{
			fixtures.MakeNode().Name("n1").Allocatable(fixtures.Res{corev1.ResourceCPU: "2", corev1.ResourcePods: "10"}).Obj(),
			fixtures.MakeNode().Name("n2").Allocatable(fixtures.Res{corev1.ResourceCPU: "2", corev1.ResourcePods: "10"}).Obj(),
		},
		// n1: pg-0 (1 cpu) and another pod (1 cpu); n2: 1500m of other pods.
		allocated: map[string]framework.Amounts{"n1": {corev1.ResourceCPU: 2000, corev1.ResourcePods: 2}, "n2": {corev1.ResourceCPU: 1500, corev1.ResourcePods: 1}},
		pods: []*corev1.Pod{member("pg-0", "n1"), fixtures.MakePod().Name("other").Namespace("ns").Node("n2").
			Req(fixtures.Res{corev1.ResourceCPU: "1500m"}).Obj()},
	}
	f.Cluster = view
	if where {
		f.Cluster = whereView{view}
	}
	a := newAgent(t, f)
	f.start(t)
	waitSynced(t, a)
	// Free: n1 2-2+1 (pg-0's own) = 1 cpu, n2 2-1.5 = 0.5 cpu: 1500m < 3.
	got, err := a.filter(t.Context(), member("pg-1", ""), nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := everyNode(framework.RejectUnresolvable("pod group ns/pg: spec.minResources does not fit in the cluster's free room (summed over 2 nodes): cpu 3 requested, 1500m free"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	// n2 emptied: 1 + 2 = 3 cpu free.
	view.allocated["n2"] = framework.Amounts{}
	if got, _ := a.filter(t.Context(), member("pg-1", ""), nodes); !got[0].Passes() {
		t.Errorf("room for minResources: %v", got)
	}
}

package safe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// TestAdaptiveFilterIsBatchable holds the adaptive filter to what it declares
// (framework.Filter.Batchable), on which plugin mode signs pods for kube-scheduler's
// opportunistic batching: once a pod is placed on a node that passed (and fits its request, as
// kube-scheduler's own filter checks), a call for an identical pod is never more lenient on the
// other nodes, while some other node that passed the first call and fits the pod remains (the
// candidates batching keeps). Random clusters of statistics, pods placed before, and pods of
// every size (some no node takes: judged as the nodes are), in plugin mode's form (NodePods,
// the pod placed assumed). The other filter modes judge each node by itself: not WholeList.
func TestAdaptiveFilterIsBatchable(t *testing.T) {
	for _, mode := range []FilterMode{FilterAdaptive, FilterNode, FilterPod, FilterOff} {
		cfg := DefaultConfig()
		cfg.Filter = mode
		f := clusterAgent(t, cfg, testCluster{}).Filters()[0]
		if f.WholeList != (mode == FilterAdaptive) || f.Batchable != (mode == FilterAdaptive) {
			t.Errorf("filter %s: WholeList %t, Batchable %t; want both only for adaptive", mode, f.WholeList, f.Batchable)
		}
	}

	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(35, 2026))
	checked, asTheyAre, stricter := 0, 0, 0
	for iter := range 300 {
		cfg := DefaultConfig()
		cfg.Utilization, cfg.Percentile = 70+r.IntN(30), 5+r.IntN(50)
		c := &indexedCluster{generations: map[string]int64{}}
		nodes := make([]*corev1.Node, 2+r.IntN(12))
		for i := range nodes {
			nodes[i] = bigNode(fmt.Sprintf("n%d", i), fixtures.UsageStatistics(i+100*iter, 16000, 64<<30, now.Add(-time.Duration(r.IntN(50))*time.Minute)))
			nodes[i].ResourceVersion = strconv.Itoa(i + 1)
		}
		c.nodes = nodes
		for k := range r.IntN(30) {
			p := boundPod(fmt.Sprintf("old%d", k), strconv.Itoa(100+r.IntN(4000))+"m", nodes[r.IntN(len(nodes))].Name, now.Add(-time.Duration(r.IntN(90))*time.Minute))
			c.pods = append(c.pods, p)
			c.touch(p.Spec.NodeName)
		}
		a := clusterAgent(t, cfg, c)
		a.pods = c
		a.now = func() time.Time { return now }
		cpu := strconv.Itoa(100+r.IntN(12000)) + "m"
		pod := func(name string) *corev1.Pod {
			return fixtures.MakePod().Name(name).Namespace("default").Container("c", "", fixtures.Res{corev1.ResourceCPU: cpu, corev1.ResourceMemory: "1Gi"}).Obj()
		}
		ctx := context.Background()
		fits := func(n *corev1.Node) bool { // kube-scheduler's fit of the pod's request
			reqCPU, reqMemory := framework.CPUMemoryRequests(pod("p"))
			alloc := c.Allocated(n.Name)
			return alloc[corev1.ResourceCPU]+reqCPU <= n.Status.Allocatable.Cpu().MilliValue() &&
				alloc[corev1.ResourceMemory]+reqMemory <= n.Status.Allocatable.Memory().Value()
		}
		before := extendertest.Must(a.filterOverload(ctx, pod("first"), nodes))
		var candidates []int // what kube-scheduler finds feasible
		for i, n := range nodes {
			if before[i].Passes() && fits(n) {
				candidates = append(candidates, i)
			}
		}
		if len(candidates) < 2 { // nothing left to reuse once the pod is placed
			continue
		}
		// Whether the first pod was judged as the nodes are: no node that fits it takes it with
		// its request added (the filter pod's verdicts).
		podCfg := cfg
		podCfg.Filter = FilterPod
		withPod := clusterAgent(t, podCfg, c)
		withPod.pods, withPod.now = c, a.now
		takes := false
		for i, v := range extendertest.Must(withPod.filterOverload(ctx, pod("first"), nodes)) {
			takes = takes || (v.Passes() && fits(nodes[i]))
		}
		if !takes {
			asTheyAre++
		}
		chosen := candidates[r.IntN(len(candidates))]
		placed := pod("first")
		placed.Spec.NodeName = nodes[chosen].Name // assumed: no PodScheduled condition, placed now
		c.pods = append(c.pods, placed)
		c.touch(placed.Spec.NodeName)
		after := extendertest.Must(a.filterOverload(ctx, pod("second"), nodes))
		for i := range nodes {
			if i == chosen {
				continue
			}
			checked++
			switch {
			case after[i].Passes() && !before[i].Passes():
				t.Fatalf("cluster %d (%+v, pod %s cpu): %s rejected for the first pod (%s), passes for the second after the first was placed on %s",
					iter, cfg, cpu, nodes[i].Name, before[i].Reason, nodes[chosen].Name)
			case !after[i].Passes() && before[i].Passes():
				stricter++
			}
		}
	}
	if checked < 500 || asTheyAre == 0 {
		t.Errorf("%d verdicts compared, %d pods judged as the nodes are: the clusters do not exercise the filter", checked, asTheyAre)
	}
	t.Logf("%d verdicts on the other nodes compared, %d stricter after the placement, %d as they are", checked, stricter, asTheyAre)
}

package safe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// indexedCluster is a framework.Cluster over pods that change, and its framework.NodePods: a
// node's generation moves on every change of its pods, from one counter (as the extender's
// cache and the scheduler's NodeInfo do).
var _ framework.NodePods = (*indexedCluster)(nil)

type indexedCluster struct {
	testCluster
	generations map[string]int64
	last        int64
}

func (c *indexedCluster) touch(node string) {
	c.last++
	c.generations[node] = c.last
}

func (c *indexedCluster) PodsGeneration(node string) int64 { return c.generations[node] }

func (c *indexedCluster) PodsOn(node string) ([]*corev1.Pod, int64) {
	var out []*corev1.Pod
	for _, p := range c.pods {
		if p.Spec.NodeName == node && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out, c.generations[node]
}

// The load placed since the statistics, looked up per node through NodePods and remembered by
// generation, gives the verdicts, reasons and scores of the walk over every pod of the
// cluster: random clusters (nodes with and without statistics, with fresh, old, missing and
// unreadable timestamps), then random sequences of placements, removals, bindings (the
// PodScheduled condition arriving), terminations and statistics refreshes, each followed by a
// filter and both priorities on a random subset of the nodes, by one agent of each kind that
// lives through the whole sequence.
func TestPlacedIndexMatchesScan(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(23, 2026))
	placedReasons := 0 // rejections whose reason counts pods placed since the statistics
	for iter := range 150 {
		cfg := DefaultConfig()
		cfg.PlacedShare = []int{50, 100, 150, 333}[r.IntN(4)]
		cfg.Filter = []FilterMode{FilterAdaptive, FilterNode, FilterPod}[r.IntN(3)]
		cfg.Stale = []StalePolicy{StaleIgnore, StaleReject}[r.IntN(2)]

		c := &indexedCluster{generations: map[string]int64{}}
		rv := 0
		statNode := func(i int) *corev1.Node {
			rv++
			annotations := map[string]string{}
			switch k := r.IntN(8); {
			case k == 0: // no statistics
			case k == 1:
				annotations = fixtures.UsageStatistics(i+iter*100, 16000, 64<<30, now)
				annotations[nodestats.StatisticsTimestamp] = "yesterday"
			case k == 2:
				annotations = fixtures.UsageStatistics(i+iter*100, 16000, 64<<30, now)
				delete(annotations, nodestats.StatisticsTimestamp)
			default: // statistics from 0 to 90 minutes ago, some stale
				annotations = fixtures.UsageStatistics(i+iter*100+rv, 16000, 64<<30, now.Add(-time.Duration(r.IntN(90))*time.Minute))
			}
			n := bigNode(fmt.Sprintf("n%d", i), annotations)
			n.ResourceVersion = strconv.Itoa(rv)
			return n
		}
		nodes := make([]*corev1.Node, 3+r.IntN(10))
		for i := range nodes {
			nodes[i] = statNode(i)
		}
		c.nodes = nodes
		podN := 0
		newPod := func() *corev1.Pod {
			podN++
			node := ""
			if r.IntN(6) > 0 {
				node = nodes[r.IntN(len(nodes))].Name
			}
			var at time.Time
			if r.IntN(3) > 0 {
				at = now.Add(-time.Duration(r.IntN(120)) * time.Minute)
			}
			p := boundPod(fmt.Sprintf("p%d", podN), strconv.Itoa(100+r.IntN(4000))+"m", node, at)
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(strconv.Itoa(1+r.IntN(8)) + "Gi")
			return p
		}
		for range r.IntN(40) {
			p := newPod()
			c.pods = append(c.pods, p)
			c.touch(p.Spec.NodeName)
		}

		indexed := clusterAgent(t, cfg, c)
		indexed.pods = c
		scan := clusterAgent(t, cfg, c)
		for _, a := range []*Agent{indexed, scan} {
			a.now = func() time.Time { return now }
		}
		if scan.pods != nil || indexed.pods == nil {
			t.Fatal("the agents do not differ in their NodePods")
		}

		for step := range 25 {
			switch k := r.IntN(6); {
			case k == 0 || len(c.pods) == 0: // a placement
				p := newPod()
				c.pods = append(c.pods, p)
				c.touch(p.Spec.NodeName)
			case k == 1: // a removal
				i := r.IntN(len(c.pods))
				c.touch(c.pods[i].Spec.NodeName)
				c.pods = append(c.pods[:i:i], c.pods[i+1:]...)
			case k == 2: // an assumed pod bound: its PodScheduled condition arrives
				i := r.IntN(len(c.pods))
				p := c.pods[i].DeepCopy()
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
					LastTransitionTime: metav1.NewTime(now.Add(-time.Duration(r.IntN(120)) * time.Minute))}}
				c.pods = append(c.pods[:i:i], append([]*corev1.Pod{p}, c.pods[i+1:]...)...)
				c.touch(p.Spec.NodeName)
			case k == 3: // a pod terminates
				i := r.IntN(len(c.pods))
				p := c.pods[i].DeepCopy()
				p.Status.Phase = corev1.PodSucceeded
				c.pods = append(c.pods[:i:i], append([]*corev1.Pod{p}, c.pods[i+1:]...)...)
				c.touch(p.Spec.NodeName)
			default: // the annotator refreshes a node's statistics (the pods stay)
				i := r.IntN(len(nodes))
				nodes[i] = statNode(i)
			}

			var subset []*corev1.Node
			for _, n := range nodes {
				if r.IntN(3) > 0 {
					subset = append(subset, n)
				}
			}
			pod := fixtures.MakePod().Name("incoming").Namespace("default").
				Container("c", "", fixtures.Res{corev1.ResourceCPU: strconv.Itoa(100+r.IntN(8000)) + "m",
					corev1.ResourceMemory: strconv.Itoa(1+r.IntN(16)) + "Gi"}).Obj()
			ctx := context.Background()
			what := fmt.Sprintf("cluster %d step %d (%+v)", iter, step, cfg)
			got := extendertest.Must(indexed.filterOverload(ctx, pod, subset))
			if diff := cmp.Diff(extendertest.Must(scan.filterOverload(ctx, pod, subset)), got); diff != "" {
				t.Fatalf("%s: filter verdicts differ (-scan +indexed):\n%s", what, diff)
			}
			for _, v := range got {
				if strings.Contains(v.Reason, "pods placed since the statistics") {
					placedReasons++
				}
			}
			if diff := cmp.Diff(extendertest.Must(scan.scoreOverload(ctx, pod, subset)),
				extendertest.Must(indexed.scoreOverload(ctx, pod, subset))); diff != "" {
				t.Fatalf("%s: safe-overload scores differ (-scan +indexed):\n%s", what, diff)
			}
			if diff := cmp.Diff(extendertest.Must(scan.scoreBalance(ctx, pod, subset)),
				extendertest.Must(indexed.scoreBalance(ctx, pod, subset))); diff != "" {
				t.Fatalf("%s: safe-balance scores differ (-scan +indexed):\n%s", what, diff)
			}
		}
	}
	if placedReasons < 50 {
		t.Errorf("only %d rejections counted pods placed since the statistics: the test does not exercise the placed load", placedReasons)
	}
}

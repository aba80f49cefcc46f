package safe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// The tests of issue 26's three causes, each with the single request that reproduced it, on
// nodes of 16 cpu and 64 GiB.

func bigNode(name string, annotations map[string]string) *corev1.Node {
	return fixtures.MakeNode().Name(name).
		Allocatable(fixtures.Res{corev1.ResourceCPU: "16", corev1.ResourceMemory: "64Gi"}).Annotations(annotations).Obj()
}

// testCluster is a framework.Cluster over fixed pods; Allocated sums their requests.
type testCluster struct {
	nodes []*corev1.Node
	pods  []*corev1.Pod
}

func (c testCluster) Node(name string) (*corev1.Node, bool) {
	for _, n := range c.nodes {
		if n.Name == name {
			return n, true
		}
	}
	return nil, false
}
func (c testCluster) HasSynced() bool       { return true }
func (c testCluster) Nodes() []*corev1.Node { return c.nodes }
func (c testCluster) Pods() []*corev1.Pod   { return c.pods }
func (c testCluster) Allocated(node string) framework.Amounts {
	out := framework.Amounts{}
	for _, p := range c.pods {
		if p.Spec.NodeName == node {
			cpu, memory := framework.CPUMemoryRequests(p)
			out[corev1.ResourceCPU] += cpu
			out[corev1.ResourceMemory] += memory
			out[corev1.ResourcePods]++
		}
	}
	return out
}

func clusterAgent(t *testing.T, cfg Config, c framework.Cluster) *Agent {
	t.Helper()
	h := framework.NewHandle(nil)
	h.Cluster = c
	a, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// boundPod is a pod requesting cpu on node, bound at (zero: assumed, not yet bound).
func boundPod(name, cpu, node string, at time.Time) *corev1.Pod {
	p := fixtures.MakePod().Name(name).Namespace("default").Node(node).
		Container("c", "", fixtures.Res{corev1.ResourceCPU: cpu, corev1.ResourceMemory: "1Gi"}).Obj()
	if !at.IsZero() {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(at)}}
	}
	return p
}

func scores(t *testing.T, a *Agent, pod *corev1.Pod, nodes []*corev1.Node) (overload, balance []int64) {
	t.Helper()
	overload = extendertest.Must(a.scoreOverload(context.Background(), pod, nodes))
	balance = extendertest.Must(a.scoreBalance(context.Background(), pod, nodes))
	return overload, balance
}

// Cause 1: a node without statistics (a new node) scored 0 in both priorities, against 7 and 5
// for a node at 75 % measured cpu: the busy node got 190 more points. It is now judged from
// its pods' requests, from the cluster view or, without one, from the annotator's requested-*
// annotations.
func TestNodeWithoutStatisticsJudgedFromRequests(t *testing.T) {
	busy := bigNode("busy", ann{nodestats.MeanFreeCPU: "4000", nodestats.StdFreeCPU: "800"})
	pod := makePod("1", "1Gi")
	t.Run("cluster view", func(t *testing.T) {
		fresh, full := bigNode("new", nil), bigNode("full", nil)
		c := testCluster{nodes: []*corev1.Node{busy, fresh, full}, pods: []*corev1.Pod{
			boundPod("a", "12", "busy", time.Unix(1, 0)), boundPod("b", "15", "full", time.Unix(1, 0))}}
		a := clusterAgent(t, DefaultConfig(), c)
		o, b := scores(t, a, pod, c.nodes)
		// busy: 7 and 5 (issue 26). new: mu 1000/16000, sigma 0: risk 0, score 10; balance
		// floor((1 - 0.0625/2)*10 + 0.5) = 10. full: mu (15000+1000)/16000 = 1 > T: 0; balance
		// floor((1 - 1/2)*10 + 0.5) = 5. Memory has no statistics on busy; on the others it is
		// judged from the requests too (1-2 GiB of 64: 10 and 10).
		if diff := cmp.Diff([]int64{7, 10, 0}, o); diff != "" {
			t.Errorf("safe-overload (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{5, 10, 5}, b); diff != "" {
			t.Errorf("safe-balance (-want +got):\n%s", diff)
		}
		// With the shipped weights (2, 1) the new node is ahead by 2*3 + 5 = 11 points of 10.
		if gap := 2*(o[1]-o[0]) + (b[1] - b[0]); gap <= 0 {
			t.Errorf("the new node is not preferred: weighted gap %d", gap)
		}
		// The filter lets a node without statistics through, whatever its requests (the
		// scheduler's own fit judges them).
		for _, v := range extendertest.Must(a.filterOverload(context.Background(), pod, []*corev1.Node{fresh, full})) {
			if !v.Passes() {
				t.Errorf("a node without statistics was rejected: %q", v.Reason)
			}
		}
	})
	t.Run("annotations without cluster access", func(t *testing.T) {
		fresh := bigNode("new", ann{nodestats.RequestedCPU: "0", nodestats.RequestedMemory: "0"})
		unknown := bigNode("unknown", nil)
		a := newAgent(t, DefaultConfig(), nil)
		o, b := scores(t, a, pod, []*corev1.Node{busy, fresh, unknown})
		if diff := cmp.Diff([]int64{7, 10, 0}, o); diff != "" {
			t.Errorf("safe-overload (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{5, 10, 0}, b); diff != "" {
			t.Errorf("safe-balance (-want +got):\n%s", diff)
		}
	})
}

// Cause 2: with the pod's whole request added, a node at 62.5 % measured cpu accepted 0.5, 2 and
// 3-cpu pods and rejected a 4-cpu pod; small pods then took every room that freed. The shipped
// filter judges the node as it is: the same answer for every pod size.
func TestFilterDoesNotStarveLargePods(t *testing.T) {
	n := bigNode("n", ann{nodestats.MeanFreeCPU: "6000", nodestats.StdFreeCPU: "1200"})
	hot := bigNode("hot", ann{nodestats.MeanFreeCPU: "800", nodestats.StdFreeCPU: "800"})
	sizes := []string{"500m", "2", "3", "4", "8"}
	t.Run("shipped default", func(t *testing.T) {
		a := newAgent(t, DefaultConfig(), nil)
		for _, cpu := range sizes {
			v := extendertest.Must(a.filterOverload(context.Background(), makePod(cpu, "1Gi"), []*corev1.Node{n, hot}))
			if !v[0].Passes() {
				t.Errorf("%s-cpu pod rejected at 62.5 %% measured cpu, the best node there is: %q", cpu, v[0].Reason)
			}
			// A node already at risk rejects every pod, the smallest too (mu 15200/16000 as it is).
			if !strings.HasPrefix(v[1].Reason, "cpu risk ") {
				t.Errorf("%s-cpu pod on the hot node: reason %q", cpu, v[1].Reason)
			}
		}
	})
	t.Run("node", func(t *testing.T) {
		a := newAgent(t, config(func(c *Config) { c.Filter = FilterNode }), nil)
		for _, cpu := range sizes {
			v := extendertest.Must(a.filterOverload(context.Background(), makePod(cpu, "1Gi"), []*corev1.Node{n, hot}))
			if !v[0].Passes() {
				t.Errorf("%s-cpu pod rejected at 62.5 %% measured cpu: %q", cpu, v[0].Reason)
			}
			if want := "cpu risk 0.86 > 0.30 (mu 0.95, sigma 0.05, threshold 0.90)"; v[1].Reason != want {
				t.Errorf("%s-cpu pod on the hot node: reason %q, want %q", cpu, v[1].Reason, want)
			}
		}
	})
	t.Run("pod mode, as before", func(t *testing.T) {
		a := newAgent(t, config(func(c *Config) { c.Filter = FilterPod }), nil)
		got := extendertest.Must(a.filterOverload(context.Background(), makePod("4", "1Gi"), []*corev1.Node{n}))
		if want := "cpu risk 0.44 > 0.30 (mu 0.88, sigma 0.07, threshold 0.90)"; got[0].Reason != want {
			t.Errorf("4-cpu pod: reason %q, want %q", got[0].Reason, want)
		}
	})
	t.Run("off", func(t *testing.T) {
		a := newAgent(t, config(func(c *Config) { c.Filter = FilterOff }), nil)
		for _, v := range extendertest.Must(a.filterOverload(context.Background(), makePod("4", "1Gi"), []*corev1.Node{n, hot})) {
			if !v.Passes() {
				t.Errorf("filter off rejected: %q", v.Reason)
			}
		}
	})
}

// Cause 3: between two refreshes of the statistics a node looked as idle as before however many
// pods it received. Pods placed after the statistics-timestamp now add PlacedShare of their
// requests to the node's measured usage, in the filter, the priorities and the reason.
func TestLoadPlacedSinceStatistics(t *testing.T) {
	stamp := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	statsAnn := ann{nodestats.MeanFreeCPU: "8000", nodestats.StdFreeCPU: "400",
		nodestats.StatisticsTimestamp: stamp.Format(time.RFC3339)}
	target, quiet := bigNode("target", statsAnn), bigNode("quiet", statsAnn)
	c := testCluster{nodes: []*corev1.Node{target, quiet}, pods: []*corev1.Pod{
		boundPod("before", "4", "target", stamp.Add(-time.Minute)), // in the statistics already
		boundPod("after1", "2", "target", stamp.Add(time.Minute)),
		boundPod("after2", "2", "target", stamp.Add(2*time.Minute)),
		boundPod("after3", "2", "target", stamp.Add(3*time.Minute)),
		boundPod("assumed", "1", "target", time.Time{}), // plugin mode: assumed, not bound yet
		boundPod("other", "4", "quiet", stamp.Add(-time.Hour)),
	}}
	c.pods[3].Status.Phase = corev1.PodSucceeded // finished: it uses nothing
	pod := makePod("1", "1Gi")
	a := clusterAgent(t, DefaultConfig(), c)
	a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
	v := extendertest.Must(a.filterOverload(context.Background(), pod, c.nodes))
	// target: used 8000 + placed 2000+2000+1000 = 13000 of 16000: mu 0.8125; with sigma 0.025 the
	// risk of exceeding 0.9 is small: it passes. quiet passes.
	if !v[0].Passes() || !v[1].Passes() {
		t.Fatalf("verdicts %+v", v)
	}
	o, b := scores(t, a, pod, c.nodes)
	if !(o[0] < o[1]) || !(b[0] < b[1]) {
		t.Errorf("the node that received pods since its statistics scores %d/%d, the quiet one %d/%d", o[0], b[0], o[1], b[1])
	}
	// One more pod of 2 cpu: 15000 of 16000 used, with the pod's 1000 (quiet takes the pod, so
	// the adaptive filter counts it) mu 1 > T: rejected, with the placed load in the reason.
	c.pods = append(c.pods, boundPod("after4", "2", "target", stamp.Add(4*time.Minute)))
	a = clusterAgent(t, DefaultConfig(), c)
	a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
	v = extendertest.Must(a.filterOverload(context.Background(), pod, c.nodes))
	want := "cpu risk 1.00 > 0.30 (mu 1.00, sigma 0.03, threshold 0.90, 4 pods placed since the statistics add 7000m)"
	if v[0].Reason != want {
		t.Errorf("reason %q, want %q", v[0].Reason, want)
	}
	if !v[1].Passes() {
		t.Errorf("quiet node rejected: %q", v[1].Reason)
	}
	// PlacedShare 0 turns it off; 50 counts half of the requests.
	off := clusterAgent(t, config(func(c *Config) { c.PlacedShare = 0 }), c)
	if v := extendertest.Must(off.filterOverload(context.Background(), pod, c.nodes)); !v[0].Passes() {
		t.Errorf("PlacedShare 0: rejected: %q", v[0].Reason)
	}
	half := clusterAgent(t, config(func(c *Config) { c.PlacedShare = 50 }), c)
	if v := extendertest.Must(half.filterOverload(context.Background(), pod, c.nodes)); !v[0].Passes() {
		t.Errorf("PlacedShare 50 (mu (8000+3500)/16000): rejected: %q", v[0].Reason)
	}
	// Stale statistics: the node is judged from its requests (4+2+2+2+1 = 11 cpu of 16), no
	// placed load: it passes.
	stale := clusterAgent(t, DefaultConfig(), c)
	stale.now = func() time.Time { return stamp.Add(3 * time.Hour) }
	if v := extendertest.Must(stale.filterOverload(context.Background(), pod, c.nodes)); !v[0].Passes() {
		t.Errorf("stale statistics: rejected: %q", v[0].Reason)
	}
}

// FilterAdaptive: the pod's request counts while some node that can hold it takes it; when none
// does, the nodes are judged as they are, so a large pod is not kept out for ever.
func TestAdaptiveFilter(t *testing.T) {
	mid := bigNode("mid", ann{nodestats.MeanFreeCPU: "6000", nodestats.StdFreeCPU: "1200"})     // 62.5 % measured
	quiet := bigNode("quiet", ann{nodestats.MeanFreeCPU: "12000", nodestats.StdFreeCPU: "400"}) // 25 %
	hot := bigNode("hot", ann{nodestats.MeanFreeCPU: "800", nodestats.StdFreeCPU: "800"})       // 95 %
	large := makePod("4", "1Gi")
	cfg := config(func(c *Config) { c.Filter = FilterAdaptive })
	rejected := func(a *Agent, nodes ...*corev1.Node) map[string]string {
		t.Helper()
		out := map[string]string{}
		for i, v := range extendertest.Must(a.filterOverload(context.Background(), large, nodes)) {
			if !v.Passes() {
				out[nodes[i].Name] = v.Reason
			}
		}
		return out
	}
	a := newAgent(t, cfg, nil)
	// quiet takes the 4-cpu pod: mid is judged with it, and rejected as FilterPod rejects it.
	want := map[string]string{
		"mid": "cpu risk 0.44 > 0.30 (mu 0.88, sigma 0.07, threshold 0.90)",
		"hot": "cpu risk 1.00 > 0.30 (mu 1.00, sigma 0.05, threshold 0.90)",
	}
	if diff := cmp.Diff(want, rejected(a, mid, quiet, hot)); diff != "" {
		t.Errorf("with a node that takes the pod (-want +got):\n%s", diff)
	}
	// Without quiet no node takes it: mid is judged as it is and passes; hot, already at risk,
	// is still rejected.
	want = map[string]string{"hot": "cpu risk 0.86 > 0.30 (mu 0.95, sigma 0.05, threshold 0.90)"}
	if diff := cmp.Diff(want, rejected(a, mid, hot)); diff != "" {
		t.Errorf("without (-want +got):\n%s", diff)
	}
	// A node that would take the pod by its usage but has no room for its request (plugin mode
	// judges every node before kube-scheduler's fit) does not count.
	full := bigNode("full", ann{nodestats.MeanFreeCPU: "12000", nodestats.StdFreeCPU: "400"})
	c := testCluster{nodes: []*corev1.Node{mid, full}, pods: []*corev1.Pod{boundPod("big", "14", "full", time.Unix(1, 0))}}
	a = clusterAgent(t, cfg, c)
	if got := rejected(a, mid, full); len(got) != 0 {
		t.Errorf("with the quiet node full by requests: rejected %v, want none", got)
	}
}

// With the annotator's statistics-requested-* (the node's requests when the statistics were
// written), the load placed since is the growth of the node's requests: pods gone since the
// statistics are counted off, as their usage is still in the statistics. Short-lived pods
// otherwise pile up as "placed since" against statistics that still hold the usage of the
// pods they replaced, and a busy cluster with fast turnover looks full.
func TestRequestsGrownSinceStatistics(t *testing.T) {
	stamp := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	// At the statistics: 8 cpu used of 16, 6 cpu requested (pods "gone1" and "gone2" and "stay").
	statsAnn := ann{nodestats.MeanFreeCPU: "8000", nodestats.StdFreeCPU: "400",
		nodestats.StatisticsTimestamp:       stamp.Format(time.RFC3339),
		nodestats.StatisticsRequestedCPU:    "6000",
		nodestats.StatisticsRequestedMemory: "0"}
	target := bigNode("target", statsAnn)
	// Since: gone1 and gone2 (2 cpu each) left, four pods of 2 cpu came: requests 2 + 8 = 10 cpu,
	// grown by 4 cpu; the pods placed since sum 8 cpu.
	c := testCluster{nodes: []*corev1.Node{target}, pods: []*corev1.Pod{
		boundPod("stay", "2", "target", stamp.Add(-time.Hour)),
		boundPod("after1", "2", "target", stamp.Add(time.Minute)),
		boundPod("after2", "2", "target", stamp.Add(2*time.Minute)),
		boundPod("after3", "2", "target", stamp.Add(3*time.Minute)),
		boundPod("after4", "2", "target", stamp.Add(4*time.Minute)),
	}}
	pod := makePod("2", "1Gi")
	a := clusterAgent(t, config(func(c *Config) { c.Filter = FilterPod }), c)
	a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
	// used 8000 + grown 4000 + the pod's 2000 = 14000 of 16000: mu 0.875, sigma 0.025: passes
	// (counting the 8 cpu placed since, mu would be 1.125: rejected).
	v := extendertest.Must(a.filterOverload(context.Background(), pod, c.nodes))
	if !v[0].Passes() {
		t.Fatalf("rejected: %q; the pods gone since the statistics were not counted off", v[0].Reason)
	}
	// Two more pods of 2 cpu: grown by 8 cpu: 8000 + 8000 + 2000 > 16000: rejected, the growth in
	// the reason.
	c.pods = append(c.pods, boundPod("after5", "2", "target", stamp.Add(4*time.Minute)),
		boundPod("after6", "2", "target", stamp.Add(4*time.Minute)))
	a = clusterAgent(t, config(func(c *Config) { c.Filter = FilterPod }), c)
	a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
	v = extendertest.Must(a.filterOverload(context.Background(), pod, c.nodes))
	want := "cpu risk 1.00 > 0.30 (mu 1.00, sigma 0.03, threshold 0.90, requests grown since the statistics add 8000m)"
	if v[0].Reason != want {
		t.Errorf("reason %q, want %q", v[0].Reason, want)
	}
	// Fewer requests than at the statistics: nothing is added, nothing taken off the measured usage.
	c.pods = c.pods[:1]
	a = clusterAgent(t, config(func(c *Config) { c.Filter = FilterPod }), c)
	a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
	big := makePod("6", "1Gi") // 8000 + 6000 = 14000: mu 0.875, passes; with -4000 it would be far lower
	o, _ := scores(t, a, big, c.nodes)
	v = extendertest.Must(a.filterOverload(context.Background(), big, c.nodes))
	if !v[0].Passes() {
		t.Errorf("rejected with fewer requests than at the statistics: %q", v[0].Reason)
	}
	ref := clusterAgent(t, config(func(c *Config) { c.Filter = FilterPod; c.PlacedShare = 0 }), c)
	ref.now = a.now
	if r, _ := scores(t, ref, big, c.nodes); r[0] != o[0] {
		t.Errorf("score %d with requests shrunk since the statistics, %d with no placed load: want the same", o[0], r[0])
	}
	// SAFE_PLACED=arrivals sums the pods placed since, gone ones or not: the first case is rejected.
	c.pods = c.pods[:5]
	arr := clusterAgent(t, config(func(c *Config) { c.Filter = FilterPod; c.Placed = PlacedArrivals }), c)
	arr.now = a.now
	v = extendertest.Must(arr.filterOverload(context.Background(), pod, c.nodes))
	if want := "4 pods placed since the statistics add 8000m"; v[0].Passes() || !strings.Contains(v[0].Reason, want) {
		t.Errorf("arrivals: verdict %+v, want a rejection saying %q", v[0], want)
	}
}

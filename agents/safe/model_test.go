package safe

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// TestPresence: the share of the statistics' window (15m ending at at) a pod was on its node.
func TestPresence(t *testing.T) {
	at := learnedAt
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     float64
	}{
		{"unknown placement: placed now", time.Time{}, time.Time{}, 0},
		{"there all window, still there", at.Add(-time.Hour), time.Time{}, 1},
		{"placed after the statistics", at.Add(time.Minute), time.Time{}, 0},
		// 3 of 15 minutes.
		{"placed 3m before", at.Add(-3 * time.Minute), time.Time{}, 0.2},
		// from at-15m to at-5m: 10 of 15.
		{"there from long ago, gone 5m before", at.Add(-time.Hour), at.Add(-5 * time.Minute), 10.0 / 15},
		{"gone after the statistics", at.Add(-time.Hour), at.Add(time.Minute), 1},
		{"gone before the window", at.Add(-time.Hour), at.Add(-20 * time.Minute), 0},
		// from at-6m to at-3m: 3 of 15.
		{"came and went within", at.Add(-6 * time.Minute), at.Add(-3 * time.Minute), 0.2},
	} {
		if got := presence(tc.from, tc.to, at, nodestats.DefaultWindow); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: presence %v, want %v", tc.name, got, tc.want)
		}
	}
}

// podEventsFunc is a framework.PodEvents that hands its handler to the test.
type podEventsFunc struct{ h *cache.ResourceEventHandler }

func (e podEventsFunc) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	*e.h = h
	return nil, nil
}

// boundAt is pod bound to node at t (its PodScheduled condition).
func boundAt(pod *corev1.Pod, node string, t time.Time) *corev1.Pod {
	pod.Spec.NodeName = node
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t)}}
	return pod
}

// TestNodeModel: a node is the sum of its pods' learned estimates. Pods of app shop/web request 1
// cpu and are learned at learnedRatio (2.0935) times it; the next one requests 3 cpu (6280m).
// The node has 16 cpu.
func TestNodeModel(t *testing.T) {
	stamp := learnedAt.Add(time.Hour)
	est := followerOf(t, 0.9, learnedShards(t, 10, 2))
	pod := webPod("web-new", "3", "1Gi")
	type agentKind struct {
		name  string
		model bool // the agent hears pod events: the node model
	}
	window := "" // the node's statistics-window annotation, when set
	run := func(t *testing.T, used string, pods []*corev1.Pod, gone []*corev1.Pod, statsRequested string, k agentKind) (v framework.Verdict, cpu measure) {
		t.Helper()
		annotations := ann{nodestats.MeanFreeCPU: used, nodestats.StdFreeCPU: "100", nodestats.StatisticsTimestamp: stamp.Format(time.RFC3339),
			nodestats.StatisticsRequestedCPU: statsRequested, nodestats.StatisticsRequestedMemory: "0"}
		if window != "" {
			annotations[nodestats.StatisticsWindow] = window
		}
		node := bigNode("n", annotations)
		node.ResourceVersion = "1"
		c := &indexedCluster{testCluster: testCluster{nodes: []*corev1.Node{node}, pods: append(append([]*corev1.Pod(nil), pods...), gone...)},
			generations: map[string]int64{}}
		c.touch("n")
		h := framework.NewHandle(nil)
		h.Cluster, h.NodePods = c, c
		var handler cache.ResourceEventHandler
		if k.model {
			h.PodEvents = podEventsFunc{&handler}
		}
		a, err := NewWithEstimator(config(func(c *Config) { c.Filter = FilterPod }), h, est)
		if err != nil {
			t.Fatal(err)
		}
		now := stamp.Add(2 * time.Minute)
		a.now = func() time.Time { return now }
		for _, p := range gone { // they leave after the statistics
			c.pods = c.pods[:len(c.pods)-1]
			c.touch("n")
			if handler != nil {
				handler.OnDelete(p)
			}
		}
		call := a.newCall(pod)
		a.placeSince(c.nodes, call)
		cpu, _, _ = a.measureNode(node, call)
		return extendertest.Must(a.filterOverload(context.Background(), pod, c.nodes))[0], cpu
	}
	web := func(name string, at time.Time) *corev1.Pod { return boundAt(webPod(name, "1", "1Gi"), "n", at) }
	learned := 1000 * learnedRatio // 2093.5m

	t.Run("replicas just placed count at their estimate", func(t *testing.T) {
		// Four replicas bound 90s before the statistics: the window (15m) held a tenth of each.
		// Statistics: 2000m used. Model: 2000 + 4 × round(0.9 × 2093.5) + 6280 = 2000 + 4 × 1884 +
		// 6280 = 15816 of 16000 (mu 0.99 > 0.90): rejected. Before the model the replicas were
		// in the statistics (bound before them): 2000 + 6280 = 8280 (mu 0.52) passes.
		var pods []*corev1.Pod
		for _, n := range []string{"web-1", "web-2", "web-3", "web-4"} {
			pods = append(pods, web(n, stamp.Add(-90*time.Second)))
		}
		v, cpu := run(t, "14000", pods, nil, "4000", agentKind{"model", true})
		wantPlaced := 4 * math.Round(0.9*learned)
		if v.Passes() || cpu.placed != wantPlaced || !closeTo(cpu.mu, (2000+wantPlaced+3000*learnedRatio)/16000) {
			t.Errorf("model: verdict %+v, placed %.0f, mu %.4f; want rejected, placed %.0f", v, cpu.placed, cpu.mu, wantPlaced)
		}
		if !strings.Contains(v.Reason, "node model: 4 pods beyond the statistics, 0 gone, add 7536m") {
			t.Errorf("model: reason %q", v.Reason)
		}
		if v, cpu := run(t, "14000", pods, nil, "4000", agentKind{"before", false}); !v.Passes() || cpu.placed != 0 {
			t.Errorf("before the model: verdict %+v, placed %.0f; want passes, 0", v, cpu.placed)
		}
	})
	t.Run("replicas gone leave at their estimate", func(t *testing.T) {
		// Four replicas there for the whole window leave after it: 10000m used by the
		// statistics (4000 of them by the replicas' request, 8374 by their estimate). Model:
		// 10000 - 4 × 2093.5 (8374, rounded per pod 4 × 2094 = 8376) + 6280 = 7904 (mu 0.49):
		// passes. Before the model, in growth mode, the requests that left (4000) counted off
		// no more than the growth (at least 0): 10000 + 6280 = 16280 (mu 1): rejected.
		var gone []*corev1.Pod
		for _, n := range []string{"web-1", "web-2", "web-3", "web-4"} {
			gone = append(gone, web(n, stamp.Add(-time.Hour)))
		}
		v, cpu := run(t, "6000", nil, gone, "4000", agentKind{"model", true})
		wantPlaced := -4 * math.Round(learned)
		if !v.Passes() || cpu.placed != wantPlaced {
			t.Errorf("model: verdict %+v, placed %.0f; want passes, placed %.0f", v, cpu.placed, wantPlaced)
		}
		if v, _ := run(t, "6000", nil, gone, "4000", agentKind{"before", false}); v.Passes() {
			t.Errorf("before the model: verdict %+v; want rejected", v)
		}
	})
	t.Run("the window is the node's statistics-window", func(t *testing.T) {
		// Four replicas bound 90s before statistics over 60s (a lab's time-compressed window, or
		// an annotator's STATS_WINDOW=1m): the statistics held all of each, the model adds none.
		// Read against the default 15m they would add 4 × 1884m, as in the first case.
		window = "60"
		defer func() { window = "" }()
		var pods []*corev1.Pod
		for _, n := range []string{"web-1", "web-2", "web-3", "web-4"} {
			pods = append(pods, web(n, stamp.Add(-90*time.Second)))
		}
		if v, cpu := run(t, "14000", pods, nil, "4000", agentKind{"model", true}); !v.Passes() || cpu.placed != 0 {
			t.Errorf("verdict %+v, placed %.0f; want passes, 0", v, cpu.placed)
		}
		// Bound 30s before: half of the 60s window missed each.
		pods = pods[:0]
		for _, n := range []string{"web-1", "web-2", "web-3", "web-4"} {
			pods = append(pods, web(n, stamp.Add(-30*time.Second)))
		}
		if _, cpu := run(t, "14000", pods, nil, "4000", agentKind{"model", true}); cpu.placed != 4*math.Round(0.5*learned) {
			t.Errorf("placed %.0f, want %.0f", cpu.placed, 4*math.Round(0.5*learned))
		}
	})
	t.Run("a pod there all window adds nothing", func(t *testing.T) {
		pods := []*corev1.Pod{web("web-1", stamp.Add(-time.Hour))}
		if _, cpu := run(t, "14000", pods, nil, "1000", agentKind{"model", true}); cpu.placed != 0 || cpu.placedPods != 0 {
			t.Errorf("placed %.0f by %d pods, want 0", cpu.placed, cpu.placedPods)
		}
	})
}

// TestDeparturesBounded: departures older than keep are dropped, and a terminated pod departs.
func TestDeparturesBounded(t *testing.T) {
	now := learnedAt
	d := newDepartures(time.Hour, func() time.Time { return now })
	h := d.handler()
	p := boundAt(webPod("a", "1", "1Gi"), "n", now.Add(-2*time.Hour))
	h.OnDelete(p)
	if l, seq := d.on("n"); len(l) != 1 || seq == 0 {
		t.Fatalf("after a delete: %d departures, seq %d", len(l), seq)
	}
	now = now.Add(2 * time.Hour)
	done := p.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	h.OnUpdate(p, done)
	h.OnDelete(cache.DeletedFinalStateUnknown{Obj: done}) // terminated already: no second departure
	if l, _ := d.on("n"); len(l) != 1 || !l[0].left.Equal(now) {
		t.Fatalf("after the first aged out and a termination: %+v", l)
	}
}

// TestExplainContributors: explain names what the model projects a node at and its largest
// contributors. Four web replicas (learned 2093.5m each) bound 90s before statistics of 2000m
// used: projected 2000 + 4 × 1884 = 9536m; the replicas' estimates sum 8374m, the residual
// 1162m.
func TestExplainContributors(t *testing.T) {
	stamp := learnedAt.Add(time.Hour)
	node := bigNode("n", ann{nodestats.MeanFreeCPU: "14000", nodestats.StdFreeCPU: "100", nodestats.StatisticsTimestamp: stamp.Format(time.RFC3339)})
	node.ResourceVersion = "1"
	c := &indexedCluster{testCluster: testCluster{nodes: []*corev1.Node{node}}, generations: map[string]int64{}}
	for _, n := range []string{"web-1", "web-2", "web-3", "web-4"} {
		c.pods = append(c.pods, boundAt(webPod(n, "1", "1Gi"), "n", stamp.Add(-90*time.Second)))
	}
	c.pods = append(c.pods, boundAt(fixtures.MakePod().Name("plain").Container("c", "", fixtures.Res{corev1.ResourceCPU: "500m"}).Obj(), "n", stamp.Add(-90*time.Second)))
	c.touch("n")
	h := framework.NewHandle(nil)
	h.Cluster, h.NodePods = c, c
	var handler cache.ResourceEventHandler
	h.PodEvents = podEventsFunc{&handler}
	a, err := NewWithEstimator(config(func(c *Config) { c.Filter = FilterPod }), h, followerOf(t, 0.9, learnedShards(t, 10, 2)))
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return stamp.Add(time.Minute) }
	in := a.Explain(context.Background(), "predicates", FilterOverload, webPod("next", "1", "1Gi"), c.nodes)
	// + the plain pod: 0.9 × 500 = 450: projected 9986m; estimates 8874m; residual 1112m.
	want := "n projected 10.0 of 16.0 cpu: app/shop/web x4 (p90 2.1 each), 1 pods at their request (0.5 each), residual 1.1"
	if got := in[0]["projected"]; got != want {
		t.Errorf("projected %q, want %q", got, want)
	}
}

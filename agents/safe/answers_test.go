package safe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// byChunks judges nodes as plugin mode judges an adaptive filter: a.Filters()'s ForList over
// the whole list, then the returned function on chunks of random sizes in random order.
func byChunks(t *testing.T, r *rand.Rand, a *Agent, pod *corev1.Pod, nodes []*corev1.Node) []framework.Verdict {
	t.Helper()
	f := a.Filters()[0]
	if !f.WholeList || f.ForList == nil {
		t.Fatalf("the adaptive filter offers no ForList: %+v", f)
	}
	fn := extendertest.Must(f.ForList(context.Background(), pod, nodes))
	var bounds []int
	for lo := 0; lo < len(nodes); {
		bounds = append(bounds, lo)
		lo += 1 + r.IntN(4)
	}
	out := make([]framework.Verdict, len(nodes))
	for _, k := range r.Perm(len(bounds)) {
		lo := bounds[k]
		hi := len(nodes)
		if k+1 < len(bounds) {
			hi = bounds[k+1]
		}
		copy(out[lo:hi], extendertest.Must(fn(context.Background(), pod, nodes[lo:hi])))
	}
	return out
}

// r2 is a generator of its own for one step (the test's is not safe for concurrent use).
func r2(iter, step int) *rand.Rand { return rand.New(rand.NewPCG(uint64(iter), uint64(step))) }

// The answers remembered per node version (nodeEntry) are the answers of an agent that
// remembers none: random clusters (nodes with and without statistics, with fresh, old, missing
// and unreadable timestamps, with and without the annotator's statistics-requested-*), then
// random sequences of placements, removals, statistics refreshes and clock steps (statistics
// turning stale), each followed by the filter and both priorities on a random subset of the
// nodes for a pod of one of a few sizes (so that answers come back from the memo), by one agent
// that lives through the whole sequence, two calls at once, against a new agent for each call.
// Agents with the cluster through NodePods (plugin mode, the extender's cache) and without
// cluster access; every filter mode, both stale policies and placed modes.
func TestAnswersMatchFresh(t *testing.T) {
	start := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(26, 2311))
	demands := []fixtures.Res{
		{corev1.ResourceCPU: "100m", corev1.ResourceMemory: "128Mi"},
		{corev1.ResourceCPU: "2", corev1.ResourceMemory: "8Gi"},
		{corev1.ResourceCPU: "9", corev1.ResourceMemory: "40Gi"}, // large: the adaptive filter's fallback
	}
	remembered := 0 // answers whose memo held the call's key before the call
	for iter := range 120 {
		now := start
		cfg := DefaultConfig()
		cfg.PlacedShare = []int{0, 50, 100, 333}[r.IntN(4)]
		cfg.Filter = []FilterMode{FilterAdaptive, FilterNode, FilterPod, FilterOff}[r.IntN(4)]
		cfg.Stale = []StalePolicy{StaleIgnore, StaleReject}[r.IntN(2)]
		cfg.Placed = []PlacedMode{PlacedGrowth, PlacedArrivals}[r.IntN(2)]
		cfg.BalanceScale = []BalanceScale{BalanceAbsolute, BalanceRelative}[r.IntN(2)]
		cfg.MaxStatsAge = []framework.Duration{0, framework.Duration(time.Hour), framework.Duration(20 * time.Minute)}[r.IntN(3)]
		withCluster := r.IntN(4) > 0

		c := &indexedCluster{generations: map[string]int64{}}
		rv := 0
		statNode := func(i int) *corev1.Node {
			rv++
			annotations := map[string]string{}
			switch k := r.IntN(8); {
			case k == 0: // no statistics
			case k == 1:
				annotations = fixtures.UsageStatistics(i+iter*100+rv, 16000, 64<<30, now)
				annotations[nodestats.StatisticsTimestamp] = "yesterday"
			case k == 2:
				annotations = fixtures.UsageStatistics(i+iter*100+rv, 16000, 64<<30, now)
				delete(annotations, nodestats.StatisticsTimestamp)
			default: // statistics from 0 to 30 minutes ago
				annotations = fixtures.UsageStatistics(i+iter*100+rv, 16000, 64<<30, now.Add(-time.Duration(r.IntN(30))*time.Minute))
			}
			randomRequested(r, annotations)
			n := bigNode(fmt.Sprintf("n%d", i), annotations)
			if r.IntN(10) > 0 {
				n.ResourceVersion = strconv.Itoa(rv)
			}
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
			var at time.Time
			if r.IntN(3) > 0 {
				at = now.Add(-time.Duration(r.IntN(60)) * time.Minute)
			}
			p := boundPod(fmt.Sprintf("p%d", podN), strconv.Itoa(100+r.IntN(4000))+"m", nodes[r.IntN(len(nodes))].Name, at)
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(strconv.Itoa(1+r.IntN(8)) + "Gi")
			return p
		}
		for range r.IntN(30) {
			p := newPod()
			c.pods = append(c.pods, p)
			c.touch(p.Spec.NodeName)
		}
		agent := func() *Agent {
			var a *Agent
			if withCluster {
				a = clusterAgent(t, cfg, c)
				a.pods = c
			} else {
				a = clusterAgent(t, cfg, nil)
			}
			a.now = func() time.Time { return now }
			return a
		}
		kept := agent()

		for step := range 30 {
			switch k := r.IntN(6); {
			case k == 0: // a placement
				p := newPod()
				c.pods = append(c.pods, p)
				c.touch(p.Spec.NodeName)
			case k == 1 && len(c.pods) > 0: // a removal
				i := r.IntN(len(c.pods))
				c.touch(c.pods[i].Spec.NodeName)
				c.pods = append(c.pods[:i:i], c.pods[i+1:]...)
			case k == 2: // the annotator refreshes a node's statistics
				i := r.IntN(len(nodes))
				nodes[i] = statNode(i)
			case k == 3: // time goes by: statistics age, some turn stale
				now = now.Add(time.Duration(r.IntN(15)) * time.Minute)
			}

			var subset []*corev1.Node
			for _, n := range nodes {
				if r.IntN(4) > 0 {
					subset = append(subset, n)
				}
			}
			pod := fixtures.MakePod().Name("incoming").Namespace("default").Container("c", "", demands[r.IntN(len(demands))]).Obj()
			d := podDemand(pod)
			for _, n := range subset {
				if e := kept.entry(n); n.ResourceVersion != "" {
					if p := kept.prepare(n, e, &call{d: d, now: now}, true, -1); p != nil && p.class(classKey{d: d}).scores[overloadSlot].Load() != nil {
						remembered++
					}
				}
			}
			ctx := context.Background()
			what := fmt.Sprintf("cluster %d step %d (%+v, cluster %v)", iter, step, cfg, withCluster)
			fresh := agent()
			wantVerdicts := extendertest.Must(fresh.filterOverload(ctx, pod, subset))
			wantOverload, wantBalance := scores(t, fresh, pod, subset)
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					if diff := cmp.Diff(wantVerdicts, extendertest.Must(kept.filterOverload(ctx, pod, subset))); diff != "" {
						t.Errorf("%s: filter verdicts differ (-fresh +kept):\n%s", what, diff)
					}
					if cfg.Filter == FilterAdaptive { // plugin mode: ForList, then chunks in any order
						if diff := cmp.Diff(wantVerdicts, byChunks(t, r2(iter, step), kept, pod, subset)); diff != "" {
							t.Errorf("%s: ForList's verdicts differ (-whole list +chunks):\n%s", what, diff)
						}
					}
					overload, balance := scores(t, kept, pod, subset)
					if diff := cmp.Diff(wantOverload, overload); diff != "" {
						t.Errorf("%s: safe-overload scores differ (-fresh +kept):\n%s", what, diff)
					}
					if diff := cmp.Diff(wantBalance, balance); diff != "" {
						t.Errorf("%s: safe-balance scores differ (-fresh +kept):\n%s", what, diff)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
		}
	}
	if remembered < 1000 {
		t.Errorf("only %d answers came from the memo: the test does not exercise it", remembered)
	}
}

// randomRequested gives half the nodes the requests their statistics were taken at and a third
// the annotator's current requests, as the annotator writes them.
func randomRequested(r *rand.Rand, annotations map[string]string) {
	if r.IntN(2) == 0 {
		annotations[nodestats.StatisticsRequestedCPU] = strconv.Itoa(r.IntN(8000))
		annotations[nodestats.StatisticsRequestedMemory] = strconv.Itoa(r.IntN(32) << 30)
	}
	if r.IntN(3) == 0 {
		annotations[nodestats.RequestedCPU] = strconv.Itoa(r.IntN(16000))
		annotations[nodestats.RequestedMemory] = strconv.Itoa(r.IntN(64) << 30)
	}
}

package safe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// workloadEstimator is a learned estimator over workloads (the pod's label app): a pod of a
// trusted workload is estimated at its ratio times its request, any other at its request. The
// ratios change between calls (learn), which moves Version; the evidence names the version,
// so a reason written before a change differs from one written after.
type workloadEstimator struct {
	ratios  atomic.Pointer[map[string]float64]
	version atomic.Uint64
}

func (w *workloadEstimator) learn(ratios map[string]float64) {
	w.ratios.Store(&ratios)
	w.version.Add(1)
}

func (w *workloadEstimator) Estimate(pod *corev1.Pod) Estimate {
	e := requestEstimator{}.Estimate(pod)
	ratio, ok := (*w.ratios.Load())[pod.Labels["app"]]
	if !ok {
		return e
	}
	e.CPU, e.Memory, e.Learned, e.Source = math.Round(ratio*e.CPU), math.Round(ratio*e.Memory), true, "app default/"+pod.Labels["app"]
	return e
}

func (w *workloadEstimator) Evidence(pod *corev1.Pod) string {
	return fmt.Sprintf("ratio %g of app %s at version %d", (*w.ratios.Load())[pod.Labels["app"]], pod.Labels["app"], w.version.Load())
}

func (w *workloadEstimator) Version() uint64 { return w.version.Load() }

// nearThreshold returns the free amount and spread of a resource of capacity whose risk with
// a demand of up to a tenth of capacity lies about the acceptable risk E (defaults): used near
// 0.8-0.9 of capacity with spreads of 2-6 %, as the annotator writes them (FormatAmount).
func nearThreshold(r *rand.Rand, capacity float64) (free, std string) {
	used := 0.72 + 0.2*r.Float64()
	return nodestats.FormatAmount((1 - used) * capacity), nodestats.FormatAmount((0.02 + 0.04*r.Float64()) * capacity)
}

// The answers of nodes prepared for every pod (prepare, answers.go) are exactly the per-pod
// computation's (judgeOne, scoreOne, run by an agent that remembers nothing between calls):
// random clusters of nodes carrying an annotator's statistics (fixtures.UsageStatistics, a fifth
// near the thresholds) and nodes placed within a few percent of where the risk crosses E, with
// and without statistics, with fresh, old, missing and unreadable timestamps, the annotator's
// statistics-requested-* and requested-*; then random placements, removals, statistics
// refreshes, clock steps and changes of the learned estimates, each followed by the filter's
// verdicts (with the pod's demand and without) and the three scores on a random subset of the
// nodes, for pods of a few workloads (learned estimates, learned or not) and requests, by one
// agent that lives through the whole sequence, two calls at once. Verdicts (reasons included)
// and scores are compared exactly; every configuration that changes an answer varies.
func TestPreparedAnswersArePerPodAnswers(t *testing.T) {
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(35, 2711))
	requests := [][2]string{{"100m", "128Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"2", "4Gi"}, {"4", "12Gi"}, {"9", "40Gi"}}
	apps := []string{"", "web", "batch", "cache"}
	var prepared, rejected, learnedRejected int // answers that came prepared; rejections checked
	for iter := range 80 {
		now := start
		cfg := DefaultConfig()
		cfg.PlacedShare = []int{0, 50, 100, 333}[r.IntN(4)]
		cfg.Filter = []FilterMode{FilterAdaptive, FilterNode, FilterPod, FilterOff}[r.IntN(4)]
		cfg.Stale = []StalePolicy{StaleIgnore, StaleReject}[r.IntN(2)]
		cfg.Placed = []PlacedMode{PlacedGrowth, PlacedArrivals}[r.IntN(2)]
		cfg.MaxStatsAge = []framework.Duration{0, framework.Duration(time.Hour), framework.Duration(20 * time.Minute)}[r.IntN(3)]
		cfg.Utilization = []int{90, 80, 95}[r.IntN(3)]
		cfg.Percentile = []int{30, 10, 5}[r.IntN(3)]
		withCluster := r.IntN(5) > 0
		learned := r.IntN(3) > 0
		est := &workloadEstimator{}
		est.learn(map[string]float64{"web": 1.3, "batch": 1, "cache": 1.3}) // equal estimates of two workloads, and the request's

		c := &indexedCluster{generations: map[string]int64{}}
		rv := 0
		statNode := func(i int) *corev1.Node {
			rv++
			at := now.Add(-time.Duration(r.IntN(30)) * time.Minute)
			annotations := fixtures.UsageStatistics(i+iter*1000+rv, 16000, 64<<30, at)
			switch k := r.IntN(10); {
			case k == 0:
				annotations = map[string]string{}
			case k == 1:
				annotations[nodestats.StatisticsTimestamp] = "yesterday"
			case k == 2:
				delete(annotations, nodestats.StatisticsTimestamp)
			case k < 6:
				annotations[nodestats.MeanFreeCPU], annotations[nodestats.StdFreeCPU] = nearThreshold(r, 16000)
				annotations[nodestats.MeanFreeMemory], annotations[nodestats.StdFreeMemory] = nearThreshold(r, 64<<30)
				if r.IntN(2) == 0 {
					delete(annotations, nodestats.ForcastedFreeCPU)
				}
			}
			randomRequested(r, annotations)
			n := bigNode(fmt.Sprintf("n%d", i), annotations)
			if r.IntN(12) > 0 {
				n.ResourceVersion = strconv.Itoa(rv)
			}
			return n
		}
		nodes := make([]*corev1.Node, 4+r.IntN(12))
		for i := range nodes {
			nodes[i] = statNode(i)
		}
		c.nodes = nodes
		podN := 0
		newPod := func(node string) *corev1.Pod {
			podN++
			q := requests[r.IntN(len(requests))]
			p := boundPod(fmt.Sprintf("p%d", podN), q[0], node, time.Time{})
			if node != "" && r.IntN(3) > 0 {
				p = boundPod(p.Name, q[0], node, now.Add(-time.Duration(r.IntN(60))*time.Minute))
			}
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(q[1])
			if app := apps[r.IntN(len(apps))]; app != "" {
				p.Labels = map[string]string{"app": app}
			}
			return p
		}
		for range r.IntN(40) {
			p := newPod(nodes[r.IntN(len(nodes))].Name)
			c.pods = append(c.pods, p)
			c.touch(p.Spec.NodeName)
		}
		// The pods removed, and when: every agent hears them (the node model's departures), an
		// agent made later replayed them at their times.
		type removal struct {
			pod *corev1.Pod
			at  time.Time
		}
		var removals []removal
		var handlers []cache.ResourceEventHandler
		agent := func() *Agent {
			h := framework.NewHandle(nil)
			var events cache.ResourceEventHandler
			if withCluster {
				h.Cluster, h.NodePods = c, c
				h.PodEvents = podEventsFunc{&events}
			}
			var e Estimator = requestEstimator{}
			if learned {
				e = est
			}
			a, err := NewWithEstimator(cfg, h, e)
			if err != nil {
				t.Fatal(err)
			}
			if events != nil {
				handlers = append(handlers, events)
				for _, rm := range removals {
					a.now = func() time.Time { return rm.at }
					events.OnDelete(rm.pod)
				}
			}
			a.now = func() time.Time { return now }
			return a
		}
		kept := agent()
		// list is plugin mode's shared list of the nodes (framework.Positions), by which one of
		// the two callers below asks: rebuilt whenever a node changes (as the adapter does), and
		// now and then in another order or with one node more (positions shift, the list's
		// length changes).
		var list *testList
		relist := func() {
			l := &testList{c: c, nodes: slices.Clone(nodes)}
			if r.IntN(4) == 0 {
				r.Shuffle(len(l.nodes), func(i, j int) { l.nodes[i], l.nodes[j] = l.nodes[j], l.nodes[i] })
			}
			if r.IntN(4) == 0 {
				l.nodes = append(l.nodes, bigNode("extra", nil))
			}
			l.at = map[*corev1.Node]int32{}
			for i, n := range l.nodes {
				l.at[n] = int32(i)
			}
			list = l
		}
		relist()

		for step := range 40 {
			switch k := r.IntN(7); {
			case k == 0: // a placement
				p := newPod(nodes[r.IntN(len(nodes))].Name)
				c.pods = append(c.pods, p)
				c.touch(p.Spec.NodeName)
			case k == 1 && len(c.pods) > 0: // a removal
				i := r.IntN(len(c.pods))
				gone := c.pods[i]
				c.touch(gone.Spec.NodeName)
				c.pods = append(c.pods[:i:i], c.pods[i+1:]...)
				removals = append(removals, removal{gone, now})
				for _, h := range handlers {
					h.OnDelete(gone)
				}
			case k == 2: // the annotator refreshes a node's statistics
				i := r.IntN(len(nodes))
				nodes[i] = statNode(i)
				relist()
			case k == 3: // time goes by: statistics age, some turn stale
				now = now.Add(time.Duration(r.IntN(15)) * time.Minute)
			case k == 4: // the learner's store changes
				web := []float64{0.8 + r.Float64(), 1, 1.3}[r.IntN(3)]
				est.learn(map[string]float64{"web": web, "batch": []float64{1, web, 0.6}[r.IntN(3)], "cache": 1 + r.Float64()})
			case k == 5: // the scheduler's list changes (the same nodes)
				relist()
			case k == 6 && len(c.pods) > 0: // a pod's deletion heard before the scheduler's snapshot drops it
				gone := c.pods[r.IntN(len(c.pods))]
				removals = append(removals, removal{gone, now})
				for _, h := range handlers {
					h.OnDelete(gone)
				}
			}

			var subset []*corev1.Node
			for _, n := range nodes {
				if r.IntN(4) > 0 {
					subset = append(subset, n)
				}
			}
			pod := newPod("")
			for _, n := range subset { // prepared by an earlier call, for this one
				var generation int64
				if withCluster {
					generation = c.generations[n.Name]
				}
				if p := kept.entry(n).prepared.Load(); p != nil && p.generation == generation && p.departures == kept.departed.seqOf(n.Name) && p.version == kept.estimator.Version() {
					prepared++
				}
			}
			what := fmt.Sprintf("cluster %d step %d (%+v, cluster %v, learned %v)", iter, step, cfg, withCluster, learned)

			// The reference: an agent that remembers nothing, judging node by node.
			fresh := agent()
			rc := fresh.newCall(pod)
			fresh.placeSince(subset, rc)
			want := map[string][]any{}
			podDemand := rc.d
			for _, d := range []demand{podDemand, {}} {
				rc.d = d
				for _, n := range subset {
					v, _, _ := fresh.judgeOne(n, &fresh.entry(n).in, rc)
					want["filter"+fmt.Sprint(d)] = append(want["filter"+fmt.Sprint(d)], v)
					if !v.Passes() {
						rejected++
						if rc.learned && d != (demand{}) {
							learnedRejected++
						}
					}
				}
			}
			rc.d = podDemand
			for slot, of := range []scorer{overloadScorer, balanceScorer, fineBalanceScorer} {
				for _, n := range subset {
					s, has, _, _ := fresh.scoreOne(n, &fresh.entry(n).in, rc, of)
					want[fmt.Sprint("score", slot)] = append(want[fmt.Sprint("score", slot)], s, has)
				}
			}

			var wg sync.WaitGroup
			at := make([]int32, len(subset))
			for i, n := range subset {
				at[i] = list.at[n]
			}
			for caller := range 2 {
				wg.Go(func() {
					ctx := t.Context()
					kc := kept.newCall(pod)
					var pos []int32
					if caller == 1 { // by position in the shared list
						ctx = framework.WithPositions(ctx, &framework.Positions{List: list, At: at})
						pos = kc.positioned(ctx, subset)
					}
					kept.placeSince(subset, kc)
					got := map[string][]any{}
					for _, d := range []demand{kc.d, {}} {
						kc.d = d
						out := make([]framework.Verdict, len(subset))
						kept.judgeNodes(pod, subset, pos, kc, out)
						for _, v := range out {
							got["filter"+fmt.Sprint(d)] = append(got["filter"+fmt.Sprint(d)], v)
						}
					}
					for slot, of := range []scorer{overloadScorer, balanceScorer, fineBalanceScorer} {
						has := make([]bool, len(subset))
						for i, s := range kept.score(ctx, "test", slot, pod, subset, of, has) {
							got[fmt.Sprint("score", slot)] = append(got[fmt.Sprint("score", slot)], s, has[i])
						}
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s, caller %d: prepared answers differ (-per pod +prepared):\n%s", what, caller, diff)
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
		}
	}
	t.Logf("%d answers from prepared nodes, %d rejections (%d of a learned estimate) compared", prepared, rejected, learnedRejected)
	if prepared < 5000 || rejected < 1000 || learnedRejected < 100 {
		t.Errorf("%d answers from prepared nodes, %d rejections, %d of a learned estimate: the test does not exercise them", prepared, rejected, learnedRejected)
	}
}

// testList is plugin mode's shared list of nodes (framework.NodeList) over a test's nodes, the
// generations of their pods read from the cluster c.
type testList struct {
	c     *indexedCluster
	nodes []*corev1.Node
	at    map[*corev1.Node]int32
}

func (l *testList) Len() int                     { return len(l.nodes) }
func (l *testList) Node(i int) *corev1.Node      { return l.nodes[i] }
func (l *testList) PodsGenerationAt(i int) int64 { return l.c.PodsGeneration(l.nodes[i].Name) }

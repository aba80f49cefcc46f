package adapter_test

import (
	"context"
	"fmt"
	"maps"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
)

// BenchmarkPluginsPerPod measures what the plugins add to one pod's scheduling cycle, in
// process: PreFilter, the framework's Filter node by node (sequentially here) from where the
// last pod stopped until the scheduler's number of feasible nodes to find is reached (as
// kube-scheduler does with percentageOfNodesToScore unset), then PreScore and Score on those, for the plugin sets of bench-e2e's
// plugins modes (and the functions of the first and the third in the one plugin agents). Realistic nodes (fixtures) carrying usage statistics as an annotator writes
// them (fixtures.UsageStatistics) and congestion, 8 pods bound on each (for pigeon's
// allocation). The +decisions set keeps the last 1000 decisions, with what each agent saw
// (kube-safe-scheduler's DECISIONS_KEPT): their cost. Two reference sets: noop, a plugin at the
// same extension points that does nothing (the framework's cost of any one plugin), and none.
func BenchmarkPluginsPerPod(b *testing.B) {
	now := time.Now()
	for _, n := range []int{500, 2000, 5000} {
		nodes := benchNodes(n, now)
		pods := boundPods(nodes, now)
		for _, set := range []struct {
			name, plugins string
			decisions     bool // the adapter keeps decisions (DECISIONS_KEPT)
		}{
			{"safe-overload+congestion", "multiPoint:\n  enabled:\n  - name: safe-overload\n  - name: congestion\n", false},
			{"safe-overload+congestion+decisions", "multiPoint:\n  enabled:\n  - name: safe-overload\n  - name: congestion\n", true},
			{"safe-overload+congestion+pigeon-holing", "multiPoint:\n  enabled:\n  - name: safe-overload\n  - name: congestion\n  - name: pigeon-holing\n", false},
			// The same functions in one plugin, agents (weights 1 each, the plugin's their sum).
			{"agents(safe-overload+congestion)", "multiPoint:\n  enabled:\n  - name: agents\n    weight: 2\n", false},
			// With pigeon-holing too, in the one plugin: the framework charges one plugin, not three.
			{"agents(safe-overload+congestion+pigeon-holing)", "multiPoint:\n  enabled:\n  - name: agents\n    weight: 3\n", false},
			// A plugin at the same extension points that does nothing: what the framework
			// charges any one plugin, the floor under agents(...).
			{"noop", "multiPoint:\n  enabled:\n  - name: noop\n", false},
			// No plugin at all: the framework's loops and this benchmark's own work (a pod, a
			// cycle state), which every set above includes.
			{"none", "multiPoint: {}\n", false},
		} {
			b.Run(fmt.Sprintf("%s/nodes=%d", set.name, n), func(b *testing.B) {
				a := newAdapter(b, agents.All...)
				if set.decisions {
					a.KeepDecisions(decisions.Config{Kept: 1000, InputsBytes: decisions.DefaultInputsBytes})
				}
				args := ""
				if fns, ok := strings.CutPrefix(set.name, "agents("); ok {
					args = "- name: agents\n  args:\n    functions: [{name: " + strings.ReplaceAll(strings.TrimSuffix(fns, ")"), "+", "}, {name: ") + "}]\n"
				}
				perPodCycles(b, a, profileYAML(set.plugins, args), nodes, pods, nil)
			})
		}
	}
}

// boundPods are 8 pods bound on each node (for pigeon's allocation, and safe's node model),
// bound at times that the node model weighs every way against the statistics' window
// (benchWindow, ending at now): 4 before the window (wholly in the statistics: they add
// nothing), 2 within it (they add the part the window missed), 1 with no PodScheduled time
// (counted whole, as a pod just bound), and 1 after the statistics (counted whole).
func boundPods(nodes []*corev1.Node, now time.Time) []*corev1.Pod {
	var pods []*corev1.Pod
	for i, node := range nodes {
		for k := range 8 {
			p := fixtures.Pod(fmt.Sprintf("bound-%d-%d", i, k), "100m", "128Mi")
			p.Spec.NodeName = node.Name
			var at time.Time
			switch {
			case k < 4:
				at = now.Add(-2 * benchWindow)
			case k < 6:
				at = now.Add(-benchWindow * time.Duration(k-3) / 3)
			case k == 7:
				at = now.Add(time.Minute)
			}
			if !at.IsZero() {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
			}
			pods = append(pods, p)
		}
	}
	return pods
}

// benchWindow is the benchmark nodes' statistics window (nodestats.StatisticsWindow).
const benchWindow = 15 * time.Minute

// withPodEvents returns the framework option that gives the agents the scheduler's pod events,
// as kube-scheduler's shared informer factory does (safe's node model is on only with them), and
// depart, which (once the framework is built, its agents listening) makes one pod gone from every
// departedEvery-th node within the statistics' window, delivered to every handler as the pod
// informer delivers a deletion (the informer is not run: its handlers are called). model says
// that the plugins include safe's: then some handler must listen.
func withPodEvents(b *testing.B, pods []*corev1.Pod, model bool) (opt frameworkruntime.Option, depart func()) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	informer := &handlersInformer{SharedIndexInformer: cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{})}
	factory.InformerFor(&corev1.Pod{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return informer })
	return frameworkruntime.WithInformerFactory(factory), func() {
		if model && len(informer.handlers) == 0 {
			b.Fatal("no agent listens to pod events: the node model is off")
		}
		for i, p := range pods {
			if i%(8*departedEvery) != 0 {
				continue
			}
			gone := p.DeepCopy()
			gone.Name += "-gone"
			gone.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-benchWindow / 2))}}
			for _, h := range informer.handlers {
				h.OnDelete(gone)
			}
		}
	}
}

// handlersInformer is a pod informer that keeps the handlers added to it, for withPodEvents.
type handlersInformer struct {
	cache.SharedIndexInformer
	handlers []cache.ResourceEventHandler
}

func (i *handlersInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handlers = append(i.handlers, h)
	return nil, nil
}

// departedEvery: one node in departedEvery has a pod gone within its statistics' window.
const departedEvery = 4

// perPodCycles runs BenchmarkPluginsPerPod's cycle for each pod of the loop, calling update (if
// not nil) before each with the pod's number and the snapshot's nodes.
func perPodCycles(b *testing.B, a *adapter.Adapter, cfg string, nodes []*corev1.Node, pods []*corev1.Pod, update func(i int, infos []fwk.NodeInfo)) {
	events, depart := withPodEvents(b, pods, strings.Contains(cfg, "safe-overload"))
	fw, snap, err := newFramework(b, a, cfg, nodes, pods, events)
	if err != nil {
		b.Fatal(err)
	}
	depart()
	goruntime.GC() // the setup's garbage is not the cycles' CPU
	infos, _ := snap.NodeInfos().List()
	toFind := feasibleToFind(len(infos))
	start := 0
	b.ReportAllocs()
	cpu0 := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; b.Loop(); i++ {
		if update != nil {
			update(i, infos)
		}
		pod := fixtures.Pod(fmt.Sprintf("p-%d", i), "100m", "128Mi")
		state := schedframework.NewCycleState()
		if _, s, _ := fw.RunPreFilterPlugins(b.Context(), state, pod); !s.IsSuccess() {
			b.Fatal(s)
		}
		var feasible []fwk.NodeInfo
		feasible, start = findFeasible(b, fw, state, pod, infos, start, toFind)
		if s := fw.RunPreScorePlugins(b.Context(), state, pod, feasible); !s.IsSuccess() {
			b.Fatal(s)
		}
		if _, s := fw.RunScorePlugins(b.Context(), state, pod, feasible); !s.IsSuccess() {
			b.Fatal(s)
		}
	}
}

// BenchmarkPluginsPerPodNodeUpdates is BenchmarkPluginsPerPod's cycle while nodes change, as
// they do under a node annotator rewriting each node's statistics every few minutes (at 5000
// nodes and 100 pods a second, about one node for every other pod): before every updateEvery-th
// pod, one node (in a fixed stride over the list) gets a new object and resourceVersion with
// its statistics rewritten, set in the snapshot's NodeInfo in place as kube-scheduler's cache
// does.
func BenchmarkPluginsPerPodNodeUpdates(b *testing.B) {
	now := time.Now()
	for _, n := range []int{2000, 5000} {
		nodes := benchNodes(n, now)
		pods := boundPods(nodes, now)
		for _, set := range []struct{ name, plugins, args string }{
			{"agents(safe-overload+congestion)", "multiPoint:\n  enabled:\n  - name: agents\n    weight: 2\n",
				"- name: agents\n  args:\n    functions: [{name: safe-overload}, {name: congestion}]\n"},
			{"agents(safe-overload+congestion+pigeon-holing)", "multiPoint:\n  enabled:\n  - name: agents\n    weight: 3\n",
				"- name: agents\n  args:\n    functions: [{name: safe-overload}, {name: congestion}, {name: pigeon-holing}]\n"},
			{"noop", "multiPoint:\n  enabled:\n  - name: noop\n", ""},
		} {
			for _, every := range []int{0, 2} {
				b.Run(fmt.Sprintf("%s/update-every=%d/nodes=%d", set.name, every, n), func(b *testing.B) {
					rv := len(nodes)
					update := func(i int, infos []fwk.NodeInfo) {
						if every == 0 || i%every != 0 {
							return
						}
						ni := infos[(i/every*7919)%len(infos)].(*schedframework.NodeInfo)
						node := ni.Node().DeepCopy()
						rv++
						node.ResourceVersion = strconv.Itoa(rv)
						maps.Copy(node.Annotations, fixtures.UsageStatistics(rv, 16000, 64<<30, time.Now()))
						ni.SetNode(node)
					}
					perPodCycles(b, newAdapter(b, agents.All...), profileYAML(set.plugins, set.args), nodes, pods, update)
				})
			}
		}
	}
}

// benchNodes are n realistic nodes (fixtures) carrying usage statistics as an annotator writes
// them (fixtures.UsageStatistics, with their window: benchWindow) and a congestion factor, each
// of its own resourceVersion.
func benchNodes(n int, now time.Time) []*corev1.Node {
	nodes := make([]*corev1.Node, 0, n)
	for i := range n {
		annotations := fixtures.UsageStatistics(i, 16000, 64<<30, now)
		annotations[nodestats.StatisticsWindow] = nodestats.FormatWindow(benchWindow)
		annotations["congestion-factor"] = strconv.Itoa((i * 37) % 100)
		node := fixtures.Node(i, annotations)
		node.ResourceVersion = strconv.Itoa(i + 1)
		nodes = append(nodes, &node)
	}
	return nodes
}

// findFeasible filters as the scheduler does: node by node from start, wrapping, until toFind
// feasible nodes are found or every node was asked. It returns them and where the next pod
// starts.
func findFeasible(b *testing.B, fw schedframework.Framework, state fwk.CycleState, pod *corev1.Pod, infos []fwk.NodeInfo, start, toFind int) ([]fwk.NodeInfo, int) {
	var feasible []fwk.NodeInfo
	k := 0
	for ; k < len(infos) && len(feasible) < toFind; k++ {
		ni := infos[(start+k)%len(infos)]
		s := fw.RunFilterPlugins(b.Context(), state, pod, ni)
		if s.Code() == fwk.Error {
			b.Fatal(s)
		}
		if s.IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	return feasible, (start + k) % len(infos)
}

// feasibleToFind is how many feasible nodes kube-scheduler looks for among n
// (numFeasibleNodesToFind with the adaptive percentage: 50 % - n/125, at least 5 %, at least
// 100 nodes).
func feasibleToFind(n int) int {
	if n < 100 {
		return n
	}
	pct := max(50-n/125, 5)
	return max(n*pct/100, 100)
}

// processCPU returns the user and system CPU time the process has used, in nanoseconds: on a
// shared machine the steady figure, where wall time per op waits for a CPU.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkPluginsPerPodBatched is BenchmarkPluginsPerPod's cycle with kube-scheduler's
// opportunistic batching, as schedule_one.go drives it, for identical pods (one signature): a
// pod gets the framework's node hint (the previous pod's sorted nodes, the node chosen last
// filtered and rescored again: PreScore over every cached candidate), and when the hinted node
// passes the filters again it is placed there without the cycle's Filter, PreScore and Score
// over the nodes; else (no hint: the first pod, a list used up, or older than 0.5 s) the whole
// cycle runs and its results are stored. The snapshot does not change (no pod is assumed): the
// cost of a hinted cycle, not where pods go. hinted/op is the share of pods placed on a hint.
func BenchmarkPluginsPerPodBatched(b *testing.B) {
	now := time.Now()
	for _, n := range []int{500, 2000} {
		nodes := benchNodes(n, now)
		for _, set := range []struct{ name, plugins, args string }{
			{"safe-overload+congestion", "multiPoint:\n  enabled:\n  - name: safe-overload\n  - name: congestion\n", ""},
			{"agents(safe-overload+congestion)", "multiPoint:\n  enabled:\n  - name: agents\n    weight: 2\n",
				"- name: agents\n  args:\n    functions: [{name: safe-overload}, {name: congestion}]\n"},
		} {
			for _, batched := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/batched=%t/nodes=%d", set.name, batched, n), func(b *testing.B) {
					fw, snap, err := newFramework(b, newAdapter(b, agents.All...), profileYAML(set.plugins, set.args), nodes, nil)
					if err != nil {
						b.Fatal(err)
					}
					infos, _ := snap.NodeInfos().List()
					toFind := feasibleToFind(len(infos))
					start, hinted := 0, 0
					cycle := func(pod *corev1.Pod, state fwk.CycleState) schedframework.SortedScoredNodes {
						var feasible []fwk.NodeInfo
						feasible, start = findFeasible(b, fw, state, pod, infos, start, toFind)
						if s := fw.RunPreScorePlugins(b.Context(), state, pod, feasible); !s.IsSuccess() {
							b.Fatal(s)
						}
						scores, s := fw.RunScorePlugins(b.Context(), state, pod, feasible)
						if !s.IsSuccess() {
							b.Fatal(s)
						}
						return schedframework.NewSortedScoredNodes(scores)
					}
					b.ReportAllocs()
					cpu0 := processCPU()
					defer func() {
						b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
						b.ReportMetric(float64(hinted)/float64(b.N), "hinted/op")
					}()
					for i := 0; b.Loop(); i++ {
						pod := fixtures.Pod(fmt.Sprintf("p-%d", i), "100m", "128Mi")
						var sig fwk.PodSignature
						if batched {
							sig = fw.SignPod(b.Context(), pod)
						}
						state := schedframework.NewCycleState()
						if _, s, _ := fw.RunPreFilterPlugins(b.Context(), state, pod); !s.IsSuccess() {
							b.Fatal(s)
						}
						hint := ""
						if batched {
							hint = fw.GetNodeHint(b.Context(), pod, sig, state, int64(i))
						}
						if hint != "" {
							ni, err := snap.NodeInfos().Get(hint)
							if err != nil {
								b.Fatal(err)
							}
							if fw.RunFilterPlugins(b.Context(), state, pod, ni).IsSuccess() {
								hinted++
								fw.StoreScheduleResults(b.Context(), sig, hint, hint, nil, int64(i))
								continue
							}
						}
						sorted := cycle(pod, state)
						chosen := sorted.Pop().Name
						if batched {
							fw.StoreScheduleResults(b.Context(), sig, hint, chosen, sorted, int64(i))
						}
					}
					if batched && hinted == 0 && b.N > 2 {
						b.Fatalf("no pod of %d placed on a hint: the plugins do not sign", b.N)
					}
				})
			}
		}
	}
}

// testRegistry holds the plugins newFramework adds to the in-tree ones and the adapter's.
var testRegistry = frameworkruntime.Registry{
	"noop": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return noopPlugin{}, nil },
}

// noopPlugin has the adapter's extension points (PreFilter, Filter, PreScore, Score) and does
// nothing at any: in BenchmarkPluginsPerPod, what kube-scheduler's framework costs per plugin
// per pod and per node, which no plugin's own work can go below.
type noopPlugin struct{}

func (noopPlugin) Name() string { return "noop" }
func (noopPlugin) PreFilter(context.Context, fwk.CycleState, *corev1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, nil
}
func (noopPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
func (noopPlugin) Filter(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) *fwk.Status {
	return nil
}
func (noopPlugin) PreScore(context.Context, fwk.CycleState, *corev1.Pod, []fwk.NodeInfo) *fwk.Status {
	return nil
}
func (noopPlugin) Score(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}
func (noopPlugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

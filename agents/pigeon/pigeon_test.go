package pigeon

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// --- builders ---

// config returns a valid configuration for n resources and the objective.
func config(n int, obj Objective) Config {
	return Config{NumResources: n, Objective: obj, GPUResource: "nvidia.com/gpu"}
}

func newAgent(t testing.TB, cfg Config, cluster framework.Cluster) *Agent {
	t.Helper()
	h := framework.NewHandle(nil)
	h.Cluster = cluster
	a, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// cpuNode returns a node of capacity millicores of cpu whose requested-cpu annotation says used.
func cpuNode(name string, capacity, used int) *corev1.Node {
	return fixtures.MakeNode().Name(name).Allocatable(fixtures.Res{corev1.ResourceCPU: strconv.Itoa(capacity) + "m"}).
		Annotation("requested-cpu", strconv.Itoa(used)).Obj()
}

// pod starts a pod of the given UID (the agent's key for a pod), named pod-<uid> in default;
// its Req adds the container with the requests.
func pod(uid string) *fixtures.PodWrapper {
	return fixtures.MakePod().Name("pod-" + uid).Namespace("default").UID(uid)
}

// cpuPod returns a pod of one container requesting milli millicores of cpu.
func cpuPod(uid string, milli int) *corev1.Pod {
	return pod(uid).Req(fixtures.Res{corev1.ResourceCPU: strconv.Itoa(milli) + "m"}).Obj()
}

// fakeCluster is a framework.Cluster over fixed objects. It is read-only once built, so safe
// for concurrent use.
type fakeCluster struct {
	synced    bool
	nodes     []*corev1.Node
	allocated map[string]framework.Amounts
	pods      []*corev1.Pod
	// byName, when set, indexes nodes for Node (large fakes).
	byName map[string]*corev1.Node
}

var _ framework.Cluster = (*fakeCluster)(nil)

func (f *fakeCluster) Node(name string) (*corev1.Node, bool) {
	if f.byName != nil {
		n, ok := f.byName[name]
		return n, ok
	}
	for _, n := range f.nodes {
		if n.Name == name {
			return n, true
		}
	}
	return nil, false
}
func (f *fakeCluster) HasSynced() bool       { return f.synced }
func (f *fakeCluster) Nodes() []*corev1.Node { return f.nodes }
func (f *fakeCluster) Pods() []*corev1.Pod   { return f.pods }
func (f *fakeCluster) Allocated(node string) framework.Amounts {
	if a, ok := f.allocated[node]; ok {
		return a
	}
	return framework.Amounts{}
}

func score(a *Agent, p *corev1.Pod, nodes ...*corev1.Node) []int64 {
	scores, err := a.Prioritizers()[0].Func(context.Background(), p, nodes)
	if err != nil {
		panic(err) // pigeon-holing reports no error
	}
	return scores
}

// --- tests ---

// Four nodes of 1000m cpu using 200m, 500m, 950m and 300m (utilizations 0.2, 0.5, 0.95, 0.3);
// a pod of 100m. It does not fit on C (950 + 100 > 1000). One resource (cpu).
func handCluster() []*corev1.Node {
	return []*corev1.Node{cpuNode("A", 1000, 200), cpuNode("B", 1000, 500), cpuNode("C", 1000, 950), cpuNode("D", 1000, 300)}
}

func TestLoadBalanceHandWorked(t *testing.T) {
	a := newAgent(t, config(1, LoadBalance), nil)
	// The mean after placement is (0.2+0.5+0.95+0.3+0.1)/4 = 0.5125 wherever the pod goes, and
	// mean^2 = 0.26265625. Mean of squares:
	//   on A: (0.09+0.25+0.9025+0.09)/4 = 0.333125, var 0.07046875, std 0.265460
	//   on B: (0.04+0.36+0.9025+0.09)/4 = 0.348125, var 0.08546875, std 0.292350
	//   on D: (0.04+0.25+0.9025+0.16)/4 = 0.338125, var 0.07546875, std 0.274716
	// vmin 0.265460 (A), vmax 0.292350 (B), span 0.026890:
	//   A 10, B 1, D round(1 + 9*(0.292350-0.274716)/0.026890) = round(6.90) = 7; C does not fit: 0.
	// The least utilized fitting node wins.
	got := score(a, cpuPod("p", 100), handCluster()...)
	if diff := cmp.Diff([]int64{10, 1, 0, 7}, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestConsolidateHandWorked(t *testing.T) {
	a := newAgent(t, config(1, Consolidate), nil)
	// a = 0.5125 after placement (see TestLoadBalanceHandWorked), 1 - a = 0.4875.
	// t = (a-x)/a below a, (x-a)/(1-a) above; 0.95 always gives 0.4375/0.4875 = 0.897436 (t^2 0.805391).
	//   on A, x = .3 .5 .95 .3: t^2 = 0.171921*2 + 0.000595 + 0.805391 = 1.149829, /4 = 0.287457,
	//         1 - sqrt = 0.463850
	//   on B, x = .2 .6 .95 .3: t^2 = 0.371803 + 0.032216 + 0.805391 + 0.171921 = 1.381331, /4 = 0.345333,
	//         1 - sqrt = 0.412350
	//   on D, x = .2 .5 .95 .4: t^2 = 0.371803 + 0.000595 + 0.805391 + 0.048185 = 1.225974, /4 = 0.306494,
	//         1 - sqrt = 0.446381
	// Smaller is better: B 10, A 1, D round(1 + 9*(0.463850-0.446381)/(0.463850-0.412350)) = round(4.05) = 4.
	// The most utilized fitting node wins (C, fuller still, does not fit: 0).
	got := score(a, cpuPod("p", 100), handCluster()...)
	if diff := cmp.Diff([]int64{1, 10, 0, 4}, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestFewestNodesHandWorked(t *testing.T) {
	a := newAgent(t, config(1, FewestNodes), nil)
	// handCluster's four nodes are in use; E is empty. A pod of 100m leaves 4 nodes in use on
	// A, B or D and 5 on E (C does not fit): A, B, D 10, E 1, C 0. The order among the nodes
	// in use is the scheduler's (MostAllocated, BalancedAllocation).
	nodes := append(handCluster(), cpuNode("E", 1000, 0))
	if diff := cmp.Diff([]int64{10, 10, 0, 10, 1}, score(a, cpuPod("p", 100), nodes...)); diff != "" {
		t.Errorf("100m: scores (-want +got):\n%s", diff)
	}
	// A pod of 900m fits only on E: it is the best (and only) fitting node.
	if diff := cmp.Diff([]int64{0, 0, 0, 0, 10}, score(a, cpuPod("q", 900), nodes...)); diff != "" {
		t.Errorf("900m: scores (-want +got):\n%s", diff)
	}
	// The same with E outside the system (a cluster cache without it): one more node in use.
	cl := &fakeCluster{synced: true, nodes: handCluster(), allocated: map[string]framework.Amounts{
		"A": {corev1.ResourceCPU: 200}, "B": {corev1.ResourceCPU: 500}, "C": {corev1.ResourceCPU: 950}, "D": {corev1.ResourceCPU: 300}}}
	if diff := cmp.Diff([]int64{10, 10, 0, 10, 1}, score(newAgent(t, config(1, FewestNodes), cl), cpuPod("r", 100), nodes...)); diff != "" {
		t.Errorf("100m, E outside the system: scores (-want +got):\n%s", diff)
	}
	// A node is in use when any considered resource is: memory alone counts (two resources).
	mem := func(name string, memMi int) *corev1.Node {
		return fixtures.MakeNode().Name(name).Allocatable(fixtures.Res{corev1.ResourceCPU: "10", corev1.ResourceMemory: "10000Mi"}).
			Annotations(map[string]string{"requested-cpu": "0", "requested-memory": strconv.Itoa(memMi << 20)}).Obj()
	}
	got := score(newAgent(t, config(2, FewestNodes), nil), cpuPod("s", 100), mem("X", 1000), mem("Y", 0))
	if diff := cmp.Diff([]int64{10, 1}, got); diff != "" {
		t.Errorf("memory in use: scores (-want +got):\n%s", diff)
	}
}

func TestBinpackAdaptsToDemand(t *testing.T) {
	// Two nodes of 1000m: A empty, B using 500m. A pod of 100m.
	//   on A: utilizations 0.1, 0.5: mean 0.3, std 0.2, c = 0.666667
	//   on B: utilizations 0.0, 0.6: mean 0.3, std 0.3, c = 1
	nodes := []*corev1.Node{cpuNode("A", 1000, 0), cpuNode("B", 1000, 500)}

	// The first pod ever seen: c(demand) = 0, so A_BINPACK minimizes c(system): A (0.667)
	// beats B (1). A stream of equal pods spreads.
	a := newAgent(t, config(1, ABinpack), nil)
	if diff := cmp.Diff([]int64{10, 1}, score(a, cpuPod("p3", 100), nodes...)); diff != "" {
		t.Errorf("uniform demand (-want +got):\n%s", diff)
	}

	// After pods of 100m and 700m: demands 100, 700, 100, normalized by the average capacity
	// 1000: mean 0.3, second moment (0.01+0.49+0.01)/3 = 0.17, variance 0.08,
	// c(demand) = sqrt(0.08)/0.3 = 0.942809.
	//   on A: |0.666667 - 0.942809| = 0.276142
	//   on B: |1        - 0.942809| = 0.057191   -> B wins: mixed demand packs.
	a = newAgent(t, config(1, ABinpack), nil)
	score(a, cpuPod("p1", 100), nodes...)
	score(a, cpuPod("p2", 700), nodes...)
	if diff := cmp.Diff([]int64{1, 10}, score(a, cpuPod("p3", 100), nodes...)); diff != "" {
		t.Errorf("mixed demand (-want +got):\n%s", diff)
	}
}

func TestBinpackTwoResources(t *testing.T) {
	// Two nodes of 1000m cpu and 1000 MiB; A empty, B using 500m and 500 MiB (in bytes in the
	// annotation). A first pod of 100m and 100 MiB: c(demand) = 0.
	//   on A: u = (0.1,0.1), (0.5,0.5): mu = (0.3,0.3), S = 0.04 everywhere,
	//         mu'S mu = 4*0.09*0.04 = 0.0144, sqrt 0.12, mu'mu = 0.18: c = 0.666667
	//   on B: u = (0,0), (0.6,0.6): S = 0.09 everywhere, mu'S mu = 0.0324, sqrt 0.18: c = 1
	// A 10, B 1.
	alloc := fixtures.Res{corev1.ResourceCPU: "1", corev1.ResourceMemory: "1000Mi"}
	nodes := []*corev1.Node{
		fixtures.MakeNode().Name("A").Allocatable(alloc).Obj(),
		fixtures.MakeNode().Name("B").Allocatable(alloc).
			Annotations(map[string]string{"requested-cpu": "500", "requested-memory": strconv.Itoa(500 << 20)}).Obj(),
	}
	a := newAgent(t, config(2, ABinpack), nil)
	p := pod("p").Req(fixtures.Res{corev1.ResourceCPU: "100m", corev1.ResourceMemory: "100Mi"}).Obj()
	if diff := cmp.Diff([]int64{10, 1}, score(a, p, nodes...)); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestNotFitting(t *testing.T) {
	// Memory is the second resource: with NUM_RESOURCES=2 a node short of memory scores 0;
	// with NUM_RESOURCES=1 only cpu is considered and it fits.
	nodes := []*corev1.Node{
		fixtures.MakeNode().Name("roomy").Allocatable(fixtures.Res{corev1.ResourceCPU: "4", corev1.ResourceMemory: "8Gi"}).Obj(),
		fixtures.MakeNode().Name("short").Allocatable(fixtures.Res{corev1.ResourceCPU: "4", corev1.ResourceMemory: "8Gi"}).
			Annotation("requested-memory", strconv.Itoa(7<<30)).Obj(),
	}
	p := pod("p").Req(fixtures.Res{corev1.ResourceCPU: "1", corev1.ResourceMemory: "2Gi"}).Obj()
	for _, obj := range []Objective{ABinpack, LoadBalance, Consolidate, FewestNodes} {
		// 2 GiB > 8 - 7 GiB: "short" does not fit; "roomy" is the only fitting node: 10.
		if diff := cmp.Diff([]int64{10, 0}, score(newAgent(t, config(2, obj), nil), p, nodes...)); diff != "" {
			t.Errorf("%s, 2 resources (-want +got):\n%s", obj, diff)
		}
		// cpu only: both fit, and both use no cpu, so every objective has equal values: 10, 10.
		if diff := cmp.Diff([]int64{10, 10}, score(newAgent(t, config(1, obj), nil), p, nodes...)); diff != "" {
			t.Errorf("%s, 1 resource (-want +got):\n%s", obj, diff)
		}
	}
	// A gpu pod and nodes without gpus: nothing fits, every score 0.
	gp := pod("g").Req(fixtures.Res{"nvidia.com/gpu": "1"}).Obj()
	if diff := cmp.Diff([]int64{0, 0}, score(newAgent(t, config(4, ABinpack), nil), gp, nodes...)); diff != "" {
		t.Errorf("gpu pod (-want +got):\n%s", diff)
	}
}

// Capacities are memoized per node version: a node resized under a new resourceVersion is
// scored with its new allocatable, by the same agent.
func TestResizedNodeIsReadAgain(t *testing.T) {
	a := newAgent(t, config(1, LoadBalance), nil)
	p := cpuPod("p", 1000)
	small := cpuNode("a", 4000, 3500)
	small.ResourceVersion = "1"
	other := cpuNode("b", 4000, 0)
	other.ResourceVersion = "1"
	// 1000m > 4000m - 3500m: "a" does not fit.
	if diff := cmp.Diff([]int64{0, 10}, score(a, p, small, other)); diff != "" {
		t.Fatalf("before the resize (-want +got):\n%s", diff)
	}
	grown := cpuNode("a", 8000, 3500)
	grown.ResourceVersion = "2"
	if got := score(a, cpuPod("q", 1000), grown, other); got[0] == 0 {
		t.Fatalf("after the resize %v: node a was scored with its old allocatable", got)
	}
}

func TestClusterSystem(t *testing.T) {
	// The cache holds A (1000m, 200m allocated), B (1000m, 600m) and U (1000m, empty, but
	// cordoned: not part of the system). The request offers A and X, a node the cache does not
	// hold (1000m, nothing allocated). The annotations lie and must be ignored.
	liar := map[string]string{"requested-cpu": "900"}
	oneCPU := fixtures.Res{corev1.ResourceCPU: "1"}
	A := fixtures.MakeNode().Name("A").Allocatable(oneCPU).Annotations(liar).Obj()
	B := fixtures.MakeNode().Name("B").Allocatable(oneCPU).Annotations(liar).Obj()
	U := fixtures.MakeNode().Name("U").Allocatable(oneCPU).Obj()
	U.Spec.Unschedulable = true
	X := fixtures.MakeNode().Name("X").Allocatable(oneCPU).Annotations(liar).Obj()
	c := &fakeCluster{synced: true, nodes: []*corev1.Node{A, B, U}, allocated: map[string]framework.Amounts{
		"A": {corev1.ResourceCPU: 200}, "B": {corev1.ResourceCPU: 600},
	}}
	// LOAD_BALANCE, a pod of 100m; the system is {A 0.2, B 0.6}:
	//   on A: {0.3, 0.6}:        std 0.15
	//   on X: {0.2, 0.6, 0.1}:   X joins the system; mean 0.3, mean of squares 0.41/3,
	//                            var 0.046667, std 0.216025
	// A 10, X 1. (Were U counted, A would give {0.3,0.6,0} std 0.2449 and X {0.2,0.6,0,0.1}
	// std 0.2278: X would win.)
	a := newAgent(t, config(1, LoadBalance), c)
	if diff := cmp.Diff([]int64{10, 1}, score(a, cpuPod("p", 100), A, X)); diff != "" {
		t.Errorf("synced cluster (-want +got):\n%s", diff)
	}
	// Before the cache has synced, the agent works from the request alone: the annotations
	// say A and X both use 900m, so a pod of 100m fits both and they are equal: 10, 10.
	c.synced = false
	a = newAgent(t, config(1, LoadBalance), c)
	if diff := cmp.Diff([]int64{10, 10}, score(a, cpuPod("p", 100), A, X)); diff != "" {
		t.Errorf("unsynced cluster (-want +got):\n%s", diff)
	}
	if a.seeded {
		t.Error("statistics seeded before the cache synced")
	}
}

func TestSeedFromCluster(t *testing.T) {
	// The cluster runs p1 (100m) and p2 (700m); p3 (100m) is pending, and is the pod asked
	// about. Seeding counts all three, and the request does not count p3 again. Same nodes and
	// arithmetic as TestBinpackAdaptsToDemand's mixed case: B wins from the very first request.
	nodes := []*corev1.Node{
		fixtures.MakeNode().Name("A").Allocatable(fixtures.Res{corev1.ResourceCPU: "1"}).Obj(),
		fixtures.MakeNode().Name("B").Allocatable(fixtures.Res{corev1.ResourceCPU: "1"}).Obj(),
	}
	p1, p2, p3 := cpuPod("p1", 100), cpuPod("p2", 700), cpuPod("p3", 100)
	p1.Spec.NodeName, p2.Spec.NodeName = "B", "B"
	c := &fakeCluster{synced: true, nodes: nodes, pods: []*corev1.Pod{p3, p1, p2},
		allocated: map[string]framework.Amounts{"B": {corev1.ResourceCPU: 500}}}
	a := newAgent(t, config(1, ABinpack), c)
	for i := 0; i < 3; i++ {
		if diff := cmp.Diff([]int64{1, 10}, score(a, p3, nodes...)); diff != "" {
			t.Errorf("request %d (-want +got):\n%s", i, diff)
		}
	}
	// mean (100+700+100)/3 = 300
	if a.stats.count != 3 || a.stats.mean[0] != 300 {
		t.Errorf("stats count %d mean %g, want 3 and 300", a.stats.count, a.stats.mean[0])
	}
	// Seeding happens once: a pod added to the cache later is counted only when asked about.
	c.pods = append(c.pods, cpuPod("p4", 100))
	score(a, p3, nodes...)
	if a.stats.count != 3 {
		t.Errorf("stats count %d after a later cache change, want 3", a.stats.count)
	}
}

func TestConcurrentRequestsCountEachPodOnce(t *testing.T) {
	// 8 goroutines each ask about the same 20 pods (demands 100m..2000m), 3 times over.
	// Each pod enters the statistics once: count 20, and, all within the plain-average
	// warm-up, mean = (100+...+2000)/20 = 1050. With cluster access the cache already runs
	// pods 1..10: the concurrent first requests seed them once, and the requests add 11..20.
	nodes := handCluster()
	cache := &fakeCluster{synced: true, nodes: nodes}
	for i := 1; i <= 10; i++ {
		p := cpuPod(fmt.Sprint("p", i), 100*i)
		p.Spec.NodeName = "A"
		cache.pods = append(cache.pods, p)
	}
	for _, tc := range []struct {
		name    string
		cluster framework.Cluster
	}{{name: "annotations"}, {name: "cluster", cluster: cache}} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, config(1, ABinpack), tc.cluster)
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < 3; r++ {
						for i := 1; i <= 20; i++ {
							if got := score(a, cpuPod(fmt.Sprint("p", i), 100*i), nodes...); len(got) != len(nodes) {
								t.Errorf("%d scores for %d nodes", len(got), len(nodes))
							}
						}
					}
				}()
			}
			wg.Wait()
			if a.stats.count != 20 || math.Abs(a.stats.mean[0]-1050) > 1e-9 {
				t.Errorf("stats count %d mean %g, want 20 and 1050", a.stats.count, a.stats.mean[0])
			}
		})
	}
}

func TestEmptyRequest(t *testing.T) {
	for obj := range objectives {
		if got := score(newAgent(t, config(2, obj), nil), cpuPod("p", 100)); len(got) != 0 {
			t.Errorf("%s: %v for no nodes", obj, got)
		}
	}
}

func TestAgentInterface(t *testing.T) {
	a := newAgent(t, config(2, ABinpack), nil)
	if a.Name() != "pigeon" || len(a.Filters()) != 0 {
		t.Errorf("name %q, %d filters", a.Name(), len(a.Filters()))
	}
	if p := a.Prioritizers(); len(p) != 1 || p[0].Name != "pigeon-holing" || p[0].Func == nil {
		t.Errorf("prioritizers %+v", p)
	}
}

package pigeon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// cycleCluster is the framework.Cluster and framework.NodePods of plugin mode as pigeon reads
// them: Nodes returns a new slice of the same node objects on every call (the adapter clones
// its cached list of views), PodsGeneration and Allocated look a node up by name (the
// snapshot's NodeInfos().Get), and a pod placed on a node changes its Allocated and moves its
// generation, from one counter. Placements happen between calls, never during one.
//
// It is not a framework.NodePodsChanges; snapshotChanges and journalChanges make it one.
type cycleCluster struct {
	nodes       []*corev1.Node
	pods        []*corev1.Pod
	alloc       map[string]framework.Amounts
	generations map[string]int64
	last        int64
	// changed[g-1] is the node whose pods changed at generation g.
	changed []string
	// at, when not nil, is each node's position in nodes, and gens each position's
	// generation: the snapshot's NodeInfo list (snapshotChanges reads it).
	at   map[string]int
	gens []int64
	// emptyZero gives a node left without pods generation 0, as the extender's cache does.
	emptyZero bool
}

var (
	_ framework.Cluster  = (*cycleCluster)(nil)
	_ framework.NodePods = (*cycleCluster)(nil)
)

func (c *cycleCluster) Node(string) (*corev1.Node, bool) { return nil, false }
func (c *cycleCluster) HasSynced() bool                  { return true }
func (c *cycleCluster) Nodes() []*corev1.Node            { return slices.Clone(c.nodes) }
func (c *cycleCluster) Pods() []*corev1.Pod              { return c.pods }
func (c *cycleCluster) Allocated(node string) framework.Amounts {
	if a, ok := c.alloc[node]; ok {
		return a
	}
	return framework.Amounts{}
}
func (c *cycleCluster) PodsGeneration(node string) int64 { return c.generations[node] }
func (c *cycleCluster) PodsOn(string) ([]*corev1.Pod, int64) {
	panic("pigeon does not read a node's pods")
}

// place binds p to node: its requests join the node's Allocated (a new map, as the snapshot's
// memo makes one per generation) and the node's generation moves.
func (c *cycleCluster) place(p *corev1.Pod, node string) {
	p.Spec.NodeName = node
	c.pods = append(c.pods, p)
	a := framework.Amounts{}
	for k, v := range c.alloc[node] {
		a[k] = v
	}
	for name, q := range framework.PodRequests(p) {
		a[name] += framework.Amount(name, q)
	}
	a[corev1.ResourcePods]++
	c.alloc[node] = a
	c.moved(node)
}

// moved gives node's pods the next generation.
func (c *cycleCluster) moved(node string) {
	c.last++
	c.generations[node] = c.last
	if c.emptyZero && len(c.alloc[node]) == 0 {
		delete(c.generations, node)
	}
	c.changed = append(c.changed, node)
	if c.at != nil {
		c.gens[c.at[node]] = c.last
	}
}

// snapshotChanges is a cycleCluster with framework.NodePodsChanges as plugin mode's snapshot
// gives it: every node, by position in the list, whose generation is above the mark; by
// position in gens when at is set (its nodes must not change then: at and gens follow
// placements only), else by name.
type snapshotChanges struct{ *cycleCluster }

func (c snapshotChanges) PodsChangedSince(mark int64, changes []framework.PodsChange) ([]framework.PodsChange, int64, bool) {
	next := mark
	for i, n := range c.nodes {
		var g int64
		if c.at != nil {
			g = c.gens[i]
		} else {
			g = c.generations[n.Name]
		}
		if g > mark {
			next = max(next, g)
			changes = append(changes, framework.PodsChange{Node: n.Name, Generation: g})
		}
	}
	return changes, next, true
}

// journalChanges is a cycleCluster with framework.NodePodsChanges as the extender's cache gives
// it: the nodes of the last keep changes, each with its generation now, and unknown for a mark
// further behind.
type journalChanges struct {
	*cycleCluster
	keep int64
}

func (c journalChanges) PodsChangedSince(mark int64, changes []framework.PodsChange) ([]framework.PodsChange, int64, bool) {
	next := c.last
	if mark < 0 || mark > next || next-mark > c.keep {
		return changes, next, false
	}
	for g := mark + 1; g <= next; g++ {
		node := c.changed[g-1]
		changes = append(changes, framework.PodsChange{Node: node, Generation: c.generations[node]})
	}
	return changes, next, true
}

// cycleClasses are the pods' requests, in turn: several workloads' classes, a few with a gpu
// and ephemeral storage.
var cycleClasses = []fixtures.Res{
	{corev1.ResourceCPU: "100m", corev1.ResourceMemory: "128Mi"},
	{corev1.ResourceCPU: "250m", corev1.ResourceMemory: "512Mi"},
	{corev1.ResourceCPU: "500m", corev1.ResourceMemory: "1Gi", corev1.ResourceEphemeralStorage: "2Gi"},
	{corev1.ResourceCPU: "1", corev1.ResourceMemory: "2Gi"},
	{corev1.ResourceCPU: "2", corev1.ResourceMemory: "4Gi", "nvidia.com/gpu": "1"},
}

// cycleNodes returns a cycleCluster of n nodes of 16 to 64 cpu, 64 to 256 GiB, 110 pods, some
// with 8 gpus, each with 4 to 12 pods of the classes placed on it.
func cycleNodes(n int) *cycleCluster {
	r := rand.New(rand.NewPCG(uint64(n), 35))
	c := &cycleCluster{alloc: map[string]framework.Amounts{}, generations: map[string]int64{},
		at: map[string]int{}, gens: make([]int64, n)}
	for i := range n {
		cpu, memGi, gpu := 16+16*r.IntN(4), 64<<r.IntN(3), 8*r.IntN(2)
		node := fixtures.MakeNode().Name(fmt.Sprintf("node-%05d", i)).Allocatable(fixtures.Res{
			corev1.ResourceCPU: strconv.Itoa(cpu), corev1.ResourceMemory: fmt.Sprint(memGi, "Gi"),
			corev1.ResourcePods: "110", "nvidia.com/gpu": strconv.Itoa(gpu), corev1.ResourceEphemeralStorage: "200Gi",
		}).ResourceVersion(strconv.Itoa(i + 1)).Obj()
		c.at[node.Name] = len(c.nodes)
		c.nodes = append(c.nodes, node)
		for k := range 4 + r.IntN(9) {
			class := cycleClasses[r.IntN(len(cycleClasses))]
			if gpu == 0 {
				class = cycleClasses[k%4]
			}
			c.place(pod(fmt.Sprintf("bound-%d-%d", i, k)).Req(class).Obj(), node.Name)
		}
	}
	return c
}

// processCPU returns the user and system CPU time the process has used, in nanoseconds: on a
// shared machine the steady figure (cpu-ns/op), where wall time per op waits for a CPU.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkPluginCycle is pigeon's part of one pod's scheduling cycle in plugin mode, as
// scheduler/adapter calls it: PreScore's one prioritize call over the feasible nodes (no filter
// of pigeon's: kube-scheduler's number of feasible nodes to find, consecutive from where the
// last pod stopped), then the pod is placed on the first node of best score (its node's
// generation and Allocated change). The pods' requests come in turn from cycleClasses, each pod
// new. nres is NUM_RESOURCES: 2 (the default) and 5. The changed nodes are found as from the
// snapshot (snapshotChanges).
func BenchmarkPluginCycle(b *testing.B) {
	for _, n := range []int{500, 2000, 5000} {
		for _, nres := range []int{2, 5} {
			for _, obj := range []Objective{ABinpack, Consolidate} {
				if nres == 5 && obj != ABinpack {
					continue
				}
				b.Run(fmt.Sprintf("%s/resources=%d/nodes=%d", obj, nres, n), func(b *testing.B) {
					benchPluginCycle(b, n, config(nres, obj))
				})
			}
		}
	}
}

func benchPluginCycle(b *testing.B, n int, cfg Config) {
	c := cycleNodes(n)
	h := framework.NewHandle(nil)
	h.Cluster, h.NodePods, h.PodsChanges = c, snapshotChanges{c}, snapshotChanges{c}
	a, err := New(cfg, h)
	if err != nil {
		b.Fatal(err)
	}
	fn := a.Prioritizers()[0].Func
	toFind := max(n*max(50-n/125, 5)/100, 100)
	ctx := context.Background()
	start := 0
	b.ReportAllocs()
	cpu0 := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; b.Loop(); i++ {
		p := pod(fmt.Sprintf("p-%d", i)).Req(cycleClasses[i%len(cycleClasses)]).Obj()
		feasible := make([]*corev1.Node, 0, toFind)
		for k := range toFind {
			feasible = append(feasible, c.nodes[(start+k)%n])
		}
		start = (start + toFind) % n
		scores, err := fn(ctx, p, feasible)
		if err != nil {
			b.Fatal(err)
		}
		best := 0
		for k, s := range scores {
			if s > scores[best] {
				best = k
			}
		}
		if scores[best] > 0 {
			c.place(p, feasible[best].Name)
		}
	}
}

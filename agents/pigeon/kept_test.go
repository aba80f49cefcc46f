package pigeon

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// remove deletes the i-th placed pod: its node's Allocated is summed again from the pods left
// and its generation moves.
func (c *cycleCluster) remove(i int) {
	node := c.pods[i].Spec.NodeName
	c.pods = slices.Delete(c.pods, i, i+1)
	a := framework.Amounts{}
	for _, p := range c.pods {
		if p.Spec.NodeName != node {
			continue
		}
		for name, q := range framework.PodRequests(p) {
			a[name] += framework.Amount(name, q)
		}
		a[corev1.ResourcePods]++
	}
	c.alloc[node] = a
	c.moved(node)
}

// The answers from the system kept between pods (NodePods) are the per-pod computation's (the
// system gathered and evaluated for each pod, as without NodePods), exactly: every node's
// objective value (bit for bit), fit and score, c(demand) and the system's size. Random
// clusters of nodes of several sizes (some without gpus), every objective, 1 to 5 resources,
// through sequences of plugin-mode cycles: a pod of one of several classes scored on a run of
// consecutive nodes (at times with a node the cluster does not list) and placed on the first
// node of best score, with pods removed, nodes added, cordoned and uncordoned, updated with
// another allocatable (a new resourceVersion) and the list reordered in between. One agent of
// each kind lives through each sequence.
//
// The kept system finds the changed nodes three ways, each its own run of the same sequences:
// asking every node's generation (NodePods alone), and from framework.NodePodsChanges as
// plugin mode's snapshot gives it (every node whose generation is above the mark) and as the
// extender's cache does (a journal of the last few changes, here 0 to 3, so that it is often
// too far behind and the agent asks every node; a node left without pods has generation 0).
// A fourth run ("positions") is plugin mode's: the snapshot's changes, and each call's nodes
// placed in a shared list of every node (framework.Positions; a new list object whenever a node
// is added, replaced or moved, and at times a new object of the same nodes), from which the
// kept system is read instead of the cluster's Nodes; a call with the outside node carries none.
func TestKeptAnswersArePerPodAnswers(t *testing.T) {
	for _, changes := range []string{"per node", "snapshot", "journal", "positions"} {
		t.Run(changes, func(t *testing.T) { testKeptAnswers(t, changes) })
	}
}

func testKeptAnswers(t *testing.T, changes string) {
	r := rand.New(rand.NewPCG(35, 27))
	objs := []Objective{ABinpack, LoadBalance, Consolidate, FewestNodes}
	updated, reused := 0, 0 // calls that updated a kept system from generations; that reused it as it was
	known, unknown := 0, 0  // calls whose changes were known; not known (NodePodsChanges)
	listed := 0             // calls whose kept system was read from the call's list (positions)
	for iter := range 48 {
		cfg := config(1+r.IntN(MaxResources), objs[iter%len(objs)])
		cfg.ResourceIndex = r.IntN(cfg.NumResources)
		c := &cycleCluster{alloc: map[string]framework.Amounts{}, generations: map[string]int64{},
			emptyZero: changes == "journal"}
		rv := 0
		node := func(name string, unschedulable bool) *corev1.Node {
			rv++
			cpu, gpu := 4+4*r.IntN(4), 4*r.IntN(2)
			n := fixtures.MakeNode().Name(name).Allocatable(fixtures.Res{
				corev1.ResourceCPU: strconv.Itoa(cpu), corev1.ResourceMemory: strconv.Itoa(16<<r.IntN(2)) + "Gi",
				corev1.ResourcePods: "30", "nvidia.com/gpu": strconv.Itoa(gpu), corev1.ResourceEphemeralStorage: "50Gi",
			}).ResourceVersion(strconv.Itoa(rv)).Obj()
			n.Spec.Unschedulable = unschedulable
			return n
		}
		newPod := func(name string) *corev1.Pod {
			return pod(name).Req(cycleClasses[r.IntN(len(cycleClasses))]).Obj()
		}
		for i := range 3 + r.IntN(40) {
			n := node(fmt.Sprintf("n%d", i), r.IntN(10) == 0)
			c.nodes = append(c.nodes, n)
			for k := range r.IntN(6) {
				c.place(newPod(fmt.Sprintf("b%d-%d-%d", iter, i, k)), n.Name)
			}
		}
		h := framework.NewHandle(nil)
		h.Cluster, h.NodePods = c, c
		var journal *journalChanges
		switch changes {
		case "snapshot", "positions":
			h.NodePods = snapshotChanges{c}
			h.PodsChanges = snapshotChanges{c}
		case "journal":
			journal = &journalChanges{cycleCluster: c, keep: int64(iter % 4)}
			h.NodePods, h.PodsChanges = journal, journal
		}
		kept, err := New(cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		perPod := newAgent(t, cfg, c) // no NodePods: the system gathered for each pod
		added := len(c.nodes)
		start := 0
		var list *testList
		for step := range 60 {
			switch k := r.IntN(12); {
			case k < 3 && len(c.pods) > 0:
				c.remove(r.IntN(len(c.pods)))
			case k == 3:
				n := node(fmt.Sprintf("n%d", added), false)
				added++
				c.nodes = append(c.nodes, n)
			case k == 4:
				i := r.IntN(len(c.nodes))
				c.nodes[i] = node(c.nodes[i].Name, !c.nodes[i].Spec.Unschedulable)
			case k == 5:
				i := r.IntN(len(c.nodes))
				c.nodes[i] = node(c.nodes[i].Name, c.nodes[i].Spec.Unschedulable) // allocatable changes
			case k == 6 && r.IntN(3) == 0:
				r.Shuffle(len(c.nodes), func(i, j int) { c.nodes[i], c.nodes[j] = c.nodes[j], c.nodes[i] })
			case k == 7 && r.IntN(2) == 0: // the same version, another object (a relist)
				i := r.IntN(len(c.nodes))
				c.nodes[i] = c.nodes[i].DeepCopy()
			}
			if list == nil || !slices.Equal(list.nodes, c.nodes) || r.IntN(8) == 0 {
				list = &testList{cycleCluster: c, nodes: slices.Clone(c.nodes)}
			}
			run := 1 + r.IntN(len(c.nodes))
			var nodes []*corev1.Node
			var at []int32
			for k := range run {
				nodes = append(nodes, c.nodes[(start+k)%len(c.nodes)])
				at = append(at, int32((start+k)%len(c.nodes)))
			}
			start = (start + run) % len(c.nodes)
			var positions *framework.Positions
			if changes == "positions" {
				positions = &framework.Positions{List: list, At: at}
			}
			if r.IntN(5) == 0 {
				outside := node("outside", false)
				c.alloc[outside.Name] = framework.Amounts{corev1.ResourceCPU: 1000, corev1.ResourcePods: 1}
				nodes = append(nodes, outside)
				positions = nil // not in the list
			}
			p := newPod(fmt.Sprintf("p%d-%d", iter, step))
			before := kept.system
			var gens []int64
			if before != nil {
				gens = slices.Clone(before.generations)
				if journal != nil {
					if _, _, ok := journal.PodsChangedSince(before.mark, nil); ok {
						known++
					} else {
						unknown++
					}
				}
			}
			want := perPod.rank(p, nodes, nil)
			got := kept.rank(p, nodes, positions)
			if positions != nil && kept.system.list == framework.NodeList(list) {
				listed++
			}
			if kept.system == before && before != nil {
				if slices.Equal(gens, before.generations) {
					reused++
				} else {
					updated++
				}
			}
			where := fmt.Sprintf("cluster %d step %d (%+v)", iter, step, cfg)
			if got.systemNodes != want.systemNodes || math.Float64bits(got.demandCV) != math.Float64bits(want.demandCV) {
				t.Fatalf("%s: system of %d nodes, c(demand) %v; per pod %d, %v", where, got.systemNodes, got.demandCV, want.systemNodes, want.demandCV)
			}
			for i := range nodes {
				if math.Float64bits(got.values[i]) != math.Float64bits(want.values[i]) || got.fit[i] != want.fit[i] || got.scores[i] != want.scores[i] {
					t.Fatalf("%s: node %s: value %v, fits %v, score %d; per pod %v, %v, %d", where, nodes[i].Name,
						got.values[i], got.fit[i], got.scores[i], want.values[i], want.fit[i], want.scores[i])
				}
			}
			best := 0
			for i, s := range want.scores {
				if s > want.scores[best] {
					best = i
				}
			}
			if want.scores[best] > 0 && nodes[best].Name != "outside" {
				c.place(p, nodes[best].Name)
			}
		}
	}
	t.Logf("%d calls updated the kept system from generations, %d reused it unchanged; journal: %d known, %d not; %d read it from their list", updated, reused, known, unknown, listed)
	if updated < 1000 || reused < 100 {
		t.Errorf("%d calls updated the kept system from its nodes' generations, %d reused it unchanged: the test does not exercise it", updated, reused)
	}
	if (changes == "positions") != (listed > 1000) {
		t.Errorf("%d calls read the kept system from their list: the test does not exercise it", listed)
	}
	if changes == "journal" && (known < 500 || unknown < 200) {
		t.Errorf("the journal knew the changes %d times and not %d times: the test does not exercise both", known, unknown)
	}
}

// racingCluster is a cycleCluster whose Allocated runs before first, once: a pod event that
// the informers handle while the agent reads.
type racingCluster struct {
	*cycleCluster
	before func(node string)
}

func (c *racingCluster) Allocated(node string) framework.Amounts {
	if f := c.before; f != nil {
		f(node)
	}
	return c.cycleCluster.Allocated(node)
}

// A pod that arrives on an empty node between the kept system's reading of the node's
// generation (0: no pods) and of its usage, and leaves before the next pod, leaves the node at
// generation 0, as it was read: the journal lists the node, and its usage is read again
// (generation 0 is every empty node's, not one set of pods), so the next answers are the
// per-pod ones. Without that, the node would keep the departed pod's usage.
func TestKeptRereadsAnEmptyNodeThatChanged(t *testing.T) {
	c := &cycleCluster{alloc: map[string]framework.Amounts{}, generations: map[string]int64{}, emptyZero: true}
	for i := range 3 {
		c.nodes = append(c.nodes, fixtures.MakeNode().Name(fmt.Sprintf("n%d", i)).Allocatable(fixtures.Res{
			corev1.ResourceCPU: "8", corev1.ResourceMemory: "32Gi", corev1.ResourcePods: "30",
		}).ResourceVersion("1").Obj())
	}
	c.place(pod("bound").Req(cycleClasses[1]).Obj(), "n1")
	cfg := config(2, ABinpack)
	rc := &racingCluster{cycleCluster: c}
	h := framework.NewHandle(nil)
	j := journalChanges{cycleCluster: c, keep: 100}
	h.Cluster, h.NodePods, h.PodsChanges = rc, j, j
	kept, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	perPod := newAgent(t, cfg, c)
	first, second := pod("first").Req(cycleClasses[0]).Obj(), pod("second").Req(cycleClasses[0]).Obj()
	perPod.rank(first, c.nodes, nil) // the same pods seen by both
	rc.before = func(node string) {
		if node == "n0" {
			rc.before = nil
			c.place(pod("passing").Req(cycleClasses[3]).Obj(), "n0")
		}
	}
	kept.rank(first, c.nodes, nil)
	if rc.before != nil {
		t.Fatal("the kept system did not read n0's usage")
	}
	c.remove(len(c.pods) - 1) // the passing pod goes: n0 is empty again, at generation 0
	if g := c.PodsGeneration("n0"); g != 0 {
		t.Fatalf("n0 is at generation %d, not 0", g)
	}
	want, got := perPod.rank(second, c.nodes, nil), kept.rank(second, c.nodes, nil)
	for i, n := range c.nodes {
		if math.Float64bits(got.values[i]) != math.Float64bits(want.values[i]) || got.scores[i] != want.scores[i] {
			t.Errorf("%s: value %v, score %d; per pod %v, %d", n.Name, got.values[i], got.scores[i], want.values[i], want.scores[i])
		}
	}
}

// testList is a framework.NodeList of a cycleCluster's nodes, as plugin mode's snapshot list
// is: a new object whenever its nodes change.
type testList struct {
	*cycleCluster
	nodes []*corev1.Node
}

func (l *testList) Len() int                     { return len(l.nodes) }
func (l *testList) Node(i int) *corev1.Node      { return l.nodes[i] }
func (l *testList) PodsGenerationAt(i int) int64 { return l.PodsGeneration(l.nodes[i].Name) }

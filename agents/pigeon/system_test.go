package pigeon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// changingCluster is a synced framework.Cluster whose nodes and usage change, and its
// framework.NodePods: a node's generation moves, from one counter, whenever its usage does.
type changingCluster struct {
	fakeCluster
	generations map[string]int64
	last        int64
}

var _ framework.NodePods = (*changingCluster)(nil)

func (c *changingCluster) PodsGeneration(node string) int64 { return c.generations[node] }

func (c *changingCluster) PodsOn(node string) ([]*corev1.Pod, int64) {
	var out []*corev1.Pod
	for _, p := range c.pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out, c.generations[node]
}

func (c *changingCluster) use(r *rand.Rand, node string) {
	c.allocated[node] = framework.Amounts{
		corev1.ResourceCPU: r.Int64N(32000), corev1.ResourceMemory: r.Int64N(128 << 30), corev1.ResourcePods: r.Int64N(110),
	}
	c.last++
	c.generations[node] = c.last
}

// The system kept between calls and updated from the nodes' generations scores as the
// system rebuilt for every pod: random clusters, then random sequences of usage changes,
// nodes cordoned and uncordoned (a new resourceVersion), added, removed, listed in another
// order or without a resourceVersion, each followed by a pod scored on a random subset of the
// nodes (and, at times, a node the cluster does not list), by one agent of each kind that
// lives through the whole sequence. Nodes are also rewritten as an annotator does (a new
// resourceVersion, new annotations, the same allocatable): the kept system takes them in place.
func TestSystemMatchesRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 11))
	kept := 0     // calls that reused the kept system
	rewrites := 0 // of them, calls after a node was rewritten
	for iter := range 60 {
		cfg := config(1+r.IntN(3), []Objective{ABinpack, LoadBalance, Consolidate, FewestNodes}[r.IntN(4)])
		cfg.ResourceIndex = r.IntN(cfg.NumResources)
		c := &changingCluster{fakeCluster: fakeCluster{synced: true, allocated: map[string]framework.Amounts{}},
			generations: map[string]int64{}}
		rv := 0
		node := func(name string, unschedulable bool) *corev1.Node {
			rv++
			n := fixtures.MakeNode().Name(name).Allocatable(fixtures.Res{
				corev1.ResourceCPU: strconv.Itoa(16 + 16*r.IntN(2)), corev1.ResourceMemory: strconv.Itoa(64<<r.IntN(2)) + "Gi",
				corev1.ResourcePods: "110",
			}).ResourceVersion(strconv.Itoa(rv)).Obj()
			n.Spec.Unschedulable = unschedulable
			return n
		}
		for i := range 2 + r.IntN(30) {
			n := node(fmt.Sprintf("n%d", i), r.IntN(8) == 0)
			c.nodes = append(c.nodes, n)
			c.use(r, n.Name)
		}
		memo, rebuild := newAgent(t, cfg, c), newAgent(t, cfg, c)
		memo.pods = c
		if rebuild.pods != nil || memo.pods == nil {
			t.Fatal("the agents do not differ in their NodePods")
		}
		added := len(c.nodes)
		for step := range 30 {
			rewritten := false
			switch k := r.IntN(11); {
			case k < 4: // pods placed or gone: usage changes
				c.use(r, c.nodes[r.IntN(len(c.nodes))].Name)
			case k == 4: // cordoned or uncordoned
				i := r.IntN(len(c.nodes))
				c.nodes[i] = node(c.nodes[i].Name, !c.nodes[i].Spec.Unschedulable)
			case k == 5:
				n := node(fmt.Sprintf("n%d", added), false)
				added++
				c.nodes = append(c.nodes, n)
				c.use(r, n.Name)
			case k == 6 && len(c.nodes) > 1:
				i := r.IntN(len(c.nodes))
				c.nodes = append(c.nodes[:i:i], c.nodes[i+1:]...)
			case k == 7:
				c.nodes = slices.Clone(c.nodes)
				r.Shuffle(len(c.nodes), func(i, j int) { c.nodes[i], c.nodes[j] = c.nodes[j], c.nodes[i] })
			case k == 8 && r.IntN(4) == 0:
				i := r.IntN(len(c.nodes))
				n := c.nodes[i].DeepCopy()
				n.ResourceVersion = ""
				c.nodes[i] = n
			case k == 9: // statistics rewritten: a new version, the same allocatable
				i := r.IntN(len(c.nodes))
				n := c.nodes[i].DeepCopy()
				rv++
				n.ResourceVersion = strconv.Itoa(rv)
				n.Annotations = map[string]string{"statistics-timestamp": strconv.Itoa(rv)}
				c.nodes[i] = n
				rewritten = true
			default: // nothing changed
			}
			var subset []*corev1.Node
			for _, n := range c.nodes {
				if r.IntN(3) > 0 {
					subset = append(subset, n)
				}
			}
			if r.IntN(4) == 0 {
				extra := node("outside", false)
				c.allocated[extra.Name] = framework.Amounts{corev1.ResourceCPU: 1000}
				subset = append(subset, extra)
			}
			p := cpuPod(fmt.Sprintf("u%d-%d", iter, step), 100+r.IntN(4000))
			keptBefore := memo.system
			want, err := rebuild.prioritize(context.Background(), p, subset)
			if err != nil {
				t.Fatal(err)
			}
			got, err := memo.prioritize(context.Background(), p, subset)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("cluster %d step %d (%+v): scores differ (-rebuild +kept):\n%s", iter, step, cfg, diff)
			}
			if keptBefore != nil && memo.system == keptBefore {
				kept++
				if rewritten {
					rewrites++
				}
			}
		}
	}
	if kept < 500 || rewrites < 50 {
		t.Errorf("only %d calls reused the kept system, %d after a node was rewritten: the test does not exercise it", kept, rewrites)
	}
}

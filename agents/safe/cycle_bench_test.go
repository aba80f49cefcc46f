package safe

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// cycleCluster is a framework.Cluster and framework.NodePods over pods kept by node, as the
// scheduler's snapshot keeps them (PodsOn reads one node's pods, not the cluster's), with a
// generation per node from one counter. Placements happen between calls, never during one.
type cycleCluster struct {
	nodes       []*corev1.Node
	byNode      map[string][]*corev1.Pod
	generations map[string]int64
	alloc       map[string]framework.Amounts // kept as pods come, as the cache and the snapshot keep it
	last        int64
}

func (c *cycleCluster) place(p *corev1.Pod) {
	c.byNode[p.Spec.NodeName] = append(c.byNode[p.Spec.NodeName], p)
	cpu, memory := framework.CPUMemoryRequests(p)
	a := framework.Amounts{corev1.ResourcePods: int64(len(c.byNode[p.Spec.NodeName]))}
	old := c.alloc[p.Spec.NodeName]
	a[corev1.ResourceCPU], a[corev1.ResourceMemory] = old[corev1.ResourceCPU]+cpu, old[corev1.ResourceMemory]+memory
	c.alloc[p.Spec.NodeName] = a
	c.last++
	c.generations[p.Spec.NodeName] = c.last
}

func (c *cycleCluster) Node(string) (*corev1.Node, bool) { return nil, false }
func (c *cycleCluster) HasSynced() bool                  { return true }
func (c *cycleCluster) Nodes() []*corev1.Node            { return c.nodes }
func (c *cycleCluster) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, pods := range c.byNode {
		out = append(out, pods...)
	}
	return out
}

func (c *cycleCluster) Allocated(node string) framework.Amounts { return c.alloc[node] }

func (c *cycleCluster) PodsGeneration(node string) int64 { return c.generations[node] }

func (c *cycleCluster) PodsOn(node string) ([]*corev1.Pod, int64) {
	return c.byNode[node], c.generations[node]
}

// cycleAgent is a safe agent with default settings over c, its clock at now, hearing pod events
// as plugin mode's does (the node model's path).
func cycleAgent(tb testing.TB, c *cycleCluster, now time.Time) *Agent {
	tb.Helper()
	h := framework.NewHandle(nil)
	h.Cluster, h.NodePods = c, c
	var events cache.ResourceEventHandler
	h.PodEvents = podEventsFunc{&events}
	a, err := New(DefaultConfig(), h)
	if err != nil {
		tb.Fatal(err)
	}
	a.now = func() time.Time { return now }
	return a
}

// cycleNodes returns a cycleCluster of n nodes of 16 cpu and 64 GiB carrying an annotator's
// statistics (fixtures.UsageStatistics: a fifth near the thresholds), written 5 minutes before
// now, one in twenty without, and 8 pods on each: half bound before the statistics, half
// assumed since (counted in the placed load).
func cycleNodes(n int, now time.Time) *cycleCluster {
	c := &cycleCluster{byNode: map[string][]*corev1.Pod{}, generations: map[string]int64{}, alloc: map[string]framework.Amounts{}}
	for i := range n {
		annotations := map[string]string{}
		if i%20 != 7 {
			annotations = fixtures.UsageStatistics(i, 16000, 64<<30, now.Add(-5*time.Minute))
		}
		node := bigNode(fmt.Sprintf("node-%05d", i), annotations)
		node.ResourceVersion = fmt.Sprint(i + 1)
		c.nodes = append(c.nodes, node)
		for k := range 8 {
			var at time.Time
			if k%2 == 0 {
				at = now.Add(-time.Hour)
			}
			c.place(boundPod(fmt.Sprintf("bound-%d-%d", i, k), "250m", node.Name, at))
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

// BenchmarkPluginCycle is one pod's scheduling cycle in plugin mode, as scheduler/adapter calls
// the agent (default configuration, through NodePods): the adaptive filter's ForList over the
// whole list, its function on chunks of 16 consecutive nodes from where the last pod stopped
// until kube-scheduler's number of feasible nodes is found, then safe-overload's score of the
// feasible nodes; the pod is then placed on the first of them (its node's pods change).
// uniform: every pod requests 100m and 128Mi (bench-e2e's pods); mixed: four requests in
// turn (250m/512Mi, 500m/1Gi, 1/2Gi, 2/4Gi), as pods of several workloads come.
func BenchmarkPluginCycle(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, n := range []int{2000, 5000} {
		for _, mix := range []struct {
			name    string
			demands [][2]string
		}{
			{"uniform", [][2]string{{"100m", "128Mi"}}},
			{"mixed", [][2]string{{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"2", "4Gi"}}},
		} {
			b.Run(fmt.Sprintf("%s/nodes=%d", mix.name, n), func(b *testing.B) {
				c := cycleNodes(n, now)
				a := cycleAgent(b, c, now)
				toFind := max(n*max(50-n/125, 5)/100, 100)
				start := 0
				b.ReportAllocs()
				cpu0 := processCPU()
				defer func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
				for i := 0; b.Loop(); i++ {
					d := mix.demands[i%len(mix.demands)]
					pod := cyclePod(i, d)
					var to *corev1.Node
					if start, to = cycle(b, a, c, pod, toFind, start); to != nil {
						pod.Spec.NodeName = to.Name
						c.place(pod)
					}
				}
			})
		}
	}
}

// cyclePod is the i-th pod of a cycle benchmark, of requests d (cpu, memory).
func cyclePod(i int, d [2]string) *corev1.Pod {
	pod := boundPod(fmt.Sprintf("p-%d", i), d[0], "", time.Time{})
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(d[1])
	return pod
}

// cycle is one pod's scheduling cycle in plugin mode (see BenchmarkPluginCycle) from position
// start of c's nodes: the filter's chunks until toFind nodes pass and safe-overload's score of
// those. It returns where the next cycle starts and the first feasible node (nil: none), where
// the caller places the pod.
func cycle(b *testing.B, a *Agent, c *cycleCluster, pod *corev1.Pod, toFind, start int) (int, *corev1.Node) {
	ctx := context.Background()
	n := len(c.nodes)
	fn, err := a.Filters()[0].ForList(ctx, pod, c.nodes)
	if err != nil {
		b.Fatal(err)
	}
	var feasible []*corev1.Node
	k := 0
	for ; k < n && len(feasible) < toFind; k += 16 {
		lo := (start + k) % n
		chunk := c.nodes[lo:min(lo+16, n)]
		out, err := fn(ctx, pod, chunk)
		if err != nil {
			b.Fatal(err)
		}
		for j, v := range out {
			if v.Passes() {
				feasible = append(feasible, chunk[j])
			}
		}
	}
	if _, err := a.scoreOverload(ctx, pod, feasible); err != nil {
		b.Fatal(err)
	}
	if len(feasible) > 0 {
		return (start + k) % n, feasible[0]
	}
	return (start + k) % n, nil
}

// BenchmarkFreshAgentCycle is the first scheduling cycle of a new agent (default configuration,
// plugin mode, as BenchmarkPluginCycle) on 2000 nodes: New, then one pod's cycle, nothing
// remembered yet of the nodes or their risks. Each agent owns its risk memo (beta.Memo), so no
// agent starts from the risks another computed; the pod is not placed (every op sees the same
// cluster).
func BenchmarkFreshAgentCycle(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const n = 2000
	c := cycleNodes(n, now)
	toFind := max(n*max(50-n/125, 5)/100, 100)
	b.ReportAllocs()
	cpu0 := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
	for i := 0; b.Loop(); i++ {
		a := cycleAgent(b, c, now)
		pod := cyclePod(i, [2]string{"500m", "1Gi"})
		cycle(b, a, c, pod, toFind, 0)
	}
}

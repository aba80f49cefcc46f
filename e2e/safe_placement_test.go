package e2e

// The safe agent's placement fixes of issue 26, end to end, with extender.safe.yaml as shipped.

import (
	"fmt"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestSafeYAMLNewNodeGetsPods: a node added to a busy cluster receives the next pods. Two busy
// 16-cpu nodes (75 % measured cpu, 8 cpu requested) and then an empty node without statistics,
// as a cluster autoscaler adds it: safe judges the new node from its pods' requests (none), so
// it scores as kube-scheduler would score it, and the next pods land there. Before, a node
// without statistics scored 0 in both priorities against 7 and 5 for the busy ones: with the
// shipped weights the busy nodes got 190 more points, more than LeastAllocated and
// BalancedAllocation gave the new node, and pods piled onto the busy nodes until the new one's
// first statistics.
func TestSafeYAMLNewNodeGetsPods(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	c, sa := startWithServiceAccount(t)
	// 16 cpu, 64 GiB: 4 cpu free on average (75 % used), unsteady; memory half used.
	busy := statsAnnotations(4000, 800, 32*gi, 2*gi)
	for _, name := range []string{"busy-a", "busy-b"} {
		c.CreateNode(t, harness.NodeSpec{Name: name, CPU: "16", Memory: "64Gi", Annotations: busy})
		preload(t, c, name, "8", "16Gi")
	}
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.yaml"), harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)
	safe := r.Extenders["safe"]

	// The scale-up.
	c.CreateNode(t, harness.NodeSpec{Name: "new", CPU: "16", Memory: "64Gi"})
	// Wait until the sidecar's cache holds the new node (nodeCacheCapable: it resolves names).
	probe := probePod(t, harness.PodSpec{Name: "probe", CPU: "1", Memory: "1Gi"})
	nodes := []string{"busy-a", "busy-b", "new"}
	var overload map[string]int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := scores(t.Context(), safe, "safe-overload", probe, nodes)
		if err == nil && len(s) == len(nodes) {
			overload = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar never scored the new node: %v %v", s, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	balance, err := scores(t.Context(), safe, "safe-balance", probe, nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("safe-overload %v, safe-balance %v", overload, balance)
	for _, s := range []map[string]int64{overload, balance} {
		if s["new"] <= s["busy-a"] || s["new"] <= s["busy-b"] {
			t.Fatalf("the new node does not score above the busy ones: safe-overload %v, safe-balance %v", overload, balance)
		}
	}
	if rejected := filterVerdicts(t, safe, "safe-overload", probe, nodes); len(rejected) != 0 {
		t.Fatalf("safe-overload rejected %v", rejected)
	}

	// The next pods go to the new node: safe and kube-scheduler's own scores now agree.
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), CPU: "1", Memory: "1Gi"}, "new",
			"a new node is judged from its requests: empty, it is the least loaded")
	}
}

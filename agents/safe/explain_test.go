package safe

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// Explain shows the numbers the filter's reason shows, per resource, for every node: measured,
// unmeasured, and stale.
func TestExplain(t *testing.T) {
	a := newAgent(t, config(func(c *Config) { c.Utilization = 50; c.MaxStatsAge = framework.Duration(time.Hour) }), nil)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	pod := makePod("400m", "800")
	nodes := []*corev1.Node{
		// As TestFilterOverload's Beta(2,3): cpu mu 0.4, sigma 0.2, risk 0.3125 at T 0.5.
		fixtureNode("beta").Annotations(ann{nodestats.MeanFreeCPU: "2800", nodestats.StdFreeCPU: "800"}).Obj(),
		fixtureNode("stale").Annotations(ann{nodestats.MeanFreeCPU: "2800", nodestats.StdFreeCPU: "800",
			nodestats.StatisticsTimestamp: now.Add(-2 * time.Hour).Format(time.RFC3339)}).Obj(),
	}
	got := a.Explain(context.Background(), FilterOverload, "filter", pod, nodes)
	if len(got) != 2 {
		t.Fatalf("%d inputs for 2 nodes", len(got))
	}
	cpu := got[0]["cpu"].(*measuredInputs)
	if math.Abs(cpu.Mu-0.4) > 1e-12 || math.Abs(cpu.Sigma-0.2) > 1e-12 || math.Abs(cpu.Risk-0.3125) > 1e-9 {
		t.Errorf("beta cpu: %v, want mu 0.4, sigma 0.2, risk 0.3125", cpu)
	}
	if got[0]["memory"].(framework.Inputs)["risk"] != "not judged: no usage statistics" || got[0]["threshold"] != 0.5 || got[0]["acceptableRisk"] != 0.3 {
		t.Errorf("beta: %v", got[0])
	}
	if s, _ := got[1]["stale"].(string); s != a.staleReason(freshness{stale: true, age: 2 * time.Hour}) || s == "" {
		t.Errorf("stale node: %v", got[1])
	}
	if _, ok := got[0]["stale"]; ok {
		t.Errorf("fresh node said stale: %v", got[0])
	}
}

// A measured resource's inputs render as the map {"mu", "risk", "sigma"} they replaced did, and
// cost each node few allocations: a decision log keeps up to decisions.InputsKept nodes' inputs
// (at 5000 nodes, safe's were 34 of the extender's 235 MB live heap as maps of boxed numbers).
func TestExplainInputsAreSmall(t *testing.T) {
	got, err := json.Marshal(&measuredInputs{Mu: 0.4, Risk: 0.3125, Sigma: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(framework.Inputs{"mu": 0.4, "sigma": 0.2, "risk": 0.3125})
	if string(got) != string(want) {
		t.Errorf("measuredInputs renders %s, the map rendered %s", got, want)
	}

	a := newAgent(t, config(func(c *Config) { c.Utilization = 50 }), nil)
	pod := makePod("400m", "800")
	var nodes []*corev1.Node
	for i := range 200 {
		nodes = append(nodes, fixtureNode(fmt.Sprintf("n%d", i)).Annotations(ann{
			nodestats.MeanFreeCPU: "2800", nodestats.StdFreeCPU: "800", nodestats.MeanFreeMemory: "3000", nodestats.StdFreeMemory: "900"}).Obj())
	}
	ctx := context.Background()
	perNode := testing.AllocsPerRun(5, func() { a.Explain(ctx, FilterOverload, "filter", pod, nodes) }) / float64(len(nodes))
	// The node's map (its table and one group), the two resources' inputs, and measuring the
	// node: 5 (15 as maps of boxed numbers). The bound leaves room for the race detector's own
	// allocations (6.1 under make test's -race), not for the maps.
	if perNode > 10 {
		t.Errorf("Explain allocates %.1f times per node, want at most 10 (5 without -race; 15 when inputs were maps)", perNode)
	}
}

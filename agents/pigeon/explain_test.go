package pigeon

import (
	"context"
	"math"
	"testing"
)

// Explain, on TestLoadBalanceHandWorked's cluster: the objective after placement is the std of
// the prime utilizations the hand-worked scores come from (A 0.265460, B 0.292350, D 0.274716),
// before it is the std of 0.2, 0.5, 0.95, 0.3 (mean 0.4875, mean of squares 0.320625, var
// 0.08296875, std 0.288043), the same for every node; C does not fit.
func TestExplain(t *testing.T) {
	a := newAgent(t, config(1, LoadBalance), nil)
	p := cpuPod("p", 100)
	score(a, p, handCluster()...)
	got := a.Explain(context.Background(), PriorityPigeonHoling, "prioritize", p, handCluster())
	near := func(x any, want float64) bool { f, ok := x.(float64); return ok && math.Abs(f-want) < 1e-6 }
	for i, after := range []float64{0.265460, 0.292350, 0, 0.274716} {
		in := got[i]
		if !near(in["objectiveBefore"], 0.288043) {
			t.Errorf("node %d: objectiveBefore %v, want 0.288043", i, in["objectiveBefore"])
		}
		if i == 2 {
			if in["fits"] != false {
				t.Errorf("C fits: %v", in)
			}
			continue
		}
		if !near(in["objectiveAfter"], after) || in["fits"] != true || in["objective"] != string(LoadBalance) {
			t.Errorf("node %d: %v, want objectiveAfter %v", i, in, after)
		}
	}
	if !near(got[0]["utilizationBefore"], 0.2) || !near(got[0]["utilizationAfter"], 0.3) || got[0]["primeResource"] != "cpu" {
		t.Errorf("A's utilization: %v", got[0])
	}
}

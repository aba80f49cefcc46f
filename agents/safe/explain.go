package safe

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

var _ framework.Explainer = (*Agent)(nil)

// Explain implements framework.Explainer: for every function, what safe read of each node for
// pod: per resource the utilization's mean mu and standard deviation sigma with the pod added,
// and the risk of exceeding the threshold (or why there is none), the threshold and the
// acceptable risk, and the pod's estimate (millicores and bytes) with its evidence; a node whose
// statistics are stale says so, with their age.
func (a *Agent) Explain(_ context.Context, _, _ string, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	c := a.newCall(pod) // never done(): explaining publishes no metric
	est := framework.Inputs{"cpu": c.d.cpu, "memory": c.d.memory, "requestCpu": c.fit.cpu, "requestMemory": c.fit.memory,
		"learned": c.learned}
	if ev := c.evidence(a.estimator); ev != "" {
		est["evidence"] = ev
	}
	// Boxed once, shared by every node's inputs: a decision log keeps up to
	// decisions.InputsKept nodes' inputs, so each node's own allocations count.
	threshold, acceptable := any(a.t), any(a.e)
	out := make([]framework.Inputs, len(nodes))
	for i, n := range nodes {
		cpu, memory, f := a.measureNode(n, c)
		in := framework.Inputs{
			"cpu": a.explainResource(&cpu), "memory": a.explainResource(&memory),
			"threshold": threshold, "acceptableRisk": acceptable, "podEstimate": est,
		}
		if f.stale {
			in["stale"] = a.staleReason(f)
		}
		out[i] = in
	}
	return out
}

// measuredInputs is what explainResource shows of a measured resource: the JSON of the map
// {"mu", "risk", "sigma"} it replaces (the same keys, in the same order), in one allocation of
// 24 bytes instead of a map and three boxed numbers (about 400 bytes), per node and resource.
type measuredInputs struct {
	Mu    float64 `json:"mu"`
	Risk  float64 `json:"risk"`
	Sigma float64 `json:"sigma"`
}

// Unmeasured resources' inputs, shared: they never change.
var (
	noStatsInputs       any = framework.Inputs{"risk": "not judged: no usage statistics"}
	noAllocatableInputs any = framework.Inputs{"risk": 1.0, "why": "allocatable is zero or missing"}
)

func (a *Agent) explainResource(m *measure) any {
	switch m.state {
	case noStats:
		return noStatsInputs
	case noAllocatable:
		return noAllocatableInputs
	}
	return &measuredInputs{Mu: m.mu, Risk: a.risk(m), Sigma: m.sigma}
}

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
	out := make([]framework.Inputs, len(nodes))
	for i, n := range nodes {
		cpu, memory, f := a.measureNode(n, c)
		in := framework.Inputs{
			"cpu": a.explainResource(&cpu), "memory": a.explainResource(&memory),
			"threshold": a.t, "acceptableRisk": a.e, "podEstimate": est,
		}
		if f.stale {
			in["stale"] = a.staleReason(f)
		}
		out[i] = in
	}
	return out
}

func (a *Agent) explainResource(m *measure) framework.Inputs {
	switch m.state {
	case noStats:
		return framework.Inputs{"risk": "not judged: no usage statistics"}
	case noAllocatable:
		return framework.Inputs{"risk": 1.0, "why": "allocatable is zero or missing"}
	}
	return framework.Inputs{"mu": m.mu, "sigma": m.sigma, "risk": a.risk(m)}
}

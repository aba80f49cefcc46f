package reward

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

var _ framework.Explainer = (*Agent)(nil)

// Explain implements framework.Explainer: the pod's type and, for each node, the reward r the
// score used (decayed, blended with the node's row while the type's row has fewer than
// REWARD_MIN_OBSERVATIONS) and the number n of outcomes observed for the type there (and over
// every type); a node never observed says so.
func (a *Agent) Explain(_ context.Context, _, _ string, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	typ, now := PodType(pod), a.now()
	out := make([]framework.Inputs, len(nodes))
	for i, n := range nodes {
		in := framework.Inputs{"type": typ, "r": a.table.reward(typ, n.Name, now)}
		if e, ok := a.table.get(typ, n.Name); ok {
			in["n"] = e.N
		} else {
			in["n"] = 0
		}
		if e, ok := a.table.get("", n.Name); ok {
			in["nAllTypes"] = e.N
		}
		out[i] = in
	}
	return out
}

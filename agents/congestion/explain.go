package congestion

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

var _ framework.Explainer = (*Agent)(nil)

// Explain implements framework.Explainer: the congestion factor read of each node (0 when its
// annotation is missing or unreadable) and the configured maximum M.
func (a *Agent) Explain(_ context.Context, _, _ string, _ *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	out := make([]framework.Inputs, len(nodes))
	for i, n := range nodes {
		out[i] = framework.Inputs{"factor": Factor(n.Annotations), "factorMax": a.m}
		if raw, ok := n.Annotations[Annotation]; ok && Factor(n.Annotations) == 0 && strings.TrimSpace(raw) != "0" {
			out[i]["annotation"] = raw
		}
	}
	return out
}

package server

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// explainFunc asks an agent what it saw of each node for one of its functions.
type explainFunc func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs

// explainerOf returns a's explanation of function, nil when a does not implement
// framework.Explainer.
func explainerOf(a framework.Agent, function, verb string) explainFunc {
	ex, ok := a.(framework.Explainer)
	if !ok {
		return nil
	}
	return func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
		return ex.Explain(ctx, function, verb, pod, nodes)
	}
}

// explain returns the inputs a kept decision shows: nothing when decisions are off or the agent
// does not explain, and nothing when the agent's answer does not have one entry per node (a
// decision never shows inputs beside the wrong node).
func (s *srv) explain(ex explainFunc, ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	if s.decisions == nil || ex == nil {
		return nil
	}
	in := ex(ctx, pod, nodes)
	if len(in) != len(nodes) {
		return nil
	}
	return in
}

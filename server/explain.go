package server

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// explain returns the inputs a kept decision shows: nothing when decisions are off (the agent is
// not asked), else what decisions.Explain.Inputs returns.
func (s *srv) explain(ex decisions.Explain, ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	if s.decisions == nil {
		return nil
	}
	return ex.Inputs(ctx, pod, nodes)
}

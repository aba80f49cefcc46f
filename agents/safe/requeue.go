package safe

import (
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

var _ framework.Requeuer = (*Agent)(nil)

// RequeueOn implements framework.Requeuer: the filter's verdict on a node depends on the pod's
// requests and on the node's usage statistics annotations and allocatable, nothing else. A pod
// it rejected is retried when a node's statistics change (the node cooled) or its allocatable
// does, or when the pod's requests go down, not on other node updates; with the node model
// (pod events heard), also when a pod leaves a node: it leaves at its estimate, at once.
func (a *Agent) RequeueOn(filter string) *framework.RequeueOn {
	if filter != FilterOverload {
		return nil
	}
	return &framework.RequeueOn{
		AssignedPodDelete: a.departed != nil,
		NodeAnnotations: []string{
			nodestats.MeanFreeCPU, nodestats.StdFreeCPU, nodestats.ForecastedFreeCPU, nodestats.ForcastedFreeCPU,
			nodestats.MeanFreeMemory, nodestats.StdFreeMemory, nodestats.ForecastedFreeMemory, nodestats.ForcastedFreeMemory,
			nodestats.StatisticsTimestamp,
		},
		NodeAllocatable: true,
		PodScaleDown:    true,
	}
}

package gangplugin

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// CoschedulingName is the plugin's name, scheduler-plugins' own, so that a Coscheduling user's
// configuration (multiPoint: Coscheduling, PrioritySort disabled; pluginConfig args
// permitWaitingTimeSeconds, podGroupBackoffSeconds, podGroupRejectPercentage) runs unchanged.
const CoschedulingName = "Coscheduling"

// Coscheduling is the gang plugin (PodGroup: preFilter, postFilter, reserve, permit) under
// scheduler-plugins' name, with Coscheduling's queue order (queueSort): pod priority (higher
// first), then a timestamp, the group's for a group's pods (its last failure, else its
// PodGroup's creation) and the first queueing time for the others (older first), then
// namespace/name.
type Coscheduling struct{ *PodGroup }

var _ fwk.QueueSortPlugin = Coscheduling{}

// NewCoscheduling is Coscheduling's factory.
func (g *Groups) NewCoscheduling(ctx context.Context, obj runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	pl, err := g.newPlugin(ctx, coschedulingSchema, obj, fh)
	if err != nil {
		return nil, err
	}
	return Coscheduling{pl}, nil
}

// Less implements fwk.QueueSortPlugin.
func (c Coscheduling) Less(e1, e2 fwk.QueuedEntityInfo) bool {
	if a, b := e1.GetPriority(), e2.GetPriority(); a != b {
		return a > b
	}
	return c.groups.lessByAge(e1, e2)
}

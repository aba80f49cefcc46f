package adapter

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
)

var (
	_ fwk.EnqueueExtensions = (*filterPlugin)(nil)
	_ fwk.EnqueueExtensions = (*filterScorePlugin)(nil)
)

// EventsToRegister implements fwk.EnqueueExtensions: the events that may make a pod the filter
// rejected schedulable, as the agent declares them (framework.Requeuer), each node update with a
// queueing hint that retries the pod only when a declared part of the node changed. An agent
// that declares nothing gets every event, as a plugin without EnqueueExtensions does.
func (p *filterPlugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return eventsFor(p.fns.requeue), nil
}

// EventsToRegister implements fwk.EnqueueExtensions (a score plugin rejects no pod: the
// filter's events are the plugin's).
func (p *filterScorePlugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return p.filterPlugin.EventsToRegister(ctx)
}

// eventsFor returns the events of on: a node added always, a node updated in a declared part
// (with nodeChanged as its queueing hint), the pod's own requests going down, custom resources.
func eventsFor(on *framework.RequeueOn) []fwk.ClusterEventWithHint {
	if on == nil {
		return []fwk.ClusterEventWithHint{{Event: fwk.ClusterEvent{Resource: fwk.WildCard, ActionType: fwk.All}}}
	}
	update := fwk.ActionType(0)
	if len(on.NodeAnnotations) > 0 {
		update |= fwk.UpdateNodeAnnotation
	}
	if on.NodeAllocatable {
		update |= fwk.UpdateNodeAllocatable
	}
	if on.NodeLabels {
		update |= fwk.UpdateNodeLabel
	}
	events := []fwk.ClusterEventWithHint{{
		Event:          fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | update},
		QueueingHintFn: nodeChanged(on),
	}}
	if on.PodScaleDown {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodScaleDown}})
	}
	if on.AssignedPodDelete {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}})
	}
	for _, r := range on.Resources {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.EventResource(r), ActionType: fwk.All}})
	}
	return events
}

// nodeChanged is the queueing hint of a node event for a filter that declared on: Queue for a
// new node, or an update that changed a declared annotation, the allocatable resources or the
// labels (as declared); QueueSkip for any other update.
func nodeChanged(on *framework.RequeueOn) fwk.QueueingHintFn {
	return func(_ klog.Logger, _ *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
		n, _ := newObj.(*corev1.Node)
		if n == nil {
			return fwk.QueueSkip, nil
		}
		old, _ := oldObj.(*corev1.Node)
		if old == nil {
			return fwk.Queue, nil
		}
		for _, k := range on.NodeAnnotations {
			v, ok := n.Annotations[k]
			ov, oldOK := old.Annotations[k]
			if v != ov || ok != oldOK {
				return fwk.Queue, nil
			}
		}
		if on.NodeAllocatable && !equality.Semantic.DeepEqual(n.Status.Allocatable, old.Status.Allocatable) {
			return fwk.Queue, nil
		}
		if on.NodeLabels && !maps.Equal(n.Labels, old.Labels) {
			return fwk.Queue, nil
		}
		return fwk.QueueSkip, nil
	}
}

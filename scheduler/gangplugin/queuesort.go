package gangplugin

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
)

// GroupPriorityName is the QueueSort plugin's name.
const GroupPriorityName = "group-priority"

// LabelGroupPriority is the riya-scheduler's queue priority label: an integer, higher first;
// missing or not an integer counts as 0.
const LabelGroupPriority = "groupPriority"

// GroupPriority is the QueueSort plugin group-priority: it orders the scheduling queue by the
// groupPriority label (higher first), then QoS class (Guaranteed, Burstable, BestEffort), then
// pod priority (higher first), then, as Coscheduling: a timestamp (older first), the group's for
// a group's pods (its last failure, else its creation: the PodGroup object's, or a riya group's
// oldest member's) and the first queueing time for a pod in no group, then namespace/name.
type GroupPriority struct{ groups *Groups }

var _ fwk.QueueSortPlugin = (*GroupPriority)(nil)

// NewGroupPriority is the plugin's factory; it takes no args.
func (g *Groups) NewGroupPriority(ctx context.Context, _ runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	if err := g.ensure(ctx, fh); err != nil {
		return nil, fmt.Errorf("%s: %w", GroupPriorityName, err)
	}
	return &GroupPriority{groups: g}, nil
}

// Name implements fwk.Plugin.
func (*GroupPriority) Name() string { return GroupPriorityName }

// podOf is what the scheduler's queued pod entries offer (k8s.io/kubernetes's QueuedPodInfo).
type podOf interface{ GetPodInfo() fwk.PodInfo }

// Less implements fwk.QueueSortPlugin.
func (gp *GroupPriority) Less(e1, e2 fwk.QueuedEntityInfo) bool {
	p1, p2 := pod(e1), pod(e2)
	if p1 != nil && p2 != nil {
		if g1, g2 := groupPriority(p1), groupPriority(p2); g1 != g2 {
			return g1 > g2
		}
		if q1, q2 := qosRank(p1), qosRank(p2); q1 != q2 {
			return q1 > q2
		}
	}
	if a, b := e1.GetPriority(), e2.GetPriority(); a != b {
		return a > b
	}
	return gp.groups.lessByAge(e1, e2)
}

// lessByAge is Coscheduling's order after priority: the older timestamp first (see
// Groups.timestamp), then namespace/name. An entry that is not a pod (a pod group of
// kube-scheduler's own workload API) has its first queueing time and no name.
func (g *Groups) lessByAge(e1, e2 fwk.QueuedEntityInfo) bool {
	t1, n1 := g.age(e1)
	t2, n2 := g.age(e2)
	if !t1.Equal(t2) {
		return t1.Before(t2)
	}
	if n1 != n2 {
		return n1 < n2
	}
	return e1.GetTimestamp().Before(e2.GetTimestamp())
}

func (g *Groups) age(e fwk.QueuedEntityInfo) (time.Time, string) {
	queued := e.GetTimestamp()
	if t := e.GetInitialAttemptTimestamp(); t != nil && !t.IsZero() {
		queued = *t
	}
	p := pod(e)
	if p == nil {
		return queued, ""
	}
	return g.timestamp(p, queued), p.Namespace + "/" + p.Name
}

// pod returns the pod of a queued pod entry, nil for another kind of entry (a pod group of
// kube-scheduler's own workload API), which is then ordered by priority and queue time only.
func pod(e fwk.QueuedEntityInfo) *corev1.Pod {
	if e.Type() != fwk.PodKeyType {
		return nil
	}
	if p, ok := e.(podOf); ok && p.GetPodInfo() != nil {
		return p.GetPodInfo().GetPod()
	}
	return nil
}

// groupPriority returns the pod's groupPriority label, 0 when missing or not an integer.
func groupPriority(p *corev1.Pod) int64 {
	n, err := strconv.ParseInt(p.Labels[LabelGroupPriority], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// qosRank is 2 for Guaranteed, 1 for Burstable, 0 for BestEffort. The API server sets
// status.qosClass at creation; it is computed when empty.
func qosRank(p *corev1.Pod) int {
	class := p.Status.QOSClass
	if class == "" {
		class = qos.GetPodQOS(p)
	}
	switch class {
	case corev1.PodQOSGuaranteed:
		return 2
	case corev1.PodQOSBurstable:
		return 1
	}
	return 0
}

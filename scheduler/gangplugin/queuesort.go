package gangplugin

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

	"github.com/kube-safe-scheduler/extender/agents/gang"
)

// GroupPriorityName is the QueueSort plugin's name.
const GroupPriorityName = "group-priority"

// LabelGroupPriority is the riya-scheduler's queue priority label: an integer, higher first;
// missing or not an integer counts as 0.
const LabelGroupPriority = "groupPriority"

// GroupPriority is the QueueSort plugin group-priority: it orders the scheduling queue by the
// groupPriority label (higher first), then QoS class (Guaranteed, Burstable, BestEffort), then
// pod priority (higher first), then group (the members of one group stay together: pods in no
// group first, then groups by label, namespace and name), then creation time, then the time the
// pod entered the queue.
type GroupPriority struct{}

var _ fwk.QueueSortPlugin = (*GroupPriority)(nil)

// NewGroupPriority is the plugin's factory; it takes no args.
func NewGroupPriority(_ context.Context, _ runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	return &GroupPriority{}, nil
}

// Name implements fwk.Plugin.
func (*GroupPriority) Name() string { return GroupPriorityName }

// podOf is what the scheduler's queued pod entries offer (k8s.io/kubernetes's QueuedPodInfo).
type podOf interface{ GetPodInfo() fwk.PodInfo }

// Less implements fwk.QueueSortPlugin.
func (*GroupPriority) Less(e1, e2 fwk.QueuedEntityInfo) bool {
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
	if p1 != nil && p2 != nil {
		if k1, k2 := groupOf(p1), groupOf(p2); k1 != k2 {
			return k1 < k2
		}
		if c1, c2 := p1.CreationTimestamp.Time, p2.CreationTimestamp.Time; !c1.Equal(c2) {
			return c1.Before(c2)
		}
	}
	return e1.GetTimestamp().Before(e2.GetTimestamp())
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

// groupOf returns a key that sorts a pod's group: "" for a pod in no group.
func groupOf(p *corev1.Pod) string {
	k, ok := gang.KeyOf(p)
	if !ok {
		return ""
	}
	return k.Label + "\x00" + k.Namespace + "\x00" + k.Name
}

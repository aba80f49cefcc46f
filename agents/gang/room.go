package gang

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kube-safe-scheduler/extender/agents/gang/core"
	"github.com/kube-safe-scheduler/extender/framework"
)

// freeRoom returns each node's free allocatable as the extender's cluster view sees it: the
// node's allocatable less the requests of the non-terminated pods bound to it ("pods": one slot
// each), the requests of group's own bound members given back (they are part of what
// spec.minResources asks, as Coscheduling counts them).
func freeRoom(view framework.Cluster, group core.Key) []corev1.ResourceList {
	own := map[string]framework.Amounts{}
	for _, p := range groupPods(view, group) {
		if k, ok := core.KeyOf(p); !ok || k != group || p.Spec.NodeName == "" {
			continue
		}
		a := own[p.Spec.NodeName]
		if a == nil {
			a = framework.Amounts{}
			own[p.Spec.NodeName] = a
		}
		for name, q := range framework.PodRequests(p) {
			a[name] += framework.Amount(name, q)
		}
		a[corev1.ResourcePods]++
	}
	var out []corev1.ResourceList
	for _, n := range view.Nodes() {
		used := view.Allocated(n.Name)
		free := corev1.ResourceList{}
		for name, q := range n.Status.Allocatable {
			left := framework.Amount(name, q) - used[name] + own[n.Name][name]
			if name == corev1.ResourceCPU {
				free[name] = *resource.NewMilliQuantity(left, resource.DecimalSI)
			} else {
				free[name] = *resource.NewQuantity(left, q.Format)
			}
		}
		out = append(out, free)
	}
	return out
}

// groupPods returns the pods of view that may be group's: those labeled for it, when the view
// can select them (framework.PodsWhere: the extender's cache), else every pod.
func groupPods(view framework.Cluster, group core.Key) []*corev1.Pod {
	if w, ok := view.(framework.PodsWhere); ok {
		return w.PodsWhere(func(namespace string, labels map[string]string) bool {
			k, ok := core.LabelsKey(namespace, labels)
			return ok && k == group
		})
	}
	return view.Pods()
}

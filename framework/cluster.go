package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Amounts are resource quantities as integers: cpu in millicores, every other resource in its
// base unit (bytes for memory and ephemeral-storage, a count for pods and extended resources).
type Amounts map[corev1.ResourceName]int64

// Amount returns q, a quantity of resource name, as an integer in the unit of Amounts.
func Amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Cluster is the extender's read-only view of the cluster, kept current by shared informers
// (package cluster). Agents that need more than the request carries depend on it; a process
// without cluster access hands them nil. Returned objects are shared: never modify them.
type Cluster interface {
	NodeLookup
	// HasSynced reports whether the caches have been filled once.
	HasSynced() bool
	// Nodes returns every node in the cache, in no particular order.
	Nodes() []*corev1.Node
	// Allocated returns the summed requests (as PodRequests computes them) of the
	// non-terminated pods bound to the node, plus the count of those pods under "pods".
	// It is maintained incrementally from pod events. A node without pods has an empty map.
	Allocated(node string) Amounts
	// Pods returns the non-terminated pods in the cache, bound or not, in no particular order.
	Pods() []*corev1.Pod
}

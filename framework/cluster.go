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
//
// A function judging nodes reads the node-scoped methods (Node, Allocated, and NodePods'
// PodsGeneration and PodsOn) only for the nodes it was given: its answer on a node then depends
// on that node's own state, which kube-scheduler's opportunistic batching re-checks for the
// node it chose. Nodes and Pods read the whole cluster: plugin mode signs no pod for batching
// for an agent that has called them (its answers may move with any placement).
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

// PodsWhere is optional on a Cluster: for an agent that wants a few pods of the cluster (a
// group's members) rather than all. The extender's cache implements it: it keeps pods as
// records and makes each pod it returns anew, so Pods costs a new object per pod of the cluster
// where PodsWhere costs one per pod returned.
type PodsWhere interface {
	// PodsWhere returns the pods Pods returns whose namespace and labels keep accepts (keep
	// must not modify the labels).
	PodsWhere(keep func(namespace string, labels map[string]string) bool) []*corev1.Pod
}

// NodePods gives the pods on one node without walking every pod of the cluster, for an agent
// whose work per node reads that node's pods (safe's load placed since a node's statistics).
// The extender's cache (package cluster) and plugin mode's snapshot implement it;
// Handle.NodePods hands it to agents. Returned pods are shared: never modify them.
type NodePods interface {
	// PodsGeneration returns a number that changes whenever a pod is added to the node,
	// removed from it or updated on it (and never comes back to an older set of pods): an
	// agent that derived something from PodsOn's pods at one generation may reuse it while
	// the generation is the same.
	PodsGeneration(node string) int64
	// PodsOn returns the non-terminated pods bound to node (in plugin mode, also those the
	// scheduler has assumed on it), in no particular order, and their generation.
	PodsOn(node string) (pods []*corev1.Pod, generation int64)
}

// PodsChange is one node whose pods changed, with its generation (PodsGeneration) when the
// change was read.
type PodsChange struct {
	Node       string
	Generation int64
}

// NodePodsChanges tells which nodes' pods changed since a point, for an agent that keeps
// something derived from every node's pods (pigeon's system of nodes) and would otherwise ask
// PodsGeneration of every node on every pod: its work then follows the changes, not the
// nodes. It is optional: both NodePods of this project implement it (the extender's cache, from
// a bounded journal of its changes; plugin mode's snapshot, from its NodeInfos' generations)
// and hand it to agents as Handle.PodsChanges; an agent keeps PodsGeneration per node as its
// fallback where the Handle has none. It reads the whole cluster, as Cluster.Nodes does: plugin mode signs
// no pod for batching for an agent that has called it.
type NodePodsChanges interface {
	// PodsChangedSince appends to changes the nodes whose pods changed after mark and returns
	// them with the mark of now (next), for the next call. mark is a next from an earlier call
	// (of the same NodePods), or 0 for the beginning. A node may be listed more than once and,
	// as PodsGeneration, with generation 0 when it has no pods left; a node that changed and
	// changed back is listed too. Every change that happens after the call is a change after
	// next: between two calls, no change is missed.
	//
	// known false means the changes since mark are no longer kept (or mark is not one of this
	// NodePods' marks): nothing was appended, and the caller reads every node itself
	// (PodsGeneration), after the call, then continues from next.
	PodsChangedSince(mark int64, changes []PodsChange) (out []PodsChange, next int64, known bool)
}

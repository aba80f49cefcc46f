package safe

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// nodeEntry is what the agent remembers of one version of a node (Agent.nodes, by name and
// resourceVersion): its inputs, and the latest answer of each function for one demand at
// one generation of the node's pods.
//
// A node's statistics change every few minutes and its pods with each placement on it, while
// the scheduler asks about every node for every pod: the adaptive filter judges the whole list
// (its verdicts depend on it), where the scheduler reads about a third at 2000 nodes. With the
// answers remembered, judging a node whose statistics and pods have not changed since the last
// pod of the same request is two lookups (this entry and the pods' generation) instead of the
// placed load, both resources' utilization, the risk and, for a rejection, its reason.
//
// An answer depends on the node (its version: inputs, allocatable), the pod's demand, the load
// placed since the statistics and the node's requests (both read from the node's pods: their
// generation, read before them, changes whenever they do and never comes back), the
// agent's configuration, and the time through the statistics' freshness only. So an answer is
// remembered only while the statistics are fresh (answerKey): a stale node is judged anew on
// every call, its reason saying its age.
type nodeEntry struct {
	rv string // the node's resourceVersion
	in nodeInputs
	// verdicts are the filter's latest verdicts: [0] for the node as it is (no demand), [1]
	// for a pod's demand (the adaptive filter may ask both in one call).
	verdicts [2]atomic.Pointer[verdictMemo]
	// scores are the priorities' latest scores, by slot (overloadSlot, balanceSlot,
	// fineBalanceSlot).
	scores [3]atomic.Pointer[scoreMemo]
}

// Slots of nodeEntry.scores.
const (
	overloadSlot = iota
	balanceSlot
	// fineBalanceSlot holds safe-balance's objective in millionths, for BalanceRelative.
	fineBalanceSlot
)

// verdictSlot is the place in nodeEntry.verdicts of a call's demand.
func verdictSlot(d demand) int {
	if d == (demand{}) {
		return 0
	}
	return 1
}

// answerKey is what an answer remembered in a nodeEntry was computed for, besides the node's
// version.
type answerKey struct {
	generation int64 // of the node's pods (0 without NodePods)
	d          demand
	// version is the estimator's (the placed pods' estimates); source the learned estimate's
	// (a rejection's reason names its evidence).
	version uint64
	source  string
}

// verdictMemo and scoreMemo are immutable once stored: a reader racing a writer sees the
// older answer or the newer one, whole.
type verdictMemo struct {
	key answerKey
	v   framework.Verdict
}

type scoreMemo struct {
	key answerKey
	s   int64
	// has: some resource of the node has statistics (see Agent.score).
	has bool
}

// entryBatch is how many nodes' entries entries looks up under one lock.
const entryBatch = 64

// entry returns n's entry, reading its inputs when n's version is new.
func (a *Agent) entry(n *corev1.Node) *nodeEntry {
	var out [1]*nodeEntry
	a.entries([]*corev1.Node{n}, out[:])
	return out[0]
}

// entries writes the entry of each node of nodes into out (len(out) >= len(nodes)), reading
// the inputs of the nodes whose version is new. A node without a resourceVersion gets a new
// entry, never kept (its version cannot be told from the next); two calls reading the same
// version share the entry kept first, and so its answers.
func (a *Agent) entries(nodes []*corev1.Node, out []*nodeEntry) {
	a.nodes.Get(nodes, out, func(n *corev1.Node) *nodeEntry { return &nodeEntry{rv: n.ResourceVersion, in: a.readNode(n)} })
}

// answerKey returns the key of n's answers for call c, keep false when they may not be
// remembered: n has no resourceVersion (its entry is not kept), its statistics are stale at the
// call's time, the agent reads the cluster without a generation of the node's pods to key the
// answers by (placeSince's walk of every pod), or the call prints a table (want false).
func (a *Agent) answerKey(n *corev1.Node, e *nodeEntry, c *call, want bool) (key answerKey, keep bool) {
	if !want || n.ResourceVersion == "" || (a.pods == nil && a.cluster != nil) {
		return answerKey{}, false
	}
	if a.maxAge > 0 && (e.in.cpu.measured || e.in.memory.measured) && e.in.stamp.freshness(c.now, a.maxAge).stale {
		return answerKey{}, false
	}
	key.d, key.version = c.d, c.version
	if c.d != (demand{}) {
		key.source = c.source
	}
	if a.pods != nil {
		key.generation = a.pods.PodsGeneration(n.Name)
	}
	return key, true
}

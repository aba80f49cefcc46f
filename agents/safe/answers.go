package safe

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// nodeEntry is what the agent remembers of one version of a node (Agent.nodes, by name and
// resourceVersion): its inputs, and what it prepared of them for every pod (prepared).
type nodeEntry struct {
	rv string // the node's resourceVersion
	in nodeInputs
	// prepared is the node prepared at the latest generation of its pods asked about.
	prepared atomic.Pointer[prepared]
}

// prepared is a node prepared for every pod: what the answers of one version of a node (its
// nodeEntry) need besides the pod, at one generation of its pods and one estimator version, and
// the answers given for each class of demand since (classAnswers).
//
// A node's statistics change every few minutes and its pods with each placement on it, while
// the scheduler asks about every node for every pod. An answer depends on the node (its version:
// inputs, allocatable), the load placed since the statistics and the node's requests (both read
// from the node's pods: their generation, read before them, changes whenever they do and never
// comes back), the pod's demand (its estimate) and, for a rejection's reason, its estimate's
// evidence, the agent's configuration, and the time through the statistics' freshness only. So
// the node part (base: the inputs with the placed load and the requests, what measure reads of
// the cluster) is read once per generation and estimator version; a pod's answer is then a
// lookup by its demand among the classes the node was asked about (pods of one workload ask
// the same), or, for a new class, both resources' utilization and risk from base, with no read
// of the cluster. Nothing is prepared for a node whose statistics are stale at the call's time
// (judged anew on every call, its reason saying its age), nor without a resourceVersion.
//
// The risk is not monotone in the demand (README, "Known behaviour of the definition": the
// moment-fitted Beta's risk can fall as mu grows), so no demand threshold stands for the
// filter's verdict: each class is judged (by the same code as the per-pod reference,
// judgeOne and scoreOne) and remembered.
type prepared struct {
	generation int64  // of the node's pods (0 without NodePods)
	departures uint64 // the node's departures' sequence (model.go)
	// seen is the departures' global sequence (departures.global) at which departures was last
	// found to be the node's: while no pod left any node since, it still is.
	seen    atomic.Uint64
	version uint64 // the estimator's
	base    nodeBase
	// classes are the answers by class of demand, replaced in turn past classSlots.
	classes [classSlots]atomic.Pointer[classAnswers]
	next    atomic.Uint32
}

// classSlots is how many classes of demand a prepared node remembers answers for: pods of a few
// workloads in turn each find theirs (a single slot per node made every pod of a mix of
// requests judge every node anew).
const classSlots = 8

// classKey is a class of demand: the pod's estimate and, when it is learned, its source (a
// rejection's reason names the evidence; a pod judged without its demand has none).
type classKey struct {
	d       demand
	learned bool
	source  string
}

// classOf returns the class of call c's demand.
func classOf(c *call) classKey {
	if !c.learned || c.d == (demand{}) {
		return classKey{d: c.d}
	}
	return classKey{d: c.d, learned: true, source: c.source}
}

// classAnswers are a prepared node's answers for one class of demand, each stored once known:
// immutable once stored, a reader racing a writer sees none (and computes the same) or the one
// stored.
type classAnswers struct {
	key classKey
	// judgement is the node's projection for this class (pipeline.go), made once and read by
	// the filter and the priorities.
	judgement atomic.Pointer[judgement]
	verdict   atomic.Pointer[framework.Verdict]
	// scores are the priorities' scores, by slot (overloadSlot, balanceSlot, fineBalanceSlot).
	scores [3]atomic.Pointer[scoreMemo]
}

// Slots of classAnswers.scores.
const (
	overloadSlot = iota
	balanceSlot
	// fineBalanceSlot holds safe-balance's objective in millionths, for BalanceRelative.
	fineBalanceSlot
)

type scoreMemo struct {
	s int64
	// has: some resource of the node has statistics (see Agent.score).
	has bool
}

// class returns p's answers for class k, empty ones (kept) when k is new.
func (p *prepared) class(k classKey) *classAnswers {
	for i := range p.classes {
		if ca := p.classes[i].Load(); ca != nil && ca.key == k {
			return ca
		}
	}
	ca := &classAnswers{key: k}
	p.classes[(p.next.Add(1)-1)%classSlots].Store(ca)
	return ca
}

// entryBatch is how many nodes' entries entries looks up under one lock.
const entryBatch = 64

// entry returns n's entry, reading its inputs when n's version is new.
func (a *Agent) entry(n *corev1.Node) *nodeEntry {
	var out [1]*nodeEntry
	a.entries(nil, nil, []*corev1.Node{n}, out[:])
	return out[0]
}

// entries writes the entry of each node of nodes into out (len(out) >= len(nodes)), reading
// the inputs of the nodes whose version is new: by position in list (at: each node's) when the
// call's nodes are in plugin mode's shared list, else by name. A node without a resourceVersion
// gets a new entry, never kept (its version cannot be told from the next); two calls reading
// the same version by name share the entry kept first, and so its answers.
func (a *Agent) entries(list framework.NodeList, at []int32, nodes []*corev1.Node, out []*nodeEntry) {
	read := func(n *corev1.Node) *nodeEntry { return &nodeEntry{rv: n.ResourceVersion, in: a.readNode(n)} }
	if at != nil {
		a.listed.Get(list, at, nodes, out, read)
		return
	}
	a.nodes.Get(nodes, out, read)
}

// generationOf returns the generation of n's pods (NodePods.PodsGeneration), read by position
// (at >= 0: n's in c.list) when the call's nodes are in a shared list.
func (a *Agent) generationOf(n *corev1.Node, c *call, at int32) int64 {
	if at >= 0 && c.list != nil {
		return c.list.PodsGenerationAt(int(at))
	}
	return a.pods.PodsGeneration(n.Name)
}

// prepare returns n's prepared form for call c (e: n's entry), from e while n's pods and the
// estimator are unchanged, or nil when the answer must be judged per pod: n has no
// resourceVersion (its entry is not kept), its statistics are stale at the call's time, the
// agent reads the cluster without a generation of the node's pods to key them by (placeSince's
// walk of every pod), or the call prints a table (want false). at is n's position in c.list
// (-1: none).
func (a *Agent) prepare(n *corev1.Node, e *nodeEntry, c *call, want bool, at int32) *prepared {
	// e.rv is n's resourceVersion (the memos give the entry read from n's version), read from
	// the entry in hand rather than from n: on the path of a node prepared before, n itself is
	// not read at all.
	if !want || e.rv == "" || (a.pods == nil && a.cluster != nil) {
		return nil
	}
	if a.maxAge > 0 && (e.in.cpu.measured || e.in.memory.measured) && e.in.stamp.freshness(c.now, a.maxAge).stale {
		return nil
	}
	var generation int64
	if a.pods != nil {
		generation = a.generationOf(n, c, at) // before the pods: never newer than what is read
	}
	global := a.departed.global() // before the node's: seen never claims a newer sequence than read
	old := e.prepared.Load()
	if old != nil && old.generation == generation && old.version == c.version && old.seen.Load() == global {
		return old // no pod left any node since old's departures were found current
	}
	seq := a.departed.seqOf(n.Name)
	if old != nil && old.generation == generation && old.departures == seq && old.version == c.version {
		old.seen.Store(global)
		return old
	}
	// The load placed since the statistics as placeSince prepares it for any call (a call
	// that skipped it, the filter off, must not prepare a node without it).
	pc := call{version: c.version, indexed: a.pods != nil && a.cluster != nil && a.share > 0}
	p := &prepared{generation: generation, departures: seq, version: c.version, base: a.base(n, &e.in, &e.in.cpu, &e.in.memory, a.placed(n, &e.in, &pc))}
	p.seen.Store(global)
	e.prepared.Store(p) // racing calls prepare the same, or a newer generation that the next call replaces
	return p
}

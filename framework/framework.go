// Package framework defines what an agent is: a named collection of filter and prioritize
// functions serving one objective. The HTTP layer (package server) serves any Agent; agents
// (packages under agents/) implement it and import nothing of each other or of the server.
package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// MaxScore is the highest score a prioritize function may give (kube-scheduler's
// MaxExtenderPriority). The server clamps scores to [0, MaxScore].
const MaxScore = extenderv1.MaxExtenderPriority

// Agent is a collection of filter ("predicate") and prioritize ("priority") functions.
// Function names are route names: a Filter named "x" is served at /scheduler/predicates/x and a
// Prioritizer named "x" at /scheduler/priorities/x. Names must be unique among the agents
// served by one process.
type Agent interface {
	Name() string
	Filters() []Filter
	Prioritizers() []Prioritizer
}

// Filter is a named filter function.
type Filter struct {
	Name string
	Func FilterFunc
	// Aliases are more verbs (paths under /scheduler/) serving the same function, so that a
	// scheduler configured for another extender the agent replaces reaches it unchanged (the
	// telemetry agent answers Telemetry Aware Scheduling's "filter"). Optional.
	Aliases []string
	// WholeList: the verdict on a node depends on the other nodes judged in the same call (safe's
	// adaptive filter asks whether any node can hold the pod). Plugin mode then judges every
	// node of the scheduler's list in one call instead of chunk by chunk as the scheduler asks.
	WholeList bool
	// ForList, for a WholeList filter, returns a function that judges any nodes of list (any
	// subset, in any order, in any number of calls) as Func judges them in one call over the
	// whole list, with what it needs of the list worked out once (whether any node can hold the
	// pod, for safe's adaptive filter). Plugin mode then calls ForList once per pod and judges
	// chunk by chunk as the scheduler asks: the cost follows the nodes asked about, not the
	// list. list is shared: never modify it. Optional; the extender serves Func.
	ForList func(ctx context.Context, pod *corev1.Pod, list []*corev1.Node) (FilterFunc, error)
	// Batchable, for a WholeList filter, declares that a pod placed on one node of the list
	// never makes a later call, for a pod of the same signature, more lenient on the other nodes
	// while any of them that passed before still passes (safe's adaptive filter: some node still
	// takes the pod, so it still judges with the pod's request added). kube-scheduler's
	// opportunistic batching (plugin mode) reuses one pod's feasible nodes and scores for the
	// next pod of the same signature, judging again only the node it chose last and the node it
	// places the pod on; plugin mode signs pods for a WholeList filter only when it declares
	// this. A filter that is not WholeList judges each node by itself and declares nothing.
	Batchable bool
}

// Prioritizer is a named prioritize function.
type Prioritizer struct {
	Name string
	Func PrioritizeFunc
	// Aliases are more verbs serving the same function (see Filter.Aliases). Optional.
	Aliases []string
	// WholeList: the score of a node depends on the other nodes scored in the same call (a
	// ranking or a normalization over them: telemetry's scheduleonmetric, pigeon's objective,
	// safe's relative balance). Plugin mode then scores every feasible node in one call in
	// PreScore; otherwise it scores them chunk by chunk as kube-scheduler asks in Score, so that
	// opportunistic batching, which asks again for the score of the one node it chose last,
	// costs one chunk instead of every candidate. Scoring any subset of the nodes must give each
	// node the score it gets in one call over all of them, unless this is set.
	WholeList bool
}

// FilterFunc judges every node for pod and returns exactly one Verdict per node, in the order
// of nodes. Nodes are the NodeView of the candidates and may come from a shared cache: a
// FilterFunc must not modify them, nor the slice (plugin mode hands out part of its list). An error means the function could judge no node (for
// example, a source it depends on is unavailable): the extender answers it in the result's
// Error, and the scheduler then fails the pod's cycle or, for an ignorable extender, skips it.
// A rejection is a Verdict, never an error.
type FilterFunc func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]Verdict, error)

// PrioritizeFunc scores every node for pod and returns exactly one score per node, in the
// order of nodes, each in [0, MaxScore]. Nodes must not be modified, nor the slice. An error means the
// function could score no node: the extender answers 500 with its message, and the scheduler
// ignores this prioritizer for the pod.
type PrioritizeFunc func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error)

// Verdict is a filter function's judgement of one node. The zero Verdict passes the node.
type Verdict struct {
	// Reason, when not empty, rejects the node; it is shown to users in the pod's events.
	Reason string
	// Unresolvable marks a rejection that preemption cannot fix
	// (reported in FailedAndUnresolvableNodes instead of FailedNodes).
	Unresolvable bool
}

// Passes reports whether the verdict lets the node through.
func (v Verdict) Passes() bool { return v.Reason == "" }

// Reject returns a verdict that rejects a node for reason; preemption may help.
func Reject(reason string) Verdict { return Verdict{Reason: reason} }

// RejectUnresolvable returns a verdict that rejects a node for reason; preemption cannot help.
func RejectUnresolvable(reason string) Verdict { return Verdict{Reason: reason, Unresolvable: true} }

// NodeLookup resolves node names to node objects. It serves requests from a scheduler
// configured with nodeCacheCapable: true, which sends node names only. The returned node is
// shared and must not be modified.
type NodeLookup interface {
	Node(name string) (*corev1.Node, bool)
}

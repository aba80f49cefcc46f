// Package decisions keeps the last filter and prioritize decisions of the agents, in either mode:
// the extender's GET /debug/decisions (package server) and kube-safe-scheduler's /configz
// (package scheduler/adapter) read one Log, rendered as framework.DecisionJSON, which
// `extender explain` reads back. It holds what the two modes share: the bound on what is kept
// (Config: DECISIONS_KEPT, DECISIONS_INPUTS_BYTES; InputsKept), the pod key, and the lookup of an agent's explanation.
package decisions

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// ReasonUnknownNode is the filter reason of a node name the extender's node lookup does not
// know (nodeCacheCapable requests): the extender answers it, and a decision shows it.
const ReasonUnknownNode = "unknown to the extender's cache"

// InputsKept bounds the agents' inputs (framework.Explainer) a Log keeps, in nodes, beside its
// bound in bytes (Config.InputsBytes): the newest decisions keep theirs; older ones lose them
// first.
const InputsKept = 50_000

// Decision is one answered filter or prioritize call, kept as the caller had it: the nodes'
// names and the agent's verdicts or scores are retained, not copied (about 40 bytes a node), and
// rendered only when the log is read.
type Decision struct {
	Time                  time.Time
	Pod                   string // PodKey
	Agent, Function, Verb string // Verb: "filter" or "prioritize"
	// Err is the function's error: the decision shows no node.
	Err   string
	Names []string
	// Index maps the k-th verdict or score to Names[Index[k]]; nil when every name has one. A
	// name left out is unknown to the extender's cache (ReasonUnknownNode, or a score of 0).
	Index    []int
	Verdicts []framework.Verdict
	// Scores are the agent's (clamped to 0..framework.MaxScore when shown).
	Scores []int64
	// Inputs[k] is what the agent saw of the k-th node judged or scored (framework.Explainer);
	// nil without. With Judged, Inputs[i] is what it saw of the i-th node of the list (Explained).
	Inputs []framework.Inputs
	// Judged, when not nil, are a filter's verdicts judged while the cycle runs (plugin mode
	// judges chunk by chunk as kube-scheduler asks): the nodes judged by the time the log is
	// read are shown, and Names, Index and Verdicts are unused.
	Judged Judged
}

// Judged are the verdicts of a filter judged while the cycle runs.
type Judged interface {
	// EachJudged calls fn for every node judged so far, in the order of the cycle's list, with
	// its position in the list. It may run while more nodes are judged.
	EachJudged(fn func(i int, node string, v framework.Verdict))
}

// Log is a bounded ring of the last decisions, with one bound on the decisions (its capacity)
// and two on the inputs they keep (InputsKept nodes, and Config.InputsBytes, estimated). It is
// safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	ring []*Entry
	next int
	full bool
	// inputNodes counts the nodes whose inputs the ring holds; inputsKept bounds it.
	inputNodes, inputsKept int
	// inputBytes estimates the heap those inputs hold (estimateBytes); bytesKept bounds it.
	inputBytes, bytesKept int64
}

// Entry is a decision in a Log, to which inputs may be added while its cycle runs (Explained).
type Entry struct {
	log *Log
	d   Decision
	// inputs counts the nodes of d.Inputs, and bytes estimates their heap, which the log's
	// bounds count.
	inputs int
	bytes  int64
	// gone: the entry left the ring, or lost its inputs to the bound; it takes no more.
	gone bool
}

// NewLog returns a log of the last n decisions (n >= 1), keeping inputs within the default
// bound in bytes (DefaultInputsBytes).
func NewLog(n int) *Log { return newLog(n, InputsKept, DefaultInputsBytes) }

// New returns the log c describes (c.Kept >= 1; c validated).
func New(c Config) *Log { return newLog(c.Kept, InputsKept, c.InputsBytes) }

func newLog(n, inputsKept int, bytesKept int64) *Log {
	return &Log{ring: make([]*Entry, n), inputsKept: inputsKept, bytesKept: bytesKept}
}

// Capacity is how many decisions the log keeps.
func (l *Log) Capacity() int { return len(l.ring) }

// Add keeps d, pushing the oldest decision out of a full ring, and returns its entry.
func (l *Log) Add(d Decision) *Entry {
	e := &Entry{log: l, d: d, inputs: len(d.Inputs), bytes: estimateBytes(d.Inputs)}
	l.mu.Lock()
	if old := l.ring[l.next]; old != nil {
		l.inputNodes -= old.inputs
		l.inputBytes -= old.bytes
		old.gone = true
	}
	l.ring[l.next] = e
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
	l.inputNodes += e.inputs
	l.inputBytes += e.bytes
	l.trim()
	l.mu.Unlock()
	return e
}

// Explained adds what the agent saw of the nodes at positions at.. of a Judged decision's list
// (in, one entry per node, as Inputs returns it). Nothing is kept once the entry has left the
// ring or lost its inputs to the bound.
func (e *Entry) Explained(at int, in []framework.Inputs) {
	if e == nil || len(in) == 0 {
		return
	}
	l := e.log
	b := estimateBytes(in) // outside the lock
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.gone {
		return
	}
	if need := at + len(in); need > len(e.d.Inputs) {
		e.d.Inputs = append(e.d.Inputs, make([]framework.Inputs, need-len(e.d.Inputs))...)
	}
	copy(e.d.Inputs[at:], in)
	e.inputs += len(in)
	e.bytes += b
	l.inputNodes += len(in)
	l.inputBytes += b
	l.trim()
}

// trim drops the inputs of the oldest decisions holding some while the ring holds more than
// inputsKept nodes' or more than bytesKept bytes of them (l.mu held).
func (l *Log) trim() {
	for i := 0; (l.inputNodes > l.inputsKept || l.inputBytes > l.bytesKept) && i < len(l.ring); i++ {
		old := l.ring[(l.next+i)%len(l.ring)]
		if old == nil || old.inputs == 0 {
			continue
		}
		l.inputNodes -= old.inputs
		l.inputBytes -= old.bytes
		old.d.Inputs, old.inputs, old.bytes, old.gone = nil, 0, 0, true
	}
}

// Last returns the kept decisions about pod ("" for every pod), newest first, at most limit.
func (l *Log) Last(pod string, limit int) []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	var out []Decision
	for i := 1; i <= n && len(out) < limit; i++ {
		e := l.ring[(l.next-i+len(l.ring))%len(l.ring)]
		if pod != "" && e.d.Pod != pod {
			continue
		}
		d := e.d
		if d.Judged != nil {
			// Explained writes into the list's inputs while the cycle runs.
			d.Inputs = slices.Clone(d.Inputs)
		}
		out = append(out, d)
	}
	return out
}

// Render returns the last decisions about pod ("" for every pod), newest first, at most limit,
// as /debug/decisions and /configz show them.
func (l *Log) Render(pod string, limit int) []framework.DecisionJSON {
	kept := l.Last(pod, limit)
	out := make([]framework.DecisionJSON, 0, len(kept))
	for i := range kept {
		out = append(out, kept[i].Render())
	}
	return out
}

// Render shows every node of the decision: its verdict ("pass", "fail", "unresolvable") and
// reason, or its score (clamped to 0..framework.MaxScore), and what the agent saw of it.
func (d *Decision) Render() framework.DecisionJSON {
	out := framework.DecisionJSON{Time: d.Time, Pod: d.Pod, Agent: d.Agent, Function: d.Function, Verb: d.Verb, Error: d.Err}
	if d.Err != "" {
		return out
	}
	if d.Judged != nil {
		d.Judged.EachJudged(func(i int, node string, v framework.Verdict) {
			nd := framework.NodeDecision{Node: node}
			nd.SetVerdict(v)
			if i < len(d.Inputs) {
				nd.Inputs = d.Inputs[i]
			}
			out.Nodes = append(out.Nodes, nd)
		})
		return out
	}
	if len(d.Names) == 0 {
		return out
	}
	out.Nodes = make([]framework.NodeDecision, len(d.Names))
	known := make([]bool, len(d.Names))
	for i, n := range d.Names {
		out.Nodes[i].Node = n
	}
	count := len(d.Verdicts)
	if d.Verdicts == nil {
		count = len(d.Scores)
	}
	for k := 0; k < count; k++ {
		i := k
		if d.Index != nil {
			i = d.Index[k]
		}
		known[i] = true
		nd := &out.Nodes[i]
		if d.Inputs != nil {
			nd.Inputs = d.Inputs[k]
		}
		if d.Verdicts != nil {
			nd.SetVerdict(d.Verdicts[k])
		} else {
			s := ClampScore(d.Scores[k])
			nd.Score = &s
		}
	}
	for i := range out.Nodes {
		if known[i] {
			continue
		}
		if d.Verdicts != nil {
			out.Nodes[i].Verdict, out.Nodes[i].Reason = "fail", ReasonUnknownNode
		} else {
			zero := int64(0)
			out.Nodes[i].Score = &zero
		}
	}
	return out
}

// ClampScore returns s within 0..framework.MaxScore, as kube-scheduler must receive it.
func ClampScore(s int64) int64 { return min(max(s, 0), framework.MaxScore) }

// PodKey is how a decision names its pod: namespace/name.
func PodKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// Explain asks an agent what it saw of each node for one of its functions.
type Explain func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs

// ExplainerOf returns agent's explanation of function (verb "filter" or "prioritize"), nil when
// agent does not implement framework.Explainer.
func ExplainerOf(agent any, function, verb string) Explain {
	ex, ok := agent.(framework.Explainer)
	if !ok || ex == nil {
		return nil
	}
	return func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
		return ex.Explain(ctx, function, verb, pod, nodes)
	}
}

// Inputs returns what the agent saw of nodes: nil when ex is nil, and nil when the agent's
// answer does not have one entry per node (a decision never shows inputs beside the wrong node).
func (ex Explain) Inputs(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	if ex == nil {
		return nil
	}
	in := ex(ctx, pod, nodes)
	if len(in) != len(nodes) {
		return nil
	}
	return in
}

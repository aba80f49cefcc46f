package adapter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// judgeChunk is how many consecutive nodes of the snapshot's list one call of a filter function
// judges when Filter asks about one of them. kube-scheduler filters the list's nodes in runs of
// consecutive positions (its parallel workers take chunks of about sqrt(nodes)) and stops once it
// has found enough feasible nodes (percentageOfNodesToScore: 34 % of 2000 nodes, 10 % of 5000),
// so a chunk judges few nodes the scheduler does not ask about, while the function's per-call
// work (the pod's requests, say) is shared by the chunk's nodes.
const judgeChunk = 16

// verdicts are one cycle's verdicts of a filter plugin, judged chunk by chunk as Filter asks:
// PreFilter does only the per-cycle work (the node list and its positions, cached while the
// snapshot's list is unchanged). A filter function's verdict on a node depends on the pod and
// that node only (FilterFunc: the extender gets any subset of the nodes), so judging by chunks
// gives the verdicts judging all the nodes at once gives; a filter whose verdicts depend on the
// whole list (framework.Filter.WholeList) is judged in one chunk of every node.
type verdicts struct {
	list *nodeList
	// filter judges the chunks: the plugin's filter function, or the one its ForList gave for
	// this cycle's list.
	filter framework.FilterFunc
	size   int // nodes per chunk, >= 1
	// chunks holds each chunk once a Filter asks about one of its nodes: of a list's chunks,
	// a cycle judges those up to the scheduler's number of feasible nodes (at 5000 nodes, a
	// tenth), so only a pointer per chunk is allocated per pod, not every chunk's state.
	chunks []atomic.Pointer[chunk]
	// explain, when the adapter keeps decisions, asks the agent what it saw of each chunk's
	// nodes, kept in the cycle's decision, entry.
	explain decisions.Explain
	entry   *decisions.Entry
}

type chunk struct {
	once sync.Once
	out  []framework.Verdict
	err  error
	// judged is set once out and err are written (and what the agent saw of the chunk's nodes
	// is in the decision, when decisions are kept), for the decisions' readers.
	judged atomic.Bool
}

// Clone implements fwk.StateData: the chunks are judged once and never modified after, so a
// clone (preemption's, say) may share them.
func (v *verdicts) Clone() fwk.StateData { return v }

// verdict returns the verdict of the node at position i of the list, judging its chunk with
// v.filter if no one has yet.
func (v *verdicts) verdict(ctx context.Context, pod *corev1.Pod, i int) (framework.Verdict, error) {
	c := v.chunk(i / v.size)
	lo := i / v.size * v.size
	c.once.Do(func() {
		hi := min(lo+v.size, len(v.list.views))
		nodes := v.list.views[lo:hi:hi] // shared: a FilterFunc modifies neither its nodes nor the slice
		c.out, c.err = v.filter(framework.WithPositions(ctx, v.list.positions(lo, hi)), pod, nodes)
		if c.err == nil && len(c.out) != len(nodes) {
			c.err = fmt.Errorf("returned %d verdicts for %d nodes", len(c.out), len(nodes))
		}
		if c.err == nil && v.explain != nil {
			v.entry.Explained(lo, v.explain.Inputs(ctx, pod, nodes))
		}
		c.judged.Store(true)
	})
	if c.err != nil {
		return framework.Verdict{}, c.err
	}
	return c.out[i-lo], nil
}

// chunk returns the k-th chunk, made when first asked for.
func (v *verdicts) chunk(k int) *chunk {
	if c := v.chunks[k].Load(); c != nil {
		return c
	}
	c := &chunk{}
	if v.chunks[k].CompareAndSwap(nil, c) {
		return c
	}
	return v.chunks[k].Load() // another Filter made it first
}

// newVerdicts returns the verdicts of a cycle over list, judged size nodes at a time by filter,
// none judged yet.
func newVerdicts(list *nodeList, size int, filter framework.FilterFunc) *verdicts {
	size = max(size, 1)
	return &verdicts{list: list, filter: filter, size: size, chunks: make([]atomic.Pointer[chunk], (len(list.views)+size-1)/size)}
}

// scoreChunk is how many feasible nodes one call of a prioritize function scores when Score
// asks about one of them (chunkScores). In a full cycle kube-scheduler asks about every feasible
// node, so every chunk is scored and the chunk only bounds the calls' fixed work (safe's pod
// estimate, say: one call per 32 nodes); opportunistic batching's rescoring asks about one node.
const scoreChunk = 32

// scoreTable is one cycle's scores of a score plugin, already scaled.
type scoreTable interface {
	fwk.StateData
	score(ctx context.Context, node *corev1.Node) (int64, bool)
}

// fixedScores are the scaled scores of one cycle's feasible nodes, computed in PreScore, by the
// node's index among them (no map to build per cycle, nothing for the garbage collector to scan).
// A scaled score fits a byte (0..fwk.MaxNodeScore): a table of 2000 nodes is 2 KB per pod.
type fixedScores struct {
	feasible *feasibleViews
	scores   []int8
}

// A scaled score must fit fixedScores' int8 (this fails to compile otherwise).
const _ = uint8(127 - fwk.MaxNodeScore)

// newFixedScores keeps scaled(i), the scaled score of f's i-th feasible node, for each.
func newFixedScores(f *feasibleViews, scaled func(i int) int64) *fixedScores {
	s := &fixedScores{feasible: f, scores: make([]int8, f.n)}
	for i := range s.scores {
		s.scores[i] = int8(scaled(i)) // 0..fwk.MaxNodeScore
	}
	return s
}

// Clone implements fwk.StateData: the scores are never modified once written.
func (s *fixedScores) Clone() fwk.StateData { return s }

func (s *fixedScores) score(_ context.Context, node *corev1.Node) (int64, bool) {
	i, ok := s.feasible.index(node)
	if !ok {
		return 0, false
	}
	return int64(s.scores[i]), true
}

// chunkScores are one cycle's scores of a score plugin whose prioritize functions score each
// node by itself (framework.Prioritizer.WholeList unset), computed chunk by chunk of the
// feasible nodes as Score asks: PreScore only finds where the feasible nodes are. A full
// cycle asks about every feasible node, in parallel (kube-scheduler's Score workers), and so
// scores them all; opportunistic batching's rescoring runs PreScore over every cached candidate
// to ask about one node, the node chosen last, and so scores one chunk, not every candidate.
type chunkScores struct {
	feasible *feasibleViews
	// compute scores views, the feasible nodes' from index lo on, into out (len(views), zero):
	// exactly len(views) scaled scores, even with an error (then logged by fail, once per
	// table).
	compute func(ctx context.Context, lo int, views []*corev1.Node, out []int64) error
	fail    func(error)
	failed  sync.Once
	// once[k] computes chunk k's scaled scores into scores[k*scoreChunk:]: one table per pod,
	// each chunk writing its own part.
	once   []sync.Once
	scores []int8
}

// newChunkScores returns f's scores, none computed yet, each chunk to be computed by compute.
func newChunkScores(f *feasibleViews, compute func(ctx context.Context, lo int, views []*corev1.Node, out []int64) error, fail func(error)) *chunkScores {
	return &chunkScores{feasible: f, compute: compute, fail: fail, once: make([]sync.Once, (f.n+scoreChunk-1)/scoreChunk), scores: make([]int8, f.n)}
}

// Clone implements fwk.StateData: each chunk is computed once and never modified after, so a
// clone (batching's rescoring state, say) may share them.
func (s *chunkScores) Clone() fwk.StateData { return s }

// chunkBuffers hold a chunk's unscaled scores while it is computed (scratch, never kept).
var chunkBuffers = sync.Pool{New: func() any { return new([scoreChunk]int64) }}

func (s *chunkScores) score(ctx context.Context, node *corev1.Node) (int64, bool) {
	i, ok := s.feasible.index(node)
	if !ok {
		return 0, false
	}
	lo := i / scoreChunk * scoreChunk
	s.once[i/scoreChunk].Do(func() {
		hi := min(lo+scoreChunk, s.feasible.n)
		buf := chunkBuffers.Get().(*[scoreChunk]int64)
		defer chunkBuffers.Put(buf)
		out := buf[:hi-lo]
		clear(out)
		if err := s.compute(s.feasible.withPositions(ctx, lo, hi), lo, s.feasible.viewsOf(lo, hi), out); err != nil {
			s.failed.Do(func() { s.fail(err) })
		}
		for k, v := range out {
			s.scores[lo+k] = int8(v) // 0..fwk.MaxNodeScore
		}
	})
	return int64(s.scores[i]), true
}

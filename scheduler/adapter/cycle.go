package adapter

import (
	"context"
	"fmt"
	"slices"
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
	chunks []chunk
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
	c := &v.chunks[i/v.size]
	lo := i / v.size * v.size
	c.once.Do(func() {
		nodes := slices.Clone(v.list.views[lo:min(lo+v.size, len(v.list.views))])
		c.out, c.err = v.filter(ctx, pod, nodes)
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

// newVerdicts returns the verdicts of a cycle over list, judged size nodes at a time by filter,
// none judged yet.
func newVerdicts(list *nodeList, size int, filter framework.FilterFunc) *verdicts {
	size = max(size, 1)
	return &verdicts{list: list, filter: filter, size: size, chunks: make([]chunk, (len(list.views)+size-1)/size)}
}

// scoreTable is one cycle's scores of a score plugin, already scaled.
type scoreTable interface {
	fwk.StateData
	score(name string) (int64, bool)
}

// listScores are scores by position in a list of nodes (no map to build per cycle, nothing
// for the garbage collector to scan); a node not scored holds -1. A scaled score fits a byte
// (0..fwk.MaxNodeScore): a score plugin's table of 2000 nodes is 2 KB per pod, not 16.
type listScores struct {
	pos    map[string]int32
	scores []int8
}

// A scaled score must fit listScores' int8 (this fails to compile otherwise).
const _ = uint8(127 - fwk.MaxNodeScore)

// Clone implements fwk.StateData: the scores are never modified once written.
func (s *listScores) Clone() fwk.StateData { return s }

func (s *listScores) score(name string) (int64, bool) {
	i, ok := s.pos[name]
	if !ok || s.scores[i] < 0 {
		return 0, false
	}
	return int64(s.scores[i]), true
}

// mapScores are scores by node name, for nodes outside the cached list.
type mapScores map[string]int64

// Clone implements fwk.StateData: the scores are never modified once written.
func (s mapScores) Clone() fwk.StateData { return s }

func (s mapScores) score(name string) (int64, bool) {
	v, ok := s[name]
	return v, ok
}

// newScores keeps the scaled scores of views (in order) in a table: by position in list when
// every view is in it, by name otherwise.
func newScores(list *nodeList, views []*corev1.Node, scaled func(i int) int64) scoreTable {
	if list != nil {
		s := &listScores{pos: list.pos, scores: make([]int8, len(list.views))}
		for i := range s.scores {
			s.scores[i] = -1
		}
		complete := true
		for i, n := range views {
			j, ok := list.pos[n.Name]
			if !ok || list.views[j] != n {
				complete = false
				break
			}
			s.scores[j] = int8(scaled(i)) // 0..fwk.MaxNodeScore
		}
		if complete {
			return s
		}
	}
	m := make(mapScores, len(views))
	for i, n := range views {
		m[n.Name] = scaled(i)
	}
	return m
}

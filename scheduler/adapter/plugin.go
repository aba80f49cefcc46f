package adapter

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// scoreScale turns an agent's score (0..framework.MaxScore) into the framework's (0..MaxNodeScore).
const scoreScale = fwk.MaxNodeScore / framework.MaxScore

// scaled is an agent's score s in the framework's range: clamped to 0..framework.MaxScore, as the
// extender clamps it, then times scoreScale.
func scaled(s int64) int64 { return min(max(s, 0), framework.MaxScore) * scoreScale }

// base is what every plugin has: its name and its agent's functions.
type base struct {
	name    string
	adapter *Adapter
	fns     *funcs
}

// Name implements fwk.Plugin.
func (b *base) Name() string { return b.name }

// podSignature is the signature fragment of every plugin: what of the pod an agent function
// may read (its namespace, labels, annotations, owner references and spec, the node name still
// empty). The owner references and labels say the pod's workload (package workload: safe's
// learned estimates are by workload), the spec its requests.
const podSignature = "kube-safe-scheduler.Pod(namespace,labels,annotations,ownerReferences,spec)"

// SignPod implements fwk.SignPlugin, for kube-scheduler's opportunistic batching: the next pod
// of the same signature (within 0.5 s) may reuse the previous pod's feasible nodes and scores,
// the node chosen last judged again (Filter, PreScore, Score) and the node the pod is placed on
// filtered again. That holds for a function whose answer on a node depends on the pod and that
// node's NodeInfo only. The adapter cannot read the agents' code, so it signs a pod (with
// everything an agent may read of it) unless
//   - its agent reads the whole cluster (framework.Offer.WholeCluster: pigeon-holing, gang),
//     whose every placement may move its answers on every node (the node-scoped reads,
//     Allocated or PodsOn, are of the node judged: framework.Cluster), or has read it without
//     saying so (framework.Cluster's Nodes or Pods; logged once as the agent's defect); or
//   - its filter is WholeList (a verdict depends on the other nodes) and does not declare its
//     verdicts reusable (framework.Filter.Batchable);
//
// then it refuses, and the scheduler runs the whole cycle for that pod. kube-scheduler signs a pod
// when it enters the queue, so what is known before any answer decides: a backlog queued at the
// scheduler's start is signed too.
func (b *base) SignPod(_ context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	switch {
	case b.fns.wholeList && !b.fns.batchable:
		return nil, fwk.NewStatus(fwk.Unschedulable, "the filter judges a node by the other nodes (WholeList) and does not declare its verdicts reusable (Batchable)")
	case b.fns.wholeCluster:
		return nil, fwk.NewStatus(fwk.Unschedulable, "the agent reads the whole cluster (WholeCluster): its answers may change with every placement")
	case b.fns.cluster != nil && b.fns.cluster.wholeRead.Load():
		return nil, fwk.NewStatus(fwk.Unschedulable, "the agent has read the whole cluster, though its Registration does not say so (WholeCluster)")
	}
	return []fwk.SignFragment{{Key: podSignature, Value: struct {
		Namespace       string
		Labels          map[string]string
		Annotations     map[string]string
		OwnerReferences []metav1.OwnerReference
		Spec            corev1.PodSpec
	}{pod.Namespace, pod.Labels, pod.Annotations, pod.OwnerReferences, pod.Spec}}}, nil
}

// SignPod implements fwk.SignPlugin (both embedded plugins have the same).
func (p *filterScorePlugin) SignPod(ctx context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return p.filterPlugin.SignPod(ctx, pod)
}

// filterPlugin is an agent's filter function.
type filterPlugin struct {
	base
	key  fwk.StateKey
	last lastWrite // of key
}

// scorePlugin is an agent's prioritize function.
type scorePlugin struct {
	base
	key  fwk.StateKey
	last lastWrite // of key
}

// lastWrite remembers the CycleState a plugin last wrote its cycle's data into (PreFilter's
// verdicts, PreScore's scores), with the data: the per-node calls of that cycle (Filter, Score:
// thousands per pod) then find it by one comparison instead of CycleState.Read's lookup by key
// (a string hashed, a concurrent map probed). Any other state (preemption's clone, batching's,
// another profile's cycle) is read by key as before; a state that is the one remembered holds
// that data, since the plugin writes the key before any of the cycle's per-node calls.
type lastWrite struct{ p atomic.Pointer[written] }

type written struct {
	state fwk.CycleState
	data  fwk.StateData
}

// write writes data under key into state, and remembers both.
func (w *lastWrite) write(state fwk.CycleState, key fwk.StateKey, data fwk.StateData) {
	state.Write(key, data)
	w.p.Store(&written{state: state, data: data})
}

// read returns what state holds under key.
func (w *lastWrite) read(state fwk.CycleState, key fwk.StateKey) (fwk.StateData, error) {
	if e := w.p.Load(); e != nil && e.state == state {
		return e.data, nil
	}
	return state.Read(key)
}

// filterScorePlugin is an agent's filter and prioritize functions of one name.
type filterScorePlugin struct {
	filterPlugin
	scorePlugin
}

var (
	_ fwk.PreFilterPlugin = (*filterPlugin)(nil)
	_ fwk.FilterPlugin    = (*filterPlugin)(nil)
	_ fwk.PreScorePlugin  = (*scorePlugin)(nil)
	_ fwk.ScorePlugin     = (*scorePlugin)(nil)
	_ fwk.FilterPlugin    = (*filterScorePlugin)(nil)
	_ fwk.ScorePlugin     = (*filterScorePlugin)(nil)
	_ fwk.SignPlugin      = (*filterPlugin)(nil)
	_ fwk.SignPlugin      = (*scorePlugin)(nil)
	_ fwk.SignPlugin      = (*filterScorePlugin)(nil)
)

// Name implements fwk.Plugin (both embedded plugins have the same name).
func (p *filterScorePlugin) Name() string { return p.filterPlugin.name }

// PreFilter implements fwk.PreFilterPlugin: it prepares the cycle's verdicts (the snapshot's
// node list and positions, cached while the list is unchanged), which Filter judges chunk by
// chunk as the scheduler asks about nodes (see verdicts): the agent's per-pod work is done
// once per chunk, not once per node, and the nodes the scheduler does not ask about (past
// percentageOfNodesToScore) are not judged.
func (p *filterPlugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	list, _ := p.adapter.nodeList(nodes)
	vs, err := p.adapter.prepareVerdicts(ctx, pod, list, p.name, p.fns)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	p.last.write(state, p.key, vs)
	return nil, nil
}

// prepareVerdicts returns the cycle's verdicts of fns' filter (function name) over list, none
// judged yet, and keeps their decision when the adapter keeps decisions.
func (a *Adapter) prepareVerdicts(ctx context.Context, pod *corev1.Pod, list *nodeList, name string, fns *funcs) (*verdicts, error) {
	size, filter := judgeChunk, fns.filter
	switch {
	case fns.forList != nil: // a whole-list filter that judges chunk by chunk once it has seen the list
		f, err := fns.forList(framework.WithPositions(ctx, list.positions(0, len(list.views))), pod, list.views)
		if err != nil {
			return nil, fmt.Errorf("filter failed: %w", err)
		}
		filter = f
	case fns.wholeList:
		size = len(list.views)
	}
	vs := newVerdicts(list, size, filter)
	if d := a.decisions; d != nil {
		vs.explain = decisions.ExplainerOf(fns.explainer, name, "filter")
		vs.entry = d.log.Add(decisions.Decision{Time: time.Now(), Pod: decisions.PodKey(pod), Agent: fns.agent, Function: name, Verb: "filter", Judged: vs})
	}
	return vs, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin: the verdicts do not depend on the pods
// placed on a node.
func (p *filterPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter implements fwk.FilterPlugin: the node's verdict from PreFilter, or, when the plugin is
// not enabled at preFilter, the agent's filter function called for the one node.
func (p *filterPlugin) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	var vs *verdicts
	if data, err := p.last.read(state, p.key); err == nil {
		vs = data.(*verdicts)
	}
	v, err := p.adapter.verdictOf(ctx, pod, p.fns, vs, node, -1)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("filter failed: %w", err))
	}
	return rejection(v, "")
}

// verdictOf returns the verdict of fns' filter on node: from vs, PreFilter's verdicts, when the
// node is in their list (at position i when i >= 0, else looked up), or else (not enabled at
// preFilter, or a node outside PreFilter's list) by calling the filter for the node alone.
func (a *Adapter) verdictOf(ctx context.Context, pod *corev1.Pod, fns *funcs, vs *verdicts, node *corev1.Node, i int) (framework.Verdict, error) {
	var v framework.Verdict
	var err error
	judged := false
	if vs != nil {
		if i < 0 {
			if j, ok := vs.list.position(node); ok {
				i = int(j)
			}
		}
		if i >= 0 && i < len(vs.list.src) && vs.list.src[i] == node {
			v, err = vs.verdict(ctx, pod, i)
			judged = true
		}
	}
	if !judged {
		var out []framework.Verdict
		out, err = fns.filter(ctx, pod, []*corev1.Node{a.view(node)})
		if err == nil && len(out) != 1 {
			err = fmt.Errorf("returned %d verdicts for 1 node", len(out))
		}
		if err == nil {
			v = out[0]
		}
	}
	if err != nil {
		return framework.Verdict{}, err
	}
	return v, nil
}

// rejection returns the status of verdict v: nil when it passes, else Unschedulable (or
// UnschedulableAndUnresolvable) with its reason, after prefix.
func rejection(v framework.Verdict, prefix string) *fwk.Status {
	switch {
	case v.Passes():
		return nil
	case v.Unresolvable:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, prefix+v.Reason)
	default:
		return fwk.NewStatus(fwk.Unschedulable, prefix+v.Reason)
	}
}

// PreScore implements fwk.PreScorePlugin: the agent's prioritize function scores the feasible
// nodes, chunk by chunk as Score asks (chunkScores) when its scores are of each node by itself,
// or else every feasible node in one call here (framework.Prioritizer.WholeList), as also when
// the adapter keeps decisions (a decision holds one call's scores of every node). When it fails,
// its scores are 0 for this pod (as kube-scheduler ignores a failing extender prioritizer: the
// plugin's Score is skipped when the one call fails) and the error is logged.
func (p *scorePlugin) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	f, status := p.adapter.feasibleViews(state, nodes)
	if status != nil {
		return status
	}
	if p.adapter.chunked(p.fns) {
		p.last.write(state, p.key, newChunkScores(f, func(ctx context.Context, _ int, views []*corev1.Node, out []int64) error {
			list, err := p.fns.score(ctx, pod, views)
			if err == nil {
				for i, s := range list {
					out[i] = scaled(s)
				}
			}
			return err
		}, p.adapter.logChunkFailure(ctx, pod, p.name)))
		return nil
	}
	list, err := p.adapter.prioritize(f.withPositions(ctx, 0, f.n), pod, f.viewsOf(0, f.n), p.name, p.fns)
	if err != nil {
		return fwk.NewStatus(fwk.Skip)
	}
	p.last.write(state, p.key, newFixedScores(f, func(i int) int64 {
		return scaled(list[i])
	}))
	return nil
}

// chunked reports whether fns' prioritize function scores chunk by chunk as Score asks: it
// scores each node by itself, and no decision is kept.
func (a *Adapter) chunked(fns *funcs) bool { return !fns.scoresWholeList && a.decisions == nil }

// score calls fns' prioritize function with views and returns its scores (as answered: not
// clamped), or an error (the function's, or a wrong number of scores).
func (fns *funcs) score(ctx context.Context, pod *corev1.Pod, views []*corev1.Node) ([]int64, error) {
	list, err := fns.prioritize(ctx, pod, views)
	if err == nil && len(list) != len(views) {
		err = fmt.Errorf("returned %d scores for %d nodes", len(list), len(views))
	}
	return list, err
}

// logChunkFailure returns what logs a prioritize function's failure on some of pod's chunks.
func (a *Adapter) logChunkFailure(ctx context.Context, pod *corev1.Pod, name string) func(error) {
	return func(err error) {
		klog.FromContext(ctx).Error(err, "Prioritizer failed; its score is 0 on the nodes it failed to score for this pod", "plugin", name, "pod", klog.KObj(pod))
	}
}

// prioritize calls fns' prioritize function (function name) with views and returns its scores
// (as answered: not clamped), keeping the decision when the adapter keeps decisions. An error
// (the function's, or a wrong number of scores) is logged and returned: the caller ignores the
// function's scores for the pod, as kube-scheduler ignores a failing extender prioritizer.
func (a *Adapter) prioritize(ctx context.Context, pod *corev1.Pod, views []*corev1.Node, name string, fns *funcs) ([]int64, error) {
	list, err := fns.score(ctx, pod, views)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Prioritizer failed; its score is ignored for this pod", "plugin", name, "pod", klog.KObj(pod))
		return nil, err
	}
	if d := a.decisions; d != nil {
		keepScores(ctx, d, pod, views, list, name, fns)
	}
	return list, nil
}

// keepScores keeps a decision of the prioritizer fns (function name): the agent's scores of views
// (shown clamped to 0..10), and what it saw of each.
func keepScores(ctx context.Context, d *Decisions, pod *corev1.Pod, views []*corev1.Node, list []int64, name string, fns *funcs) {
	x := decisions.Decision{Time: time.Now(), Pod: decisions.PodKey(pod), Agent: fns.agent, Function: name, Verb: "prioritize",
		Names: make([]string, len(views)), Scores: list}
	for i, n := range views {
		x.Names[i] = n.Name
	}
	x.Inputs = decisions.ExplainerOf(fns.explainer, name, "prioritize").Inputs(ctx, pod, views)
	d.log.Add(x)
}

// feasibleKey is the CycleState key of the views of the feasible nodes, which the first of the
// score plugins to run PreScore computes for all of them.
const feasibleKey fwk.StateKey = "kube-safe-scheduler/feasible-views"

// feasibleViews are one cycle's feasible nodes, in the order of nodes, whose first NodeInfo and
// length identify it, and where each node is among them. It is never modified once built.
type feasibleViews struct {
	first fwk.NodeInfo
	n     int
	// list is the snapshot's list holding every feasible node: pos holds each feasible node's
	// position in it (its view is there) and at, for each of the list's positions, the node's
	// index among the feasible nodes plus one (0: not feasible). No view is copied and no name
	// looked up: batching's rescoring asks for one node's score of hundreds.
	list    *nodeList
	pos, at []int32
	// views and byName hold the views and indexes instead when some feasible node is not in
	// the list (nil list).
	views  []*corev1.Node
	byName map[string]int32
}

// Clone implements fwk.StateData: the views are never modified once written.
func (f *feasibleViews) Clone() fwk.StateData { return f }

// index returns the index of node among the feasible nodes.
func (f *feasibleViews) index(node *corev1.Node) (int, bool) {
	if f.list != nil {
		if j, ok := f.list.position(node); ok && f.at[j] > 0 {
			return int(f.at[j]) - 1, true
		}
		return 0, false
	}
	i, ok := f.byName[node.Name]
	return int(i), ok
}

// viewsOf returns the views of the feasible nodes lo..hi-1: the list's own when they are
// consecutive in it (shared: agents modify neither their nodes nor the slice), else a new slice.
func (f *feasibleViews) viewsOf(lo, hi int) []*corev1.Node {
	if f.list == nil {
		return f.views[lo:hi:hi]
	}
	if lo < hi {
		first, last := int(f.pos[lo]), int(f.pos[hi-1])
		if last-first == hi-lo-1 && consecutive(f.pos[lo:hi]) {
			return f.list.views[first : last+1 : last+1]
		}
	}
	out := make([]*corev1.Node, hi-lo)
	for i := range out {
		out[i] = f.list.views[f.pos[lo+i]]
	}
	return out
}

// consecutive reports whether each position of pos is the one before it plus one.
func consecutive(pos []int32) bool {
	for i := 1; i < len(pos); i++ {
		if pos[i] != pos[i-1]+1 {
			return false
		}
	}
	return true
}

// withPositions returns ctx carrying the framework.Positions of the feasible nodes lo..hi-1
// when they are in a list, else ctx.
func (f *feasibleViews) withPositions(ctx context.Context, lo, hi int) context.Context {
	if f.list == nil {
		return ctx
	}
	return framework.WithPositions(ctx, &framework.Positions{List: f.list, At: f.pos[lo:hi]})
}

// feasibleViews returns the feasible nodes' positions (or views) and indexes, computed once per
// cycle for all score plugins.
func (a *Adapter) feasibleViews(state fwk.CycleState, nodes []fwk.NodeInfo) (*feasibleViews, *fwk.Status) {
	if data, err := state.Read(feasibleKey); err == nil {
		if f := data.(*feasibleViews); f.n == len(nodes) && len(nodes) > 0 && f.first == nodes[0] {
			return f, nil
		}
	}
	f := &feasibleViews{n: len(nodes)}
	if list := a.lastList(); list != nil { // the feasible nodes are usually in it
		f.list, f.pos, f.at = list, make([]int32, len(nodes)), make([]int32, len(list.src))
		for i, n := range nodes {
			j, ok := list.position(n.Node()) // a NodeInfo without its node is in no list
			if !ok {
				f.list, f.pos, f.at = nil, nil, nil
				break
			}
			f.pos[i], f.at[j] = j, int32(i)+1
		}
	}
	if f.list == nil {
		f.views, f.byName = make([]*corev1.Node, len(nodes)), make(map[string]int32, len(nodes))
		for i, n := range nodes {
			node := n.Node()
			if node == nil {
				return nil, fwk.NewStatus(fwk.Error, "node not found")
			}
			f.views[i], f.byName[node.Name] = a.view(node), int32(i)
		}
	}
	if len(nodes) > 0 {
		f.first = nodes[0]
		state.Write(feasibleKey, f)
	}
	return f, nil
}

// Score implements fwk.ScorePlugin: the node's score, from PreScore's table.
func (p *scorePlugin) Score(ctx context.Context, state fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	return scoreFromTable(ctx, state, &p.last, p.key, p.name, nodeInfo)
}

// scoreFromTable is the score of nodeInfo's node in the table plugin (name) wrote under key in
// PreScore (remembered by last).
func scoreFromTable(ctx context.Context, state fwk.CycleState, last *lastWrite, key fwk.StateKey, plugin string, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	data, err := last.read(state, key)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("no scores from PreScore (%w): enable %s at the preScore extension point as well as score, or under multiPoint", err, plugin))
	}
	s, ok := data.(scoreTable).score(ctx, nodeInfo.Node())
	if !ok {
		return 0, fwk.AsStatus(fmt.Errorf("node %s was not among the nodes PreScore scored", nodeInfo.Node().Name))
	}
	return s, nil
}

// ScoreExtensions implements fwk.ScorePlugin: the scores are already in the framework's range.
func (p *scorePlugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

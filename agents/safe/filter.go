package safe

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/agents/safe/beta"
	"github.com/kube-safe-scheduler/extender/framework"
)

// The filter safe-overload, top-down: Filters offers it; filterOverload judges a call's nodes
// (judgeNodes: each node measured, measure.go, and judged acceptable or not, acceptable) and, in
// the adaptive mode, judges them again as they are when no node that can hold the pod takes it
// (anyTakes); filterForList is the same judgement for kube-scheduler's chunks of one list; a
// rejection's reason says the numbers (reason, staleReason).

// Filters implements framework.Agent.
func (a *Agent) Filters() []framework.Filter {
	// The adaptive filter asks whether any node of the call can hold the pod: its verdicts
	// depend on the whole list. They are Batchable: once a pod is placed on one node, the next
	// pod of the same signature (the same demand) is judged with its request added on every
	// node as long as another node that took the previous pod (and fits its request, as the
	// scheduler's own filters checked) still does; when none did, it was judged as the nodes
	// are, which a placement can only make stricter (some node now takes it). The verdicts on
	// the other nodes are thus never more lenient than the previous pod's
	// (TestAdaptiveFilterIsBatchable). Without kube-scheduler's fit check (NodeResourcesFit
	// disabled) a node kept that cannot hold the request does not count, and a reuse may miss
	// nodes a new cycle would judge as they are; the node it places a pod on is judged anew.
	adaptive := a.cfg.Filter == FilterAdaptive
	f := framework.Filter{Name: FilterOverload, Func: a.filterOverload, WholeList: adaptive, Batchable: adaptive}
	if f.WholeList && !a.cfg.PrintTable { // a table is printed per call: the whole list's in one
		f.ForList = a.filterForList
	}
	return []framework.Filter{f}
}

// filterOverload rejects the nodes where a resource's risk exceeds the acceptable risk.
// With Stale reject, a node whose statistics are stale is rejected as unresolvable (preemption
// cannot refresh statistics), with the age in the reason.
func (a *Agent) filterOverload(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
	c := a.newCall(pod)
	at := c.positioned(ctx, nodes)
	a.counted(c)
	defer a.done("predicates/"+FilterOverload, c)
	out := make([]framework.Verdict, len(nodes))
	if a.cfg.Filter == FilterOff && !a.reject {
		return out, nil
	}
	if a.cfg.Filter == FilterNode {
		c.d = demand{} // the node as it is
	}
	if a.cfg.Filter != FilterOff {
		a.placeSince(nodes, c)
	}
	a.judgeNodes(pod, nodes, at, c, out)
	if a.cfg.Filter == FilterAdaptive && !a.anyTakes(nodes, at, c, out) {
		// No node that can hold the pod's request takes it within the acceptable risk: judge
		// the nodes as they are, so that a large pod is not kept out for ever.
		c.d = demand{}
		clear(out)
		a.judgeNodes(pod, nodes, at, c, out)
	}
	return out, nil
}

// judgeNodes writes the filter's verdict on every node into out, with the call's demand
// (eachNode, pipeline.go): a prepared node's verdict is kept with its class's answers, read off
// the judgement the priorities share; a node judged per pod is judged as judgeOne judges it. at
// holds the nodes' positions in c.list (nil: none).
func (a *Agent) judgeNodes(pod *corev1.Pod, nodes []*corev1.Node, at []int32, c *call, out []framework.Verdict) {
	tbl := a.newTable(FilterOverload, pod, c.d)
	a.eachNode(nodes, at, c, tbl, func(i int, n *corev1.Node, p *prepared, ca *classAnswers, j *judgement) {
		if ca != nil {
			v := ca.verdict.Load()
			if v == nil {
				j := *ca.judged(p, c)
				if r := a.rule(&j.cpu, &j.memory, freshness{}, c); r.Passes() {
					v = &passes
				} else {
					v = &r
				}
				ca.verdict.Store(v)
			}
			out[i] = *v
			return
		}
		out[i] = a.rule(&j.cpu, &j.memory, j.f, c)
		if tbl != nil {
			result := "pass"
			if !out[i].Passes() {
				result = "reject"
			}
			tbl.node(n.Name, &j.cpu, &j.memory, result)
		}
	})
}

// sub is at[lo:hi], nil when at is.
func sub(at []int32, lo, hi int) []int32 {
	if at == nil {
		return nil
	}
	return at[lo:hi]
}

// position is at[i], -1 when at is nil.
func position(at []int32, i int) int32 {
	if at == nil {
		return -1
	}
	return at[i]
}

// passes is the verdict that lets a node through, shared by the prepared nodes' classes (never
// modified).
var passes framework.Verdict

// judgeOne is the filter's verdict on n (in: its inputs) for call c, computed per pod: the
// reference the prepared answers are held to, with the measures it judged.
func (a *Agent) judgeOne(n *corev1.Node, in *nodeInputs, c *call) (v framework.Verdict, cpu, memory measure) {
	cpu, memory, f := a.measure(n, in, c)
	return a.rule(&cpu, &memory, f, c), cpu, memory
}

// rule is the filter's verdict on a node of measures cpu and memory and freshness f, for call c.
// With Stale reject, a node whose statistics are stale is rejected as unresolvable.
func (a *Agent) rule(cpu, memory *measure, f freshness, c *call) framework.Verdict {
	switch {
	case f.stale && a.reject:
		return framework.RejectUnresolvable(a.staleReason(f))
	case a.cfg.Filter == FilterOff: // only stale statistics reject
		return framework.Verdict{}
	}
	if cpuOK, memoryOK := a.acceptable(cpu), a.acceptable(memory); !cpuOK || !memoryOK {
		return framework.Reject(a.reason(cpu, cpuOK, memory, memoryOK, c))
	}
	return framework.Verdict{}
}

// acceptable reports whether the filter lets the resource through.
func (a *Agent) acceptable(m *measure) bool {
	switch m.state {
	case noStats, requested:
		return true
	case noAllocatable:
		return false
	}
	return beta.SurelyAcceptable(m.mu, m.sigma, a.t, a.e) || a.risk(m) <= a.e
}

// anyTakes reports whether a node passes whose requests leave room for the pod's (a node whose
// requests are unknown counts as having room). In plugin mode the filter judges every node of
// the snapshot, before kube-scheduler's fit: a node the pod cannot fit on must not hide that no
// node it fits on takes it.
func (a *Agent) anyTakes(nodes []*corev1.Node, at []int32, c *call, out []framework.Verdict) bool {
	for i, n := range nodes {
		if !out[i].Passes() {
			continue
		}
		var e [1]*nodeEntry
		a.entries(c.list, sub(at, i, i+1), nodes[i:i+1], e[:])
		req, ok := a.requests(n, &e[0].in)
		if !ok || (req.cpu+c.fit.cpu <= allocatable(n, &cpuResource) && req.memory+c.fit.memory <= allocatable(n, &memoryResource)) {
			return true
		}
	}
	return false
}

// filterForList implements framework.Filter.ForList for the adaptive filter: whether a node of
// list that can hold the pod's request takes it is judged once, batch by batch from the start of
// the list until one does (on a cluster with room, within the first batch); the function
// returned then judges any nodes as filterOverload judges them in one call over list (the pod's
// request added, or the nodes as they are when none takes it), at this call's time.
func (a *Agent) filterForList(ctx context.Context, pod *corev1.Pod, list []*corev1.Node) (framework.FilterFunc, error) {
	c := a.newCall(pod) // never done(): the chunks' calls publish the stale nodes they judge
	at := c.positioned(ctx, list)
	a.counted(c)
	d := c.d
	a.placeSince(list, c)
	takes := false
	out := make([]framework.Verdict, min(len(list), forListBatch))
	for lo := 0; lo < len(list) && !takes; lo += forListBatch {
		hi := min(lo+forListBatch, len(list))
		batch := list[lo:hi]
		clear(out)
		a.judgeNodes(pod, batch, sub(at, lo, hi), c, out[:len(batch)])
		takes = a.anyTakes(batch, sub(at, lo, hi), c, out[:len(batch)])
	}
	if !takes {
		d = demand{} // judge the nodes as they are, so that a large pod is not kept out for ever
	}
	return func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
		c := &call{d: d, now: c.now, pod: c.pod, learned: c.learned, source: c.source, version: c.version}
		at := c.positioned(ctx, nodes)
		defer a.done("predicates/"+FilterOverload, c)
		out := make([]framework.Verdict, len(nodes))
		a.placeSince(nodes, c)
		a.judgeNodes(pod, nodes, at, c, out)
		return out, nil
	}, nil
}

// forListBatch is how many nodes filterForList judges at a time while looking for one that
// takes the pod.
const forListBatch = 64

// reason says why the failing resources fail, with their numbers, for example
// "cpu risk 0.42 > 0.30 (mu 0.81, sigma 0.12, threshold 0.90)", then, when the pod's demand is
// a learned estimate, "; pod estimated 2100m cpu 640Mi memory: p90 of 240 observations of
// deployment shop/web, request 1 cpu 512.0Mi memory". Built with strconv only (the evidence
// once per call): a filter call may reject thousands of nodes.
func (a *Agent) reason(cpu *measure, cpuOK bool, memory *measure, memoryOK bool, c *call) string {
	b := make([]byte, 0, 160)
	if !cpuOK {
		b = a.appendReason(b, cpu)
	}
	if !memoryOK {
		if len(b) > 0 {
			b = append(b, "; "...)
		}
		b = a.appendReason(b, memory)
	}
	if c.learned && c.d != (demand{}) {
		b = appendAmount(append(b, "; pod estimated "...), &cpuResource, c.d.cpu)
		b = appendAmount(append(b, " cpu "...), &memoryResource, c.d.memory)
		b = append(append(b, " memory: "...), c.evidence(a.estimator)...)
	}
	return string(b)
}

func (a *Agent) appendReason(b []byte, m *measure) []byte {
	if m.state == noAllocatable {
		return append(append(append(b, "allocatable "...), m.res.name...), " is zero or missing: its risk cannot be judged"...)
	}
	b = append(append(b, m.res.name...), " risk "...)
	b = appendPair(b, a.risk(m), a.e)
	b = strconv.AppendFloat(append(b, " (mu "...), m.mu, 'f', 2, 64)
	b = strconv.AppendFloat(append(b, ", sigma "...), m.sigma, 'f', 2, 64)
	b = strconv.AppendFloat(append(b, ", threshold "...), a.t, 'f', 2, 64)
	switch {
	case m.placedModel && (m.placedPods > 0 || m.placedGone > 0):
		b = append(b, ", node model: "...)
		b = strconv.AppendInt(b, int64(m.placedPods), 10)
		b = append(b, " pods beyond the statistics, "...)
		b = strconv.AppendInt(b, int64(m.placedGone), 10)
		b = append(b, " gone, add "...)
		b = appendAmount(b, m.res, m.placed)
	case m.placedGrown && m.placed > 0:
		b = append(b, ", requests grown since the statistics add "...)
		b = appendAmount(b, m.res, m.placed)
	case m.placedPods > 0:
		b = strconv.AppendInt(append(b, ", "...), int64(m.placedPods), 10)
		b = append(b, " pods placed since the statistics add "...)
		b = appendAmount(b, m.res, m.placed)
	}
	return append(b, ')')
}

// appendAmount appends v, an amount of r: cpu as "1500m", memory as "512Mi".
func appendAmount(b []byte, r *resourceKind, v float64) []byte {
	if r.kind == corev1.ResourceCPU {
		return append(strconv.AppendFloat(b, v, 'f', 0, 64), 'm')
	}
	return append(strconv.AppendFloat(b, v/(1<<20), 'f', 0, 64), "Mi"...)
}

// appendPair appends "x > y" with two decimals, or more when two would print them equal.
func appendPair(b []byte, x, y float64) []byte {
	prec := 2
	for ; prec < 17; prec++ {
		var bx, by [32]byte
		if string(strconv.AppendFloat(bx[:0], x, 'f', prec, 64)) != string(strconv.AppendFloat(by[:0], y, 'f', prec, 64)) {
			break
		}
	}
	b = strconv.AppendFloat(b, x, 'f', prec, 64)
	return strconv.AppendFloat(append(b, " > "...), y, 'f', prec, 64)
}

// staleReason says why f is stale: "usage statistics 2h10m old (max 1h)", "usage statistics
// dated 2h10m ahead of this extender's clock (max 1h)", or "usage statistics timestamp "x" is
// not RFC 3339". Ages are truncated to the second.
func (a *Agent) staleReason(f freshness) string {
	b := make([]byte, 0, 96)
	switch {
	case f.unreadable:
		raw := f.raw
		if len(raw) > 64 {
			raw = raw[:64]
		}
		b = strconv.AppendQuote(append(b, "usage statistics timestamp "...), raw)
		return string(append(b, " is not RFC 3339"...))
	case f.age < 0:
		b = framework.AppendDuration(append(b, "usage statistics dated "...), (-f.age).Truncate(time.Second))
		b = append(b, " ahead of this extender's clock"...)
	default:
		b = framework.AppendDuration(append(b, "usage statistics "...), f.age.Truncate(time.Second))
		b = append(b, " old"...)
	}
	b = framework.AppendDuration(append(b, " (max "...), a.maxAge)
	return string(append(b, ')'))
}

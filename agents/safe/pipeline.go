package safe

import corev1 "k8s.io/api/core/v1"

// The pipeline, one way: pod -> demand -> node projection -> judgement -> answers. A call
// estimates the pod once (newCall: its demand, estimate.go); eachNode, the one loop of the
// filter and both priorities, brings each node to its projection for that demand (its inputs,
// the load placed since its statistics and its node-model term, read once per node version and
// generation of its pods: prepare, answers.go) and to its judgement (both resources' mu, sigma
// and state for the pod: measures); the filter's verdict (rule) and the priorities' scores
// (scoreFrom) are read off the judgement. A prepared node's judgement is made once per class of
// demand and kept with its answers (classAnswers.judged), so the filter and the priorities that
// ask about the same pod share it; a node judged per pod (stale statistics, no resourceVersion,
// a table to print, the cluster read without NodePods) is judged once per call of a function.

// judgement is a node's projection for one demand: both resources' measures and the
// statistics' freshness at the call's time (a prepared node's are fresh). Immutable once kept:
// whoever caches a risk in a measure (Agent.risk) does so in a copy.
type judgement struct {
	cpu, memory measure
	f           freshness
}

// judged returns the judgement of the class ca answers for on p, made from p's base once.
func (ca *classAnswers) judged(p *prepared, c *call) *judgement {
	j := ca.judgement.Load()
	if j == nil {
		j = &judgement{}
		j.cpu, j.memory = p.base.measures(c.d, c.source)
		ca.judgement.Store(j) // racing calls make the same
	}
	return j
}

// judgeFunc sees one node of a call in eachNode: i is its index in the call's nodes; a prepared
// node comes with its answers for the call's class of demand (ca, on p: its judgement is
// ca.judged(p, c), made when first needed) and j nil, a node judged per pod with ca nil and its
// judgement j, the visitor's to use until it returns (the next node's overwrites it).
type judgeFunc func(i int, n *corev1.Node, p *prepared, ca *classAnswers, j *judgement)

// eachNode runs visit on every node of nodes for call c (at: their positions in c.list, nil
// when none): in chunks across goroutines, or in order on one when tbl is not nil (the table's
// rows in order; then every node is judged per pod), flushing tbl at the end.
func (a *Agent) eachNode(nodes []*corev1.Node, at []int32, c *call, tbl *table, visit judgeFunc) {
	class := classOf(c)
	run := func(lo, hi int) {
		var batch [entryBatch]*nodeEntry
		var j *judgement // the nodes judged per pod, in turn: made once, when the first is
		for i, n := range nodes[lo:hi] {
			if i%entryBatch == 0 {
				a.entries(c.list, sub(at, lo+i, min(lo+i+entryBatch, hi)), nodes[lo+i:min(lo+i+entryBatch, hi)], batch[:])
			}
			e := batch[i%entryBatch]
			if p := a.prepare(n, e, c, tbl == nil, position(at, lo+i)); p != nil {
				visit(lo+i, n, p, p.class(class), nil)
				continue
			}
			if j == nil {
				j = &judgement{}
			}
			j.cpu, j.memory, j.f = a.measure(n, &e.in, c)
			visit(lo+i, n, nil, nil, j)
		}
	}
	if tbl != nil {
		run(0, len(nodes))
		tbl.flush()
		return
	}
	forChunks(len(nodes), run)
}

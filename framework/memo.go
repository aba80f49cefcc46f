package framework

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// maxMemoNodes bounds a NodeMemo; past it, the memo starts over (a cluster of that many nodes
// still hits on every node after one round of requests).
const maxMemoNodes = 1 << 17

// NodeMemo memoizes a value an agent derives from a node (parsed annotations, allocatable in
// its own units), by node name and resourceVersion. The nodes of a NodeNames request come
// from the informer cache, where a node's resourceVersion changes only when the node does, so
// between updates every request hits; full-node requests carry the resourceVersion too. A node
// without one is never memoized. The zero value is ready; it is safe for concurrent use.
type NodeMemo[T any] struct {
	m      sync.Map // node name -> *memoEntry[T]
	stores atomic.Int64
}

type memoEntry[T any] struct {
	rv string
	v  T
}

// Get returns compute(n), from the memo when it was computed at n's resourceVersion.
func (c *NodeMemo[T]) Get(n *corev1.Node, compute func(*corev1.Node) T) T {
	rv := n.ResourceVersion
	if rv == "" {
		return compute(n)
	}
	if e, ok := c.m.Load(n.Name); ok {
		if e := e.(*memoEntry[T]); e.rv == rv {
			return e.v
		}
	}
	e := &memoEntry[T]{rv: rv, v: compute(n)}
	if c.stores.Add(1) > maxMemoNodes {
		c.m.Clear()
		c.stores.Store(0)
	}
	c.m.Store(n.Name, e)
	return e.v
}

// NodeBatchMemo keeps one value per node, by node name and resourceVersion, for agents that
// look up every node of a call: Get reads a whole batch under one read lock, cheaper per node
// than NodeMemo's sync.Map probe when the scheduler asks about thousands of nodes per pod. A
// node without a resourceVersion is never kept. The zero value is ready; it is safe for
// concurrent use.
type NodeBatchMemo[T any] struct {
	mu sync.RWMutex
	m  map[string]memoEntry[T]
}

// Get sets out[i] to compute(nodes[i]) for each node (len(out) >= len(nodes)), from the memo
// when it was computed at the node's resourceVersion. When two calls compute the same version,
// the value kept first is the one both get.
func (c *NodeBatchMemo[T]) Get(nodes []*corev1.Node, out []T, compute func(*corev1.Node) T) {
	var missed []int
	c.mu.RLock()
	for i, n := range nodes {
		if e, ok := c.m[n.Name]; ok && e.rv == n.ResourceVersion && e.rv != "" {
			out[i] = e.v
		} else {
			missed = append(missed, i)
		}
	}
	c.mu.RUnlock()
	if len(missed) == 0 {
		return
	}
	kept := false
	for _, i := range missed {
		out[i] = compute(nodes[i])
		kept = kept || nodes[i].ResourceVersion != ""
	}
	if !kept {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(missed) > maxMemoNodes {
		c.m = make(map[string]memoEntry[T], len(nodes))
	}
	for _, i := range missed {
		n := nodes[i]
		if n.ResourceVersion == "" {
			continue
		}
		if old, ok := c.m[n.Name]; ok && old.rv == n.ResourceVersion {
			out[i] = old.v // another call computed the same version first
			continue
		}
		c.m[n.Name] = memoEntry[T]{rv: n.ResourceVersion, v: out[i]}
	}
}

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

package safe

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// resourceInputs are what the agent reads of a node for one resource: the blended free amount,
// its standard deviation and the allocatable amount, before any pod's demand is added.
type resourceInputs struct {
	measured            bool // the mean annotation is present and readable
	free, std, capacity float64
	forecast            bool
}

// nodeInputs are a node's inputs for both resources, read at resourceVersion rv.
type nodeInputs struct {
	rv          string
	cpu, memory resourceInputs
}

// maxCachedNodes bounds the cache; past it, the cache starts over (a cluster of that many nodes
// still hits on every node after one round of requests).
const maxCachedNodes = 1 << 17

// inputCache memoizes each node's inputs by name and resourceVersion. Reading them costs about
// half of a filter call (six annotation lookups, up to four float parses, a quantity
// conversion); the nodes of a NodeNames request come from the informer cache, where a node's
// resourceVersion changes only when the node does, so between updates every request hits.
// Full-node requests carry the resourceVersion too. A node without one is never cached.
type inputCache struct {
	m      sync.Map // node name -> *nodeInputs
	stores atomic.Int64
}

// get returns n's inputs, from the cache when they were read at n's resourceVersion.
func (c *inputCache) get(n *corev1.Node, read func(*corev1.Node) nodeInputs) nodeInputs {
	rv := n.ResourceVersion
	if rv == "" {
		return read(n)
	}
	if v, ok := c.m.Load(n.Name); ok {
		if in := v.(*nodeInputs); in.rv == rv {
			return *in
		}
	}
	in := read(n)
	in.rv = rv
	if c.stores.Add(1) > maxCachedNodes {
		c.m.Clear()
		c.stores.Store(0)
	}
	c.m.Store(n.Name, &in)
	return in
}

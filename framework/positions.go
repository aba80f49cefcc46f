package framework

import (
	"context"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// Positions say where the nodes of one call are in the program's shared list of nodes: in plugin
// mode the scheduler's snapshot of every node, which the adapter keeps while it is unchanged
// and hands to agents chunk by chunk, each node of a call at a known position. An agent that
// keeps something per node keeps it in a slice aligned with the list (ListMemo) and reads it by
// position: no lookup by name per node and pod. The extender's calls carry none (their nodes
// come in any order from any request): agents then look nodes up by name as before.
type Positions struct {
	// List is the list the call's nodes are in; the same value (pointer) while the list is
	// unchanged, a new one when some node of it is (a node updated, added or removed).
	List NodeList
	// At holds the position in List of each node of the call, in the call's order. It is
	// shared, as the Positions themselves: never modify them.
	At []int32
}

// NodeList is the program's shared list of nodes, as Positions name it. Lists are told apart
// by identity: an implementation is a pointer, never modified once handed out.
type NodeList interface {
	// Len is the number of nodes in the list.
	Len() int
	// Node returns the node at position i (its NodeView: the very object the calls get).
	Node(i int) *corev1.Node
	// PodsGenerationAt returns NodePods.PodsGeneration of the node at position i, read
	// without looking the node up by name.
	PodsGenerationAt(i int) int64
}

type positionsKey struct{}

// WithPositions returns ctx carrying p, for the call whose nodes p places.
func WithPositions(ctx context.Context, p *Positions) context.Context {
	return context.WithValue(ctx, positionsKey{}, p)
}

// PositionsOf returns the Positions of the call ctx belongs to, nil when it carries none.
func PositionsOf(ctx context.Context) *Positions {
	p, _ := ctx.Value(positionsKey{}).(*Positions)
	return p
}

// ListMemo keeps one value per node of the shared list (Positions), in a slice aligned with
// it: a call's nodes are read by position, each checked to be the very node object the value
// was computed from (a node object is never modified: a changed node is a new object, at a new
// list), so a hit is exactly compute's answer. When the list changes, the values of the
// positions whose node object is the same are carried over to the new list (nodes added or
// removed shift positions: the values are then carried over by name, once per list), so a
// node update costs one computation, not one per node. A node without a resourceVersion is never
// kept, as in NodeBatchMemo. The zero value is ready; it is safe for concurrent use.
type ListMemo[T any] struct {
	mu  sync.Mutex
	cur atomic.Pointer[listSlots[T]]
}

// listSlots are the values of one list, by position.
type listSlots[T any] struct {
	list  NodeList
	slots []atomic.Pointer[listSlot[T]]
}

type listSlot[T any] struct {
	node *corev1.Node
	v    T
}

// Get sets out[i] to compute(nodes[i]) for each node (len(out) >= len(nodes)), nodes[i] being
// at position at[i] of list (a Positions' List and At, or a part of them), from the memo when
// it was computed from that node object.
func (m *ListMemo[T]) Get(list NodeList, at []int32, nodes []*corev1.Node, out []T, compute func(*corev1.Node) T) {
	s := m.slotsOf(list)
	for i, n := range nodes {
		j := at[i]
		if e := s.slots[j].Load(); e != nil && e.node == n {
			out[i] = e.v
			continue
		}
		out[i] = compute(n)
		if n.ResourceVersion != "" {
			s.slots[j].Store(&listSlot[T]{node: n, v: out[i]})
		}
	}
}

// slotsOf returns the slots of list, carried over from the current ones when list is new.
func (m *ListMemo[T]) slotsOf(list NodeList) *listSlots[T] {
	if s := m.cur.Load(); s != nil && s.list == list {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.cur.Load()
	if old != nil && old.list == list {
		return old
	}
	s := &listSlots[T]{list: list, slots: make([]atomic.Pointer[listSlot[T]], list.Len())}
	if old != nil {
		if len(old.slots) == len(s.slots) {
			for i := range s.slots {
				if e := old.slots[i].Load(); e != nil && e.node == list.Node(i) {
					s.slots[i].Store(e)
				}
			}
		} else {
			byName := make(map[string]*listSlot[T], len(old.slots))
			for i := range old.slots {
				if e := old.slots[i].Load(); e != nil {
					byName[e.node.Name] = e
				}
			}
			for i := range s.slots {
				if n := list.Node(i); n != nil {
					if e := byName[n.Name]; e != nil && e.node == n {
						s.slots[i].Store(e)
					}
				}
			}
		}
	}
	m.cur.Store(s)
	return s
}

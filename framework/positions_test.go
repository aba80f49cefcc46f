package framework

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// sliceList is a NodeList over nodes (generations unused here), by pointer: a list is
// compared by identity.
type sliceList struct{ nodes []*corev1.Node }

func list(nodes ...*corev1.Node) *sliceList     { return &sliceList{nodes} }
func (l *sliceList) Len() int                   { return len(l.nodes) }
func (l *sliceList) Node(i int) *corev1.Node    { return l.nodes[i] }
func (l *sliceList) PodsGenerationAt(int) int64 { return 0 }

// A ListMemo value is served by position only for the very node object it was computed from; a
// new list carries over the values of the nodes it still holds (same positions, or shifted
// when its length changed), so a node update costs one computation; a node without a
// resourceVersion is always computed.
func TestListMemo(t *testing.T) {
	var memo ListMemo[string]
	calls := 0
	label := func(n *corev1.Node) string { calls++; return n.Labels["v"] }
	node := func(name, rv, v string) *corev1.Node {
		return fixtures.MakeNode().Name(name).ResourceVersion(rv).Label("v", v).Obj()
	}
	a, b, c := node("a", "1", "x"), node("b", "1", "y"), node("c", "", "z")
	get := func(list *sliceList, at ...int32) []string {
		nodes := make([]*corev1.Node, len(at))
		for i, j := range at {
			nodes[i] = list.nodes[j]
		}
		out := make([]string, len(at))
		memo.Get(list, at, nodes, out, label)
		return out
	}
	check := func(what string, got []string, wantCalls int, want ...string) {
		t.Helper()
		if len(got) != len(want) || calls != wantCalls {
			t.Fatalf("%s: got %q after %d computations, want %q after %d", what, got, calls, want, wantCalls)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: got %q after %d computations, want %q after %d", what, got, calls, want, wantCalls)
			}
		}
	}
	l1 := list(a, b, c)
	check("first", get(l1, 0, 1, 2), 3, "x", "y", "z")
	check("again", get(l1, 2, 1, 0), 4, "z", "y", "x") // c has no version: computed each time
	a2 := node("a", "2", "x2")
	l2 := list(a2, b, c)
	check("a updated", get(l2, 0, 1), 5, "x2", "y") // b carried over
	l3 := list(b, a2)                               // a node removed: positions shift
	check("c removed", get(l3, 0, 1), 5, "y", "x2")
	l4 := list(a2, b) // same length, positions swapped: computed again, never mixed up
	check("swapped", get(l4, 0, 1), 7, "x2", "y")
	b2 := node("b", "1", "other") // another object of the same name and version, at b's place
	check("other object", get(list(a2, b2), 1), 8, "other")
}

// WithPositions and PositionsOf carry a call's positions; a context without gives nil.
func TestPositionsContext(t *testing.T) {
	if PositionsOf(context.Background()) != nil {
		t.Fatal("positions from an empty context")
	}
	p := &Positions{List: list(), At: []int32{}}
	if got := PositionsOf(WithPositions(context.Background(), p)); got != p {
		t.Fatalf("got %v, want %v", got, p)
	}
}

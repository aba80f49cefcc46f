package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// A value is served from the memo only at the resourceVersion it was computed at; a node
// without a resourceVersion is always computed; past the bound the memo starts over.
func TestNodeMemo(t *testing.T) {
	var memo NodeMemo[string]
	calls := 0
	label := func(n *corev1.Node) string { calls++; return n.Labels["v"] }
	node := func(name, rv, v string) *corev1.Node {
		return fixtures.MakeNode().Name(name).ResourceVersion(rv).Label("v", v).Obj()
	}
	for _, step := range []struct {
		node      *corev1.Node
		want      string
		wantCalls int
	}{
		{node("a", "1", "x"), "x", 1},
		{node("a", "1", "changed"), "x", 1}, // same version: memoized (a version never changes)
		{node("a", "2", "y"), "y", 2},       // new version: computed again
		{node("b", "2", "z"), "z", 3},       // another node with the same version
		{node("a", "2", "other"), "y", 3},
		{node("c", "", "p"), "p", 4}, // no version: never memoized
		{node("c", "", "q"), "q", 5},
	} {
		if got := memo.Get(step.node, label); got != step.want || calls != step.wantCalls {
			t.Fatalf("%s@%q: got %q after %d computations, want %q after %d",
				step.node.Name, step.node.ResourceVersion, got, calls, step.want, step.wantCalls)
		}
	}
	memo.stores.Store(maxMemoNodes)
	memo.Get(node("d", "1", "w"), label) // the store past the bound clears the memo
	if got := memo.Get(node("a", "2", "fresh"), label); got != "fresh" {
		t.Fatalf("after the bound: %q, want the memo cleared", got)
	}
}

func TestNodeBatchMemo(t *testing.T) {
	node := func(name, rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	var m NodeBatchMemo[int]
	calls := 0
	compute := func(*corev1.Node) int { calls++; return calls }
	out := make([]int, 3)
	m.Get([]*corev1.Node{node("a", "1"), node("b", "1"), node("c", "")}, out, compute)
	if out[0] != 1 || out[1] != 2 || out[2] != 3 || calls != 3 {
		t.Fatalf("first call: %v after %d computations", out, calls)
	}
	// a unchanged: remembered; b at a new version and c without one: computed again.
	m.Get([]*corev1.Node{node("a", "1"), node("b", "2"), node("c", "")}, out, compute)
	if out[0] != 1 || out[1] != 4 || out[2] != 5 || calls != 5 {
		t.Fatalf("second call: %v after %d computations", out, calls)
	}
	m.Get([]*corev1.Node{node("b", "2")}, out, compute)
	if out[0] != 4 || calls != 5 {
		t.Fatalf("third call: %v after %d computations", out, calls)
	}
}

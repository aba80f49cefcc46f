package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/fixtures"
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

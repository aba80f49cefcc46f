package adapter

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// TestAllViewsFollowsTheNodes: the cached views of the whole node list are served while the
// list holds the same node objects, and rebuilt when a node object changes or a node comes or goes.
func TestAllViewsFollowsTheNodes(t *testing.T) {
	node := func(name, rv, value string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Labels: map[string]string{"v": value}}}
	}
	a := &Adapter{}
	values := func(nodes []*corev1.Node) []string {
		infos, err := cache.NewSnapshot(nil, nodes).NodeInfos().List()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range a.allViews(infos) {
			out = append(out, v.Name+"="+v.Labels["v"])
		}
		slices.Sort(out) // the snapshot's order is its own
		return out
	}
	n0, n1 := node("n0", "1", "a"), node("n1", "1", "b")
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: views %v, want %v", what, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: views %v, want %v", what, got, want)
			}
		}
	}
	check("first", values([]*corev1.Node{n0, n1}), "n0=a", "n1=b")
	check("same nodes", values([]*corev1.Node{n0, n1}), "n0=a", "n1=b")
	check("n1 updated", values([]*corev1.Node{n0, node("n1", "2", "c")}), "n0=a", "n1=c")
	check("n2 added", values([]*corev1.Node{n0, n1, node("n2", "1", "d")}), "n0=a", "n1=b", "n2=d")
	check("n0 removed", values([]*corev1.Node{n1}), "n1=b")
}

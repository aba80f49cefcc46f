package adapter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
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

// TestPatchedListIsTheBuiltList: whatever nodes change in place, move, come or go, the list
// nodeList returns (patched from the cached one when few positions changed) is the list built
// afresh: the same objects and views in the same order, each object at its position, and no
// other object.
func TestPatchedListIsTheBuiltList(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	rv := 0
	newNode := func(name string) *corev1.Node {
		rv++
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.Itoa(rv), Labels: map[string]string{"rv": strconv.Itoa(rv)}}}
	}
	infosOf := func(nodes []*corev1.Node) []fwk.NodeInfo {
		infos := make([]fwk.NodeInfo, len(nodes))
		for i, n := range nodes {
			ni := schedframework.NewNodeInfo()
			ni.SetNode(n)
			infos[i] = ni
		}
		return infos
	}
	nodes := make([]*corev1.Node, 40)
	for i := range nodes {
		nodes[i] = newNode(fmt.Sprint("n", i))
	}
	a := &Adapter{}
	patched := 0
	for step := range 400 {
		switch k := rng.IntN(20); {
		case k < 14: // a few nodes updated in place
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(nodes))
				nodes[i] = newNode(nodes[i].Name)
			}
		case k < 16: // two nodes swap positions
			i, j := rng.IntN(len(nodes)), rng.IntN(len(nodes))
			nodes[i], nodes[j] = nodes[j], nodes[i]
		case k < 17: // many updated: rebuilt
			for i := range nodes[:len(nodes)/2] {
				nodes[i] = newNode(nodes[i].Name)
			}
		case k < 18: // a node comes
			nodes = append(nodes, newNode(fmt.Sprint("m", step)))
		case k < 19: // a node goes
			i := rng.IntN(len(nodes))
			nodes = slices.Delete(nodes, i, i+1)
		}
		before := a.lastList()
		var beforeSrc []*corev1.Node
		if before != nil {
			beforeSrc = slices.Clone(before.src)
		}
		l, cached := a.nodeList(infosOf(nodes))
		if !cached {
			t.Fatalf("step %d: a list of nodes not cached", step)
		}
		if before != nil && l != before && len(before.src) == len(nodes) {
			patched++
		}
		want, _ := (&Adapter{}).nodeList(infosOf(nodes))
		if !slices.Equal(l.src, want.src) || l.pos.len() != want.pos.len() {
			t.Fatalf("step %d: list of %d nodes, %d positions; built: %d, %d", step, len(l.src), l.pos.len(), len(want.src), want.pos.len())
		}
		for i, n := range l.src {
			if j, ok := l.position(n); !ok || j != int32(i) || l.views[i].Name != n.Name || l.views[i].Labels["rv"] != n.Labels["rv"] {
				t.Fatalf("step %d: %s at %d: position %d, view %s at %s", step, n.Name, i, j, l.views[i].Name, l.views[i].Labels["rv"])
			}
		}
		if before != nil { // a list handed out is never modified
			if !slices.Equal(before.src, beforeSrc) || before.pos.len() != len(beforeSrc) {
				t.Fatalf("step %d: the previous list was modified", step)
			}
			for i, n := range before.src {
				if j, ok := before.position(n); !ok || j != int32(i) {
					t.Fatalf("step %d: the previous list was modified at %d", step, i)
				}
			}
		}
	}
	if patched < 100 {
		t.Fatalf("only %d of 400 steps patched a list: the test does not reach the patch", patched)
	}
}

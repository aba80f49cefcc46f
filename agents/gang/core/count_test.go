package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

func member(name, ns string, labels ...string) *corev1.Pod {
	w := fixtures.MakePod().Name(name).Namespace(ns)
	for i := 0; i+1 < len(labels); i += 2 {
		w.Label(labels[i], labels[i+1])
	}
	return w.Obj()
}

// Each step feeds one event to the counts (through the informer handler, as the extender
// does) and checks every group's count after it.
func TestCounts(t *testing.T) {
	g := Key{LabelPodGroup, "ns", "g"}
	h := Key{LabelPodGroup, "ns", "h"}
	pg := Key{LabelPodGroupName, "ns", "g"} // same name, the other label: another group
	other := Key{LabelPodGroup, "other", "g"}
	groups := []Key{g, h, pg, other}

	c := NewCounts()
	handler := c.Handler()
	terminatedAs := func(p *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
		p = p.DeepCopy()
		p.Status.Phase = phase
		return p
	}
	for _, step := range []struct {
		what  string
		event func()
		want  map[Key]int
	}{
		{"a pod in no group", func() { handler.OnAdd(member("loose", "ns", "app", "x"), false) },
			map[Key]int{}},
		{"first member of g", func() { handler.OnAdd(member("a", "ns", LabelPodGroup, "g", LabelMinAvailable, "3"), false) },
			map[Key]int{g: 1}},
		{"second member of g", func() { handler.OnAdd(member("b", "ns", LabelPodGroup, "g"), false) },
			map[Key]int{g: 2}},
		{"the same pod again (a resync): counted once", func() {
			p := member("b", "ns", LabelPodGroup, "g")
			handler.OnUpdate(p, p)
		}, map[Key]int{g: 2}},
		{"a PodGroup member of the same name", func() { handler.OnAdd(member("c", "ns", LabelPodGroupName, "g"), false) },
			map[Key]int{g: 2, pg: 1}},
		{"a member of g in another namespace", func() { handler.OnAdd(member("a", "other", LabelPodGroup, "g"), false) },
			map[Key]int{g: 2, pg: 1, other: 1}},
		{"relabelled from g to h", func() {
			handler.OnUpdate(member("b", "ns", LabelPodGroup, "g"), member("b", "ns", LabelPodGroup, "h"))
		}, map[Key]int{g: 1, h: 1, pg: 1, other: 1}},
		{"group label removed", func() {
			handler.OnUpdate(member("b", "ns", LabelPodGroup, "h"), member("b", "ns"))
		}, map[Key]int{g: 1, pg: 1, other: 1}},
		{"a loose pod joins g", func() {
			handler.OnUpdate(member("loose", "ns", "app", "x"), member("loose", "ns", LabelPodGroup, "g"))
		}, map[Key]int{g: 2, pg: 1, other: 1}},
		{"a member succeeds", func() {
			p := member("a", "ns", LabelPodGroup, "g", LabelMinAvailable, "3")
			handler.OnUpdate(p, terminatedAs(p, corev1.PodSucceeded))
		}, map[Key]int{g: 1, pg: 1, other: 1}},
		{"a terminated member deleted: nothing left to drop", func() {
			handler.OnDelete(terminatedAs(member("a", "ns", LabelPodGroup, "g"), corev1.PodSucceeded))
		}, map[Key]int{g: 1, pg: 1, other: 1}},
		{"a member fails", func() {
			p := member("c", "ns", LabelPodGroupName, "g")
			handler.OnUpdate(p, terminatedAs(p, corev1.PodFailed))
		}, map[Key]int{g: 1, other: 1}},
		{"a running member still counts", func() {
			p := member("loose", "ns", LabelPodGroup, "g")
			handler.OnUpdate(p, terminatedAs(p, corev1.PodRunning))
		}, map[Key]int{g: 1, other: 1}},
		{"deleted", func() { handler.OnDelete(member("loose", "ns", LabelPodGroup, "g")) },
			map[Key]int{other: 1}},
		{"deleted, seen only as a tombstone", func() {
			handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "other/a", Obj: member("a", "other", LabelPodGroup, "g")})
		}, map[Key]int{}},
		{"deleting an unknown pod", func() { handler.OnDelete(member("nobody", "ns", LabelPodGroup, "g")) },
			map[Key]int{}},
	} {
		step.event()
		got := map[Key]int{}
		for _, k := range groups {
			if n := c.Count(k); n != 0 {
				got[k] = n
			}
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Fatalf("after %q, counts (-want +got):\n%s", step.what, diff)
		}
		if c.Groups() != len(step.want) {
			t.Fatalf("after %q: %d groups kept, want %d (an emptied group must be dropped)", step.what, c.Groups(), len(step.want))
		}
	}
}

// CountWith counts the pod being placed even before its event arrives, and never twice.
func TestCountWith(t *testing.T) {
	g := Key{LabelPodGroup, "ns", "g"}
	c := NewCounts()
	a := member("a", "ns", LabelPodGroup, "g")
	b := member("b", "ns", LabelPodGroup, "g")
	c.Set(a)
	if n := c.CountWith(g, a); n != 1 {
		t.Errorf("a, counted already: %d, want 1", n)
	}
	if n := c.CountWith(g, b); n != 2 {
		t.Errorf("b, not seen yet: %d, want 2", n)
	}
	// b is known under another group (its relabel has not arrived): it is counted in g once.
	c.Set(member("b", "ns", LabelPodGroup, "h"))
	if n := c.CountWith(g, b); n != 2 {
		t.Errorf("b, known in h: %d, want 2", n)
	}
}

// A gated member exists but does not count towards the quorum until its gates are removed; the
// pod being placed is never gated, whatever the counts last heard of it.
func TestCountsGated(t *testing.T) {
	g := Key{LabelPodGroupName, "ns", "pg"}
	gated := func(name string) *corev1.Pod {
		p := member(name, "ns", LabelPodGroupName, "pg")
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
		return p
	}
	c := NewCounts()
	c.Set(member("a", "ns", LabelPodGroupName, "pg"))
	c.Set(gated("b"))
	if n, m := c.Count(g), c.Gated(g); n != 1 || m != 1 {
		t.Fatalf("one ungated, one gated: Count %d, Gated %d", n, m)
	}
	if n := c.CountWith(g, member("b", "ns", LabelPodGroupName, "pg")); n != 2 {
		t.Errorf("b being placed (its ungating not heard yet): %d, want 2", n)
	}
	c.Set(member("b", "ns", LabelPodGroupName, "pg"))
	if n, m := c.Count(g), c.Gated(g); n != 2 || m != 0 {
		t.Errorf("b ungated: Count %d, Gated %d, want 2 and 0", n, m)
	}
	c.Delete("ns/a")
	c.Delete("ns/b")
	if c.Groups() != 0 {
		t.Errorf("%d groups kept after every member left", c.Groups())
	}
	if _, ok := c.Since(g); ok {
		t.Error("an emptied group keeps its age")
	}
}

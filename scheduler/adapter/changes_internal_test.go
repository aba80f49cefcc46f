package adapter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// snapshotHandle is a framework handle that gives only a snapshot.
type snapshotHandle struct {
	fwk.Handle
	snap *cache.Snapshot
}

func (h snapshotHandle) SnapshotSharedLister() fwk.SharedLister { return h.snap }

// The snapshot's PodsChangedSince lists, between two calls, exactly the nodes whose NodeInfo
// generation moved (each with it) and is never unknown: kube-scheduler's own cache with pods
// assumed, forgotten, added and removed, nodes updated and added, the snapshot updated from it
// (UpdateSnapshot, as at a cycle's start) before each call; the reference is PodsGeneration of
// every node before and after.
func TestSnapshotPodsChangedSince(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 13))
	logger := klog.Background()
	sc := cache.New(t.Context(), nil, false, false)
	snap := cache.NewEmptySnapshot()
	c := newSnapshotCluster(snapshotHandle{snap: snap}, &Adapter{})
	var names []string
	addNode := func() {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", len(names)), ResourceVersion: "1"}}
		sc.AddNode(logger, n)
		names = append(names, n.Name)
	}
	for range 6 {
		addNode()
	}
	var pods []*corev1.Pod // in the cache: assumed (bound false) or added
	bound := map[*corev1.Pod]bool{}
	made := 0
	update := func() {
		if err := sc.UpdateSnapshot(logger, snap); err != nil {
			t.Fatal(err)
		}
	}
	update()
	gens := func() map[string]int64 {
		out := map[string]int64{}
		for _, n := range names {
			out[n] = c.PodsGeneration(n)
		}
		return out
	}
	_, mark, known := c.PodsChangedSince(0, nil)
	if !known {
		t.Fatal("the snapshot's changes are not known")
	}
	if !c.wholeRead.Load() {
		t.Fatal("PodsChangedSince reads every node but leaves wholeRead unset: pods would be signed for batching")
	}
	listedSome := 0
	for step := range 400 {
		before := gens()
		for range r.IntN(4) {
			switch k := r.IntN(8); {
			case k < 3:
				made++
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", made), UID: types.UID(fmt.Sprint("u", made))},
					Spec: corev1.PodSpec{NodeName: names[r.IntN(len(names))]}}
				if err := sc.AssumePod(logger, p); err != nil {
					t.Fatal(err)
				}
				pods = append(pods, p)
			case k == 3 && len(pods) > 0:
				i := r.IntN(len(pods))
				p := pods[i]
				var err error
				if bound[p] {
					err = sc.RemovePod(logger, p)
				} else {
					err = sc.ForgetPod(logger, p)
				}
				if err != nil {
					t.Fatal(err)
				}
				pods = slices.Delete(pods, i, i+1)
			case k == 4 && len(pods) > 0:
				p := pods[r.IntN(len(pods))]
				if !bound[p] {
					if err := sc.AddPod(logger, p); err != nil { // the binding seen: assumed to added
						t.Fatal(err)
					}
					bound[p] = true
				}
			case k == 5:
				old, _ := snap.Get(names[r.IntN(len(names))])
				n := old.Node().DeepCopy()
				n.ResourceVersion += "1"
				sc.UpdateNode(logger, old.Node(), n)
			case k == 6 && r.IntN(4) == 0:
				addNode()
			}
		}
		update()
		after := gens()
		var moved []string
		for _, n := range names {
			if after[n] != before[n] {
				moved = append(moved, n)
			}
		}
		changes, next, known := c.PodsChangedSince(mark, nil)
		if !known || next < mark {
			t.Fatalf("step %d: known %v, next %d from mark %d", step, known, next, mark)
		}
		mark = next
		var listed []string
		for _, ch := range changes {
			listed = append(listed, ch.Node)
			if ch.Generation != after[ch.Node] {
				t.Fatalf("step %d: %s listed at generation %d; PodsGeneration %d", step, ch.Node, ch.Generation, after[ch.Node])
			}
		}
		slices.Sort(listed)
		slices.Sort(moved)
		if diff := cmp.Diff(moved, listed); diff != "" {
			t.Fatalf("step %d: nodes changed (-generation moved +listed):\n%s", step, diff)
		}
		if len(listed) > 0 {
			listedSome++
		}
	}
	if listedSome < 200 {
		t.Errorf("only %d calls listed a change: the test does not exercise it", listedSome)
	}
}

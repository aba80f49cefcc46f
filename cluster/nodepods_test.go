package cluster

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
)

// PodsOn gives, node by node, the pods the cache counts (bound, not terminated), whatever order
// the handlers see the events in, and a node's generation moves whenever one of its pods
// changes (a condition, say, which leaves the allocation as it was) and never comes back to
// an earlier set of pods: random sequences of additions, updates, moves, terminations and
// deletions (some as tombstones), checked after each event against the pods last seen.
func TestNodePodsFollowEvents(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 23))
	nodes := []string{"", "n1", "n2", "n3"}
	for iter := range 50 {
		s := NewCache(fake.NewClientset(), nil, quietLog())
		last := map[string]*corev1.Pod{} // by name: the latest object the handlers saw, nil once deleted
		seen := map[string]map[int64]string{}
		for step := range 200 {
			name := fmt.Sprintf("p%d", r.IntN(12))
			p := makePod(name, nodes[r.IntN(len(nodes))], fmt.Sprintf("%dm", 10*r.IntN(3)), "1Mi")
			p.ResourceVersion = fmt.Sprint(step) // which version of the pod PodsOn gives
			switch k := r.IntN(10); {
			case k < 6:
				if r.IntN(2) == 0 {
					// only a status change: the allocation stays, the pod object is new
					p.Status.Message = fmt.Sprint(step)
				}
				if r.IntN(8) == 0 {
					p.Status.Phase = corev1.PodSucceeded
				}
				s.podChanged(p)
				last[name] = p
			case k < 8:
				s.podDeleted(p)
				last[name] = nil
			default:
				s.podDeleted(cache.DeletedFinalStateUnknown{Key: "ns/" + name, Obj: p})
				last[name] = nil
			}
			for _, node := range nodes[1:] {
				var want []string
				for _, q := range last {
					if q != nil && q.Spec.NodeName == node && !terminated(q) {
						want = append(want, q.Name+"@"+q.ResourceVersion)
					}
				}
				pods, gen := s.PodsOn(node)
				var got []string
				for _, q := range pods {
					got = append(got, q.Name+"@"+q.ResourceVersion)
				}
				slices.Sort(want)
				slices.Sort(got)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("run %d step %d: pods on %s (-want +got):\n%s", iter, step, node, diff)
				}
				if g := s.PodsGeneration(node); g != gen {
					t.Fatalf("run %d step %d: %s: PodsGeneration %d, PodsOn's %d", iter, step, node, g, gen)
				}
				key := fmt.Sprint(got)
				if seen[node] == nil {
					seen[node] = map[int64]string{}
				}
				if prev, ok := seen[node][gen]; ok && prev != key {
					t.Fatalf("run %d step %d: %s: generation %d was %s, now %s", iter, step, node, gen, prev, key)
				}
				seen[node][gen] = key
			}
		}
	}
}

// PodsChangedSince lists, between two calls, exactly the nodes whose pods changed (each change
// once, with the node's generation now), and says it no longer knows when more changes than
// its journal holds came between: random events as above, and a reader asking from its last
// mark after 0 to 12 events, or now and then after events enough to make more changes than the
// journal holds.
func TestPodsChangedSinceListsEveryChange(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 11))
	nodes := []string{"", "n1", "n2", "n3", "n4"}
	s := NewCache(fake.NewClientset(), nil, quietLog())
	var mark int64
	known, unknown := 0, 0
	for query := range 3000 {
		events, big := r.IntN(13), query%500 == 499
		var touched []string // nodes whose generation moved, once per change
		for e := 0; (big && len(touched) <= podsJournal) || (!big && e < events); e++ {
			before := map[string]int64{}
			for _, n := range nodes[1:] {
				before[n] = s.PodsGeneration(n)
			}
			name := fmt.Sprintf("p%d", r.IntN(12))
			p := makePod(name, nodes[r.IntN(len(nodes))], fmt.Sprintf("%dm", 10*r.IntN(3)), "1Mi")
			switch k := r.IntN(10); {
			case k < 6:
				if r.IntN(2) == 0 {
					p.Status.Message = fmt.Sprint(query) // a status change
				}
				if r.IntN(8) == 0 {
					p.Status.Phase = corev1.PodSucceeded
				}
				s.podChanged(p)
			default:
				s.podDeleted(p)
			}
			for _, n := range nodes[1:] {
				if s.PodsGeneration(n) != before[n] {
					touched = append(touched, n)
				}
			}
		}
		changes, next, ok := s.PodsChangedSince(mark, nil)
		if next != s.lastGen || next < mark {
			t.Fatalf("query %d: next %d from mark %d; the last generation is %d", query, next, mark, s.lastGen)
		}
		mark = next
		if !ok {
			unknown++
			if len(touched) <= podsJournal || len(changes) > 0 {
				t.Fatalf("query %d: not known after %d changes, with %d listed", query, len(touched), len(changes))
			}
			continue
		}
		known++
		var listed []string
		for _, c := range changes {
			listed = append(listed, c.Node)
			if g := s.PodsGeneration(c.Node); c.Generation != g {
				t.Fatalf("query %d: %s listed at generation %d, now %d", query, c.Node, c.Generation, g)
			}
		}
		slices.Sort(listed)
		slices.Sort(touched)
		if diff := cmp.Diff(touched, listed); diff != "" {
			t.Fatalf("query %d after %d changes: nodes changed (-moved +listed):\n%s", query, len(touched), diff)
		}
	}
	if known < 2500 || unknown != 6 {
		t.Errorf("%d queries known, %d not: the test does not exercise both", known, unknown)
	}
}

// A reader that follows PodsChangedSince misses no change made while it reads: the pod
// handlers run in one goroutine while another reads the changes and, for each node listed (or
// every node, when the changes are not known), its Allocated; once the handlers stop, one more
// read makes the reader's copy of every node's Allocated the cache's. Run with -race.
func TestPodsChangedSinceMissesNothingConcurrently(t *testing.T) {
	s := NewCache(fake.NewClientset(), nil, quietLog())
	nodes := make([]string, 20)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("n%d", i)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := rand.New(rand.NewPCG(35, 12))
		for i := range 30000 {
			p := makePod(fmt.Sprintf("p%d", r.IntN(200)), nodes[r.IntN(len(nodes))], fmt.Sprintf("%dm", 10+10*r.IntN(5)), "1Mi")
			if i%3 == 0 {
				s.podDeleted(p)
			} else {
				s.podChanged(p)
			}
		}
	}()
	view := map[string]framework.Amounts{}
	var mark int64
	var changes []framework.PodsChange
	reads, unknown := 0, 0
	read := func() {
		var ok bool
		changes, mark, ok = s.PodsChangedSince(mark, changes[:0])
		if !ok {
			unknown++
			for _, n := range nodes {
				view[n] = s.Allocated(n)
			}
			return
		}
		for _, c := range changes {
			view[c.Node] = s.Allocated(c.Node)
		}
	}
	for running := true; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		read()
		time.Sleep(10 * time.Microsecond)
	}
	read()
	for _, n := range nodes {
		if want, got := s.Allocated(n), view[n]; !maps.Equal(want, got) {
			t.Errorf("%s: the reader has %v, the cache %v", n, got, want)
		}
	}
	t.Logf("%d reads, %d of them unknown", reads, unknown)
}

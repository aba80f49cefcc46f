package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
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
						want = append(want, fmt.Sprintf("%s@%p", q.Name, q))
					}
				}
				pods, gen := s.PodsOn(node)
				var got []string
				for _, q := range pods {
					got = append(got, fmt.Sprintf("%s@%p", q.Name, q))
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

package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

func quietLog() *logrus.Entry {
	l, _ := logtest.NewNullLogger()
	return logrus.NewEntry(l)
}

// startCache starts a Cache over a fake clientset holding objs and waits for its caches.
func startCache(t *testing.T, objs ...runtime.Object) (*Cache, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	s := NewCache(client, nil, quietLog())
	if s.HasSynced() {
		t.Fatal("HasSynced before Start")
	}
	ctx, cancel := context.WithCancel(t.Context())
	stop := s.Start(ctx)
	t.Cleanup(func() { cancel(); stop() })
	wait, done := context.WithTimeout(t.Context(), time.Minute)
	defer done()
	if !s.WaitForSync(wait) {
		t.Fatal("the caches did not sync")
	}
	return s, client
}

// eventually polls cond until it holds; it fails the test after a minute (a bound far above
// what the fake clientset needs, so that only a missing event fails it).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, detail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allocatedIs(t *testing.T, s *Cache, node string, want framework.Amounts) {
	t.Helper()
	eventually(t, "allocation of "+node, func() (bool, string) {
		diff := cmp.Diff(want, s.Allocated(node))
		return diff == "", "(-want +got):\n" + diff
	})
}

func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func TestStateLookupAndSync(t *testing.T) {
	done := makePod("done", "n2", "1", "1Gi")
	done.Status.Phase = corev1.PodSucceeded
	s, _ := startCache(t,
		makeNode("n1", "4", "8Gi"), makeNode("n2", "8", "16Gi"),
		makePod("a", "n1", "100m", "64Mi"), makePod("pending", "", "1", "1Gi"), done)

	n, ok := s.Node("n1")
	if !ok || n.Name != "n1" {
		t.Fatalf("Node(n1) = %v, %v", n, ok)
	}
	// The cache holds stripped nodes.
	if len(n.ManagedFields) != 0 || len(n.Status.Images) != 0 {
		t.Errorf("the cached node kept managed fields or images: %+v", n)
	}
	if got := n.Status.Allocatable.Cpu().MilliValue(); got != 4000 {
		t.Errorf("allocatable cpu %d, want 4000", got)
	}
	if n, ok := s.Node("nope"); ok || n != nil {
		t.Errorf("Node(nope) = %v, %v; want nil, false", n, ok)
	}
	var names []string
	for _, n := range s.Nodes() {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"n1", "n2"}, names); diff != "" {
		t.Errorf("Nodes (-want +got):\n%s", diff)
	}
	// Terminated pods are not listed (the API server filters them; the fake does not, so
	// Cache's own check is what is tested here). Unbound pods are.
	if diff := cmp.Diff([]string{"a", "pending"}, podNames(s.Pods())); diff != "" {
		t.Errorf("Pods (-want +got):\n%s", diff)
	}
	for _, p := range s.Pods() {
		if len(p.Annotations) != 0 || p.Spec.Containers[0].Image != "" {
			t.Errorf("pod %s was not stripped: %+v", p.Name, p)
		}
	}
	// Only the bound, running pod counts: a = 100m, 64Mi.
	allocatedIs(t, s, "n1", framework.Amounts{corev1.ResourceCPU: 100, corev1.ResourceMemory: 64 * mi, corev1.ResourcePods: 1})
	allocatedIs(t, s, "n2", framework.Amounts{})
}

// TestStateAllocationFollowsEvents drives a fake API server through a pod's life and checks
// each node's allocation after each step.
func TestStateAllocationFollowsEvents(t *testing.T) {
	s, client := startCache(t, makeNode("n1", "4", "8Gi"), makeNode("n2", "8", "16Gi"),
		makePod("a", "n1", "100m", "64Mi", "250m", "1Gi"))
	ctx := t.Context()
	pods := client.CoreV1().Pods("ns")

	// a: 100m + 250m = 350m; 64Mi + 1Gi.
	n1a := framework.Amounts{corev1.ResourceCPU: 350, corev1.ResourceMemory: 64*mi + gi, corev1.ResourcePods: 1}
	allocatedIs(t, s, "n1", n1a)

	// b is created unbound: no node gains anything.
	b := makePod("b", "", "1", "2Gi")
	if _, err := pods.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b in the cache", func() (bool, string) {
		return slices.Contains(podNames(s.Pods()), "b"), fmt.Sprint(podNames(s.Pods()))
	})
	allocatedIs(t, s, "n2", framework.Amounts{})

	// b is bound to n2 (what the binding subresource does to the pod).
	b.Spec.NodeName = "n2"
	if _, err := pods.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n2b := framework.Amounts{corev1.ResourceCPU: 1000, corev1.ResourceMemory: 2 * gi, corev1.ResourcePods: 1}
	allocatedIs(t, s, "n2", n2b)

	// a status-only change keeps n1's allocation, and keeps the very map handed out.
	before := s.Allocated("n1")
	a, _ := pods.Get(ctx, "a", metav1.GetOptions{})
	a.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A marker event after it: once the marker is seen, a's update has been handled.
	if _, err := pods.Create(ctx, makePod("marker", "n2", "1m", "1Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n2bm := framework.Amounts{corev1.ResourceCPU: 1001, corev1.ResourceMemory: 2*gi + mi, corev1.ResourcePods: 2}
	allocatedIs(t, s, "n2", n2bm)
	if diff := cmp.Diff(n1a, s.Allocated("n1")); diff != "" {
		t.Errorf("a status change moved n1's allocation:\n%s", diff)
	}
	if diff := cmp.Diff(n1a, before); diff != "" {
		t.Errorf("a map handed out earlier was modified:\n%s", diff)
	}

	// a is resized in place: its first container now asks 500m: 500m + 250m = 750m.
	a, _ = pods.Get(ctx, "a", metav1.GetOptions{})
	a.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
	if _, err := pods.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	allocatedIs(t, s, "n1", framework.Amounts{corev1.ResourceCPU: 750, corev1.ResourceMemory: 64*mi + gi, corev1.ResourcePods: 1})

	// a terminates: it stops counting (and stops being listed).
	a, _ = pods.Get(ctx, "a", metav1.GetOptions{})
	a.Status.Phase = corev1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	allocatedIs(t, s, "n1", framework.Amounts{})
	if slices.Contains(podNames(s.Pods()), "a") {
		t.Error("a terminated pod is listed")
	}
	// A map handed out earlier still reads as it did: copy on write.
	if diff := cmp.Diff(n1a, before); diff != "" {
		t.Errorf("a map handed out earlier was modified:\n%s", diff)
	}

	// b is deleted: n2 keeps only the marker.
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	allocatedIs(t, s, "n2", framework.Amounts{corev1.ResourceCPU: 1, corev1.ResourceMemory: mi, corev1.ResourcePods: 1})
	if err := pods.Delete(ctx, "marker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	allocatedIs(t, s, "n2", framework.Amounts{})

	// A node that joins later is found.
	if _, err := client.CoreV1().Nodes().Create(ctx, makeNode("n3", "2", "4Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n3 in the cache", func() (bool, string) {
		_, ok := s.Node("n3")
		return ok, "Node(n3) not found"
	})
}

// TestAllocationHandlers works the handlers directly, including the events a watch can
// deliver out of the usual order: a deletion seen only as a tombstone, an update for a pod
// never seen added, a pod recreated under the same name on another node.
func TestAllocationHandlers(t *testing.T) {
	s := NewCache(fake.NewClientset(), nil, quietLog())
	check := func(step, node string, want framework.Amounts) {
		t.Helper()
		if diff := cmp.Diff(want, s.Allocated(node)); diff != "" {
			t.Errorf("%s: allocation of %s (-want +got):\n%s", step, node, diff)
		}
	}
	one := func(cpu, mem, pods int64) framework.Amounts {
		return framework.Amounts{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem, corev1.ResourcePods: pods}
	}

	s.podChanged(makePod("a", "n1", "200m", "1Gi"))
	s.podChanged(makePod("b", "n1", "300m", "1Gi"))
	check("two pods", "n1", one(500, 2*gi, 2))

	// The same event twice counts once.
	s.podChanged(makePod("b", "n1", "300m", "1Gi"))
	check("repeated update", "n1", one(500, 2*gi, 2))

	// b recreated under its name on n2 (the watch may show it as an update).
	s.podChanged(makePod("b", "n2", "300m", "1Gi"))
	check("moved: old node", "n1", one(200, gi, 1))
	check("moved: new node", "n2", one(300, gi, 1))

	// A deletion known only from a tombstone (the watch missed the delete).
	s.podDeleted(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: makePod("b", "n2", "300m", "1Gi")})
	check("tombstone", "n2", framework.Amounts{})

	// Deleting what was never counted changes nothing.
	s.podDeleted(makePod("ghost", "n1", "1", "1Gi"))
	s.podDeleted(cache.DeletedFinalStateUnknown{Key: "ns/ghost2"})
	check("unknown deletions", "n1", one(200, gi, 1))

	// A pod whose requests are all zero still counts as a pod.
	s.podChanged(makePod("empty", "n1"))
	check("zero requests", "n1", one(200, gi, 2))

	// Failed pods release their node.
	failed := makePod("a", "n1", "200m", "1Gi")
	failed.Status.Phase = corev1.PodFailed
	s.podChanged(failed)
	check("failed", "n1", framework.Amounts{corev1.ResourcePods: 1})

	// Objects of another type are ignored.
	s.podChanged(&corev1.Node{})
	check("foreign object", "n1", framework.Amounts{corev1.ResourcePods: 1})
}

// TestAllocatedConcurrentReads reads the maps Allocated returns, without locks, while the
// handlers update them; run with -race.
func TestAllocatedConcurrentReads(t *testing.T) {
	s := NewCache(fake.NewClientset(), nil, quietLog())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var sum int64
				for _, v := range s.Allocated("n1") {
					sum += v
				}
				_ = sum
			}
		})
	}
	for i := range 2000 {
		p := makePod(fmt.Sprintf("p%d", i%50), "n1", "10m", "1Mi")
		if i%3 == 0 {
			s.podDeleted(p)
		} else {
			s.podChanged(p)
		}
	}
	close(stop)
	wg.Wait()
}

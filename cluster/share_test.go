package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/framework"
)

// mapShare is the pod's share as the cache counted it before podShare held cpu and memory
// inline (a map per pod): the reference the compact share must agree with.
func mapShare(p *corev1.Pod) (string, framework.Amounts, bool) {
	if p.Spec.NodeName == "" || terminated(p) {
		return "", nil, false
	}
	reqs := framework.PodRequests(p)
	a := make(framework.Amounts, len(reqs)+1)
	for name, q := range reqs {
		if v := framework.Amount(name, q); v != 0 {
			a[name] = v
		}
	}
	a[corev1.ResourcePods] += 1
	return p.Spec.NodeName, a, true
}

// randomPod returns a pod named name with random requests: cpu and memory most of the time,
// sometimes zero, sometimes other resources (ephemeral storage, a GPU, even "pods"), init and
// sidecar containers, an overhead; bound to one of three nodes or unbound, running, pending or
// terminated.
func randomPod(r *rand.Rand, name string) *corev1.Pod {
	res := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "example.com/gpu", corev1.ResourcePods}
	list := func() corev1.ResourceList {
		l := corev1.ResourceList{}
		for i, n := range res {
			// cpu and memory usually; the others rarely.
			if (i < 2 && r.IntN(5) > 0) || r.IntN(8) == 0 {
				v := r.Int64N(4) * 250 // 0 among them: a request of zero
				if n == corev1.ResourceCPU {
					l[n] = *resource.NewMilliQuantity(v, resource.DecimalSI)
				} else {
					l[n] = *resource.NewQuantity(v*1024, resource.BinarySI)
				}
			}
		}
		return l
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	for i := range 1 + r.IntN(3) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprint("c", i), Resources: corev1.ResourceRequirements{Requests: list()}})
	}
	for i := range r.IntN(3) {
		c := corev1.Container{Name: fmt.Sprint("i", i), Resources: corev1.ResourceRequirements{Requests: list()}}
		if r.IntN(2) == 0 {
			always := corev1.ContainerRestartPolicyAlways // a sidecar: counted with the containers
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	if r.IntN(6) == 0 {
		p.Spec.Overhead = list()
	}
	if r.IntN(6) > 0 {
		p.Spec.NodeName = fmt.Sprint("n", r.IntN(3))
	}
	p.Status.Phase = []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed}[r.IntN(5)]
	return p
}

// TestShareAgreesWithMaps drives the allocation handlers with random pods (created, changed,
// moved, terminated, deleted) and checks after every event that each node's allocation is what
// the per-pod maps the cache kept before sum to, and that each pod's compact share holds the
// same amounts as its map.
func TestShareAgreesWithMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	s := NewCache(fake.NewClientset(), nil, quietLog())
	type counted struct {
		node    string
		amounts framework.Amounts
	}
	ref := map[string]counted{} // by cache key, what the map accounting counts
	for step := range 5000 {
		name := fmt.Sprint("p", r.IntN(40))
		p := randomPod(r, name)
		if r.IntN(8) == 0 {
			s.podDeleted(p)
			delete(ref, "ns/"+name)
		} else {
			s.podChanged(p)
			delete(ref, "ns/"+name)
			if node, a, ok := mapShare(p); ok {
				ref["ns/"+name] = counted{node, a}
			}
			ps, ok := share(p)
			if _, _, want := mapShare(p); ok != want {
				t.Fatalf("step %d: share counts %v, the map accounting %v", step, ok, want)
			}
			if ok {
				got := framework.Amounts{}
				ps.each(func(n corev1.ResourceName, v int64) { got[n] = v })
				_, want, _ := mapShare(p)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("step %d: share of %s (-map +compact):\n%s", step, name, diff)
				}
			}
		}
		for _, node := range []string{"n0", "n1", "n2"} {
			want := framework.Amounts{}
			for _, c := range ref {
				if c.node != node {
					continue
				}
				for n, v := range c.amounts {
					want[n] += v
					if want[n] == 0 {
						delete(want, n)
					}
				}
			}
			if diff := cmp.Diff(want, s.Allocated(node)); diff != "" {
				t.Fatalf("step %d: allocation of %s (-map accounting +cache):\n%s", step, node, diff)
			}
		}
	}
}

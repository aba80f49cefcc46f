package cluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// makeNode returns a node with the given allocatable (and capacity) cpu and memory and 110 pods,
// carrying fields the cache's transform drops (managed fields, images) and fields it keeps (a
// label, an annotation).
func makeNode(name, cpu, memory string) *corev1.Node {
	return fixtures.MakeNode().Name(name).
		Label("kubernetes.io/hostname", name).
		Annotation("mean-free-cpu", "1000").
		ManagedBy("kubelet").
		Resources(fixtures.Res{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory, corev1.ResourcePods: "110"}).
		Image("registry.example/app:1", 1<<20).
		Obj()
}

// makePod returns a running pod in namespace "ns" with one container per request pair
// (cpu, memory), bound to node (unbound and pending when node is empty), carrying fields the
// transform drops (an annotation, the images).
func makePod(name, node string, requests ...string) *corev1.Pod {
	phase := corev1.PodRunning
	if node == "" {
		phase = corev1.PodPending
	}
	p := fixtures.MakePod().Namespace("ns").Name(name).UID("uid-"+name).
		Label("app", name).
		Annotation("note", "dropped by the transform").
		Node(node).Phase(phase)
	for i := 0; i+1 < len(requests); i += 2 {
		p.Container(fmt.Sprintf("c%d", i/2), "registry.example/app:1",
			fixtures.Res{corev1.ResourceCPU: requests[i], corev1.ResourceMemory: requests[i+1]})
	}
	return p.Obj()
}

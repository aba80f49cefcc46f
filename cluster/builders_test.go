package cluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// makeNode returns a node with the given allocatable cpu and memory.
func makeNode(name, cpu, memory string) *corev1.Node {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:          name,
			Labels:        map[string]string{"kubernetes.io/hostname": name},
			Annotations:   map[string]string{"mean-free-cpu": "1000"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Status: corev1.NodeStatus{
			Capacity:    rl,
			Allocatable: rl.DeepCopy(),
			Images:      []corev1.ContainerImage{{Names: []string{"registry.example/app:1"}, SizeBytes: 1 << 20}},
		},
	}
}

// makePod returns a running pod in namespace "ns" with one container per request pair
// (cpu, memory), bound to node (unbound when node is empty).
func makePod(name, node string, requests ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Labels:      map[string]string{"app": name},
			Annotations: map[string]string{"note": "dropped by the transform"},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if node == "" {
		p.Status.Phase = corev1.PodPending
	}
	for i := 0; i+1 < len(requests); i += 2 {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name:  fmt.Sprintf("c%d", i/2),
			Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(requests[i]),
				corev1.ResourceMemory: resource.MustParse(requests[i+1]),
			}},
		})
	}
	return p
}

package framework

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeView returns the part of n that agents may read, the same whichever way the nodes
// reached the extender (full Node objects in the request, or NodeNames resolved through the
// informer cache) and in plugin mode:
//
//   - metadata: name, uid, resourceVersion, labels, annotations;
//   - spec (taints, unschedulable, podCIDR, providerID, ...);
//   - status: capacity, allocatable, addresses.
//
// Everything else (conditions, images, node info, daemon endpoints, managed fields, owner
// references, ...) is left out: no agent reads it, and it is most of a node's bytes. The
// scheduler's own filters already keep pods off NotReady nodes (through taints). An agent that
// needs more must add the field here, so that both request forms and the cache keep it.
//
// The result shares n's maps and slices: like every node an agent sees, it must not be
// modified.
func NodeView(n *corev1.Node) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:            n.Name,
			UID:             n.UID,
			ResourceVersion: n.ResourceVersion,
			Labels:          n.Labels,
			Annotations:     n.Annotations,
		},
		Spec: n.Spec,
		Status: corev1.NodeStatus{
			Capacity:    n.Status.Capacity,
			Allocatable: n.Status.Allocatable,
			Addresses:   n.Status.Addresses,
		},
	}
}

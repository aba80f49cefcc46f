package cluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// strip is the informers' transform: it runs on every object before the cache stores it and
// keeps only what the agents and the allocation read, so that the cache's memory stays in
// proportion to what is used. Objects of other types pass through unchanged.
//
// Nodes keep exactly framework.NodeView: what agents may read, the same as a full-node request
// gives them (stripNode: with the strings and resource lists nodes repeat shared).
//
// Pods keep: namespace, name, UID, resource version, labels, deletion timestamp; spec.nodeName;
// status.phase; and what framework.PodRequests (k8s.io/component-helpers/resource.PodRequests)
// reads: each container's and init container's name, resource requests and restart policy,
// the pod-level resource requests and the overhead; and spec.schedulingGroup (the gang agent
// leaves a pod of a native pod group to kube-scheduler). For the reward agent, which learns
// from pod outcomes, and for safe's placed load, they also keep the Ready condition when True
// and the PodScheduled condition while Pending or once True (type, status and last transition
// time only), and the statuses of containers that have restarted (name, restart count, last
// termination's start and finish). Everything else (images, commands, env, volumes, probes,
// annotations, owner references but the controller's, other status details) is dropped. The
// controller reference (API version, kind, name, controller flag) stays for the pod's workload
// (package workload: the usage learner and the reward agent's pod types). Equal label maps and
// resource lists, stripped containers and controller references are shared among pods
// (interner): the replicas of a workload hold one copy. A pod is stored as a podRecord of what
// it keeps (recordPod), which its readers get back as a *corev1.Pod; a record (given again, as
// the informer may) passes through.
func strip(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return stripNode(o), nil
	case *corev1.Pod:
		return recordPod(o), nil
	}
	return obj, nil
}

// stripNode returns framework.NodeView of n, with the strings and resource lists nodes repeat
// shared (interner): label keys and values, annotation keys, capacity and allocatable (equal
// on nodes of one type). The same content: only where it is stored changes.
func stripNode(n *corev1.Node) *corev1.Node {
	v := framework.NodeView(n)
	v.Labels = shared.StringMap(v.Labels, true)
	v.Annotations = shared.StringMap(v.Annotations, false)
	v.Status.Capacity = shared.ResourceList(v.Status.Capacity)
	v.Status.Allocatable = shared.ResourceList(v.Status.Allocatable)
	return v
}

// controllerRef is the pod's controller reference alone, nil for none.
func controllerRef(p *corev1.Pod) []metav1.OwnerReference {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return nil
	}
	return shared.Owners([]metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Controller: ref.Controller}})
}

// stripConditions keeps what tells when a pod became ready or was bound, and no more: the Ready
// condition when it is True, and the PodScheduled condition while the pod is Pending or once it
// is True (its transition time is when the pod was bound: safe counts the load of the pods
// placed since a node's statistics by it, so a running pod must keep it); type, status and last
// transition time only.
func stripConditions(p *corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		keep := (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue) ||
			(c.Type == corev1.PodScheduled && (p.Status.Phase == corev1.PodPending || c.Status == corev1.ConditionTrue))
		if keep {
			out = append(out, corev1.PodCondition{Type: corev1.PodConditionType(shared.String(string(c.Type))),
				Status: corev1.ConditionStatus(shared.String(string(c.Status))), LastTransitionTime: c.LastTransitionTime})
		}
	}
	return out
}

// stripContainerStatuses keeps the statuses of containers that have restarted: name, restart
// count and the last termination's start and finish (how long the container ran). A container
// that never restarted has nothing to tell: most pods keep no status at all.
func stripContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	n := 0
	for _, c := range in {
		if c.RestartCount > 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, n)
	for _, c := range in {
		if c.RestartCount == 0 {
			continue
		}
		s := corev1.ContainerStatus{Name: c.Name, RestartCount: c.RestartCount}
		if t := c.LastTerminationState.Terminated; t != nil {
			s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
		}
		out = append(out, s)
	}
	return out
}
func stripContainers(in []corev1.Container) []corev1.Container {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{
			Name:          c.Name,
			Resources:     corev1.ResourceRequirements{Requests: shared.ResourceList(c.Resources.Requests)},
			RestartPolicy: c.RestartPolicy,
		}
	}
	return shared.Containers(out)
}

// podResources keeps the pod-level requests (limits are not read; dropping them saves a map per
// pod that sets them).
func podResources(r *corev1.ResourceRequirements) *corev1.ResourceRequirements {
	if r == nil || len(r.Requests) == 0 {
		return nil
	}
	return &corev1.ResourceRequirements{Requests: shared.ResourceList(r.Requests)}
}

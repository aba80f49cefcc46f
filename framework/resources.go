package framework

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests returns the resources pod requests, computed as kube-scheduler computes them:
// the larger of the containers' sum and each init container (restartable init containers
// counted as sidecars), pod-level requests when set, plus the pod overhead.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// CPUMemoryRequests returns pod's cpu request in millicores and memory request in bytes.
func CPUMemoryRequests(pod *corev1.Pod) (milliCPU, memory int64) {
	reqs := PodRequests(pod)
	return reqs.Cpu().MilliValue(), reqs.Memory().Value()
}

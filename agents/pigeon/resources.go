package pigeon

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// The resources, in the order NUM_RESOURCES selects them.
const (
	resCPU = iota
	resMemory
	resPods
	resGPU
	resEphemeral
)

// Pod demand floors: a pod that requests no cpu or no memory still takes some.
const (
	minCPUMilli  = 10 // millicores
	minMemoryMiB = 16 // MiB
)

// resourceNames are the resources' names; the gpu entry is replaced by Config.GPUResource.
var resourceNames = [MaxResources]corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, "nvidia.com/gpu", corev1.ResourceEphemeralStorage,
}

// usageAnnotations are the node annotator's allocation annotations, read when the agent has no
// cluster access: millicores, bytes, a count, a count, bytes.
var usageAnnotations = [MaxResources]string{
	nodestats.RequestedCPU, nodestats.RequestedMemory, nodestats.RequestedPods, nodestats.RequestedGPU,
	nodestats.RequestedEphemeralStorage,
}

// units divides a resource's base amount (framework.Amounts: millicores, bytes, counts) into
// the agent's unit: millicores, MiB, count, count, GiB.
var units = [MaxResources]float64{1, 1 << 20, 1, 1, 1 << 30}

// resources converts Kubernetes quantities to the agent's vectors for one Config.
type resources struct {
	m     int
	names [MaxResources]corev1.ResourceName
}

func newResources(cfg Config) resources {
	r := resources{m: cfg.NumResources, names: resourceNames}
	r.names[resGPU] = corev1.ResourceName(cfg.GPUResource)
	return r
}

// capacity returns the node's allocatable resources in the agent's units.
func (r resources) capacity(n *corev1.Node) vec {
	var c vec
	for j := 0; j < r.m; j++ {
		if q, ok := n.Status.Allocatable[r.names[j]]; ok {
			c[j] = float64(framework.Amount(r.names[j], q)) / units[j]
		}
	}
	return c
}

// fromAmounts converts summed requests (framework.Cluster.Allocated) to the agent's units.
func (r resources) fromAmounts(a framework.Amounts) vec {
	var u vec
	for j := 0; j < r.m; j++ {
		u[j] = float64(a[r.names[j]]) / units[j]
	}
	return u
}

// fromAnnotations reads the node's usage from the requested-* annotations. A missing
// annotation counts as 0; so does one that is not a finite number >= 0, which is reported in
// bad (the index of the first such annotation, or -1).
func (r resources) fromAnnotations(n *corev1.Node) (u vec, bad int) {
	bad = -1
	for j := 0; j < r.m; j++ {
		raw, ok := n.Annotations[usageAnnotations[j]]
		if !ok {
			continue
		}
		v, err := nodestats.Parse(raw)
		if err != nil || v < 0 {
			if bad < 0 {
				bad = j
			}
			continue
		}
		u[j] = v / units[j]
	}
	return u, bad
}

// demand returns the pod's demand in the agent's units: its requests as kube-scheduler computes
// them, zero cpu counted as 10m and zero memory as 16 MiB, pods = 1.
func (r resources) demand(pod *corev1.Pod) vec {
	reqs := framework.PodRequests(pod)
	var d vec
	for j := 0; j < r.m; j++ {
		switch j {
		case resPods:
			d[j] = 1
		default:
			if q, ok := reqs[r.names[j]]; ok {
				d[j] = float64(framework.Amount(r.names[j], q)) / units[j]
			}
		}
	}
	if d[resCPU] <= 0 {
		d[resCPU] = minCPUMilli
	}
	if r.m > resMemory && d[resMemory] <= 0 {
		d[resMemory] = minMemoryMiB
	}
	return d
}

package safe

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// What a pod is estimated at: how much it will use, before it runs. The risk adds the pod's
// estimate to a node's measured usage, and the load placed on a node since its statistics
// (placed.go) counts the estimates of the pods placed since. By default every estimate is the
// pod's request (requestEstimator); with Estimate learned, it is the pod's workload's learned
// usage (learnedEstimator, learned.go), and NewWithEstimator takes any other.

// Estimator says how much a pod will use, before it runs. Estimate is called once per call for
// the pod being placed, and once per placed pod when the placed load of a node is summed
// (memoized per node while its pods and Version do not change): it must be safe for concurrent
// use, allocate nothing beyond the request's computation on its common path and give the same
// estimate for the same pod while Version does not change. Evidence is called only to write a
// reason or an explanation.
type Estimator interface {
	Estimate(pod *corev1.Pod) Estimate
	// Evidence says where pod's estimate comes from ("p90 of 240 observations of deployment
	// shop/web, request 1 cpu 512.0Mi memory"; "" for the request estimator).
	Evidence(pod *corev1.Pod) string
	// Version changes whenever an estimate may have (what the agent remembers of its answers
	// is keyed by it); constant for an estimator whose estimates never change.
	Version() uint64
}

// Estimate is how much a pod will use.
type Estimate struct {
	// CPU in millicores and Memory in bytes: the units of the node annotations (nodestats) and
	// of framework.CPUMemoryRequests.
	CPU, Memory float64
	// RequestCPU and RequestMemory are the pod's request, in the same units.
	RequestCPU, RequestMemory float64
	// SpreadCPU and SpreadMemory are the standard deviation of the pod's usage, in the same
	// units (0: unknown, the request estimator's), which the node model composes (compose.go).
	SpreadCPU, SpreadMemory float64
	// Learned: the estimate is not the request; Source names what it was learned from (a
	// workload), "" for the request: two pods of equal estimates share remembered answers,
	// whose reasons name the evidence, only when their Source is the same.
	Learned bool
	Source  string
}

// requestEstimator estimates a pod at its request, as kube-scheduler computes it (containers,
// init containers and sidecars, pod-level resources, overhead): the agent's estimator unless
// Estimate is learned or NewWithEstimator gives another.
type requestEstimator struct{}

// Estimate implements Estimator.
func (requestEstimator) Estimate(pod *corev1.Pod) Estimate {
	cpu, memory := framework.CPUMemoryRequests(pod)
	return Estimate{CPU: float64(cpu), Memory: float64(memory), RequestCPU: float64(cpu), RequestMemory: float64(memory)}
}

// Evidence implements Estimator.
func (requestEstimator) Evidence(*corev1.Pod) string { return "" }

// Version implements Estimator.
func (requestEstimator) Version() uint64 { return 0 }

// demand is a pod's estimate in the form the hot path carries: computed once per call. scpu
// and smemory are its spread, when learned, for the composition with the node's pods of the
// same workload (compose.go; the call's source names the workload).
type demand struct {
	cpu, memory   float64
	scpu, smemory float64
}

// podDemand is the pod's request as a demand (requestEstimator's estimate).
func podDemand(pod *corev1.Pod) demand {
	return demandOf(requestEstimator{}.Estimate(pod))
}

func demandOf(e Estimate) demand {
	d := demand{cpu: e.CPU, memory: e.Memory}
	if e.Learned && (e.SpreadCPU > 0 || e.SpreadMemory > 0) {
		d.scpu, d.smemory = e.SpreadCPU, e.SpreadMemory
	}
	return d
}

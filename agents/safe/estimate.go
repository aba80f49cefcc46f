package safe

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// What a pod is estimated at: how much it will use, before it runs. The risk adds the pod's
// estimate to a node's measured usage, and the load placed on a node since its statistics
// (arrivals, see placed.go) sums the estimates of the pods placed since. Today every estimate
// is the pod's request (requestEstimator); a usage learner plugs in here through
// NewWithEstimator.

// Estimator says how much a pod will use, before it runs. It is called once per call for the
// pod being placed, and once per placed pod when the placed load of a node is summed (memoized
// per node while its pods do not change): it must be safe for concurrent use, allocate nothing
// on its common path and give the same estimate for the same pod until what it learned changes.
type Estimator interface {
	Estimate(pod *corev1.Pod) Estimate
}

// Estimate is how much a pod will use.
type Estimate struct {
	// CPU in millicores and Memory in bytes: the units of the node annotations (nodestats) and
	// of framework.CPUMemoryRequests.
	CPU, Memory float64
	// Evidence says where the estimate comes from: "" for the request; a learner says, e.g.,
	// "p90 of 240 observations of deployment shop/web". It is meant for reasons and explanations
	// (issue 37); nothing reads it yet.
	Evidence string
}

// requestEstimator estimates a pod at its request, as kube-scheduler computes it (containers,
// init containers and sidecars, pod-level resources, overhead): the agent's estimator unless
// NewWithEstimator gives another.
type requestEstimator struct{}

// Estimate implements Estimator.
func (requestEstimator) Estimate(pod *corev1.Pod) Estimate {
	cpu, memory := framework.CPUMemoryRequests(pod)
	return Estimate{CPU: float64(cpu), Memory: float64(memory)}
}

// demand is a pod's estimate in the form the hot path carries: computed once per call.
type demand struct{ cpu, memory float64 }

// podDemand is the pod's request as a demand (requestEstimator's estimate).
func podDemand(pod *corev1.Pod) demand {
	return demandOf(requestEstimator{}.Estimate(pod))
}

func demandOf(e Estimate) demand { return demand{cpu: e.CPU, memory: e.Memory} }

package annotator

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// Allocation annotations: the summed requests of the non-terminated pods bound to the node
// (as kube-scheduler computes a pod's requests), and allocatable minus that.
const (
	RequestedCPU              = "requested-cpu"               // millicores
	RequestedMemory           = "requested-memory"            // bytes
	RequestedPods             = "requested-pods"              // count
	RequestedGPU              = "requested-gpu"               // count of the GPU resource (GPU_RESOURCE)
	RequestedEphemeralStorage = "requested-ephemeral-storage" // bytes

	FreeCPU              = "free-cpu"
	FreeMemory           = "free-memory"
	FreePods             = "free-pods"
	FreeGPU              = "free-gpu"
	FreeEphemeralStorage = "free-ephemeral-storage"
)

// Usage statistics annotations, read by the safe agent: free cpu in millicores and free memory
// in bytes over the statistics window. "forcasted" is the spelling deployed agents read.
const (
	MeanFreeCPU        = "mean-free-cpu"
	StdFreeCPU         = "std-free-cpu"
	ForecastFreeCPU    = "forcasted-free-cpu"
	MeanFreeMemory     = "mean-free-memory"
	StdFreeMemory      = "std-free-memory"
	ForecastFreeMemory = "forcasted-free-memory"

	// StatisticsTimestamp is when the statistics were computed (RFC 3339, UTC; the end of the
	// window they cover). It is written with every statistics patch and refreshed at least every
	// STATS_REFRESH, so that a reader can tell fresh statistics from those of an annotator that
	// stopped.
	StatisticsTimestamp = "statistics-timestamp"

	// StatisticsRequestedCPU and StatisticsRequestedMemory are the node's requested cpu
	// (millicores) and memory (bytes) when the statistics were written, with every statistics
	// patch: a reader adds to the statistics the requests grown since (pods placed minus pods
	// gone), which the statistics cannot hold yet.
	StatisticsRequestedCPU    = "statistics-requested-cpu"
	StatisticsRequestedMemory = "statistics-requested-memory"
)

// resourceKeys pairs a resource with its two allocation annotations.
type resourceKeys struct {
	name            corev1.ResourceName
	requested, free string
}

func allocationKeys(gpu corev1.ResourceName) []resourceKeys {
	return []resourceKeys{
		{corev1.ResourceCPU, RequestedCPU, FreeCPU},
		{corev1.ResourceMemory, RequestedMemory, FreeMemory},
		{corev1.ResourcePods, RequestedPods, FreePods},
		{gpu, RequestedGPU, FreeGPU},
		{corev1.ResourceEphemeralStorage, RequestedEphemeralStorage, FreeEphemeralStorage},
	}
}

// allocationAnnotations returns the allocation annotations of node given its allocation.
// The free-* annotations are left out while the node has not reported its allocatable
// resources (a new node): allocatable - requested would be garbage. A resource missing from a
// reported allocatable list counts as 0 (a node without GPUs has 0 free GPUs).
func allocationAnnotations(node *corev1.Node, alloc framework.Amounts, gpu corev1.ResourceName) map[string]string {
	out := make(map[string]string, 10)
	for _, k := range allocationKeys(gpu) {
		req := alloc[k.name]
		out[k.requested] = strconv.FormatInt(req, 10)
		if len(node.Status.Allocatable) == 0 {
			continue
		}
		var capacity int64
		if q, ok := node.Status.Allocatable[k.name]; ok {
			capacity = framework.Amount(k.name, q)
		}
		out[k.free] = strconv.FormatInt(capacity-req, 10)
	}
	return out
}

// statisticsAnnotations formats the summaries of free cpu and free memory.
func statisticsAnnotations(cpu, memory Summary) map[string]string {
	return map[string]string{
		MeanFreeCPU: formatAmount(cpu.Mean), StdFreeCPU: formatAmount(cpu.Std), ForecastFreeCPU: formatAmount(cpu.Forecast),
		MeanFreeMemory: formatAmount(memory.Mean), StdFreeMemory: formatAmount(memory.Std),
		ForecastFreeMemory: formatAmount(memory.Forecast),
	}
}

// formatAmount writes an amount as an integer (millicores, bytes): what every reader parses.
func formatAmount(v float64) string {
	return strconv.FormatInt(int64(math.Round(v)), 10)
}

// withinTolerance reports whether the annotation value old is close enough to want that
// rewriting it is not worth a patch: both integers and |want - old| <= tolerance * |old|.
// A missing or unparseable old value is never close.
func withinTolerance(old string, ok bool, want string, tolerance float64) bool {
	if !ok {
		return false
	}
	if old == want {
		return true
	}
	o, err1 := strconv.ParseFloat(old, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	if err1 != nil || err2 != nil || math.IsNaN(o) || math.IsInf(o, 0) {
		return false
	}
	return math.Abs(w-o) <= tolerance*math.Abs(o)
}

// stale reports whether the statistics timestamp value v is missing, unreadable, in the future
// or older than maxAge at now.
func stale(v string, ok bool, now time.Time, maxAge time.Duration) bool {
	if !ok {
		return true
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return true
	}
	age := now.Sub(t)
	return age < 0 || age >= maxAge
}

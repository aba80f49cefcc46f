package annotator

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// resourceKeys pairs a resource with its two allocation annotations (see nodestats).
type resourceKeys struct {
	name            corev1.ResourceName
	requested, free string
}

func allocationKeys(gpu corev1.ResourceName) []resourceKeys {
	return []resourceKeys{
		{corev1.ResourceCPU, nodestats.RequestedCPU, nodestats.FreeCPU},
		{corev1.ResourceMemory, nodestats.RequestedMemory, nodestats.FreeMemory},
		{corev1.ResourcePods, nodestats.RequestedPods, nodestats.FreePods},
		{gpu, nodestats.RequestedGPU, nodestats.FreeGPU},
		{corev1.ResourceEphemeralStorage, nodestats.RequestedEphemeralStorage, nodestats.FreeEphemeralStorage},
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
		out[k.requested] = nodestats.FormatInt(req)
		if len(node.Status.Allocatable) == 0 {
			continue
		}
		var capacity int64
		if q, ok := node.Status.Allocatable[k.name]; ok {
			capacity = framework.Amount(k.name, q)
		}
		out[k.free] = nodestats.FormatInt(capacity - req)
	}
	return out
}

// statisticsAnnotations formats the summaries of free cpu and free memory (see nodestats for
// what each means). The forecast is written under the "forcasted" keys, which every reader
// reads first.
func statisticsAnnotations(cpu, memory Summary) map[string]string {
	return map[string]string{
		nodestats.MeanFreeCPU: nodestats.FormatAmount(cpu.Mean), nodestats.StdFreeCPU: nodestats.FormatAmount(cpu.Std),
		nodestats.ForcastedFreeCPU: nodestats.FormatAmount(cpu.Forecast),
		nodestats.MeanFreeMemory:   nodestats.FormatAmount(memory.Mean), nodestats.StdFreeMemory: nodestats.FormatAmount(memory.Std),
		nodestats.ForcastedFreeMemory: nodestats.FormatAmount(memory.Forecast),
	}
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
	t, err := nodestats.ParseTimestamp(v)
	if err != nil {
		return true
	}
	age := now.Sub(t)
	return age < 0 || age >= maxAge
}

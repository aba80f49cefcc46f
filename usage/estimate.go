package usage

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// Demand is what a pod is expected to use, in the units agents use: CPU in millicores and
// Memory in bytes (the node annotations' and framework.CPUMemoryRequests' units), with the
// spread of its usage, for an agent that composes a node from its pods.
type Demand struct {
	// CPU and Memory are the estimate: the request scaled by the workload's learned ratio at
	// the learner's percentile when Learned, else the request.
	CPU, Memory float64
	// SpreadCPU and SpreadMemory are the standard deviation of the pod's usage implied by the
	// learned percentile and median, (p-th percentile - median) / z(p) times the request, z the
	// standard normal quantile (0 when not Learned or the percentile is at most the median).
	SpreadCPU, SpreadMemory float64
	// Learned: the workload is trusted and the estimate is not the request; Key names it.
	Learned bool
	Key     string
}

// Demand returns the demand of pod, which requests cpu millicores and memory bytes.
func (l *Learner) Demand(pod *corev1.Pod, cpu, memory float64) Demand {
	d := Demand{CPU: cpu, Memory: memory}
	w := l.Lookup(pod)
	if !w.Trusted {
		return d
	}
	d.CPU, d.Memory = w.Apply(cpu, memory)
	d.Learned, d.Key = true, w.Key
	if p := w.Percentile; p > 0.5 && p < 1 {
		z := math.Sqrt2 * math.Erfinv(2*p-1)
		l.mu.RLock()
		st, ok := l.m[w.Workload]
		var mcpu, mmem float64
		if ok {
			if !st.cpu.empty() {
				mcpu = st.cpu.percentile(0.5)
			}
			if !st.mem.empty() {
				mmem = st.mem.percentile(0.5)
			}
		}
		l.mu.RUnlock()
		if w.CPU > mcpu && mcpu > 0 {
			d.SpreadCPU = (w.CPU - mcpu) / z * cpu
		}
		if w.Memory > mmem && mmem > 0 {
			d.SpreadMemory = (w.Memory - mmem) / z * memory
		}
	}
	return d
}

package safe

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The load placed on a node since its statistics: the usage estimated for the pods placed
// after the statistics were computed, which the statistics cannot hold yet (PlacedShare of
// their estimates, estimate.go; or of the growth of the node's requests). measure.go adds it to
// the node's measured usage as it adds the pod's estimate.

// load is the usage estimated for the pods placed on one node since its statistics.
type load struct {
	cpu, memory float64
	pods        int
	// overCPU and overMemory are the part of cpu and memory by which the pods' estimates
	// exceed their requests (negative when below).
	overCPU, overMemory float64
	// grown: the load is the growth of the node's requests since its statistics
	// (statistics-requested-*), not a sum over the pods placed since.
	grown bool
	// model: the load is the node model's (model.go): pods counts the pods it adds, departed
	// the pods gone that it takes off.
	model    bool
	departed int
	// comp is the composition of the node's pods' spreads (compose.go), nil without any.
	comp *composition
}

// placed returns the load placed on n since its statistics (in: n's inputs) for call c: with
// PlacedGrowth, when the annotator wrote the node's requests with its statistics
// (statistics-requested-*), the growth of its requests since (pods placed, less pods gone: the
// usage of pods that left is still in the statistics, so their requests are counted off);
// else the arrivals since the statistics-timestamp (placedLoad). The annotator writes requests,
// so the growth counts requests; with learned estimates the pods placed since the statistics
// add what their estimates exceed their requests by (or take off what they fall short), so
// that each arrival counts at its estimate and each departure at its request (at least 0).
func (a *Agent) placed(n *corev1.Node, in *nodeInputs, c *call) load {
	if a.departed != nil && a.pods != nil && a.share > 0 && (in.cpu.measured || in.memory.measured) && in.stamp.readable {
		return a.modelOn(n.Name, in.stamp.at, in.window, c.version)
	}
	if a.growth && in.stampRequestedKnown && a.cluster != nil && a.share > 0 && (in.cpu.measured || in.memory.measured) && in.stamp.readable {
		alloc := a.cluster.Allocated(n.Name)
		cpu := a.share * (float64(alloc[corev1.ResourceCPU]) - in.stampRequested.cpu)
		memory := a.share * (float64(alloc[corev1.ResourceMemory]) - in.stampRequested.memory)
		if !a.byRequest {
			arrivals := a.placedLoad(n, in, c)
			cpu, memory = cpu+arrivals.overCPU, memory+arrivals.overMemory
		}
		return load{cpu: max(0, cpu), memory: max(0, memory), grown: true}
	}
	return a.placedLoad(n, in, c)
}

// placeSince fills c.placed: for every node of nodes with statistics and a readable
// statistics-timestamp, the pods on it (bound, or assumed in plugin mode) placed after that
// timestamp, and PlacedShare of their estimates (their requests by default). A pod's placement
// time is its PodScheduled condition's lastTransitionTime (set by the API server when it binds
// the pod); a pod without one (assumed, or just bound) counts as placed now. The statistics cannot hold the usage of
// such pods: between two refreshes the node would look as idle as before, however many pods
// it received (the hot spot of every load-aware scheduler).
//
// With NodePods (the extender's cache, plugin mode) the load is looked up per node as the call
// judges it (placedOn), so a call costs per node asked about, not per pod of the cluster;
// without, this walks every pod once per call.
func (a *Agent) placeSince(nodes []*corev1.Node, c *call) {
	if a.cluster == nil || a.share <= 0 {
		return
	}
	if a.pods != nil {
		c.indexed = true
		return
	}
	stamps := make(map[string]time.Time, len(nodes))
	for _, n := range nodes {
		in := &a.entry(n).in
		if (in.cpu.measured || in.memory.measured) && in.stamp.readable && (!(in.stampRequestedKnown && a.growth) || !a.byRequest) {
			stamps[n.Name] = in.stamp.at
		}
	}
	if len(stamps) == 0 {
		return
	}
	sums := map[string]*placedSum{}
	for _, p := range a.cluster.Pods() {
		at, ok := stamps[p.Spec.NodeName]
		if !ok {
			continue
		}
		sum := sums[p.Spec.NodeName]
		if sum == nil {
			sum = &placedSum{}
			sums[p.Spec.NodeName] = sum
		}
		sum.add(a.estimator, p, at)
	}
	c.placed = make(map[string]load, len(sums))
	for node, sum := range sums {
		c.placed[node] = sum.load(a.share)
	}
}

// placedSum sums the estimates of the pods placed on one node after its statistics, each
// rounded to a millicore and a byte, in integers (so that the sum does not depend on the pods'
// order). The request estimator's estimates are integers already.
type placedSum struct {
	cpu, memory int64
	// overCPU and overMemory sum the estimates less the requests (0 with the request
	// estimator): what the growth of the requests leaves out.
	overCPU, overMemory int64
	pods                int
}

// add counts p, at est's estimate, if it is placed after at (see placeSince) and not
// terminated.
func (s *placedSum) add(est Estimator, p *corev1.Pod, at time.Time) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	if t, known := placedAt(p); known && !t.After(at) {
		return
	}
	e := est.Estimate(p)
	s.cpu += int64(math.Round(e.CPU))
	s.memory += int64(math.Round(e.Memory))
	s.overCPU += int64(math.Round(e.CPU)) - int64(math.Round(e.RequestCPU))
	s.overMemory += int64(math.Round(e.Memory)) - int64(math.Round(e.RequestMemory))
	s.pods++
}

// load is share of the sum.
func (s *placedSum) load(share float64) load {
	if s.pods == 0 {
		return load{}
	}
	return load{cpu: share * float64(s.cpu), memory: share * float64(s.memory), pods: s.pods,
		overCPU: share * float64(s.overCPU), overMemory: share * float64(s.overMemory)}
}

// placedLoad returns the load placed on n since its statistics (in: n's inputs) for call c.
func (a *Agent) placedLoad(n *corev1.Node, in *nodeInputs, c *call) load {
	if !c.indexed {
		return c.placed[n.Name]
	}
	if !(in.cpu.measured || in.memory.measured) || !in.stamp.readable {
		return load{}
	}
	return a.placedOn(n.Name, in.stamp.at, c.version)
}

// placedMemo remembers, per node, the load placed since its statistics-timestamp at one
// generation of its pods: the statistics change every few minutes and the node's pods with
// each placement, while the scheduler asks about the node for every pod.
type placedMemo struct {
	m      sync.Map // node name -> *placedEntry
	stores atomic.Int64
}

type placedEntry struct {
	generation int64
	departures uint64 // the node's departures' sequence (model.go)
	version    uint64 // the estimator's
	at         time.Time
	window     time.Duration
	l          load
}

// maxPlacedNodes bounds placedMemo; past it, the memo starts over.
const maxPlacedNodes = 1 << 17

// placedOn returns the load placed on node after at, from the memo while neither the node's
// pods nor at has changed.
func (a *Agent) placedOn(node string, at time.Time, version uint64) load {
	generation := a.pods.PodsGeneration(node)
	if e, ok := a.placedMemo.m.Load(node); ok {
		if e := e.(*placedEntry); e.generation == generation && e.version == version && e.at.Equal(at) {
			return e.l
		}
	}
	pods, generation := a.pods.PodsOn(node)
	var sum placedSum
	for _, p := range pods {
		sum.add(a.estimator, p, at)
	}
	e := &placedEntry{generation: generation, version: version, at: at, l: sum.load(a.share)}
	a.storePlaced(node, e)
	return e.l
}

// storePlaced remembers e for node.
func (a *Agent) storePlaced(node string, e *placedEntry) {
	if a.placedMemo.stores.Add(1) > maxPlacedNodes {
		a.placedMemo.m.Clear()
		a.placedMemo.stores.Store(0)
	}
	a.placedMemo.m.Store(node, e)
}

// placedAt returns when pod was bound to its node: its PodScheduled condition's
// lastTransitionTime; known is false without one.
func placedAt(pod *corev1.Pod) (at time.Time, known bool) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

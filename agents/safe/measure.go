package safe

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// What a node is measured at: its usage statistics (the node annotations of package nodestats,
// read once per node version into nodeInputs), their freshness at each call, the load placed
// on it since them (placed.go) and, without statistics, the requests of its pods.

// resourceKind names the annotations and the allocatable entry of one resource.
type resourceKind struct {
	name      string
	kind      corev1.ResourceName
	mean, std string
	// forecasts, in the order they are tried.
	forecasts [2]string
}

var (
	cpuResource = resourceKind{name: "cpu", kind: corev1.ResourceCPU,
		mean: nodestats.MeanFreeCPU, std: nodestats.StdFreeCPU,
		forecasts: [2]string{nodestats.ForcastedFreeCPU, nodestats.ForecastedFreeCPU}}
	memoryResource = resourceKind{name: "memory", kind: corev1.ResourceMemory,
		mean: nodestats.MeanFreeMemory, std: nodestats.StdFreeMemory,
		forecasts: [2]string{nodestats.ForcastedFreeMemory, nodestats.ForecastedFreeMemory}}
)

// state says what can be said of one resource of a node.
type state uint8

const (
	// noStats: no parseable mean annotation and no known requests; the resource is not judged.
	noStats state = iota
	// noAllocatable: statistics but a zero or missing allocatable amount: risk 1.
	noAllocatable
	// measured: mu and sigma are known from the statistics.
	measured
	// requested: no statistics (or stale ones), but the requests of the node's pods are known
	// (cluster view, or the annotator's requested-* annotation): mu is their sum with the pod's
	// request over allocatable, sigma 0. The priorities judge the node as kube-scheduler would;
	// the filter lets it through.
	requested
)

// judged reports whether the priorities score the resource from mu and sigma.
func (s state) judged() bool { return s == measured || s == requested }

// measure is what the agent knows of one resource of a node for one pod.
type measure struct {
	res   *resourceKind
	state state
	// Inputs, in the resource's unit (kept for reasons and tables). For requested, free is
	// allocatable minus the requests and std is 0.
	free, std, capacity, demand float64
	forecast                    bool
	// placed is the usage estimated for the pods placed on the node since its statistics
	// (PlacedShare of their estimates, or of its requests' growth: placed.go), added to the
	// measured usage; placedPods counts them.
	placed     float64
	placedPods int
	// placedGrown: placed is the growth of the node's requests since the statistics.
	placedGrown bool
	// placedModel: placed is the node model's (model.go), placedGone the pods gone it takes off.
	placedModel bool
	placedGone  int
	// mu and sigma are valid when state is measured or requested.
	mu, sigma float64
	// risk, once riskKnown, is beta.Risk(mu, sigma, T).
	risk      float64
	riskKnown bool
}

// measureNode reads the statistics of both resources of n and judges their freshness at the
// call's time. Stale statistics count as none. A resource without statistics is judged from
// the requests of the node's pods when they are known (state requested). Freshness is computed
// per call from the memoized timestamp (it depends on the time, not on the node).
func (a *Agent) measureNode(n *corev1.Node, c *call) (cpu, memory measure, f freshness) {
	return a.measure(n, &a.entry(n).in, c)
}

// measure is measureNode with n's inputs in: the per-pod computation, which reads the cluster
// for the node (the placed load, its requests) on every call. The answers of a node prepared
// for every pod (prepared, answers.go) come from its base, read once, and are held equal to
// these (TestPreparedAnswersArePerPodAnswers).
func (a *Agent) measure(n *corev1.Node, in *nodeInputs, c *call) (cpu, memory measure, f freshness) {
	cpuIn, memoryIn := &in.cpu, &in.memory
	if a.maxAge > 0 && (in.cpu.measured || in.memory.measured) {
		if f = in.stamp.freshness(c.now, a.maxAge); f.stale {
			c.stale.Add(1)
			cpuIn, memoryIn = &resourceInputs{}, &resourceInputs{}
		}
	}
	l := a.placed(n, in, c)
	if f.stale {
		l = load{}
	}
	b := a.base(n, in, cpuIn, memoryIn, l)
	cpu, memory = b.measures(c.d, c.source)
	return cpu, memory, f
}

// nodeBase is what measure reads of a node before any pod's demand: both resources' inputs (none
// when stale), the load placed since the statistics and, when a resource has no statistics, the
// requests of the node's pods and its allocatable amounts.
type nodeBase struct {
	cpu, memory resourceInputs
	l           load
	// req are the node's requests, when known (reqKnown) and needed; alloc its allocatable
	// cpu and memory then.
	req, alloc demand
	reqKnown   bool
}

// base reads n's base from its inputs in (cpuIn and memoryIn: its resources' inputs, or none
// when stale) and the placed load l.
func (a *Agent) base(n *corev1.Node, in *nodeInputs, cpuIn, memoryIn *resourceInputs, l load) nodeBase {
	b := nodeBase{cpu: *cpuIn, memory: *memoryIn, l: l}
	if (!cpuIn.measured || !memoryIn.measured) && !a.noRequests { // a resource will be noStats
		b.req, b.reqKnown = a.requests(n, in)
		b.alloc = demand{cpu: allocatable(n, &cpuResource), memory: allocatable(n, &memoryResource)}
	}
	return b
}

// measures applies the demand d to b: both resources' measures, with d added to the measured
// usage and the placed load, or, for a resource without statistics, to the node's requests when
// they are known.
func (b *nodeBase) measures(d demand, src string) (cpu, memory measure) {
	cpu = measureFrom(&b.cpu, &cpuResource, d.cpu, b.l)
	memory = measureFrom(&b.memory, &memoryResource, d.memory, b.l)
	if b.l.model {
		cpu.sigma = b.l.composedSigma(&cpu, d.scpu, src, 0)
		memory.sigma = b.l.composedSigma(&memory, d.smemory, src, 1)
	}
	if b.reqKnown {
		if cpu.state == noStats {
			cpu = fromRequests(&cpuResource, b.req.cpu, b.alloc.cpu, d.cpu)
		}
		if memory.state == noStats {
			memory = fromRequests(&memoryResource, b.req.memory, b.alloc.memory, d.memory)
		}
	}
	return cpu, memory
}

// requests returns the summed requests of n's pods: from the cluster view when there is one,
// else from the node annotator's requested-cpu and requested-memory annotations.
func (a *Agent) requests(n *corev1.Node, in *nodeInputs) (demand, bool) {
	if a.cluster != nil {
		alloc := a.cluster.Allocated(n.Name)
		return demand{cpu: float64(alloc[corev1.ResourceCPU]), memory: float64(alloc[corev1.ResourceMemory])}, true
	}
	return in.requested, in.requestedKnown
}

// fromRequests judges a resource without statistics from the requests of the node's pods:
// mu = (requests + demand) / allocatable, sigma 0.
func fromRequests(r *resourceKind, req, capacity, d float64) measure {
	m := measure{res: r, demand: d, capacity: capacity, free: capacity - req}
	if mu, sigma, ok := Utilization(m.free, 0, capacity, d); ok {
		m.state, m.mu, m.sigma = requested, mu, sigma
	}
	return m
}

// readNode reads what the agent needs of a node, for both resources, before any pod's demand.
func (a *Agent) readNode(n *corev1.Node) nodeInputs {
	in := nodeInputs{cpu: a.read(n, &cpuResource), memory: a.read(n, &memoryResource),
		stamp: readStamp(n.Annotations[nodestats.StatisticsTimestamp]), window: nodestats.Window(n.Annotations)}
	cpu, okc := nodestats.Lookup(n.Annotations, nodestats.RequestedCPU)
	memory, okm := nodestats.Lookup(n.Annotations, nodestats.RequestedMemory)
	in.requested, in.requestedKnown = demand{cpu: cpu, memory: memory}, okc && okm
	cpu, okc = nodestats.Lookup(n.Annotations, nodestats.StatisticsRequestedCPU)
	memory, okm = nodestats.Lookup(n.Annotations, nodestats.StatisticsRequestedMemory)
	in.stampRequested, in.stampRequestedKnown = demand{cpu: cpu, memory: memory}, okc && okm
	return in
}

func (a *Agent) read(n *corev1.Node, r *resourceKind) resourceInputs {
	mean, ok := nodestats.Lookup(n.Annotations, r.mean)
	if !ok {
		return resourceInputs{}
	}
	in := resourceInputs{measured: true}
	in.std, _ = nodestats.Lookup(n.Annotations, r.std) // 0 when missing or unparseable
	var forecast float64
	for _, key := range r.forecasts {
		if forecast, in.forecast = nodestats.Lookup(n.Annotations, key); in.forecast {
			break
		}
	}
	in.free = Blend(mean, forecast, in.forecast, a.w)
	in.capacity = allocatable(n, r)
	return in
}

// measureFrom applies the pod's demand d and the load placed since the statistics to a node's
// inputs for r: the placed load adds to the measured usage as the pod's request does.
func measureFrom(in *resourceInputs, r *resourceKind, d float64, l load) measure {
	m := measure{res: r, demand: d}
	if !in.measured {
		return m
	}
	m.free, m.std, m.capacity, m.forecast = in.free, in.std, in.capacity, in.forecast
	m.placed, m.placedPods, m.placedGrown = l.cpu, l.pods, l.grown
	m.placedModel, m.placedGone = l.model, l.departed
	if r.kind == corev1.ResourceMemory {
		m.placed = l.memory
	}
	var judged bool
	if m.mu, m.sigma, judged = Utilization(m.free, m.std, m.capacity, d+m.placed); judged {
		m.state = measured
	} else {
		m.state = noAllocatable
	}
	return m
}

// allocatable returns n's allocatable amount of r (millicores for cpu), 0 when missing.
func allocatable(n *corev1.Node, r *resourceKind) float64 {
	q, ok := n.Status.Allocatable[r.kind]
	if !ok {
		return 0
	}
	return float64(framework.Amount(r.kind, q))
}

// risk returns the risk of a measured resource, computing it once.
func (a *Agent) risk(m *measure) float64 {
	if !m.riskKnown {
		m.risk, m.riskKnown = a.risks.Risk(m.mu, m.sigma, a.t), true
	}
	return m.risk
}

// resourceInputs are what the agent reads of a node for one resource: the blended free amount,
// its standard deviation and the allocatable amount, before any pod's demand is added.
type resourceInputs struct {
	measured            bool // the mean annotation is present and readable
	free, std, capacity float64
	forecast            bool
}

// nodeInputs are a node's inputs for both resources, memoized per node version
// (framework.NodeMemo): reading them costs about half of a filter call (six annotation
// lookups, up to four float parses, a quantity conversion).
type nodeInputs struct {
	cpu, memory resourceInputs
	stamp       stamp
	// window is the span the statistics cover (statistics-window; nodestats.DefaultWindow
	// where the annotator writes none).
	window time.Duration
	// requested is the node annotator's requested-cpu and requested-memory, when both are
	// readable (requestedKnown).
	requested      demand
	requestedKnown bool
	// stampRequested is the node's requests when its statistics were written (the annotator's
	// statistics-requested-cpu and -memory), when both are readable (stampRequestedKnown).
	stampRequested      demand
	stampRequestedKnown bool
}

// stamp is what the statistics-timestamp annotation says. Whether it is fresh depends on the
// time of each call, so the memo keeps the timestamp, never a verdict on it.
type stamp struct {
	// present: the annotation is there and not blank; readable: it parses as RFC 3339, at at.
	present, readable bool
	at                time.Time
	// raw is an unreadable value, for the reason.
	raw string
}

// readStamp reads a statistics-timestamp annotation value ("" when missing).
func readStamp(v string) stamp {
	v = strings.TrimSpace(v)
	if v == "" {
		return stamp{}
	}
	at, err := nodestats.ParseTimestamp(v)
	if err != nil {
		return stamp{present: true, raw: v}
	}
	return stamp{present: true, readable: true, at: at}
}

// freshness is a node's statistics' freshness at the time of one call.
type freshness struct {
	stale bool
	// age is the call's time minus the timestamp (negative: the timestamp is ahead of this
	// clock); unreadable, with raw, tells a timestamp that is not RFC 3339.
	age        time.Duration
	unreadable bool
	raw        string
}

// freshness judges s at now: a missing timestamp is fresh (annotators of the original design
// write none); an unreadable one is stale (nothing vouches for the statistics); a readable one
// is stale when it is more than maxAge old, or more than maxAge ahead of now (a writer whose
// clock is that far off vouches for nothing either).
func (s stamp) freshness(now time.Time, maxAge time.Duration) freshness {
	switch {
	case !s.present:
		return freshness{}
	case !s.readable:
		return freshness{stale: true, unreadable: true, raw: s.raw}
	}
	age := now.Sub(s.at)
	return freshness{stale: age > maxAge || age < -maxAge, age: age}
}

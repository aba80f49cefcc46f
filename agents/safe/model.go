package safe

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The node model: a node is the sum of its pods. Its projected usage is, for each resource,
//
//	projected = Σ_{pods on it now} estimate + residual
//	residual  = measured − Σ_{pods there while it was measured} estimate × presence
//
// where measured is the annotator's statistics (the mean over its window, the node's
// statistics-window annotation, ending at the statistics-timestamp), estimate is each pod's estimate (estimate.go: its workload's
// learned usage, or its request) and presence the share of the window the pod was on the node
// (from its PodScheduled time to its departure, departures.go). The residual is what the
// statistics measure and the pods do not explain: daemons, pods of no workload, model error.
// Written as what the agent adds to the measured usage:
//
//	projected − measured = Σ_{pods now} estimate × (1 − presence) − Σ_{pods gone} estimate × presence
//
// so a pod placed after the statistics counts whole, a pod there for the whole window counts
// nothing (the statistics hold it), a pod placed within the window counts for what the
// window missed of it, and a pod gone leaves at its estimate for what the window held of it.
// The statistics stay the truth for what they measure: every refresh sets the residual anew,
// so a wrong estimate is corrected within one window after its pods settle.

// keptWindow is the longest statistics window whose departures the agent keeps (beyond
// SAFE_MAX_STATS_AGE): a pod that left longer ago than that counts as wholly in the statistics
// of a node with a longer window (it is not taken off: the node looks no emptier than its
// statistics).
const keptWindow = time.Hour

// presence returns the share of the window [at − window, at] within [from, to] (to zero:
// still there); from zero (placed at an unknown time: assumed, or just bound) means placed now.
func presence(from, to, at time.Time, window time.Duration) float64 {
	if from.IsZero() || window <= 0 {
		return 0
	}
	start := at.Add(-window)
	if from.Before(start) {
		from = start
	}
	end := at
	if !to.IsZero() && to.Before(end) {
		end = to
	}
	if !end.After(from) {
		return 0
	}
	return float64(end.Sub(from)) / float64(window)
}

// modelSum sums a node's model terms, each rounded to a millicore and a byte, in integers (the
// sum does not depend on the pods' order), and, when spreads is set (an estimator with
// spreads), the spreads of each workload's pods (compose.go).
type modelSum struct {
	// window is the span of the node's statistics (nodestats.Window).
	window         time.Duration
	cpu, memory    int64
	pods, departed int
	spreads        bool
	groups         map[string]*groupSpread
}

// group adds spreads (s: cpu, memory) now and weighted by presence w in the statistics to e's
// workload's group.
func (s *modelSum) group(e *Estimate, now bool, w float64) {
	if !e.Learned || (e.SpreadCPU <= 0 && e.SpreadMemory <= 0) {
		return
	}
	if s.groups == nil {
		s.groups = map[string]*groupSpread{}
	}
	g := s.groups[e.Source]
	if g == nil {
		g = &groupSpread{}
		s.groups[e.Source] = g
	}
	if now {
		g.now[0] += e.SpreadCPU
		g.now[1] += e.SpreadMemory
	}
	g.stats[0] += e.SpreadCPU * w
	g.stats[1] += e.SpreadMemory * w
}

// addPresent counts a pod on the node now at est's estimate times 1 − its presence in the
// statistics of at.
func (s *modelSum) addPresent(est Estimator, p *corev1.Pod, at time.Time) {
	if isTerminated(p) {
		return
	}
	placed, _ := placedAt(p)
	in := presence(placed, time.Time{}, at, s.window)
	w := 1 - in
	if w <= 0 && !s.spreads {
		return
	}
	e := est.Estimate(p)
	if s.spreads {
		s.group(&e, true, in)
	}
	if w <= 0 {
		return
	}
	s.cpu += int64(math.Round(e.CPU * w))
	s.memory += int64(math.Round(e.Memory * w))
	s.pods++
}

// addDeparted takes off a pod gone from the node at est's estimate times its presence in the
// statistics of at.
func (s *modelSum) addDeparted(est Estimator, d *departure, at time.Time) {
	w := presence(d.placed, d.left, at, s.window)
	if w <= 0 {
		return
	}
	e := est.Estimate(d.pod)
	if s.spreads {
		s.group(&e, false, w)
	}
	s.cpu -= int64(math.Round(e.CPU * w))
	s.memory -= int64(math.Round(e.Memory * w))
	s.departed++
}

// load is share of the sum (negative when more left than came), with the composed variance
// (share^2 of it: the share scales every pod's usage).
func (s *modelSum) load(share float64) load {
	l := load{cpu: share * float64(s.cpu), memory: share * float64(s.memory), pods: s.pods, departed: s.departed, model: true}
	if len(s.groups) > 0 {
		v := composeVariance(s.groups)
		c := &composition{variance: [2]float64{share * share * v[0], share * share * v[1]},
			spreads: make(map[string][2]float64, len(s.groups))}
		for k, g := range s.groups {
			c.spreads[k] = [2]float64{share * g.now[0], share * g.now[1]}
		}
		l.comp = c
	}
	return l
}

// modelOn returns the model's load of node for statistics over window ending at at: what its
// pods now and the pods gone from it add to its measured usage.
func (a *Agent) modelOn(node string, at time.Time, window time.Duration, version uint64) load {
	generation := a.pods.PodsGeneration(node)
	seq := a.departed.seqOf(node)
	if e, ok := a.placedMemo.m.Load(node); ok {
		if e := e.(*placedEntry); e.generation == generation && e.departures == seq && e.version == version && e.at.Equal(at) && e.window == window {
			return e.l
		}
	}
	pods, generation := a.pods.PodsOn(node)
	gone, _ := a.departed.on(node) // keyed by seq, read before: never newer than what is read
	sum := modelSum{window: window, spreads: !a.byRequest}
	for _, p := range pods {
		sum.addPresent(a.estimator, p, at)
	}
	for i := range gone {
		sum.addDeparted(a.estimator, &gone[i], at)
	}
	e := &placedEntry{generation: generation, departures: seq, version: version, at: at, window: window, l: sum.load(a.share)}
	a.storePlaced(node, e)
	return e.l
}

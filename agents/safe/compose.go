package safe

import (
	"math"
	"slices"
)

// Correlation in the node model: the pods of one workload move together (replicas behind one
// load, one daily shape in step), pods of different workloads independently. So within a
// workload their standard deviations add linearly, across workloads their variances add:
//
//	V = Σ_w (Σ_{i in w} s_i)^2
//
// and the node's variance is the statistics' (std^2), plus what its pods now compose, less what
// the pods the statistics held composed (each weighted by its presence in their window):
//
//	var = max(0, std^2 + Σ_w S_w,now^2 - Σ_w S_w,stats^2)
//
// The pod being placed joins its workload's group: it adds (S_w + s)^2 - S_w^2 = 2 S_w s + s^2,
// so the k-th replica of a bursty workload on one node costs 2k-1 times the variance of the
// first, what stacking replicas risks. A pod estimated at its request has no spread (s = 0).

// composition is what a node's pods' spreads add: variance is, per resource (cpu, memory), what
// the pods beyond the statistics add to the variance of the node's usage, less what the
// statistics held of the pods'; spreads the summed spread of the pods of each workload on the
// node now.
type composition struct {
	variance [2]float64
	spreads  map[string][2]float64
}

// groupSpread is the spreads of one workload's pods on a node: now, and as the statistics held
// them, per resource.
type groupSpread struct{ now, stats [2]float64 }

// composeVariance returns, per resource, Σ_w now^2 - Σ_w stats^2 over groups, summed in the
// order of the workloads' keys (the sum does not depend on the map's order).
func composeVariance(groups map[string]*groupSpread) (v [2]float64) {
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := groups[k]
		for r := range v {
			v[r] += g.now[r]*g.now[r] - g.stats[r]*g.stats[r]
		}
	}
	return v
}

// marginalVariance is what a pod of spread s adds to the variance of a node where its
// workload's pods now sum a spread of group: (group + s)^2 - group^2.
func marginalVariance(group, s float64) float64 { return 2*group*s + s*s }

// composedSigma returns m's sigma with the model's variance (resource r: 0 cpu, 1 memory) and
// the pod's spread s in its workload src composed in; m.sigma unchanged when they add nothing.
func (l *load) composedSigma(m *measure, s float64, src string, r int) float64 {
	if m.state != measured {
		return m.sigma
	}
	var extra, group float64
	if l.comp != nil {
		extra, group = l.comp.variance[r], l.comp.spreads[src][r]
	}
	if s > 0 {
		extra += marginalVariance(group, s)
	}
	if extra == 0 {
		return m.sigma
	}
	v := math.Max(0, m.std*m.std+extra)
	return clamp01(math.Sqrt(v) / m.capacity)
}

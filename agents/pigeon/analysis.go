package pigeon

// This file holds the pure maths of the agent: the coefficient of variation, the three
// objectives evaluated through running sums (and, for FEWEST_NODES, a count of the nodes in
// use), and the mapping
// of objective values to scores.
// Nothing here knows of Kubernetes objects.

import (
	"math"
	"sort"
)

// MaxResources is the largest number of resources the agent considers (NUM_RESOURCES).
const MaxResources = 5

// vec is a vector over the resources; only its first m components are used.
type vec [MaxResources]float64

// mat is a matrix over the resources; only its leading m x m block is used.
type mat [MaxResources][MaxResources]float64

// spanTolerance is the spread of objective values below which the candidates are taken as
// equally good. Objective values are of order 1; floating-point noise between candidates that
// are mathematically equal is of order 1e-16, while one pod moves an objective by far more
// than 1e-12 on any cluster of realistic size.
const spanTolerance = 1e-12

// coefVar returns the coefficient of variation of a set of vectors whose mean is mu and whose
// covariance (divided by the count) is s, over the first m components:
//
//	m == 1: sqrt(s) / mu                     (0 when mu or s is not positive)
//	m >  1: sqrt(mu' s mu) / (mu' mu)        (Albert and Zhang; 0 when either is not positive)
func coefVar(m int, mu *vec, s *mat) float64 {
	if m == 1 {
		if mu[0] <= 0 || s[0][0] <= 0 {
			return 0
		}
		return math.Sqrt(s[0][0]) / mu[0]
	}
	var num, den float64
	for j := 0; j < m; j++ {
		den += mu[j] * mu[j]
		var row float64
		for l := 0; l < m; l++ {
			row += s[j][l] * mu[l]
		}
		num += mu[j] * row
	}
	if num <= 0 || den <= 0 {
		return 0
	}
	return math.Sqrt(num) / den
}

// utilization returns use/capacity per resource; a resource of capacity 0 (or less) counts as
// fully used (1).
func utilization(m int, capacity, use *vec) vec {
	var u vec
	for j := 0; j < m; j++ {
		if capacity[j] > 0 {
			u[j] = use[j] / capacity[j]
		} else {
			u[j] = 1
		}
	}
	return u
}

// inUse reports whether a node with usage use runs anything: some of the first m resources is
// in use. Every pod counts in resource 0 (cpu; a pod without a cpu request counts as 10m).
func inUse(m int, use *vec) bool {
	for j := 0; j < m; j++ {
		if use[j] > 0 {
			return true
		}
	}
	return false
}

// fits reports whether demand <= capacity - use for each of the first m resources.
func fits(m int, capacity, use, demand *vec) bool {
	for j := 0; j < m; j++ {
		if demand[j] > capacity[j]-use[j] {
			return false
		}
	}
	return true
}

// trial is one candidate node with the pod tentatively placed on it.
type trial struct {
	// before is the node's utilization without the pod; unused when extra.
	before vec
	// after is the node's utilization with the pod.
	after vec
	// extra marks a candidate that is not part of the system (a node the cluster cache does
	// not hold): placing the pod adds it to the system.
	extra bool
	// usedBefore and usedAfter say whether the node runs anything (inUse) without and with the
	// pod; usedBefore is unused when extra.
	usedBefore, usedAfter bool
}

// system holds running sums over the utilization vectors u_i of the n nodes of the system, so
// that the objective with the pod placed on one candidate costs O(m^2) instead of O(n m^2). The sums are taken about shift, the mean utilization
// before placement, which keeps them well conditioned: a placement moves the mean by at most
// about 1/n, and the variance is then a difference of two numbers of similar size only when
// the variance itself is tiny.
type system struct {
	m, prime int
	n        float64
	// shift is the mean utilization over the system's nodes (0 for an empty system).
	shift vec
	// s1 = sum_i (u_i - shift), s2 = sum_i (u_i - shift)(u_i - shift)'.
	s1 vec
	s2 mat
	// For CONSOLIDATE: y_i = u_i[prime] - shift[prime], ascending, and the prefix sums
	// pre1[k] = sum_{i<k} y_i, pre2[k] = sum_{i<k} y_i^2 (length n+1).
	sorted, pre1, pre2 []float64
	// used is the number of the system's nodes in use (FEWEST_NODES).
	used float64
	// demandCV is c(demand), the coefficient of variation of the normalized pod demand.
	demandCV float64
}

// newSystem sums the utilization vectors utils over the first m resources. withOrder builds
// the sorted prime utilizations CONSOLIDATE needs; used is the number of those nodes in use.
func newSystem(m, prime int, utils []vec, withOrder bool, used int, demandCV float64) *system {
	s := sumSystem(m, prime, utils, used, demandCV)
	if withOrder {
		ys := make([]float64, len(utils))
		for i := range utils {
			ys[i] = utils[i][prime] - s.shift[prime]
		}
		sort.Float64s(ys)
		s.order(ys, make([]float64, len(utils)+1), make([]float64, len(utils)+1))
	}
	return s
}

// newSystemSorted is newSystem for a system whose prime utilizations are kept in ascending
// order (primes, nil when the objective needs no order), which spares the sort: x - shift
// rounds monotonically in x, so the y_i in the order of primes are the sorted y_i, bit for
// bit. buf holds the slices it fills (reused from call to call).
func newSystemSorted(m, prime int, utils []vec, primes []float64, used int, demandCV float64, buf *orderBuf) *system {
	s := sumSystem(m, prime, utils, used, demandCV)
	if primes != nil {
		buf.ys, buf.pre1, buf.pre2 = resize(buf.ys, len(primes)), resize(buf.pre1, len(primes)+1), resize(buf.pre2, len(primes)+1)
		for i, x := range primes {
			buf.ys[i] = x - s.shift[prime]
		}
		s.order(buf.ys, buf.pre1, buf.pre2)
	}
	return s
}

// orderBuf holds the slices of a system's order (system.sorted, pre1, pre2) between calls.
type orderBuf struct{ ys, pre1, pre2 []float64 }

// resize returns b with length n, reallocated only when its capacity is short.
func resize(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// sumSystem returns the system of the utilization vectors utils without its order: the
// shift, the running sums s1 and s2, the count of nodes in use.
func sumSystem(m, prime int, utils []vec, used int, demandCV float64) *system {
	s := &system{m: m, prime: prime, n: float64(len(utils)), used: float64(used), demandCV: demandCV}
	if len(utils) > 0 {
		for i := range utils {
			for j := 0; j < m; j++ {
				s.shift[j] += utils[i][j]
			}
		}
		for j := 0; j < m; j++ {
			s.shift[j] /= s.n
		}
	}
	for i := range utils {
		var d vec
		for j := 0; j < m; j++ {
			d[j] = utils[i][j] - s.shift[j]
			s.s1[j] += d[j]
		}
		for j := 0; j < m; j++ {
			for l := 0; l <= j; l++ {
				s.s2[j][l] += d[j] * d[l]
			}
		}
	}
	for j := 0; j < m; j++ {
		for l := j + 1; l < m; l++ {
			s.s2[j][l] = s.s2[l][j]
		}
	}
	return s
}

// order sets the system's sorted prime utilizations about shift (sorted, ascending) and their
// prefix sums, filling pre1 and pre2 (length len(sorted)+1).
func (s *system) order(sorted, pre1, pre2 []float64) {
	s.sorted, s.pre1, s.pre2 = sorted, pre1, pre2
	pre1[0], pre2[0] = 0, 0
	for i, y := range sorted {
		pre1[i+1] = pre1[i] + y
		pre2[i+1] = pre2[i] + y*y
	}
}

// place returns, for t, the node count after placement and the trial's utilization before
// (zero when extra) and after, both taken about shift.
func (s *system) place(t *trial) (n float64, vb, va vec) {
	n = s.n
	for j := 0; j < s.m; j++ {
		va[j] = t.after[j] - s.shift[j]
	}
	if t.extra {
		n++
		return n, vb, va
	}
	for j := 0; j < s.m; j++ {
		vb[j] = t.before[j] - s.shift[j]
	}
	return n, vb, va
}

// objectiveFunc returns the value of an objective (smaller is better) for the system with the
// pod placed as in t.
type objectiveFunc func(s *system, t *trial) float64

// objectives are the policies, by POLICY_OBJECTIVE.
var objectives = map[Objective]objectiveFunc{
	ABinpack:    binpack,
	LoadBalance: loadBalance,
	Consolidate: consolidate,
	FewestNodes: fewestNodes,
}

// binpack is A_BINPACK: |c(system utilization) - c(demand)|. After placement the sums are
// s1' = s1 - vb + va and s2' = s2 - vb vb' + va va', so with n' nodes
//
//	mu = shift + s1'/n',   S = s2'/n' - (s1'/n')(s1'/n')'.
func binpack(s *system, t *trial) float64 {
	n, vb, va := s.place(t)
	if n <= 0 {
		return 0
	}
	var d1, mu vec
	for j := 0; j < s.m; j++ {
		d1[j] = (s.s1[j] - vb[j] + va[j]) / n
		mu[j] = s.shift[j] + d1[j]
	}
	var cov mat
	for j := 0; j < s.m; j++ {
		for l := 0; l <= j; l++ {
			c := (s.s2[j][l]-vb[j]*vb[l]+va[j]*va[l])/n - d1[j]*d1[l]
			cov[j][l], cov[l][j] = c, c
		}
	}
	return math.Abs(coefVar(s.m, &mu, &cov) - s.demandCV)
}

// loadBalance is LOAD_BALANCE: the standard deviation over nodes of the prime utilization x_i,
// sqrt(sum y_i^2 / n - (sum y_i / n)^2) with y_i = x_i - shift.
func loadBalance(s *system, t *trial) float64 {
	n, vb, va := s.place(t)
	if n <= 0 {
		return 0
	}
	p := s.prime
	t1 := (s.s1[p] - vb[p] + va[p]) / n
	t2 := (s.s2[p][p] - vb[p]*vb[p] + va[p]*va[p]) / n
	v := t2 - t1*t1
	if v <= 0 {
		return 0
	}
	return math.Sqrt(v)
}

// consolidate is CONSOLIDATE: with a the mean prime utilization, 0 when a <= 0 or a >= 1, else
// 1 - sqrt(mean t_i^2) with t_i = (a - x_i)/a for x_i below a and (x_i - a)/(1 - a) above.
// With y_i = x_i - shift and delta = a - shift, the nodes below a are those with y_i < delta,
// a prefix of the sorted y found by binary search, and
//
//	sum_below (a - x_i)^2 = k delta^2 - 2 delta P1 + P2   (k, P1, P2 over the prefix)
//	sum_above (x_i - a)^2 = Q2 - 2 delta Q1 + (n - k) delta^2,
//
// corrected for the candidate, whose old value leaves its side and new value joins its own.
func consolidate(s *system, t *trial) float64 {
	n, vb, va := s.place(t)
	if n <= 0 {
		return 0
	}
	p := s.prime
	delta := (s.s1[p] - vb[p] + va[p]) / n
	a := s.shift[p] + delta
	if a <= 0 || a >= 1 {
		return 0
	}
	k := sort.SearchFloat64s(s.sorted, delta) // sorted[:k] < delta <= sorted[k:]
	total := len(s.sorted)
	nb, b1, b2 := float64(k), s.pre1[k], s.pre2[k]
	na, a1, a2 := float64(total-k), s.pre1[total]-s.pre1[k], s.pre2[total]-s.pre2[k]
	if !t.extra {
		y := vb[p]
		if y < delta {
			nb, b1, b2 = nb-1, b1-y, b2-y*y
		} else {
			na, a1, a2 = na-1, a1-y, a2-y*y
		}
	}
	y := va[p]
	if y < delta {
		nb, b1, b2 = nb+1, b1+y, b2+y*y
	} else {
		na, a1, a2 = na+1, a1+y, a2+y*y
	}
	below := max(nb*delta*delta-2*delta*b1+b2, 0)
	above := max(a2-2*delta*a1+na*delta*delta, 0)
	meanT2 := (below/(a*a) + above/((1-a)*(1-a))) / n
	return 1 - math.Sqrt(meanT2)
}

// fewestNodes is FEWEST_NODES: the number of the system's nodes in use (running a pod) after
// placement. Every fitting node in use scores 10, a node the pod would be the first on 1
// (unless no node in use fits). The order among the nodes in use is left to the scheduler's
// NodeResourcesFit MostAllocated and NodeResourcesBalancedAllocation (the shipped profile):
// every finer order the agent tried on its 0..10 scale (the fullest node, CONSOLIDATE's
// bimodality, fill with balance) overrode theirs and used more nodes
// (agents/pigeon/README.md, "Packing against MostAllocated").
func fewestNodes(s *system, t *trial) float64 {
	used := s.used
	if t.usedBefore && !t.extra {
		used--
	}
	if t.usedAfter {
		used++
	}
	return used
}

// scores maps objective values to scores. A node that does not fit scores 0. Among the fitting
// nodes, with vmin and vmax their smallest and largest value and span = vmax - vmin:
// span 0 (below spanTolerance) gives each 10; otherwise round(1 + 9 (vmax - v)/span), clamped
// to 0..10, so the best node scores 10 and the worst fitting one 1.
func scores(values []float64, fit []bool) []int64 {
	out := make([]int64, len(values))
	vmin, vmax, any := math.Inf(1), math.Inf(-1), false
	for i, v := range values {
		if fit[i] {
			vmin, vmax, any = min(vmin, v), max(vmax, v), true
		}
	}
	if !any {
		return out
	}
	span := vmax - vmin
	for i, v := range values {
		switch {
		case !fit[i]:
			out[i] = 0
		case span <= spanTolerance:
			out[i] = maxScore
		default:
			s := math.Round(1 + 9*(vmax-v)/span)
			out[i] = int64(min(max(s, 0), float64(maxScore)))
		}
	}
	return out
}

// nodeState is one node's capacity and usage, in the agent's units.
type nodeState struct {
	capacity, use vec
}

// candidate is a node of the request: index is its position in the system, or -1 when the
// system does not hold it, in which case node describes it.
type candidate struct {
	index int
	node  nodeState
}

// averageCapacity returns the mean capacity over the nodes of sys (zero when sys is empty).
func averageCapacity(m int, sys []nodeState) vec {
	var c vec
	if len(sys) == 0 {
		return c
	}
	for i := range sys {
		for j := 0; j < m; j++ {
			c[j] += sys[i].capacity[j]
		}
	}
	for j := 0; j < m; j++ {
		c[j] /= float64(len(sys))
	}
	return c
}

// evaluate returns, for each candidate, the objective's value with the pod of the given demand
// placed on it, and whether the pod fits there (a value is computed either way). It costs
// O(n m^2) to sum the system once, then O(m^2) per candidate (plus O(log n) for CONSOLIDATE,
// which also sorts the system once). It is the per-pod computation; the agent's kept system
// (systemMemo) gives the same values from what it keeps between pods.
func evaluate(obj Objective, m, prime int, sys []nodeState, cands []candidate, demand *vec, demandCV float64) ([]float64, []bool) {
	utils := make([]vec, len(sys))
	used := 0
	for i := range sys {
		utils[i] = utilization(m, &sys[i].capacity, &sys[i].use)
		if inUse(m, &sys[i].use) {
			used++
		}
	}
	s := newSystem(m, prime, utils, obj == Consolidate, used, demandCV)
	values := make([]float64, len(cands))
	fit := make([]bool, len(cands))
	tryAll(objectives[obj], s, sys, utils, cands, demand, values, fit)
	return values, fit
}

// tryAll sets values[i] to the objective's value for the system s with the pod of the given
// demand placed on cands[i], and fit[i] to whether it fits there; utils are the utilizations of
// sys, the system's nodes.
func tryAll(f objectiveFunc, s *system, sys []nodeState, utils []vec, cands []candidate, demand *vec, values []float64, fit []bool) {
	m := s.m
	// One trial for all candidates: passed to f through a function value, it escapes to the
	// heap, once per request rather than once per candidate.
	t := new(trial)
	for i := range cands {
		c := &cands[i]
		node := &c.node
		*t = trial{extra: c.index < 0}
		if c.index >= 0 {
			node = &sys[c.index]
			t.before = utils[c.index]
		}
		var placed vec
		for j := 0; j < m; j++ {
			placed[j] = node.use[j] + demand[j]
		}
		t.after = utilization(m, &node.capacity, &placed)
		t.usedBefore, t.usedAfter = inUse(m, &node.use), inUse(m, &placed)
		fit[i] = fits(m, &node.capacity, &node.use, demand)
		values[i] = f(s, t)
	}
}

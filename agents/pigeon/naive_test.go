package pigeon

import (
	"math"
	"math/rand/v2"
	"testing"
)

// This file holds the naive reference: each objective evaluated from its definition, over the
// whole list of utilization vectors rebuilt for each candidate (O(n m^2) per candidate, O(n^2)
// per request), and the property test that the fast path agrees with it.

// naiveObjectives evaluate an objective from its definition on the utilization vectors utils
// and the usage vectors uses of the nodes.
var naiveObjectives = map[Objective]func(m, prime int, utils, uses []vec, demandCV float64) float64{
	ABinpack: func(m, _ int, utils, _ []vec, demandCV float64) float64 {
		mu, cov := meanCov(m, utils)
		return math.Abs(coefVar(m, &mu, &cov) - demandCV)
	},
	LoadBalance: func(_, prime int, utils, _ []vec, _ float64) float64 {
		var a float64
		for _, u := range utils {
			a += u[prime]
		}
		a /= float64(len(utils))
		var v float64
		for _, u := range utils {
			v += (u[prime] - a) * (u[prime] - a)
		}
		return math.Sqrt(v / float64(len(utils)))
	},
	Consolidate: func(_, prime int, utils, _ []vec, _ float64) float64 {
		var a float64
		for _, u := range utils {
			a += u[prime]
		}
		a /= float64(len(utils))
		if a <= 0 || a >= 1 {
			return 0
		}
		var sum float64
		for _, u := range utils {
			x := u[prime]
			var t float64
			if x < a {
				t = (a - x) / a
			} else {
				t = (x - a) / (1 - a)
			}
			sum += t * t
		}
		return 1 - math.Sqrt(sum/float64(len(utils)))
	},
	// FEWEST_NODES: the number of nodes with some usage.
	FewestNodes: func(m, _ int, _, uses []vec, _ float64) float64 {
		var n float64
		for _, u := range uses {
			for j := 0; j < m; j++ {
				if u[j] > 0 {
					n++
					break
				}
			}
		}
		return n
	},
}

// meanCov returns the mean vector and the covariance (divided by the count), in two passes.
func meanCov(m int, utils []vec) (vec, mat) {
	var mu vec
	var cov mat
	for _, u := range utils {
		for j := 0; j < m; j++ {
			mu[j] += u[j]
		}
	}
	for j := 0; j < m; j++ {
		mu[j] /= float64(len(utils))
	}
	for _, u := range utils {
		for j := 0; j < m; j++ {
			for l := 0; l < m; l++ {
				cov[j][l] += (u[j] - mu[j]) * (u[l] - mu[l])
			}
		}
	}
	for j := 0; j < m; j++ {
		for l := 0; l < m; l++ {
			cov[j][l] /= float64(len(utils))
		}
	}
	return mu, cov
}

// naiveEvaluate is evaluate done naively: for each candidate, the system's utilizations are
// rebuilt with the pod placed and the objective computed from its definition.
func naiveEvaluate(obj Objective, m, prime int, sys []nodeState, cands []candidate, demand *vec, demandCV float64) ([]float64, []bool) {
	values := make([]float64, len(cands))
	fit := make([]bool, len(cands))
	for i, c := range cands {
		node := c.node
		if c.index >= 0 {
			node = sys[c.index]
		}
		var placed vec
		for j := 0; j < m; j++ {
			placed[j] = node.use[j] + demand[j]
		}
		var utils, uses []vec
		for k := range sys {
			if k == c.index {
				utils, uses = append(utils, utilization(m, &node.capacity, &placed)), append(uses, placed)
			} else {
				utils, uses = append(utils, utilization(m, &sys[k].capacity, &sys[k].use)), append(uses, sys[k].use)
			}
		}
		if c.index < 0 {
			utils, uses = append(utils, utilization(m, &node.capacity, &placed)), append(uses, placed)
		}
		fit[i] = fits(m, &node.capacity, &node.use, demand)
		values[i] = naiveObjectives[obj](m, prime, utils, uses, demandCV)
	}
	return values, fit
}

// randomNode draws a node: capacity 0 for a resource one time in eight (a node without gpus),
// usage up to 120 % of capacity (stale or overcommitted usage happens), sometimes exactly 0.
func randomNode(r *rand.Rand, m int) nodeState {
	var n nodeState
	for j := 0; j < m; j++ {
		if r.IntN(8) > 0 {
			n.capacity[j] = float64(1 + r.IntN(64))
		}
		if r.IntN(5) > 0 {
			n.use[j] = math.Round(r.Float64() * 1.2 * n.capacity[j])
		}
	}
	return n
}

// TestFastMatchesNaive checks, on random clusters, that the running-sum evaluation gives the
// objective values and fit flags of the naive definition, within 1e-9, for every objective,
// every number of resources and prime resource, with candidates inside and outside the system.
func TestFastMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2019))
	const tolerance = 1e-9
	checked := 0
	for iter := 0; iter < 600; iter++ {
		m := 1 + r.IntN(MaxResources)
		prime := r.IntN(m)
		sys := make([]nodeState, r.IntN(40))
		for i := range sys {
			sys[i] = randomNode(r, m)
		}
		var cands []candidate
		for i := range sys {
			if r.IntN(3) > 0 {
				cands = append(cands, candidate{index: i})
			}
		}
		for k := r.IntN(3); k > 0; k-- {
			cands = append(cands, candidate{index: -1, node: randomNode(r, m)})
		}
		var demand vec
		for j := 0; j < m; j++ {
			demand[j] = float64(r.IntN(8))
		}
		demandCV := r.Float64() * 2
		for obj := range objectives {
			got, gotFit := evaluate(obj, m, prime, sys, cands, &demand, demandCV)
			want, wantFit := naiveEvaluate(obj, m, prime, sys, cands, &demand, demandCV)
			for i := range cands {
				if gotFit[i] != wantFit[i] {
					t.Fatalf("iter %d %s m=%d: candidate %d fit %v, naive %v", iter, obj, m, i, gotFit[i], wantFit[i])
				}
				if d := math.Abs(got[i] - want[i]); !(d <= tolerance) {
					t.Fatalf("iter %d %s m=%d prime=%d n=%d: candidate %d (index %d) value %.15g, naive %.15g (diff %g)",
						iter, obj, m, prime, len(sys), i, cands[i].index, got[i], want[i], d)
				}
				checked++
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d candidate values compared; the generator is broken", checked)
	}
}

// TestFastMatchesNaiveLarge repeats the comparison on a few larger systems with utilizations
// crowded near one value, where the running sums are most exposed to cancellation.
func TestFastMatchesNaiveLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 5))
	for iter := 0; iter < 4; iter++ {
		m := MaxResources
		sys := make([]nodeState, 2000)
		for i := range sys {
			for j := 0; j < m; j++ {
				sys[i].capacity[j] = 1 << 20
				sys[i].use[j] = float64((1<<20)/100 + r.IntN(50)) // utilization about 0.01
			}
		}
		cands := make([]candidate, 40)
		for i := range cands {
			cands[i] = candidate{index: r.IntN(len(sys))}
		}
		demand := vec{3, 5, 1, 2, 7}
		for obj := range objectives {
			got, _ := evaluate(obj, m, iter%m, sys, cands, &demand, 0.05)
			want, _ := naiveEvaluate(obj, m, iter%m, sys, cands, &demand, 0.05)
			for i := range cands {
				if d := math.Abs(got[i] - want[i]); !(d <= 1e-9) {
					t.Fatalf("%s: candidate %d value %.15g, naive %.15g", obj, i, got[i], want[i])
				}
			}
		}
	}
}

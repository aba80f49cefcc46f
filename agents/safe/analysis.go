package safe

// Pure maths of the safe agent's scales: a node's projected utilization and spread, and the
// scores of a risk or a utilization (the risk itself is package beta's). No Kubernetes types, no
// configuration, no logging. Every function is total: whatever float64 it is given (NaN and infinities included), it returns a
// value in its documented range, never NaN.

import "math"

// Utilization returns the predicted utilization mu and its spread sigma of one resource of a
// node, both fractions of the allocatable amount capacity:
//
//	used  = max(capacity - free, 0)
//	mu    = clamp((used + demand) / capacity, 0, 1)
//	sigma = clamp(std / capacity, 0, 1)
//
// free is the measured (or forecast-blended) free amount, std its standard deviation and demand
// the pod's request, all in the unit of capacity. ok is false when capacity is not positive
// (zero or missing allocatable): the resource cannot be judged and mu, sigma are 0.
func Utilization(free, std, capacity, demand float64) (mu, sigma float64, ok bool) {
	if !(capacity > 0) || math.IsInf(capacity, 1) {
		return 0, 0, false
	}
	return clamp01(Level(free, capacity, demand)), clamp01(std / capacity), true
}

// Blend returns the free amount the agent believes in: the measured mean when there is no
// forecast, else (1-w)*mean + w*forecast, with w in [0, 1].
func Blend(mean, forecast float64, hasForecast bool, w float64) float64 {
	if !hasForecast {
		return mean
	}
	return (1-w)*mean + w*forecast
}

// clamp01 clamps x to [0, 1]. NaN becomes 1: an utilization or spread nobody can compute is
// treated as the worst one.
func clamp01(x float64) float64 {
	switch {
	case x >= 1 || x != x:
		return 1
	case x > 0:
		return x
	}
	return 0
}

// OverloadScore is the safe-overload score of a resource of risk r, with e the acceptable risk:
//
//	f = min(r/e, 1); score = 0 if f >= 1, else floor((1 - sqrt(f)) * 10)
//
// When e is 0, f is 0 for r == 0 and 1 for r > 0 (the limit of r/e).
func OverloadScore(r, e float64) int64 {
	var f float64
	switch {
	case e > 0:
		f = math.Min(r/e, 1)
	case r > 0:
		f = 1
	}
	if !(f < 1) { // f >= 1, or NaN
		return 0
	}
	if f < 0 {
		f = 0
	}
	return int64(math.Floor((1 - math.Sqrt(f)) * 10))
}

// BalanceScore is the safe-balance score of a resource of utilization mu and spread sigma, both
// in [0, 1]:
//
//	obj = (mu + sqrt(sigma)) / 2; score = floor((1 - obj) * 10 + 0.5)
func BalanceScore(mu, sigma float64) int64 {
	obj := (clamp01(mu) + math.Sqrt(clamp01(sigma))) / 2
	return int64(math.Floor((1-obj)*10 + 0.5))
}

// fineBalance is 1 - obj of BalanceScore in millionths, with the utilization not clamped at 1:
// level is the projected utilization (Level), so that nodes projected past their capacity are
// ordered by how far past they are instead of all tying at mu = 1 (with pods estimated at their
// workloads' learned p90s many nodes of a busy cluster project past 1, and a tie there sends the
// pod wherever the request scores or node names put it: the lab's offline placements of issue 51
// left 1.39x the cpu overload volume of LeastAllocated clamped, 0.52x not). For
// SAFE_BALANCE_SCALE=relative, which ranks the candidates; the absolute scale's 0..10 steps
// cannot hold an objective past 1 and keep BalanceScore. level is in [0, maxLevel], as Level gives it.
func fineBalance(level, sigma float64) int64 {
	obj := (level + math.Sqrt(clamp01(sigma))) / 2
	return int64(math.Round((1 - obj) * 1e6))
}

// maxLevel bounds Level: past 100 times its capacity a node is no further from fitting a pod.
const maxLevel = 100

// Level is the projected utilization (used + demand) / capacity of a node (used = capacity -
// free, at least 0) before Utilization clamps it to [0, 1]: past 1 it says how far past its
// capacity the node would be. 1 when capacity is not a positive finite amount; in [0, maxLevel].
func Level(free, capacity, demand float64) float64 {
	if !(capacity > 0) || math.IsInf(capacity, 1) {
		return 1
	}
	l := (math.Max(capacity-free, 0) + demand) / capacity
	if l != l {
		return 1
	}
	return min(max(l, 0), maxLevel)
}

// RelativeScores maps fine scores (larger is better) of the nodes with has set onto 0..10: the
// largest scores 10, the smallest 0, the others floor(10 * (x - lo) / (hi - lo) + 0.5); every
// one 10 when they are all equal. Nodes without has score 0. fine is overwritten and returned.
func RelativeScores(fine []int64, has []bool) []int64 {
	lo, hi, any := int64(0), int64(0), false
	for i, x := range fine {
		if !has[i] {
			continue
		}
		if !any || x < lo {
			lo = x
		}
		if !any || x > hi {
			hi = x
		}
		any = true
	}
	for i, x := range fine {
		switch {
		case !has[i]:
			fine[i] = 0
		case hi == lo:
			fine[i] = 10
		default:
			fine[i] = int64(math.Floor(10*float64(x-lo)/float64(hi-lo) + 0.5))
		}
	}
	return fine
}

// NodeScore combines the scores of the two resources: the smaller when both have statistics,
// the one that has them when only one does, 0 when neither does.
func NodeScore(cpu int64, cpuHas bool, memory int64, memoryHas bool) int64 {
	switch {
	case cpuHas && memoryHas:
		return min(cpu, memory)
	case cpuHas:
		return cpu
	case memoryHas:
		return memory
	}
	return 0
}

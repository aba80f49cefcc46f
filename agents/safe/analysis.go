package safe

// Pure maths of the safe agent: no Kubernetes types, no configuration, no logging. Every
// function is total: whatever float64 it is given (NaN and infinities included), it returns a
// value in its documented range, never NaN.

import (
	"math"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

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
	used := math.Max(capacity-free, 0)
	return clamp01((used + demand) / capacity), clamp01(std / capacity), true
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

// fit is the outcome of fitting a Beta distribution by moments.
type fit int

const (
	// noFit: no Beta distribution has these moments.
	noFit fit = iota
	// pointMass: the variance is zero (sigma^2 vanishes next to mu^2 in float64): the
	// distribution is the point mass at mu, the limit of Beta(mu*k, (1-mu)*k) as k grows.
	pointMass
	// betaFit: alpha and beta are finite and positive.
	betaFit
)

// fitBeta fits a Beta distribution to mean mu and standard deviation sigma by the method of
// moments:
//
//	m1 = mu, m2 = sigma^2 + mu^2, v = m2 - m1^2
//	the fit exists when 0 <= m1 <= 1 and 0 <= v < m1(1-m1); then
//	k = m1(1-m1)/v - 1, alpha = m1*k, beta = (1-m1)*k.
//
// The variance is computed as m2 - m1^2, as the definition states, not as sigma^2: for a tiny
// sigma the two differ in float64, and v may be 0 (see pointMass). Parameters that float64
// cannot represent as a Beta distribution (k, alpha or beta not positive) count as no fit.
//
// Every product is rounded on its own (the float64 conversions forbid fusing a multiply and an
// add, which Go may do on arm64 and others): the fit is the same on every platform, and the same
// as testdata/gen_risk_table.py computes for the reference risks.
func fitBeta(mu, sigma float64) (alpha, beta float64, f fit) {
	m1 := mu
	m2 := float64(sigma*sigma) + float64(mu*mu)
	v := m2 - float64(m1*m1)
	if !(m1 >= 0 && m1 <= 1 && v >= 0 && v < m1*(1-m1)) {
		return 0, 0, noFit
	}
	k := m1*(1-m1)/v - 1
	if math.IsInf(k, 1) { // v is 0, or too small for the division
		return 0, 0, pointMass
	}
	alpha, beta = m1*k, (1-m1)*k
	if !(alpha > 0 && beta > 0) {
		return 0, 0, noFit
	}
	return alpha, beta, betaFit
}

// normalAbove is the shape size alpha+beta above which betaCDF uses the normal distribution of
// the same mean and variance. gonum's RegIncBeta (Cephes' incbet) stops converging near the mean
// for larger shapes: measured against a skew-corrected normal, its error is below 1e-6 up to
// alpha+beta = 2e6, 1e-5 at 3e6, 2e-3 at 1e7, and it returns values outside [0, 1] from 1e9
// (Beta(2.5e13, 2.5e13) at 0.5 gives 363). Above 1e6 the normal's own error is below 1e-3 for
// means in [0.03, 0.97] and shrinks as the shape grows.
const normalAbove = 1e6

// betaCDF returns the CDF at x of Beta(alpha, beta), alpha and beta finite and positive, in
// [0, 1], or NaN when it cannot be computed.
func betaCDF(alpha, beta, x float64) float64 {
	var c float64
	switch {
	case !(alpha > 0 && beta > 0) || math.IsInf(alpha, 0) || math.IsInf(beta, 0) || x != x:
		return math.NaN()
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	case alpha+beta > normalAbove:
		n := alpha + beta
		mean := alpha / n
		sd := math.Sqrt(mean * (beta / n) / (n + 1))
		c = distuv.Normal{Mu: mean, Sigma: sd}.CDF(x)
	default:
		c = mathext.RegIncBeta(alpha, beta, x)
	}
	if c != c {
		return c
	}
	return math.Min(math.Max(c, 0), 1)
}

// Rank returns the probability that the utilization, of mean mu and standard deviation sigma,
// stays at or below the threshold t:
//
//	1                          if mu == 0, or sigma == 0 and mu <= t
//	0                          if sigma == 0 and mu > t
//	CDF at t of the Beta fitted by moments to (mu, sigma), see fitBeta
//	0                          if no Beta fits
//	1                          if the CDF is NaN
//
// A zero variance after fitting (sigma too small to register next to mu) is the point mass at
// mu: 1 if mu <= t, else 0, as for sigma == 0.
func Rank(mu, sigma, t float64) float64 {
	switch {
	case mu == 0 || (sigma == 0 && mu <= t):
		return 1
	case sigma == 0:
		return 0
	}
	alpha, beta, f := fitBeta(mu, sigma)
	switch f {
	case noFit:
		return 0
	case pointMass:
		if mu <= t {
			return 1
		}
		return 0
	}
	c := betaCDF(alpha, beta, t)
	if c != c {
		return 1
	}
	return c
}

// Risk returns 1 - Rank(mu, sigma, t): the probability that the utilization exceeds t.
func Risk(mu, sigma, t float64) float64 {
	return 1 - Rank(mu, sigma, t)
}

// The Cantelli shortcut leaves room for rounding: the fitted Beta's mean and variance differ
// from mu and v by a few ulps (cantelliShift, cantelliInflate), and the computed CDF differs
// from the exact one by far less than cantelliMargin.
const (
	cantelliMargin  = 1e-6
	cantelliShift   = 1e-15
	cantelliInflate = 1 + 1e-9
)

// SurelyAcceptable reports whether Risk(mu, sigma, t) <= e is certain without computing the Beta
// CDF. By Cantelli's one-sided inequality, any distribution of mean mu and variance v has
//
//	P(X > t) <= v / (v + (t - mu)^2)   for t > mu,
//
// so when a Beta fits (mu, sigma) and that bound is below e (by cantelliMargin), the risk is
// acceptable whatever the CDF computes. A false answer decides nothing: compute Risk. The filter
// uses this to skip the CDF for the nodes well below the threshold, which are most nodes.
func SurelyAcceptable(mu, sigma, t, e float64) bool {
	if mu == 0 {
		return true // Rank is 1, the risk 0.
	}
	if !(mu < t) {
		return false
	}
	if _, _, f := fitBeta(mu, sigma); f == noFit {
		return false // Rank is 0, the risk 1.
	}
	v := math.Max(sigma*sigma, (float64(sigma*sigma)+float64(mu*mu))-float64(mu*mu)) * cantelliInflate
	d := t - mu - cantelliShift
	if !(d > 0) {
		return false
	}
	return v/(v+d*d) <= e-cantelliMargin
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

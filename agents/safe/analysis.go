package safe

// Pure maths of the safe agent: no Kubernetes types, no configuration, no logging. Every
// function is total: whatever float64 it is given (NaN and infinities included), it returns a
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

// betaTails returns the two tails of X ~ Beta(a, b) at x, P(X <= x) and P(X > x), a and b finite
// and positive, or NaN twice when they cannot be computed. One tail is computed directly and the
// other is 1 minus it. The risk was 1 - CDF: with the CDF near 1, that leaves nothing of a tail
// below 1e-16 (a node far below T had a risk near 1e-16 instead of 1e-48, and scored 9, not 10).
//
// By the symmetry 1 - I_x(a, b) = I_{1-x}(b, a) of the regularized incomplete beta function I,
// the lower tail is I_x(a, b) and the upper one I_{1-x}(b, a). Below (a+1)/(a+b+2), close to the
// mean, betaTails computes the lower tail, above it the upper one: the one whose continued
// fraction converges fast (incBeta), which is also the smaller one, or else (a J-shaped fit just
// above its mean) one whose complement is at least about min(a, b, 1)/5, so that the complement
// keeps all but eps/(min(a, b, 1)/5) of itself. Within bridgeWidth standard deviations of the mean
// of a large Beta, where the fraction converges slowly, the upper tail is bridged by a quadrature
// of the density (bridge). Both use the density factor x^a (1-x)^b / B(a, b) in a form that does
// not cancel terms of size a+b (logKernel).
//
// Measured against the exact risks of testdata/risk_reference.csv, the relative error is below
// 5e-11 for a >= 1e-3 (shapes up to 1e9), 2e-9 for a near 5e-8. gonum's RegIncBeta (Cephes'
// incbet) is not used: besides complementing near 1, it errs by up to 6e-5 of small tails when a
// is below 1e-3 and stops converging near the mean above a+b = 1e6
// (TestLibraryBetaFailsOnHugeShapes, TestLibraryBetaLosesTails).
func betaTails(a, b, x float64) (lower, upper float64) {
	switch {
	case !(a > 0 && b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) || x != x:
		return math.NaN(), math.NaN()
	case x <= 0:
		return 0, 1
	case x >= 1:
		return 1, 0
	}
	n := a + b
	p, q := a/n, b/n // the mean, and 1 minus it
	// d = x - p, computed on the side of the smaller of p and q, where it keeps more digits.
	d := x - p
	if p > 0.5 {
		d = q - (1 - x)
	}
	if min(a, b) >= bridgeAbove {
		if s := math.Sqrt(p * q / (n + 1)); math.Abs(d) < bridgeWidth*s {
			upper = bridge(a, b, p, q, d, s)
			return 1 - upper, upper
		}
	}
	// The continued fraction for I_x(a, b) converges fast below (a+1)/(a+b+2), that for
	// I_{1-x}(b, a) above.
	if x < (a+1)/(n+2) {
		lower = incBeta(a, b, x, 1-x, d)
		return lower, 1 - lower
	}
	upper = incBeta(b, a, 1-x, x, -d)
	return 1 - upper, upper
}

// incBeta returns I_x(a, b) for x < (a+1)/(a+b+2), given also xc = 1 - x and d = x - a/(a+b)
// (each computed where it keeps its digits), by the continued fraction (DLMF 8.17.22)
//
//	I_x(a, b) = x^a (1-x)^b / (a B(a, b)) / (1+ d1/(1+ d2/(1+ ...)))
//	d_2m = m(b-m)x / ((a+2m-1)(a+2m)), d_2m+1 = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1))
//
// evaluated by the modified Lentz method. It converges in a few dozen steps away from
// (a+1)/(a+b+2), in a few hundred for large shapes within a standard deviation of it, and in
// about 0.15 sqrt(min(a, b)) steps at it (betaTails bridges that).
//
// When a is large and x close to 1 (the upper tail of a large Beta with a small mean), every
// 1 + d_2m+1 is close to 0: computed as such it would lose a*eps/|1 + d_2m+1| of itself (the
// tail of Beta(1000, 1e9) 2 sd above its mean came out 3.5e-9 off). So 1 + d_2m+1 is
// N / ((a+2m)(a+2m+1)) with
//
//	N = a(2m+1) - a(a+b)d + m(3m+2) + m(2a+m)xc - mbx,
//
// the expansion of (a+2m)(a+2m+1) - (a+m)(a+b+m)x without the terms that cancel, and the Lentz
// recurrence carries C-1 and D-1 beside C and D, so that 1 + d_k D and C + d_k add the small
// quantities when C or D is close to 1.
func incBeta(a, b, x, xc, d float64) float64 {
	k := logKernel(a, b, d)
	if k < -750 { // the result underflows
		return 0
	}
	// K = 1 + d1/(1 + d2/(1 + ...)) by modified Lentz: K is the product of the C_j D_j, with
	// D_j = 1/(1 + d_j D_j-1), C_j = 1 + d_j/C_j-1, D_0 = 0, C_0 = 1. C and D are kept both as
	// themselves (c, dd) and as their differences to 1 (c1, e1), computed from the previous ones
	// without cancelling; the difference is the master copy near 1, the value elsewhere.
	const tiny, eps = 1e-300, 1e-15
	kf, c, c1, dd, e1 := 1.0, 1.0, 0.0, 0.0, -1.0
	n := a + b
steps:
	for m := 0.0; m <= maxSteps; m++ {
		// The terms d_2m (from m = 1) and d_2m+1, each dk with s = 1 + dk.
		ir := 1 / ((a + 2*m) * (a + 2*m + 1))
		even := m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		odd := -(a + m) * (n + m) * x * ir
		oddS := (a*(2*m+1) - a*n*d + m*(3*m+2) + m*(2*a+m)*xc - m*b*x) * ir
		for j := 0; j < 2; j++ {
			dk, s := odd, oddS
			if j == 0 {
				if m == 0 {
					continue
				}
				dk, s = even, 1+even
			}
			den := 1 + dk*dd // 1 + dk*D
			if math.Abs(e1) < 0.5 {
				den = s + dk*e1
			}
			num := c + dk // C + dk
			if math.Abs(c1) < 0.5 {
				num = s + c1
			}
			if math.Abs(den) < tiny {
				den = tiny
			}
			if math.Abs(num) < tiny {
				num = tiny
			}
			id, ic := 1/den, 1/c
			e1, c1 = -dk*dd*id, dk*ic
			dd, c = id, num*ic
			if math.Abs(e1) < 0.5 {
				dd = 1 + e1
			} else {
				e1 = dd - 1
			}
			if math.Abs(c1) < 0.5 {
				c = 1 + c1
			} else {
				c1 = c - 1
			}
			kf *= c * dd
		}
		// Converged when the last C*D is 1 (computed from e1, c1 when both are small).
		cd1 := c*dd - 1
		if math.Abs(e1) < 0.5 && math.Abs(c1) < 0.5 {
			cd1 = e1 + c1 + e1*c1
		}
		if m > 0 && math.Abs(cd1) < eps {
			break steps
		}
	}
	return math.Min(math.Exp(k)/a/kf, 1)
}

// maxSteps bounds incBeta's loop. It is not reached where betaTails calls it: the bridge keeps
// the fraction away from the mean of large shapes; on a million random fits (shapes from 1e-3 to
// 1e16) no call took more than 99 steps.
const maxSteps = 5000

// bridgeAbove, bridgeWidth and bridgeTail: for shapes with min(a, b) >= bridgeAbove, betaTails
// computes the upper tail within bridgeWidth standard deviations of the mean by bridge, from the
// tail bridgeTail standard deviations above the mean.
const (
	bridgeAbove = 1000
	bridgeWidth = 2
	bridgeTail  = 3
)

// bridge returns P(X > x) for X ~ Beta(a, b) with x = p + d within bridgeWidth standard deviations
// s of the mean p (q = 1 - p), as
//
//	P(X > x2) + integral from x to x2 of the density,   x2 = p + bridgeTail*s,
//
// the first by incBeta, which converges in a few dozen steps at x2, the second by Gauss-Legendre
// quadrature over at most bridgeWidth+bridgeTail standard deviations, where the density of a Beta
// with min(a, b) >= bridgeAbove is smooth and close to a normal one: with 20 points the result
// agrees with the continued fraction run to convergence to 1e-12
// (TestBridgeAgreesWithContinuedFraction).
func bridge(a, b, p, q, d, s float64) float64 {
	w := bridgeTail * s
	tail := incBeta(b, a, q-w, p+w, -w)
	lo, half := (d+w)/2, (w-d)/2 // d + (1 +- node) * half spans [d, w]
	var sum float64
	for _, g := range gaussLegendre20 {
		for _, t := range [2]float64{lo - g[0]*half, lo + g[0]*half} {
			x := p + t
			sum += g[1] * math.Exp(logKernel(a, b, t)) / (x * (1 - x))
		}
	}
	return math.Min(tail+sum*half, 1)
}

// gaussLegendre20 holds the positive nodes of the 20-point Gauss-Legendre rule on [-1, 1] and
// their weights (the negative nodes mirror them).
var gaussLegendre20 = [10][2]float64{
	{0.99312859918509492479, 0.017614007139152118312},
	{0.96397192727791379127, 0.040601429800386941331},
	{0.91223442825132590587, 0.06267204833410906357},
	{0.83911697182221882339, 0.083276741576704748725},
	{0.74633190646015079261, 0.10193011981724043504},
	{0.63605368072651502545, 0.11819453196151841731},
	{0.51086700195082709800, 0.13168863844917662690},
	{0.37370608871541956067, 0.14209610931838205133},
	{0.22778585114164507808, 0.14917298647260374679},
	{0.076526521133497333755, 0.15275338713072585070},
}

// logKernel returns ln(x^a (1-x)^b / B(a, b)) for x = p + d, p = a/(a+b) the mean. Computed
// naively, a ln x + b ln(1-x) - ln B(a, b) cancels terms of size (a+b) ln(a+b) (2e10 for shapes
// of 1e9) and loses that many ulps; written with Stirling's series ln Gamma(z) = (z-1/2) ln z - z
// + ln(2 pi)/2 + stirling(z) it is
//
//	-a phi(d/p) - b phi(-d/q) + ln(ab / (2 pi (a+b)))/2 - stirling(a) - stirling(b) + stirling(a+b)
//
// with q = 1 - p and phi(t) = t - ln(1+t) >= 0: no term larger than the result's own size, except
// the logarithms of the shapes.
func logKernel(a, b, d float64) float64 {
	n := a + b
	p, q := a/n, b/n
	return -a*phi(d/p) - b*phi(-d/q) + 0.5*math.Log(p*q*n/(2*math.Pi)) - stirling(a) - stirling(b) + stirling(n)
}

// phi returns t - ln(1+t) for t >= -1. For small t, where the difference cancels, with
// u = t/(2+t) and ln(1+t) = 2 atanh(u) = 2(u + u^3/3 + u^5/5 + ...):
//
//	phi(t) = t u - 2u^3 (1/3 + u^2/5 + u^4/7 + ...)
//
// (t - 2u = t u), whose terms fall by u^2 < 0.003 each for |t| <= 0.1: 7 leave 1e-18 of it.
func phi(t float64) float64 {
	if math.Abs(t) > 0.1 {
		return t - math.Log1p(t)
	}
	u := t / (2 + t)
	u2 := u * u
	sum := 1.0/3 + u2*(1.0/5+u2*(1.0/7+u2*(1.0/9+u2*(1.0/11+u2*(1.0/13+u2/15)))))
	return t*u - 2*u*u2*sum
}

// stirling returns ln Gamma(z) - ((z-1/2) ln z - z + ln(2 pi)/2) for z > 0: by its asymptotic
// series from z = 10 (the first omitted term is below 1e-15 there), by math.Lgamma below.
func stirling(z float64) float64 {
	if z < 10 {
		lg, _ := math.Lgamma(z)
		return lg - ((z-0.5)*math.Log(z) - z + 0.5*math.Log(2*math.Pi))
	}
	r := 1 / (z * z)
	return (1.0/12 - r*(1.0/360-r*(1.0/1260-r*(1.0/1680-r*(1.0/1188-r*691.0/360360))))) / z
}

// decide applies the rules of Rank that need no CDF. When decided, rank is Rank(mu, sigma, t);
// otherwise Beta(alpha, beta) is the fit whose CDF at t is the rank.
func decide(mu, sigma, t float64) (rank, alpha, beta float64, decided bool) {
	switch {
	case mu == 0 || (sigma == 0 && mu <= t):
		return 1, 0, 0, true
	case sigma == 0:
		return 0, 0, 0, true
	}
	alpha, beta, f := fitBeta(mu, sigma)
	switch f {
	case noFit:
		return 0, 0, 0, true
	case pointMass:
		if mu <= t {
			return 1, 0, 0, true
		}
		return 0, 0, 0, true
	}
	return 0, alpha, beta, false
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
	rank, alpha, beta, decided := decide(mu, sigma, t)
	if decided {
		return rank
	}
	c, _ := betaTails(alpha, beta, t)
	if c != c {
		return 1
	}
	return c
}

// Risk returns the probability that the utilization exceeds t: 1 - Rank(mu, sigma, t) in exact
// arithmetic. Where a Beta fits, it is the fit's upper tail computed directly (betaTails), so a
// small risk keeps its digits instead of being lost in 1 - Rank.
//
// The tails it computes are remembered (see riskCache): the same arguments again, for the next
// pod of the same request on a node whose statistics have not changed, cost a lookup.
func Risk(mu, sigma, t float64) float64 {
	rank, alpha, beta, decided := decide(mu, sigma, t)
	if decided {
		return 1 - rank
	}
	if r, ok := riskCache.get(mu, sigma, t); ok {
		return r
	}
	r := tailRisk(alpha, beta, t)
	riskCache.put(mu, sigma, t, r)
	return r
}

// tailRisk is Risk for an undecided fit Beta(alpha, beta), computed.
func tailRisk(alpha, beta, t float64) float64 {
	_, q := betaTails(alpha, beta, t)
	if q != q {
		return 0 // as Rank: a NaN CDF is rank 1
	}
	return q
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

package beta

// The tails of a Beta distribution and its fit by moments: fitBeta, betaTails (incBeta, bridge,
// logKernel).

import "math"

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

package beta

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// near reports whether got is within tol of want.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// sqrt12 is the standard deviation of the uniform distribution Beta(1, 1): sqrt(1/12).
var sqrt12 = math.Sqrt(1.0 / 12)

func TestFitBetaClosedForm(t *testing.T) {
	// Beta(a, b) has mean a/(a+b) and variance ab/((a+b)^2 (a+b+1)); the fit must invert that.
	tests := []struct {
		name        string
		mu, sigma   float64
		alpha, beta float64
	}{
		// mean 2/5 = 0.4; variance 6/(25*6) = 0.04, sigma 0.2; k = 0.4*0.6/0.04 - 1 = 5.
		{"Beta(2,3)", 0.4, 0.2, 2, 3},
		// mean 1/2; variance 1/(4*3) = 1/12; k = 0.25*12 - 1 = 2.
		{"Beta(1,1)", 0.5, sqrt12, 1, 1},
		// mean 1/2; variance 4/(16*5) = 0.05; k = 0.25/0.05 - 1 = 4.
		{"Beta(2,2)", 0.5, math.Sqrt(0.05), 2, 2},
		// mean 1/4; variance 3/(16*5) = 3/80; k = 0.1875*80/3 - 1 = 4.
		{"Beta(1,3)", 0.25, math.Sqrt(3.0 / 80), 1, 3},
		// mean 3/4; variance 3/80; k = 4.
		{"Beta(3,1)", 0.75, math.Sqrt(3.0 / 80), 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b, f := fitBeta(tc.mu, tc.sigma)
			if f != betaFit || !near(a, tc.alpha, 1e-12) || !near(b, tc.beta, 1e-12) {
				t.Errorf("fitBeta(%v, %v) = %v, %v, %v; want %v, %v, betaFit", tc.mu, tc.sigma, a, b, f, tc.alpha, tc.beta)
			}
		})
	}
}

func TestRankClosedForm(t *testing.T) {
	// Rank is the Beta CDF at T; these Betas have CDFs in closed form.
	tests := []struct {
		name         string
		mu, sigma, t float64
		want         float64
	}{
		// Beta(2,3): I_x(2,3) = sum_{j=2..4} C(4,j) x^j (1-x)^(4-j);
		// at 0.5: (6 + 4 + 1)/16 = 0.6875.
		{"Beta(2,3) at 0.5", 0.4, 0.2, 0.5, 0.6875},
		// at 0.2: 6*0.04*0.64 + 4*0.008*0.8 + 0.0016 = 0.1536 + 0.0256 + 0.0016 = 0.1808.
		{"Beta(2,3) at 0.2", 0.4, 0.2, 0.2, 0.1808},
		// Beta(1,1) is uniform: CDF(x) = x.
		{"Beta(1,1) at 0.9", 0.5, sqrt12, 0.9, 0.9},
		{"Beta(1,1) at 0.3", 0.5, sqrt12, 0.3, 0.3},
		// Beta(2,2): CDF(x) = 3x^2 - 2x^3; at 0.9: 2.43 - 1.458 = 0.972.
		{"Beta(2,2) at 0.9", 0.5, math.Sqrt(0.05), 0.9, 0.972},
		// Beta(1,3): CDF(x) = 1 - (1-x)^3; at 0.5: 1 - 0.125 = 0.875.
		{"Beta(1,3) at 0.5", 0.25, math.Sqrt(3.0 / 80), 0.5, 0.875},
		// Beta(3,1): CDF(x) = x^3; at 0.9: 0.729.
		{"Beta(3,1) at 0.9", 0.75, math.Sqrt(3.0 / 80), 0.9, 0.729},
		// CDF(1) = 1 and CDF(0) = 0 for every Beta.
		{"T = 1", 0.4, 0.2, 1, 1},
		{"T = 0", 0.4, 0.2, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rank(tc.mu, tc.sigma, tc.t); !near(got, tc.want, 1e-12) {
				t.Errorf("Rank(%v, %v, %v) = %v, want %v", tc.mu, tc.sigma, tc.t, got, tc.want)
			}
			if got := Risk(tc.mu, tc.sigma, tc.t); !near(got, 1-tc.want, 1e-12) {
				t.Errorf("Risk(%v, %v, %v) = %v, want %v", tc.mu, tc.sigma, tc.t, got, 1-tc.want)
			}
		})
	}
}

func TestRankEdges(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name         string
		mu, sigma, t float64
		want         float64
	}{
		// mu == 0: rank 1 whatever sigma.
		{"mu 0, sigma 0.3", 0, 0.3, 0.9, 1},
		{"mu 0, sigma 0, T 0", 0, 0, 0, 1},
		// sigma == 0: a step at T, mu == T included.
		{"sigma 0, mu below T", 0.5, 0, 0.9, 1},
		{"sigma 0, mu at T", 0.9, 0, 0.9, 1},
		{"sigma 0, mu above T", 0.91, 0, 0.9, 0},
		{"sigma 0, mu 1, T 1", 1, 0, 1, 1},
		{"sigma 0, mu 1, T 0.9", 1, 0, 0.9, 0},
		// Infeasible moments: no fit, rank 0.
		// v = 0.25 is not < m1(1-m1) = 0.25.
		{"v == m1(1-m1)", 0.5, 0.5, 0.9, 0},
		// v = 0.31^2 = 0.0961 > 0.1*0.9 = 0.09.
		{"v > m1(1-m1)", 0.1, 0.31, 0.9, 0},
		// m1(1-m1) = 0 at mu = 1: nothing is < 0.
		{"mu 1", 1, 0.1, 0.9, 0},
		// A variance too small for float64: 1e-20 + 0.25 == 0.25, so v = 0: the point mass at
		// mu, 1 below T and 0 above.
		{"v rounds to 0 below T", 0.5, 1e-10, 0.9, 1},
		{"v rounds to 0 above T", 0.95, 1e-10, 0.9, 0},
		// Huge shapes (k = 0.25/1e-10 - 1 ~ 2.5e9): symmetric, so 0.5 at the mean; gonum's
		// RegIncBeta answers 1.56 there.
		{"huge shape at the mean", 0.5, 1e-5, 0.5, 0.5},
		// ... and ~1 at 5 standard deviations above the mean, ~0 at 5 below.
		{"huge shape 5 sd above", 0.5, 1e-5, 0.50005, 1},
		{"huge shape 5 sd below", 0.5, 1e-5, 0.49995, 0},
		// Inputs no caller should give still answer in [0, 1].
		{"mu NaN", nan, 0.1, 0.9, 0},
		{"sigma NaN", 0.5, nan, 0.9, 0},
		{"mu +Inf", inf, 0.1, 0.9, 0},
		{"mu -0.5", -0.5, 0.1, 0.9, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rank(tc.mu, tc.sigma, tc.t); !near(got, tc.want, 1e-6) {
				t.Errorf("Rank(%v, %v, %v) = %v, want %v", tc.mu, tc.sigma, tc.t, got, tc.want)
			}
		})
	}
}

// TestLibraryBetaFailsOnHugeShapes documents why betaTails does not use gonum's RegIncBeta
// (Cephes' incbet). If gonum fixes huge shapes, the second check fails: the reasons left are the
// tails, which the next test pins.
func TestLibraryBetaFailsOnHugeShapes(t *testing.T) {
	// By symmetry I_{1/2}(a, a) = 1/2 for every a.
	if got := mathext.RegIncBeta(1e5, 1e5, 0.5); !near(got, 0.5, 1e-9) {
		t.Errorf("RegIncBeta(1e5, 1e5, 0.5) = %v, want 0.5 (the library is trusted there)", got)
	}
	if got := mathext.RegIncBeta(5e8, 5e8, 0.5); near(got, 0.5, 0.01) {
		t.Errorf("RegIncBeta(5e8, 5e8, 0.5) = %v: the library is now right for huge shapes", got)
	}
	if lo, up := betaTails(5e8, 5e8, 0.5); !near(lo, 0.5, 1e-12) || !near(up, 0.5, 1e-12) {
		t.Errorf("betaTails(5e8, 5e8, 0.5) = %v, %v, want 0.5, 0.5", lo, up)
	}
}

// TestLibraryBetaLosesTails: gonum's RegIncBeta loses small upper tails, whether complemented
// (the risk before issue 16) or called by symmetry; betaTails keeps them. The exact tails are
// those of testdata/risk_reference.csv.
func TestLibraryBetaLosesTails(t *testing.T) {
	// The case: mu 0.56, sigma 0.03 fit Beta(152.76, 120.02), whose tail above 0.9 is
	// 6.2e-48; 1 - CDF is 1.1e-16, so safe-overload scored 9 instead of 10.
	a, b, exact := 152.75555555555354, 120.0222222222206, 6.209656607102201808e-48
	if lib := 1 - mathext.RegIncBeta(a, b, 0.9); near(lib, exact, 1e-6*exact) {
		t.Errorf("1 - RegIncBeta(%v, %v, 0.9) = %v is now within 1e-6 of %v", a, b, lib, exact)
	}
	if _, got := betaTails(a, b, 0.9); !near(got, exact, 1e-12*exact) {
		t.Errorf("betaTails(%v, %v, 0.9) upper tail = %v, want %v", a, b, got, exact)
	}
	// A J-shaped fit (mu 1e-6, sigma 9.95e-5): RegIncBeta by symmetry, I_{1-x}(b, a), errs by
	// 6e-5 of the tail.
	a, b, exact = 0.00010000744930683567, 100.00734929938636, 4.7154863782326036337e-4
	x := 5.075e-05
	if lib := mathext.RegIncBeta(b, a, 1-x); near(lib, exact, 1e-6*exact) {
		t.Errorf("RegIncBeta(%v, %v, 1-%v) = %v is now within 1e-6 of %v", b, a, x, lib, exact)
	}
	if _, got := betaTails(a, b, x); !near(got, exact, 1e-10*exact) {
		t.Errorf("betaTails(%v, %v, %v) upper tail = %v, want %v", a, b, x, got, exact)
	}
}

// TestBridgeAgreesWithContinuedFraction: within bridgeWidth standard deviations of the mean of a
// large Beta, betaTails integrates the density instead of running the continued fraction for
// hundreds of steps. Where the fraction still converges within maxSteps, both agree.
func TestBridgeAgreesWithContinuedFraction(t *testing.T) {
	for _, ab := range [][2]float64{{1000, 1000}, {1000, 3e4}, {3e4, 1000}, {1e5, 2e5}, {1e6, 1e6}, {3e6, 3000}, {1e7, 3e7}} {
		a, b := ab[0], ab[1]
		n := a + b
		p, q := a/n, b/n
		s := math.Sqrt(p * q / (n + 1))
		for z := -bridgeWidth + 0.05; z < bridgeWidth; z += 0.1 {
			x := p + z*s
			d := x - p // as betaTails computes it
			if p > 0.5 {
				d = q - (1 - x)
			}
			bridged := bridge(a, b, p, q, d, s)
			var direct float64
			if x < (a+1)/(n+2) {
				direct = 1 - incBeta(a, b, x, 1-x, d)
			} else {
				direct = incBeta(b, a, 1-x, x, -d)
			}
			if !near(bridged, direct, 1e-12*direct) {
				t.Errorf("Beta(%g, %g) at mean%+.2f sd: bridge %v, continued fraction %v", a, b, z, bridged, direct)
			}
		}
	}
}

// TestTailsComplement: the two tails add up to 1 (each computed directly where it is the smaller).
func TestTailsComplement(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 100000 {
		a, b := math.Pow(10, -4+13*r.Float64()), math.Pow(10, -4+13*r.Float64())
		x := randomUnit(r)
		lo, up := betaTails(a, b, x)
		if !(lo >= 0 && up >= 0 && near(lo+up, 1, 1e-15)) {
			t.Fatalf("betaTails(%v, %v, %v) = %v, %v", a, b, x, lo, up)
		}
	}
}

func TestBetaTailsInvalid(t *testing.T) {
	for _, p := range [][3]float64{{0, 1, 0.5}, {1, 0, 0.5}, {-1, 1, 0.5}, {math.Inf(1), 1, 0.5}, {math.NaN(), 1, 0.5}, {1, 1, math.NaN()}} {
		if lo, up := betaTails(p[0], p[1], p[2]); !math.IsNaN(lo) || !math.IsNaN(up) {
			t.Errorf("betaTails(%v) = %v, %v, want NaN, NaN", p, lo, up)
		}
	}
}

func TestSurelyAcceptable(t *testing.T) {
	tests := []struct {
		name            string
		mu, sigma, t, e float64
		want            bool
	}{
		// Bound 0.01/(0.01 + 0.4^2) = 0.0588 <= 0.3.
		{"far below T", 0.5, 0.1, 0.9, 0.3, true},
		// Bound 0.04/(0.04 + 0.01) = 0.8 > 0.3: undecided.
		{"close to T", 0.8, 0.2, 0.9, 0.3, false},
		{"at T", 0.9, 0.01, 0.9, 0.3, false},
		{"above T", 0.95, 0.01, 0.9, 0.3, false},
		// v = 0.01 > 0.01*0.99: no Beta fits, the risk is 1, though the bound
		// 0.01/(0.01 + 0.89^2) = 0.0125 would pass.
		{"no fit", 0.01, 0.1, 0.9, 0.3, false},
		{"mu 0", 0, 0.5, 0.9, 0, true},
		// E = 0: only certain passes (bound 0) could clear 0 - margin, and none does.
		{"E 0", 0.5, 0, 0.9, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SurelyAcceptable(tc.mu, tc.sigma, tc.t, tc.e); got != tc.want {
				t.Errorf("SurelyAcceptable(%v, %v, %v, %v) = %v, want %v", tc.mu, tc.sigma, tc.t, tc.e, got, tc.want)
			}
		})
	}
}

// TestSurelyAcceptableIsSound: whenever the shortcut passes a resource, the exact risk passes it
// too, so the shortcut never changes a verdict.
func TestSurelyAcceptableIsSound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	decided := 0
	for range 200000 {
		mu, sigma := randomUnit(r), randomUnit(r)*0.5
		tt, e := float64(r.IntN(101))/100, float64(r.IntN(101))/100
		if !SurelyAcceptable(mu, sigma, tt, e) {
			continue
		}
		decided++
		if risk := Risk(mu, sigma, tt); !(risk <= e) {
			t.Fatalf("SurelyAcceptable(%v, %v, %v, %v) but Risk = %v", mu, sigma, tt, e, risk)
		}
	}
	if decided < 10000 {
		t.Errorf("the shortcut decided only %d of 200000 cases", decided)
	}
}

// randomUnit returns a number in [0, 1], with extra weight on the edges and on tiny values.
func randomUnit(r *rand.Rand) float64 {
	switch r.IntN(20) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return math.Pow(10, -1-15*r.Float64())
	}
	return r.Float64()
}

// TestRiskRangeProperty: over random inputs, extremes included, risk is in [0, 1], never NaN.
func TestRiskRangeProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		mu, sigma, tt := randomUnit(r), randomUnit(r), randomUnit(r)
		if risk := Risk(mu, sigma, tt); !(risk >= 0 && risk <= 1) {
			t.Fatalf("Risk(%v, %v, %v) = %v", mu, sigma, tt, risk)
		}
	}
}

// TestRiskMonotoneInThreshold: for fixed mu and sigma, a higher threshold never raises the risk
// (the CDF never decreases).
func TestRiskMonotoneInThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		mu, sigma := randomUnit(r), randomUnit(r)*0.5
		t1, t2 := randomUnit(r), randomUnit(r)
		if t1 > t2 {
			t1, t2 = t2, t1
		}
		if r1, r2 := Risk(mu, sigma, t1), Risk(mu, sigma, t2); r2 > r1 {
			t.Fatalf("mu %v sigma %v: Risk at T=%v is %v, at T=%v is %v", mu, sigma, t1, r1, t2, r2)
		}
	}
}

// TestRiskMonotoneInMuWithoutSpread: with sigma 0, risk never decreases as mu grows (it steps
// from 0 to 1 at T).
func TestRiskMonotoneInMuWithoutSpread(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		m1, m2, tt := randomUnit(r), randomUnit(r), randomUnit(r)
		if m1 > m2 {
			m1, m2 = m2, m1
		}
		if r1, r2 := Risk(m1, 0, tt), Risk(m2, 0, tt); r2 < r1 {
			t.Fatalf("T %v: Risk(%v, 0) = %v > Risk(%v, 0) = %v", tt, m1, r1, m2, r2)
		}
	}
}

// TestRiskNotMonotoneInMu pins where the moment-fitted Beta makes risk decrease as mu grows with
// sigma fixed, so that "risk never decreases as mu grows" holds only for sigma 0 (above). The
// definition, not the code, does this: see README.md, "Known behaviour".
func TestRiskNotMonotoneInMu(t *testing.T) {
	// sigma^2 = 1/12. At mu 0.05, m1(1-m1) = 0.0475 < 1/12: no fit, risk 1. At mu 0.5 the
	// fit is Beta(1,1), uniform: risk at T 0.9 = 1 - 0.9 = 0.1. With the defaults (T 0.9,
	// E 0.3) the filter rejects the idle node and accepts the busier one.
	if lo, hi := Risk(0.05, sqrt12, 0.9), Risk(0.5, sqrt12, 0.9); lo != 1 || !near(hi, 0.1, 1e-12) {
		t.Errorf("Risk(0.05, sqrt(1/12), 0.9) = %v, want 1; Risk(0.5, ...) = %v, want 0.1", lo, hi)
	}
	// Inside the feasible region: sigma 0.1, T 0.5. At mu 0.05 the fit is Beta(0.1875, 3.5625)
	// (k = 0.0475/0.01 - 1 = 3.75), J-shaped with a long right tail; at mu 0.1 it is
	// Beta(0.8, 7.2) (k = 0.09/0.01 - 1 = 8). The first puts more mass above 0.5.
	lo, hi := Risk(0.05, 0.1, 0.5), Risk(0.1, 0.1, 0.5)
	if !(lo > hi) {
		t.Errorf("Risk(0.05, 0.1, 0.5) = %v, Risk(0.1, 0.1, 0.5) = %v: expected the first larger", lo, hi)
	}
	// Cross-check the first with the library directly: 1 - I_0.5(0.1875, 3.5625).
	if want := 1 - mathext.RegIncBeta(0.1875, 3.5625, 0.5); !near(lo, want, 1e-12) {
		t.Errorf("Risk(0.05, 0.1, 0.5) = %v, want %v", lo, want)
	}
}

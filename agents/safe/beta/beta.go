// Package beta is the probability behind the safe agent: a resource's utilization, of mean mu
// and standard deviation sigma (fractions of its capacity), is taken to follow the Beta
// distribution fitted to those moments, and its risk is the probability that it exceeds a
// threshold T. Rank and Risk give the two sides, SurelyAcceptable decides "risk <= e" without a
// CDF when Cantelli's inequality can, and Memo remembers computed risks for an agent.
//
// Only the mathematics of the distribution is here: no Kubernetes types, no configuration, no
// logging, and no state but the Memo a caller owns. Every function is total: whatever float64 it
// is given (NaN and infinities included), it returns a value in its documented range, never NaN.
//
// What stays in package safe, and why: how a node's measured free amount, its spread and a
// pod's demand become mu and sigma (Utilization, Level, Blend), and how a risk or a utilization
// becomes a 0..10 score (OverloadScore, BalanceScore, RelativeScores, NodeScore). Those are the
// agent's policy, stated in its configuration and README (a threshold, an acceptable risk, a
// scale), and change with it; this package answers a question of probability that does not.
// The exact references (testdata/risk_reference.csv, computed with mpmath by
// testdata/gen_risk_table.py) hold this package's answers, and through them the agent's.
package beta

import "math"

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
// small risk keeps its digits instead of being lost in 1 - Rank. Memo.Risk is the same answer,
// remembered.
func Risk(mu, sigma, t float64) float64 {
	rank, alpha, beta, decided := decide(mu, sigma, t)
	if decided {
		return 1 - rank
	}
	return tailRisk(alpha, beta, t)
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

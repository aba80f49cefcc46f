#!/usr/bin/python3
"""Writes risk_reference.csv: the exact risk of the safe agent on a grid of (mu, sigma, T).

The risk is P(X > T) for the Beta distribution the agent fits by moments to mean mu and standard
deviation sigma (fitBeta in tails.go), with the agent's edge rules (Rank in beta.go).
alpha and beta are computed in float64 exactly as fitBeta computes them (Python floats are IEEE
doubles and each operation rounds once, as in Go without fused multiply-add); the tail is then
computed exactly, with mpmath, from those float64 values and the float64 value of T.

Run from the repository root (Debian: apt-get install python3-mpmath):

    /usr/bin/python3 agents/safe/beta/testdata/gen_risk_table.py > agents/safe/beta/testdata/risk_reference.csv

The tests read the table; they never run Python.
"""

import math
import sys

from mpmath import mp, mpf, log, loggamma, exp

WORK_DPS = 80       # digits of the working precision
OUT_DIGITS = 20     # significant digits written
SMALLEST = mpf("1e-300")  # exact risks below this are written as 0
MAX_TERMS = 10**8


def fit_beta(mu, sigma):
    """fitBeta of tails.go, operation by operation, in float64."""
    m1 = mu
    m2 = sigma * sigma + mu * mu
    v = m2 - m1 * m1
    if not (m1 >= 0 and m1 <= 1 and v >= 0 and v < m1 * (1 - m1)):
        return 0.0, 0.0, "nofit"
    if v == 0:
        return 0.0, 0.0, "point"
    k = m1 * (1 - m1) / v - 1
    if math.isinf(k):
        return 0.0, 0.0, "point"
    alpha, beta = m1 * k, (1 - m1) * k
    if not (alpha > 0 and beta > 0):
        return 0.0, 0.0, "nofit"
    return alpha, beta, "beta"


def series_terms(p, q, y, limit):
    """How many terms series(p, q, y) sums, counted in float64 (up to limit), to pick the cheaper
    side: until the terms have fallen WORK_DPS digits below the largest one and keep falling."""
    if y <= 0:
        return 0
    drop = math.log(10) * (WORK_DPS + 10)
    logt = top = 0.0
    n = 0
    while n < limit:
        r = (p + q + n) * y / (p + 1 + n)
        logt += math.log(r)
        top = max(top, logt)
        n += 1
        if r < 1 and logt < top - drop:
            return n
    return limit


def series(p, q, y):
    """I_y(p, q), the regularized incomplete beta, for 0 < y < 1, as

        y^p (1-y)^q / (p B(p, q)) * sum_{n>=0} (p+q)_n / (p+1)_n y^n,

    a series of positive terms (2F1(p+q, 1; p+1; y)): no cancellation, whatever p, q and y.
    mpmath's hypsum sums it directly, without the transformations hyp2f1 may apply."""
    p, q, y = mpf(p), mpf(q), mpf(y)
    lpre = p * log(y) + q * log(1 - y) - log(p) - (loggamma(p) + loggamma(q) - loggamma(p + q))
    coeffs = [mp._convert_param(c) for c in (p + q, 1, p + 1)]
    s = mp.hypsum(2, 1, tuple(t for _, t in coeffs), [c for c, _ in coeffs], y, maxterms=MAX_TERMS)
    return exp(lpre) * s


def upper_tail(alpha, beta, t):
    """P(X > t) for X ~ Beta(alpha, beta), exactly (to the working precision)."""
    if t <= 0:
        return mpf(1)
    if t >= 1:
        return mpf(0)
    x = mpf(t)
    # Q = I_{1-x}(beta, alpha) directly, or 1 - I_x(alpha, beta): the cheaper series. The
    # second cancels when Q is small: the precision then grows until Q has its digits.
    limit = 1000
    while True:
        direct, complement = series_terms(beta, alpha, 1 - t, limit), series_terms(alpha, beta, t, limit)
        if min(direct, complement) < limit or limit >= MAX_TERMS:
            break
        limit *= 10
    if direct <= complement:
        with mp.workdps(WORK_DPS):
            return series(beta, alpha, 1 - x)
    dps = WORK_DPS
    while True:
        with mp.workdps(dps):
            q = 1 - series(alpha, beta, x)
            if q > mpf(10) ** (-(dps - 40)):
                return q
        if dps > 400:  # Q < 1e-600 (tried with 640 digits): written as 0 anyway
            return mpf(0)
        dps *= 2


def risk(mu, sigma, t):
    """Risk of beta.go, with the exact tail: (risk, alpha, beta, kind)."""
    if mu == 0:
        return mpf(0), 0.0, 0.0, "mu0"
    if sigma == 0:
        return (mpf(0) if mu <= t else mpf(1)), 0.0, 0.0, "sigma0"
    alpha, beta, kind = fit_beta(mu, sigma)
    if kind == "nofit":
        return mpf(1), alpha, beta, kind
    if kind == "point":
        return (mpf(0) if mu <= t else mpf(1)), alpha, beta, kind
    return upper_tail(alpha, beta, t), alpha, beta, kind


def check(alpha, beta, t, q):
    """Cross-checks a tail with mpmath's own betainc (hyp2f1 with transformations, a different
    method) where that is fast: small shapes. Returns whether it checked."""
    if not (0 < t < 1) or alpha + beta > 2000:
        return False
    try:
        with mp.workdps(WORK_DPS):
            other = mp.betainc(beta, alpha, 0, 1 - mpf(t), regularized=True)
    except (ValueError, mp.NoConvergence):
        return False
    if q == 0 and other < SMALLEST:
        return True
    if abs(other - q) > mpf("1e-40") * abs(q):
        raise SystemExit("mismatch at Beta(%r, %r), %r: %s vs betainc %s" % (alpha, beta, t, q, other))
    return True


def g(x, digits=6):
    """x rounded to digits significant digits, as a float64."""
    return float("%.*g" % (digits, x))


def grid():
    """(mu, sigma, T) rows, deduplicated in order."""
    rows = []
    fixed_t = [0.5, 0.8, 0.9, 0.95, 0.99]

    # Edges: mu 0, sigma 0, mu 1, no fit, variance lost to rounding, out-of-range inputs, T 0 and 1.
    for s in [0, 0.1, 0.5]:
        rows += [(0.0, s, t) for t in [0, 0.5, 0.9, 1]]
    for m in [0.3, 0.9, 0.95, 1]:
        rows += [(m, 0.0, t) for t in [0, 0.5, 0.9, 1]]
    for m, s in [(1, 0.1), (1, 1e-9), (0.5, 0.5), (0.1, 0.31), (0.05, math.sqrt(1 / 12)), (0.01, 0.1),
                 (0.9, 0.31), (0.999, 0.05), (-0.5, 0.1), (1.5, 0.1), (0.5, 1)]:
        rows += [(m, s, t) for t in [0.5, 0.9]]
    for m, s in [(0.5, 1e-10), (0.95, 1e-10), (0.3, 1e-12), (0.9, 1e-11)]:
        rows += [(m, s, t) for t in [0.29, 0.5, 0.9, 0.95]]
    for m, s in [(0.4, 0.2), (0.9, 0.01)]:
        rows += [(m, s, t) for t in [0, 1]]
    # The case: mu 0.56, sigma 0.03, T 0.9 has a risk near 1e-51.
    rows.append((0.56, 0.03, 0.9))

    # Beta fits: utilizations by shape alpha+beta (k), from J-shaped to 1e9, and T at the usual
    # percentages plus T placed z standard deviations from the mean, into the far tail.
    mus = [1e-6, 1e-3, 0.01, 0.03, 0.1, 0.25, 0.4, 0.5, 0.56, 0.7, 0.85, 0.89, 0.9, 0.95, 0.99, 0.999]
    shapes = [0.05, 0.5, 2, 8, 30, 100, 1e3, 1e4, 1e5, 9.9e5, 1.02e6, 1e7, 1e8, 1e9]
    zs = [-3, -1, 0, 0.5, 1, 2, 3, 5, 8, 12, 20, 30, 38]
    for m in mus:
        for k in shapes:
            s = g(math.sqrt(m * (1 - m) / (k + 1)), 4)
            mean, sd = m, s
            ts = list(fixed_t)
            for z in zs:
                t = mean + z * sd
                if 0 < t < 1:
                    ts.append(g(t, 8) if k > 1e5 else g(t, 6))
            rows += [(m, s, t) for t in ts]
    # Spreads as the annotator reports them, at the default threshold and its neighbours.
    for m in [0.05, 0.2, 0.5, 0.6, 0.7, 0.8, 0.86, 0.88, 0.9, 0.92, 0.97]:
        for s in [1e-4, 1e-3, 0.01, 0.02, 0.05, 0.1, 0.15, 0.25]:
            rows += [(m, s, t) for t in [0.85, 0.9, 0.95]]

    seen, out = set(), []
    for r in rows:
        r = tuple(float(v) for v in r)
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def main():
    mp.dps = WORK_DPS
    w = sys.stdout
    w.write("# Exact risk P(X > T), X ~ Beta(alpha, beta) fitted by moments to (mu, sigma) as fitBeta does,\n")
    w.write("# with Rank's edge rules. Written by gen_risk_table.py (mpmath, %d digits); do not edit.\n" % WORK_DPS)
    w.write("# kind: beta (a fit), mu0 (mu 0: risk 0), sigma0 (a step at T), point (variance lost to\n")
    w.write("# rounding: a step at T), nofit (no Beta has these moments: risk 1). Risks below 1e-300 are 0.\n")
    w.write("mu,sigma,T,kind,alpha,beta,risk\n")
    checked = 0
    for mu, sigma, t in grid():
        q, alpha, beta, kind = risk(mu, sigma, t)
        if kind == "beta" and check(alpha, beta, t, q):
            checked += 1
        text = "0" if q < SMALLEST else mp.nstr(q, OUT_DIGITS, min_fixed=0, max_fixed=0)
        w.write("%r,%r,%r,%s,%r,%r,%s\n" % (mu, sigma, t, kind, alpha, beta, text))
    sys.stderr.write("%d tails cross-checked with mpmath.betainc\n" % checked)


if __name__ == "__main__":
    main()

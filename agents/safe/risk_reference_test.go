package safe

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// reference is one row of testdata/risk_reference.csv: the exact risk of (mu, sigma, T), computed
// with mpmath by testdata/gen_risk_table.py from the fit fitBeta makes.
type reference struct {
	line         int
	mu, sigma, t float64
	kind         string // beta, mu0, sigma0, point or nofit
	alpha, beta  float64
	risk         float64 // exact, rounded to float64; 0 when below 1e-300
}

// hugeShape is the shape alpha+beta above which the agent used to take the normal
// approximation; failures above it are counted apart.
const hugeShape = 1e6

// readReferences reads testdata/risk_reference.csv.
func readReferences(t *testing.T) []reference {
	t.Helper()
	f, err := os.Open("testdata/risk_reference.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var refs []reference
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") || strings.HasPrefix(text, "mu,") {
			continue
		}
		fields := strings.Split(text, ",")
		if len(fields) != 7 {
			t.Fatalf("risk_reference.csv:%d: %d fields, want 7", line, len(fields))
		}
		var v [6]float64
		for i, j := range []int{0, 1, 2, 4, 5, 6} {
			if v[i], err = strconv.ParseFloat(fields[j], 64); err != nil {
				t.Fatalf("risk_reference.csv:%d: %v", line, err)
			}
		}
		refs = append(refs, reference{line, v[0], v[1], v[2], fields[3], v[3], v[4], v[5]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(refs) < 1000 {
		t.Fatalf("risk_reference.csv: %d rows", len(refs))
	}
	return refs
}

// TestReferenceFits: the table was computed from the same fit as the agent's, bit for bit.
func TestReferenceFits(t *testing.T) {
	kinds := map[fit]string{noFit: "nofit", pointMass: "point", betaFit: "beta"}
	for _, r := range readReferences(t) {
		if r.kind == "mu0" || r.kind == "sigma0" {
			continue // Rank decides before fitting
		}
		a, b, f := fitBeta(r.mu, r.sigma)
		if kinds[f] != r.kind || a != r.alpha || b != r.beta {
			t.Errorf("line %d: fitBeta(%v, %v) = %v, %v, %s; the table has %v, %v, %s",
				r.line, r.mu, r.sigma, a, b, kinds[f], r.alpha, r.beta, r.kind)
		}
	}
}

// TestRiskAgainstReference compares Risk with the exact risk:
//   - where a Beta fits: relative error at most 1e-6 where the exact risk is above 1e-300, no more
//     than 1e-300 where it is below, and no risk of 1e-17 or more where the exact one is below
//     1e-17. Issue 16 asked for the relative error up to alpha+beta = hugeShape only, and above
//     it for an absolute error of 1e-6 and the last condition: the relative error implies the
//     absolute one, and holds for every shape since the normal approximation is gone;
//   - the edges (mu 0, sigma 0, point mass, no fit) exactly.
func TestRiskAgainstReference(t *testing.T) {
	const relTol, tiny, floor = 1e-6, 1e-300, 1e-17
	var rows, failed, failedHuge int
	for _, r := range readReferences(t) {
		got := Risk(r.mu, r.sigma, r.t)
		var bad bool
		switch {
		case r.kind != "beta":
			bad = got != r.risk
		case r.risk > tiny:
			bad = !(math.Abs(got-r.risk) <= relTol*r.risk) || (r.risk < floor && !(got < floor))
		default:
			bad = !(got <= tiny)
		}
		rows++
		if bad {
			failed++
			if r.kind == "beta" && r.alpha+r.beta > hugeShape {
				failedHuge++
			}
			t.Errorf("line %d: Risk(%v, %v, %v) = %v, exact %v (Beta(%v, %v), %s)",
				r.line, r.mu, r.sigma, r.t, got, r.risk, r.alpha, r.beta, r.kind)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d rows wrong, %d of them with alpha+beta > %g", failed, rows, failedHuge, hugeShape)
	}
}

// TestDecisionsAgainstReference: the filter's verdict (with its Cantelli shortcut), the
// safe-overload score and the node score are those the exact risk gives, for a few acceptable
// risks E, except where the exact risk is within a relative 1e-9 of a boundary (moving it by
// that much changes the answer).
func TestDecisionsAgainstReference(t *testing.T) {
	const near = 1e-9
	refs := readReferences(t)
	var checked, failed int
	var failures [3]int // verdicts, scores, node scores
	for _, e := range []float64{0.01, 0.1, 0.3} {
		var prevGot, prevWant int64
		prevOK := false
		for _, r := range refs {
			got := Risk(r.mu, r.sigma, r.t)
			lo, hi := r.risk*(1-near), math.Min(r.risk*(1+near), 1)
			if (lo <= e) == (hi <= e) {
				checked++
				want := r.risk <= e
				if verdict := SurelyAcceptable(r.mu, r.sigma, r.t, e) || got <= e; verdict != want {
					failed++
					failures[0]++
					t.Errorf("E %v, line %d (%v, %v, %v): passes %v, exact %v (risk %v, exact %v)",
						e, r.line, r.mu, r.sigma, r.t, verdict, want, got, r.risk)
				}
			}
			ok := OverloadScore(lo, e) == OverloadScore(hi, e)
			want, score := OverloadScore(r.risk, e), OverloadScore(got, e)
			if ok {
				checked++
				if score != want {
					failed++
					failures[1]++
					t.Errorf("E %v, line %d (%v, %v, %v): score %d, exact %d (risk %v, exact %v)",
						e, r.line, r.mu, r.sigma, r.t, score, want, got, r.risk)
				}
			}
			// The node score of this resource with the previous row's as the other one.
			if ok && prevOK {
				checked++
				if g, w := NodeScore(score, true, prevGot, true), NodeScore(want, true, prevWant, true); g != w {
					failed++
					failures[2]++
					t.Errorf("E %v, line %d: node score %d, exact %d", e, r.line, g, w)
				}
			}
			prevGot, prevWant, prevOK = score, want, ok
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d decisions differ from the exact risk's: %d verdicts, %d scores, %d node scores",
			failed, checked, failures[0], failures[1], failures[2])
	}
}

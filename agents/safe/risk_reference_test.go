package safe

import (
	"math"
	"testing"

	"github.com/kube-safe-scheduler/extender/agents/safe/beta"
	"github.com/kube-safe-scheduler/extender/agents/safe/internal/riskref"
)

// The agent's decisions against package beta's table of exact risks (beta/testdata).

// TestDecisionsAgainstReference: the filter's verdict (with its Cantelli shortcut), the
// safe-overload score and the node score are those the exact risk gives, for a few acceptable
// risks E, except where the exact risk is within a relative 1e-9 of a boundary (moving it by
// that much changes the answer).
func TestDecisionsAgainstReference(t *testing.T) {
	const near = 1e-9
	refs, err := riskref.Read("beta/testdata/risk_reference.csv")
	if err != nil {
		t.Fatal(err)
	}
	var checked, failed int
	var failures [3]int // verdicts, scores, node scores
	for _, e := range []float64{0.01, 0.1, 0.3} {
		var prevGot, prevWant int64
		prevOK := false
		for _, r := range refs {
			got := beta.Risk(r.Mu, r.Sigma, r.T)
			lo, hi := r.Risk*(1-near), math.Min(r.Risk*(1+near), 1)
			if (lo <= e) == (hi <= e) {
				checked++
				want := r.Risk <= e
				if verdict := beta.SurelyAcceptable(r.Mu, r.Sigma, r.T, e) || got <= e; verdict != want {
					failed++
					failures[0]++
					t.Errorf("E %v, line %d (%v, %v, %v): passes %v, exact %v (risk %v, exact %v)",
						e, r.Line, r.Mu, r.Sigma, r.T, verdict, want, got, r.Risk)
				}
			}
			ok := OverloadScore(lo, e) == OverloadScore(hi, e)
			want, score := OverloadScore(r.Risk, e), OverloadScore(got, e)
			if ok {
				checked++
				if score != want {
					failed++
					failures[1]++
					t.Errorf("E %v, line %d (%v, %v, %v): score %d, exact %d (risk %v, exact %v)",
						e, r.Line, r.Mu, r.Sigma, r.T, score, want, got, r.Risk)
				}
			}
			// The node score of this resource with the previous row's as the other one.
			if ok && prevOK {
				checked++
				if g, w := NodeScore(score, true, prevGot, true), NodeScore(want, true, prevWant, true); g != w {
					failed++
					failures[2]++
					t.Errorf("E %v, line %d: node score %d, exact %d", e, r.Line, g, w)
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

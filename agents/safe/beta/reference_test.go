package beta

import (
	"math"
	"testing"

	"github.com/kube-safe-scheduler/extender/agents/safe/internal/riskref"
)

// The exact risks of testdata/risk_reference.csv, computed with mpmath by
// testdata/gen_risk_table.py from the fit fitBeta makes.

// readReferences reads testdata/risk_reference.csv.
func readReferences(t *testing.T) []riskref.Row {
	t.Helper()
	rows, err := riskref.Read("testdata/risk_reference.csv")
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// hugeShape is the shape alpha+beta above which the agent used to take the normal
// approximation; failures above it are counted apart.
const hugeShape = 1e6

// TestReferenceFits: the table was computed from the same fit as the agent's, bit for bit.
func TestReferenceFits(t *testing.T) {
	kinds := map[fit]string{noFit: "nofit", pointMass: "point", betaFit: "beta"}
	for _, r := range readReferences(t) {
		if r.Kind == "mu0" || r.Kind == "sigma0" {
			continue // Rank decides before fitting
		}
		a, b, f := fitBeta(r.Mu, r.Sigma)
		if kinds[f] != r.Kind || a != r.Alpha || b != r.Beta {
			t.Errorf("line %d: fitBeta(%v, %v) = %v, %v, %s; the table has %v, %v, %s",
				r.Line, r.Mu, r.Sigma, a, b, kinds[f], r.Alpha, r.Beta, r.Kind)
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
		got := Risk(r.Mu, r.Sigma, r.T)
		var bad bool
		switch {
		case r.Kind != "beta":
			bad = got != r.Risk
		case r.Risk > tiny:
			bad = !(math.Abs(got-r.Risk) <= relTol*r.Risk) || (r.Risk < floor && !(got < floor))
		default:
			bad = !(got <= tiny)
		}
		rows++
		if bad {
			failed++
			if r.Kind == "beta" && r.Alpha+r.Beta > hugeShape {
				failedHuge++
			}
			t.Errorf("line %d: Risk(%v, %v, %v) = %v, exact %v (Beta(%v, %v), %s)",
				r.Line, r.Mu, r.Sigma, r.T, got, r.Risk, r.Alpha, r.Beta, r.Kind)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d rows wrong, %d of them with alpha+beta > %g", failed, rows, failedHuge, hugeShape)
	}
}

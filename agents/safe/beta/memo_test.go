package beta

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRiskMemoIdentical checks that the memo changes no answer: for random arguments, more than
// the memo has slots (so that entries evict each other) and each asked several times, Memo.Risk
// returns the bits that computing the tail returns, as does a nil Memo.
func TestRiskMemoIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	type args struct{ mu, sigma, t float64 }
	cases := make([]args, 3*memoSlots)
	for i := range cases {
		cases[i] = args{r.Float64(), 0.2 * r.Float64() * r.Float64(), []float64{0.5, 0.8, 0.9}[i%3]}
	}
	m := NewMemo()
	var none *Memo
	for pass := range 3 {
		for _, c := range cases {
			want := 0.0
			rank, alpha, beta, decided := decide(c.mu, c.sigma, c.t)
			if decided {
				want = 1 - rank
			} else {
				want = tailRisk(alpha, beta, c.t)
			}
			if got := m.Risk(c.mu, c.sigma, c.t); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("pass %d: Memo.Risk(%v, %v, %v) = %v, computed %v", pass, c.mu, c.sigma, c.t, got, want)
			}
			if pass == 0 {
				if got := none.Risk(c.mu, c.sigma, c.t); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("nil Memo.Risk(%v, %v, %v) = %v, computed %v", c.mu, c.sigma, c.t, got, want)
				}
				if got := Risk(c.mu, c.sigma, c.t); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("Risk(%v, %v, %v) = %v, computed %v", c.mu, c.sigma, c.t, got, want)
				}
			}
		}
	}
}

// TestMemoRemembers: a risk computed once is then read from the memo that computed it, and from
// no other (each owner has its own).
func TestMemoRemembers(t *testing.T) {
	const mu, sigma, th = 0.6, 0.05, 0.9
	if _, _, _, decided := decide(mu, sigma, th); decided {
		t.Fatal("the case must need the tail")
	}
	m, other := NewMemo(), NewMemo()
	if _, ok := m.get(mu, sigma, th); ok {
		t.Fatal("a new memo remembers a risk")
	}
	r := m.Risk(mu, sigma, th)
	if got, ok := m.get(mu, sigma, th); !ok || got != r {
		t.Errorf("after Risk: get = %v, %v; want %v, true", got, ok, r)
	}
	if _, ok := other.get(mu, sigma, th); ok {
		t.Error("another memo remembers the first one's risk")
	}
}

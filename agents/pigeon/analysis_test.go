package pigeon

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCoefVar(t *testing.T) {
	tests := []struct {
		name string
		m    int
		mu   vec
		s    mat
		want float64
	}{
		// sqrt(0.04)/0.5 = 0.2/0.5 = 0.4
		{name: "one resource", m: 1, mu: vec{0.5}, s: mat{{0.04}}, want: 0.4},
		// mu == 0: defined as 0
		{name: "one resource, zero mean", m: 1, mu: vec{0}, s: mat{{0.04}}, want: 0},
		// a negative variance (rounding) is not positive: 0, not NaN
		{name: "one resource, negative variance", m: 1, mu: vec{0.5}, s: mat{{-1e-18}}, want: 0},
		// mu' S mu = 0.3*0.3*0.04*4 = 0.0144, sqrt = 0.12; mu' mu = 0.18; 0.12/0.18 = 2/3
		{name: "two resources, perfectly correlated", m: 2, mu: vec{0.3, 0.3},
			s: mat{{0.04, 0.04}, {0.04, 0.04}}, want: 2.0 / 3},
		// mu' S mu = 0.25*0.04 + 0.0625*0.01 = 0.010625, sqrt = 0.103078; mu' mu = 0.3125;
		// 0.103078/0.3125 = 0.329848
		{name: "two resources, independent", m: 2, mu: vec{0.5, 0.25},
			s: mat{{0.04, 0}, {0, 0.01}}, want: math.Sqrt(0.010625) / 0.3125},
		// numerator 0: 0
		{name: "two resources, no variation", m: 2, mu: vec{0.5, 0.25}, want: 0},
		// denominator 0: 0
		{name: "two resources, zero mean", m: 2, s: mat{{0.04, 0}, {0, 0.01}}, want: 0},
		// the third resource is beyond m and ignored: same as "two resources, independent"
		{name: "components beyond m ignored", m: 2, mu: vec{0.5, 0.25, 9},
			s: mat{{0.04, 0, 9}, {0, 0.01, 9}, {9, 9, 9}}, want: math.Sqrt(0.010625) / 0.3125},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := coefVar(tc.m, &tc.mu, &tc.s); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("coefVar = %.15g, want %.15g", got, tc.want)
			}
		})
	}
}

func TestUtilizationAndFits(t *testing.T) {
	capacity, use := vec{1000, 0, 10}, vec{250, 0, 10}
	// 250/1000 = 0.25; capacity 0 counts as 1; 10/10 = 1
	if diff := cmp.Diff(vec{0.25, 1, 1}, utilization(3, &capacity, &use)); diff != "" {
		t.Errorf("utilization (-want +got):\n%s", diff)
	}
	tests := []struct {
		name   string
		demand vec
		want   bool
	}{
		// 750 <= 1000-250, 0 <= 0-0, 0 <= 10-10
		{name: "exactly fills", demand: vec{750, 0, 0}, want: true},
		// 751 > 750
		{name: "one millicore too many", demand: vec{751, 0, 0}, want: false},
		// 1 > 0 - 0: a resource the node lacks
		{name: "resource the node lacks", demand: vec{1, 1, 0}, want: false},
		// 1 > 10 - 10
		{name: "full resource", demand: vec{1, 0, 1}, want: false},
	}
	for _, tc := range tests {
		if got := fits(3, &capacity, &use, &tc.demand); got != tc.want {
			t.Errorf("%s: fits = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScores(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		fit    []bool
		want   []int64
	}{
		// vmin 0.2, vmax 0.5, span 0.3: 0.2 -> 1+9*0.3/0.3 = 10; 0.5 -> 1+0 = 1;
		// 0.3 -> 1+9*0.2/0.3 = 7; 9 does not fit -> 0 (and does not widen the span)
		{name: "spread", values: []float64{0.2, 0.5, 0.3, 9}, fit: []bool{true, true, true, false},
			want: []int64{10, 1, 7, 0}},
		// span 0: every fitting node 10
		{name: "all equal", values: []float64{0.4, 0.4, 0.1}, fit: []bool{true, true, false},
			want: []int64{10, 10, 0}},
		// a difference of 1e-16 is noise, not a preference
		{name: "equal but for rounding", values: []float64{0.4, 0.4 + 1e-16}, fit: []bool{true, true},
			want: []int64{10, 10}},
		{name: "none fits", values: []float64{0.1, 0.2}, fit: []bool{false, false}, want: []int64{0, 0}},
		{name: "one fits", values: []float64{0.1, 0.2}, fit: []bool{false, true}, want: []int64{0, 10}},
		{name: "no nodes", values: []float64{}, fit: []bool{}, want: []int64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, scores(tc.values, tc.fit)); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDemandStatsSmoothing(t *testing.T) {
	var d demandStats
	zero, one := vec{0}, vec{1}
	for i := 0; i < 100; i++ {
		d.add(1, &zero)
	}
	d.add(1, &one)
	// the 101st pod enters with weight 1/100: mean = 0 + (1 - 0)/100 = 0.01
	if math.Abs(d.mean[0]-0.01) > 1e-15 || math.Abs(d.second[0][0]-0.01) > 1e-15 {
		t.Fatalf("after 100 zeros and a one: mean %g second %g, want 0.01 and 0.01", d.mean[0], d.second[0][0])
	}
	for i := 1; i < 50; i++ {
		d.add(1, &one)
	}
	// 50 ones after 100 zeros: mean = 1 - 0.99^50 = 1 - 0.605006 = 0.394994
	if want := 1 - math.Pow(0.99, 50); math.Abs(d.mean[0]-want) > 1e-12 {
		t.Fatalf("after 100 zeros and 50 ones: mean %.15g, want %.15g", d.mean[0], want)
	}

	// The plain average of the first pods: demands 100 and 700 and 100 (millicores):
	// mean 300, second moment (1e4 + 49e4 + 1e4)/3 = 170000. Normalized by an average
	// capacity of 1000: mean 0.3, second 0.17, variance 0.17 - 0.09 = 0.08,
	// c = sqrt(0.08)/0.3 = 0.942809.
	var p demandStats
	for _, x := range []float64{100, 700, 100} {
		v := vec{x}
		p.add(1, &v)
	}
	avgCap := vec{1000}
	if got, want := p.coefVar(1, &avgCap), math.Sqrt(0.08)/0.3; math.Abs(got-want) > 1e-12 {
		t.Fatalf("c(demand) = %.15g, want %.15g", got, want)
	}
	// Zero average capacity (no node has the resource): the resource contributes nothing.
	zeroCap := vec{0}
	if got := p.coefVar(1, &zeroCap); got != 0 {
		t.Fatalf("c(demand) with zero capacity = %g, want 0", got)
	}
}

func TestSeenSetIsBounded(t *testing.T) {
	s := newSeenSet(3)
	for _, k := range []string{"a", "b", "c"} {
		if !s.add(k) {
			t.Fatalf("%s reported as seen", k)
		}
	}
	if s.add("a") {
		t.Fatal("a counted twice")
	}
	// "d" evicts the oldest, "a"; "a" is then new again, evicting "b".
	if !s.add("d") || !s.add("a") || s.add("c") || len(s.keys) != 3 {
		t.Fatalf("ring misbehaves: keys %v", s.keys)
	}
	if !s.add("b") {
		t.Fatal("b should have been forgotten")
	}
}

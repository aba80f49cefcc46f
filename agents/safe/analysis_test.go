package safe

import (
	"math"
	"testing"
)

// near reports whether got is within tol of want.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestUtilization(t *testing.T) {
	tests := []struct {
		name                        string
		free, std, capacity, demand float64
		wantMu, wantSigma           float64
		wantOK                      bool
	}{
		// used = 4000 - 1000 = 3000; mu = (3000 + 500)/4000 = 0.875; sigma = 400/4000 = 0.1.
		{"plain", 1000, 400, 4000, 500, 0.875, 0.1, true},
		// free > capacity: used = max(-1000, 0) = 0; mu = 500/4000 = 0.125.
		{"free above capacity", 5000, 0, 4000, 500, 0.125, 0, true},
		// (3900 + 500)/4000 = 1.1, clamped to 1.
		{"overcommitted", 100, 0, 4000, 500, 1, 0, true},
		// sigma = 5000/4000 = 1.25, clamped to 1.
		{"std above capacity", 1000, 5000, 4000, 0, 0.75, 1, true},
		// sigma = -400/4000 clamped to 0.
		{"negative std", 1000, -400, 4000, 0, 0.75, 0, true},
		// used = 4000 + 5 = 4005; mu = 4005/4000 clamped to 1.
		{"negative free", -5, 0, 4000, 0, 1, 0, true},
		// Zero, negative, NaN or infinite capacity: not judged.
		{"capacity 0", 1000, 400, 0, 500, 0, 0, false},
		{"capacity negative", 1000, 400, -1, 500, 0, 0, false},
		{"capacity NaN", 1000, 400, math.NaN(), 500, 0, 0, false},
		{"capacity +Inf", 1000, 400, math.Inf(1), 500, 0, 0, false},
		// free = -Inf: used = +Inf, mu clamped to 1; std +Inf: sigma 1.
		{"infinite inputs", math.Inf(-1), math.Inf(1), 4000, 0, 1, 1, true},
		// free = +Inf: used = max(-Inf, 0) = 0.
		{"free +Inf", math.Inf(1), 0, 4000, 400, 0.1, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu, sigma, ok := Utilization(tc.free, tc.std, tc.capacity, tc.demand)
			if mu != tc.wantMu || sigma != tc.wantSigma || ok != tc.wantOK {
				t.Errorf("Utilization(%v, %v, %v, %v) = %v, %v, %v; want %v, %v, %v",
					tc.free, tc.std, tc.capacity, tc.demand, mu, sigma, ok, tc.wantMu, tc.wantSigma, tc.wantOK)
			}
		})
	}
}

func TestBlend(t *testing.T) {
	tests := []struct {
		mean, forecast float64
		has            bool
		w, want        float64
	}{
		{1000, 2000, false, 0.2, 1000}, // no forecast: the mean
		{1000, 2000, true, 0.2, 1200},  // 0.8*1000 + 0.2*2000
		{1000, 2000, true, 0, 1000},    // w 0: the mean
		{1000, 2000, true, 1, 2000},    // w 1: the forecast
		{800, 200, true, 0.2, 680},     // 0.8*800 + 0.2*200 = 640 + 40
	}
	for _, tc := range tests {
		if got := Blend(tc.mean, tc.forecast, tc.has, tc.w); !near(got, tc.want, 1e-9) {
			t.Errorf("Blend(%v, %v, %v, %v) = %v, want %v", tc.mean, tc.forecast, tc.has, tc.w, got, tc.want)
		}
	}
}

func TestOverloadScore(t *testing.T) {
	tests := []struct {
		name    string
		risk, e float64
		want    int64
	}{
		{"no risk", 0, 0.3, 10},          // f = 0: floor(10) = 10
		{"risk at E", 0.3, 0.3, 0},       // f = 1
		{"risk above E", 0.5, 0.3, 0},    // f = min(1.67, 1) = 1
		{"f 0.25", 0.125, 0.5, 5},        // f = 0.25, sqrt 0.5: floor(5) = 5
		{"f 0.1", 0.03, 0.3, 6},          // sqrt(0.1) = 0.316: floor(6.84) = 6
		{"f 1/30", 0.01, 0.3, 8},         // sqrt(0.0333) = 0.183: floor(8.17) = 8
		{"f 0.625", 0.3125, 0.5, 2},      // sqrt(0.625) = 0.791: floor(2.09) = 2
		{"tiny risk", 1e-16, 0.3, 9},     // sqrt(3.3e-16) = 1.8e-8: floor(9.99999982) = 9
		{"E 0, no risk", 0, 0, 10},       // f = 0 (limit of 0/E)
		{"E 0, some risk", 0.1, 0, 0},    // f = 1 (limit of r/E)
		{"risk NaN", math.NaN(), 0.3, 0}, // never a NaN score
		{"negative risk", -0.1, 0.3, 10}, // f clamped to 0
		{"E 1, risk 1", 1, 1, 0},         // f = 1
		{"E 1, risk 0.5", 0.5, 1, 2},     // sqrt(0.5) = 0.707: floor(2.93) = 2
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OverloadScore(tc.risk, tc.e); got != tc.want {
				t.Errorf("OverloadScore(%v, %v) = %d, want %d", tc.risk, tc.e, got, tc.want)
			}
		})
	}
}

func TestBalanceScore(t *testing.T) {
	tests := []struct {
		mu, sigma float64
		want      int64
	}{
		{0, 0, 10},         // obj 0: floor(10.5) = 10
		{1, 1, 0},          // obj 1: floor(0.5) = 0
		{0.3, 0.01, 8},     // obj (0.3 + 0.1)/2 = 0.2: floor(8.5) = 8
		{0.7, 0.25, 4},     // obj (0.7 + 0.5)/2 = 0.6: floor(4.5) = 4
		{0.2, 0.16, 7},     // obj (0.2 + 0.4)/2 = 0.3: floor(7.5) = 7
		{0.45, 0, 8},       // obj 0.225: floor(7.75 + 0.5) = 8 (rounds up)
		{0.55, 0, 7},       // obj 0.275: floor(7.25 + 0.5) = 7 (rounds down)
		{0.4, 0.2, 6},      // obj (0.4 + 0.4472)/2 = 0.4236: floor(6.26) = 6
		{math.NaN(), 0, 5}, // NaN mu counts as 1: obj 0.5: floor(5.5) = 5
	}
	for _, tc := range tests {
		if got := BalanceScore(tc.mu, tc.sigma); got != tc.want {
			t.Errorf("BalanceScore(%v, %v) = %d, want %d", tc.mu, tc.sigma, got, tc.want)
		}
	}
}

func TestNodeScore(t *testing.T) {
	tests := []struct {
		cpu       int64
		cpuHas    bool
		memory    int64
		memoryHas bool
		want      int64
	}{
		{7, true, 4, true, 4},   // both: the smaller
		{3, true, 9, true, 3},   // both: the smaller
		{7, true, 0, false, 7},  // cpu only
		{0, false, 6, true, 6},  // memory only
		{0, false, 0, false, 0}, // neither
	}
	for _, tc := range tests {
		if got := NodeScore(tc.cpu, tc.cpuHas, tc.memory, tc.memoryHas); got != tc.want {
			t.Errorf("NodeScore(%d, %v, %d, %v) = %d, want %d", tc.cpu, tc.cpuHas, tc.memory, tc.memoryHas, got, tc.want)
		}
	}
}

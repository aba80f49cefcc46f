package annotator

import (
	"errors"
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	h := Holt{Alpha: 0.5, Beta: 0.5}
	cases := []struct {
		name    string
		samples []float64
		min     int
		holt    Holt
		want    Summary
	}{
		{
			// One sample: mean is it, spread 0, level = y1, trend 0: forecast y1.
			name: "one sample", samples: []float64{7}, min: 1, holt: h,
			want: Summary{Mean: 7, Std: 0, Forecast: 7, N: 1},
		},
		{
			// A constant series: no spread, no trend.
			name: "constant", samples: []float64{4000, 4000, 4000, 4000}, min: 3, holt: h,
			want: Summary{Mean: 4000, Std: 0, Forecast: 4000, N: 4},
		},
		{
			// 2, 4, 4, 4, 5, 5, 7, 9: mean 40/8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32;
			// population variance 32/8 = 4, std 2.
			// Holt, alpha = beta = 0.5, level_1 = 2, trend_1 = 4-2 = 2:
			//   y=4: level = .5*4 + .5*(2+2) = 4;        trend = .5*(4-2) + .5*2 = 2
			//   y=4: level = .5*4 + .5*(4+2) = 5;        trend = .5*(5-4) + .5*2 = 1.5
			//   y=4: level = .5*4 + .5*(5+1.5) = 5.25;   trend = .5*(.25) + .5*1.5 = .875
			//   y=5: level = .5*5 + .5*(6.125) = 5.5625; trend = .5*(.3125) + .5*.875 = .59375
			//   y=5: level = 2.5 + .5*6.15625 = 5.578125; trend = .5*.015625 + .296875 = .3046875
			//   y=7: level = 3.5 + .5*5.8828125 = 6.44140625; trend = .5*.86328125 + .15234375 = .583984375
			//   y=9: level = 4.5 + .5*7.025390625 = 8.0126953125; trend = .5*1.5712890625 + .2919921875 = 1.077636719
			//   forecast = 8.0126953125 + 1.0776367188 = 9.0903320313
			name: "worked example", samples: []float64{2, 4, 4, 4, 5, 5, 7, 9}, min: 3, holt: h,
			want: Summary{Mean: 5, Std: 2, Forecast: 9.09033203125, N: 8},
		},
		{
			// A straight line: Holt's method started on the line stays on it, whatever the
			// factors: forecast = next point. Mean 25, deviations +-15, +-5: variance 125.
			name: "linear trend", samples: []float64{10, 20, 30, 40}, min: 3, holt: Holt{Alpha: 0.3, Beta: 0.1},
			want: Summary{Mean: 25, Std: math.Sqrt(125), Forecast: 50, N: 4},
		},
		{
			// Alpha 1 and beta 1: level = last sample (6), trend = last difference (6-9 = -3):
			// forecast 3. Mean 20/3; deviations -5/3, 7/3, -2/3: variance (25+49+4)/9/3 = 78/27.
			name: "alpha 1 beta 1", samples: []float64{5, 9, 6}, min: 1, holt: Holt{Alpha: 1, Beta: 1},
			want: Summary{Mean: 20.0 / 3, Std: math.Sqrt(78.0 / 27), Forecast: 3, N: 3},
		},
		{
			// Falling free memory: the line 250, 150, 50 goes on to -50, which no measured free
			// amount can be: clamped to 0. Mean 150, deviations +-100, 0: variance 20000/3.
			name: "forecast clamped at zero", samples: []float64{250, 150, 50}, min: 1, holt: Holt{Alpha: 0.5, Beta: 0.5},
			want: Summary{Mean: 150, Std: math.Sqrt(20000.0 / 3), Forecast: 0, N: 3},
		},
		{
			// With a negative sample (metrics API: usage above allocatable) nothing is clamped:
			// the line -10, -20 goes on to -30.
			name: "negative samples not clamped", samples: []float64{-10, -20}, min: 1, holt: Holt{Alpha: 0.5, Beta: 0.5},
			want: Summary{Mean: -15, Std: 5, Forecast: -30, N: 2},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Summarize(c.samples, c.min, c.holt)
			if err != nil {
				t.Fatal(err)
			}
			if got.N != c.want.N || !near(got.Mean, c.want.Mean) || !near(got.Std, c.want.Std) || !near(got.Forecast, c.want.Forecast) {
				t.Errorf("Summarize(%v) = %+v, want %+v", c.samples, got, c.want)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSummarizeBadData(t *testing.T) {
	h := Holt{Alpha: 0.5, Beta: 0.1}
	cases := []struct {
		name    string
		samples []float64
		few     bool
	}{
		{"no samples", nil, false},
		{"NaN", []float64{1, math.NaN(), 3}, false},
		{"+Inf", []float64{1, 2, math.Inf(1)}, false},
		{"-Inf", []float64{math.Inf(-1), 2, 3}, false},
		{"too few", []float64{1, 2}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Summarize(c.samples, 3, h)
			if err == nil {
				t.Fatal("no error")
			}
			var few *fewSamplesError
			if errors.As(err, &few) != c.few {
				t.Errorf("error %v: fewSamplesError = %v, want %v", err, !c.few, c.few)
			}
		})
	}
}

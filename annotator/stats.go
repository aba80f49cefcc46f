package annotator

import (
	"errors"
	"fmt"
	"math"
)

// Summary describes one resource's free amount over the statistics window.
type Summary struct {
	// Mean and Std are the mean and the population standard deviation (divided by n) of the
	// samples.
	Mean, Std float64
	// Forecast is the one-step-ahead forecast of Holt's linear trend method.
	Forecast float64
	// N is the number of samples.
	N int
}

// Holt holds the smoothing factors of Holt's linear trend method, each in (0, 1].
type Holt struct {
	// Alpha smooths the level: near 1 follows the last sample, near 0 averages long.
	Alpha float64
	// Beta smooths the trend (the change per step).
	Beta float64
}

// errNoSamples and fewSamplesError describe data too thin to summarize; the node's
// annotations are then left as they are.
var errNoSamples = errors.New("no samples")

type fewSamplesError struct{ n, min int }

func (e *fewSamplesError) Error() string {
	return fmt.Sprintf("%d samples, fewer than the %d required (STATS_MIN_SAMPLES)", e.n, e.min)
}

// Summarize computes the summary of samples (oldest first, one per step). It fails, leaving
// nothing to write, when there are fewer than minSamples samples or when a sample is NaN or
// infinite.
//
// Holt's linear trend method, for samples y_1..y_n:
//
//	level_1 = y_1, trend_1 = y_2 - y_1 (0 when n = 1)
//	level_t = alpha*y_t + (1-alpha)*(level_{t-1} + trend_{t-1})
//	trend_t = beta*(level_t - level_{t-1}) + (1-beta)*trend_{t-1}
//	forecast = level_n + trend_n
//
// When no sample is negative (free amounts measured on the machine) the forecast is not allowed
// below 0: a trend may not extrapolate to an impossible value.
func Summarize(samples []float64, minSamples int, h Holt) (Summary, error) {
	if len(samples) == 0 {
		return Summary{}, errNoSamples
	}
	if len(samples) < minSamples {
		return Summary{}, &fewSamplesError{n: len(samples), min: minSamples}
	}
	nonNegative := true
	var sum float64
	for i, v := range samples {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Summary{}, fmt.Errorf("sample %d of %d is %v", i+1, len(samples), v)
		}
		if v < 0 {
			nonNegative = false
		}
		sum += v
	}
	n := float64(len(samples))
	mean := sum / n
	var ss float64
	for _, v := range samples {
		ss += (v - mean) * (v - mean)
	}
	f := h.forecast(samples)
	if nonNegative && f < 0 {
		f = 0
	}
	return Summary{Mean: mean, Std: math.Sqrt(ss / n), Forecast: f, N: len(samples)}, nil
}

// forecast is the one-step-ahead forecast of Holt's linear trend method (see Summarize).
func (h Holt) forecast(y []float64) float64 {
	level, trend := y[0], 0.0
	if len(y) > 1 {
		trend = y[1] - y[0]
	}
	for _, v := range y[1:] {
		prev := level
		level = h.Alpha*v + (1-h.Alpha)*(level+trend)
		trend = h.Beta*(level-prev) + (1-h.Beta)*trend
	}
	return level + trend
}

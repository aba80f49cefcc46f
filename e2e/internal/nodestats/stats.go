// Package nodestats is internal/fixtures/stats.go of the root module (which the e2e module does
// not require), kept identical (TestSameAsRootFixtures) so that bench-e2e, bench-memory and the
// in-process benchmarks see the same nodes.
package nodestats

import (
	"math"
	"strconv"
	"time"
)

// Usage statistics annotations as the node annotator writes them (annotator/annotations.go):
// free cpu in millicores, free memory in bytes, each as an integer.
const (
	meanFreeCPU        = "mean-free-cpu"
	stdFreeCPU         = "std-free-cpu"
	forecastFreeCPU    = "forcasted-free-cpu"
	meanFreeMemory     = "mean-free-memory"
	stdFreeMemory      = "std-free-memory"
	forecastFreeMemory = "forcasted-free-memory"
	statsTimestamp     = "statistics-timestamp"
)

// NearThresholdShare is the share of the nodes UsageStatistics places near the safe agent's
// default thresholds (utilization T = 90 %, acceptable risk E = 30 %).
const NearThresholdShare = 0.2

// UsageStatistics returns the usage statistics annotations of node number i with cpuMilli
// millicores and memory bytes allocatable, as an annotator writes them at now: the mean,
// standard deviation and forecast of free cpu and free memory, and statistics-timestamp.
// The values are what a fleet's nodes report, deterministic in i:
//
//   - most nodes (1 - NearThresholdShare) are 15-75 % used with spreads of 2-12 % of
//     allocatable for cpu and 0.5-4 % for memory (memory moves less than cpu);
//   - NearThresholdShare of them are 78-92 % used with spreads of 3-8 % (cpu) and 1-3 %
//     (memory): near the safe agent's default threshold, where its filter cannot decide by
//     Cantelli's bound and computes the Beta tail, and some of them are rejected;
//   - the forecast is the mean moved by up to one standard deviation either way.
//
// Annotations of this shape cost the safe agent what a real cluster costs it (memory's small
// relative spreads give large Beta shapes, the slow tails), unlike round synthetic ones.
func UsageStatistics(i int, cpuMilli, memory int64, now time.Time) map[string]string {
	r := rng(uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019)
	near := r.unit() < NearThresholdShare
	used := func(lo, hi float64) float64 { return lo + (hi-lo)*r.unit() }
	var cpuUsed, memUsed, cpuStd, memStd float64
	if near {
		cpuUsed, memUsed = used(0.78, 0.92), used(0.78, 0.92)
		cpuStd, memStd = used(0.03, 0.08), used(0.01, 0.03)
	} else {
		cpuUsed, memUsed = used(0.15, 0.75), used(0.15, 0.75)
		cpuStd, memStd = used(0.02, 0.12), used(0.005, 0.04)
	}
	out := map[string]string{statsTimestamp: now.UTC().Format(time.RFC3339)}
	for _, s := range []struct {
		mean, std, forecast string
		capacity            float64
		used, spread        float64
	}{
		{meanFreeCPU, stdFreeCPU, forecastFreeCPU, float64(cpuMilli), cpuUsed, cpuStd},
		{meanFreeMemory, stdFreeMemory, forecastFreeMemory, float64(memory), memUsed, memStd},
	} {
		mean := (1 - s.used) * s.capacity
		std := s.spread * s.capacity
		forecast := math.Max(mean+(2*r.unit()-1)*std, 0)
		out[s.mean] = strconv.FormatInt(int64(math.Round(mean)), 10)
		out[s.std] = strconv.FormatInt(int64(math.Round(std)), 10)
		out[s.forecast] = strconv.FormatInt(int64(math.Round(forecast)), 10)
	}
	return out
}

// rng is a splitmix64 generator: a fixed sequence for a seed, on every platform.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit returns a number in [0, 1).
func (r *rng) unit() float64 { return float64(r.next()>>11) / (1 << 53) }

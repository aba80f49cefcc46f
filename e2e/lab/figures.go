package main

import (
	"math"
	"sort"
)

// Sample is the cluster at one moment of simulated time: each node's true utilization (usage
// over allocatable; above 1 when demand exceeds the node) and how many pods run on it.
type Sample struct {
	// Minute is the simulated time in minutes; Span is the simulated minutes the sample stands
	// for (since the previous one).
	Minute, Span float64
	CPU, Mem     []float64
	Running      []int
	// CPUCores and MemGiB are a node's allocatable (every node alike), which turn utilization
	// above 90 % into volume (Figures.OverCPUVolume); 0 leaves the volumes 0.
	CPUCores, MemGiB float64
}

// Thresholds are the utilizations above which a node counts as overloaded.
var Thresholds = []float64{0.8, 0.9, 1.0}

// Figures are one run's results.
type Figures struct {
	// OverCPUVolume and OverMemVolume are the overload volume, the headline figure: the cpu
	// (core-minutes) and memory (GiB-minutes) that the nodes' pods demanded above 90 % of the
	// node's allocatable, summed over nodes and time. Unlike node-minutes (Overload) they weigh
	// how far above a node went: piling onto a node already hot adds to them.
	OverCPUVolume, OverMemVolume float64
	// LoadLow, LoadMean, LoadHigh: the cpu the workload's pods request as planned, over the
	// cluster's, in the measured minutes (PlannedLoad); InBand is 1 when every minute is within
	// the workload's band, 0 when not: such a run is reported, not counted in medians and ratios.
	LoadLow, LoadMean, LoadHigh, InBand float64
	// Overload[i] is the node-minutes during which a node's cpu or memory utilization was above
	// Thresholds[i].
	Overload []float64
	// WorstP99 is the largest, over nodes, of a node's 99th percentile utilization (the higher
	// of cpu and memory at each sample).
	WorstP99 float64
	// NodesInUse is the time-weighted mean of the nodes running at least one pod; CPUInUse and
	// MemInUse their mean utilization.
	NodesInUse, CPUInUse, MemInUse float64
	// CV is the time-weighted mean coefficient of variation of the nodes' cpu utilization.
	CV float64
	// Minutes is the simulated time measured.
	Minutes float64

	Created, Placed, Pending int
	// BindP50, BindP99: seconds (real) from a pod's creation to its binding.
	BindP50, BindP99 float64
	// FailedStarts counts pods that failed at start (reward workload).
	FailedStarts int
	// Gang workload (see Result): share of groups completed, groups partly bound at the end,
	// room held by waiting members (cpu-minutes).
	GroupShare float64
	// MaxGap: see Result.
	MaxGap float64
	// RunStretch is how long the completed pods ran (seen Running to Succeeded, simulated)
	// over the run times they were given: 1 when kwok kept up; more lengthens every life and
	// adds load that no scheduler caused, so runs compare only at similar stretches.
	RunStretch     float64
	GroupsPartial  int
	HeldCPUMinutes float64
	// HotSpell is the mean simulated minutes from a node turning hot (cpu or memory above 90 %)
	// to cool (at most 90 %), at the samples' resolution, over the spells of the measured time;
	// a spell still going at the end counts until the end (and one going at its start, from
	// the start), so the mean is a lower bound.
	HotSpell float64
	// The descheduler's evictions (+descheduler runs; 0 elsewhere): EvictionsPerHour those of
	// the measured time per simulated hour; EvictedShare all of them over the pods placed
	// (replacements included); EvictedAgain the workloads' pods evicted more than once (a pod
	// and its replacements count as one); EvictedQuickly those evicted twice within 10
	// simulated minutes.
	EvictionsPerHour, EvictedShare float64
	EvictedAgain, EvictedQuickly   int
}

// hotLevel is the utilization above which a node is hot (HotSpell).
const hotLevel = 0.9

// Accumulate computes the utilization figures of samples.
func Accumulate(samples []Sample) Figures {
	f := Figures{Overload: make([]float64, len(Thresholds))}
	if len(samples) == 0 {
		return f
	}
	nodes := len(samples[0].CPU)
	perNode := make([][]float64, nodes)
	hotSince := make([]float64, nodes) // minute the node turned hot, -1 when cool
	for n := range hotSince {
		hotSince[n] = -1
	}
	var spells []float64
	var inUseCPU, inUseMem, inUseSpan float64
	for _, s := range samples {
		f.Minutes += s.Span
		used, sumCPU, sumMem := 0, 0.0, 0.0
		var mean, sq float64
		for n := range s.CPU {
			u := math.Max(s.CPU[n], s.Mem[n])
			perNode[n] = append(perNode[n], u)
			switch {
			case u > hotLevel && hotSince[n] < 0:
				hotSince[n] = s.Minute
			case u <= hotLevel && hotSince[n] >= 0:
				spells = append(spells, s.Minute-hotSince[n])
				hotSince[n] = -1
			}
			f.OverCPUVolume += s.Span * math.Max(0, s.CPU[n]-hotLevel) * s.CPUCores
			f.OverMemVolume += s.Span * math.Max(0, s.Mem[n]-hotLevel) * s.MemGiB
			for i, th := range Thresholds {
				if u > th {
					f.Overload[i] += s.Span
				}
			}
			if s.Running[n] > 0 {
				used++
				sumCPU += s.CPU[n]
				sumMem += s.Mem[n]
			}
			mean += s.CPU[n]
		}
		mean /= float64(len(s.CPU))
		for n := range s.CPU {
			sq += (s.CPU[n] - mean) * (s.CPU[n] - mean)
		}
		if mean > 0 {
			f.CV += s.Span * math.Sqrt(sq/float64(len(s.CPU))) / mean
		}
		f.NodesInUse += s.Span * float64(used)
		if used > 0 {
			inUseCPU += s.Span * sumCPU / float64(used)
			inUseMem += s.Span * sumMem / float64(used)
			inUseSpan += s.Span
		}
	}
	if f.Minutes > 0 {
		f.NodesInUse /= f.Minutes
		f.CV /= f.Minutes
	}
	if inUseSpan > 0 {
		f.CPUInUse, f.MemInUse = inUseCPU/inUseSpan, inUseMem/inUseSpan
	}
	for _, u := range perNode {
		f.WorstP99 = math.Max(f.WorstP99, quantile(u, 0.99))
	}
	end := samples[len(samples)-1].Minute
	for _, since := range hotSince {
		if since >= 0 {
			spells = append(spells, end-since)
		}
	}
	if len(spells) > 0 {
		sum := 0.0
		for _, d := range spells {
			sum += d
		}
		f.HotSpell = sum / float64(len(spells))
	}
	return f
}

// quantile returns the q-quantile of xs (nearest rank), 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

package main

import (
	"math"
	"testing"
	"time"
)

// TestAccumulateByHand checks the accounting against a case computed by hand: two nodes, three
// samples of 1, 2 and 1 simulated minutes.
func TestAccumulateByHand(t *testing.T) {
	samples := []Sample{
		{Minute: 1, Span: 1, CPU: []float64{0.85, 0.2}, Mem: []float64{0.5, 0.1}, Running: []int{3, 1}},
		{Minute: 3, Span: 2, CPU: []float64{0.95, 0}, Mem: []float64{0.5, 0}, Running: []int{3, 0}},
		// node 0's memory (1.05) is its higher utilization here
		{Minute: 4, Span: 1, CPU: []float64{0.7, 0.5}, Mem: []float64{1.05, 0.2}, Running: []int{4, 2}},
	}
	for i := range samples {
		samples[i].CPUCores, samples[i].MemGiB = 16, 64
	}
	f := Accumulate(samples)
	// Volume above 90 %: cpu only in the second sample, node 0 at 0.95 of 16 cores for 2 min:
	// 0.05 * 16 * 2 = 1.6 core-minutes; memory only in the third, node 0 at 1.05 of 64 GiB for
	// 1 min: 0.15 * 64 = 9.6 GiB-minutes. Node 0's 0.85 cpu in the first counts nothing.
	if math.Abs(f.OverCPUVolume-1.6) > 1e-9 || math.Abs(f.OverMemVolume-9.6) > 1e-9 {
		t.Errorf("volume above 90 %%: cpu %v core-min, memory %v GiB-min; want 1.6, 9.6", f.OverCPUVolume, f.OverMemVolume)
	}
	// > 80 %: node 0 in all three samples: 1 + 2 + 1 = 4 node-minutes.
	// > 90 %: node 0 in the second (0.95, 2 min) and third (1.05, 1 min): 3.
	// > 100 %: node 0 in the third: 1.
	want := []float64{4, 3, 1}
	for i := range want {
		if f.Overload[i] != want[i] {
			t.Errorf("overload above %.0f %%: %v node-minutes, want %v", Thresholds[i]*100, f.Overload[i], want[i])
		}
	}
	if f.Minutes != 4 {
		t.Errorf("minutes %v, want 4", f.Minutes)
	}
	// Nodes in use: 2 for 1 min, 1 for 2 min, 2 for 1 min: (2 + 2 + 2) / 4 = 1.5.
	if f.NodesInUse != 1.5 {
		t.Errorf("nodes in use %v, want 1.5", f.NodesInUse)
	}
	// cpu of nodes in use: (0.525*1 + 0.95*2 + 0.6*1) / 4 = 0.75625.
	if math.Abs(f.CPUInUse-0.75625) > 1e-12 {
		t.Errorf("cpu in use %v, want 0.75625", f.CPUInUse)
	}
	// Worst p99 (nearest rank of 3 samples = the largest): node 0's 1.05.
	if f.WorstP99 != 1.05 {
		t.Errorf("worst p99 %v, want 1.05", f.WorstP99)
	}
	// CV: sample 1: mean 0.525, std 0.325 -> 0.619...; sample 2: mean 0.475, std 0.475 -> 1;
	// sample 3: mean 0.6, std 0.1 -> 1/6. Weighted: (0.6190476 + 2 + 0.1666667) / 4.
	wantCV := (0.325/0.525 + 2*1 + 0.1/0.6) / 4
	if math.Abs(f.CV-wantCV) > 1e-12 {
		t.Errorf("cv %v, want %v", f.CV, wantCV)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if q := quantile(xs, 0.5); q != 3 {
		t.Errorf("median %v, want 3", q)
	}
	if q := quantile(xs, 0.99); q != 5 {
		t.Errorf("p99 %v, want 5", q)
	}
	if q := quantile(nil, 0.5); q != 0 {
		t.Errorf("empty %v, want 0", q)
	}
}

// TestGenerateSeeded: the same seed gives the same workload; another seed another; the steady
// workload's requested load at its start is in 60-90 % of the cluster.
func TestGenerateSeeded(t *testing.T) {
	c := Cluster{Nodes: 20, CPU: 16000, Memory: 64 << 30}
	a, err := Generate(WorkSteady, c, time.Hour, 20*time.Minute, 1, DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(WorkSteady, c, time.Hour, 20*time.Minute, 1, DefaultModel)
	d, _ := Generate(WorkSteady, c, time.Hour, 20*time.Minute, 2, DefaultModel)
	if len(a.Pods) != len(b.Pods) || a.Pods[10] != b.Pods[10] {
		t.Fatal("same seed, different workloads")
	}
	if len(a.Pods) == len(d.Pods) && a.Pods[10] == d.Pods[10] {
		t.Fatal("different seeds, same workload")
	}
	var req int64
	for _, p := range a.Pods {
		if p.Arrive < 2*time.Minute && p.Type == "service" {
			req += p.CPU
		}
	}
	if share := float64(req) / float64(c.CPU*int64(c.Nodes)); share < 0.5 || share > 0.95 {
		t.Errorf("initial requested share %.2f, want about 0.6", share)
	}
	if _, err := Generate("nope", c, time.Hour, time.Minute, 1, DefaultModel); err == nil {
		t.Error("unknown workload accepted")
	}
	// The usage of a pod is a pure function of seed, pod and minute.
	u1, m1 := DefaultModel.Usage(7, &a.Pods[3], 90*time.Second)
	u2, m2 := DefaultModel.Usage(7, &a.Pods[3], 90*time.Second)
	if u1 != u2 || m1 != m2 || u1 <= 0 || m1 <= 0 {
		t.Errorf("usage %v %v then %v %v", u1, m1, u2, m2)
	}
}

// TestHotSpellsByHand: node 0 turns hot at minute 2 and cool at minute 5 (3 minutes); node 1
// turns hot at minute 4 and is still hot at the end, minute 6 (2 minutes, counted to the end);
// node 2 never turns hot. Mean 2.5.
func TestHotSpellsByHand(t *testing.T) {
	var samples []Sample
	for m, u := range [][]float64{{0.5, 0.5, 0.1}, {0.95, 0.5, 0.1}, {0.92, 0.5, 0.1}, {0.99, 0.91, 0.1}, {0.9, 1.2, 0.1}, {0.3, 0.95, 0.1}} {
		samples = append(samples, Sample{Minute: float64(m + 1), Span: 1, CPU: u, Mem: []float64{0, 0, 0}, Running: []int{1, 1, 1}})
	}
	if f := Accumulate(samples); f.HotSpell != 2.5 {
		t.Errorf("hot spell mean %v min, want 2.5", f.HotSpell)
	}
}

// TestEvictionFiguresByHand: lineage a evicted at minutes 1 and 5 (twice within 10 minutes), b
// at 2 and 30 (twice, 28 minutes apart), c at 40; a warm-up of 2 minutes leaves out a's first
// eviction; 60 minutes measured, 100 pods placed.
func TestEvictionFiguresByHand(t *testing.T) {
	f := Figures{Minutes: 60, Placed: 100}
	evictionFigures(&f, []eviction{{time.Minute, "a"}, {2 * time.Minute, "b"}, {5 * time.Minute, "a"}, {30 * time.Minute, "b"}, {40 * time.Minute, "c"}}, 2*time.Minute)
	if f.EvictionsPerHour != 4 || f.EvictedShare != 0.05 || f.EvictedAgain != 2 || f.EvictedQuickly != 1 {
		t.Errorf("evictions/h %v (want 4), evictions/placed %v (0.05), evicted again %d (2), twice within 10 min %d (1)",
			f.EvictionsPerHour, f.EvictedShare, f.EvictedAgain, f.EvictedQuickly)
	}
}

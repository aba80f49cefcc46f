package main

import (
	"math"
	"math/rand/v2"
	"time"
)

// Model is the seeded generator of pods' true usage: a pod's usage is its request times a
// ratio drawn once per pod, times the cluster's daily shape, times noise drawn per pod and
// simulated minute. docs/quality/lab.md gives the parameters' sources.
type Model struct {
	// OverFraction of the pods use more cpu than they request: a ratio uniform in
	// [OverMin, OverMax].
	OverFraction, OverMin, OverMax float64
	// The other pods' cpu ratio is log-normal: median CPUMedian, log-space sigma CPUSigma,
	// capped at 1.
	CPUMedian, CPUSigma float64
	// Memory ratio: log-normal, median MemMedian, sigma MemSigma, capped at MemMax.
	MemMedian, MemSigma, MemMax float64
	// NoiseSigma is the log-space sigma of the per-minute cpu noise (memory gets a fifth).
	NoiseSigma float64
	// DailyAmplitude: cpu usage is multiplied by 1 + DailyAmplitude*sin(2 pi t / Day).
	DailyAmplitude float64
	Day            time.Duration

	// Traces, when set, make the model trace-driven (-usage trace): a pod's cpu and memory
	// ratios are those of a Google 2011 task, its cpu follows its workload's PlanetLab VM over
	// the day; none of the parameters above is used. docs/quality/lab.md gives the mapping.
	Traces *Traces
	// CPUScale multiplies every trace cpu ratio (the Google tasks of the sample use a median
	// 12 % of their request: see docs/quality/lab.md); CPUCap bounds a pod's cpu usage at any
	// minute to that many times its request.
	CPUScale, CPUCap float64
}

// Usage models (-usage).
const (
	UsageTrace     = "trace"
	UsageSynthetic = "synthetic"
)

// Name is the model's -usage name.
func (m Model) Name() string {
	if m.Traces != nil {
		return UsageTrace
	}
	return UsageSynthetic
}

// TraceModel is the trace-driven model on the fixtures of dir, PlanetLab's day day, cpu ratios
// scaled by scale.
func TraceModel(dir, day string, scale float64) (Model, error) {
	t, err := LoadTraces(dir, day)
	if err != nil {
		return Model{}, err
	}
	return Model{Traces: t, CPUScale: scale, CPUCap: DefaultCPUCap}, nil
}

// DefaultCPUScale and DefaultCPUCap are -trace-cpu-scale's default and the trace model's cap
// (docs/quality/lab.md says why).
const (
	DefaultCPUScale = 4.0
	DefaultCPUCap   = 4.0
)

// DefaultModel: see docs/quality/lab.md for where each number comes from.
var DefaultModel = Model{
	OverFraction: 0.25, OverMin: 1.2, OverMax: 2.5,
	CPUMedian: 0.45, CPUSigma: 0.5,
	MemMedian: 0.75, MemSigma: 0.2, MemMax: 1.05,
	NoiseSigma:     0.15,
	DailyAmplitude: 0.25, Day: 24 * time.Hour,
}

// ratios draws a pod's cpu and memory usage-to-request ratios.
func (m Model) ratios(r *rand.Rand) (cpu, mem float64) {
	if r.Float64() < m.OverFraction {
		cpu = m.OverMin + r.Float64()*(m.OverMax-m.OverMin)
	} else {
		cpu = math.Min(1, m.CPUMedian*math.Exp(m.CPUSigma*r.NormFloat64()))
	}
	mem = math.Min(m.MemMax, m.MemMedian*math.Exp(m.MemSigma*r.NormFloat64()))
	return cpu, mem
}

// daily is the cluster-wide daily factor at simulated time t.
func (m Model) daily(t time.Duration) float64 {
	if m.Day <= 0 {
		return 1
	}
	return 1 + m.DailyAmplitude*math.Sin(2*math.Pi*float64(t)/float64(m.Day))
}

// Usage is a pod's true usage (cpu millicores, memory bytes) at simulated time t: what it
// requests times its ratios, the daily factor (cpu) and the noise of its minute. The same
// pod, seed and minute always give the same usage.
func (m Model) Usage(seed uint64, p *PodPlan, t time.Duration) (cpu, mem float64) {
	if p.Shape != nil {
		// Trace-driven: the task's ratios, the cpu along the workload's VM shape from the
		// workload's start in the VM's day.
		r := p.CPURatio * p.Shape.At(p.ShapeStart+t)
		if m.CPUCap > 0 {
			r = math.Min(r, m.CPUCap)
		}
		return float64(p.CPU) * r, float64(p.Memory) * p.MemRatio
	}
	minute := uint64(t / time.Minute)
	n1, n2 := gauss2(seed ^ uint64(p.Index)*0x9e3779b97f4a7c15 ^ minute*0xbf58476d1ce4e5b9)
	cpu = float64(p.CPU) * p.CPURatio * m.daily(t) * math.Exp(m.NoiseSigma*n1-m.NoiseSigma*m.NoiseSigma/2)
	mem = float64(p.Memory) * p.MemRatio * math.Exp(m.NoiseSigma/5*n2)
	return cpu, mem
}

// gauss2 returns two standard normal numbers derived from key (splitmix64, Box-Muller).
func gauss2(key uint64) (float64, float64) {
	a, b := splitmix(key), splitmix(key+0x632be59bd9b4e019)
	u1 := (float64(a>>11) + 0.5) / (1 << 53)
	u2 := float64(b>>11) / (1 << 53)
	rad := math.Sqrt(-2 * math.Log(u1))
	return rad * math.Cos(2*math.Pi*u2), rad * math.Sin(2*math.Pi*u2)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

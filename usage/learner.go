// Package usage is the per-workload usage learner: from per-pod usage samples (the metrics
// API's PodMetrics or Prometheus' cAdvisor series) it learns, for each workload (package
// workload) and resource, the distribution of usage/request in a decaying histogram after the
// Vertical Pod Autoscaler's recommender, and estimates a pod's usage before it runs as a
// percentile of its workload's ratio times the pod's request. The node annotator runs the
// learner and keeps it in ConfigMaps (store.go); the agents read them (Follow). README.md states
// the model and how it differs from VPA's.
package usage

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
	"github.com/kube-safe-scheduler/extender/workload"
)

// Config holds the learner's model parameters.
type Config struct {
	// Percentile of a workload's usage/request ratio a pod is estimated at (0 < p <= 1).
	Percentile float64
	// MinObservations is the fewest samples of a workload before its estimate is trusted.
	MinObservations int
	// MinSpan is the shortest time between a workload's first and last sample before its
	// estimate is trusted (one burst of samples is not a history).
	MinSpan time.Duration
	// HalfLife is the time after which a sample counts half as much as a new one.
	HalfLife time.Duration
	// PeakWindow: the memory estimate never falls below the highest memory usage observed in
	// the workload's pods during the current and the previous window of this length.
	PeakWindow time.Duration
	// MaxWorkloads bounds the workloads kept; the least recently observed go first.
	MaxWorkloads int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Percentile: 0.9, MinObservations: 10, MinSpan: 2 * time.Minute, HalfLife: 24 * time.Hour,
		PeakWindow: 24 * time.Hour, MaxWorkloads: 10000}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	errs := []error{
		settings.Range("minObservations", c.MinObservations, 1, 1000000),
		settings.Range("minSpan", c.MinSpan, 0, 30*24*time.Hour),
		settings.Range("halfLife", c.HalfLife, time.Minute, 365*24*time.Hour),
		settings.Range("peakWindow", c.PeakWindow, time.Minute, 30*24*time.Hour),
		settings.Range("maxWorkloads", c.MaxWorkloads, 1, 1000000),
	}
	if !(c.Percentile > 0 && c.Percentile <= 1) {
		errs = append(errs, settings.Fieldf("percentile", "%v is outside (0, 1]", c.Percentile))
	}
	return errors.Join(errs...)
}

// Estimate is a pod's expected usage.
type Estimate struct {
	// CPU in cores and Memory in bytes: the learned estimate when Trusted, else the pod's
	// request.
	CPU, Memory float64
	// Evidence says where the figures come from, for reasons and explanations.
	Evidence string
	// Trusted: the workload has enough history; otherwise CPU and Memory are the request.
	Trusted bool
	// Workload is the pod's workload (zero for none).
	Workload workload.Key
}

// state is what the learner keeps of one workload.
type state struct {
	key      string
	wk       workload.Key
	cpu, mem histogram
	// n counts the samples; first and last are the first and the latest sample's times.
	n           int
	first, last time.Time
	// peak is the highest memory usage in bytes in the window starting at peakStart, prevPeak
	// the previous window's.
	peak, prevPeak float64
	peakStart      time.Time
	// peakWindow is the writer's PeakWindow, for a follower (0: the learner's own).
	peakWindow time.Duration
	// trusted is the writer's verdict on the workload, for a follower.
	trusted bool
	elem    *list.Element
}

// Learner learns per-workload usage. It is safe for concurrent use.
type Learner struct {
	cfg    Config
	owners workload.Owners
	now    func() time.Time

	// follower: the learner only reads what a writer stored (NewFollower); trust and the
	// memory peak's window are the writer's.
	follower bool

	mu  sync.RWMutex
	m   map[workload.Key]*state
	lru *list.List // of *state, most recently observed first
	// changes counts the updates (the store writes when it moved).
	changes uint64
}

// New returns an empty learner; owners resolves controller chains (nil: by names).
func New(cfg Config, owners workload.Owners) (*Learner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid usage learner configuration: %w", err)
	}
	return &Learner{cfg: cfg, owners: owners, now: time.Now, m: map[workload.Key]*state{}, lru: list.New()}, nil
}

// NewFollower returns an empty learner that a reader fills with Follow: it estimates at its
// own percentile (0 < p <= 1) from the histograms the writer stored, and takes from the writer
// whether a workload is trusted (USAGE_MIN_OBSERVATIONS, USAGE_MIN_SPAN) and the window of the
// memory floor (USAGE_PEAK_WINDOW). maxWorkloads bounds what it keeps.
func NewFollower(percentile float64, maxWorkloads int) (*Learner, error) {
	cfg := DefaultConfig()
	cfg.Percentile, cfg.MaxWorkloads = percentile, maxWorkloads
	l, err := New(cfg, nil)
	if err != nil {
		return nil, err
	}
	l.follower = true
	return l, nil
}

// Requests returns a pod's requested cpu in cores and memory in bytes: framework.CPUMemoryRequests
// (kube-scheduler's computation: init containers, sidecars, pod-level requests and overhead),
// in the learner's units (its ratios are usage in cores over the request in cores).
func Requests(pod *corev1.Pod) (cpu, memory float64) {
	milliCPU, mem := framework.CPUMemoryRequests(pod)
	return float64(milliCPU) / 1000, float64(mem)
}

// Observe learns one usage sample of pod at time at: cpu in cores, memory in bytes. A
// resource the pod does not request teaches no ratio (memory still raises the peak). A pod of
// no workload teaches nothing. It returns the pod's workload.
func (l *Learner) Observe(pod *corev1.Pod, cpu, memory float64, at time.Time) workload.Key {
	k := workload.Of(pod, l.owners)
	if k.IsZero() || math.IsNaN(cpu) || math.IsNaN(memory) || cpu < 0 || memory < 0 {
		return k
	}
	reqCPU, reqMem := Requests(pod)
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.getLocked(k)
	if reqCPU > 0 {
		st.cpu.add(cpu/reqCPU, at, l.cfg.HalfLife)
	}
	if reqMem > 0 {
		st.mem.add(memory/reqMem, at, l.cfg.HalfLife)
	}
	st.rollPeak(at, l.cfg.PeakWindow)
	st.peak = max(st.peak, memory)
	if st.n == 0 || at.Before(st.first) {
		st.first = at
	}
	if at.After(st.last) {
		st.last = at
	}
	st.n++
	l.changes++
	return k
}

// getLocked returns the workload's state, created (evicting the least recently observed
// beyond MaxWorkloads) when new, and marks it most recently observed.
func (l *Learner) getLocked(key workload.Key) *state {
	if st, ok := l.m[key]; ok {
		l.lru.MoveToFront(st.elem)
		return st
	}
	for len(l.m) >= l.cfg.MaxWorkloads {
		old := l.lru.Back()
		l.lru.Remove(old)
		delete(l.m, old.Value.(*state).wk)
	}
	st := &state{key: key.String(), wk: key}
	st.elem = l.lru.PushFront(st)
	l.m[key] = st
	return st
}

// rollPeak starts a new peak window when at is past the current one.
func (st *state) rollPeak(at time.Time, w time.Duration) {
	switch {
	case st.peakStart.IsZero():
		st.peakStart = at
	case at.Sub(st.peakStart) >= 2*w:
		st.prevPeak, st.peak, st.peakStart = 0, 0, at
	case at.Sub(st.peakStart) >= w:
		st.prevPeak, st.peak, st.peakStart = st.peak, 0, st.peakStart.Add(w)
	}
}

// recentPeak is the highest memory usage of the current and the previous window at now.
func (st *state) recentPeak(now time.Time, w time.Duration) float64 {
	if st.peakWindow > 0 {
		w = st.peakWindow
	}
	switch age := now.Sub(st.peakStart); {
	case age >= 2*w:
		return 0
	case age >= w:
		return st.peak
	}
	return max(st.peak, st.prevPeak)
}

// Estimate returns pod's expected usage (see Estimate): its request scaled by the workload's
// Percentile ratio, the memory no lower than the workload's recent peak, once the workload has
// MinObservations samples over at least MinSpan; otherwise the request.
func (l *Learner) Estimate(pod *corev1.Pod) Estimate {
	reqCPU, reqMem := Requests(pod)
	w := l.Lookup(pod)
	e := Estimate{CPU: reqCPU, Memory: reqMem, Workload: w.Workload, Trusted: w.Trusted}
	if w.Trusted {
		e.CPU, e.Memory = w.Apply(reqCPU, reqMem)
	}
	e.Evidence = l.evidence(w, reqCPU, reqMem)
	return e
}

// Learned is what the learner knows of a pod's workload, as Lookup reads it: the figures of
// Estimate without its evidence, for a caller that estimates many pods (an agent's hot path).
type Learned struct {
	// Workload is the pod's workload (zero for none); Key its String, "" for none.
	Workload workload.Key
	Key      string
	// CPU and Memory are the Percentile of the workload's usage/request ratio (0 when the
	// resource has no sample); Peak the memory floor in bytes.
	CPU, Memory, Peak float64
	// N is the workload's samples (0: not observed); Span the time from its first to its
	// latest.
	N    int
	Span time.Duration
	// Trusted: the estimate may replace the request.
	Trusted bool
	// Percentile is the learner's, 0 < p <= 1.
	Percentile float64
}

// Apply returns the estimate of a pod requesting cpu (any unit) and memory bytes: each request
// times its ratio (a resource without samples keeps its request), the memory no lower than the
// workload's recent peak. Only meaningful when Trusted.
func (w Learned) Apply(cpu, memory float64) (float64, float64) {
	if w.CPU > 0 {
		cpu *= w.CPU
	}
	if w.Memory > 0 {
		memory *= w.Memory
	}
	return cpu, max(memory, w.Peak)
}

// Lookup returns what the learner knows of pod's workload. It allocates nothing (the
// workload's key is looked up as a struct; the percentiles are read from the histograms).
func (l *Learner) Lookup(pod *corev1.Pod) Learned {
	w := Learned{Workload: workload.Of(pod, l.owners), Percentile: l.cfg.Percentile}
	if w.Workload.IsZero() {
		return w
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	st, ok := l.m[w.Workload]
	if !ok {
		return w
	}
	w.Key, w.N, w.Span = st.key, st.n, st.last.Sub(st.first)
	if l.follower {
		w.Trusted = st.trusted
	} else {
		w.Trusted = st.n >= l.cfg.MinObservations && w.Span >= l.cfg.MinSpan
	}
	if !w.Trusted {
		return w
	}
	if !st.cpu.empty() {
		w.CPU = st.cpu.percentile(l.cfg.Percentile)
	}
	if !st.mem.empty() {
		w.Memory = st.mem.percentile(l.cfg.Percentile)
	}
	w.Peak = st.recentPeak(l.now(), l.cfg.PeakWindow)
	return w
}

// Evidence says where pod's estimate comes from, for reasons and explanations: "p90 of 240
// observations of deployment shop/web, request 1 cpu 512.0Mi memory", or why its request is
// kept. It allocates: call it only to write one.
func (l *Learner) Evidence(pod *corev1.Pod) string {
	reqCPU, reqMem := Requests(pod)
	w := l.Lookup(pod)
	return l.evidence(w, reqCPU, reqMem)
}

// evidence writes Estimate's Evidence for w.
func (l *Learner) evidence(w Learned, reqCPU, reqMem float64) string {
	k := w.Workload
	switch {
	case k.IsZero():
		return "no workload (no controller, no app label): the request"
	case w.N == 0:
		return fmt.Sprintf("%s not observed yet: the request", describe(k))
	case !w.Trusted && l.follower:
		// A follower's trust is the writer's verdict, whose minimums may differ from its own.
		return fmt.Sprintf("%d observations of %s, not trusted yet by the learner: the request", w.N, describe(k))
	case !w.Trusted && w.N < l.cfg.MinObservations:
		return fmt.Sprintf("%d observations of %s, fewer than %d: the request", w.N, describe(k), l.cfg.MinObservations)
	case !w.Trusted:
		return fmt.Sprintf("%d observations of %s over %s, less than %s: the request", w.N, describe(k),
			w.Span.Round(time.Second), l.cfg.MinSpan)
	}
	floor, memory := "", reqMem
	if w.Memory > 0 {
		memory *= w.Memory
	}
	if w.Peak > memory {
		floor = ", memory at the recent peak"
	}
	return fmt.Sprintf("p%s of %d observations of %s, request %s cpu %s memory%s", pct(w.Percentile), w.N, describe(k),
		fmtCores(reqCPU), fmtBytes(reqMem), floor)
}

// describe is "deployment shop/web".
func describe(k workload.Key) string { return k.Kind + " " + k.Namespace + "/" + k.Name }

func pct(p float64) string { return strconv.FormatFloat(100*p, 'f', -1, 64) }

func fmtCores(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func fmtBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return strconv.FormatFloat(v/(1<<30), 'f', 2, 64) + "Gi"
	case v >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + "Mi"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// Version changes whenever an estimate may have: a caller that remembers answers computed
// from estimates keys them by it.
func (l *Learner) Version() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.changes
}

// Len is the number of workloads kept.
func (l *Learner) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.m)
}

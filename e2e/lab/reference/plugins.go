package reference

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Plugin names, as the lab's configurations enable them.
const (
	OracleName        = "LabOracle"
	WorkloadLevelName = "LabWorkloadLevel"
)

// overLevel is the utilization above which usage counts as overload volume (the lab's 90 %).
const overLevel = 0.9

// planSource reads the plan once it exists: the lab writes it when the run's clock starts,
// after the scheduler has started.
type planSource struct {
	path string
	now  func() time.Time

	mu   sync.Mutex
	plan *Plan
}

func newPlanSource() (*planSource, error) {
	path := os.Getenv(PlanEnv)
	if path == "" {
		return nil, fmt.Errorf("%s is not set: the lab's reference plugins need the file of the run's plan", PlanEnv)
	}
	return &planSource{path: path, now: time.Now}, nil
}

func (s *planSource) get() (*Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plan != nil {
		return s.plan, nil
	}
	p, err := ReadPlan(s.path)
	if err != nil {
		return nil, fmt.Errorf("the run's plan (%s): %w", PlanEnv, err)
	}
	s.plan = p
	return p, nil
}

// allocatable is a node's allocatable cpu (millicores) and memory (bytes).
func allocatable(n *v1.Node) (cpu, mem float64) {
	return float64(n.Status.Allocatable.Cpu().MilliValue()), float64(n.Status.Allocatable.Memory().Value())
}

// Oracle is the clairvoyant greedy placement: for the pod being scheduled it sums, over the
// simulated minutes the pod will run if bound now, the usage of every pod on each candidate node
// that will still be running then (each from when this plugin reserved it, for its given run
// time), and scores first by the overload volume the pod adds (usage above 90 % of allocatable,
// cpu and memory each as a share of the node, per minute), then by the highest utilization the
// node reaches during the pod's life. Filtering stays kube-scheduler's (requests must fit).
type Oracle struct {
	src *planSource

	mu     sync.Mutex
	starts map[string]float64 // pod name: simulated minute it was reserved
}

var (
	_ fwk.ScorePlugin   = (*Oracle)(nil)
	_ fwk.ReservePlugin = (*Oracle)(nil)
)

// NewOracle is the Oracle's factory (no arguments; the plan file from LAB_PLAN).
func NewOracle(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	src, err := newPlanSource()
	if err != nil {
		return nil, err
	}
	return &Oracle{src: src, starts: map[string]float64{}}, nil
}

// Name implements fwk.Plugin.
func (pl *Oracle) Name() string { return OracleName }

// Reserve records when the pod starts running (simulated minutes).
func (pl *Oracle) Reserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) *fwk.Status {
	plan, err := pl.src.get()
	if err != nil {
		return nil // Score already failed; nothing to record
	}
	pl.mu.Lock()
	pl.starts[p.Name] = plan.Now(pl.src.now())
	pl.mu.Unlock()
	return nil
}

// Unreserve forgets the pod's start.
func (pl *Oracle) Unreserve(_ context.Context, _ fwk.CycleState, p *v1.Pod, _ string) {
	pl.mu.Lock()
	delete(pl.starts, p.Name)
	pl.mu.Unlock()
}

// start is when pod q started (simulated minutes): when this plugin reserved it, else its
// status's start time, else now.
func (pl *Oracle) start(plan *Plan, q *v1.Pod, now float64) float64 {
	pl.mu.Lock()
	s, ok := pl.starts[q.Name]
	pl.mu.Unlock()
	if ok {
		return s
	}
	if q.Status.StartTime != nil {
		return plan.Now(q.Status.StartTime.Time)
	}
	return now
}

// peakScale encodes the peak utilization (basis points) below the added volume in one cost.
const peakScale = 100000

// Score implements fwk.ScorePlugin: a cost (lower is better), which NormalizeScore turns into
// kube-scheduler's 0..100.
func (pl *Oracle) Score(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	plan, err := pl.src.get()
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	added, peak := pl.cost(plan, pod, ni, plan.Now(pl.src.now()))
	return int64(math.Round(added*1e6))*peakScale + int64(math.Min(peakScale-1, math.Round(peak*1e4))), nil
}

// cost is the overload volume pod adds to the node of ni if it starts at simulated minute now
// (node-minutes: cpu and memory above 90 %, each over allocatable), and the node's highest
// utilization (cpu or memory) during the pod's life with it.
func (pl *Oracle) cost(plan *Plan, pod *v1.Pod, ni fwk.NodeInfo, now float64) (added, peak float64) {
	u := plan.Pods[pod.Name]
	if u == nil {
		return 0, 0 // not the lab's (a replacement, a system pod): no knowledge, no preference
	}
	allocCPU, allocMem := allocatable(ni.Node())
	if allocCPU <= 0 || allocMem <= 0 {
		return 0, 0
	}
	first, last := int(math.Floor(now)), min(plan.Minutes, int(math.Ceil(now+u.Run)))
	if last <= first {
		return 0, 0
	}
	baseCPU, baseMem := make([]float64, last-first), make([]float64, last-first)
	for _, pi := range ni.GetPods() {
		q := pi.GetPod()
		qu := plan.Pods[q.Name]
		if qu == nil || q.Name == pod.Name {
			continue
		}
		s := pl.start(plan, q, now)
		for m := first; m < last; m++ {
			if mid := float64(m) + 0.5; mid < s || mid >= s+qu.Run {
				continue
			}
			c, mem := qu.At(m)
			baseCPU[m-first] += c
			baseMem[m-first] += mem
		}
	}
	over := func(x, alloc float64) float64 { return math.Max(0, x-overLevel*alloc) / alloc }
	for m := first; m < last; m++ {
		c, mem := u.At(m)
		bc, bm := baseCPU[m-first], baseMem[m-first]
		added += over(bc+c, allocCPU) - over(bc, allocCPU) + over(bm+mem, allocMem) - over(bm, allocMem)
		peak = math.Max(peak, math.Max((bc+c)/allocCPU, (bm+mem)/allocMem))
	}
	return added, peak
}

// ScoreExtensions implements fwk.ScorePlugin.
func (pl *Oracle) ScoreExtensions() fwk.ScoreExtensions { return oracleNormalize{} }

type oracleNormalize struct{}

// NormalizeScore turns costs into scores: the nodes that add the least volume score 50-100 (the
// lowest peak 100), the others 0-49 by the volume they add, so that the highest score is the
// least volume, then the lowest peak.
func (oracleNormalize) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	if len(scores) == 0 {
		return nil
	}
	minV, maxV := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		v := s.Score / peakScale
		minV, maxV = min(minV, v), max(maxV, v)
	}
	minP, maxP := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s.Score/peakScale == minV {
			p := s.Score % peakScale
			minP, maxP = min(minP, p), max(maxP, p)
		}
	}
	for i, s := range scores {
		v, p := s.Score/peakScale, s.Score%peakScale
		switch {
		case v == minV && maxP == minP:
			scores[i].Score = fwk.MaxNodeScore
		case v == minV:
			scores[i].Score = 50 + 50*(maxP-p)/(maxP-minP)
		default:
			scores[i].Score = 49 * (maxV - v) / (maxV - minV)
		}
	}
	return nil
}

// WorkloadLevel balances the nodes on the true mean usage of each pod's workload (the mean, over
// its pods, of each pod's mean usage over its life): a node's load is the sum of its pods'
// workload means, and the pod goes where its own workload's mean leaves the highest of cpu and
// memory utilization lowest. It knows the level of every workload and nothing of time: the
// "perfect learner" of a usage learner that keeps one figure per workload.
type WorkloadLevel struct {
	src *planSource

	mu    sync.Mutex
	means map[string][2]float64
}

var _ fwk.ScorePlugin = (*WorkloadLevel)(nil)

// NewWorkloadLevel is WorkloadLevel's factory (no arguments; the plan file from LAB_PLAN).
func NewWorkloadLevel(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	src, err := newPlanSource()
	if err != nil {
		return nil, err
	}
	return &WorkloadLevel{src: src}, nil
}

// Name implements fwk.Plugin.
func (pl *WorkloadLevel) Name() string { return WorkloadLevelName }

func (pl *WorkloadLevel) levels() (map[string][2]float64, *Plan, error) {
	plan, err := pl.src.get()
	if err != nil {
		return nil, nil, err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.means == nil {
		pl.means = plan.WorkloadMeans()
	}
	return pl.means, plan, nil
}

// level is pod q's workload's mean usage, or its requests when the plan does not know it.
func level(means map[string][2]float64, plan *Plan, q *v1.Pod) (cpu, mem float64) {
	if u := plan.Pods[q.Name]; u != nil {
		if m, ok := means[u.Workload]; ok {
			return m[0], m[1]
		}
	}
	for _, c := range q.Spec.Containers {
		cpu += float64(c.Resources.Requests.Cpu().MilliValue())
		mem += float64(c.Resources.Requests.Memory().Value())
	}
	return cpu, mem
}

// Score implements fwk.ScorePlugin: the node's utilization with the pod, in basis points (lower
// is better), which NormalizeScore turns into 0..100.
func (pl *WorkloadLevel) Score(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	means, plan, err := pl.levels()
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	allocCPU, allocMem := allocatable(ni.Node())
	if allocCPU <= 0 || allocMem <= 0 {
		return math.MaxInt32, nil
	}
	cpu, mem := level(means, plan, pod)
	for _, pi := range ni.GetPods() {
		if q := pi.GetPod(); q.Name != pod.Name {
			c, m := level(means, plan, q)
			cpu, mem = cpu+c, mem+m
		}
	}
	return int64(math.Round(1e4 * math.Max(cpu/allocCPU, mem/allocMem))), nil
}

// ScoreExtensions implements fwk.ScorePlugin.
func (pl *WorkloadLevel) ScoreExtensions() fwk.ScoreExtensions { return lowestFirst{} }

type lowestFirst struct{}

// NormalizeScore maps the lowest utilization to 100 and the highest to 0, linearly.
func (lowestFirst) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i, s := range scores {
		if hi == lo {
			scores[i].Score = fwk.MaxNodeScore
			continue
		}
		scores[i].Score = fwk.MaxNodeScore * (hi - s.Score) / (hi - lo)
	}
	return nil
}

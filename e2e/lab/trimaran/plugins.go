package trimaran

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/yaml"
)

// Plugin names, as scheduler-plugins registers them.
const (
	TargetLoadPackingName          = "TargetLoadPacking"
	LoadVariationRiskBalancingName = "LoadVariationRiskBalancing"
)

// TargetLoadPackingArgs are TargetLoadPacking's arguments (apis/config/v1 TargetLoadPackingArgs,
// without TrimaranSpec: the statistics come from Settings).
type TargetLoadPackingArgs struct {
	TargetUtilization         *int64          `json:"targetUtilization,omitempty"`
	DefaultRequests           v1.ResourceList `json:"defaultRequests,omitempty"`
	DefaultRequestsMultiplier *string         `json:"defaultRequestsMultiplier,omitempty"`
}

// LoadVariationRiskBalancingArgs are LoadVariationRiskBalancing's arguments (apis/config/v1
// LoadVariationRiskBalancingArgs, without TrimaranSpec).
type LoadVariationRiskBalancingArgs struct {
	SafeVarianceMargin      *float64 `json:"safeVarianceMargin,omitempty"`
	SafeVarianceSensitivity *float64 `json:"safeVarianceSensitivity,omitempty"`
}

// Defaults of apis/config/v1/defaults.go (DefaultTargetUtilizationPercent,
// DefaultRequestsMilliCores, DefaultRequestsMultiplier, DefaultSafeVarianceMargin,
// DefaultSafeVarianceSensitivity).
const (
	defaultTargetUtilization       = 40
	defaultRequestsMilliCores      = 1000
	defaultRequestsMultiplier      = "1.5"
	defaultSafeVarianceMargin      = 1.0
	defaultSafeVarianceSensitivity = 1.0
)

// decode fills out from a plugin's pluginConfig args (kube-scheduler hands out-of-tree plugins
// their args as runtime.Unknown); an unknown field is an error naming it.
func decode(name string, obj runtime.Object, out any) error {
	if obj == nil {
		return nil
	}
	u, ok := obj.(*runtime.Unknown)
	if !ok {
		return fmt.Errorf("%s: want args of type runtime.Unknown, got %T", name, obj)
	}
	raw := bytes.TrimSpace(u.Raw)
	if len(raw) == 0 {
		return nil
	}
	if u.ContentType == runtime.ContentTypeYAML {
		var err error
		if raw, err = yaml.YAMLToJSON(raw); err != nil {
			return fmt.Errorf("%s args: %w", name, err)
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		return fmt.Errorf("%s args: %w", name, err)
	}
	return nil
}

// TargetLoadPacking is scheduler-plugins' TargetLoadPacking
// (pkg/trimaran/targetloadpacking/targetloadpacking.go): a best-fit packing of the nodes' cpu
// utilization towards targetUtilization percent.
type TargetLoadPacking struct {
	collector      *Collector
	cache          *PodAssignCache
	target         int64
	defaultMilli   int64
	requestsFactor float64
}

var _ fwk.ScorePlugin = (*TargetLoadPacking)(nil)

// setup starts the statistics from the environment's Settings.
func setup(ctx context.Context) (Settings, *Collector, error) {
	s, err := SettingsFromEnv(os.Getenv)
	if err != nil {
		return s, nil, err
	}
	return s, StartCollector(ctx, s), nil
}

// NewTargetLoadPacking is TargetLoadPacking's factory (targetloadpacking.go New with the
// defaults of SetDefaults_TargetLoadPackingArgs).
func NewTargetLoadPacking(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	pl, err := newTargetLoadPacking(obj)
	if err != nil {
		return nil, err
	}
	s, c, err := setup(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TargetLoadPackingName, err)
	}
	pl.collector = c
	pl.cache = newPodAssignCache(s.ReportingInterval)
	if err := pl.cache.addToHandle(h); err != nil {
		return nil, fmt.Errorf("%s: %w", TargetLoadPackingName, err)
	}
	pl.cache.start(ctx, s.CacheCleanup)
	return pl, nil
}

// newTargetLoadPacking decodes and defaults the args (defaults.go
// SetDefaults_TargetLoadPackingArgs: a missing or non-positive targetUtilization is 40, missing
// defaultRequests 1000m cpu, a missing multiplier 1.5).
func newTargetLoadPacking(obj runtime.Object) (*TargetLoadPacking, error) {
	var args TargetLoadPackingArgs
	if err := decode(TargetLoadPackingName, obj, &args); err != nil {
		return nil, err
	}
	pl := &TargetLoadPacking{target: defaultTargetUtilization, defaultMilli: defaultRequestsMilliCores}
	if args.TargetUtilization != nil && *args.TargetUtilization > 0 {
		pl.target = *args.TargetUtilization
	}
	if args.DefaultRequests != nil {
		pl.defaultMilli = args.DefaultRequests.Cpu().MilliValue()
	}
	mult := defaultRequestsMultiplier
	if args.DefaultRequestsMultiplier != nil {
		mult = *args.DefaultRequestsMultiplier
	}
	f, err := strconv.ParseFloat(mult, 64)
	if err != nil {
		return nil, fmt.Errorf("%s args: defaultRequestsMultiplier %q is not a number: %w", TargetLoadPackingName, mult, err)
	}
	pl.requestsFactor = f
	return pl, nil
}

// Name implements fwk.Plugin.
func (pl *TargetLoadPacking) Name() string { return TargetLoadPackingName }

// ScoreExtensions implements fwk.ScorePlugin: TargetLoadPacking's NormalizeScore does nothing.
func (pl *TargetLoadPacking) ScoreExtensions() fwk.ScoreExtensions { return nil }

// predictContainer is targetloadpacking.go PredictUtilisation: a container's cpu limit, else its
// request times the multiplier (rounded), else the default request.
func (pl *TargetLoadPacking) predictContainer(c *v1.Container) int64 {
	if _, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		return c.Resources.Limits.Cpu().MilliValue()
	}
	if _, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		return int64(math.Round(float64(c.Resources.Requests.Cpu().MilliValue()) * pl.requestsFactor))
	}
	return pl.defaultMilli
}

// predictPod is a pod's predicted cpu: its containers' and its cpu overhead (init containers
// are not counted, as in Score).
func (pl *TargetLoadPacking) predictPod(pod *v1.Pod) int64 {
	var sum int64
	for i := range pod.Spec.Containers {
		sum += pl.predictContainer(&pod.Spec.Containers[i])
	}
	return sum + pod.Spec.Overhead.Cpu().MilliValue()
}

// Score is targetloadpacking.go Score. The predicted utilization U (percent) is the node's
// average cpu utilization over the window, plus the pod's predicted cpu and that of the pods
// bound since the metrics (missingCPU), over the node's cpu capacity; with target T:
// U <= T scores round((100-T) U/T + T); T < U <= 100 scores round(T (100-U)/(100-T));
// U > 100 scores 0; a node without statistics scores 0.
func (pl *TargetLoadPacking) Score(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	node := ni.Node()
	all := pl.collector.Latest()
	metrics := all.NodeMetrics(node)
	if metrics == nil {
		return fwk.MinNodeScore, nil
	}
	cur := pl.predictPod(pod)
	var util float64
	found := false
	for _, m := range metrics {
		if m.Type == CPU && m.Operator == Average {
			util, found = m.Value, true
		}
	}
	if !found {
		return fwk.MinNodeScore, nil
	}
	capMilli := float64(node.Status.Capacity.Cpu().MilliValue())
	utilMilli := util / 100 * capMilli
	missing := pl.cache.missingCPU(node.Name, all.Window.End, pl.predictPod)
	score := tlpScore(pl.target, capMilli, utilMilli+float64(cur)+float64(missing))
	klog.FromContext(ctx).V(1).Info("TargetLoadPacking", "pod", klog.KObj(pod), "node", node.Name,
		"utilPercent", util, "podMilli", cur, "missingMilli", missing, "score", score)
	return score, nil
}

// tlpScore is the end of targetloadpacking.go Score: the score of a node of capMilli cpu with
// predictedMilli predicted in use, for target percent.
func tlpScore(target int64, capMilli, predictedMilli float64) int64 {
	var predicted float64
	if capMilli != 0 {
		predicted = 100 * predictedMilli / capMilli
	}
	t := float64(target)
	if predicted > t {
		if predicted > 100 {
			return fwk.MinNodeScore
		}
		return int64(math.Round(t * (100 - predicted) / (100 - t)))
	}
	return int64(math.Round((100-t)*predicted/t + t))
}

// LoadVariationRiskBalancing is scheduler-plugins' LoadVariationRiskBalancing
// (pkg/trimaran/loadvariationriskbalancing): it prefers the nodes of least risk, the mean plus
// a margin of the standard deviation of their measured utilization with the pod's request.
type LoadVariationRiskBalancing struct {
	collector           *Collector
	margin, sensitivity float64
}

var _ fwk.ScorePlugin = (*LoadVariationRiskBalancing)(nil)

// NewLoadVariationRiskBalancing is LoadVariationRiskBalancing's factory
// (loadvariationriskbalancing.go New). scheduler-plugins' New also registers a
// PodAssignEventHandler, which its Score never reads: it is left out.
func NewLoadVariationRiskBalancing(ctx context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	pl, err := newLoadVariationRiskBalancing(obj)
	if err != nil {
		return nil, err
	}
	_, c, err := setup(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", LoadVariationRiskBalancingName, err)
	}
	pl.collector = c
	return pl, nil
}

// newLoadVariationRiskBalancing decodes and defaults the args (defaults.go
// SetDefaults_LoadVariationRiskBalancingArgs: a missing or negative margin or sensitivity is 1).
func newLoadVariationRiskBalancing(obj runtime.Object) (*LoadVariationRiskBalancing, error) {
	var args LoadVariationRiskBalancingArgs
	if err := decode(LoadVariationRiskBalancingName, obj, &args); err != nil {
		return nil, err
	}
	pl := &LoadVariationRiskBalancing{margin: defaultSafeVarianceMargin, sensitivity: defaultSafeVarianceSensitivity}
	if args.SafeVarianceMargin != nil && *args.SafeVarianceMargin >= 0 {
		pl.margin = *args.SafeVarianceMargin
	}
	if args.SafeVarianceSensitivity != nil && *args.SafeVarianceSensitivity >= 0 {
		pl.sensitivity = *args.SafeVarianceSensitivity
	}
	return pl, nil
}

// Name implements fwk.Plugin.
func (pl *LoadVariationRiskBalancing) Name() string { return LoadVariationRiskBalancingName }

// ScoreExtensions implements fwk.ScorePlugin: LoadVariationRiskBalancing's NormalizeScore does
// nothing.
func (pl *LoadVariationRiskBalancing) ScoreExtensions() fwk.ScoreExtensions { return nil }

// resourceStats is resourcestats.go ResourceStats: used average and standard deviation, the
// pod's request and the node's capacity, in millicores (cpu) or MiB (memory).
type resourceStats struct {
	usedAvg, usedStdev, req, capacity float64
}

// podRequests is resourcestats.go GetResourceRequested for cpu (millicores) and memory (bytes):
// the containers' requests summed, at least each init container's, plus the overhead.
func podRequests(pod *v1.Pod) (milliCPU, memory int64) {
	for _, c := range pod.Spec.Containers {
		milliCPU += c.Resources.Requests.Cpu().MilliValue()
		memory += c.Resources.Requests.Memory().Value()
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
			milliCPU = max(milliCPU, q.MilliValue())
		}
		if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
			memory = max(memory, q.Value())
		}
	}
	if pod.Spec.Overhead != nil {
		milliCPU += pod.Spec.Overhead.Cpu().MilliValue()
		memory += pod.Spec.Overhead.Memory().Value()
	}
	return milliCPU, memory
}

// createResourceStats is resourcestats.go CreateResourceStats with GetResourceData: the node's
// statistics of one resource type (the average, else 0; the standard deviation, else 0) scaled
// from percent to the node's allocatable; ok is false when neither is there.
func createResourceStats(metrics []Metric, node *v1.Node, reqMilliCPU, reqMemory int64, typ string) (resourceStats, bool) {
	var avg, std float64
	found := false
	for _, m := range metrics {
		if m.Type != typ {
			continue
		}
		switch m.Operator {
		case Average:
			avg = m.Value
		case Std:
			std = m.Value
		}
		found = true
	}
	if !found {
		return resourceStats{}, false
	}
	var rs resourceStats
	if typ == CPU {
		rs.capacity = float64(node.Status.Allocatable.Cpu().MilliValue())
		rs.req = float64(reqMilliCPU)
	} else {
		rs.capacity = float64(node.Status.Allocatable.Memory().Value()) / 1024 / 1024 // MegaFactor
		rs.req = float64(reqMemory) / 1024 / 1024
	}
	rs.usedAvg = avg * rs.capacity / 100
	rs.usedStdev = std * rs.capacity / 100
	return rs, true
}

// computeScore is loadvariationriskbalancing/analysis.go computeScore with resourcestats.go
// GetMuSigma: mu = (used average + request)/capacity and sigma = used deviation/capacity, each
// clipped to [0, 1]; sigma' = min(1, margin sigma^(1/sensitivity)); risk = (mu + sigma')/2;
// score (1 - risk) 100.
func computeScore(rs resourceStats, margin, sensitivity float64) float64 {
	if rs.capacity <= 0 {
		return 0
	}
	rs.req = max(rs.req, 0)
	rs.usedAvg = max(min(rs.usedAvg, rs.capacity), 0)
	rs.usedStdev = max(min(rs.usedStdev, rs.capacity), 0)
	mu := max(min((rs.usedAvg+rs.req)/rs.capacity, 1), 0)
	sigma := max(min(rs.usedStdev/rs.capacity, 1), 0)
	if sensitivity >= 0 {
		sigma = math.Pow(sigma, 1/sensitivity)
	}
	sigma = max(min(sigma*margin, 1), 0)
	risk := (mu + sigma) / 2
	return (1 - risk) * float64(fwk.MaxNodeScore)
}

// Score is loadvariationriskbalancing.go Score: the cpu and memory scores of computeScore, the
// lower of the two when both have statistics, else the one that has (0 when none has); a
// node without statistics scores 0. Pods bound since the statistics are not counted.
func (pl *LoadVariationRiskBalancing) Score(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	node := ni.Node()
	metrics := pl.collector.Latest().NodeMetrics(node)
	if metrics == nil {
		return fwk.MinNodeScore, nil
	}
	reqCPU, reqMem := podRequests(pod)
	var cpuScore, memScore float64
	cpuStats, cpuOK := createResourceStats(metrics, node, reqCPU, reqMem, CPU)
	if cpuOK {
		cpuScore = computeScore(cpuStats, pl.margin, pl.sensitivity)
	}
	memStats, memOK := createResourceStats(metrics, node, reqCPU, reqMem, Memory)
	if memOK {
		memScore = computeScore(memStats, pl.margin, pl.sensitivity)
	}
	total := max(cpuScore, memScore)
	if cpuOK && memOK {
		total = min(cpuScore, memScore)
	}
	klog.FromContext(ctx).V(1).Info("LoadVariationRiskBalancing", "pod", klog.KObj(pod), "node", node.Name,
		"cpuUsedAvg", cpuStats.usedAvg, "cpuUsedStdev", cpuStats.usedStdev, "cpuScore", cpuScore, "memoryScore", memScore, "score", math.Round(total))
	return int64(math.Round(total)), nil
}

// Package safe is the safe agent: it places pods by what nodes really use, not by what their
// pods requested. Each node's annotations carry the measured mean and standard deviation of its
// free cpu and memory (and optionally a forecast); the agent predicts each resource's
// utilization with the pod added, fits a Beta distribution to it, and judges the probability
// (the risk) that the utilization exceeds a threshold. See README.md for the formulas.
//
// Functions: the filter safe-overload rejects the nodes whose risk exceeds the acceptable risk;
// the priority safe-overload prefers low risk; the priority safe-balance prefers low, steady
// utilization.
package safe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Name is the agent's name and build tag.
const Name = "safe"

// Function names: the routes /scheduler/predicates/safe-overload,
// /scheduler/priorities/safe-overload and /scheduler/priorities/safe-balance.
const (
	FilterOverload   = "safe-overload"
	PriorityOverload = "safe-overload"
	PriorityBalance  = "safe-balance"
)

// Node annotations read by the agent. Free amounts and their standard deviations are in
// millicores for cpu and bytes for memory. The forecast keys are read in the spelling deployed
// annotators write ("forcasted") first, then in the correct one.
const (
	AnnotationMeanFreeCPU              = "mean-free-cpu"
	AnnotationStdFreeCPU               = "std-free-cpu"
	AnnotationForecastFreeCPU          = "forecasted-free-cpu"
	AnnotationForecastFreeCPULegacy    = "forcasted-free-cpu"
	AnnotationMeanFreeMemory           = "mean-free-memory"
	AnnotationStdFreeMemory            = "std-free-memory"
	AnnotationForecastFreeMemory       = "forecasted-free-memory"
	AnnotationForecastFreeMemoryLegacy = "forcasted-free-memory"
	// AnnotationStatisticsTimestamp is when the node annotator computed the statistics (RFC
	// 3339); annotators of the original design write none.
	AnnotationStatisticsTimestamp = "statistics-timestamp"
	// AnnotationRequestedCPU and AnnotationRequestedMemory are the summed requests of the
	// node's pods (millicores, bytes) that the node annotator writes: a node without statistics
	// is judged from them when the agent has no cluster view.
	AnnotationRequestedCPU = "requested-cpu"
	// AnnotationStatisticsRequestedCPU and AnnotationStatisticsRequestedMemory are the node's
	// requests when its statistics were written (node annotator): the load placed since the
	// statistics is then the growth of the requests since, pods gone counted off.
	AnnotationStatisticsRequestedCPU    = "statistics-requested-cpu"
	AnnotationStatisticsRequestedMemory = "statistics-requested-memory"
	AnnotationRequestedMemory           = "requested-memory"
)

// StalePolicy says what the agent does with a node whose usage statistics are stale.
type StalePolicy string

// Stale policies.
const (
	// StaleIgnore judges the node as having no statistics: it passes the filter and scores as
	// a node without statistics.
	StaleIgnore StalePolicy = "ignore"
	// StaleReject makes the filter reject the node (the priorities score it as StaleIgnore).
	StaleReject StalePolicy = "reject"
)

// UnmarshalText reads a policy in any case; Config.Validate checks it.
func (p *StalePolicy) UnmarshalText(text []byte) error {
	*p = StalePolicy(strings.ToLower(strings.TrimSpace(string(text))))
	return nil
}

// FilterMode says what the filter safe-overload judges.
type FilterMode string

// Filter modes.
const (
	// FilterNode judges the node as it is, without the pod: the filter rejects the nodes whose
	// risk (measured usage plus the load placed since the statistics) already exceeds the
	// acceptable risk, whatever the pod's size, as koordinator's LoadAware filter does. The pod's
	// request counts in the priorities. A large pod is not kept off every node that a small one
	// may still take (the starvation of FilterPod).
	FilterNode FilterMode = "node"
	// FilterPod judges the node with the pod's whole request added to its measured usage (the
	// original design). It rejects large pods on nodes that accept small ones: on a busy
	// cluster small pods take every room that frees and large pods wait for ever.
	FilterPod FilterMode = "pod"
	// FilterAdaptive judges as FilterPod while some node that can hold the pod's request
	// accepts it, and as FilterNode when none does: small pods keep off the nodes they would
	// push over the threshold, and a large pod that fits nowhere within the acceptable risk
	// goes to a node not already at risk instead of waiting for ever.
	FilterAdaptive FilterMode = "adaptive"
	// FilterOff passes every node: only the priorities act.
	FilterOff FilterMode = "off"
)

// PlacedMode says how the load placed since a node's statistics is counted.
type PlacedMode string

// Placed modes.
const (
	// PlacedGrowth counts the growth of the node's requests since its statistics (pods placed
	// less pods gone, at least 0) when the annotator wrote the requests with them
	// (statistics-requested-*), else the pods placed since, as PlacedArrivals.
	PlacedGrowth PlacedMode = "growth"
	// PlacedArrivals counts the requests of the pods placed since the statistics-timestamp,
	// whether or not others left since.
	PlacedArrivals PlacedMode = "arrivals"
)

// BalanceScale says how safe-balance maps its objective to scores.
type BalanceScale string

// Balance scales.
const (
	// BalanceAbsolute scores each node on the fixed scale of the original design:
	// floor((1 - obj) * 10 + 0.5), so nodes whose objectives differ by less than 0.1 (a fifth
	// of the node's capacity in mu) mostly score alike.
	BalanceAbsolute BalanceScale = "absolute"
	// BalanceRelative maps the candidates' objectives onto the whole 0-10 range: the lowest
	// scores 10, the highest 0, the others in proportion (rounded half up), as kube-scheduler's
	// own NormalizeScore does for many plugins. Nodes without statistics score 0 and do not
	// count in the range; when every node's objective is the same, each scores 10.
	BalanceRelative BalanceScale = "relative"
)

// UnmarshalText reads a scale in any case; Config.Validate checks it.
func (s *BalanceScale) UnmarshalText(text []byte) error {
	*s = BalanceScale(strings.ToLower(strings.TrimSpace(string(text))))
	return nil
}

// UnmarshalText reads a mode in any case; Config.Validate checks it.
func (m *PlacedMode) UnmarshalText(text []byte) error {
	*m = PlacedMode(strings.ToLower(strings.TrimSpace(string(text))))
	return nil
}

// UnmarshalText reads a mode in any case; Config.Validate checks it.
func (m *FilterMode) UnmarshalText(text []byte) error {
	*m = FilterMode(strings.ToLower(strings.TrimSpace(string(text))))
	return nil
}

// Config holds the agent's settings, as integer percents (tags: see settings.Bind and
// template.Config).
type Config struct {
	// Utilization is the threshold T, in percent of allocatable, that the utilization should
	// not exceed (0..100).
	Utilization int `json:"utilization" env:"SAFEUTILIZATION" flag:"safe-utilization" help:"safe agent: utilization threshold T, percent of allocatable (integer 0..100)"`
	// Percentile is the acceptable risk E, in percent: the largest probability of exceeding T
	// that the filter accepts (0..100).
	Percentile int `json:"percentile" env:"SAFEPERCENTILE" flag:"safe-percentile" help:"safe agent: acceptable risk E, percent chance of exceeding T (integer 0..100)"`
	// ForecastWeight is the weight w, in percent, of a node's forecast against its measured
	// mean free amount (0..100).
	ForecastWeight int `json:"forecastWeight" env:"SAFEFORECASTWEIGHT" flag:"safe-forecast-weight" help:"safe agent: weight w of the forecast free amount against the measured mean, percent (integer 0..100)"`
	// PrintTable logs each call's per-node computation at debug level.
	PrintTable bool `json:"printTable" env:"SAFEPRINTTABLE" flag:"safe-print-table" help:"safe agent: log each call's per-node computation at DEBUG level (true or false)"`
	// MaxStatsAge is the age of a node's statistics-timestamp past which its statistics are
	// stale (0 turns the check off); a node without the annotation is never stale.
	MaxStatsAge framework.Duration `json:"maxStatsAge" env:"SAFE_MAX_STATS_AGE" flag:"safe-max-stats-age" help:"safe agent: age of a node's statistics-timestamp annotation past which its usage statistics are stale (a duration: 30m, 1h; 0 turns the check off)"`
	// Stale is what stale statistics do.
	Stale StalePolicy `json:"stale" env:"SAFE_STALE" flag:"safe-stale" help:"safe agent: what stale usage statistics do: ignore (the node is judged as having none) or reject (the filter rejects the node)"`
	// Filter is what the filter judges: the node with the pod's request added while a node
	// that can hold it takes it, else the node as it is (adaptive); the node as it is (node);
	// the node with the pod's request added (pod); or nothing (off).
	Filter FilterMode `json:"filter" env:"SAFE_FILTER" flag:"safe-filter" help:"safe agent: what the filter safe-overload judges: adaptive (the risk with the pod's request added while a node that can hold it takes it, else the node as it is), node (the node's risk as it is, whatever the pod's size), pod (the risk with the pod's request added; starves large pods on a busy cluster) or off"`
	// PlacedShare is the share, in percent of their requests, of the usage estimated for the
	// pods placed on a node since its statistics-timestamp, added to its measured usage
	// (0..1000; 0 turns the estimate off). It needs cluster access (or plugin mode).
	PlacedShare int `json:"placedShare" env:"SAFE_PLACED_SHARE" flag:"safe-placed-share" help:"safe agent: usage estimated for the pods placed on a node since its statistics-timestamp, percent of their requests, added to the node's measured usage (integer 0..1000; 0: off; needs cluster access)"`
	// Placed is how the load placed since the statistics is counted.
	Placed PlacedMode `json:"placed" env:"SAFE_PLACED" flag:"safe-placed" help:"safe agent: the load placed since a node's statistics: growth (its requests grown since, from the annotator's statistics-requested-* annotations; else as arrivals) or arrivals (the requests of the pods placed since its statistics-timestamp)"`
	// BalanceScale is how safe-balance maps its objective to scores.
	BalanceScale BalanceScale `json:"balanceScale" env:"SAFE_BALANCE_SCALE" flag:"safe-balance-scale" help:"safe agent: how safe-balance scores: absolute (floor((1 - obj) * 10 + 0.5), the original design) or relative (the candidates' lowest objective 10, the highest 0, the others in proportion)"`
}

// Defaults.
const (
	DefaultUtilization    = 90
	DefaultPercentile     = 30
	DefaultForecastWeight = 20
	// DefaultMaxStatsAge is twice the annotator's default STATS_REFRESH (30m): a live
	// annotator rewrites an unchanged timestamp once it is 30m old, at its next statistics
	// cycle (every STATS_INTERVAL, 1m), so a healthy node's timestamp reaches about 31m.
	DefaultMaxStatsAge = framework.Duration(time.Hour)
	// MaxMaxStatsAge bounds MaxStatsAge.
	MaxMaxStatsAge = framework.Duration(30 * 24 * time.Hour)
	// DefaultFilter and DefaultPlacedShare: see README.md, "Design choices and their
	// measurements".
	DefaultFilter      = FilterAdaptive
	DefaultPlacedShare = 100
	DefaultPlaced      = PlacedGrowth
	DefaultBalance     = BalanceAbsolute
	// MaxPlacedShare bounds PlacedShare.
	MaxPlacedShare = 1000
)

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{Utilization: DefaultUtilization, Percentile: DefaultPercentile, ForecastWeight: DefaultForecastWeight,
		MaxStatsAge: DefaultMaxStatsAge, Stale: StaleIgnore, Filter: DefaultFilter, PlacedShare: DefaultPlacedShare, Placed: DefaultPlaced,
		BalanceScale: DefaultBalance}
}

// Validate reports every bad field, each as a settings.FieldError.
func (c Config) Validate() error {
	return errors.Join(
		settings.Range("utilization", c.Utilization, 0, 100),
		settings.Range("percentile", c.Percentile, 0, 100),
		settings.Range("forecastWeight", c.ForecastWeight, 0, 100),
		maxStatsAgeInRange(c.MaxStatsAge),
		settings.OneOf("stale", c.Stale, StaleIgnore, StaleReject),
		settings.OneOf("filter", c.Filter, FilterNode, FilterPod, FilterAdaptive, FilterOff),
		settings.OneOf("placed", c.Placed, PlacedGrowth, PlacedArrivals),
		settings.OneOf("balanceScale", c.BalanceScale, BalanceAbsolute, BalanceRelative),
		settings.Range("placedShare", c.PlacedShare, 0, MaxPlacedShare),
	)
}

func maxStatsAgeInRange(d framework.Duration) error {
	if d < 0 || d > MaxMaxStatsAge {
		return settings.Fieldf("maxStatsAge", "%s is out of range [0s, %s]", d, MaxMaxStatsAge)
	}
	return nil
}

// Registration offers the agent to the programs that run agents (agents.All, the extender's
// build-tagged file): its functions, and its port and weights in the shipped deployments.
var Registration = framework.Register(Name, DefaultConfig, New, framework.Offer{
	Filters:      []string{FilterOverload},
	Prioritizers: []framework.Weighted{{Name: PriorityOverload, Weight: 2}, {Name: PriorityBalance, Weight: 1}},
	Port:         5401,
})

// Agent is the safe agent. It is safe for concurrent use; between calls it keeps only what it
// derived from nodes and their pods (nodeEntry, placedMemo), which changes no answer.
type Agent struct {
	cfg Config
	// t, e, w are Utilization, Percentile and ForecastWeight as fractions.
	t, e, w float64
	// log receives the PrintTable tables.
	log *logrus.Entry
	// maxAge is MaxStatsAge (0: no check); reject is Stale == StaleReject.
	maxAge time.Duration
	reject bool
	// now is the clock that stamps each call; tests replace it.
	now func() time.Time
	// staleNodes holds, per function, the number of nodes with stale statistics in its latest
	// call; nil without metrics.
	staleNodes map[string]prometheus.Gauge
	// nodes memoizes each node's parsed annotations and allocatable, and its latest answers
	// (see nodeEntry).
	nodes framework.NodeBatchMemo[*nodeEntry]
	// cluster is the cluster view (nil without cluster access): it gives the requests of a
	// node without statistics and the pods placed since a node's statistics.
	cluster framework.Cluster
	// pods gives the pods on one node (nil: placeSince walks every pod of cluster), and
	// placedMemo the load placed since each node's statistics, by its pods' generation.
	pods       framework.NodePods
	placedMemo placedMemo
	// share is PlacedShare as a fraction.
	share float64
	// growth: the placed load is the growth of the requests when the node says them (PlacedGrowth).
	growth bool
	// noRequests restores the design before issue 26 (a node without statistics scores 0):
	// the simulation's "before" only.
	noRequests bool
}

var _ framework.Agent = (*Agent)(nil)

// New returns the agent for cfg; h.Log receives the PrintTable tables, h.Metrics (when not
// nil) the gauge safe_stale_nodes.
func New(cfg Config, h framework.Handle) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid safe config: %w", err)
	}
	a := &Agent{
		cfg:    cfg,
		t:      float64(cfg.Utilization) / 100,
		e:      float64(cfg.Percentile) / 100,
		w:      float64(cfg.ForecastWeight) / 100,
		log:    h.Log,
		maxAge: time.Duration(cfg.MaxStatsAge),
		reject: cfg.Stale == StaleReject,
		now:    time.Now,

		cluster: h.Cluster,
		pods:    h.NodePods,
		share:   float64(cfg.PlacedShare) / 100,
		growth:  cfg.Placed == PlacedGrowth,
	}
	if h.Metrics != nil {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "safe_stale_nodes",
			Help: "Nodes whose usage statistics were stale (statistics-timestamp older than SAFE_MAX_STATS_AGE, " +
				"as far ahead, or unreadable) in the latest call of each safe function.",
		}, []string{"function", "verb"})
		if err := h.Metrics.Register(g); err != nil {
			return nil, fmt.Errorf("safe agent metrics: %w", err)
		}
		a.staleNodes = map[string]prometheus.Gauge{
			"predicates/" + FilterOverload:   g.WithLabelValues(FilterOverload, "filter"),
			"priorities/" + PriorityOverload: g.WithLabelValues(PriorityOverload, "prioritize"),
			"priorities/" + PriorityBalance:  g.WithLabelValues(PriorityBalance, "prioritize"),
		}
	}
	return a, nil
}

// Name implements framework.Agent.
func (a *Agent) Name() string { return Name }

// Filters implements framework.Agent.
func (a *Agent) Filters() []framework.Filter {
	// The adaptive filter asks whether any node of the call can hold the pod: its verdicts
	// depend on the whole list.
	f := framework.Filter{Name: FilterOverload, Func: a.filterOverload, WholeList: a.cfg.Filter == FilterAdaptive}
	if f.WholeList && !a.cfg.PrintTable { // a table is printed per call: the whole list's in one
		f.ForList = a.filterForList
	}
	return []framework.Filter{f}
}

// filterForList implements framework.Filter.ForList for the adaptive filter: whether a node of
// list that can hold the pod's request takes it is judged once, batch by batch from the start of
// the list until one does (on a cluster with room, within the first batch); the function
// returned then judges any nodes as filterOverload judges them in one call over list (the pod's
// request added, or the nodes as they are when none takes it), at this call's time.
func (a *Agent) filterForList(_ context.Context, pod *corev1.Pod, list []*corev1.Node) (framework.FilterFunc, error) {
	c := a.newCall(pod) // never done(): the chunks' calls publish the stale nodes they judge
	now, d := c.now, c.d
	a.placeSince(list, c)
	takes := false
	out := make([]framework.Verdict, min(len(list), forListBatch))
	for lo := 0; lo < len(list) && !takes; lo += forListBatch {
		batch := list[lo:min(lo+forListBatch, len(list))]
		clear(out)
		a.judgeNodes(pod, batch, c, out[:len(batch)])
		takes = a.anyTakes(batch, c, out[:len(batch)])
	}
	if !takes {
		d = demand{} // judge the nodes as they are, so that a large pod is not kept out for ever
	}
	return func(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
		c := &call{d: d, now: now}
		defer a.done("predicates/"+FilterOverload, c)
		out := make([]framework.Verdict, len(nodes))
		a.placeSince(nodes, c)
		a.judgeNodes(pod, nodes, c, out)
		return out, nil
	}, nil
}

// forListBatch is how many nodes filterForList judges at a time while looking for one that
// takes the pod.
const forListBatch = 64

// Prioritizers implements framework.Agent.
func (a *Agent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{
		{Name: PriorityOverload, Func: a.scoreOverload},
		{Name: PriorityBalance, Func: a.scoreBalance},
	}
}

// resourceKind names the annotations and the allocatable entry of one resource.
type resourceKind struct {
	name      string
	kind      corev1.ResourceName
	mean, std string
	// forecasts, in the order they are tried.
	forecasts [2]string
}

var (
	cpuResource = resourceKind{name: "cpu", kind: corev1.ResourceCPU,
		mean: AnnotationMeanFreeCPU, std: AnnotationStdFreeCPU,
		forecasts: [2]string{AnnotationForecastFreeCPULegacy, AnnotationForecastFreeCPU}}
	memoryResource = resourceKind{name: "memory", kind: corev1.ResourceMemory,
		mean: AnnotationMeanFreeMemory, std: AnnotationStdFreeMemory,
		forecasts: [2]string{AnnotationForecastFreeMemoryLegacy, AnnotationForecastFreeMemory}}
)

// state says what can be said of one resource of a node.
type state uint8

const (
	// noStats: no parseable mean annotation and no known requests; the resource is not judged.
	noStats state = iota
	// noAllocatable: statistics but a zero or missing allocatable amount: risk 1.
	noAllocatable
	// measured: mu and sigma are known from the statistics.
	measured
	// requested: no statistics (or stale ones), but the requests of the node's pods are known
	// (cluster view, or the annotator's requested-* annotation): mu is their sum with the pod's
	// request over allocatable, sigma 0. The priorities judge the node as kube-scheduler would;
	// the filter lets it through.
	requested
)

// judged reports whether the priorities score the resource from mu and sigma.
func (s state) judged() bool { return s == measured || s == requested }

// measure is what the agent knows of one resource of a node for one pod.
type measure struct {
	res   *resourceKind
	state state
	// Inputs, in the resource's unit (kept for reasons and tables). For requested, free is
	// allocatable minus the requests and std is 0.
	free, std, capacity, demand float64
	forecast                    bool
	// placed is the usage estimated for the pods placed on the node since its statistics
	// (PlacedShare of their requests), added to the measured usage; placedPods counts them.
	placed     float64
	placedPods int
	// placedGrown: placed is the growth of the node's requests since the statistics.
	placedGrown bool
	// mu and sigma are valid when state is measured or requested.
	mu, sigma float64
	// risk, once riskKnown, is Risk(mu, sigma, T).
	risk      float64
	riskKnown bool
}

// demand is the pod's request, computed once per call.
type demand struct{ cpu, memory float64 }

func podDemand(pod *corev1.Pod) demand {
	cpu, memory := framework.CPUMemoryRequests(pod)
	return demand{cpu: float64(cpu), memory: float64(memory)}
}

// load is the usage estimated for the pods placed on one node since its statistics.
type load struct {
	cpu, memory float64
	pods        int
	// grown: the load is the growth of the node's requests since its statistics
	// (statistics-requested-*), not a sum over the pods placed since.
	grown bool
}

// call is what one call of a function knows before looking at any node.
type call struct {
	d demand
	// now is when the call started: statistics' ages are measured against it.
	now time.Time
	// stale counts the nodes with stale statistics (chunks add to it concurrently).
	stale atomic.Int64
	// placed holds, by node name, the load placed since the node's statistics (nil: none),
	// when the agent has no NodePods; with one, indexed tells to look it up per node.
	placed  map[string]load
	indexed bool
}

func (a *Agent) newCall(pod *corev1.Pod) *call {
	return &call{d: podDemand(pod), now: a.now()}
}

// done publishes the call's count of stale nodes under function key.
func (a *Agent) done(key string, c *call) {
	if g := a.staleNodes[key]; g != nil {
		g.Set(float64(c.stale.Load()))
	}
}

// placeSince fills c.placed: for every node of nodes with statistics and a readable
// statistics-timestamp, the pods on it (bound, or assumed in plugin mode) placed after that
// timestamp, and PlacedShare of their requests. A pod's placement time is its PodScheduled
// condition's lastTransitionTime (set by the API server when it binds the pod); a pod without
// one (assumed, or just bound) counts as placed now. The statistics cannot hold the usage of
// such pods: between two refreshes the node would look as idle as before, however many pods
// it received (the hot spot of every load-aware scheduler).
//
// With NodePods (the extender's cache, plugin mode) the load is looked up per node as the call
// judges it (placedOn), so a call costs per node asked about, not per pod of the cluster;
// without, this walks every pod once per call.
func (a *Agent) placeSince(nodes []*corev1.Node, c *call) {
	if a.cluster == nil || a.share <= 0 {
		return
	}
	if a.pods != nil {
		c.indexed = true
		return
	}
	stamps := make(map[string]time.Time, len(nodes))
	for _, n := range nodes {
		in := &a.entry(n).in
		if (in.cpu.measured || in.memory.measured) && in.stamp.readable && !(in.stampRequestedKnown && a.growth) {
			stamps[n.Name] = in.stamp.at
		}
	}
	if len(stamps) == 0 {
		return
	}
	sums := map[string]*placedSum{}
	for _, p := range a.cluster.Pods() {
		at, ok := stamps[p.Spec.NodeName]
		if !ok {
			continue
		}
		sum := sums[p.Spec.NodeName]
		if sum == nil {
			sum = &placedSum{}
			sums[p.Spec.NodeName] = sum
		}
		sum.add(p, at)
	}
	c.placed = make(map[string]load, len(sums))
	for node, sum := range sums {
		c.placed[node] = sum.load(a.share)
	}
}

// placedSum sums the requests of the pods placed on one node after its statistics, in
// integers (so that the sum does not depend on the pods' order).
type placedSum struct {
	cpu, memory int64
	pods        int
}

// add counts p if it is placed after at (see placeSince) and not terminated.
func (s *placedSum) add(p *corev1.Pod, at time.Time) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	if t, known := placedAt(p); known && !t.After(at) {
		return
	}
	cpu, memory := framework.CPUMemoryRequests(p)
	s.cpu += cpu
	s.memory += memory
	s.pods++
}

// load is share of the sum.
func (s *placedSum) load(share float64) load {
	if s.pods == 0 {
		return load{}
	}
	return load{cpu: share * float64(s.cpu), memory: share * float64(s.memory), pods: s.pods}
}

// placedLoad returns the load placed on n since its statistics (in: n's inputs) for call c.
func (a *Agent) placedLoad(n *corev1.Node, in *nodeInputs, c *call) load {
	if !c.indexed {
		return c.placed[n.Name]
	}
	if !(in.cpu.measured || in.memory.measured) || !in.stamp.readable {
		return load{}
	}
	return a.placedOn(n.Name, in.stamp.at)
}

// placedMemo remembers, per node, the load placed since its statistics-timestamp at one
// generation of its pods: the statistics change every few minutes and the node's pods with
// each placement, while the scheduler asks about the node for every pod.
type placedMemo struct {
	m      sync.Map // node name -> *placedEntry
	stores atomic.Int64
}

type placedEntry struct {
	generation int64
	at         time.Time
	l          load
}

// maxPlacedNodes bounds placedMemo; past it, the memo starts over.
const maxPlacedNodes = 1 << 17

// placedOn returns the load placed on node after at, from the memo while neither the node's
// pods nor at has changed.
func (a *Agent) placedOn(node string, at time.Time) load {
	generation := a.pods.PodsGeneration(node)
	if e, ok := a.placedMemo.m.Load(node); ok {
		if e := e.(*placedEntry); e.generation == generation && e.at.Equal(at) {
			return e.l
		}
	}
	pods, generation := a.pods.PodsOn(node)
	var sum placedSum
	for _, p := range pods {
		sum.add(p, at)
	}
	e := &placedEntry{generation: generation, at: at, l: sum.load(a.share)}
	if a.placedMemo.stores.Add(1) > maxPlacedNodes {
		a.placedMemo.m.Clear()
		a.placedMemo.stores.Store(0)
	}
	a.placedMemo.m.Store(node, e)
	return e.l
}

// placedAt returns when pod was bound to its node: its PodScheduled condition's
// lastTransitionTime; known is false without one.
func placedAt(pod *corev1.Pod) (at time.Time, known bool) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// measureNode reads the statistics of both resources of n and judges their freshness at the
// call's time. Stale statistics count as none. A resource without statistics is judged from
// the requests of the node's pods when they are known (state requested). Freshness is computed
// per call from the memoized timestamp (it depends on the time, not on the node).
func (a *Agent) measureNode(n *corev1.Node, c *call) (cpu, memory measure, f freshness) {
	return a.measure(n, &a.entry(n).in, c)
}

// measure is measureNode with n's inputs in.
func (a *Agent) measure(n *corev1.Node, in *nodeInputs, c *call) (cpu, memory measure, f freshness) {
	cpuIn, memoryIn := &in.cpu, &in.memory
	if a.maxAge > 0 && (in.cpu.measured || in.memory.measured) {
		if f = in.stamp.freshness(c.now, a.maxAge); f.stale {
			c.stale.Add(1)
			cpuIn, memoryIn = &resourceInputs{}, &resourceInputs{}
		}
	}
	var l load
	if a.growth && in.stampRequestedKnown && a.cluster != nil && a.share > 0 && (in.cpu.measured || in.memory.measured) && in.stamp.readable {
		// The requests grown since the statistics (pods placed, less pods gone): the usage of
		// pods that left is still in the statistics, so their requests are counted off.
		alloc := a.cluster.Allocated(n.Name)
		l = load{cpu: a.share * max(0, float64(alloc[corev1.ResourceCPU])-in.stampRequested.cpu),
			memory: a.share * max(0, float64(alloc[corev1.ResourceMemory])-in.stampRequested.memory), grown: true}
	} else {
		l = a.placedLoad(n, in, c)
	}
	if f.stale {
		l = load{}
	}
	cpu = measureFrom(cpuIn, &cpuResource, c.d.cpu, l)
	memory = measureFrom(memoryIn, &memoryResource, c.d.memory, l)
	if (cpu.state == noStats || memory.state == noStats) && !a.noRequests {
		if req, ok := a.requests(n, in); ok {
			if cpu.state == noStats {
				cpu = fromRequests(&cpuResource, req.cpu, allocatable(n, &cpuResource), c.d.cpu)
			}
			if memory.state == noStats {
				memory = fromRequests(&memoryResource, req.memory, allocatable(n, &memoryResource), c.d.memory)
			}
		}
	}
	return cpu, memory, f
}

// requests returns the summed requests of n's pods: from the cluster view when there is one,
// else from the node annotator's requested-cpu and requested-memory annotations.
func (a *Agent) requests(n *corev1.Node, in *nodeInputs) (demand, bool) {
	if a.cluster != nil {
		alloc := a.cluster.Allocated(n.Name)
		return demand{cpu: float64(alloc[corev1.ResourceCPU]), memory: float64(alloc[corev1.ResourceMemory])}, true
	}
	return in.requested, in.requestedKnown
}

// fromRequests judges a resource without statistics from the requests of the node's pods:
// mu = (requests + demand) / allocatable, sigma 0.
func fromRequests(r *resourceKind, req, capacity, d float64) measure {
	m := measure{res: r, demand: d, capacity: capacity, free: capacity - req}
	if mu, sigma, ok := Utilization(m.free, 0, capacity, d); ok {
		m.state, m.mu, m.sigma = requested, mu, sigma
	}
	return m
}

// readNode reads what the agent needs of a node, for both resources, before any pod's demand.
func (a *Agent) readNode(n *corev1.Node) nodeInputs {
	in := nodeInputs{cpu: a.read(n, &cpuResource), memory: a.read(n, &memoryResource),
		stamp: readStamp(n.Annotations[AnnotationStatisticsTimestamp])}
	cpu, okc := annotation(n.Annotations, AnnotationRequestedCPU)
	memory, okm := annotation(n.Annotations, AnnotationRequestedMemory)
	in.requested, in.requestedKnown = demand{cpu: cpu, memory: memory}, okc && okm
	cpu, okc = annotation(n.Annotations, AnnotationStatisticsRequestedCPU)
	memory, okm = annotation(n.Annotations, AnnotationStatisticsRequestedMemory)
	in.stampRequested, in.stampRequestedKnown = demand{cpu: cpu, memory: memory}, okc && okm
	return in
}

func (a *Agent) read(n *corev1.Node, r *resourceKind) resourceInputs {
	mean, ok := annotation(n.Annotations, r.mean)
	if !ok {
		return resourceInputs{}
	}
	in := resourceInputs{measured: true}
	in.std, _ = annotation(n.Annotations, r.std) // 0 when missing or unparseable
	var forecast float64
	for _, key := range r.forecasts {
		if forecast, in.forecast = annotation(n.Annotations, key); in.forecast {
			break
		}
	}
	in.free = Blend(mean, forecast, in.forecast, a.w)
	in.capacity = allocatable(n, r)
	return in
}

// measureFrom applies the pod's demand d and the load placed since the statistics to a node's
// inputs for r: the placed load adds to the measured usage as the pod's request does.
func measureFrom(in *resourceInputs, r *resourceKind, d float64, l load) measure {
	m := measure{res: r, demand: d}
	if !in.measured {
		return m
	}
	m.free, m.std, m.capacity, m.forecast = in.free, in.std, in.capacity, in.forecast
	m.placed, m.placedPods, m.placedGrown = l.cpu, l.pods, l.grown
	if r.kind == corev1.ResourceMemory {
		m.placed = l.memory
	}
	var judged bool
	if m.mu, m.sigma, judged = Utilization(m.free, m.std, m.capacity, d+m.placed); judged {
		m.state = measured
	} else {
		m.state = noAllocatable
	}
	return m
}

// annotation parses the annotation key as a finite number. Missing, empty, unparseable, NaN
// and infinite values are absent.
func annotation(annotations map[string]string, key string) (float64, bool) {
	s, ok := annotations[key]
	if !ok || s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// allocatable returns n's allocatable amount of r (millicores for cpu), 0 when missing.
func allocatable(n *corev1.Node, r *resourceKind) float64 {
	q, ok := n.Status.Allocatable[r.kind]
	if !ok {
		return 0
	}
	return float64(framework.Amount(r.kind, q))
}

// risk returns the risk of a measured resource, computing it once.
func (a *Agent) risk(m *measure) float64 {
	if !m.riskKnown {
		m.risk, m.riskKnown = Risk(m.mu, m.sigma, a.t), true
	}
	return m.risk
}

// acceptable reports whether the filter lets the resource through.
func (a *Agent) acceptable(m *measure) bool {
	switch m.state {
	case noStats, requested:
		return true
	case noAllocatable:
		return false
	}
	return SurelyAcceptable(m.mu, m.sigma, a.t, a.e) || a.risk(m) <= a.e
}

// filterOverload rejects the nodes where a resource's risk exceeds the acceptable risk.
// With Stale reject, a node whose statistics are stale is rejected as unresolvable (preemption
// cannot refresh statistics), with the age in the reason.
func (a *Agent) filterOverload(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
	c := a.newCall(pod)
	defer a.done("predicates/"+FilterOverload, c)
	out := make([]framework.Verdict, len(nodes))
	if a.cfg.Filter == FilterOff && !a.reject {
		return out, nil
	}
	if a.cfg.Filter == FilterNode {
		c.d = demand{} // the node as it is
	}
	if a.cfg.Filter != FilterOff {
		a.placeSince(nodes, c)
	}
	a.judgeNodes(pod, nodes, c, out)
	if a.cfg.Filter == FilterAdaptive && !a.anyTakes(nodes, c, out) {
		// No node that can hold the pod's request takes it within the acceptable risk: judge
		// the nodes as they are, so that a large pod is not kept out for ever.
		c.d = demand{}
		clear(out)
		a.judgeNodes(pod, nodes, c, out)
	}
	return out, nil
}

// judgeNodes writes the filter's verdict on every node into out, with the call's demand.
func (a *Agent) judgeNodes(pod *corev1.Pod, nodes []*corev1.Node, c *call, out []framework.Verdict) {
	tbl := a.newTable(FilterOverload, pod, c.d)
	slot := verdictSlot(c.d)
	judge := func(lo, hi int) {
		var batch [entryBatch]*nodeEntry
		for i, n := range nodes[lo:hi] {
			if i%entryBatch == 0 {
				a.entries(nodes[lo+i:min(lo+i+entryBatch, hi)], batch[:])
			}
			e := batch[i%entryBatch]
			key, keep := a.answerKey(n, e, c, tbl == nil)
			if keep {
				if m := e.verdicts[slot].Load(); m != nil && m.key == key {
					out[lo+i] = m.v
					continue
				}
			}
			cpu, memory, f := a.measure(n, &e.in, c)
			if f.stale && a.reject {
				out[lo+i] = framework.RejectUnresolvable(a.staleReason(f))
			} else if a.cfg.Filter == FilterOff {
				// only stale statistics reject
			} else if cpuOK, memoryOK := a.acceptable(&cpu), a.acceptable(&memory); !cpuOK || !memoryOK {
				out[lo+i] = framework.Reject(a.reason(&cpu, cpuOK, &memory, memoryOK))
			}
			if keep {
				e.verdicts[slot].Store(&verdictMemo{key: key, v: out[lo+i]})
			}
			if tbl != nil {
				result := "pass"
				if !out[lo+i].Passes() {
					result = "reject"
				}
				tbl.node(n.Name, &cpu, &memory, result)
			}
		}
	}
	if tbl != nil {
		judge(0, len(nodes)) // one goroutine: the table's rows in order
		tbl.flush()
	} else {
		forChunks(len(nodes), judge)
	}
}

// anyTakes reports whether a node passes whose requests leave room for the pod's (a node whose
// requests are unknown counts as having room). In plugin mode the filter judges every node of
// the snapshot, before kube-scheduler's fit: a node the pod cannot fit on must not hide that no
// node it fits on takes it.
func (a *Agent) anyTakes(nodes []*corev1.Node, c *call, out []framework.Verdict) bool {
	for i, n := range nodes {
		if !out[i].Passes() {
			continue
		}
		req, ok := a.requests(n, &a.entry(n).in)
		if !ok || (req.cpu+c.d.cpu <= allocatable(n, &cpuResource) && req.memory+c.d.memory <= allocatable(n, &memoryResource)) {
			return true
		}
	}
	return false
}

// reason says why the failing resources fail, with their numbers, for example
// "cpu risk 0.42 > 0.30 (mu 0.81, sigma 0.12, threshold 0.90)". Built with strconv only: a
// filter call may reject thousands of nodes.
func (a *Agent) reason(cpu *measure, cpuOK bool, memory *measure, memoryOK bool) string {
	b := make([]byte, 0, 160)
	if !cpuOK {
		b = a.appendReason(b, cpu)
	}
	if !memoryOK {
		if len(b) > 0 {
			b = append(b, "; "...)
		}
		b = a.appendReason(b, memory)
	}
	return string(b)
}

func (a *Agent) appendReason(b []byte, m *measure) []byte {
	if m.state == noAllocatable {
		return append(append(append(b, "allocatable "...), m.res.name...), " is zero or missing: its risk cannot be judged"...)
	}
	b = append(append(b, m.res.name...), " risk "...)
	b = appendPair(b, a.risk(m), a.e)
	b = strconv.AppendFloat(append(b, " (mu "...), m.mu, 'f', 2, 64)
	b = strconv.AppendFloat(append(b, ", sigma "...), m.sigma, 'f', 2, 64)
	b = strconv.AppendFloat(append(b, ", threshold "...), a.t, 'f', 2, 64)
	switch {
	case m.placedGrown && m.placed > 0:
		b = append(b, ", requests grown since the statistics add "...)
		b = appendAmount(b, m.res, m.placed)
	case m.placedPods > 0:
		b = strconv.AppendInt(append(b, ", "...), int64(m.placedPods), 10)
		b = append(b, " pods placed since the statistics add "...)
		b = appendAmount(b, m.res, m.placed)
	}
	return append(b, ')')
}

// appendAmount appends v, an amount of r: cpu as "1500m", memory as "512Mi".
func appendAmount(b []byte, r *resourceKind, v float64) []byte {
	if r.kind == corev1.ResourceCPU {
		return append(strconv.AppendFloat(b, v, 'f', 0, 64), 'm')
	}
	return append(strconv.AppendFloat(b, v/(1<<20), 'f', 0, 64), "Mi"...)
}

// appendPair appends "x > y" with two decimals, or more when two would print them equal.
func appendPair(b []byte, x, y float64) []byte {
	prec := 2
	for ; prec < 17; prec++ {
		var bx, by [32]byte
		if string(strconv.AppendFloat(bx[:0], x, 'f', prec, 64)) != string(strconv.AppendFloat(by[:0], y, 'f', prec, 64)) {
			break
		}
	}
	b = strconv.AppendFloat(b, x, 'f', prec, 64)
	return strconv.AppendFloat(append(b, " > "...), y, 'f', prec, 64)
}

// staleReason says why f is stale: "usage statistics 2h10m old (max 1h)", "usage statistics
// dated 2h10m ahead of this extender's clock (max 1h)", or "usage statistics timestamp "x" is
// not RFC 3339". Ages are truncated to the second.
func (a *Agent) staleReason(f freshness) string {
	b := make([]byte, 0, 96)
	switch {
	case f.unreadable:
		raw := f.raw
		if len(raw) > 64 {
			raw = raw[:64]
		}
		b = strconv.AppendQuote(append(b, "usage statistics timestamp "...), raw)
		return string(append(b, " is not RFC 3339"...))
	case f.age < 0:
		b = framework.AppendDuration(append(b, "usage statistics dated "...), (-f.age).Truncate(time.Second))
		b = append(b, " ahead of this extender's clock"...)
	default:
		b = framework.AppendDuration(append(b, "usage statistics "...), f.age.Truncate(time.Second))
		b = append(b, " old"...)
	}
	b = framework.AppendDuration(append(b, " (max "...), a.maxAge)
	return string(append(b, ')'))
}

// scorer scores one measured resource.
type scorer func(a *Agent, m measure) int64

func overloadScorer(a *Agent, m measure) int64 { return OverloadScore(a.risk(&m), a.e) }

func balanceScorer(_ *Agent, m measure) int64 { return BalanceScore(m.mu, m.sigma) }

// fineBalanceScorer is 1 - obj in millionths: the order of the objectives, for BalanceRelative.
func fineBalanceScorer(_ *Agent, m measure) int64 { return fineBalance(m.mu, m.sigma) }

// scoreOverload scores the nodes by risk: see OverloadScore and NodeScore.
func (a *Agent) scoreOverload(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	return a.score(PriorityOverload, overloadSlot, pod, nodes, overloadScorer, nil), nil
}

// scoreBalance scores the nodes by utilization and spread: see BalanceScore and NodeScore.
func (a *Agent) scoreBalance(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	if a.cfg.BalanceScale != BalanceRelative {
		return a.score(PriorityBalance, balanceSlot, pod, nodes, balanceScorer, nil), nil
	}
	has := make([]bool, len(nodes))
	return RelativeScores(a.score(PriorityBalance, fineBalanceSlot, pod, nodes, fineBalanceScorer, has), has), nil
}

// score scores every node with the per-resource score of: a resource without statistics does
// not count, one without allocatable scores 0. Stale statistics count as none, whatever the
// Stale policy: a node with stale statistics scores 0. has, when not nil, is set for the nodes
// with some resource judged or unjudgeable (those NodeScore does not give 0 for want of any).
// slot is the scorer's place in nodeEntry.scores.
func (a *Agent) score(name string, slot int, pod *corev1.Pod, nodes []*corev1.Node, of scorer, has []bool) []int64 {
	c := a.newCall(pod)
	defer a.done("priorities/"+name, c)
	a.placeSince(nodes, c)
	tbl := a.newTable(name, pod, c.d)
	out := make([]int64, len(nodes))
	scoreRange := func(lo, hi int) {
		var batch [entryBatch]*nodeEntry
		for i, n := range nodes[lo:hi] {
			if i%entryBatch == 0 {
				a.entries(nodes[lo+i:min(lo+i+entryBatch, hi)], batch[:])
			}
			e := batch[i%entryBatch]
			key, keep := a.answerKey(n, e, c, tbl == nil)
			if keep {
				if m := e.scores[slot].Load(); m != nil && m.key == key {
					out[lo+i] = m.s
					if has != nil {
						has[lo+i] = m.has
					}
					continue
				}
			}
			cpu, memory, _ := a.measure(n, &e.in, c)
			var cs, ms int64
			if cpu.state.judged() {
				cs = of(a, cpu)
			}
			if memory.state.judged() {
				ms = of(a, memory)
			}
			out[lo+i] = NodeScore(cs, cpu.state != noStats, ms, memory.state != noStats)
			hasStats := cpu.state != noStats || memory.state != noStats
			if has != nil {
				has[lo+i] = hasStats
			}
			if keep {
				e.scores[slot].Store(&scoreMemo{key: key, s: out[lo+i], has: hasStats})
			}
			if tbl != nil {
				tbl.node(n.Name, &cpu, &memory, strconv.FormatInt(out[lo+i], 10))
			}
		}
	}
	if tbl != nil {
		scoreRange(0, len(nodes))
		tbl.flush()
	} else {
		forChunks(len(nodes), scoreRange)
	}
	return out
}

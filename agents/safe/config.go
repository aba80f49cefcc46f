package safe

import (
	"errors"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
	"github.com/kube-safe-scheduler/extender/usage"
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

// Choices implements settings.Chooser.
func (StalePolicy) Choices() []string { return settings.Names(StaleIgnore, StaleReject) }

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

// Choices implements settings.Chooser.
func (BalanceScale) Choices() []string { return settings.Names(BalanceAbsolute, BalanceRelative) }

// UnmarshalText reads a scale in any case; Config.Validate checks it.
func (s *BalanceScale) UnmarshalText(text []byte) error {
	*s = BalanceScale(strings.ToLower(strings.TrimSpace(string(text))))
	return nil
}

// EstimateMode says what a pod is estimated at (estimate.go).
type EstimateMode string

// Estimate modes.
const (
	// EstimateRequest estimates every pod at its request.
	EstimateRequest EstimateMode = "request"
	// EstimateLearned estimates a pod at its workload's usage learned by the usage learner
	// (learned.go), at its request while the learner does not trust the workload.
	EstimateLearned EstimateMode = "learned"
)

// Choices implements settings.Chooser.
func (EstimateMode) Choices() []string { return settings.Names(EstimateRequest, EstimateLearned) }

// UnmarshalText reads a mode in any case; Config.Validate checks it.
func (m *EstimateMode) UnmarshalText(text []byte) error {
	*m = EstimateMode(strings.ToLower(strings.TrimSpace(string(text))))
	return nil
}

// Choices implements settings.Chooser.
func (PlacedMode) Choices() []string { return settings.Names(PlacedGrowth, PlacedArrivals) }

// UnmarshalText reads a mode in any case; Config.Validate checks it.
func (m *PlacedMode) UnmarshalText(text []byte) error {
	*m = PlacedMode(strings.ToLower(strings.TrimSpace(string(text))))
	return nil
}

// Choices implements settings.Chooser.
func (FilterMode) Choices() []string {
	return settings.Names(FilterNode, FilterPod, FilterAdaptive, FilterOff)
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
	Utilization int `json:"utilization" range:"[0,100]" env:"SAFEUTILIZATION" flag:"safe-utilization" help:"safe agent: utilization threshold T, percent of allocatable (integer 0..100)"`
	// Percentile is the acceptable risk E, in percent: the largest probability of exceeding T
	// that the filter accepts (0..100).
	Percentile int `json:"percentile" range:"[0,100]" env:"SAFEPERCENTILE" flag:"safe-percentile" help:"safe agent: acceptable risk E, percent chance of exceeding T (integer 0..100)"`
	// ForecastWeight is the weight w, in percent, of a node's forecast against its measured
	// mean free amount (0..100).
	ForecastWeight int `json:"forecastWeight" range:"[0,100]" env:"SAFEFORECASTWEIGHT" flag:"safe-forecast-weight" help:"safe agent: weight w of the forecast free amount against the measured mean, percent (integer 0..100)"`
	// PrintTable logs each call's per-node computation at debug level.
	PrintTable bool `json:"printTable" env:"SAFEPRINTTABLE" flag:"safe-print-table" help:"safe agent: log each call's per-node computation at DEBUG level (true or false)"`
	// MaxStatsAge is the age of a node's statistics-timestamp past which its statistics are
	// stale (0 turns the check off); a node without the annotation is never stale.
	MaxStatsAge framework.Duration `json:"maxStatsAge" range:"[0s,720h]" env:"SAFE_MAX_STATS_AGE" flag:"safe-max-stats-age" help:"safe agent: age of a node's statistics-timestamp annotation past which its usage statistics are stale (a duration: 30m, 1h; 0 turns the check off)"`
	// Stale is what stale statistics do.
	Stale StalePolicy `json:"stale" env:"SAFE_STALE" flag:"safe-stale" help:"safe agent: what stale usage statistics do: ignore (the node is judged as having none) or reject (the filter rejects the node)"`
	// Filter is what the filter judges: the node with the pod's request added while a node
	// that can hold it takes it, else the node as it is (adaptive); the node as it is (node);
	// the node with the pod's request added (pod); or nothing (off).
	Filter FilterMode `json:"filter" env:"SAFE_FILTER" flag:"safe-filter" help:"safe agent: what the filter safe-overload judges: adaptive (the risk with the pod's request added while a node that can hold it takes it, else the node as it is), node (the node's risk as it is, whatever the pod's size), pod (the risk with the pod's request added; starves large pods on a busy cluster) or off"`
	// PlacedShare is the share, in percent of their requests, of the usage estimated for the
	// pods placed on a node since its statistics-timestamp, added to its measured usage
	// (0..1000; 0 turns the estimate off). It needs cluster access (or plugin mode).
	PlacedShare int `json:"placedShare" range:"[0,1000]" env:"SAFE_PLACED_SHARE" flag:"safe-placed-share" help:"safe agent: usage estimated for the pods placed on a node since its statistics-timestamp, percent of their requests, added to the node's measured usage (integer 0..1000; 0: off; needs cluster access)"`
	// Placed is how the load placed since the statistics is counted.
	Placed PlacedMode `json:"placed" env:"SAFE_PLACED" flag:"safe-placed" help:"safe agent: the load placed since a node's statistics: growth (with pod events, the node model: each pod on the node at its estimate for the share of the statistics' window it missed, each pod gone at its estimate for the share the window held; without them, its requests grown since, from the annotator's statistics-requested-* annotations; else as arrivals) or arrivals (the requests of the pods placed since its statistics-timestamp)"`
	// BalanceScale is how safe-balance maps its objective to scores.
	BalanceScale BalanceScale `json:"balanceScale" env:"SAFE_BALANCE_SCALE" flag:"safe-balance-scale" help:"safe agent: how safe-balance scores: absolute (floor((1 - obj) * 10 + 0.5), the original design) or relative (the candidates' lowest objective 10, the highest 0, the others in proportion)"`
	// Estimate is what a pod is estimated at: its request, or its workload's learned usage.
	Estimate EstimateMode `json:"estimate" env:"SAFE_ESTIMATE" flag:"safe-estimate" help:"safe agent: what a pod is estimated at: request, or learned (its workload's usage learned by the node annotator's usage learner, USAGE_LEARNER; the request until the learner trusts the workload; needs cluster access)"`
	// EstimatePercentile is the percentile of a workload's usage/request ratio its pods are
	// estimated at (1..100), read from the histograms the learner stores.
	EstimatePercentile int `json:"estimatePercentile" range:"[1,100]" env:"SAFE_ESTIMATE_PERCENTILE" flag:"safe-estimate-percentile" help:"safe agent: with estimate learned, the percentile of a workload's usage/request a pod is estimated at (integer 1..100)"`
	// EstimateNamespace and EstimateObject name the learner's store: the node annotator's
	// USAGE_NAMESPACE and USAGE_OBJECT.
	EstimateNamespace string `json:"estimateNamespace" env:"SAFE_ESTIMATE_NAMESPACE" flag:"safe-estimate-namespace" help:"safe agent: with estimate learned, the namespace of the usage learner's ConfigMaps, the node annotator's USAGE_NAMESPACE (empty: the pod's own namespace, else kube-system)"`
	EstimateObject    string `json:"estimateObject" env:"SAFE_ESTIMATE_OBJECT" flag:"safe-estimate-object" help:"safe agent: with estimate learned, the name of the usage learner's store, the node annotator's USAGE_OBJECT (ConfigMaps <name>-0, <name>-1, ...)"`
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
	// DefaultFilter and DefaultPlacedShare: see README.md, "Design choices and their
	// measurements".
	DefaultFilter      = FilterAdaptive
	DefaultPlacedShare = 100
	DefaultPlaced      = PlacedGrowth
	DefaultBalance     = BalanceAbsolute
	// DefaultEstimate is the request: nothing changes for a cluster that does not run the
	// usage learner. DefaultEstimatePercentile is the learner's own default (USAGE_PERCENTILE).
	DefaultEstimate           = EstimateRequest
	DefaultEstimatePercentile = 90
	DefaultEstimateObject     = "usage-learner"
)

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{Utilization: DefaultUtilization, Percentile: DefaultPercentile, ForecastWeight: DefaultForecastWeight,
		MaxStatsAge: DefaultMaxStatsAge, Stale: StaleIgnore, Filter: DefaultFilter, PlacedShare: DefaultPlacedShare, Placed: DefaultPlaced,
		BalanceScale: DefaultBalance, Estimate: DefaultEstimate, EstimatePercentile: DefaultEstimatePercentile,
		EstimateObject: DefaultEstimateObject}
}

// Validate reports every bad field, each as a settings.FieldError: the ranges and choices the
// fields declare (settings.Check), and the names of the learner's store.
func (c Config) Validate() error {
	return errors.Join(
		settings.Check(c),
		fieldCheck("estimateNamespace", c.EstimateNamespace, usage.CheckNamespace),
		fieldCheck("estimateObject", c.EstimateObject, usage.CheckObject),
	)
}

func fieldCheck(field, v string, check func(string) error) error {
	if err := check(v); err != nil {
		return settings.Fieldf(field, "%v", err)
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

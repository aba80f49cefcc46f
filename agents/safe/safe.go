// Package safe is the safe agent: it places pods by what nodes really use, not by what their
// pods requested. Each node's annotations carry the measured mean and standard deviation of its
// free cpu and memory (and optionally a forecast); the agent predicts each resource's
// utilization with the pod added, fits a Beta distribution to it, and judges the probability
// (the risk) that the utilization exceeds a threshold. See README.md for the formulas.
//
// Functions: the filter safe-overload rejects the nodes whose risk exceeds the acceptable risk;
// the priority safe-overload prefers low risk; the priority safe-balance prefers low, steady
// utilization.
//
// Files, by concern: config.go (Config, its enums and defaults, Validate, Registration);
// safe.go (the Agent, New, one call's state); measure.go (what a node is measured at: its
// statistics read through package nodestats, their freshness, the requests of its pods);
// estimate.go (what a pod is estimated at: the Estimator); model.go, departures.go and
// placed.go (the node model: the node's pods now and gone against its statistics); pipeline.go (the
// one loop of the filter and the priorities: pod -> demand -> node projection -> judgement);
// filter.go (the filter, its reasons); score.go (the priorities);
// analysis.go (the pure maths of the agent's scales: utilization, scores); answers.go (what is
// remembered between calls); table.go, explain.go, requeue.go, chunks.go. The Beta
// distribution's mathematics (the fit, the risk, its memo) is package beta.
package safe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/agents/safe/beta"
	"github.com/kube-safe-scheduler/extender/framework"
)

// Agent is the safe agent. It is safe for concurrent use; between calls it keeps only what it
// derived from nodes and their pods (nodeEntry, placedMemo) and the risks it computed (risks),
// which change no answer.
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
	// listed is the same by position in plugin mode's shared list of nodes (framework.Positions):
	// a call's entries read in one pass, no lookup by name.
	listed framework.ListMemo[*nodeEntry]
	// cluster is the cluster view (nil without cluster access): it gives the requests of a
	// node without statistics and the pods placed since a node's statistics.
	cluster framework.Cluster
	// pods gives the pods on one node (nil: placeSince walks every pod of cluster), and
	// placedMemo the load placed since each node's statistics, by its pods' generation.
	pods       framework.NodePods
	placedMemo placedMemo
	// departed keeps the pods gone from each node, for the node model (model.go): nil
	// without pod events (or with Placed arrivals), when the agent counts the placed load as
	// before the model.
	departed *departures
	// risks remembers the risks computed (beta.Memo): pods of one demand on nodes whose
	// statistics have not changed ask the same again. The agent's own, shared with no other.
	risks *beta.Memo
	// share is PlacedShare as a fraction.
	share float64
	// growth: the placed load is the growth of the requests when the node says them (PlacedGrowth).
	growth bool
	// estimator says what a pod will use (estimate.go): the pod being placed and the pods
	// placed since a node's statistics; byRequest tells it is requestEstimator, whose estimate
	// is also the pod's request.
	estimator Estimator
	byRequest bool
	// lastEstimate is the estimate of the pod asked last, at the estimator's version then:
	// plugin mode asks about one pod (one object) in several calls, a chunk of nodes each, and
	// an estimate is the same for the same pod while Version does not change (Estimator).
	lastEstimate atomic.Pointer[podEstimate]
	// follow fills the learned estimator from the usage learner's store (nil unless Estimate
	// is learned); Start starts it.
	follow *follower
	// estimated counts the pods the filter judged, by whether their estimate was learned
	// ([1]) or their request ([0]); nil without metrics.
	estimated [2]prometheus.Counter
	// noRequests restores the design before issue 26 (a node without statistics scores 0):
	// the simulation's "before" only.
	noRequests bool
}

var _ framework.Agent = (*Agent)(nil)

// New returns the agent for cfg, which estimates every pod at its request, or, with Estimate
// learned, at its workload's learned usage (learned.go; its store is followed from Start);
// h.Log receives the PrintTable tables, h.Metrics (when not nil) the gauge safe_stale_nodes
// and the counter safe_estimates_total.
func New(cfg Config, h framework.Handle) (*Agent, error) {
	if cfg.Estimate != EstimateLearned {
		return NewWithEstimator(cfg, h, requestEstimator{})
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid safe config: %w", err)
	}
	est, f, err := newLearned(cfg, h)
	if err != nil {
		return nil, fmt.Errorf("safe agent: %w", err)
	}
	a, err := NewWithEstimator(cfg, h, est)
	if err != nil {
		return nil, err
	}
	a.follow = f
	return a, nil
}

var _ framework.Starter = (*Agent)(nil)

// Start implements framework.Starter: with Estimate learned, it follows the usage learner's
// store (an unreadable store stops the program); otherwise it does nothing.
func (a *Agent) Start(ctx context.Context) error {
	if a.follow == nil {
		return nil
	}
	return a.follow.start(ctx)
}

// NewWithEstimator is New with est saying what each pod will use, instead of its request.
func NewWithEstimator(cfg Config, h framework.Handle, est Estimator) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid safe config: %w", err)
	}
	if est == nil {
		return nil, errors.New("safe agent: the Estimator is nil")
	}
	_, byRequest := est.(requestEstimator)
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

		estimator: est,
		byRequest: byRequest,
		risks:     beta.NewMemo(),
	}
	if h.PodEvents != nil && h.NodePods != nil && a.growth && a.share > 0 {
		keep := 2*time.Hour + keptWindow
		if a.maxAge > 0 {
			keep = a.maxAge + keptWindow
		}
		a.departed = newDepartures(keep, func() time.Time { return a.now() })
		if _, err := h.PodEvents.AddEventHandler(a.departed.handler()); err != nil {
			return nil, fmt.Errorf("safe agent: pod events: %w", err)
		}
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
		est := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "safe_estimates_total",
			Help: "Pods the filter safe-overload judged, by their estimate: learned (their workload's usage, SAFE_ESTIMATE learned) or request. " +
				"The learned share is the estimate coverage.",
		}, []string{"estimate"})
		if err := h.Metrics.Register(est); err != nil {
			return nil, fmt.Errorf("safe agent metrics: %w", err)
		}
		a.estimated = [2]prometheus.Counter{est.WithLabelValues("request"), est.WithLabelValues("learned")}
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

// call is what one call of a function knows before looking at any node.
type call struct {
	// d is the pod's estimate (its request by default), which the risk adds to a node's usage;
	// the filter sets it to zero to judge a node as it is. fit is the pod's request, which
	// kube-scheduler's fit checks against the requests of a node's pods (anyTakes).
	d, fit demand
	// now is when the call started: statistics' ages are measured against it.
	now time.Time
	// pod is the pod being placed; learned and source are its estimate's (Estimate), version
	// the estimator's Version when the call started.
	pod     *corev1.Pod
	learned bool
	source  string
	version uint64
	// evidenceOnce writes evidenceText, the estimator's Evidence for pod, when a reason first
	// needs it.
	evidenceOnce sync.Once
	evidenceText string
	// stale counts the nodes with stale statistics (chunks add to it concurrently).
	stale atomic.Int64
	// placed holds, by node name, the load placed since the node's statistics (nil: none),
	// when the agent has no NodePods; with one, indexed tells to look it up per node.
	placed  map[string]load
	indexed bool
	// list is the shared list of nodes the call's nodes are in (framework.Positions), nil
	// when the call carries none (the extender's).
	list framework.NodeList
}

// positioned sets c.list from ctx and returns the positions of the call's nodes in it (nil
// when ctx carries none, or positions for another number of nodes).
func (c *call) positioned(ctx context.Context, nodes []*corev1.Node) []int32 {
	p := framework.PositionsOf(ctx)
	if p == nil || len(p.At) != len(nodes) {
		return nil
	}
	c.list = p.List
	return p.At
}

// podEstimate is a pod's estimate at an estimator's version.
type podEstimate struct {
	pod     *corev1.Pod
	version uint64
	e       Estimate
}

func (a *Agent) newCall(pod *corev1.Pod) *call {
	v := a.estimator.Version() // before the estimate: an answer is never keyed by a newer version than it read
	var e Estimate
	if l := a.lastEstimate.Load(); l != nil && l.pod == pod && l.version == v {
		e = l.e
	} else {
		e = a.estimator.Estimate(pod)
		a.lastEstimate.Store(&podEstimate{pod: pod, version: v, e: e})
	}
	return &call{d: demandOf(e), fit: demand{cpu: e.RequestCPU, memory: e.RequestMemory}, now: a.now(),
		pod: pod, learned: e.Learned, source: e.Source, version: v}
}

// evidence is the estimator's Evidence for the call's pod, asked once per call.
func (c *call) evidence(est Estimator) string {
	c.evidenceOnce.Do(func() { c.evidenceText = est.Evidence(c.pod) })
	return c.evidenceText
}

// counted counts c's pod in safe_estimates_total.
func (a *Agent) counted(c *call) {
	i := 0
	if c.learned {
		i = 1
	}
	if a.estimated[i] != nil {
		a.estimated[i].Inc()
	}
}

// done publishes the call's count of stale nodes under function key.
func (a *Agent) done(key string, c *call) {
	if g := a.staleNodes[key]; g != nil {
		g.Set(float64(c.stale.Load()))
	}
}

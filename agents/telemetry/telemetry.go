// Package telemetry is a drop-in for Intel's Telemetry Aware Scheduling (TAS): it reads the
// TASPolicy objects TAS users hold (yamlfiles/telemetry-policy-crd.yaml) and schedules the
// pods labelled telemetry-policy=<policy> by live node metrics, read in the background from the
// custom metrics API or from Prometheus: dontschedule filters nodes out, scheduleonmetric
// scores them, deschedule and labeling label nodes. Beyond TAS, each value carries its age and
// a stale one is never taken as current, scores are continuous, and labels do not flap. See
// README.md.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Name is the agent's name and build tag.
const Name = "telemetry"

// Function names: the routes /scheduler/predicates/telemetry-policy and
// /scheduler/priorities/telemetry-policy.
const (
	FilterPolicy   = "telemetry-policy"
	PriorityPolicy = "telemetry-policy"
)

// TAS's verbs, the routes /scheduler/filter and /scheduler/prioritize: the scheduler
// configuration TAS ships calls them, and they serve the same functions.
const (
	TASFilterVerb     = "filter"
	TASPrioritizeVerb = "prioritize"
)

// StalePolicy is what a stale or missing metric does in the filter (TELEMETRY_STALE).
type StalePolicy string

// Stale policies.
const (
	StaleIgnore StalePolicy = "ignore"
	StaleReject StalePolicy = "reject"
)

// Choices implements settings.Chooser.
func (StalePolicy) Choices() []string { return settings.Names(StaleIgnore, StaleReject) }

// SourceKind is where the agent reads metrics (TELEMETRY_METRICS_SOURCE).
type SourceKind string

// Choices implements settings.Chooser.
func (SourceKind) Choices() []string { return settings.Names(SourceCustomMetrics, SourcePrometheus) }

// Config holds the agent's settings.
type Config struct {
	MetricsSource  SourceKind         `json:"metricsSource" env:"TELEMETRY_METRICS_SOURCE" flag:"telemetry-metrics-source" help:"where metrics come from: custom-metrics (the custom metrics API, as TAS) or prometheus (PROMETHEUS_URL)"`
	PrometheusURL  string             `json:"prometheusURL" env:"PROMETHEUS_URL" flag:"prometheus-url" help:"Prometheus server queried with TELEMETRY_METRICS_SOURCE=prometheus (http://host:9090)"`
	NodeLabel      string             `json:"nodeLabel" env:"TELEMETRY_NODE_LABEL" flag:"telemetry-node-label" help:"Prometheus series label whose value is the node name"`
	SyncPeriod     framework.Duration `json:"syncPeriod" range:"[100ms,1h]" env:"TELEMETRY_SYNC_PERIOD" flag:"telemetry-sync-period" help:"how often metric values are read, in the background"`
	MaxAge         framework.Duration `json:"maxAge" range:"[1s,24h]" env:"TELEMETRY_MAX_AGE" flag:"telemetry-max-age" help:"a metric value older than this is stale"`
	Stale          StalePolicy        `json:"stale" env:"TELEMETRY_STALE" flag:"telemetry-stale" help:"what a stale or missing metric does in the filter: ignore (the rule does not hold) or reject (the node is rejected)"`
	Deschedule     bool               `json:"deschedule" env:"TELEMETRY_DESCHEDULE" flag:"telemetry-deschedule" help:"write the deschedule (<policy>=violating) and labeling node labels"`
	DescheduleHold framework.Duration `json:"descheduleHold" range:"[0s,24h]" env:"TELEMETRY_DESCHEDULE_HOLD" flag:"telemetry-deschedule-hold" help:"how long a label change must hold (a violation, or its end) before it is written"`
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{
		MetricsSource: SourceCustomMetrics, NodeLabel: "node", SyncPeriod: framework.Duration(5 * time.Second), MaxAge: framework.Duration(time.Minute),
		Stale: StaleIgnore, Deschedule: true, DescheduleHold: framework.Duration(30 * time.Second),
	}
}

// Validate reports every bad field, each as a settings.FieldError.
func (c Config) Validate() error {
	errs := []error{settings.Check(c)}
	if c.MetricsSource == SourcePrometheus {
		if c.PrometheusURL == "" {
			errs = append(errs, settings.Fieldf("prometheusURL", "is required with TELEMETRY_METRICS_SOURCE=prometheus"))
		}
		if c.NodeLabel == "" {
			errs = append(errs, settings.Fieldf("nodeLabel", "must not be empty"))
		}
	}
	if c.MaxAge > 0 && c.SyncPeriod > 0 && c.MaxAge <= c.SyncPeriod {
		errs = append(errs, settings.Fieldf("maxAge", "%s is not longer than the sync period %s: every value would go stale between reads", c.MaxAge, c.SyncPeriod))
	}
	return errors.Join(errs...)
}

// Registration offers the agent to the programs that run agents (agents.All, the extender's
// build-tagged file): its functions, and its port and weights in the shipped deployments.
var Registration = framework.Register(Name, DefaultConfig, New, framework.Offer{
	Filters:      []string{FilterPolicy},
	Prioritizers: []framework.Weighted{{Name: PriorityPolicy, Weight: 1}},
	Port:         5405,
	// TAS pods request telemetry/scheduling: 1, a resource no node has; TAS's configuration
	// lists it, so that the scheduler does not count it and calls the extender for them.
	ManagedResources: []string{"telemetry/scheduling"},
	Cluster:          framework.ClusterInformers, // TASPolicies
})

// Agent is the telemetry agent.
type Agent struct {
	cfg      Config
	log      *logrus.Entry
	h        framework.Handle
	dyn      dynamic.Interface
	source   Source
	policies *policyStore
	values   atomic.Pointer[Values]
	labels   *labeler
	metrics  *agentMetrics
	now      func() time.Time
	// policiesSynced waits until the policy informer has delivered its first list (false when
	// its context ends first).
	policiesSynced func(context.Context) bool
	// nodes lists the nodes to label.
	nodes func() []*corev1.Node
}

var (
	_ framework.Agent   = (*Agent)(nil)
	_ framework.Starter = (*Agent)(nil)
)

// New returns the agent for cfg. It needs cluster access: it watches TASPolicy objects
// (h.Dynamic), reads the custom metrics API (h.KubeConfig) and labels nodes (h.Informers'
// node lister, h.Client).
func New(cfg Config, h framework.Handle) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid telemetry config: %w", err)
	}
	if h.Informers == nil || h.Dynamic == nil || h.KubeConfig == nil || h.Client == nil {
		return nil, fmt.Errorf("%w: the telemetry agent watches TASPolicy objects and labels nodes; "+
			"set CLUSTER_ACCESS=auto and give a kubeconfig (KUBECONFIG), or run in a pod with a service account", framework.ErrNoCluster)
	}
	rc := rest.CopyConfig(h.KubeConfig)
	rc.ContentType, rc.AcceptContentTypes = "application/json", "application/json"
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	var src Source
	switch cfg.MetricsSource {
	case SourcePrometheus:
		src, err = NewPrometheus(cfg.PrometheusURL, cfg.NodeLabel)
	default:
		src, err = NewCustomMetrics(rc, max(cfg.SyncPeriod.D(), 5*time.Second))
	}
	if err != nil {
		return nil, err
	}
	return newAgent(cfg, h, dyn, src)
}

// newAgent builds the agent from its parts (tests give a fake dynamic client, informer factory
// and source). h.Dynamic is required: the policy informer is one of its informers.
func newAgent(cfg Config, h framework.Handle, dyn dynamic.Interface, src Source) (*Agent, error) {
	a := &Agent{cfg: cfg, log: h.Log, h: h, dyn: dyn, source: src, now: time.Now}
	a.policies = newPolicyStore()
	synced, err := a.watchPolicies(h.Dynamic)
	if err != nil {
		return nil, err
	}
	a.policiesSynced = synced
	a.nodes = func() []*corev1.Node { return nil }
	if h.Informers != nil {
		// The shared node informer: a lister is safe to read from the refresh goroutine, in
		// both modes (plugin mode's Cluster is the scheduler's snapshot, for use within a cycle).
		lister := h.Informers.Core().V1().Nodes().Lister()
		a.nodes = func() []*corev1.Node {
			nodes, _ := lister.List(labels.Everything())
			return nodes
		}
	}
	a.labels = newLabeler(cfg.DescheduleHold.D())
	a.values.Store(&Values{})
	a.metrics = newAgentMetrics(src.Name())
	if h.Metrics != nil {
		if err := a.metrics.register(h.Metrics); err != nil {
			return nil, fmt.Errorf("registering the telemetry metrics: %w", err)
		}
	}
	return a, nil
}

// Name implements framework.Agent.
func (a *Agent) Name() string { return Name }

// Filters implements framework.Agent.
func (a *Agent) Filters() []framework.Filter {
	return []framework.Filter{{Name: FilterPolicy, Func: a.filter, Aliases: []string{TASFilterVerb}}}
}

// Prioritizers implements framework.Agent.
func (a *Agent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{{Name: PriorityPolicy, Func: a.score, Aliases: []string{TASPrioritizeVerb},
		WholeList: true}} // scheduleonmetric ranks the nodes scored together (Scores)
}

// policySyncTimeout bounds Start's wait for the first list of policies.
const policySyncTimeout = 30 * time.Second

// Start implements framework.Starter: it waits (at most policySyncTimeout) for the policy
// informer's first list (the informer runs with the program's, h.Dynamic), reads the metrics once, then refreshes them every
// SyncPeriod until ctx is done.
func (a *Agent) Start(ctx context.Context) error {
	synced := a.policiesSynced
	wait, cancel := context.WithTimeout(ctx, policySyncTimeout)
	defer cancel()
	if _, err := a.dyn.Resource(PolicyResource).List(wait, metav1.ListOptions{Limit: 1}); apierrors.IsNotFound(err) {
		// No CRD: nothing to wait for. The informer keeps trying and picks policies up once
		// the CRD is installed.
		a.log.Errorf("the TASPolicy CRD (taspolicies.telemetry.intel.com) is not installed: apply yamlfiles/telemetry-policy-crd.yaml")
	} else if !synced(wait) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.log.Errorf("TASPolicy objects not listed after %s: is the CRD installed (yamlfiles/telemetry-policy-crd.yaml) "+
			"and may the extender list taspolicies.telemetry.intel.com? Policies will apply once they are listed", policySyncTimeout)
	}
	a.refresh(ctx)
	go func() {
		t := time.NewTicker(a.cfg.SyncPeriod.D())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a.refresh(ctx)
			}
		}
	}()
	return nil
}

// dropAfter is how many MaxAge a sample is kept after its last read; past it, it is missing.
const dropAfter = 10

// refresh reads every metric the valid policies use, publishes the new snapshot, then brings
// the node labels up to date. A metric whose read fails keeps its previous samples, which age.
func (a *Agent) refresh(ctx context.Context) {
	start := a.now()
	prev := *a.values.Load()
	next := Values{}
	read, stale, held := 0, 0, 0
	for _, m := range a.policies.metrics() {
		merged := map[string]Sample{}
		for node, s := range prev[m] {
			if start.Sub(s.Time) <= dropAfter*a.cfg.MaxAge.D() {
				merged[node] = s
			}
		}
		rctx, cancel := context.WithTimeout(ctx, max(a.cfg.SyncPeriod.D(), 5*time.Second))
		got, err := a.source.Read(rctx, m, start)
		cancel()
		if err != nil {
			a.metrics.errors.Inc()
			a.log.WithError(err).Warnf("reading metric %s", m)
		}
		for node, s := range got {
			merged[node] = s
		}
		read += len(got)
		for _, s := range merged {
			if start.Sub(s.Time) > a.cfg.MaxAge.D() {
				stale++
			}
		}
		next[m] = merged
		held += len(merged)
	}
	a.values.Store(&next)
	a.metrics.read.Add(float64(read))
	a.metrics.stale.Set(float64(stale))
	a.metrics.values.Set(float64(held))
	a.metrics.lastRefresh.Set(float64(a.now().UnixNano()) / 1e9)
	if a.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		a.log.Debugf("metrics refreshed: %d values read, %d stale, in %s", read, stale, a.now().Sub(start))
	}
	if a.cfg.Deschedule {
		a.reconcileLabels(ctx, start, next)
	}
}

// filter rejects the nodes that violate the pod's policy's dontschedule strategy. A pod
// without the telemetry-policy label passes everywhere; a pod naming a policy that does not
// exist or does not validate is rejected everywhere, with the reason.
func (a *Agent) filter(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
	out := make([]framework.Verdict, len(nodes))
	name, ok := pod.Labels[PodLabel]
	if !ok {
		return out, nil
	}
	p, problem := a.policies.get(pod.Namespace, name)
	if p == nil {
		for i := range out {
			out[i] = framework.RejectUnresolvable(problem)
		}
		return out, nil
	}
	s := p.Strategies[DontSchedule]
	if s == nil {
		return out, nil
	}
	vals, now := *a.values.Load(), a.now()
	for i, n := range nodes {
		j := Judge(s, vals, n.Name, now, a.cfg.MaxAge.D())
		switch {
		case j.Violated:
			out[i] = framework.RejectUnresolvable(j.Reason(p.Key(), s.AllOf()))
		case j.Undecided && a.cfg.Stale == StaleReject:
			out[i] = framework.RejectUnresolvable("telemetry policy " + p.Key() + ": " + strings.Join(j.Unknown, ", ") +
				" (TELEMETRY_STALE=reject)")
		}
	}
	return out, nil
}

// score orders the nodes by the first rule of the pod's policy's scheduleonmetric strategy
// (see Scores). Every node scores 0 for a pod without a policy or strategy.
func (a *Agent) score(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	name, ok := pod.Labels[PodLabel]
	if !ok {
		return make([]int64, len(nodes)), nil
	}
	p, _ := a.policies.get(pod.Namespace, name)
	if p == nil || p.Strategies[ScheduleOnMetric] == nil {
		return make([]int64, len(nodes)), nil
	}
	r := p.Strategies[ScheduleOnMetric].Rules[0]
	vals, now := *a.values.Load(), a.now()
	v, ok2 := make([]float64, len(nodes)), make([]bool, len(nodes))
	for i, n := range nodes {
		s, _, fresh := vals.Lookup(r.Metricname, n.Name, now, a.cfg.MaxAge.D())
		v[i], ok2[i] = s.Value, fresh
	}
	return Scores(r, v, ok2), nil
}

// agentMetrics are the agent's Prometheus metrics, labelled by source.
type agentMetrics struct {
	read        prometheus.Counter
	errors      prometheus.Counter
	stale       prometheus.Gauge
	values      prometheus.Gauge
	lastRefresh prometheus.Gauge
	labelWrites prometheus.Counter
}

func newAgentMetrics(source string) *agentMetrics {
	l := prometheus.Labels{"source": source}
	return &agentMetrics{
		read: prometheus.NewCounter(prometheus.CounterOpts{Name: "telemetry_values_read_total", ConstLabels: l,
			Help: "Metric values (one per metric and node) read from the source."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "telemetry_read_errors_total", ConstLabels: l,
			Help: "Metric reads that failed."}),
		stale: prometheus.NewGauge(prometheus.GaugeOpts{Name: "telemetry_stale_values", ConstLabels: l,
			Help: "Metric values older than TELEMETRY_MAX_AGE after the last refresh."}),
		values: prometheus.NewGauge(prometheus.GaugeOpts{Name: "telemetry_values", ConstLabels: l,
			Help: "Metric values (one per metric and node) held after the last refresh: the denominator of telemetry_stale_values."}),
		lastRefresh: prometheus.NewGauge(prometheus.GaugeOpts{Name: "telemetry_last_refresh_timestamp_seconds", ConstLabels: l,
			Help: "When the metric values were last refreshed (Unix time)."}),
		labelWrites: prometheus.NewCounter(prometheus.CounterOpts{Name: "telemetry_node_label_patches_total",
			Help: "Node label patches written by the deschedule and labeling strategies."}),
	}
}

func (m *agentMetrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.read, m.errors, m.stale, m.values, m.lastRefresh, m.labelWrites} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Package annotator writes the node annotations the agents read when they run without cluster
// access or need usage history: every node's allocation (requested-*, free-*) from the
// informer cache, and its usage statistics (mean, standard deviation and forecast of free cpu
// and memory over a window) from Prometheus or the metrics API. See README.md.
package annotator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// FieldManager names the annotator in the nodes' managed fields.
const FieldManager = "node-annotator"

// Cluster is what the annotator reads of the cluster (cluster.Cache provides it).
type Cluster interface {
	HasSynced() bool
	Nodes() []*corev1.Node
	Allocated(node string) framework.Amounts
}

// Annotator computes and patches the annotations. Run drives it; Cycle is one pass.
type Annotator struct {
	cfg     Config
	cluster Cluster
	client  kubernetes.Interface
	source  Source
	limiter flowcontrol.RateLimiter
	log     *logrus.Entry
	metrics *metrics

	lastStats time.Time
}

// New returns an annotator that reads cluster, samples source (nil: allocation only) and
// patches nodes through client. reg receives its metrics (nil: none).
func New(cfg Config, cluster Cluster, client kubernetes.Interface, source Source, log *logrus.Entry,
	reg prometheus.Registerer) (*Annotator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid annotator configuration: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Annotator{
		cfg: cfg, cluster: cluster, client: client, source: source, log: log, metrics: m,
		limiter: flowcontrol.NewTokenBucketRateLimiter(float32(cfg.PatchQPS), cfg.PatchBurst),
	}, nil
}

// Run waits for the cluster cache, then runs a cycle every INTERVAL until ctx is done.
func (a *Annotator) Run(ctx context.Context) error {
	for !a.cluster.HasSynced() {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
	a.log.Info("cluster cache synced; annotating nodes")
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	for {
		a.Cycle(ctx, time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Result counts what one cycle did.
type Result struct {
	// Nodes is the number of nodes seen.
	Nodes int
	// Patched and Failed count node patches that succeeded and failed.
	Patched, Failed int
	// Statistics tells that the cycle computed statistics (one is due every STATS_INTERVAL).
	Statistics bool
	// BadData counts nodes whose statistics were left untouched for bad data.
	BadData int
}

// Cycle computes every node's annotations at now and patches those that changed.
func (a *Annotator) Cycle(ctx context.Context, now time.Time) Result {
	nodes := a.cluster.Nodes()
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	res := Result{Nodes: len(nodes)}
	a.metrics.cycles.Inc()

	var series map[string]NodeSeries
	var problems map[string]string
	if a.source != nil {
		if err := a.source.Sample(ctx, nodes, now); err != nil {
			a.metrics.sourceErrors.Inc()
			a.log.WithField("source", a.source.Name()).Warnf("sampling failed: %v", err)
		}
		if a.lastStats.IsZero() || now.Sub(a.lastStats) >= a.cfg.StatsInterval {
			a.lastStats = now
			var err error
			series, problems, err = a.source.Series(ctx, nodes, now)
			if err != nil {
				a.metrics.sourceErrors.Inc()
				a.log.WithField("source", a.source.Name()).Warnf("no statistics this cycle, every node's are left as they are: %v", err)
			} else {
				res.Statistics = true
			}
		}
	}

	warming := 0
	var firstErr error
	for _, n := range nodes {
		want := a.changedAllocation(n)
		if res.Statistics {
			stats, problem, fewSamples := a.statistics(n, series, problems)
			switch {
			case fewSamples:
				warming++
				a.log.WithField("node", n.Name).Debugf("statistics left as they are: %s", problem)
			case problem != "":
				res.BadData++
				a.metrics.badData.Inc()
				a.log.WithFields(logrus.Fields{"node": n.Name, "source": a.source.Name()}).
					Warnf("bad usage data, the node's statistics are left as they are: %s", problem)
			default:
				a.changedStatistics(n, stats, now, want)
			}
		}
		if len(want) == 0 {
			continue
		}
		if err := a.patch(ctx, n.Name, want); err != nil {
			if ctx.Err() != nil {
				return res
			}
			if apierrors.IsNotFound(err) {
				continue // deleted since the cache saw it
			}
			res.Failed++
			a.metrics.patches.WithLabelValues("error").Inc()
			a.log.WithField("node", n.Name).Debugf("patch failed: %v", err)
			if firstErr == nil {
				firstErr = fmt.Errorf("node %s: %w", n.Name, err)
			}
			continue
		}
		res.Patched++
		a.metrics.patches.WithLabelValues("ok").Inc()
	}
	if warming > 0 {
		a.log.Infof("%d nodes have fewer than STATS_MIN_SAMPLES (%d) samples yet; their statistics wait", warming, a.cfg.MinSamples)
	}
	if res.Failed > 0 {
		a.log.Warnf("%d of %d node patches failed, they will be retried next cycle; first error: %v",
			res.Failed, res.Failed+res.Patched, firstErr)
	}
	a.log.WithFields(logrus.Fields{"nodes": res.Nodes, "patched": res.Patched, "failed": res.Failed,
		"statistics": res.Statistics, "badData": res.BadData}).Debug("cycle done")
	return res
}

// changedAllocation returns the allocation annotations of n that differ from what n carries.
func (a *Annotator) changedAllocation(n *corev1.Node) map[string]string {
	want := map[string]string{}
	for k, v := range allocationAnnotations(n, a.cluster.Allocated(n.Name), corev1.ResourceName(a.cfg.GPUResource)) {
		if old, ok := n.Annotations[k]; !ok || old != v {
			want[k] = v
		}
	}
	return want
}

// statistics returns n's statistics annotations, or the problem that keeps them from being
// written; fewSamples tells that the problem is only a window not yet filled.
func (a *Annotator) statistics(n *corev1.Node, series map[string]NodeSeries, problems map[string]string) (map[string]string, string, bool) {
	if p, ok := problems[n.Name]; ok {
		return nil, p, false
	}
	s, ok := series[n.Name]
	if !ok {
		return nil, "no samples for the node", false
	}
	cpu, errCPU := Summarize(s.CPU, a.cfg.MinSamples, a.cfg.Holt)
	mem, errMem := Summarize(s.Memory, a.cfg.MinSamples, a.cfg.Holt)
	if errCPU == nil && errMem == nil {
		return statisticsAnnotations(cpu, mem), "", false
	}
	var few *fewSamplesError
	fewSamples := (errCPU == nil || errors.As(errCPU, &few)) && (errMem == nil || errors.As(errMem, &few))
	var msg string
	if errCPU != nil {
		msg = "free cpu: " + errCPU.Error()
	}
	if errMem != nil {
		if msg != "" {
			msg += "; "
		}
		msg += "free memory: " + errMem.Error()
	}
	return nil, msg, fewSamples
}

// changedStatistics adds to want the statistics that moved beyond the tolerance, with the
// timestamp; all of them when the timestamp is due for a refresh.
func (a *Annotator) changedStatistics(n *corev1.Node, stats map[string]string, now time.Time, want map[string]string) {
	ts, ok := n.Annotations[nodestats.StatisticsTimestamp]
	refresh := stale(ts, ok, now, a.cfg.Refresh)
	changed := false
	for k, v := range stats {
		old, ok := n.Annotations[k]
		if refresh || !withinTolerance(old, ok, v, float64(a.cfg.Tolerance)/100) {
			want[k] = v
			changed = true
		}
	}
	if changed {
		want[nodestats.StatisticsTimestamp] = nodestats.FormatTimestamp(now)
		alloc := a.cluster.Allocated(n.Name)
		want[nodestats.StatisticsRequestedCPU] = nodestats.FormatInt(alloc[corev1.ResourceCPU])
		want[nodestats.StatisticsRequestedMemory] = nodestats.FormatInt(alloc[corev1.ResourceMemory])
		want[nodestats.StatisticsWindow] = nodestats.FormatWindow(a.cfg.Window)
	}
}

// patch merge-patches node's annotations with want, once the rate limiter allows.
func (a *Annotator) patch(ctx context.Context, node string, want map[string]string) error {
	if err := a.limiter.Wait(ctx); err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// Handler serves /healthz (the process runs), /readyz (the cluster cache has synced) and
// /metrics (gatherer's metrics).
func Handler(ready func() bool, gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: the cluster cache has not synced")
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	return mux
}

type metrics struct {
	cycles, badData, sourceErrors prometheus.Counter
	patches                       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		cycles: prometheus.NewCounter(prometheus.CounterOpts{Name: "node_annotator_cycles_total",
			Help: "Annotation cycles run."}),
		badData: prometheus.NewCounter(prometheus.CounterOpts{Name: "node_annotator_bad_data_total",
			Help: "Node statistics left untouched for bad data (counted per node and cycle)."}),
		sourceErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "node_annotator_source_errors_total",
			Help: "Failures of the statistics source as a whole."}),
		patches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "node_annotator_patches_total",
			Help: "Node patches, by result (ok, error)."}, []string{"result"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.cycles, m.badData, m.sourceErrors, m.patches} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the annotator's metrics: %w", err)
		}
	}
	return m, nil
}

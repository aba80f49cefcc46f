package usage

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the learner's Prometheus metrics.
type Metrics struct {
	workloads prometheus.Gauge
	coverage  prometheus.Gauge
	pods      *prometheus.GaugeVec
	errors    *prometheus.HistogramVec
	rounds    *prometheus.CounterVec
	dropped   prometheus.Gauge
}

// NewMetrics registers the learner's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		workloads: prometheus.NewGauge(prometheus.GaugeOpts{Name: "usage_learner_workloads",
			Help: "Workloads the usage learner keeps."}),
		coverage: prometheus.NewGauge(prometheus.GaugeOpts{Name: "usage_learner_estimate_coverage_ratio",
			Help: "Share of the pods observed in the last round whose workload has a trusted estimate."}),
		pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "usage_learner_pods",
			Help: "Pods of the last round: observed (with usage and a workload), estimated (trusted estimate)."}, []string{"state"}),
		// |log(realized / estimate)|: 0.1 is about 10 % off, 0.69 a factor of 2.
		errors: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "usage_learner_estimate_error",
			Help:    "|ln(realized usage / estimate)| of pods whose workload had a trusted estimate, per resource; by=request is the request's own error on the same pods.",
			Buckets: []float64{0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3}}, []string{"resource", "by"}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usage_learner_rounds_total",
			Help: "Learning rounds, by result (ok, error: the source failed, skipped: not the leader)."}, []string{"result"}),
		dropped: prometheus.NewGauge(prometheus.GaugeOpts{Name: "usage_learner_store_dropped_workloads",
			Help: "Workloads the last write left out of the store (shards over the ConfigMap size bound)."}),
	}
	reg.MustRegister(m.workloads, m.coverage, m.pods, m.errors, m.rounds, m.dropped)
	return m
}

// observeError records |ln(realized / estimate)| when both are positive.
func (m *Metrics) observeError(resource, by string, realized, estimate float64) {
	if m == nil || !(realized > 0) || !(estimate > 0) {
		return
	}
	m.errors.WithLabelValues(resource, by).Observe(math.Abs(math.Log(realized / estimate)))
}

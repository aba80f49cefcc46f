package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the extender's Prometheus series, labelled by agent, function and verb.
type metrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	nodes    *prometheus.GaugeVec
	verdicts *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extender_requests_total",
			Help: "Extender requests served, by agent, function, verb and HTTP status code.",
		}, []string{"agent", "function", "verb", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extender_request_errors_total",
			Help: "Extender requests answered with an error: a status other than 200, or an Error in the result.",
		}, []string{"agent", "function", "verb"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "extender_request_duration_seconds",
			Help:    "Time to serve an extender request, from its headers to the end of the answer.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"agent", "function", "verb"}),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "extender_request_nodes",
			Help: "Nodes in the latest request answered with 200 (the denominator of an agent's per-call node gauges, such as safe_stale_nodes).",
		}, []string{"agent", "function", "verb"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "extender_filter_verdicts_total",
			Help: "Nodes judged by filter functions, by verdict: passed, failed (preemption may help) or unresolvable.",
		}, []string{"agent", "function", "verdict"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.errors, m.latency, m.nodes, m.verdicts} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// routeMetrics are the series of one route, resolved once so that a request costs no label lookup
// beyond its status code.
type routeMetrics struct {
	m                     *metrics
	agent, function, verb string
	ok                    prometheus.Counter
	errors                prometheus.Counter
	latency               prometheus.Observer
	nodes                 prometheus.Gauge
	// passed, failed, unresolvable count a filter route's verdicts (nil for other verbs).
	passed, failed, unresolvable prometheus.Counter
}

func (m *metrics) forRoute(agent, function, verb string) *routeMetrics {
	r := &routeMetrics{
		m: m, agent: agent, function: function, verb: verb,
		ok:      m.requests.WithLabelValues(agent, function, verb, "200"),
		errors:  m.errors.WithLabelValues(agent, function, verb),
		latency: m.latency.WithLabelValues(agent, function, verb),
		nodes:   m.nodes.WithLabelValues(agent, function, verb),
	}
	if verb == "filter" {
		r.passed = m.verdicts.WithLabelValues(agent, function, "passed")
		r.failed = m.verdicts.WithLabelValues(agent, function, "failed")
		r.unresolvable = m.verdicts.WithLabelValues(agent, function, "unresolvable")
	}
	return r
}

// verdicts counts the verdicts of one answered filter request.
func (r *routeMetrics) verdicts(v verdictCounts) {
	if r.passed == nil {
		return
	}
	r.passed.Add(float64(v.passed))
	r.failed.Add(float64(v.failed))
	r.unresolvable.Add(float64(v.unresolvable))
}

// verdictCounts are the verdicts of one filter answer.
type verdictCounts struct{ passed, failed, unresolvable int }

func (r *routeMetrics) observe(status int, resultError bool, nodes int, elapsed time.Duration) {
	if status == 200 {
		r.ok.Inc()
		r.nodes.Set(float64(nodes))
	} else {
		r.m.requests.WithLabelValues(r.agent, r.function, r.verb, strconv.Itoa(status)).Inc()
	}
	if status != 200 || resultError {
		r.errors.Inc()
	}
	r.latency.Observe(elapsed.Seconds())
}

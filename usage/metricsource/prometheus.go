package metricsource

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// Default Prometheus queries of the nodes (node_exporter metrics). Each must return one series
// per node, carrying the node label (PROMETHEUS_NODE_LABEL), in millicores for cpu and bytes
// for memory.
const (
	// DefaultNodeCPUQuery is idle cpu in millicores: the per-second rate of idle cpu seconds
	// summed over the node's cpus.
	DefaultNodeCPUQuery = `sum by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m])) * 1000`
	// DefaultNodeMemoryQuery is memory available to new work, in bytes.
	DefaultNodeMemoryQuery = `node_memory_MemAvailable_bytes`
	// DefaultNodeLabel is the label whose value names the node: node_exporter's instance
	// (host:port), matched without its port to the node's name or one of its addresses.
	DefaultNodeLabel = "instance"
)

// Default Prometheus queries of the pods: cAdvisor's container series (the kubelet's
// /metrics/cadvisor), summed per pod; each must give one series per pod carrying the labels
// namespace and pod.
const (
	// DefaultPodCPUQuery is cpu in cores: the rate of the containers' cpu seconds.
	DefaultPodCPUQuery = `sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!="",container!="POD"}[5m]))`
	// DefaultPodMemoryQuery is the containers' working set in bytes.
	DefaultPodMemoryQuery = `sum by (namespace, pod) (container_memory_working_set_bytes{container!="",container!="POD"})`
)

// Prometheus is the source that asks a Prometheus server: for the nodes' window of samples,
// one range query per resource each statistics cycle (Prometheus keeps the history); for the
// pods' latest usage, one instant query per resource.
type Prometheus struct {
	api   promv1.API
	cfg   PrometheusConfig
	label model.LabelName
}

var _ Source = (*Prometheus)(nil)

// PrometheusConfig configures the Prometheus source: the node annotator's settings
// (PROMETHEUS_*, STATS_WINDOW) and the learner's pod queries (USAGE_PROMETHEUS_*_QUERY).
type PrometheusConfig struct {
	URL string
	// CPUQuery and MemoryQuery give each node's free cpu and memory (PROMETHEUS_CPU_QUERY,
	// PROMETHEUS_MEMORY_QUERY), matched to nodes by NodeLabel.
	CPUQuery, MemoryQuery string
	NodeLabel             string
	Window, Step, Timeout time.Duration
	// PodCPUQuery and PodMemoryQuery give each pod's usage (USAGE_PROMETHEUS_CPU_QUERY,
	// USAGE_PROMETHEUS_MEMORY_QUERY).
	PodCPUQuery, PodMemoryQuery string
}

// NewPrometheus returns the Prometheus source for cfg.
func NewPrometheus(cfg PrometheusConfig) (*Prometheus, error) {
	client, err := api.NewClient(api.Config{Address: cfg.URL})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %q: %w", cfg.URL, err)
	}
	return &Prometheus{api: promv1.NewAPI(client), cfg: cfg, label: model.LabelName(cfg.NodeLabel)}, nil
}

// Name implements Source.
func (p *Prometheus) Name() string { return "prometheus" }

// Sample implements Source: Prometheus keeps the history itself.
func (p *Prometheus) Sample(context.Context, []*corev1.Node, time.Time) error { return nil }

// Series implements Source. A series whose node label matches no node is ignored; a node that
// two series of one query match is a problem (the query should aggregate, e.g. by instance).
func (p *Prometheus) Series(ctx context.Context, nodes []*corev1.Node, now time.Time) (map[string]NodeSeries, map[string]string, error) {
	index := nodeIndex(nodes)
	problems := map[string]string{}
	r := promv1.Range{Start: now.Add(-p.cfg.Window), End: now, Step: p.cfg.Step}
	cpu, err := p.queryRange(ctx, "cpu", p.cfg.CPUQuery, r, index, problems)
	if err != nil {
		return nil, nil, err
	}
	mem, err := p.queryRange(ctx, "memory", p.cfg.MemoryQuery, r, index, problems)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]NodeSeries, len(nodes))
	for name, c := range cpu {
		if m, ok := mem[name]; ok {
			out[name] = NodeSeries{CPU: c, Memory: m}
			continue
		}
		addProblem(problems, name, "the memory query has no series for the node")
	}
	for name := range mem {
		if _, ok := cpu[name]; !ok {
			addProblem(problems, name, "the cpu query has no series for the node")
		}
	}
	for name := range problems {
		delete(out, name)
	}
	return out, problems, nil
}

func addProblem(problems map[string]string, node, msg string) {
	if p, ok := problems[node]; ok {
		problems[node] = p + "; " + msg
		return
	}
	problems[node] = msg
}

// ask runs one query within the timeout, instant at now or over r when r is not nil, and
// checks that the answer is an instant vector (instant) or a range vector (over r).
func (p *Prometheus) ask(ctx context.Context, what, q string, now time.Time, r *promv1.Range) (model.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	var val model.Value
	var err error
	want, kind := model.ValVector, "an instant vector"
	if r != nil {
		val, _, _, err = p.api.QueryRange(ctx, q, *r)
		want, kind = model.ValMatrix, "a range vector"
	} else {
		val, _, _, err = p.api.Query(ctx, q, now)
	}
	if err != nil {
		return nil, fmt.Errorf("prometheus %s query %q: %w", what, q, err)
	}
	if val.Type() != want {
		return nil, fmt.Errorf("prometheus %s query %q returned a %s, not %s", what, q, val.Type(), kind)
	}
	return val, nil
}

// queryRange runs one range query and returns the samples by node name.
func (p *Prometheus) queryRange(ctx context.Context, what, q string, r promv1.Range, index map[string]string,
	problems map[string]string) (map[string][]float64, error) {
	val, err := p.ask(ctx, what, q, time.Time{}, &r)
	if err != nil {
		return nil, err
	}
	matrix := val.(model.Matrix)
	out := map[string][]float64{}
	for _, s := range matrix {
		node, ok := index[matchKey(string(s.Metric[p.label]))]
		if !ok {
			continue
		}
		if _, dup := out[node]; dup {
			addProblem(problems, node, fmt.Sprintf("several series of the %s query match the node by label %s", what, p.label))
			continue
		}
		if len(s.Histograms) > 0 {
			addProblem(problems, node, fmt.Sprintf("the %s query returned histograms", what))
			continue
		}
		v := make([]float64, len(s.Values))
		for i, sp := range s.Values {
			v[i] = float64(sp.Value)
		}
		out[node] = v
	}
	return out, nil
}

// PodUsage implements Source: a pod needs both series; several series of one query for a pod
// (a query that does not sum by pod) are an error.
func (p *Prometheus) PodUsage(ctx context.Context, now time.Time) ([]PodUsage, error) {
	cpu, err := p.query(ctx, "cpu", p.cfg.PodCPUQuery, now)
	if err != nil {
		return nil, err
	}
	mem, err := p.query(ctx, "memory", p.cfg.PodMemoryQuery, now)
	if err != nil {
		return nil, err
	}
	out := make([]PodUsage, 0, len(cpu))
	for k, c := range cpu {
		m, ok := mem[k]
		if !ok {
			continue
		}
		out = append(out, PodUsage{Namespace: k.ns, Name: k.pod, CPU: c, Memory: m, At: now})
	}
	return out, nil
}

type podKey struct{ ns, pod string }

// query runs one instant query and returns the values by pod.
func (p *Prometheus) query(ctx context.Context, what, q string, now time.Time) (map[podKey]float64, error) {
	val, err := p.ask(ctx, what, q, now, nil)
	if err != nil {
		return nil, err
	}
	vec := val.(model.Vector)
	out := make(map[podKey]float64, len(vec))
	for _, s := range vec {
		k := podKey{string(s.Metric["namespace"]), string(s.Metric["pod"])}
		if k.ns == "" || k.pod == "" {
			return nil, fmt.Errorf("prometheus %s query %q gives a series without namespace and pod labels: %s", what, q, s.Metric)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("prometheus %s query %q gives several series for pod %s/%s: sum them by (namespace, pod)", what, q, k.ns, k.pod)
		}
		out[k] = float64(s.Value)
	}
	return out, nil
}

// nodeIndex maps every name a Prometheus label may use for a node (its name, its addresses)
// to the node's name. A name shared by two nodes is left out rather than guessed.
func nodeIndex(nodes []*corev1.Node) map[string]string {
	index := map[string]string{}
	ambiguous := map[string]bool{}
	add := func(key, node string) {
		if key == "" {
			return
		}
		if prev, ok := index[key]; ok && prev != node {
			ambiguous[key] = true
		}
		index[key] = node
	}
	// Addresses first; names then override them, so that a node's name wins over another
	// node's address.
	sorted := append([]*corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		for _, a := range n.Status.Addresses {
			add(strings.ToLower(a.Address), n.Name)
		}
	}
	for k := range ambiguous {
		delete(index, k)
	}
	for _, n := range sorted {
		index[strings.ToLower(n.Name)] = n.Name
	}
	return index
}

// matchKey is a label value without its port (node_exporter's instance is host:port).
func matchKey(v string) string {
	if host, _, err := net.SplitHostPort(v); err == nil {
		v = host
	}
	return strings.ToLower(v)
}

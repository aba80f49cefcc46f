package annotator

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

// Default Prometheus queries (node_exporter metrics). Each must return one series per node,
// carrying the node label (PROMETHEUS_NODE_LABEL), in millicores for cpu and bytes for memory.
const (
	// DefaultCPUQuery is idle cpu in millicores: the per-second rate of idle cpu seconds summed
	// over the node's cpus.
	DefaultCPUQuery = `sum by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m])) * 1000`
	// DefaultMemoryQuery is memory available to new work, in bytes.
	DefaultMemoryQuery = `node_memory_MemAvailable_bytes`
	// DefaultNodeLabel is the label whose value names the node: node_exporter's instance
	// (host:port), matched without its port to the node's name or one of its addresses.
	DefaultNodeLabel = "instance"
)

// Prometheus is the source that asks a Prometheus server for the window's samples, with one
// range query per resource each statistics cycle: Prometheus keeps the history.
type Prometheus struct {
	api         promv1.API
	cpuQuery    string
	memoryQuery string
	label       model.LabelName
	window      time.Duration
	step        time.Duration
	timeout     time.Duration
}

var _ Source = (*Prometheus)(nil)

// PrometheusConfig configures the Prometheus source.
type PrometheusConfig struct {
	URL                   string
	CPUQuery, MemoryQuery string
	NodeLabel             string
	Window, Step, Timeout time.Duration
}

// NewPrometheus returns the Prometheus source for cfg.
func NewPrometheus(cfg PrometheusConfig) (*Prometheus, error) {
	client, err := api.NewClient(api.Config{Address: cfg.URL})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %q: %w", cfg.URL, err)
	}
	return &Prometheus{
		api: promv1.NewAPI(client), cpuQuery: cfg.CPUQuery, memoryQuery: cfg.MemoryQuery,
		label: model.LabelName(cfg.NodeLabel), window: cfg.Window, step: cfg.Step, timeout: cfg.Timeout,
	}, nil
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
	r := promv1.Range{Start: now.Add(-p.window), End: now, Step: p.step}
	cpu, err := p.query(ctx, "cpu", p.cpuQuery, r, index, problems)
	if err != nil {
		return nil, nil, err
	}
	mem, err := p.query(ctx, "memory", p.memoryQuery, r, index, problems)
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

// query runs one range query and returns the samples by node name.
func (p *Prometheus) query(ctx context.Context, what, q string, r promv1.Range, index map[string]string,
	problems map[string]string) (map[string][]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	val, _, _, err := p.api.QueryRange(ctx, q, r)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s query %q: %w", what, q, err)
	}
	matrix, ok := val.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus %s query %q returned a %s, not a range vector", what, q, val.Type())
	}
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

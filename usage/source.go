package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// PodUsage is one pod's usage at a time: cpu in cores, memory (working set) in bytes, summed
// over its containers.
type PodUsage struct {
	Namespace, Name string
	CPU, Memory     float64
	At              time.Time
}

// Source gives the current usage of the cluster's pods.
type Source interface {
	// Name names the source in logs.
	Name() string
	// PodUsage returns every pod's latest usage; a pod the source does not know is absent.
	PodUsage(ctx context.Context, now time.Time) ([]PodUsage, error)
}

// MetricsAPI reads PodMetrics from metrics.k8s.io/v1beta1 (metrics-server).
type MetricsAPI struct{ client metricsclient.Interface }

var _ Source = MetricsAPI{}

// NewMetricsAPI returns the metrics API source.
func NewMetricsAPI(client metricsclient.Interface) MetricsAPI { return MetricsAPI{client: client} }

// Name implements Source.
func (MetricsAPI) Name() string { return "metrics-api" }

// PodUsage implements Source: one list of every namespace's PodMetrics, at the time
// metrics-server took each (now when it gives none).
func (m MetricsAPI) PodUsage(ctx context.Context, now time.Time) ([]PodUsage, error) {
	list, err := m.client.MetricsV1beta1().PodMetricses(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pod metrics from metrics.k8s.io: %w", err)
	}
	out := make([]PodUsage, 0, len(list.Items))
	for _, pm := range list.Items {
		u := PodUsage{Namespace: pm.Namespace, Name: pm.Name, At: pm.Timestamp.Time}
		if u.At.IsZero() {
			u.At = now
		}
		for _, c := range pm.Containers {
			if q, ok := c.Usage[corev1.ResourceCPU]; ok {
				u.CPU += float64(q.MilliValue()) / 1000
			}
			if q, ok := c.Usage[corev1.ResourceMemory]; ok {
				u.Memory += float64(q.Value())
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// Default Prometheus queries: cAdvisor's container series (the kubelet's /metrics/cadvisor),
// summed per pod; each must give one series per pod carrying the labels namespace and pod.
const (
	// DefaultCPUQuery is cpu in cores: the rate of the containers' cpu seconds.
	DefaultCPUQuery = `sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!="",container!="POD"}[5m]))`
	// DefaultMemoryQuery is the containers' working set in bytes.
	DefaultMemoryQuery = `sum by (namespace, pod) (container_memory_working_set_bytes{container!="",container!="POD"})`
)

// PrometheusConfig configures the Prometheus source.
type PrometheusConfig struct {
	URL                   string
	CPUQuery, MemoryQuery string
	Timeout               time.Duration
}

// Prometheus asks a Prometheus server for every pod's usage with two instant queries.
type Prometheus struct {
	api promv1.API
	cfg PrometheusConfig
}

var _ Source = (*Prometheus)(nil)

// NewPrometheus returns the Prometheus source for cfg.
func NewPrometheus(cfg PrometheusConfig) (*Prometheus, error) {
	client, err := api.NewClient(api.Config{Address: cfg.URL})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %q: %w", cfg.URL, err)
	}
	return &Prometheus{api: promv1.NewAPI(client), cfg: cfg}, nil
}

// Name implements Source.
func (p *Prometheus) Name() string { return "prometheus" }

// PodUsage implements Source: a pod needs both series; several series of one query for a pod
// (a query that does not sum by pod) are an error.
func (p *Prometheus) PodUsage(ctx context.Context, now time.Time) ([]PodUsage, error) {
	cpu, err := p.query(ctx, "cpu", p.cfg.CPUQuery, now)
	if err != nil {
		return nil, err
	}
	mem, err := p.query(ctx, "memory", p.cfg.MemoryQuery, now)
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

type podName struct{ ns, pod string }

func (p *Prometheus) query(ctx context.Context, what, q string, now time.Time) (map[podName]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	val, _, _, err := p.api.Query(ctx, q, now)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s query %q: %w", what, q, err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus %s query %q returned a %s, not an instant vector", what, q, val.Type())
	}
	out := make(map[podName]float64, len(vec))
	for _, s := range vec {
		k := podName{string(s.Metric["namespace"]), string(s.Metric["pod"])}
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

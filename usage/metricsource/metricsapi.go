package metricsource

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// MetricsAPI is the source that reads usage from the Kubernetes metrics API (metrics.k8s.io,
// served by metrics-server). The API gives only the latest usage, so for the nodes the source
// samples it every INTERVAL into a per-node sliding window kept in memory: the statistics need
// the window to fill (STATS_MIN_SAMPLES samples) after a start. A pod's usage is read when
// asked (PodUsage).
//
// Free = allocatable - usage, with allocatable read when the statistics are computed, so that
// the safe agent's used = allocatable - free is the measured usage. It may be negative.
type MetricsAPI struct {
	client metricsclient.Interface
	window time.Duration

	mu sync.Mutex
	// usage holds each node's samples, oldest first, none older than the window.
	usage map[string][]usageSample
}

type usageSample struct {
	at            time.Time
	milliCPU, mem float64
}

var _ Source = (*MetricsAPI)(nil)

// NewMetricsAPI returns the metrics API source keeping window of node samples.
func NewMetricsAPI(client metricsclient.Interface, window time.Duration) *MetricsAPI {
	return &MetricsAPI{client: client, window: window, usage: map[string][]usageSample{}}
}

// Name implements Source.
func (m *MetricsAPI) Name() string { return "metrics-api" }

// Sample implements Source: it lists the nodes' metrics once and appends each node's usage to
// its window, unless the metrics API still shows the sample already taken (metrics-server
// refreshes every 15 s to 60 s).
func (m *MetricsAPI) Sample(ctx context.Context, _ []*corev1.Node, now time.Time) error {
	list, err := m.client.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing node metrics from metrics.k8s.io: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, nm := range list.Items {
		cpu, okc := nm.Usage[corev1.ResourceCPU]
		mem, okm := nm.Usage[corev1.ResourceMemory]
		if !okc || !okm {
			continue
		}
		at := nm.Timestamp.Time
		if at.IsZero() {
			at = now
		}
		w := m.usage[nm.Name]
		if len(w) > 0 && !at.After(w[len(w)-1].at) {
			continue
		}
		m.usage[nm.Name] = append(w, usageSample{at: at, milliCPU: float64(cpu.MilliValue()), mem: float64(mem.Value())})
	}
	m.evictLocked(now)
	return nil
}

// evictLocked drops the samples older than the window, and the windows left empty (nodes
// gone from the cluster).
func (m *MetricsAPI) evictLocked(now time.Time) {
	oldest := now.Add(-m.window)
	for name, w := range m.usage {
		i := 0
		for i < len(w) && w[i].at.Before(oldest) {
			i++
		}
		switch {
		case i == len(w):
			delete(m.usage, name)
		case i > 0:
			// Copy down so the backing array does not grow without bound.
			m.usage[name] = append(w[:0:0], w[i:]...)
		}
	}
}

// Series implements Source.
func (m *MetricsAPI) Series(_ context.Context, nodes []*corev1.Node, now time.Time) (map[string]NodeSeries, map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictLocked(now)
	out := make(map[string]NodeSeries, len(nodes))
	problems := map[string]string{}
	for _, n := range nodes {
		w, ok := m.usage[n.Name]
		if !ok {
			continue
		}
		cpu, okc := n.Status.Allocatable[corev1.ResourceCPU]
		mem, okm := n.Status.Allocatable[corev1.ResourceMemory]
		if !okc || !okm {
			problems[n.Name] = "the node reports no allocatable cpu or memory"
			continue
		}
		allocCPU, allocMem := float64(cpu.MilliValue()), float64(mem.Value())
		s := NodeSeries{CPU: make([]float64, len(w)), Memory: make([]float64, len(w))}
		for i, u := range w {
			s.CPU[i] = allocCPU - u.milliCPU
			s.Memory[i] = allocMem - u.mem
		}
		out[n.Name] = s
	}
	return out, problems, nil
}

// PodUsage implements Source: one list of every namespace's PodMetrics, at the time
// metrics-server took each (now when it gives none).
func (m *MetricsAPI) PodUsage(ctx context.Context, now time.Time) ([]PodUsage, error) {
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

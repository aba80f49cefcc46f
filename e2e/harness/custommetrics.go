package harness

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CustomMetricsGroupVersion is the version of the custom metrics API CustomMetrics serves.
const CustomMetricsGroupVersion = "custom.metrics.k8s.io/v1beta2"

// CustomMetrics is a custom metrics API server (custom.metrics.k8s.io/v1beta2, node metrics
// only) registered with the cluster's aggregation layer: an APIService backed by an ExternalName
// Service naming localhost, so that clients reach it through the real kube-apiserver, as they
// reach a metrics adapter in a cluster. Values are set by the test; each carries its timestamp.
type CustomMetrics struct {
	srv *httptest.Server

	mu       sync.Mutex
	values   map[string]map[string]cmValue // metric -> node -> value
	requests int
}

type cmValue struct {
	v      float64
	frozen time.Time // zero: live, reported with the time of each request
}

// StartCustomMetrics starts the server on a loopback port, registers it (Service and APIService
// v1beta2.custom.metrics.k8s.io in kube-system) and waits until the API server serves it. It is
// stopped when t's cleanups run.
func (c *Cluster) StartCustomMetrics(t T) *CustomMetrics {
	t.Helper()
	m := &CustomMetrics{values: map[string]map[string]cmValue{}}
	m.srv = c.serveAggregatedAPI(t, "custom.metrics.k8s.io", "v1beta2", "e2e-custom-metrics", http.HandlerFunc(m.serve))
	return m
}

// Set makes metric on node value, live: every answer gives it the time of the request.
func (m *CustomMetrics) Set(metric, node string, value float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values[metric] == nil {
		m.values[metric] = map[string]cmValue{}
	}
	m.values[metric][node] = cmValue{v: value}
}

// Freeze stops metric on node from updating: answers keep giving the value with the time of
// this call, as an adapter does for a node whose exporter stopped.
func (m *CustomMetrics) Freeze(metric, node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.values[metric][node]; ok {
		v.frozen = time.Now()
		m.values[metric][node] = v
	}
}

// Requests returns how many metric reads the server answered.
func (m *CustomMetrics) Requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests
}

func (m *CustomMetrics) serve(w http.ResponseWriter, r *http.Request) {
	base := "/apis/" + CustomMetricsGroupVersion
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == base {
		m.mu.Lock()
		var resources []metav1.APIResource
		for metric := range m.values {
			resources = append(resources, metav1.APIResource{Name: "nodes/" + metric, Kind: "MetricValueList", Verbs: []string{"get"}})
		}
		m.mu.Unlock()
		sort.Slice(resources, func(i, j int) bool { return resources[i].Name < resources[j].Name })
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: CustomMetricsGroupVersion, APIResources: resources,
		})
		return
	}
	// /apis/custom.metrics.k8s.io/v1beta2/nodes/<name or *>/<metric>
	rest, ok := strings.CutPrefix(r.URL.Path, base+"/nodes/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 2 {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":404,"reason":"NotFound"}`, http.StatusNotFound)
		return
	}
	name, metric := parts[0], parts[1]
	now := time.Now()
	type item struct {
		DescribedObject map[string]string `json:"describedObject"`
		Metric          map[string]string `json:"metric"`
		Timestamp       metav1.Time       `json:"timestamp"`
		Value           string            `json:"value"`
	}
	items := []item{}
	m.mu.Lock()
	m.requests++
	nodes := make([]string, 0, len(m.values[metric]))
	for n := range m.values[metric] {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		if name != "*" && name != n {
			continue
		}
		v := m.values[metric][n]
		at := now
		if !v.frozen.IsZero() {
			at = v.frozen
		}
		items = append(items, item{
			DescribedObject: map[string]string{"kind": "Node", "name": n, "apiVersion": "/v1"},
			Metric:          map[string]string{"name": metric},
			Timestamp:       metav1.NewTime(at),
			Value:           strconv.FormatFloat(v.v, 'f', -1, 64),
		})
	}
	m.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "MetricValueList", "apiVersion": CustomMetricsGroupVersion, "metadata": map[string]any{}, "items": items,
	})
}

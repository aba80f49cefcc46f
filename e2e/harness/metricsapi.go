package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// serveAggregatedAPI starts handler on a loopback TLS port and registers it with the cluster's
// aggregation layer as group/version: an APIService backed by an ExternalName Service (name,
// in kube-system) naming localhost, so that clients reach it through the real kube-apiserver,
// as they reach metrics-server or a metrics adapter in a cluster. It waits until the API server
// serves the group version (the aggregator found the APIService available); the server is
// closed when t's cleanups run.
func (c *Cluster) serveAggregatedAPI(t T, group, version, name string, handler http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	c.Apply(t, fmt.Appendf(nil, `
apiVersion: v1
kind: Service
metadata: {name: %[3]s, namespace: kube-system}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %[2]s.%[1]s}
spec:
  group: %[1]s
  version: %[2]s
  groupPriorityMinimum: 100
  versionPriority: 200
  insecureSkipTLSVerify: true
  service: {name: %[3]s, namespace: kube-system, port: %[4]s}
`, group, version, name, port), false)
	gv := schema.GroupVersion{Group: group, Version: version}
	err := poll(t.Context(), StartTimeout, func(ctx context.Context) (bool, error) {
		_, err := c.Client.Discovery().ServerResourcesForGroupVersion(gv.String())
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s is not served through the API server: %v", gv, err)
	}
	return srv
}

// MetricsAPIGroupVersion is the version of the resource metrics API MetricsAPI serves.
const MetricsAPIGroupVersion = "metrics.k8s.io/v1beta1"

// ResourceUsage is what a node or a pod uses: cpu in millicores, memory in bytes.
type ResourceUsage struct {
	MilliCPU, Memory int64
}

// MetricsUsage is the usage the resource metrics API reports at one moment: each node's and
// each pod's (by namespace and name). A node or pod missing is one metrics-server has no
// sample of: a get answers 404, a list leaves it out.
type MetricsUsage struct {
	Nodes map[string]ResourceUsage
	Pods  map[types.NamespacedName]ResourceUsage
}

// MetricsAPI is a resource metrics API server (metrics.k8s.io/v1beta1, NodeMetrics and
// PodMetrics, as metrics-server serves them) registered with the cluster's aggregation layer,
// so that the descheduler's KubernetesMetrics source and the node annotator's metrics-api
// source read it through the real kube-apiserver. What it reports comes from the caller's
// usage function, asked at every request and stamped with the time of the request.
type MetricsAPI struct {
	usage   func(context.Context) (MetricsUsage, error)
	nodeGet func(node string, u ResourceUsage) ResourceUsage

	mu       sync.Mutex
	requests map[string]int // "nodes", "pods": reads answered
}

// MetricsWindow is the window each NodeMetrics and PodMetrics reports (metrics-server's default
// resolution).
const MetricsWindow = 15 * time.Second

// StartMetricsAPI starts the server, registers it (Service and APIService
// v1beta1.metrics.k8s.io in kube-system) and waits until the API server serves it. It is stopped
// when t's cleanups run. usage must be safe to call concurrently. nodeGet, when not nil, turns
// the usage of the node a get (not a list) asks for into what the answer reports (the lab's
// time scaling of the descheduler's smoothing); it is called under a lock, one get at a time.
func (c *Cluster) StartMetricsAPI(t T, usage func(context.Context) (MetricsUsage, error), nodeGet func(node string, u ResourceUsage) ResourceUsage) *MetricsAPI {
	t.Helper()
	m := &MetricsAPI{usage: usage, nodeGet: nodeGet, requests: map[string]int{}}
	c.serveAggregatedAPI(t, "metrics.k8s.io", "v1beta1", "e2e-metrics-server", http.HandlerFunc(m.serve))
	return m
}

// Requests returns how many reads of kind ("nodes" or "pods", gets and lists) the server
// answered.
func (m *MetricsAPI) Requests(kind string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[kind]
}

func (m *MetricsAPI) serve(w http.ResponseWriter, r *http.Request) {
	base := "/apis/" + MetricsAPIGroupVersion
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == base {
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: MetricsAPIGroupVersion,
			APIResources: []metav1.APIResource{
				{Name: "nodes", Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
				{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: []string{"get", "list"}},
			},
		})
		return
	}
	// nodes, nodes/<name>, pods, namespaces/<ns>/pods, namespaces/<ns>/pods/<name>
	rest, ok := strings.CutPrefix(r.URL.Path, base+"/")
	parts := strings.Split(rest, "/")
	var kind, namespace, name string
	switch {
	case !ok:
	case len(parts) <= 2 && parts[0] == "nodes":
		kind = "nodes"
		if len(parts) == 2 {
			name = parts[1]
		}
	case len(parts) == 1 && parts[0] == "pods":
		kind = "pods"
	case len(parts) >= 3 && len(parts) <= 4 && parts[0] == "namespaces" && parts[2] == "pods":
		kind, namespace = "pods", parts[1]
		if len(parts) == 4 {
			name = parts[3]
		}
	}
	if kind == "" {
		writeStatus(w, http.StatusNotFound, "NotFound", "no such resource: "+r.URL.Path)
		return
	}
	if sel := r.URL.Query().Get("labelSelector") + r.URL.Query().Get("fieldSelector"); sel != "" && name == "" {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "the e2e metrics server does not filter lists by selector")
		return
	}
	u, err := m.usage(r.Context())
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	m.mu.Lock()
	m.requests[kind]++
	m.mu.Unlock()
	now := metav1.Now()
	window := metav1.Duration{Duration: MetricsWindow}
	list := func(u ResourceUsage) corev1.ResourceList {
		return corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(u.MilliCPU, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(u.Memory, resource.BinarySI),
		}
	}
	if kind == "nodes" {
		node := func(n string) metricsv1beta1.NodeMetrics {
			return metricsv1beta1.NodeMetrics{
				TypeMeta:   metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: MetricsAPIGroupVersion},
				ObjectMeta: metav1.ObjectMeta{Name: n, CreationTimestamp: now},
				Timestamp:  now, Window: window, Usage: list(u.Nodes[n]),
			}
		}
		if name != "" {
			nu, ok := u.Nodes[name]
			if !ok {
				writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("nodemetrics.metrics.k8s.io %q not found", name))
				return
			}
			if m.nodeGet != nil {
				m.mu.Lock()
				u.Nodes[name] = m.nodeGet(name, nu)
				m.mu.Unlock()
			}
			_ = json.NewEncoder(w).Encode(node(name))
			return
		}
		out := metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: MetricsAPIGroupVersion}}
		for _, n := range sortedKeys(u.Nodes, func(a, b string) bool { return a < b }) {
			out.Items = append(out.Items, node(n))
		}
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	pod := func(k types.NamespacedName) metricsv1beta1.PodMetrics {
		return metricsv1beta1.PodMetrics{
			TypeMeta:   metav1.TypeMeta{Kind: "PodMetrics", APIVersion: MetricsAPIGroupVersion},
			ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace, CreationTimestamp: now},
			Timestamp:  now, Window: window,
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: list(u.Pods[k])}},
		}
	}
	if name != "" {
		k := types.NamespacedName{Namespace: namespace, Name: name}
		if _, ok := u.Pods[k]; !ok {
			writeStatus(w, http.StatusNotFound, "NotFound", fmt.Sprintf("podmetrics.metrics.k8s.io %q not found", k))
			return
		}
		_ = json.NewEncoder(w).Encode(pod(k))
		return
	}
	out := metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: MetricsAPIGroupVersion}}
	for _, k := range sortedKeys(u.Pods, func(a, b types.NamespacedName) bool { return a.String() < b.String() }) {
		if namespace == "" || k.Namespace == namespace {
			out.Items = append(out.Items, pod(k))
		}
	}
	_ = json.NewEncoder(w).Encode(out)
}

func sortedKeys[K comparable, V any](m map[K]V, less func(a, b K) bool) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	return keys
}

// writeStatus answers with a metav1.Status, as an API server does.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message,
	})
}

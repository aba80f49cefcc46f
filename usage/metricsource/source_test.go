package metricsource

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// The metrics API's pod usage: containers summed, cpu in cores, at metrics-server's time (now
// when it gives none); a failed list is an error naming the API.
func TestMetricsAPIPodUsage(t *testing.T) {
	c := metricsfake.NewSimpleClientset()
	gvr := metricsv1beta1.SchemeGroupVersion.WithResource("pods")
	for _, pm := range []*metricsv1beta1.PodMetrics{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, Timestamp: metav1.NewTime(t0.Add(-time.Minute)),
			Containers: []metricsv1beta1.ContainerMetrics{
				{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
				{Name: "proxy", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: "job-1"},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}},
	} {
		if err := c.Tracker().Create(gvr, pm, pm.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	got, err := NewMetricsAPI(c, time.Hour).PodUsage(t.Context(), t0)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name > got[j].Name })
	want := []PodUsage{
		{Namespace: "shop", Name: "web-1", CPU: 0.3, Memory: 1<<30 + 64<<20, At: t0.Add(-time.Minute)},
		{Namespace: "batch", Name: "job-1", CPU: 2, At: t0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pod usage (-want +got):\n%s", d)
	}
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is currently unable to handle the request")
	})
	if _, err := NewMetricsAPI(c, time.Hour).PodUsage(t.Context(), t0); err == nil || !strings.Contains(err.Error(), "listing pod metrics from metrics.k8s.io") {
		t.Errorf("a failed list: %v", err)
	}
}

// promAPI answers Prometheus' instant query endpoint with a vector per query.
func promAPI(t *testing.T, vectors map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.URL.Path != "/api/v1/query" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		v, ok := vectors[r.Form.Get("query")]
		if !ok {
			http.Error(w, `{"status":"error","errorType":"bad_data","error":"unknown query"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, v)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func sample(labels string, v float64) string {
	return fmt.Sprintf(`{"metric":{%s},"value":[%d,"%g"]}`, labels, t0.Unix(), v)
}

// Prometheus' pod usage: the pod queries (not the node ones), a pod needing both series; a
// series without namespace and pod, or two for one pod, is an error naming the query.
func TestPrometheusPodUsage(t *testing.T) {
	web, job := `"namespace":"shop","pod":"web-1"`, `"namespace":"batch","pod":"job-1"`
	srv := promAPI(t, map[string]string{
		"pod_cpu": sample(web, 0.3) + "," + sample(job, 2),
		"pod_mem": sample(web, 1<<30),
		"no_pod":  sample(`"namespace":"shop"`, 1),
		"twice":   sample(web, 1) + "," + sample(web, 2),
	})
	src := func(cpu, mem string) *Prometheus {
		p, err := NewPrometheus(PrometheusConfig{URL: srv.URL, CPUQuery: "node_cpu", MemoryQuery: "node_mem",
			PodCPUQuery: cpu, PodMemoryQuery: mem, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := src("pod_cpu", "pod_mem").PodUsage(t.Context(), t0)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]PodUsage{{Namespace: "shop", Name: "web-1", CPU: 0.3, Memory: 1 << 30, At: t0}}, got); d != "" {
		t.Errorf("pod usage (-want +got):\n%s", d)
	}
	for _, c := range []struct{ cpu, want string }{
		{"no_pod", `prometheus cpu query "no_pod" gives a series without namespace and pod labels`},
		{"twice", `prometheus cpu query "twice" gives several series for pod shop/web-1: sum them by (namespace, pod)`},
		{"node_cpu", `prometheus cpu query "node_cpu": bad_data: unknown query`},
	} {
		if _, err := src(c.cpu, "pod_mem").PodUsage(t.Context(), t0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cpu query %s: %v, want %q", c.cpu, err, c.want)
		}
	}
}

func TestNodeIndex(t *testing.T) {
	node := func(name string, addrs ...string) *corev1.Node {
		n := fixtures.MakeNode().Name(name)
		for _, a := range addrs {
			n.Address(corev1.NodeInternalIP, a)
		}
		return n.Obj()
	}
	idx := nodeIndex([]*corev1.Node{
		node("worker-1", "10.0.0.1", "worker-1.example"),
		node("worker-2", "10.0.0.2", "10.0.0.9"),
		node("worker-3", "10.0.0.9"), // shares 10.0.0.9 with worker-2: ambiguous, left out
		node("10.0.0.2"),             // a node named like another's address: the name wins
	})
	cases := map[string]string{
		"worker-1:9100": "worker-1", "WORKER-1": "worker-1", "10.0.0.1:9100": "worker-1", "worker-1.example": "worker-1",
		"10.0.0.2:9100": "10.0.0.2", "10.0.0.9:9100": "", "10.0.0.3": "", "[::1]:9100": "",
	}
	for label, want := range cases {
		if got := idx[matchKey(label)]; got != want {
			t.Errorf("label %q matched %q, want %q", label, got, want)
		}
	}
}

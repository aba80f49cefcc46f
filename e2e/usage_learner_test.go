package e2e

// The usage learner (package usage) inside the node annotator, against a real kube-apiserver
// and a real Prometheus scraping cAdvisor-like series: a Deployment whose pods use twice their
// request is learnt from its first pods, the ConfigMap store shows the estimate, and a restarted
// writer carries on from what the previous one stored.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// cadvisorExporter serves, at each scrape, cAdvisor's container series for pods: cpu seconds
// growing at cores per second, and a constant working set.
type cadvisorExporter struct {
	start time.Time
	mu    sync.Mutex
	pods  map[[2]string]podLoad // namespace, name
}

type podLoad struct{ cores, bytes float64 }

func (e *cadvisorExporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	elapsed := time.Since(e.start).Seconds()
	e.mu.Lock()
	defer e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# TYPE container_cpu_usage_seconds_total counter")
	for k, l := range e.pods {
		fmt.Fprintf(w, "container_cpu_usage_seconds_total{namespace=%q,pod=%q,container=\"main\"} %g\n", k[0], k[1], 10+l.cores*elapsed)
	}
	fmt.Fprintln(w, "# TYPE container_memory_working_set_bytes gauge")
	for k, l := range e.pods {
		fmt.Fprintf(w, "container_memory_working_set_bytes{namespace=%q,pod=%q,container=\"main\"} %g\n", k[0], k[1], l.bytes)
	}
}

// storedWorkload is what the learner's ConfigMaps hold for one workload (usage/encode.go).
type storedWorkload struct {
	Estimate struct {
		Percentile  float64 `json:"percentile"`
		CPURatio    float64 `json:"cpuRatio"`
		MemoryRatio float64 `json:"memoryRatio"`
		Trusted     bool    `json:"trusted"`
	} `json:"estimate"`
	N    int     `json:"n"`
	Peak float64 `json:"peak"`
}

// storedEstimate finds key (kind.namespace.name) in the learner's ConfigMaps, as kubectl get
// configmaps -l app.kubernetes.io/managed-by=kube-safe-scheduler-usage-learner shows them, with
// the writer of its ConfigMap.
func storedEstimate(t *testing.T, c *harness.Cluster, key string) (w storedWorkload, writer string, found bool) {
	t.Helper()
	cms, err := c.Client.CoreV1().ConfigMaps("kube-system").List(t.Context(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kube-safe-scheduler-usage-learner"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if v, ok := cm.Data[key]; ok {
			if err := json.Unmarshal([]byte(v), &w); err != nil {
				t.Fatalf("ConfigMap %s, %s: %q: %v", cm.Name, key, v, err)
			}
			return w, cm.Annotations["usage.kube-safe-scheduler.io/writer"], true
		}
	}
	return w, "", false
}

// grantLearner gives the node annotator's service account what the learner needs beyond the
// annotator's own role (the chart must grant the same): owner chains, its ConfigMaps and Lease.
func grantLearner(t *testing.T, c *harness.Cluster) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node-annotator-usage-learner"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-annotator-usage-learner"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "node-annotator", Namespace: "kube-system"}}}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createDeploymentPods creates Deployment ns/name, its ReplicaSet name-<hash> and n pods of it
// bound to node, each requesting cpu and memory, as the controllers would (none runs here).
func createDeploymentPods(t *testing.T, c *harness.Cluster, name, node string, n int, cpu, memory string) []string {
	t.Helper()
	yes := true
	labels := map[string]string{"app.kubernetes.io/name": name + "-label"}
	d, err := c.Client.AppsV1().Deployments("default").Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const hash = "5d8f9c"
	rsLabels := map[string]string{"app.kubernetes.io/name": name + "-label", "pod-template-hash": hash}
	rs, err := c.Client.AppsV1().ReplicaSets("default").Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + hash, Namespace: "default", Labels: rsLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: rsLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: rsLabels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range n {
		pod, err := harness.PodSpec{Name: fmt.Sprintf("%s-%d", rs.Name, i), NodeName: node, CPU: cpu, Memory: memory, Labels: rsLabels}.Pod()
		if err != nil {
			t.Fatal(err)
		}
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
		if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, pod.Name)
	}
	return names
}

// TestUsageLearner: pods of Deployment default/web request 1 cpu and 256 Mi and use 2 cpu and
// 512 Mi; the learner, reading Prometheus, learns a trusted p90 of about twice the request from
// the first two pods, stores it where kubectl shows it, and a new writer after a restart carries
// on from the stored state rather than from nothing.
func TestUsageLearner(t *testing.T) {
	t.Parallel()
	exporter := &cadvisorExporter{start: time.Now(), pods: map[[2]string]podLoad{}}
	target := httptest.NewServer(exporter)
	defer target.Close()
	prom := startPrometheusFor(t, target.Listener.Addr().String())

	c := harness.StartCluster(t)
	c.CreateNodes(t, harness.NodeSpec{Name: "u1"})
	pods := createDeploymentPods(t, c, "web", "u1", 2, "1", "256Mi")
	exporter.mu.Lock()
	for _, p := range pods {
		exporter.pods[[2]string{"default", p}] = podLoad{cores: 2, bytes: 512 << 20}
	}
	// A pod the cluster does not know teaches nothing.
	exporter.pods[[2]string{"default", "ghost"}] = podLoad{cores: 9, bytes: 9 << 30}
	exporter.mu.Unlock()
	grantLearner(t, c)

	env := map[string]string{
		"STATS_SOURCE": "prometheus", "PROMETHEUS_URL": prom, "PROMETHEUS_NODE_LABEL": "node",
		"USAGE_LEARNER": "true", "USAGE_INTERVAL": "1s", "USAGE_FLUSH_INTERVAL": "1s", "USAGE_STORE_SHARDS": "2",
		"USAGE_MIN_OBSERVATIONS": "6", "USAGE_MIN_SPAN": "2s", "USAGE_LEASE_DURATION": "3s",
		// irate: rate()'s extrapolation is skewed over a series only seconds old.
		"USAGE_PROMETHEUS_CPU_QUERY": `sum by (namespace, pod) (irate(container_cpu_usage_seconds_total{container!=""}[5s]))`,
	}
	p := startAnnotator(t, c, env)

	// Learnt from the first pods: trusted, cpu and memory at about twice the request (p90 is
	// read at its bucket's end: up to 5 % above).
	var first storedWorkload
	var firstWriter string
	deadline := time.Now().Add(90 * time.Second)
	for {
		w, writer, found := storedEstimate(t, c, "deployment.default.web")
		if found && w.Estimate.Trusted && w.N >= 12 {
			first, firstWriter = w, writer
			break
		}
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("no trusted estimate of deployment default/web stored (last: %+v, found %v):\n%s", w, found, p.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("stored before the restart: %+v, %d observations, peak %v bytes", first.Estimate, first.N, first.Peak)
	// Memory is exact: p90 at the end of 2's bucket. Cpu is Prometheus' irate between two
	// scrapes, which jitter on a loaded machine: its p90 of a dozen samples may be a few buckets
	// above 2, never near the request's 1.
	if e := first.Estimate; e.CPURatio < 1.9 || e.CPURatio > 2.6 || e.MemoryRatio < 2 || e.MemoryRatio > 2.1 || e.Percentile != 0.9 {
		t.Errorf("stored estimate %+v, want p90 ratios of about 2", e)
	}
	if first.Peak != 512<<20 {
		t.Errorf("stored memory peak %v, want %d", first.Peak, 512<<20)
	}
	if _, _, found := storedEstimate(t, c, "app.default.ghost"); found {
		t.Error("a pod the cluster does not know was learnt")
	}
	// The annotator's metrics: every observed pod had a trusted estimate in the last round, and
	// the estimate's error is recorded beside the request's.
	metrics := scrape(t, p)
	for _, want := range []string{"usage_learner_estimate_coverage_ratio 1", `usage_learner_pods{state="observed"} 2`,
		`usage_learner_estimate_error_count{by="estimate",resource="cpu"}`, `usage_learner_estimate_error_count{by="request",resource="memory"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	// A restart of the writer: the new one reads the stored state and carries on from it. A
	// new learner starting from nothing would write far fewer observations at first.
	p.Stop()
	p2 := startAnnotator(t, c, env)
	deadline = time.Now().Add(60 * time.Second)
	for {
		w, writer, found := storedEstimate(t, c, "deployment.default.web")
		if found && writer != firstWriter {
			if w.N < first.N || !w.Estimate.Trusted {
				t.Fatalf("the new writer's first write has %d observations (trusted %v), fewer than the %d stored before the restart",
					w.N, w.Estimate.Trusted, first.N)
			}
			t.Logf("the new writer's first write: %+v, %d observations", w.Estimate, w.N)
			break
		}
		if p2.Exited() || time.Now().After(deadline) {
			t.Fatalf("the restarted learner never wrote the store:\n%s", p2.Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, err := os.ReadFile(p2.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`usage learner loaded its store.*workloads=[1-9]`).Match(log) {
		t.Errorf("the restarted annotator did not log loading the stored workloads:\n%s", p2.Tail(30))
	}
}

// scrape returns the annotator's /metrics text, at the address its log says it serves.
func scrape(t *testing.T, p *harness.Process) string {
	t.Helper()
	m := regexp.MustCompile(`address="?([0-9.]+:[0-9]+)`).FindStringSubmatch(p.Tail(1000))
	if m == nil {
		t.Fatalf("the annotator's log names no address:\n%s", p.Tail(30))
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

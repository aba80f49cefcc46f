package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// telemetryPolicy is a TASPolicy as TAS users write them: nodes above 90 are not scheduled to,
// the lowest node_cpu is preferred, nodes above 80 are labelled for the descheduler.
const telemetryPolicy = `
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata:
  name: demo-policy
  namespace: default
spec:
  strategies:
    dontschedule:
      rules:
      - metricname: node_cpu
        operator: GreaterThan
        target: 90
    scheduleonmetric:
      rules:
      - metricname: node_cpu
        operator: LessThan
    deschedule:
      rules:
      - metricname: node_cpu
        operator: GreaterThan
        target: 80
`

// brokenPolicy has a strategy TAS does not know (the CRD lets any strategy name through).
const brokenPolicy = `
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata:
  name: broken-policy
  namespace: default
spec:
  strategies:
    sometimesschedule:
      rules:
      - metricname: node_cpu
        operator: GreaterThan
        target: 1
`

// The timing knobs the scenario shortens (the shipped values take minutes to show anything).
var telemetryEnv = map[string]string{
	"TELEMETRY_SYNC_PERIOD":     "1s",
	"TELEMETRY_MAX_AGE":         "6s",
	"TELEMETRY_DESCHEDULE_HOLD": "3s",
}

// TestTelemetryYAML: extender.telemetry.yaml with a TASPolicy from yaml, metrics from a custom
// metrics API server behind the real aggregation layer. A labelled pod requesting
// telemetry/scheduling (as TAS pods do; no node has it: managedResources, ignoredByScheduler)
// lands on the node with the lowest node_cpu, and one that does not request it is not sent to
// the extender; a pod pinned to a node above the dontschedule target stays pending with
// the reason; the node above the deschedule target gets demo-policy=violating and loses it once
// its value drops; an unlabelled pod is not affected; an invalid policy gets a Warning event; a
// value that stops updating goes stale, then passes (TELEMETRY_STALE=ignore, as shipped) or is
// rejected (reject).
func TestTelemetryYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "telemetry")
	c, sa := startWithServiceAccount(t)
	// The file's RBAC objects are what lets the sidecar (running as the service account) read
	// policies and metrics and label nodes.
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "extender.telemetry.yaml"), false)
	cm := telemetryNodes(t, c, telemetryPolicy+"---"+brokenPolicy)
	r := c.RunDeployment(t, loadDeployment(t, "extender.telemetry.yaml"), harness.RunOptions{
		Kubeconfig: sa, Env: map[string]map[string]string{"telemetry": telemetryEnv},
	})
	r.CheckProbes(t)
	ext := r.Extenders["telemetry"]
	nodes := []string{"cool", "hot", "warm"}
	labelled := map[string]string{"telemetry-policy": "demo-policy"}
	probe := probePod(t, harness.PodSpec{Name: "probe", Labels: labelled})

	// The sidecar reads the metrics through the API server: hot is rejected, and the lowest
	// node_cpu scores best: 1+(95-v)/75*9: cool 10, warm 5.2 -> 5, hot 1.
	s := waitForScores(t, ext, "telemetry-policy", probe, nodes, "the metrics are read", func(s map[string]int64) bool {
		return s["cool"] == 10 && s["warm"] == 5 && s["hot"] == 1
	})
	t.Logf("telemetry-policy scores %v after %d custom metrics reads", s, cm.Requests())
	rejected := filterVerdicts(t, ext, "telemetry-policy", probe, nodes)
	if len(rejected) != 1 {
		t.Fatalf("filter rejected %v, want hot alone", rejected)
	}
	mustContain(t, "hot's reason", rejected["hot"], "telemetry policy default/demo-policy: node_cpu 95 > 90 (")

	for i := range 2 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), Labels: labelled, Extra: tasResource}, "cool",
			"node_cpu: cool 20 is the lowest, and hot 95 fails dontschedule")
	}

	// A pod that can only go to hot stays pending with the reason.
	pinned := probePod(t, harness.PodSpec{Name: "pinned", Labels: labelled, SchedulerName: schedulerName, Extra: tasResource})
	pinned.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := c.WaitForEvent(t, "default", "pinned", "FailedScheduling", "node_cpu 95 > 90"); strings.Contains(e.Message, "Insufficient telemetry/scheduling") {
		t.Errorf("the scheduler counted telemetry/scheduling: %s", e.Message)
	}
	// The same pod without telemetry/scheduling is not sent to the extender (managedResources,
	// as in TAS): it lands on hot.
	unmanaged := probePod(t, harness.PodSpec{Name: "unmanaged", Labels: labelled, SchedulerName: schedulerName})
	unmanaged.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), unmanaged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := c.WaitForBinding(t, "default", "unmanaged"); n != "hot" {
		t.Fatalf("unmanaged went to %s, want hot", n)
	}

	// An unlabelled pod: every node passes, every score 0.
	plain := probePod(t, harness.PodSpec{Name: "plain"})
	if rejected := filterVerdicts(t, ext, "telemetry-policy", plain, nodes); len(rejected) != 0 {
		t.Fatalf("an unlabelled pod is rejected: %v", rejected)
	}
	if s, err := scores(t.Context(), ext, "telemetry-policy", plain, nodes); err != nil || s["cool"]+s["hot"]+s["warm"] != 0 {
		t.Fatalf("an unlabelled pod scores %v, %v; want 0 everywhere", s, err)
	}
	if n := schedule(t, c, harness.PodSpec{Name: "plain"}); n == "" {
		t.Fatal("the unlabelled pod was not scheduled")
	}

	// Deschedule: hot (95 > 80) is labelled once the violation has held 3 s.
	waitForNodeLabel(t, c, "hot", "demo-policy", "violating")
	for _, n := range []string{"cool", "warm"} {
		if v, ok := nodeLabel(t, c, n, "demo-policy"); ok {
			t.Errorf("node %s is labelled demo-policy=%s, but its node_cpu is below 80", n, v)
		}
	}
	// The invalid policy was reported on the object and is not used.
	ev := c.WaitForEvent(t, "default", "broken-policy", "InvalidPolicy", `unknown strategy "sometimesschedule"`)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("InvalidPolicy event of type %s", ev.Type)
	}

	// hot cools down: the label goes, and the pinned pod is scheduled there.
	cm.Set("node_cpu", "hot", 50)
	waitForNodeLabel(t, c, "hot", "demo-policy", "")
	if n := c.WaitForBinding(t, "default", "pinned"); n != "hot" {
		t.Fatalf("pinned went to %s", n)
	}

	// warm goes above 90, then its value stops updating. While fresh it is rejected; once
	// older than TELEMETRY_MAX_AGE it is not taken as current: ignored as shipped, rejected by
	// a sidecar with TELEMETRY_STALE=reject.
	strict := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender telemetry strict", Binary: ext.Binary,
		Env: map[string]string{"KUBECONFIG": sa, "AGENTS": "telemetry", "TELEMETRY_STALE": "reject", "TELEMETRY_DESCHEDULE": "false",
			"TELEMETRY_SYNC_PERIOD": "1s", "TELEMETRY_MAX_AGE": "6s"}})
	cm.Set("node_cpu", "warm", 99)
	for _, e := range []*harness.Extender{ext, strict} {
		waitForVerdict(t, e, probe, "warm", "node_cpu 99 > 90")
	}
	cm.Freeze("node_cpu", "warm")
	waitForVerdict(t, ext, probe, "warm", "")
	waitForVerdict(t, strict, probe, "warm", "node_cpu 99 stale (")
	got := filterVerdicts(t, strict, "telemetry-policy", probe, []string{"warm"})["warm"]
	mustContain(t, "the strict sidecar's reason", got, "max 6s", "TELEMETRY_STALE=reject")
	// A stale value scores 0.
	s, err := scores(t.Context(), ext, "telemetry-policy", probe, nodes)
	if err != nil || s["warm"] != 0 {
		t.Fatalf("scores with warm stale: %v, %v", s, err)
	}
}

// telemetryNodes gives c the fixture the TAS tests share: the TASPolicy CRD from yamlfiles/ and
// policies (once the kind is served), a custom metrics API server behind the aggregation layer
// serving node_cpu hot 95, warm 60, cool 20, and those three nodes, hot labelled e2e/pin=hot so
// that a pod can be pinned to it. It returns the metrics server, whose values a test may change.
func telemetryNodes(t *testing.T, c *harness.Cluster, policies string) *harness.CustomMetrics {
	t.Helper()
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "telemetry-policy-crd.yaml"), false)
	applyWhenServed(t, c, policies)
	cm := c.StartCustomMetrics(t)
	for n, v := range map[string]float64{"hot": 95, "warm": 60, "cool": 20} {
		cm.Set("node_cpu", n, v)
	}
	c.CreateNodes(t,
		harness.NodeSpec{Name: "hot", Labels: map[string]string{"e2e/pin": "hot"}},
		harness.NodeSpec{Name: "warm"},
		harness.NodeSpec{Name: "cool"},
	)
	return cm
}

// applyWhenServed applies data once the API server serves the TASPolicy kind (a CRD just
// created takes a moment).
func applyWhenServed(t *testing.T, c *harness.Cluster, data string) []*unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := c.Client.Discovery().ServerResourcesForGroupVersion("telemetry.intel.com/v1alpha1")
		if err == nil {
			return c.Apply(t, []byte(data), false)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TASPolicy CRD is not served after a minute: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func nodeLabel(t *testing.T, c *harness.Cluster, node, key string) (string, bool) {
	t.Helper()
	n, err := c.Client.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := n.Labels[key]
	return v, ok
}

// waitForNodeLabel waits until node's label key has value ("" : until it has no such label).
func waitForNodeLabel(t *testing.T, c *harness.Cluster, node, key, value string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, ok := nodeLabel(t, c, node, key)
		if (value == "" && !ok) || (value != "" && v == value) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: label %s is %q (set %v) after a minute, want %q", node, key, v, ok, value)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitForVerdict waits until the extender's telemetry-policy filter rejects node with a reason
// containing want ("": until it passes node).
func waitForVerdict(t *testing.T, e *harness.Extender, pod *corev1.Pod, node, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, rejected := filterVerdicts(t, e, "telemetry-policy", pod, []string{node})[node]
		if (want == "" && !rejected) || (want != "" && strings.Contains(got, want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: node %s's verdict is %q after a minute, want %q", e.Name, node, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cpuExporter serves node_cpu per node, in the Prometheus text format.
type cpuExporter struct {
	mu     sync.Mutex
	values map[string]float64
}

func (e *cpuExporter) set(node string, v float64, present bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if present {
		e.values[node] = v
	} else {
		delete(e.values, node)
	}
}

func (e *cpuExporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# TYPE node_cpu gauge")
	for node, v := range e.values {
		fmt.Fprintf(w, "node_cpu{node=%q} %g\n", node, v)
	}
	fmt.Fprintln(w, "node_cpu{instance=\"no-node-label\"} 1") // matched to no node: ignored
}

// TestTelemetryPrometheus: the telemetry agent with TELEMETRY_METRICS_SOURCE=prometheus reads a
// real Prometheus scraping an exporter with known per-node values; a node whose series stops
// (Prometheus marks it stale) keeps its last value, which goes stale and, with
// TELEMETRY_STALE=reject, rejects the node. Its /metrics count the values read.
func TestTelemetryPrometheus(t *testing.T) {
	t.Parallel()
	requireAgents(t, "telemetry")
	exporter := &cpuExporter{values: map[string]float64{"hot": 95, "cool": 20, "gone": 99}}
	target := httptest.NewServer(exporter)
	defer target.Close()
	prom := startPrometheusFor(t, target.Listener.Addr().String())

	c := harness.StartCluster(t)
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "telemetry-policy-crd.yaml"), false)
	applyWhenServed(t, c, telemetryPolicy)
	c.CreateNodes(t, harness.NodeSpec{Name: "hot"}, harness.NodeSpec{Name: "cool"}, harness.NodeSpec{Name: "gone"})
	ext := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender telemetry prometheus", Tags: []string{"telemetry"},
		Env: map[string]string{"KUBECONFIG": c.Kubeconfig, "AGENTS": "telemetry", "TELEMETRY_METRICS_SOURCE": "prometheus",
			"PROMETHEUS_URL": prom, "TELEMETRY_SYNC_PERIOD": "500ms", "TELEMETRY_MAX_AGE": "3s", "TELEMETRY_STALE": "reject",
			"TELEMETRY_DESCHEDULE": "false"}})
	nodes := []string{"cool", "gone", "hot"}
	probe := probePod(t, harness.PodSpec{Name: "probe", Labels: map[string]string{"telemetry-policy": "demo-policy"}})

	// LessThan over 20, 95, 99: 1+(99-v)/79*9: cool 10, hot 1.46 -> 1, gone 1.
	s := waitForScores(t, ext, "telemetry-policy", probe, nodes, "Prometheus's values are read", func(s map[string]int64) bool {
		return s["cool"] == 10 && s["hot"] == 1 && s["gone"] == 1
	})
	t.Logf("scores from Prometheus: %v", s)
	rejected := filterVerdicts(t, ext, "telemetry-policy", probe, nodes)
	if len(rejected) != 2 {
		t.Fatalf("rejected %v, want hot and gone", rejected)
	}
	mustContain(t, "hot's reason", rejected["hot"], "node_cpu 95 > 90 (")
	mustContain(t, "gone's reason", rejected["gone"], "node_cpu 99 > 90 (")

	// gone's series disappears: its last value ages past TELEMETRY_MAX_AGE.
	exporter.set("gone", 0, false)
	waitForVerdict(t, ext, probe, "gone", "node_cpu 99 stale (")
	t.Logf("gone: %s", filterVerdicts(t, ext, "telemetry-policy", probe, []string{"gone"})["gone"])
	// The remaining values rescale: over 20 and 95: cool 10, hot 1; gone, without a fresh
	// value, 0.
	waitForScores(t, ext, "telemetry-policy", probe, nodes, "gone's stale value is left out", func(s map[string]int64) bool {
		return s["cool"] == 10 && s["hot"] == 1 && s["gone"] == 0
	})

	// The stale gauge counts the values stale at the last refresh (every TELEMETRY_SYNC_PERIOD),
	// while a request judges age at its own time: the gauge may lag a verdict by one refresh.
	var body []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, b, err := ext.Get(t.Context(), "/metrics")
		if err != nil || status != http.StatusOK {
			t.Fatalf("/metrics: %d %v", status, err)
		}
		body = b
		if strings.Contains(string(body), `telemetry_stale_values{source="prometheus"} 1`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, want := range []string{`telemetry_values_read_total{source="prometheus"}`, `telemetry_stale_values{source="prometheus"} 1`,
		`telemetry_last_refresh_timestamp_seconds{source="prometheus"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

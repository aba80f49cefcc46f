package e2e

// The node annotator (cmd/node-annotator) as a process against a real kube-apiserver, under the
// identity and permissions yamlfiles/node-annotator.yaml gives it: the allocation annotations
// follow pods created, bound through the binding subresource, terminated and deleted; with a
// real Prometheus as its source, it writes statistics the safe agent acts on, and allocation
// from which the pigeon agent scores as it does from its own cache.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

var (
	annotatorOnce sync.Once
	annotatorBin  string
	annotatorErr  error
)

// buildAnnotator builds cmd/node-annotator once per test process, into .cache/node-annotator/.
func buildAnnotator(t *testing.T) string {
	t.Helper()
	annotatorOnce.Do(func() {
		root, err := harness.RepoRoot()
		if err != nil {
			annotatorErr = err
			return
		}
		dir := filepath.Join(root, ".cache", "node-annotator")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			annotatorErr = err
			return
		}
		tmp := filepath.Join(dir, fmt.Sprintf("node-annotator-%d.tmp", os.Getpid()))
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version=v0.0.0-e2e", "-o", tmp, "./cmd/node-annotator")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			annotatorErr = fmt.Errorf("go build ./cmd/node-annotator: %v\n%s", err, out)
			return
		}
		annotatorBin = filepath.Join(dir, "node-annotator")
		annotatorErr = os.Rename(tmp, annotatorBin)
	})
	if annotatorErr != nil {
		t.Fatal(annotatorErr)
	}
	return annotatorBin
}

// startAnnotator applies yamlfiles/node-annotator.yaml (service account, role, binding) and
// runs the annotator as that service account, with env on top of the test's settings.
func startAnnotator(t *testing.T, c *harness.Cluster, env map[string]string) *harness.Process {
	t.Helper()
	bin := buildAnnotator(t)
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "node-annotator.yaml"), false)
	kubeconfig := c.KubeconfigFor(t, "system:serviceaccount:kube-system:node-annotator",
		"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	port := harness.MustFreePort(t)
	vars := map[string]string{
		"KUBECONFIG": kubeconfig, "HTTP_PORT": "127.0.0.1:" + strconv.Itoa(port),
		"INTERVAL": "1s", "STATS_SOURCE": "none", "LOG_LEVEL": "DEBUG",
	}
	for k, v := range env {
		vars[k] = v
	}
	var list []string
	for k, v := range vars {
		list = append(list, k+"="+v)
	}
	p := harness.StartProcess(t, "node-annotator", harness.LogDir(t), bin, list)
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	deadline := time.Now().Add(harness.StartTimeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("node-annotator never became ready:\n%s", p.Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForAnnotations waits until node carries every annotation of want.
func waitForAnnotations(t *testing.T, c *harness.Cluster, p *harness.Process, node, step string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := c.Client.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err == nil {
			missing := map[string]string{}
			for k, v := range want {
				if n.Annotations[k] != v {
					missing[k] = fmt.Sprintf("%q, want %q", n.Annotations[k], v)
				}
			}
			if len(missing) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: node %s annotations never matched: %v\nannotator log:\n%s", step, node, missing, p.Tail(20))
			}
		}
		if p.Exited() {
			t.Fatalf("%s: node-annotator exited:\n%s", step, p.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// allocation is the requested-*/free-* annotations of a node with 4 cpus, 8Gi memory, 110 pods,
// 100Gi ephemeral storage and no GPU, given what is bound to it.
func allocation(milliCPU, memory, pods int64) map[string]string {
	s := func(v int64) string { return strconv.FormatInt(v, 10) }
	return map[string]string{
		"requested-cpu": s(milliCPU), "requested-memory": s(memory), "requested-pods": s(pods),
		"requested-gpu": "0", "requested-ephemeral-storage": "0",
		"free-cpu": s(4000 - milliCPU), "free-memory": s(8<<30 - memory), "free-pods": s(110 - pods),
		"free-gpu": "0", "free-ephemeral-storage": s(100 << 30),
	}
}

// TestAnnotatorAllocation: the annotator's allocation annotations follow the pods of a real API
// server: created unbound (nothing), bound through the binding subresource, terminated,
// deleted.
func TestAnnotatorAllocation(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	c.CreateNodes(t, harness.NodeSpec{Name: "a1"}, harness.NodeSpec{Name: "a2"})
	c.CreatePod(t, harness.PodSpec{Name: "early", NodeName: "a2", CPU: "250m", Memory: "256Mi"})
	p := startAnnotator(t, c, nil)

	// Pods bound before the start count from the first cycle.
	waitForAnnotations(t, c, p, "a1", "start", allocation(0, 0, 0))
	waitForAnnotations(t, c, p, "a2", "start", allocation(250, 256<<20, 1))

	// An unbound pod counts nowhere; a pod created after it, bound at creation, shows on a2:
	// once a2 shows it, the annotator's cache has seen the unbound one too (one ordered watch).
	c.CreatePod(t, harness.PodSpec{Name: "pending", CPU: "500m", Memory: "1Gi"})
	c.CreatePod(t, harness.PodSpec{Name: "marker", NodeName: "a2", CPU: "100m", Memory: "64Mi"})
	waitForAnnotations(t, c, p, "a2", "marker", allocation(350, 320<<20, 2))
	waitForAnnotations(t, c, p, "a1", "unbound pod", allocation(0, 0, 0))

	// Bound as kube-scheduler binds: the binding subresource.
	err := c.Client.CoreV1().Pods("default").Bind(t.Context(), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "a1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitForAnnotations(t, c, p, "a1", "bound", allocation(500, 1<<30, 1))

	// The pod terminates (its kubelet would report Succeeded): it no longer holds anything.
	pod, err := c.Client.CoreV1().Pods("default").Get(t.Context(), "pending", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodSucceeded
	if _, err := c.Client.CoreV1().Pods("default").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForAnnotations(t, c, p, "a1", "terminated", allocation(0, 0, 0))

	// Deleted pods leave their node.
	c.DeletePod(t, "default", "early")
	waitForAnnotations(t, c, p, "a2", "deleted", allocation(100, 64<<20, 1))

	// The annotator patched with its own field manager (a merge patch, not an apply).
	n, err := c.Client.CoreV1().Nodes().Get(t.Context(), "a1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range n.ManagedFields {
		if mf.Manager == "node-annotator" && mf.Operation == metav1.ManagedFieldsOperationUpdate {
			found = true
		}
	}
	if !found {
		t.Errorf("no managed fields entry of node-annotator on a1: %+v", n.ManagedFields)
	}
}

// liveNodeExporter serves node_exporter metrics for several nodes (label node) at the time of
// each scrape: free memory constant, idle cpu seconds growing at a constant rate.
type liveNodeExporter struct {
	start  time.Time
	memory map[string]float64 // bytes available
	idle   map[string]float64 // idle cores
}

func (e *liveNodeExporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	elapsed := time.Since(e.start).Seconds()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# TYPE node_memory_MemAvailable_bytes gauge")
	for node, v := range e.memory {
		fmt.Fprintf(w, "node_memory_MemAvailable_bytes{node=%q} %g\n", node, v)
	}
	fmt.Fprintln(w, "# TYPE node_cpu_seconds_total counter")
	for node, cores := range e.idle {
		fmt.Fprintf(w, "node_cpu_seconds_total{node=%q,cpu=\"0\",mode=\"idle\"} %g\n", node, 100+cores*elapsed)
	}
}

// startPrometheusFor runs the Prometheus server on a free loopback port, scraping target every
// 200 ms, and returns its URL (see requirePrometheus).
func startPrometheusFor(t *testing.T, target string) string {
	t.Helper()
	return harness.StartPrometheus(t, requirePrometheus(t), fmt.Sprintf("global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\n"+
		"scrape_configs:\n- job_name: node\n  static_configs:\n  - targets: [%q]\n", target), time.Minute)
}

// requirePrometheus returns the Prometheus server to run (harness.PrometheusBinary). Without one
// the test is skipped, or fails when REQUIRE_PROMETHEUS is set (make test sets it).
func requirePrometheus(t *testing.T) string {
	t.Helper()
	bin, err := harness.PrometheusBinary()
	if err != nil {
		if os.Getenv("REQUIRE_PROMETHEUS") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return bin
}

// TestAnnotatorFeedsAgents: the annotator, reading a real Prometheus, writes statistics the safe
// agent acts on, and allocation annotations from which the pigeon agent, without cluster
// access, scores nodes exactly as it does from its own cache.
func TestAnnotatorFeedsAgents(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "pigeon")
	exporter := &liveNodeExporter{start: time.Now(),
		memory: map[string]float64{"f1": 7.5 * (1 << 30), "f2": 0.2 * (1 << 30)},
		idle:   map[string]float64{"f1": 3.5, "f2": 2}}
	target := httptest.NewServer(exporter)
	defer target.Close()
	prom := startPrometheusFor(t, target.Listener.Addr().String())

	c := harness.StartCluster(t)
	c.CreateNodes(t, harness.NodeSpec{Name: "f1"}, harness.NodeSpec{Name: "f2"})
	c.CreatePod(t, harness.PodSpec{Name: "load", NodeName: "f1", CPU: "3", Memory: "2Gi"})
	p := startAnnotator(t, c, map[string]string{
		"STATS_SOURCE": "prometheus", "PROMETHEUS_URL": prom, "PROMETHEUS_NODE_LABEL": "node",
		// irate: rate()'s extrapolation is skewed over a series only seconds old.
		"PROMETHEUS_CPU_QUERY": `sum by (node) (irate(node_cpu_seconds_total{mode="idle"}[5s])) * 1000`,
		"PROMETHEUS_STEP":      "1s", "STATS_WINDOW": "1m", "STATS_INTERVAL": "2s", "STATS_MIN_SAMPLES": "3",
	})
	// Free memory is constant: its statistics are exact. Idle cpu is a measured rate: close.
	waitForAnnotations(t, c, p, "f2", "statistics", map[string]string{
		"mean-free-memory": "214748365", "std-free-memory": "0", "forcasted-free-memory": "214748365"})
	waitForAnnotations(t, c, p, "f1", "statistics", map[string]string{
		"mean-free-memory": "8053063680", "requested-cpu": "3000", "requested-memory": strconv.Itoa(2 << 30)})
	f1, err := c.Client.CoreV1().Nodes().Get(t.Context(), "f1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := strconv.ParseFloat(f1.Annotations["mean-free-cpu"], 64); v < 3300 || v > 3700 {
		t.Errorf("f1 mean-free-cpu %q, want about 3500 (3.5 idle cores)", f1.Annotations["mean-free-cpu"])
	}
	if ts, err := time.Parse(time.RFC3339, f1.Annotations["statistics-timestamp"]); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("f1 statistics-timestamp %q: %v", f1.Annotations["statistics-timestamp"], err)
	}

	// The safe agent reads the statistics: f2 (0.2 GiB free) is too risky for a 1 GiB pod.
	nodes := listNodes(t, c)
	pod, err := harness.PodSpec{Name: "probe", CPU: "500m", Memory: "1Gi"}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	pod.UID = "probe"
	blind := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender blind", Tags: []string{"all"},
		Env: map[string]string{"CLUSTER_ACCESS": "none", "POLICY_OBJECTIVE": "LOAD_BALANCE"}})
	res, err := blind.Filter(t.Context(), "safe-overload", &extenderv1.ExtenderArgs{Pod: pod, Nodes: &corev1.NodeList{Items: nodes}})
	if err != nil {
		t.Fatal(err)
	}
	if a := reduceFilter(res); !slices.Equal(a.Passed, []string{"f1"}) || !strings.Contains(a.Failed["f2"], "memory") {
		t.Errorf("safe-overload: %+v, want f1 passed and f2 rejected for memory", a)
	}

	// Pigeon without cluster access reads requested-*; with access, its cache: same scores.
	// LOAD_BALANCE prefers f2, the less allocated.
	seeing := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender seeing", Tags: []string{"all"},
		Args: []string{"--kubeconfig=" + c.Kubeconfig}, Env: map[string]string{"POLICY_OBJECTIVE": "LOAD_BALANCE"}})
	args := &extenderv1.ExtenderArgs{Pod: pod, Nodes: &corev1.NodeList{Items: nodes}}
	fromAnnotations, err := blind.Prioritize(t.Context(), "pigeon-holing", args)
	if err != nil {
		t.Fatal(err)
	}
	fromCache, err := seeing.Prioritize(t.Context(), "pigeon-holing", args)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(fromAnnotations) != fmt.Sprint(fromCache) {
		t.Errorf("pigeon scores from annotations %v, from the cache %v", fromAnnotations, fromCache)
	}
	if len(fromCache) != 2 || fromCache[1].Host != "f2" || fromCache[1].Score <= fromCache[0].Score {
		t.Errorf("pigeon LOAD_BALANCE scores %v, want f2 above f1", fromCache)
	}
}

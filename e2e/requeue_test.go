package e2e

// Requeueing: a pod the safe filter rejected is retried as soon as the statistics that
// rejected it change (the node cools), in plugin mode through the plugin's EventsToRegister and
// queueing hint, in extender mode because kube-scheduler retries a pod an extender rejected on
// every node update (the annotator's patch is one). In plugin mode a node update that changes
// nothing safe reads does not requeue the pod (scheduler_queue_incoming_pods_total).

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// requeuedPods sums the scheduler's scheduler_queue_incoming_pods_total for pods moved to the
// active or backoff queue by a cluster event (not by their creation or their backoff ending).
func requeuedPods(t *testing.T, port int) float64 {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the scheduler's self-signed certificate, on loopback
	}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, found := strings.CutPrefix(line, "scheduler_queue_incoming_pods_total{")
		labels, value, ok := strings.Cut(rest, "} ")
		if !found || !ok || strings.Contains(labels, `queue="unschedulable"`) ||
			strings.Contains(labels, `event="PodAdd"`) || strings.Contains(labels, "BackoffComplete") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func patchNode(t *testing.T, c *harness.Cluster, name string, annotations, labels map[string]string) {
	t.Helper()
	meta := map[string]any{} // a null would delete the whole map in a merge patch
	if annotations != nil {
		meta["annotations"] = annotations
	}
	if labels != nil {
		meta["labels"] = labels
	}
	patch, _ := json.Marshal(map[string]any{"metadata": meta})
	if _, err := c.Client.CoreV1().Nodes().Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRequeueWhenTheNodeCools: one node, too hot for safe; a plugin scheduler and an extender
// scheduler each get a pod, which stays pending. A label change on the node requeues the
// extender's pod (kube-scheduler retries an extender's rejection on any event) but not the
// plugin's. Then the node's statistics cool: both pods bind within 10 s.
func TestRequeueWhenTheNodeCools(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	c.CreateNode(t, harness.NodeSpec{Name: "hot", Annotations: riskyStats})

	ext := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender-safe", Tags: []string{"all"},
		Env: map[string]string{"AGENTS": "safe", "KUBECONFIG": c.Kubeconfig, "LOG_LEVEL": "WARNING"}})
	config := func(name, rest string) []byte {
		return []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\n" +
			"profiles:\n- schedulerName: " + name + "\n" + rest)
	}
	metricsArgs := []string{"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}
	plugins := c.StartScheduler(t, harness.SchedulerOptions{Name: "plugin-scheduler", Binary: harness.BuildPluginScheduler(t), Args: metricsArgs,
		Config: config("plugins", "  plugins:\n    multiPoint:\n      enabled:\n      - name: safe-overload\n")})
	extender := c.StartScheduler(t, harness.SchedulerOptions{Name: "extender-scheduler", Args: metricsArgs,
		Config: config("extender", fmt.Sprintf("extenders:\n- urlPrefix: http://127.0.0.1:%d/scheduler\n  filterVerb: predicates/safe-overload\n  nodeCacheCapable: true\n", ext.Port))})

	for _, s := range []string{"plugins", "extender"} {
		c.CreatePod(t, harness.PodSpec{Name: "pod-" + s, SchedulerName: s, CPU: "100m", Memory: "64Mi"})
	}
	for _, s := range []string{"plugins", "extender"} {
		c.WaitForEvent(t, "default", "pod-"+s, "FailedScheduling", "cpu risk")
	}
	time.Sleep(2 * time.Second) // both in the unschedulable pool, past their first backoff

	before := map[string]float64{"plugins": requeuedPods(t, plugins.Port), "extender": requeuedPods(t, extender.Port)}
	patchNode(t, c, "hot", nil, map[string]string{"unrelated": "changed"})
	time.Sleep(3 * time.Second)
	after := map[string]float64{"plugins": requeuedPods(t, plugins.Port), "extender": requeuedPods(t, extender.Port)}
	t.Logf("pods requeued by an unrelated label change: plugin mode %v, extender mode %v",
		after["plugins"]-before["plugins"], after["extender"]-before["extender"])
	if after["plugins"] != before["plugins"] {
		t.Errorf("plugin mode: an unrelated node update requeued %v pods, want 0", after["plugins"]-before["plugins"])
	}
	if after["extender"] == before["extender"] {
		t.Errorf("extender mode: the label change requeued no pod: the contrast this test relies on is gone")
	}
	for _, s := range []string{"plugins", "extender"} {
		if n := c.PodNode(t, "default", "pod-"+s); n != "" {
			t.Fatalf("pod-%s bound to %s while the node is hot", s, n)
		}
	}

	time.Sleep(2 * time.Second)
	cooled := time.Now()
	patchNode(t, c, "hot", idleStats, nil)
	for _, s := range []string{"plugins", "extender"} {
		if n := c.WaitForBindingWithin(t, "default", "pod-"+s, 10*time.Second); n != "hot" {
			t.Fatalf("pod-%s bound to %q, want hot", s, n)
		}
		took := time.Since(cooled)
		t.Logf("%s mode: the node cooled, the pod bound %v later", s, took.Round(10*time.Millisecond))
		if took >= 10*time.Second {
			t.Errorf("%s mode: the pod bound %v after the node cooled, want under 10 s", s, took)
		}
	}
}

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/agents/safe"
	"github.com/kube-safe-scheduler/extender/e2e/harness"
	"github.com/kube-safe-scheduler/extender/framework"
)

// Requests of every pod of TestPluginsSafeBatching, in millicores and bytes.
const (
	batchPodCPU    = 500
	batchPodMemory = 256 * mi
)

// TestPluginsSafeBatching: with safe + congestion as plugins (the agents plugin as
// docs/plugin-mode.md tells users to write it, then the separate plugins), kube-scheduler's
// opportunistic batching reuses a pod's feasible nodes and scores for the next pods of the same
// signature (scheduler_batch_attempts_total counts hints used), and every pod still lands where
// safe accepts it: on annotator-like nodes that safe's filter lets take 0 to 5 of the pods (the
// load placed since the statistics counts each one), no node gets more pods than safe accepts,
// and some get exactly as many (the limit bound the placements).
//
// The limits are safe's own answers, asked of the agent in process: with the same settings, for
// each node as created and a pod requesting j times the pods' request, whether the filter
// accepts it, for j = 1, 2, ...; the j-th pod placed on a node adds its request to the
// statistics' usage (placed load, PlacedGrowth) as that pod's demand does, so it is accepted on
// the node holding j-1 pods exactly when the j-fold pod is on the empty node. The filter judges
// so (the pod's request added) while some node that fits the pod takes it, which the run keeps
// true (the pods are fewer than the nodes accept in all).
//
// The pods are created before the scheduler starts: kube-scheduler signs a pod when it enters the
// queue, before any plugin has answered, and the plugins sign from what their agents declare
// (framework.Offer.WholeCluster), so a backlog is batched too.
func TestPluginsSafeBatching(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	// The annotator's statistics of 2 minutes ago: the mean free cpu of 4 cores leaves 1 to 3.6
	// cores used; no pod was on the nodes then (statistics-requested-*).
	stamp := time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)
	var specs []harness.NodeSpec
	for i := range 14 {
		used := 1000 + 200*int64(i)
		specs = append(specs, harness.NodeSpec{Name: fmt.Sprintf("b%02d", i), CPU: "4", Memory: "8Gi",
			Annotations: withAnnotations(statsAnnotations(4000-used, 150, 7*gi, 256*mi),
				"statistics-timestamp", stamp, "statistics-requested-cpu", "0", "statistics-requested-memory", "0")})
	}
	c.CreateNodes(t, specs...)
	nodes, err := c.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limits, capacity := safeLimits(t, nodes.Items)
	const perProfile = 13 // pods per profile
	if capacity < 2*perProfile+2 || !slices.Contains(slices.Collect(maps.Values(limits)), 0) {
		t.Fatalf("the nodes must accept more than the %d pods, and some none: safe's limits %v (a defect of the test's nodes)", 2*perProfile, limits)
	}
	t.Logf("safe accepts, of the pods: %v (%d in all)", limits, capacity)

	noDefaultSpread := "  - name: PodTopologySpread\n    args:\n      defaultingType: List\n"
	cfg := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n" +
		// docs/plugin-mode.md, "One plugin, one pass": safe + congestion
		"- schedulerName: agents\n  plugins:\n    multiPoint:\n      enabled:\n      - name: agents\n        weight: 3\n" +
		"  pluginConfig:\n  - name: agents\n    args:\n      functions:\n      - name: safe-overload\n        weight: 2\n      - name: congestion\n        weight: 1\n" +
		"      config:\n        safe:\n          utilization: 90\n          percentile: 30\n        congestion:\n          factorMax: 100\n" + noDefaultSpread +
		// the separate plugins, as yamlfiles/scheduler.plugins.yaml enables them
		"- schedulerName: separate\n  plugins:\n    multiPoint:\n      enabled:\n      - name: safe-overload\n        weight: 2\n      - name: congestion\n        weight: 1\n" +
		"  pluginConfig:\n  - name: safe-overload\n    args:\n      utilization: 90\n      percentile: 30\n" + noDefaultSpread
	create := func(name, profile string) {
		t.Helper()
		pod, err := harness.PodSpec{Name: name, SchedulerName: profile, CPU: fmt.Sprintf("%dm", batchPodCPU), Memory: fmt.Sprint(batchPodMemory),
			Labels: map[string]string{"app": "batch"}}.Pod()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pods wait before the scheduler starts: a backlog, queued before any plugin answered.
	for _, profile := range []string{"agents", "separate"} {
		for i := range perProfile {
			create(fmt.Sprintf("%s-%02d", profile, i), profile)
		}
	}
	s := c.StartScheduler(t, harness.SchedulerOptions{Name: "plugin-scheduler", Binary: harness.BuildPluginScheduler(t), Config: []byte(cfg),
		Args: []string{"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}})
	for _, profile := range []string{"agents", "separate"} {
		for i := range perProfile {
			c.WaitForBinding(t, "default", fmt.Sprintf("%s-%02d", profile, i))
		}
	}

	got := batchAttempts(t, s.Port)
	t.Logf("scheduler_batch_attempts_total and scheduler_batch_cache_flushed_total: %v", got)
	for _, profile := range []string{"agents", "separate"} {
		if got[profile+"/hint_used"] == 0 {
			t.Errorf("profile %s (safe + congestion): no batching hint used: %v", profile, got)
		}
	}

	pods, err := c.Client.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string][]string{}
	for _, p := range pods.Items {
		placed[p.Spec.NodeName] = append(placed[p.Spec.NodeName], p.Name)
	}
	full := 0
	for _, n := range slices.Sorted(maps.Keys(limits)) {
		slices.Sort(placed[n])
		t.Logf("%s: %d of %d pods safe accepts: %s", n, len(placed[n]), limits[n], strings.Join(placed[n], " "))
		switch {
		case len(placed[n]) > limits[n]:
			t.Errorf("%s holds %d pods, but safe accepts only %d of them there: %v", n, len(placed[n]), limits[n], placed[n])
		case len(placed[n]) == limits[n] && limits[n] > 0:
			full++
		}
	}
	if full == 0 {
		t.Errorf("no node holds as many pods as safe accepts: the limits did not bind, the test shows nothing")
	}
}

// safeLimits returns, for each node, how many of TestPluginsSafeBatching's pods safe's filter
// accepts on it in turn (see the test), and their sum: safe's own answers, asked of the agent
// with the test's settings.
func safeLimits(t *testing.T, nodes []corev1.Node) (map[string]int, int) {
	t.Helper()
	cfg := safe.DefaultConfig()
	cfg.Utilization, cfg.Percentile, cfg.Filter = 90, 30, safe.FilterPod
	a, err := safe.New(cfg, framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	filter := a.Filters()[0].Func
	limits, sum := map[string]int{}, 0
	for i := range nodes {
		n := &nodes[i]
		k := 0
		for j := int64(1); j <= 20; j++ {
			pod, err := harness.PodSpec{Name: "probe", CPU: fmt.Sprintf("%dm", j*batchPodCPU), Memory: fmt.Sprint(j * batchPodMemory)}.Pod()
			if err != nil {
				t.Fatal(err)
			}
			v, err := filter(t.Context(), pod, []*corev1.Node{n})
			if err != nil {
				t.Fatal(err)
			}
			if !v[0].Passes() {
				break
			}
			k = int(j)
		}
		limits[n.Name] = k
		sum += k
	}
	return limits, sum
}

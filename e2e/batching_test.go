package e2e

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// batchAttempts returns the scheduler's scheduler_batch_attempts_total by profile and result,
// and its scheduler_batch_cache_flushed_total by profile and reason ("flushed:<reason>").
func batchAttempts(t *testing.T, port int) map[string]float64 {
	t.Helper()
	ss, err := harness.SchedulerMetrics(port)
	if err != nil {
		t.Fatal(err)
	}
	out := ss.Sum("scheduler_batch_attempts_total", func(s harness.Sample) string { return s.Label("profile") + "/" + s.Label("result") })
	for k, v := range ss.Sum("scheduler_batch_cache_flushed_total", func(s harness.Sample) string {
		return s.Label("profile") + "/flushed:" + s.Label("reason")
	}) {
		out[k] += v
	}
	return out
}

// TestPluginsOpportunisticBatching: with one pod per node (a host port), kube-scheduler's
// opportunistic batching hands the next pod of the same signature the previous cycle's next
// best node; the plugins of agents that can sign (congestion, template-score) let it, and
// scheduler_batch_attempts_total counts hints used, as for the default plugins alone. A profile
// with safe-overload and pigeon-holing gets no hint: pigeon reads the whole cluster for its
// objective (framework.Cluster's Nodes and Pods), so pigeon-holing refuses to sign (safe, which
// reads only the nodes it judges, signs: TestPluginsSafeBatching). PodTopologySpread's system
// default constraints are turned off in every profile: with them kube-scheduler signs no pod at
// all.
func TestPluginsOpportunisticBatching(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	var nodes []harness.NodeSpec
	for i := range 40 {
		nodes = append(nodes, harness.NodeSpec{Name: fmt.Sprintf("n%02d", i), Annotations: statsAnnotations(3600-int64(i)*20, 200, 7*gi, 256*mi)})
	}
	c.CreateNodes(t, nodes...)
	// kube-scheduler's PodTopologySpread refuses to sign every pod while it has system default
	// constraints (its default): batching needs them off, in every profile alike.
	noDefaultSpread := "  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n"
	cfg := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n" +
		"- schedulerName: signing\n  plugins:\n    multiPoint:\n      enabled:\n      - name: congestion\n      - name: template-score\n" + noDefaultSpread +
		"- schedulerName: default\n" + noDefaultSpread +
		"- schedulerName: pigeon\n  plugins:\n    multiPoint:\n      enabled:\n      - name: safe-overload\n      - name: pigeon-holing\n" + noDefaultSpread
	s := c.StartScheduler(t, harness.SchedulerOptions{Name: "plugin-scheduler", Binary: harness.BuildPluginScheduler(t), Config: []byte(cfg),
		Args: []string{"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}})
	for _, profile := range []string{"default", "signing", "pigeon"} {
		for i := range 12 {
			pod, err := harness.PodSpec{Name: fmt.Sprintf("%s-%02d", profile, i), SchedulerName: profile, CPU: "100m", Memory: "64Mi"}.Pod()
			if err != nil {
				t.Fatal(err)
			}
			pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
			if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 12 {
			c.WaitForBinding(t, "default", fmt.Sprintf("%s-%02d", profile, i))
		}
	}
	got := batchAttempts(t, s.Port)
	t.Logf("scheduler_batch_attempts_total: %v", got)
	if got["default/hint_used"] == 0 {
		t.Fatalf("profile default (kube-scheduler's plugins alone): no batching hint used: the workload does not exercise batching: %v", got)
	}
	if got["signing/hint_used"] == 0 {
		t.Errorf("profile signing (congestion, template-score): no batching hint used: %v", got)
	}
	if got["pigeon/hint_used"] != 0 {
		t.Errorf("profile pigeon: %v hints used although pigeon-holing cannot sign", got["pigeon/hint_used"])
	}
}

package e2e

// Plugin mode's cluster-reading agents: reward, telemetry-policy and gang, compiled into
// kube-safe-scheduler (yamlfiles/scheduler.plugins.yaml) and reaching the cluster through the
// scheduler's own informers, client and configuration (framework.Handle), against a real API
// server, under the file's service account. The scenarios mirror the extender's
// (reward_test.go, telemetry_test.go, gang_test.go).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// rewardIdentity reads the identity the reward agent of a scheduler process logged when it
// loaded its table, waiting for it up to timeout.
func rewardIdentity(t *testing.T, p *harness.Process, timeout time.Duration) string {
	t.Helper()
	re := regexp.MustCompile(`reward table loaded.*identity="([^"]+)"`)
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if m := re.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("%s never logged the reward table's identity; last lines:\n%s", p.Name, p.Tail(30))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// startPluginScheduler starts another kube-safe-scheduler process with a running deployment's
// configuration, as a second replica of its pod would run.
func startPluginScheduler(t *testing.T, c *harness.Cluster, r *harness.RunningDeployment, name, kubeconfig string) *harness.Scheduler {
	t.Helper()
	return c.StartScheduler(t, harness.SchedulerOptions{
		Name: name, Config: r.Config, Kubeconfig: kubeconfig, Binary: harness.BuildPluginScheduler(t),
		Args: []string{"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig, "--v=2"},
	})
}

// TestPluginsReward: the reward plugin learns from pod outcomes in the scheduler process. Two
// replicas run (leader election on: one schedules); both learn, and only the holder of the Lease
// reward-table writes the table. Spark pods fail three times on node-2: the next spark pod goes
// elsewhere although kube-scheduler's own scores prefer node-2, and a web pod still lands there.
// Both replicas stop; a new one loads the table, scores from it (a spark pod avoids node-2
// again) and takes the writing over without losing a row.
func TestPluginsReward(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	c.CreateNodes(t, harness.NodeSpec{Name: "node-1"}, harness.NodeSpec{Name: "node-2"}, harness.NodeSpec{Name: "node-3"})
	const lease, flush = 4 * time.Second, time.Second
	d := withPlugins(t, []string{"reward"}, map[string]map[string]any{"reward": {"flushInterval": flush.String(), "leaseDuration": lease.String()}})
	r := c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	standby := startPluginScheduler(t, c, r, "kube-safe-scheduler standby", sa)
	replicas := map[string]*harness.Scheduler{}
	for _, s := range []*harness.Scheduler{r.Scheduler, standby} {
		replicas[rewardIdentity(t, s.Process, time.Minute)] = s
	}
	if len(replicas) != 2 {
		t.Fatalf("the two replicas have one identity: %v", replicas)
	}

	// Record every writer of the table.
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var mu sync.Mutex
	var writers []string
	go func() {
		for ctx.Err() == nil {
			if _, w, ok := storedRows(t, c); ok && w != "" {
				mu.Lock()
				if len(writers) == 0 || writers[len(writers)-1] != w {
					writers = append(writers, w)
				}
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// Three spark pods fail on node-2 (bound there directly; the test plays the kubelet).
	for i := range 3 {
		name := fmt.Sprintf("spark-failed-%d", i)
		c.CreatePod(t, harness.PodSpec{Name: name, NodeName: "node-2", Labels: map[string]string{"podtype": "spark"}})
		setStatus(t, c, name, failed)
	}
	waitForStored(t, c, "spark/node-2", 3, 2*time.Minute)
	l, err := c.Client.CoordinationV1().Leases(rewardNamespace).Get(t.Context(), rewardObject, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || replicas[*l.Spec.HolderIdentity] == nil {
		t.Fatalf("Lease %s: %v, %v; want one of the replicas %v as holder", rewardObject, l, err, replicas)
	}
	leader := *l.Spec.HolderIdentity
	time.Sleep(3 * flush) // the other replica, had it written, would have by now
	mu.Lock()
	if len(writers) != 1 || writers[0] != leader {
		t.Errorf("writers %v, want only the Lease holder %s", writers, leader)
	}
	mu.Unlock()

	// Make node-2 kube-scheduler's own favourite: one cpu used on node-1 and node-3 (least
	// allocated and balanced allocation then prefer node-2 by about 37 points; the reward, 7
	// against 10 at weight 2, costs it 60).
	for _, n := range []string{"node-1", "node-3"} {
		c.CreatePod(t, harness.PodSpec{Name: "filler-" + n, NodeName: n, CPU: "1"})
	}
	spec := func(name, label, value string) harness.PodSpec {
		return harness.PodSpec{Name: name, SchedulerName: pluginSchedulerName, CPU: "1", Labels: map[string]string{label: value}}
	}
	if got := schedule(t, c, spec("spark-next", "podtype", "spark")); got == "node-2" {
		t.Errorf("spark-next landed on node-2, where spark failed three times")
	}
	scheduleOn(t, c, spec("web-next", "app", "web"), "node-2", "the least allocated node, and web has no failure there")

	// Restart: both replicas stop; a new one loads the table.
	for _, s := range replicas {
		s.Stop()
	}
	again := startPluginScheduler(t, c, r, "kube-safe-scheduler restarted", sa)
	restarted := rewardIdentity(t, again.Process, time.Minute)
	for _, n := range []string{"node-1", "node-3"} {
		c.CreatePod(t, harness.PodSpec{Name: "filler-again-" + n, NodeName: n, CPU: "1"})
	}
	if got := schedule(t, c, spec("spark-again", "podtype", "spark")); got == "node-2" {
		t.Errorf("spark-again landed on node-2 after the restart: the learned reward was lost")
	}
	lastWriter := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(writers) == 0 {
			return ""
		}
		return writers[len(writers)-1]
	}
	// Bounded against a hang only: a restarted kube-scheduler on a loaded machine takes its
	// time to sync its informers and acquire the Lease.
	deadline := time.Now().Add(2 * time.Minute)
	for lastWriter() != restarted {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted scheduler (%s) never wrote the table; writers %v", restarted, lastWriter())
		}
		time.Sleep(250 * time.Millisecond)
	}
	if rows, _, _ := storedRows(t, c); rows["spark/node-2"].N != 3 {
		t.Errorf("after the restart spark/node-2 has %d observations, want 3: %v", rows["spark/node-2"].N, rows)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(writers) != 2 || writers[0] != leader || writers[1] != restarted {
		t.Errorf("writers %v, want %s then %s", writers, leader, restarted)
	}
}

// TestPluginsTelemetry: as TestTelemetryYAML, with the telemetry-policy plugin as shipped
// (sync 5s, hold 30s): a TASPolicy, metrics from a custom metrics API server behind the real
// aggregation layer. A pod pinned to the node above the dontschedule target stays pending with
// the reason; labelled pods land on the node with the lowest node_cpu (kube-scheduler alone
// would spread them); the node above the deschedule target gets demo-policy=violating; an
// invalid policy gets a Warning event; the hot node cools down, loses its label and takes the
// pinned pod.
func TestPluginsTelemetry(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	cm := telemetryNodes(t, c, telemetryPolicy+"---"+brokenPolicy)
	c.RunDeployment(t, withPlugins(t, []string{"telemetry-policy"}, nil), harness.RunOptions{Kubeconfig: sa})
	labelled := map[string]string{"telemetry-policy": "demo-policy"}

	// A pod that can only go to hot stays pending with the reason: the metrics are read.
	pinned := probePod(t, harness.PodSpec{Name: "pinned", Labels: labelled, SchedulerName: pluginSchedulerName})
	pinned.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := c.WaitForEvent(t, "default", "pinned", "FailedScheduling", "telemetry policy default/demo-policy: node_cpu 95 > 90 (")
	t.Logf("pinned: %s", e.Message)

	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), SchedulerName: pluginSchedulerName, CPU: "500m", Labels: labelled}, "cool",
			"node_cpu: cool 20 is the lowest (score 100 against warm 47), and hot 95 fails dontschedule")
	}
	// An unlabelled pod is not affected: it may go to hot.
	plain := probePod(t, harness.PodSpec{Name: "plain", SchedulerName: pluginSchedulerName})
	plain.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := c.WaitForBinding(t, "default", "plain"); n != "hot" {
		t.Fatalf("the unlabelled pod pinned to hot went to %q", n)
	}

	// Deschedule: hot (95 > 80) is labelled once the violation has held 30 s.
	waitForNodeLabel(t, c, "hot", "demo-policy", "violating")
	for _, n := range []string{"cool", "warm"} {
		if v, ok := nodeLabel(t, c, n, "demo-policy"); ok {
			t.Errorf("node %s is labelled demo-policy=%s, but its node_cpu is below 80", n, v)
		}
	}
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
}

// TestPluginsQuorum: the plugin file as shipped; its profile quorum-scheduler runs the gang
// filter, which holds the members of a short group (riya labels, or a PodGroup) with the reason
// in their events, and lets them all bind once the minimum exist, as TestGangYAML does with the
// extender.
func TestPluginsQuorum(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", "podgroup-crd.yaml"))
	c.Apply(t, []byte(`{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": {"name": "pg", "namespace": "default"}, "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30}}`), false)
	c.CreateNodes(t, harness.NodeSpec{Name: "n1"}, harness.NodeSpec{Name: "n2"})
	c.RunDeployment(t, loadDeployment(t, pluginsFile), harness.RunOptions{Kubeconfig: sa})

	schedule(t, c, harness.PodSpec{Name: "loose-0", SchedulerName: quorumSchedulerName})
	t.Run("riya", func(t *testing.T) {
		holdsUntilQuorum(t, c, quorumSchedulerName, "g", map[string]string{"podGroup": "g", "minAvailable": "3"}, "minAvailable")
	})
	t.Run("coscheduling", func(t *testing.T) {
		holdsUntilQuorum(t, c, quorumSchedulerName, "pg", map[string]string{"scheduling.x-k8s.io/pod-group": "pg"}, "minMember")
	})
	t.Run("rejected", func(t *testing.T) {
		c.CreatePod(t, harness.PodSpec{Name: "bad-0", SchedulerName: quorumSchedulerName,
			Labels: map[string]string{"podGroup": "bad", "minAvailable": "three"}})
		e := c.WaitForEvent(t, "default", "bad-0", "FailedScheduling", `label minAvailable is "three", not an integer`)
		t.Logf("bad-0: %s", e.Message)
	})
}

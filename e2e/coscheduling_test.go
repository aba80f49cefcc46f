package e2e

// Coscheduling parity (issues 25 and 20): a Coscheduling user's own configuration, as
// scheduler-plugins' Helm chart (as-a-second-scheduler) renders it, runs kube-safe-scheduler
// unchanged, and both it and the shipped profile (pod-group, group-priority) place groups as
// Coscheduling does: a group that cannot complete gives its room back at once, a member turned
// away before its siblings existed is tried again when they come, the queue is in
// Coscheduling's order, a PodGroup without minMember places its pods with a warning, and
// spec.minResources is checked before any room is held.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// chartSchedulerName is the chart's scheduler.name.
const chartSchedulerName = "scheduler-plugins-scheduler"

// chartConfig is the KubeSchedulerConfiguration scheduler-plugins' Helm chart
// (manifests/install/charts/as-a-second-scheduler, templates/configmap.yaml) renders for a
// Coscheduling user (values: plugins.enabled [Coscheduling], plugins.disabled [PrioritySort],
// pluginConfig Coscheduling permitWaitingTimeSeconds 10, scheduler.leaderElect false), byte for
// byte. The harness adds only the kubeconfig (flags), as a pod's service account would give it.
const chartConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
  resourceNamespace: scheduler-plugins
  resourceName: scheduler-plugins-scheduler
profiles:
# Compose all plugins in one profile
- schedulerName: scheduler-plugins-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      disabled:
      - name: PrioritySort
  pluginConfig: 
  - args:
      permitWaitingTimeSeconds: 10
    name: Coscheduling
`

// gangMode is one way to run gang scheduling in plugin mode.
type gangMode struct {
	name, scheduler string
	deployment      func(t *testing.T) *harness.Deployment
}

// gangModes: a Coscheduling user's configuration, and the shipped profile's gang plugins
// (pod-group, with group-priority's queue order).
var gangModes = []gangMode{
	{"Coscheduling", chartSchedulerName, func(t *testing.T) *harness.Deployment {
		d := *loadDeployment(t, pluginsFile)
		d.SchedulerConfig = []byte(chartConfig)
		return &d
	}},
	{"pod-group", pluginSchedulerName, func(t *testing.T) *harness.Deployment { return withPlugins(t, []string{gangPodGroup}, nil) }},
}

// startGang starts a cluster with the PodGroup definition, the nodes, and the mode's scheduler
// under the plugin file's service account.
func startGang(t *testing.T, m gangMode, nodes ...harness.NodeSpec) *harness.Cluster {
	t.Helper()
	c, sa := startWithPluginServiceAccount(t)
	c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", "podgroup-crd.yaml"))
	if len(nodes) > 0 {
		c.CreateNodes(t, nodes...)
	}
	c.RunDeployment(t, m.deployment(t), harness.RunOptions{Kubeconfig: sa})
	return c
}

// podGroup creates the PodGroup name with the spec given as JSON fields.
func podGroup(t *testing.T, c *harness.Cluster, name, spec string) {
	t.Helper()
	c.Apply(t, []byte(fmt.Sprintf(`{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": {"name": %q, "namespace": "default"}, "spec": {%s}}`, name, spec)), false)
}

func member(m gangMode, name, group, cpu string) harness.PodSpec {
	return harness.PodSpec{Name: name, SchedulerName: m.scheduler, CPU: cpu, Labels: map[string]string{"scheduling.x-k8s.io/pod-group": group}}
}

func allBound(t *testing.T, c *harness.Cluster, pods []string) bool {
	for _, p := range pods {
		if c.PodNode(t, "default", p) == "" {
			return false
		}
	}
	return true
}

// waitAllBound waits up to within for every pod to be bound and returns how long after since.
func waitAllBound(t *testing.T, c *harness.Cluster, pods []string, since time.Time, within time.Duration) (time.Duration, bool) {
	t.Helper()
	for time.Since(since) < within {
		if allBound(t, c, pods) {
			return time.Since(since), true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, false
}

// TestCoschedulingChartConfigStarts: the chart's configuration starts kube-safe-scheduler and
// gang-schedules a group with it (the first finding: it exited with
// `PreFilterPlugin "Coscheduling" does not exist`).
func TestCoschedulingChartConfigStarts(t *testing.T) {
	t.Parallel()
	m := gangModes[0]
	c := startGang(t, m, harness.NodeSpec{Name: "n1", CPU: "4"})
	podGroup(t, c, "pg", `"minMember": 2`)
	c.CreatePod(t, member(m, "pg-0", "pg", "1"))
	time.Sleep(time.Second)
	if n := c.PodNode(t, "default", "pg-0"); n != "" {
		t.Fatalf("pg-0 bound to %s alone, its group has minMember 2", n)
	}
	c.CreatePod(t, member(m, "pg-1", "pg", "1"))
	for _, p := range []string{"pg-0", "pg-1"} {
		c.WaitForBinding(t, "default", p)
	}
}

// TestCoschedulingInterleavedGroups: two groups that together exceed the room (one node, 4 cpu;
// minMember 3 each, 1 cpu a pod, scheduleTimeoutSeconds 10: upstream's integration scenario),
// created interleaved, one at a time. A member that finds no node releases its group's waiting members at
// once (PostFilter), so one group is bound whole within 5 s of the last pod's creation (it took
// 20 s, a Permit timeout, before).
func TestCoschedulingInterleavedGroups(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := startGang(t, m, harness.NodeSpec{Name: "n1", CPU: "4"})
			podGroup(t, c, "pg1", `"minMember": 3, "scheduleTimeoutSeconds": 10`)
			podGroup(t, c, "pg2", `"minMember": 3, "scheduleTimeoutSeconds": 10`)
			groups := map[string][]string{"pg1": {"pg1-0", "pg1-1", "pg1-2"}, "pg2": {"pg2-0", "pg2-1", "pg2-2"}}
			// One at a time, each given the time to be tried before the next comes, so that the
			// groups take the room in turns: pg1-0, pg2-0, pg1-1 and pg2-1 wait at Permit and fill
			// the node, then pg1-2 and pg2-2 find no room.
			for i := range 3 {
				for _, g := range []string{"pg1", "pg2"} {
					c.CreatePod(t, member(m, groups[g][i], g, "1"))
					time.Sleep(300 * time.Millisecond)
				}
			}
			last := time.Now()
			deadline := 5 * time.Second
			for time.Since(last) < deadline {
				for g, pods := range groups {
					if allBound(t, c, pods) {
						t.Logf("%s: group %s bound whole %.1fs after the last pod's creation", m.name, g, time.Since(last).Seconds())
						return
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Fatalf("%s: no group bound whole within %s; events of pg1-2:\n%s\nof pg2-2:\n%s", m.name, deadline,
				harness.FormatEvents(c.Events(t, "default", "pg1-2")), harness.FormatEvents(c.Events(t, "default", "pg2-2")))
		})
	}
}

// TestCoschedulingNeverFitsThenLonePod: a group that can never fit (minMember 3 of 1 cpu on a
// 2-cpu node) does not hold the room: a lone pod created once a member has found no room binds
// within 2 s (it waited for the group's 10 s Permit timeout before).
func TestCoschedulingNeverFitsThenLonePod(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := startGang(t, m, harness.NodeSpec{Name: "n1", CPU: "2"})
			podGroup(t, c, "big", `"minMember": 3, "scheduleTimeoutSeconds": 10`)
			for i := range 3 {
				c.CreatePod(t, member(m, fmt.Sprintf("big-%d", i), "big", "1"))
			}
			// Let the group try first: two members wait at Permit, the third finds no room.
			failed := false
			for start := time.Now(); !failed; time.Sleep(50 * time.Millisecond) {
				if time.Since(start) > harness.BindingTimeout {
					t.Fatal("no member of the group failed")
				}
				for i := range 3 {
					failed = failed || len(c.Events(t, "default", fmt.Sprintf("big-%d", i))) > 0
				}
			}
			created := time.Now()
			c.CreatePod(t, harness.PodSpec{Name: "lone", SchedulerName: m.scheduler, CPU: "1"})
			c.WaitForBindingWithin(t, "default", "lone", 2*time.Second)
			t.Logf("%s: the lone pod bound %.1fs after its creation", m.name, time.Since(created).Seconds())
		})
	}
}

// TestCoschedulingSiblingRetried: PodGroup minMember 2; p1b created, then a gated p1c, then
// p1a. p1b is turned away at PreFilter (alone); p1a passes and waits at Permit and brings p1b
// back, so both bind within 5 s (they bound after p1a's 60 s Permit timeout before).
func TestCoschedulingSiblingRetried(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := startGang(t, m, harness.NodeSpec{Name: "n1", CPU: "4"})
			podGroup(t, c, "pg1", `"minMember": 2`)
			c.CreatePod(t, member(m, "p1b", "pg1", "1"))
			c.WaitForEvent(t, "default", "p1b", "FailedScheduling", "pod group default/pg1 has 1 of 2 pods")
			gated, err := member(m, "p1c", "pg1", "1").Pod()
			if err != nil {
				t.Fatal(err)
			}
			gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
			if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), gated, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			c.CreatePod(t, member(m, "p1a", "pg1", "1"))
			created := time.Now()
			d, ok := waitAllBound(t, c, []string{"p1a", "p1b"}, created, 5*time.Second)
			if !ok {
				t.Fatalf("%s: p1a and p1b not bound within 5s of p1a's creation; events of p1b:\n%s", m.name, harness.FormatEvents(c.Events(t, "default", "p1b")))
			}
			t.Logf("%s: p1a and p1b bound %.1fs after p1a's creation", m.name, d.Seconds())
			if n := c.PodNode(t, "default", "p1c"); n != "" {
				t.Errorf("the gated p1c bound to %s", n)
			}
		})
	}
}

// TestCoschedulingBadArgs: a Coscheduling arg that is unknown or out of range stops the
// scheduler at start, naming it.
func TestCoschedulingBadArgs(t *testing.T) {
	t.Parallel()
	bin := harness.BuildPluginScheduler(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"+
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, args, want string }{
		{"unknown", "permitWaitingTime: 10", `Coscheduling args: unknown field \"permitWaitingTime\" (the fields are permitWaitingTimeSeconds, podGroupBackoffSeconds, podGroupRejectPercentage)`},
		{"negative", "podGroupBackoffSeconds: -1", "Coscheduling args: invalid podGroupBackoffSeconds: -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := harness.SetSchedulerKubeconfig([]byte(strings.Replace(chartConfig, "permitWaitingTimeSeconds: 10", tc.args, 1)), kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(path, cfg, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "--config="+path, "--secure-port=0").CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("the scheduler did not stop with an error (%v):\n%s", err, out)
			}
			mustContain(t, "the scheduler's output", string(out), tc.want)
		})
	}
}

package e2e

// Plugin mode: yamlfiles/scheduler.plugins.yaml runs kube-safe-scheduler, kube-scheduler with the
// agents compiled in as framework plugins (scheduler/), against a real API server, under the
// file's own service account. The scenarios are those of the extender files (scenarios_test.go),
// with the same nodes and pods: the plugins must place the pods where the extenders do, and
// reject nodes with the same reasons.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

const (
	pluginsFile          = "scheduler.plugins.yaml"
	pluginSchedulerName  = "safe-scheduler"
	quorumSchedulerName  = "quorum-scheduler" // the plugin file's second profile: the gang filter
	pluginServiceAccount = "system:serviceaccount:kube-system:safe-scheduler"
)

// startWithPluginServiceAccount starts a cluster, applies the plugin file for real (its service
// account and RBAC; its Deployment never runs, there is no controller) and returns the cluster
// and a kubeconfig that authenticates as the file's service account.
func startWithPluginServiceAccount(t *testing.T) (*harness.Cluster, string) {
	t.Helper()
	c := harness.StartCluster(t)
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", pluginsFile), false)
	return c, c.KubeconfigFor(t, pluginServiceAccount, serviceAccountGroups...)
}

// withPlugins returns the plugin file's deployment with its scheduler configuration changed
// as a scenario needs, as the extender scenarios change a sidecar's variables: only the plugins
// keep stay enabled (with their shipped weights), and args are merged into the shipped
// pluginConfig args of their plugins.
func withPlugins(t *testing.T, keep []string, args map[string]map[string]any) *harness.Deployment {
	t.Helper()
	d := loadDeployment(t, pluginsFile)
	var cfg map[string]any
	if err := yaml.Unmarshal(d.SchedulerConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	profile := cfg["profiles"].([]any)[0].(map[string]any)
	mp := profile["plugins"].(map[string]any)["multiPoint"].(map[string]any)
	var enabled []any
	for _, p := range mp["enabled"].([]any) {
		if slices.Contains(keep, p.(map[string]any)["name"].(string)) {
			enabled = append(enabled, p)
		}
	}
	if len(enabled) != len(keep) {
		t.Fatalf("the shipped configuration does not enable all of %v", keep)
	}
	mp["enabled"] = enabled
	for plugin, values := range args {
		found := false
		for _, pc := range profile["pluginConfig"].([]any) {
			pc := pc.(map[string]any)
			if pc["name"] == plugin {
				found = true
				for k, v := range values {
					pc["args"].(map[string]any)[k] = v
				}
			}
		}
		if !found {
			t.Fatalf("the shipped configuration has no pluginConfig for %s", plugin)
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	copied := *d
	copied.SchedulerConfig = out
	return &copied
}

// TestPluginsYAML runs the plugin file's configuration as shipped: safe-overload rejects the
// risky node with its reason in the pod's event (the pod stays pending), a pod pinned to that
// node stays pending with the same reason once other nodes exist, and the less used of two
// acceptable nodes gets the pod, as with extender.safe.yaml (TestSafeYAML).
func TestPluginsYAML(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	c.CreateNode(t, harness.NodeSpec{Name: "risky", Annotations: riskyStats})
	r := c.RunDeployment(t, loadDeployment(t, pluginsFile), harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)
	if !harness.IsPluginScheduler(r.Deployment.Scheduler) {
		t.Fatalf("the file's scheduler container %s is not the plugin scheduler", r.Deployment.Scheduler.Image)
	}

	c.CreatePod(t, harness.PodSpec{Name: "test-pod", SchedulerName: pluginSchedulerName, CPU: "100m", Memory: "64Mi"})
	e := c.WaitForEvent(t, "default", "test-pod", "FailedScheduling", "0/1 nodes are available", "cpu risk", "> 0.30", "threshold 0.90")
	t.Logf("test-pod on the risky node alone: %s", e.Message)
	if n := c.PodNode(t, "default", "test-pod"); n != "" {
		t.Fatalf("test-pod bound to %s although safe-overload rejects it", n)
	}

	c.CreateNodes(t,
		harness.NodeSpec{Name: "idle", Annotations: idleStats},
		harness.NodeSpec{Name: "busy", Annotations: busyStats},
	)
	if n := c.WaitForBinding(t, "default", "test-pod"); n != "idle" {
		t.Fatalf("test-pod went to %s, want idle (the less used node)", n)
	}

	// A pod that may run on the risky node only stays pending, for safe-overload's reason.
	createPinned(t, c, "pinned", "risky")
	e = c.WaitForEvent(t, "default", "pinned", "FailedScheduling", "cpu risk", "> 0.30", "threshold 0.90")
	t.Logf("pinned to risky: %s", e.Message)
	time.Sleep(2 * time.Second) // the scheduler retries on the pod's backoff: it must not bind it meanwhile
	if n := c.PodNode(t, "default", "pinned"); n != "" {
		t.Fatalf("pinned bound to %s although safe-overload rejects risky", n)
	}
}

// TestPluginsSafeCongestion: as TestSafeCongestionYAML, congestion alone would choose the risky
// node (congestion-factor 0); safe-overload removes it first, and congestion then decides between
// two equally safe nodes.
func TestPluginsSafeCongestion(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	c.CreateNodes(t, safeCongestionNodes...)
	c.RunDeployment(t, withPlugins(t, []string{"safe-overload", "congestion"}, nil), harness.RunOptions{Kubeconfig: sa})
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), SchedulerName: pluginSchedulerName, CPU: "100m", Memory: "64Mi"}, "calm",
			"safe-overload rejects risky; congestion scores calm 9, jammed 1")
	}
}

// TestPluginsPigeon: as TestPigeonYAML, pigeon-holing with each objective set in its args. The
// scheduler's snapshot holds the pods it has just placed, so each pod follows the previous
// placement without waiting for any cache.
func TestPluginsPigeon(t *testing.T) {
	t.Parallel()
	place := func(t *testing.T, c *harness.Cluster, pods int, want func(cpu map[string]int64) []string, why string) []string {
		t.Helper()
		var placed []string
		for i := range pods {
			cpu := cpuRequests(t, c, pigeonNodes)
			expected := want(cpu)
			got := schedule(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), SchedulerName: pluginSchedulerName, CPU: "500m", Memory: "64Mi"})
			if !slices.Contains(expected, got) {
				t.Fatalf("pod p%d went to %s, want one of %v: %s (cpu requests before: %v)", i, got, expected, why, cpu)
			}
			placed = append(placed, got)
		}
		return placed
	}
	objective := func(o string) map[string]map[string]any {
		return map[string]map[string]any{"pigeon-holing": {"policyObjective": o}}
	}

	// LOAD_BALANCE: node-b has no cpu requested but 75% of its memory; kube-scheduler's own
	// scoring prefers node-a and node-c by about 38 points, pigeon-holing (weight 2) node-b by 180.
	t.Run("LOAD_BALANCE", func(t *testing.T) {
		t.Parallel()
		c, sa := startWithPluginServiceAccount(t)
		for _, n := range pigeonNodes {
			c.CreateNode(t, harness.NodeSpec{Name: n})
		}
		preload(t, c, "node-a", "1", "")
		preload(t, c, "node-b", "", "6Gi")
		preload(t, c, "node-c", "1", "")
		c.RunDeployment(t, withPlugins(t, []string{"pigeon-holing"}, objective("LOAD_BALANCE")), harness.RunOptions{Kubeconfig: sa})
		placed := place(t, c, 4, func(cpu map[string]int64) []string {
			lowest, _ := extremes(cpu)
			return lowest
		}, "LOAD_BALANCE puts a pod where the least cpu is requested")
		if placed[0] != "node-b" || placed[1] != "node-b" {
			t.Fatalf("placements %v: the first two pods belong on node-b", placed)
		}
	})

	// CONSOLIDATE packs onto the node with the most cpu requested, against kube-scheduler's own
	// preference for emptier nodes.
	t.Run("CONSOLIDATE", func(t *testing.T) {
		t.Parallel()
		c, sa := startWithPluginServiceAccount(t)
		for _, n := range pigeonNodes {
			c.CreateNode(t, harness.NodeSpec{Name: n})
		}
		preload(t, c, "node-b", "1", "")
		c.RunDeployment(t, withPlugins(t, []string{"pigeon-holing"}, objective("CONSOLIDATE")), harness.RunOptions{Kubeconfig: sa})
		placed := place(t, c, 3, func(cpu map[string]int64) []string {
			_, highest := extremes(cpu)
			return highest
		}, "CONSOLIDATE puts a pod where the most cpu is requested")
		if want := []string{"node-b", "node-b", "node-b"}; !slices.Equal(placed, want) {
			t.Fatalf("placements %v, want %v", placed, want)
		}
	})
}

// TestPluginsBadArgs: a bad pluginConfig stops the plugin scheduler at start, before it
// contacts the API server, with an error naming the plugin, the agent and the field.
func TestPluginsBadArgs(t *testing.T) {
	t.Parallel()
	bin := harness.BuildPluginScheduler(t)
	dir := t.TempDir()
	// A kubeconfig for a server that is not there: the configuration must fail first.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"+
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args map[string]map[string]any
		want string
	}{
		{"unknown field", map[string]map[string]any{"safe-overload": {"utilisation": 80}},
			`initializing plugin \"safe-overload\": plugin safe-overload (agent safe): pluginConfig args: unknown field \"utilisation\" (the agent's fields are utilization, percentile, forecastWeight, printTable, maxStatsAge, stale, filter, placedShare, placed, balanceScale, estimate, `},
		{"out of range", map[string]map[string]any{"congestion": {"factorMax": 0}},
			"plugin congestion (agent congestion): pluginConfig args: invalid factorMax: 0 is out of range"},
		{"bad objective", map[string]map[string]any{"pigeon-holing": {"policyObjective": "PACK"}},
			`plugin pigeon-holing (agent pigeon): pluginConfig args: invalid policyObjective: \"PACK\" is not one of A_BINPACK, LOAD_BALANCE, CONSOLIDATE`},
		{"gang timeout", map[string]map[string]any{gangPodGroup: {"defaultScheduleTimeoutSeconds": 0}},
			"pod-group args: invalid defaultScheduleTimeoutSeconds: 0 is not in 1..900"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := withPlugins(t, []string{"safe-overload", "safe-balance", "congestion", "pigeon-holing", gangPodGroup}, tc.args)
			cfg, err := harness.SetSchedulerKubeconfig(d.SchedulerConfig, kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
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
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "command failed") {
					t.Logf("%s", line)
				}
			}
		})
	}
}

// TestPluginFileShape checks what the plugin file promises beyond validation: its scheduler runs
// the kube-safe-scheduler image (dockerfiles/Dockerfile.scheduler) with leader election on, a
// profile safe-scheduler whose plugins are agent functions (their names are the routes' last
// element, as the extender built with -tags all reports them) with weights, safe-overload among
// them as filter and score (and the gang plugin pod-group, without weight), and pluginConfig
// only for enabled plugins; and a profile quorum-scheduler with the gang filter alone.
func TestPluginFileShape(t *testing.T) {
	d := loadDeployment(t, pluginsFile)
	if d.Deployment.Namespace != "kube-system" || len(d.Sidecars) != 0 {
		t.Errorf("Deployment in %q with %d sidecars, want kube-system and none", d.Deployment.Namespace, len(d.Sidecars))
	}
	if !strings.HasPrefix(d.Scheduler.Image, harness.PluginScheduler+":") || d.Scheduler.Command[0] != "/"+harness.PluginScheduler {
		t.Errorf("scheduler container runs %s %v, want the %s image's /%s", d.Scheduler.Image, d.Scheduler.Command, harness.PluginScheduler, harness.PluginScheduler)
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "dockerfiles", "Dockerfile.scheduler")); err != nil {
		t.Error(err)
	}
	var cfg struct {
		LeaderElection struct {
			LeaderElect  *bool  `json:"leaderElect"`
			ResourceName string `json:"resourceName"`
		} `json:"leaderElection"`
		Extenders []any `json:"extenders"`
		Profiles  []struct {
			SchedulerName string `json:"schedulerName"`
			Plugins       struct {
				MultiPoint struct {
					Enabled []struct {
						Name   string `json:"name"`
						Weight int    `json:"weight"`
					} `json:"enabled"`
				} `json:"multiPoint"`
			} `json:"plugins"`
			PluginConfig []struct {
				Name string `json:"name"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(d.SchedulerConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LeaderElection.LeaderElect == nil || !*cfg.LeaderElection.LeaderElect || cfg.LeaderElection.ResourceName != pluginSchedulerName {
		t.Errorf("leader election %+v, want on, on the lease %s", cfg.LeaderElection, pluginSchedulerName)
	}
	if len(cfg.Extenders) != 0 {
		t.Errorf("plugin mode with %d extenders", len(cfg.Extenders))
	}
	if len(cfg.Profiles) != 2 || cfg.Profiles[0].SchedulerName != pluginSchedulerName || cfg.Profiles[1].SchedulerName != quorumSchedulerName {
		t.Fatalf("profiles %+v, want %s and %s", cfg.Profiles, pluginSchedulerName, quorumSchedulerName)
	}
	if q := cfg.Profiles[1].Plugins.MultiPoint.Enabled; len(q) != 1 || q[0].Name != "gang" {
		t.Errorf("%s enables %+v, want the gang filter alone", quorumSchedulerName, q)
	}
	functions := map[string][]string{} // function name -> its routes' kinds
	for _, routes := range agentRoutes(t) {
		for _, r := range routes {
			kind, name, _ := strings.Cut(r, "/")
			functions[name] = append(functions[name], kind)
		}
	}
	var enabled []string
	for _, p := range cfg.Profiles[0].Plugins.MultiPoint.Enabled {
		if p.Name == gangPodGroup { // the gang plugin, no agent function (gangplugins_test.go)
			enabled = append(enabled, p.Name)
			continue
		}
		if _, ok := functions[p.Name]; !ok {
			t.Errorf("plugin %s is no agent function (functions: %v)", p.Name, functions)
		}
		if p.Weight <= 0 {
			t.Errorf("plugin %s has no weight", p.Name)
		}
		enabled = append(enabled, p.Name)
	}
	for _, want := range []string{"safe-overload", "safe-balance", "congestion", "pigeon-holing", "reward", "telemetry-policy"} {
		if !slices.Contains(enabled, want) {
			t.Errorf("plugin %s is not enabled (enabled: %v)", want, enabled)
		}
	}
	if kinds := functions["safe-overload"]; !slices.Contains(kinds, "predicates") || !slices.Contains(kinds, "priorities") {
		t.Errorf("safe-overload is %v, want a filter and a priority", kinds)
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		// NodeResourcesFit is in-tree, enabled by default: its args ignore the resources the
		// agents manage (TestPluginsTelemetryTASPods, TestModesConfigureTheSame).
		if !slices.Contains(enabled, pc.Name) && pc.Name != "NodeResourcesFit" {
			t.Errorf("pluginConfig for %s, which is not enabled", pc.Name)
		}
	}
}

// createPinned creates a plugin-mode pod of 100m and 64Mi that may run on node only (a required
// node affinity on metadata.name).
func createPinned(t *testing.T, c *harness.Cluster, name, node string) {
	t.Helper()
	pod, err := harness.PodSpec{Name: name, SchedulerName: pluginSchedulerName, CPU: "100m", Memory: "64Mi"}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

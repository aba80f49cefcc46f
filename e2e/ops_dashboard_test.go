package e2e

// The operators' kit against the real thing: Debian's Prometheus scrapes a real extender (every
// agent as a sidecar, as e2e/demo/demo.yaml runs them) and the plugin scheduler, both
// placing pods through a real kube-scheduler, and every query of the shipped Grafana dashboard
// (charts/kube-safe-scheduler/files/dashboard.json) must return data.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// prometheusServer starts Debian's Prometheus on a free loopback port with the scrape
// configuration scrapeConfigs (YAML, the list under scrape_configs:), every scrape at 200 ms,
// and returns its URL (see requirePrometheus).
func prometheusServer(t *testing.T, scrapeConfigs string) string {
	t.Helper()
	return harness.StartPrometheus(t, requirePrometheus(t),
		"global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\nscrape_configs:\n"+scrapeConfigs, time.Minute)
}

// promQuery runs an instant query and returns the number of series of its result.
func promQuery(prom, query string) (int, error) {
	resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query failed: %s", r.Error)
	}
	return len(r.Data.Result), nil
}

// dashboardQuery is one query of one panel of the shipped dashboard.
type dashboardQuery struct{ panel, expr string }

// dashboardQueries reads every panel query of the shipped dashboard, its Grafana variables
// replaced as Grafana would for "All" over a 200 ms scrape: $job by .+, $__rate_interval by 10s.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "kube-safe-scheduler", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []dashboardQuery
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			e := strings.NewReplacer("$job", ".+", "$__rate_interval", "10s").Replace(q.Expr)
			if strings.Contains(e, "$") {
				t.Fatalf("panel %q: a variable the test does not replace in %s", p.Title, e)
			}
			out = append(out, dashboardQuery{p.Title, e})
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no query")
	}
	return out
}

// TestDashboardPanelsHaveDataAndExplain: every query of the dashboard returns at least one
// series from Prometheus scraping a real extender (all agents as sidecars, plus a reward
// extender) and the plugin scheduler while both place pods; then extender explain shows a pod's
// last cycle with every agent's inputs, from the sidecars and from kube-safe-scheduler
// (--scheduler, DECISIONS_KEPT), and says what is missing when it cannot.
func TestDashboardPanelsHaveDataAndExplain(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "congestion", "pigeon", "template", "telemetry", "reward")
	queries := dashboardQueries(t)
	root := repoRoot(t)

	c, sa := startWithServiceAccount(t)
	c.ApplyFile(t, filepath.Join(root, "yamlfiles", pluginsFile), false)
	psa := c.KubeconfigFor(t, pluginServiceAccount, serviceAccountGroups...)
	// Telemetry: the CRD, the sidecar's RBAC (the file's objects), a policy, the custom metrics.
	c.ApplyFile(t, filepath.Join(root, "yamlfiles", "telemetry-policy-crd.yaml"), false)
	c.ApplyFile(t, filepath.Join(root, "yamlfiles", "extender.telemetry.yaml"), false)
	applyWhenServed(t, c, telemetryPolicy)
	cm := c.StartCustomMetrics(t)
	var nodes []harness.NodeSpec
	for i := range 4 {
		name := fmt.Sprintf("node-%d", i)
		cm.Set("node_cpu", name, float64(20+20*i))
		nodes = append(nodes, harness.NodeSpec{Name: name, CPU: "8", Memory: "16Gi",
			Labels:      map[string]string{"template.extender/allowed": "true"},
			Annotations: withAnnotations(statsAnnotations(int64(7000-1000*i), 300, 12*gi, gi), "congestion-factor", strconv.Itoa(10*i), "template.extender/score", strconv.Itoa(i+1))})
	}
	c.CreateNodes(t, nodes...)

	d, err := harness.LoadDeploymentFile(filepath.Join(root, "e2e", "demo", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	allowMetrics := []string{"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}
	ext := c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa, SchedulerArgs: allowMetrics,
		Env: map[string]map[string]string{"telemetry": {"TELEMETRY_SYNC_PERIOD": "1s"}}})
	reward := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender reward", Tags: []string{"all"},
		Env: map[string]string{"KUBECONFIG": c.Kubeconfig, "AGENTS": "reward", "REWARD_NAMESPACE": "default", "REWARD_FLUSH_INTERVAL": "1s"}})
	plugins := c.RunDeployment(t, loadDeployment(t, pluginsFile), harness.RunOptions{Kubeconfig: psa, SchedulerArgs: allowMetrics,
		Env: map[string]map[string]string{"kube-safe-scheduler": {"DECISIONS_KEPT": "1000"}}})

	var targets []string
	for _, e := range ext.Extenders {
		targets = append(targets, strconv.Quote(strings.TrimPrefix(e.BaseURL, "http://")))
	}
	prom := prometheusServer(t, fmt.Sprintf(`- job_name: extender
  static_configs:
  - targets: [%s]
- job_name: reward
  static_configs:
  - targets: [%q]
- job_name: kube-safe-scheduler
  scheme: https
  tls_config: {insecure_skip_verify: true}
  static_configs:
  - targets: ["127.0.0.1:%d"]
`, strings.Join(targets, ", "), strings.TrimPrefix(reward.BaseURL, "http://"), plugins.Scheduler.Port))

	// Load: pods through both schedulers, half of the extender's under the telemetry policy.
	// kube-scheduler records plugin times in 10 % of its cycles: with 60 pods, the chance that
	// none is recorded is 0.9^60, under 0.2 %.
	const extPods, pluginPods = 24, 60
	for i := range max(extPods, pluginPods) {
		if i < extPods {
			spec := harness.PodSpec{Name: fmt.Sprintf("ext-%d", i), SchedulerName: schedulerName, CPU: "50m", Memory: "32Mi"}
			if i%2 == 1 {
				// A TAS pod: the policy label and telemetry/scheduling, the resource the telemetry
				// extender manages (without it the scheduler does not call that extender).
				spec.Labels = map[string]string{"telemetry-policy": "demo-policy"}
				spec.Extra = tasResource
			}
			c.CreatePod(t, spec)
		}
		if i < pluginPods {
			c.CreatePod(t, harness.PodSpec{Name: fmt.Sprintf("plug-%d", i), SchedulerName: pluginSchedulerName, CPU: "50m", Memory: "32Mi"})
		}
	}
	for i := range extPods {
		c.WaitForBinding(t, "default", fmt.Sprintf("ext-%d", i))
	}
	for i := range pluginPods {
		c.WaitForBinding(t, "default", fmt.Sprintf("plug-%d", i))
	}

	// Every query returns data once Prometheus has scraped the load (a few scrapes).
	var empty []string
	deadline := time.Now().Add(time.Minute)
	for {
		empty = empty[:0]
		for _, q := range queries {
			n, err := promQuery(prom, q.expr)
			if err != nil {
				t.Fatalf("panel %q: %s: %v", q.panel, q.expr, err)
			}
			if n == 0 {
				empty = append(empty, fmt.Sprintf("panel %q: %s", q.panel, q.expr))
			}
		}
		if len(empty) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if len(empty) > 0 {
		t.Errorf("%d of %d dashboard queries return no series:\n%s", len(empty), len(queries), strings.Join(empty, "\n"))
	} else {
		t.Logf("all %d queries of the dashboard return data", len(queries))
	}

	// extender explain, as an operator runs it against the sidecars (one URL per agent), with
	// the configuration's weights: a pod under the telemetry policy, every agent's inputs.
	var urls []string
	for _, e := range ext.Extenders {
		urls = append(urls, e.BaseURL)
	}
	out, err := exec.CommandContext(t.Context(), reward.Binary, "explain", "--url", strings.Join(urls, ","),
		"--weights", "safe-overload=2,pigeon-holing=2", "default/ext-1").CombinedOutput()
	if err != nil {
		t.Fatalf("extender explain: %v\n%s", err, out)
	}
	t.Logf("extender explain default/ext-1:\n%s", out)
	bound := c.PodNode(t, "default", "ext-1")
	mustContain(t, "extender explain's table", string(out), "Pod default/ext-1", "safe-overload (filter)", "safe-overload (w2)",
		"pigeon-holing (w2)", "congestion (w1)", "telemetry-policy (filter)", "Σ w·score", bound,
		// what each agent saw
		"acceptableRisk=0.3", "mu=", "sigma=", "factor=", "objectiveAfter=", "objectiveBefore=", "policy=default/demo-policy", "node_cpu={age=")
	// Plugin mode: kube-safe-scheduler, started with DECISIONS_KEPT, publishes its plugins'
	// decisions under /configz, behind its own authentication and authorization. The admin's
	// client certificate reads them; a user without the right to get /configz is refused, and
	// the command says what is needed.
	schedURL := fmt.Sprintf("https://127.0.0.1:%d", plugins.Scheduler.Port)
	admin := clientCertFiles(t, c.Kubeconfig)
	out, err = exec.CommandContext(t.Context(), reward.Binary, "explain", "--insecure-skip-verify",
		"--scheduler", schedURL, "--cert-file", admin[0], "--key-file", admin[1], "default/plug-1").CombinedOutput()
	if err != nil {
		t.Fatalf("extender explain --scheduler: %v\n%s", err, out)
	}
	t.Logf("extender explain --scheduler default/plug-1:\n%s", out)
	mustContain(t, "extender explain's table in plugin mode", string(out), "Pod default/plug-1", "safe-overload (filter)",
		"safe-overload (w1)", "congestion (w1)", "Σ w·score", c.PodNode(t, "default", "plug-1"), "acceptableRisk=0.3", "mu=", "factor=")
	nobody := clientCertFiles(t, c.KubeconfigFor(t, "nobody"))
	out, err = exec.CommandContext(t.Context(), reward.Binary, "explain", "--insecure-skip-verify",
		"--scheduler", schedURL, "--cert-file", nobody[0], "--key-file", nobody[1], "default/plug-1").CombinedOutput()
	if err == nil {
		t.Fatalf("extender explain --scheduler as a user without rights succeeded:\n%s", out)
	}
	mustContain(t, "explain refused by the plugin scheduler", string(out), "403", "allowed to get the non-resource URL /configz")
	// An extender URL pointed at the scheduler: the command names --scheduler.
	out, err = exec.CommandContext(t.Context(), reward.Binary, "explain", "--insecure-skip-verify",
		"--url", schedURL, "default/plug-1").CombinedOutput()
	if err == nil {
		t.Fatalf("extender explain --url against the plugin scheduler succeeded:\n%s", out)
	}
	mustContain(t, "explain --url against the plugin scheduler", string(out), "give --scheduler")
}

// clientCertFiles writes the client certificate and key of kubeconfig's current user to files
// and returns their paths, as an operator extracts them for extender explain.
func clientCertFiles(t *testing.T, kubeconfig string) [2]string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	user := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	if user == nil || len(user.ClientCertificateData) == 0 {
		t.Fatalf("%s: the current user has no client certificate", kubeconfig)
	}
	dir := t.TempDir()
	files := [2]string{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")}
	for i, b := range [][]byte{user.ClientCertificateData, user.ClientKeyData} {
		if err := os.WriteFile(files[i], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

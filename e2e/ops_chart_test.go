package e2e

// The Helm chart (charts/kube-safe-scheduler) through Helm itself, built from the Go module
// proxy into .cache/helm like the control plane: helm lint, helm template for each mode and
// agent, the renders applied to a real API server (server-side dry run), values that make no
// sense refused at render naming the value, and one render of each mode run as shipped,
// placing a pod.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// helm returns the helm binary, harness.HelmVersion in .cache/helm/<version>/, built there
// from the Go module proxy the first time (harness.Helm, under a lock shared with the lab).
func helm(t *testing.T) string {
	t.Helper()
	bin, err := harness.Helm(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// prometheusOperator is the prometheus-operator release whose PrometheusRule CRD the chart's
// PrometheusRule is checked against (its module, from the Go module proxy, ships the CRDs in
// example/prometheus-operator-crd/).
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

var (
	ruleCRDOnce sync.Once
	ruleCRD     string
	ruleCRDErr  error
)

// prometheusRuleCRD returns the path of the PrometheusRule CRD of prometheusOperator, downloaded
// once into the Go module cache (go mod download, as helm is built from the proxy).
func prometheusRuleCRD(t *testing.T) string {
	t.Helper()
	ruleCRDOnce.Do(func() {
		dir, err := os.MkdirTemp("", "prometheus-operator-crd")
		if err != nil {
			ruleCRDErr = err
			return
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module crd\n\ngo 1.24\n"), 0o644); err != nil {
			ruleCRDErr = err
			return
		}
		cmd := exec.Command("go", "mod", "download", "-json", prometheusOperator)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			ruleCRDErr = fmt.Errorf("go mod download %s: %v\n%s", prometheusOperator, err, out)
			return
		}
		var mod struct{ Dir, Error string }
		if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
			ruleCRDErr = fmt.Errorf("go mod download %s: %v %s\n%s", prometheusOperator, err, mod.Error, out)
			return
		}
		ruleCRD = filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_prometheusrules.yaml")
		_, ruleCRDErr = os.Stat(ruleCRD)
	})
	if ruleCRDErr != nil {
		t.Fatal(ruleCRDErr)
	}
	return ruleCRD
}

func chartDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "charts", "kube-safe-scheduler")
}

// runHelm runs helm with args (harness.RunHelm: HOME and Helm's directories in a temporary
// directory).
func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return harness.RunHelm(t.Context(), helm(t), args...)
}

// render is helm template of the chart in kube-system with the --set values given.
func render(t *testing.T, sets ...string) ([]byte, error) {
	t.Helper()
	return harness.RenderChart(t.Context(), helm(t), sets...)
}

// chartAgents returns the chart's agents in call order, as its files/agents.json (generated from
// agents.All by make generate) lists them.
func chartAgents(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "files", "agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table map[string]struct {
		Order int `json:"order"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatalf("files/agents.json: %v", err)
	}
	out := make([]string, len(table))
	for name, a := range table {
		if a.Order < 0 || a.Order >= len(out) || out[a.Order] != "" {
			t.Fatalf("files/agents.json: agent %s has order %d, out of 0..%d or taken", name, a.Order, len(out)-1)
		}
		out[a.Order] = name
	}
	return out
}

// helm lint passes for the defaults, for plugin mode with every agent, and for the values of
// each shipped yamlfile.
func TestChartLint(t *testing.T) {
	t.Parallel()
	every := []string{"--set", "mode=plugin"}
	for _, a := range chartAgents(t) {
		every = append(every, "--set", "agents."+a+".enabled=true")
	}
	cases := [][]string{nil, every, {"--set", "alerts.enabled=true,dashboard.enabled=true,nodeAnnotator.enabled=true,crds.podGroup=true,crds.tasPolicy=true"},
		{"--set", "nodeAnnotator.enabled=true,nodeAnnotator.learner.enabled=true,agents.safe.settings.estimate=learned"}}
	// and the values the shipped yamlfiles are rendered with
	shipped, _ := filepath.Glob(filepath.Join(repoRoot(t), "charts", "yamlfiles", "*.values.yaml"))
	for _, f := range shipped {
		cases = append(cases, []string{"-f", f})
	}
	for _, extra := range cases {
		if out, err := runHelm(t, append([]string{"lint", "--strict", chartDir(t)}, extra...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// Every mode with each agent alone and with all agents renders, and the render passes a
// server-side dry run on a real API server (the CRDs applied for real first, as an install
// with crds.* would; the PrometheusRule against the prometheus-operator's own CRD).
func TestChartTemplateDryRun(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	for _, crd := range []string{"podgroup-crd.yaml", "telemetry-policy-crd.yaml"} {
		c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", crd))
	}
	// The prometheus-operator's PrometheusRule CRD, so that the chart's PrometheusRule is
	// validated against its schema too.
	c.ApplyCRDFile(t, prometheusRuleCRD(t))
	all := []string{}
	agents := chartAgents(t)
	for _, a := range agents {
		all = append(all, "agents."+a+".enabled=true")
	}
	cases := map[string][]string{}
	for _, mode := range []string{"extender", "plugin"} {
		for _, a := range agents {
			sets := []string{"mode=" + mode, "agents." + a + ".enabled=true"}
			if a != "safe" {
				sets = append(sets, "agents.safe.enabled=false")
			}
			cases[mode+"/"+a] = sets
		}
		cases[mode+"/all"] = append([]string{"mode=" + mode, "nodeAnnotator.enabled=true", "dashboard.enabled=true"}, all...)
	}
	cases["extender/safe+mtls"] = []string{"tls.enabled=true", "tls.serverSecret=ext-tls", "tls.clientSecret=client-tls", "tls.allowedClients=my-scheduler"}
	cases["extender/safe settings"] = []string{"agents.safe.settings.utilization=85", "agents.safe.settings.maxStatsAge=1h", "agents.safe.settings.stale=reject"}
	cases["extender/alerts"] = []string{"alerts.enabled=true", "alerts.labels.release=prometheus"}
	cases["plugin/alerts"] = []string{"mode=plugin", "alerts.enabled=true"}
	cases["extender/safe+congestion combined"] = []string{"agents.congestion.enabled=true", "combined.enabled=true"}
	cases["extender/template without cluster access"] = []string{"agents.safe.enabled=false", "agents.template.enabled=true", "agents.template.nodeCacheCapable=false", "agents.template.clusterAccess=none"}
	cases["plugin/gang+quorum profile"] = []string{"mode=plugin", "agents.gang.enabled=true", "plugin.quorumProfile=quorum-scheduler", "plugin.podGroupArgs.podGroupRejectPercentage=10"}
	cases["plugin/decisions kept"] = []string{"mode=plugin", "plugin.decisionsKept=500"}
	cases["plugin/all combined"] = append([]string{"mode=plugin", "combined.enabled=true"}, all...)
	cases["extender/usage learner"] = []string{"nodeAnnotator.enabled=true", "nodeAnnotator.learner.enabled=true", "agents.safe.settings.estimate=learned"}
	cases["plugin/usage learner elsewhere"] = []string{"mode=plugin", "nodeAnnotator.enabled=true", "nodeAnnotator.learner.enabled=true",
		"nodeAnnotator.learner.namespace=default", "agents.safe.settings.estimate=learned", "agents.safe.settings.estimateNamespace=default"}
	cases["extender/descheduler+telemetry"] = []string{"descheduler.enabled=true", "descheduler.lowNodeUtilization.prometheusURL=http://prometheus:9090", "agents.telemetry.enabled=true"}
	cases["plugin/descheduler metrics server"] = []string{"mode=plugin", "descheduler.enabled=true", "descheduler.lowNodeUtilization.source=KubernetesMetrics"}
	cases["plugin/safe settings"] = []string{"mode=plugin", "agents.safe.settings.utilization=85", "agents.pigeon.enabled=true", "agents.pigeon.settings.numResources=2"}
	for name, sets := range cases {
		out, err := render(t, sets...)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		objs, err := harness.ReadObjects(out)
		if err != nil || len(objs) == 0 {
			t.Errorf("%s: %d objects, %v", name, len(objs), err)
			continue
		}
		c.Apply(t, out, true)
	}
	t.Logf("%d renders passed a server-side dry run", len(cases))
}

// The rendered settings reach the agents by their variables (extender mode) and the plugins by
// their args (plugin mode); the PrometheusRule carries the rules file.
func TestChartRendersSettingsAndRules(t *testing.T) {
	t.Parallel()
	out, err := render(t, "agents.safe.settings.utilization=85", "agents.congestion.enabled=true", "agents.congestion.settings.factorMax=40")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "extender render", string(out), `{name: SAFEUTILIZATION, value: "85"}`, `{name: CONGESTION_FACTOR_MAX, value: "40"}`,
		"urlPrefix: http://localhost:5401/scheduler", "prioritizeVerb: priorities/congestion")
	out, err = render(t, "mode=plugin", "agents.safe.settings.utilization=85")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "plugin render", string(out), "- name: safe-overload\n        args:\n          utilization: 85", "image: kube-safe-scheduler:latest")
	if strings.Contains(string(out), "kube-sched-ext-safe") {
		t.Error("plugin mode renders a sidecar")
	}

	out, err = render(t, "alerts.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := harness.ReadObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(filepath.Join(chartDir(t), "files", "alerts.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(rules, &want); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs {
		if o.GetKind() == "PrometheusRule" {
			found = true
			got, _ := yaml.Marshal(o.Object["spec"])
			w, _ := yaml.Marshal(want)
			if !bytes.Equal(got, w) {
				t.Errorf("the PrometheusRule's spec is not the rules file:\n%s", got)
			}
		}
	}
	if !found {
		t.Error("alerts.enabled renders no PrometheusRule")
	}
}

// Values that make no sense stop the render with a message naming the value.
func TestChartRefusesNonsense(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"agents.nosuch.enabled=true"}, "nosuch"},
		{[]string{"agents.safe.settings.utilisation=80"}, "utilisation"},
		{[]string{"agents.safe.settings.utilization=high"}, "utilization"},
		{[]string{"mode=both"}, "mode"},
		{[]string{"agents.safe.enabled=false"}, "no agent enabled"},
		{[]string{"tls.enabled=true"}, "tls.enabled needs tls.serverSecret"},
		{[]string{"tls.enabled=true", "tls.serverSecret=s"}, "tls.enabled needs tls.clientSecret"},
		{[]string{"tls.serverSecret=s"}, "need tls.enabled: true"},
		{[]string{"mode=plugin", "tls.enabled=true", "tls.serverSecret=s", "tls.clientSecret=c"}, "tls is extender mode only"},
		{[]string{"mode=plugin", "agents.safe.image=x"}, "agents.safe.image is extender mode only"},
		{[]string{"mode=plugin", "agents.reward.enabled=true", "agents.reward.settings.bind=true"}, "agents.reward.settings.bind is extender mode only"},
		{[]string{"mode=plugin", "agents.gang.enabled=true", "agents.gang.settings.cacheWait=2s"}, "agents.gang.settings are extender mode only"},
		{[]string{"mode=plugin", "agents.safe.nodeCacheCapable=false"}, "agents.safe.nodeCacheCapable and agents.safe.clusterAccess are extender mode only"},
		{[]string{"plugin.quorumProfile=q"}, "plugin.quorumProfile is plugin mode only"},
		{[]string{"plugin.decisionsKept=10"}, "plugin.decisionsKept is plugin mode only"},
		{[]string{"mode=plugin", "plugin.decisionsKept=-1"}, "decisionsKept"},
		{[]string{"agents.safe.clusterAccess=none"}, "agents.safe.clusterAccess none needs agents.safe.nodeCacheCapable: false"},
		{[]string{"agents.safe.clusterAccess=sometimes"}, "clusterAccess"},
		{[]string{"tls.enabled=true", "tls.serverSecret=s", "tls.clientSecret=c", "tls.minVersion=1.1"}, "minVersion"},
	} {
		_, err := render(t, tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %v: %v; want an error naming %q", tc.sets, err, tc.want)
		}
	}
}

// runChart renders the chart with sets, applies it for real, runs its scheduler (and sidecars)
// as the chart's service account, and returns the cluster and the running deployment.
func runChart(t *testing.T, sets ...string) (*harness.Cluster, *harness.RunningDeployment) {
	t.Helper()
	out, err := render(t, sets...)
	if err != nil {
		t.Fatal(err)
	}
	c := harness.StartCluster(t)
	c.Apply(t, out, true)
	c.Apply(t, out, false)
	d, err := harness.LoadDeployment("helm template "+strings.Join(sets, " "), out)
	if err != nil {
		t.Fatal(err)
	}
	sa := c.KubeconfigFor(t, "system:serviceaccount:kube-system:"+schedulerNameOf(t, sets), serviceAccountGroups...)
	r := c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)
	return c, r
}

func schedulerNameOf(t *testing.T, sets []string) string {
	for _, s := range sets {
		if v, ok := strings.CutPrefix(s, "schedulerName="); ok {
			return v
		}
	}
	return "my-scheduler"
}

// Extender mode as rendered (safe and congestion as sidecars): safe rejects the risky node,
// and the pod goes to the idle one.
func TestChartRunsExtenderMode(t *testing.T) {
	t.Parallel()
	c, _ := runChart(t, "agents.congestion.enabled=true")
	c.CreateNodes(t, harness.NodeSpec{Name: "risky", Annotations: riskyStats}, harness.NodeSpec{Name: "idle", Annotations: idleStats},
		harness.NodeSpec{Name: "busy", Annotations: busyStats})
	scheduleOn(t, c, harness.PodSpec{Name: "p", SchedulerName: "my-scheduler", CPU: "100m", Memory: "64Mi"}, "idle",
		"safe-overload rejects risky; idle is the least used")
}

// Plugin mode as rendered (kube-safe-scheduler with safe's plugins): the same placement.
func TestChartRunsPluginMode(t *testing.T) {
	t.Parallel()
	c, r := runChart(t, "mode=plugin", "schedulerName=safe-scheduler")
	if !harness.IsPluginScheduler(r.Deployment.Scheduler) {
		t.Fatalf("plugin mode renders %s, not the plugin scheduler", r.Deployment.Scheduler.Image)
	}
	c.CreateNodes(t, harness.NodeSpec{Name: "risky", Annotations: riskyStats}, harness.NodeSpec{Name: "idle", Annotations: idleStats},
		harness.NodeSpec{Name: "busy", Annotations: busyStats})
	scheduleOn(t, c, harness.PodSpec{Name: "p", SchedulerName: "safe-scheduler", CPU: "100m", Memory: "64Mi"}, "idle",
		"safe-overload rejects risky; idle is the least used")
}

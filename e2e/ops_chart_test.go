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
	"strconv"
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

// chartNamespace is the namespace the docs install the chart in: its own.
const chartNamespace = "kube-safe-scheduler"

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
		if out, err := runHelm(t, append([]string{"lint", "--strict", chartDir(t), "--namespace", chartNamespace, "--kube-version", "v1.37.1"}, extra...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// Every mode with each agent alone and with all agents renders, and the render passes a
// server-side dry run on a real API server (the CRDs applied for real first, as an install
// with crds.* would; the PrometheusRule against the prometheus-operator's own CRD), in the
// chart's own namespace as documented.
func TestChartTemplateDryRun(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	c.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+chartNamespace+"}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: usage-store}\n"), false)
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
		"nodeAnnotator.learner.namespace=usage-store", "agents.safe.settings.estimate=learned", "agents.safe.settings.estimateNamespace=usage-store"}
	cases["extender/annotator from prometheus, numbers in env"] = []string{"nodeAnnotator.env.STATS_SOURCE=prometheus", "nodeAnnotator.env.PROMETHEUS_URL=http://prometheus:9090",
		"nodeAnnotator.env.PATCH_QPS=50", "nodeAnnotator.env.STATS_TOLERANCE=5"}
	cases["extender/descheduler alone"] = []string{"descheduler.enabled=true"}
	cases["extender/no annotator"] = []string{"nodeAnnotator.enabled=false"}
	cases["extender/registry"] = []string{"images.registry=ghcr.io/kss", "images.tag=v1"}
	cases["extender/descheduler+telemetry"] = []string{"descheduler.enabled=true", "descheduler.lowNodeUtilization.prometheusURL=http://prometheus:9090", "agents.telemetry.enabled=true"}
	cases["plugin/descheduler metrics server"] = []string{"mode=plugin", "descheduler.enabled=true", "descheduler.lowNodeUtilization.source=KubernetesMetrics"}
	cases["plugin/safe settings"] = []string{"mode=plugin", "agents.safe.settings.utilization=85", "agents.pigeon.enabled=true", "agents.pigeon.settings.numResources=2"}
	for name, sets := range cases {
		out, err := renderIn(t, chartNamespace, sets...)
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
	mustContain(t, "plugin render", string(out), "- name: safe-overload\n        args:\n          utilization: 85", "image: kube-safe-scheduler:"+chartAppVersion(t))
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

// chartAppVersion is the chart's appVersion, the default tag of this project's images.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil || c.AppVersion == "" || c.AppVersion == "latest" {
		t.Fatalf("Chart.yaml: appVersion %q (%v): want a version", c.AppVersion, err)
	}
	return c.AppVersion
}

// This project's images are <images.registry>/<name>:<images.tag, default appVersion>; upstream
// images (kube-scheduler, the descheduler) are never prefixed; a reference with a tag is kept.
// The annotator's env takes numbers and booleans as they are, an integral number as an integer.
func TestChartImagesAndEnv(t *testing.T) {
	t.Parallel()
	v := chartAppVersion(t)
	out, err := render(t, "agents.congestion.enabled=true", "descheduler.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "default images", string(out), "image: kube-sched-ext-safe:"+v, "image: kube-sched-ext-congestion:"+v,
		"image: kube-node-annotator:"+v, "image: registry.k8s.io/kube-scheduler:v1.37.1", "image: registry.k8s.io/descheduler/descheduler:")
	out, err = render(t, "images.registry=ghcr.io/kss/", "images.tag=v9", "agents.congestion.enabled=true", "agents.congestion.image=other/ext:1.2",
		"descheduler.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "registry and tag", string(out), "image: ghcr.io/kss/kube-sched-ext-safe:v9", "image: other/ext:1.2",
		"image: ghcr.io/kss/kube-node-annotator:v9", "image: registry.k8s.io/kube-scheduler:v1.37.1", "image: registry.k8s.io/descheduler/descheduler:")
	out, err = render(t, "mode=plugin", "images.registry=ghcr.io/kss", "combined.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "plugin mode", string(out), "image: ghcr.io/kss/kube-safe-scheduler:"+v)
	out, err = render(t, "combined.enabled=true", "agents.congestion.enabled=true", "images.registry=r.io")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "combined", string(out), "image: r.io/kube-sched-ext-all:"+v)

	// Numbers and booleans in nodeAnnotator.env and in an agent's settings, by --set and by a values
	// file (where YAML reads 1000000 as a float, which toString would print 1e+06).
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("nodeAnnotator:\n  env: {PATCH_BURST: 1000000, STATS_TOLERANCE: 5, USAGE_LEARNER_X: true}\n"+
		"agents:\n  congestion:\n    enabled: true\n    settings: {factorMax: 1000000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runHelm(t, "template", "kss", chartDir(t), "--namespace", chartNamespace, "--kube-version", "v1.37.1", "-f", values,
		"--set", "nodeAnnotator.env.PATCH_QPS=50", "--set", "nodeAnnotator.env.STATS_MIN_SAMPLES=3")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "annotator env", string(out), `{name: PATCH_BURST, value: "1000000"}`, `{name: STATS_TOLERANCE, value: "5"}`, `{name: CONGESTION_FACTOR_MAX, value: "1000000"}`,
		`{name: USAGE_LEARNER_X, value: "true"}`, `{name: PATCH_QPS, value: "50"}`, `{name: STATS_MIN_SAMPLES, value: "3"}`,
		`{name: STATS_SOURCE, value: "metrics-api"}`)
}

// The chart refuses any Kubernetes version but the minor of the kube-scheduler it ships: the
// version-skew policy forbids a scheduler newer than its API server.
func TestChartKubeVersion(t *testing.T) {
	t.Parallel()
	var chart struct {
		KubeVersion string `json:"kubeVersion"`
	}
	data, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	var values struct {
		Images struct {
			Scheduler string `json:"scheduler"`
		} `json:"images"`
	}
	data, err = os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	_, tag, _ := strings.Cut(values.Images.Scheduler, ":")
	parts := strings.SplitN(strings.TrimPrefix(tag, "v"), ".", 3)
	if len(parts) != 3 {
		t.Fatalf("images.scheduler %q has no version tag", values.Images.Scheduler)
	}
	minor := parts[0] + "." + parts[1]
	if want := fmt.Sprintf(">=%s.0-0 <%s.%d.0-0", minor, parts[0], atoi(t, parts[1])+1); chart.KubeVersion != want {
		t.Errorf("Chart.yaml kubeVersion %q; want %q, the minor of images.scheduler %s", chart.KubeVersion, want, values.Images.Scheduler)
	}
	for _, tc := range []struct {
		version string
		ok      bool
	}{{"v" + minor + ".0", true}, {"v" + minor + ".9", true}, {fmt.Sprintf("v%s.%d.0", parts[0], atoi(t, parts[1])-1), false},
		{fmt.Sprintf("v%s.%d.0", parts[0], atoi(t, parts[1])+1), false}, {"v1.30.0", false}} {
		_, err := runHelm(t, "template", "kss", chartDir(t), "--namespace", chartNamespace, "--kube-version", tc.version)
		if (err == nil) != tc.ok {
			t.Errorf("helm template --kube-version %s: %v; want ok %t", tc.version, err, tc.ok)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
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
		// safe without usage: the annotator without a source, prometheus without its URL, the
		// learner without the annotator or a source
		{[]string{"nodeAnnotator.env.STATS_SOURCE=none"}, "nodeAnnotator.env.STATS_SOURCE=metrics-api"},
		{[]string{"nodeAnnotator.env.STATS_SOURCE=prometheus"}, "needs nodeAnnotator.env.PROMETHEUS_URL"},
		{[]string{"nodeAnnotator.env.STATS_SOURCE=graphite"}, "nodeAnnotator.env.STATS_SOURCE \"graphite\""},
		{[]string{"nodeAnnotator.enabled=false", "nodeAnnotator.learner.enabled=true"}, "set nodeAnnotator.enabled=true"},
		{[]string{"agents.safe.enabled=false", "agents.congestion.enabled=true", "nodeAnnotator.env.STATS_SOURCE=none", "nodeAnnotator.learner.enabled=true"},
			"nodeAnnotator.learner.enabled needs pod usage: set nodeAnnotator.env.STATS_SOURCE=metrics-api"},
		// safe's follower lists the ConfigMaps of the learner's namespace: never a shared one
		{[]string{"nodeAnnotator.learner.enabled=true", "agents.safe.settings.estimate=learned"}, "estimate learned follows"},
		{[]string{"descheduler.enabled=true", "descheduler.lowNodeUtilization.source=Prometheus"}, "descheduler.lowNodeUtilization.prometheusURL is needed"},
		{[]string{"images.registry=a b"}, "registry"},
	} {
		_, err := render(t, tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %v: %v; want an error naming %q", tc.sets, err, tc.want)
		}
	}
}

// runChart renders the chart with sets in its own namespace (as the docs install it), applies it
// for real, runs its scheduler (and sidecars) as the chart's service account, and returns the
// cluster and the running deployment.
func runChart(t *testing.T, sets ...string) (*harness.Cluster, *harness.RunningDeployment) {
	t.Helper()
	out, err := renderIn(t, chartNamespace, sets...)
	if err != nil {
		t.Fatal(err)
	}
	// The scheduler's Deployment alone (the render also has the node annotator's).
	scheduler, err := renderIn(t, chartNamespace, append(sets, "nodeAnnotator.enabled=false")...)
	if err != nil {
		t.Fatal(err)
	}
	c := harness.StartCluster(t)
	c.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+chartNamespace+"}\n"), false)
	c.Apply(t, out, true)
	c.Apply(t, out, false)
	d, err := harness.LoadDeployment("helm template "+strings.Join(sets, " "), scheduler)
	if err != nil {
		t.Fatal(err)
	}
	sa := c.KubeconfigFor(t, "system:serviceaccount:"+chartNamespace+":"+schedulerNameOf(t, sets),
		"system:serviceaccounts", "system:serviceaccounts:"+chartNamespace, "system:authenticated")
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

// The descheduler evicts only this scheduler's pods: it cannot select by spec.schedulerName, so
// the policy's DefaultEvictor selects the label kube-safe-scheduler.io/scheduler=<schedulerName>
// (and the quorum profile's name) and every plugin leaves excludeNamespaces alone;
// podLabelSelector replaces the label, {} drops it. descheduler.enabled=true alone renders, on
// the metrics server.
func TestChartDeschedulerSelectsOurPods(t *testing.T) {
	t.Parallel()
	type policy struct {
		MetricsProviders []struct {
			Source string `json:"source"`
		} `json:"metricsProviders"`
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	read := func(sets ...string) (policy, map[string]map[string]any) {
		t.Helper()
		d, err := harness.RenderChartDescheduler(t.Context(), helm(t), sets...)
		if err != nil {
			t.Fatal(err)
		}
		var p policy
		if err := yaml.Unmarshal(d.Policy, &p); err != nil || len(p.Profiles) != 1 {
			t.Fatalf("policy.yaml: %v\n%s", err, d.Policy)
		}
		args := map[string]map[string]any{}
		for _, c := range p.Profiles[0].PluginConfig {
			args[c.Name] = c.Args
		}
		return p, args
	}
	p, args := read()
	if len(p.MetricsProviders) != 1 || p.MetricsProviders[0].Source != "KubernetesMetrics" {
		t.Errorf("descheduler.enabled=true alone: metricsProviders %+v; want the metrics server", p.MetricsProviders)
	}
	if got := fmt.Sprint(args["DefaultEvictor"]["labelSelector"]); got != "map[matchExpressions:[map[key:kube-safe-scheduler.io/scheduler operator:In values:[my-scheduler]]]]" {
		t.Errorf("DefaultEvictor labelSelector %s; want kube-safe-scheduler.io/scheduler In [my-scheduler]", got)
	}
	if got := fmt.Sprint(args["LowNodeUtilization"]["evictableNamespaces"]); got != "map[exclude:[kube-system]]" {
		t.Errorf("LowNodeUtilization evictableNamespaces %s; want kube-system excluded", got)
	}
	_, args = read("mode=plugin", "schedulerName=safe", "plugin.quorumProfile=quorum", "agents.telemetry.enabled=true",
		"descheduler.excludeNamespaces={kube-system,monitoring}")
	if got := fmt.Sprint(args["DefaultEvictor"]["labelSelector"]); !strings.Contains(got, "values:[safe quorum]") {
		t.Errorf("plugin mode with a quorum profile: labelSelector %s; want both profiles' names", got)
	}
	if got := fmt.Sprint(args["RemovePodsViolatingNodeAffinity"]["namespaces"]); got != "map[exclude:[kube-system monitoring]]" {
		t.Errorf("RemovePodsViolatingNodeAffinity namespaces %s", got)
	}
	_, args = read("descheduler.podLabelSelector.matchLabels.team=a")
	if got := fmt.Sprint(args["DefaultEvictor"]["labelSelector"]); got != "map[matchLabels:map[team:a]]" {
		t.Errorf("podLabelSelector set: labelSelector %s", got)
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("descheduler:\n  enabled: true\n  podLabelSelector: {}\n  excludeNamespaces: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runHelm(t, "template", "kss", chartDir(t), "--namespace", chartNamespace, "--kube-version", "v1.37.1", "-f", values)
	if err != nil {
		t.Fatal(err)
	}
	d, err := harness.DeschedulerFromChart(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(d.Policy), "labelSelector") || strings.Contains(string(d.Policy), "exclude") {
		t.Errorf("podLabelSelector {} and no excluded namespaces: the policy still filters\n%s", d.Policy)
	}
}

// The documented install, for real: helm install in the chart's own namespace (created by Helm)
// against the test control plane (Kubernetes v1.37.1, which the chart's kubeVersion accepts),
// its NOTES naming the commands to check it, place a pod and read the logs of each container,
// then the installed scheduler, run as the installed service account, placing the pod the NOTES
// show (spec.schedulerName).
func TestChartInstall(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t)
	kc := "--kubeconfig=" + c.Kubeconfig
	if out, err := runHelm(t, "install", "kss", chartDir(t), "-n", chartNamespace, "--create-namespace", kc,
		"--set", "agents.congestion.enabled=true"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	notes, err := runHelm(t, "get", "notes", "kss", "-n", chartNamespace, kc)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "NOTES", string(notes),
		"kubectl -n kube-safe-scheduler rollout status deployment/my-scheduler --timeout=2m",
		"kubectl -n kube-safe-scheduler get pods -l app.kubernetes.io/instance=kss",
		"kubectl -n kube-safe-scheduler rollout status deployment/node-annotator --timeout=2m",
		`kubectl run kss-try --image=registry.k8s.io/pause:3.10 --overrides='{"apiVersion": "v1", "spec": {"schedulerName": "my-scheduler"}}'`,
		"kubectl wait --for=condition=PodScheduled pod/kss-try --timeout=1m",
		"kubectl -n kube-safe-scheduler logs deployment/my-scheduler -c kube-scheduler",
		"kubectl -n kube-safe-scheduler logs deployment/my-scheduler -c safe",
		"kubectl -n kube-safe-scheduler logs deployment/my-scheduler -c congestion",
		"kubectl -n kube-safe-scheduler logs deployment/node-annotator")
	if strings.Contains(string(notes), "shared with other components") {
		t.Errorf("NOTES warn of a shared namespace in %s:\n%s", chartNamespace, notes)
	}
	// The containers the NOTES name are the Deployment's.
	manifest, err := runHelm(t, "get", "manifest", "kss", "-n", chartNamespace, kc)
	if err != nil {
		t.Fatal(err)
	}
	scheduler, err := renderIn(t, chartNamespace, "agents.congestion.enabled=true", "nodeAnnotator.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	d, err := harness.LoadDeployment("helm install", scheduler)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{d.Scheduler.Name}
	for _, s := range d.Sidecars {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "kube-scheduler safe congestion" {
		t.Errorf("the scheduler's containers %q; the NOTES name kube-scheduler, safe and congestion", got)
	}
	mustContain(t, "the installed manifest", string(manifest), "name: my-scheduler-scheduler", "kind: Lease", "name: node-annotator")

	sa := c.KubeconfigFor(t, "system:serviceaccount:"+chartNamespace+":my-scheduler",
		"system:serviceaccounts", "system:serviceaccounts:"+chartNamespace, "system:authenticated")
	r := c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)
	c.CreateNodes(t, harness.NodeSpec{Name: "risky", Annotations: riskyStats}, harness.NodeSpec{Name: "idle", Annotations: idleStats})
	// The pod the NOTES create (kubectl run with spec.schedulerName) goes to idle: safe rejects
	// risky.
	scheduleOn(t, c, harness.PodSpec{Name: "kss-try", SchedulerName: "my-scheduler"}, "idle", "the NOTES' pod, placed by the installed scheduler")
}

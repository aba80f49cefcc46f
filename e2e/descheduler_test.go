package e2e

// The chart's descheduler (kubernetes-sigs/descheduler): the DeschedulerPolicy it renders from
// the agents' values, its RBAC, and the values it refuses.

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// deschedulerRender renders the chart with the descheduler enabled (and sets) and returns the
// descheduler's objects: its policy.yaml and the YAML of its ServiceAccount, ClusterRole and
// ClusterRoleBinding.
// deschedulerCluster starts the control plane for a descheduler test in extender or plugin mode,
// with the scheduler's service account, renders the chart's descheduler with sets (plus
// mode=plugin in plugin mode) and applies its RBAC. It returns the cluster, the service
// account's kubeconfig, the scheduler's name and the rendered policy.
func deschedulerCluster(t *testing.T, plugin bool, sets ...string) (c *harness.Cluster, sa, scheduler string, policy []byte) {
	t.Helper()
	if plugin {
		c, sa = startWithPluginServiceAccount(t)
		scheduler = pluginSchedulerName
		sets = append(sets, "mode=plugin", "schedulerName="+scheduler)
	} else {
		c, sa = startWithServiceAccount(t)
		scheduler = schedulerName
	}
	policy, rbac := deschedulerRender(t, sets...)
	c.Apply(t, rbac, false)
	return c, sa, scheduler, policy
}

func deschedulerRender(t *testing.T, sets ...string) (policy, rbac []byte) {
	t.Helper()
	out, err := render(t, append([]string{"descheduler.enabled=true"}, sets...)...)
	if err != nil {
		t.Fatal(err)
	}
	d, err := harness.DeschedulerFromChart(out)
	if err != nil {
		t.Fatal(err)
	}
	return d.Policy, d.RBAC
}

// deschedulerLabel is the label of the pods the chart's descheduler policy evicts (by default:
// those whose value is the scheduler's name); the descheduler cannot select by schedulerName.
const deschedulerLabel = "kube-safe-scheduler.io/scheduler"

// deschedulerUser is the chart's descheduler service account in kube-system.
const deschedulerUser = "system:serviceaccount:kube-system:kss-descheduler"

// The chart's DeschedulerPolicy: thresholds derived from safe's utilization threshold (its
// default from files/agents.json, or the value set), the Prometheus or metrics-server source,
// RemovePodsViolatingNodeAffinity only with the telemetry agent; the image is the version the
// harness builds; nonsense refused naming the value.
func TestChartDescheduler(t *testing.T) {
	t.Parallel()
	type policy struct {
		MaxNoOfPodsToEvictPerNode int `json:"maxNoOfPodsToEvictPerNode"`
		MetricsProviders          []struct {
			Source     string `json:"source"`
			Prometheus struct {
				URL string `json:"url"`
			} `json:"prometheus"`
		} `json:"metricsProviders"`
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
			Plugins map[string]struct {
				Enabled []string `json:"enabled"`
			} `json:"plugins"`
		} `json:"profiles"`
	}
	read := func(sets ...string) policy {
		t.Helper()
		b, _ := deschedulerRender(t, sets...)
		var p policy
		if err := yaml.Unmarshal(b, &p); err != nil || len(p.Profiles) != 1 {
			t.Fatalf("policy.yaml: %v, %d profiles\n%s", err, len(p.Profiles), b)
		}
		return p
	}
	args := func(p policy, plugin string) map[string]any {
		for _, c := range p.Profiles[0].PluginConfig {
			if c.Name == plugin {
				return c.Args
			}
		}
		return nil
	}

	// safe's default T is 90 (files/agents.json), gap 30: under 60 % has room, over 90 % is hot.
	p := read("descheduler.lowNodeUtilization.prometheusURL=http://prometheus:9090")
	lnu := args(p, "LowNodeUtilization")
	if got := fmt.Sprint(lnu["thresholds"], lnu["targetThresholds"]); got != "map[MetricResource:60] map[MetricResource:90]" {
		t.Errorf("thresholds, targetThresholds %s; want MetricResource 60 and 90 (T 90 - gap 30, T)", got)
	}
	if len(p.MetricsProviders) != 1 || p.MetricsProviders[0].Source != "Prometheus" || p.MetricsProviders[0].Prometheus.URL != "http://prometheus:9090" {
		t.Errorf("metricsProviders %+v", p.MetricsProviders)
	}
	if args(p, "RemovePodsViolatingNodeAffinity") != nil || p.MaxNoOfPodsToEvictPerNode != 1 {
		t.Errorf("without telemetry: RemovePodsViolatingNodeAffinity configured, or maxNoOfPodsToEvictPerNode %d != 1", p.MaxNoOfPodsToEvictPerNode)
	}

	// T set to 80, gap 20, the metrics server, and telemetry: both plugins.
	p = read("agents.safe.settings.utilization=80", "descheduler.lowNodeUtilization.gap=20",
		"descheduler.lowNodeUtilization.source=KubernetesMetrics", "agents.telemetry.enabled=true")
	lnu = args(p, "LowNodeUtilization")
	if got := fmt.Sprint(lnu["thresholds"], lnu["targetThresholds"]); got != "map[cpu:60 memory:60] map[cpu:80 memory:80]" {
		t.Errorf("thresholds, targetThresholds %s; want cpu and memory 60 and 80", got)
	}
	if a := args(p, "RemovePodsViolatingNodeAffinity"); fmt.Sprint(a["nodeAffinityType"]) != "[requiredDuringSchedulingIgnoredDuringExecution]" {
		t.Errorf("RemovePodsViolatingNodeAffinity args %v", a)
	}
	if got := fmt.Sprint(p.Profiles[0].Plugins["balance"].Enabled, p.Profiles[0].Plugins["deschedule"].Enabled); got != "[LowNodeUtilization] [RemovePodsViolatingNodeAffinity]" {
		t.Errorf("plugins enabled: %s", got)
	}
	// The metrics server source needs the metrics API in the ClusterRole.
	_, rbac := deschedulerRender(t, "descheduler.lowNodeUtilization.source=KubernetesMetrics")
	mustContain(t, "the ClusterRole", string(rbac), "metrics.k8s.io", "pods/eviction", "poddisruptionbudgets")

	// telemetry with deschedule off: nothing for RemovePodsViolatingNodeAffinity to act on.
	p = read("descheduler.lowNodeUtilization.prometheusURL=http://p", "agents.telemetry.enabled=true", "agents.telemetry.settings.deschedule=false")
	if args(p, "RemovePodsViolatingNodeAffinity") != nil {
		t.Error("RemovePodsViolatingNodeAffinity configured while the telemetry agent writes no deschedule label")
	}

	// The image the chart ships is the version the e2e tests run.
	out, err := render(t, "descheduler.enabled=true", "descheduler.lowNodeUtilization.prometheusURL=http://p")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "the render", string(out), "image: registry.k8s.io/descheduler/descheduler:"+harness.DeschedulerVersion,
		"--descheduling-interval=2m", "checksum/policy:")

	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"descheduler.enabled=true", "descheduler.lowNodeUtilization.source=Prometheus"}, "descheduler.lowNodeUtilization.prometheusURL is needed"},
		{[]string{"descheduler.enabled=true", "descheduler.lowNodeUtilization.enabled=false"}, "descheduler.enabled with nothing to do"},
		{[]string{"descheduler.enabled=true", "descheduler.lowNodeUtilization.prometheusURL=http://p", "descheduler.lowNodeUtilization.gap=95"}, "descheduler.lowNodeUtilization.gap 95 is above safe's utilization threshold 90"},
		{[]string{"descheduler.enabled=true", "descheduler.lowNodeUtilization.source=Graphite"}, "source"},
		{[]string{"descheduler.enabled=true", "descheduler.interval=often"}, "interval"},
		{[]string{"descheduler.enabeld=true"}, "enabeld"},
	} {
		_, err := render(t, tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %v: %v; want an error naming %q", tc.sets, err, tc.want)
		}
	}
}

package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// emptyPolicy states no rule (the CRD allows rules: []): TAS acts on none of its strategies and
// lets its pods through; so does the telemetry agent, with a Warning EmptyPolicy event.
const emptyPolicy = `
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata:
  name: empty-policy
  namespace: default
spec:
  strategies:
    dontschedule:
      rules: []
    scheduleonmetric:
      rules: []
`

// TestPluginsTelemetryTASPods: TAS pods as TAS users write them (the label telemetry-policy and
// a request of telemetry/scheduling: 1, which no node has) under kube-safe-scheduler with the
// plugin file's configuration. In extender mode the extender's managedResources make the
// scheduler ignore the resource (TestTelemetryYAML); here the profile's NodeResourcesFit args
// do (ignoredResources), so the pods are judged by their policy as in extender mode: one pinned
// to the node above the dontschedule target stays pending for the policy's reason (not
// "Insufficient telemetry/scheduling"), the others land on the node with the lowest node_cpu,
// and a pod naming a policy without rules passes, even on that node, with the policy's
// EmptyPolicy event.
func TestPluginsTelemetryTASPods(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	telemetryNodes(t, c, telemetryPolicy+"---"+emptyPolicy)
	d := withPlugins(t, []string{"telemetry-policy"}, nil)
	var cfg struct {
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			PluginConfig  []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(d.SchedulerConfig, &cfg); err != nil {
		t.Fatal(err)
	}
	ignored := ""
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == "NodeResourcesFit" {
			ignored = fmt.Sprint(pc.Args["ignoredResources"])
		}
	}
	if ignored != "[telemetry/scheduling]" {
		t.Fatalf("the plugin file's profile %s ignores %q, want [telemetry/scheduling]", cfg.Profiles[0].SchedulerName, ignored)
	}
	c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	labelled := map[string]string{"telemetry-policy": "demo-policy"}

	pinned := probePod(t, harness.PodSpec{Name: "pinned", Labels: labelled, SchedulerName: pluginSchedulerName, Extra: tasResource})
	pinned.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := c.WaitForEvent(t, "default", "pinned", "FailedScheduling", "telemetry policy default/demo-policy: node_cpu 95 > 90 (")
	if strings.Contains(e.Message, "Insufficient telemetry/scheduling") {
		t.Errorf("the scheduler counted telemetry/scheduling: %s", e.Message)
	}
	t.Logf("pinned TAS pod: %s", e.Message)

	for i := range 2 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("tas-%d", i), SchedulerName: pluginSchedulerName, Labels: labelled, Extra: tasResource}, "cool",
			"node_cpu: cool 20 is the lowest, hot 95 fails dontschedule, and telemetry/scheduling is ignored by NodeResourcesFit")
	}

	// A policy without rules: the pod passes the telemetry filter on hot, as under TAS.
	open := probePod(t, harness.PodSpec{Name: "empty", Labels: map[string]string{"telemetry-policy": "empty-policy"},
		SchedulerName: pluginSchedulerName, Extra: tasResource})
	open.Spec.NodeSelector = map[string]string{"e2e/pin": "hot"}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), open, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := c.WaitForBinding(t, "default", "empty"); n != "hot" {
		t.Fatalf("the pod of the policy without rules went to %q, want hot", n)
	}
	ev := c.WaitForEvent(t, "default", "empty-policy", "EmptyPolicy", "no strategy has a rule", "pass every node")
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("EmptyPolicy event of type %s", ev.Type)
	}
}

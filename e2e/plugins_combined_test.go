package e2e

// Plugin mode's one-pass plugin, agents (scheduler/adapter, CombinedName): several agent
// functions in one framework plugin, configured by its args, as the chart renders it with
// combined.enabled, run by the real kube-safe-scheduler against a real API server under the
// chart's service account. It must place pods where
// the separate plugins place them (TestPluginsSafeCongestion) and reject nodes for the same
// reasons, named by function.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestPluginsCombined: safe and congestion in the agents plugin, as the chart writes them. congestion alone would choose the risky node (congestion-factor
// 0); safe-overload removes it first, and congestion then decides between two equally safe
// nodes: the pods go to calm, as with the separate plugins (TestPluginsSafeCongestion). A pod
// that may run on the risky node only stays pending, and its event names the function that
// rejected the node and its reason.
func TestPluginsCombined(t *testing.T) {
	t.Parallel()
	// The chart's plugin mode with combined.enabled: safe (safe-overload 2, safe-balance 1) and
	// congestion (1) in the agents plugin of weight 4, their settings under its config.
	c, r := runChart(t, "mode=plugin", "schedulerName="+pluginSchedulerName, "agents.congestion.enabled=true", "combined.enabled=true")
	if !strings.Contains(string(r.Config), "- name: agents\n") || strings.Contains(string(r.Config), "- name: safe-overload\n            weight") {
		t.Fatalf("the chart's configuration does not run the agents plugin alone:\n%s", r.Config)
	}
	c.CreateNodes(t, safeCongestionNodes...)
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), SchedulerName: pluginSchedulerName, CPU: "100m", Memory: "64Mi"}, "calm",
			"safe-overload rejects risky; congestion scores calm 9, jammed 1")
	}

	createPinned(t, c, "pinned", "risky")
	e := c.WaitForEvent(t, "default", "pinned", "FailedScheduling", "safe-overload: cpu risk", "> 0.30", "threshold 0.90")
	t.Logf("pinned to risky: %s", e.Message)
	time.Sleep(2 * time.Second) // the scheduler retries on the pod's backoff: it must not bind it meanwhile
	if n := c.PodNode(t, "default", "pinned"); n != "" {
		t.Fatalf("pinned bound to %s although safe-overload rejects risky", n)
	}
}

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs make run's program (e2e/demo) with -exit: it must print its placement
// table, with the outcomes its nodes are built for (node-4's measured usage fails safe-overload,
// node-6 lacks the template label, the GPU job finds no acceptable node, node-4's node_cpu fails
// the telemetry policy and gets its deschedule label), then the same workload through
// kube-safe-scheduler side by side with a line comparing the placements, and stop cleanly.
func TestDemo(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "congestion", "pigeon", "template", "telemetry")
	bin := filepath.Join(t.TempDir(), "demo")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./demo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./demo: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-exit")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	for _, want := range []string{
		"POD", "NODE", "safe-overload (w2)", "pigeon-holing (w2)", "runner-up",
		"safe-overload rejects node-4: cpu risk",
		"template-label rejects node-6: node has no label template.extender/allowed",
		"train-1 is pending: 0/6 nodes are available",
		"telemetry-policy rejects node-4: telemetry policy default/demo-policy: node_cpu 97 > 90 (",
		"telemetry deschedule labels [node-4] demo-policy=violating",
		"EXTENDERS (my-scheduler)", "PLUGINS (kube-safe-scheduler)", "Plugin mode placed ",
		"export KUBECONFIG=",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	// TAS pods (tas-1, tas-2) request telemetry/scheduling, which no node has: plugin mode's
	// profile must ignore it as the extender's managedResources make extender mode do.
	if strings.Contains(string(out), "Insufficient telemetry/scheduling") {
		t.Errorf("plugin mode counted telemetry/scheduling:\n%s", out)
	}
}

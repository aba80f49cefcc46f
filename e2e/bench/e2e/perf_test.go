package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestPerfSmoke runs kube-scheduler's own benchmark with the agents' plugins on its smallest
// workload (20 annotated nodes, 100 measured pods), as bench-e2e's perf modes run it: it fails
// unless the test binary builds, the plugins are registered and configured, the nodes got an
// annotator's statistics, every pod was bound and the CPU per pod was read (the run is too short
// for scheduler_perf's throughput, sampled each second).
func TestPerfSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scheduler_perf")
	}
	r := newPerfRunner(t)
	r.measured = 100
	for _, c := range []string{"AnnotatedPluginsPigeon", "AnnotatedChurnPlugins"} {
		res, ok := r.run(t, c, 20, 1, 10*time.Minute)
		if !ok {
			t.Fatalf("%s: e2e/bench/perf/performance-config.yaml has no 20Nodes workload", c)
		}
		if res.schedCPU <= 0 {
			t.Errorf("%s: %.2f CPU ms/pod: want a positive figure", c, res.schedCPU)
		}
		out, err := os.ReadFile(r.logFile(c, 20, 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"gave 20 nodes an annotator's statistics", "pods=100 "} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: its output (%s) does not say %q", c, r.logFile(c, 20, 1), want)
			}
		}
		t.Logf("%s, 20 nodes: %.1f pods/s, %.2f CPU ms/pod", c, res.rate, res.schedCPU)
	}
}

func TestPerfModes(t *testing.T) {
	m, err := perfModes("AnnotatedPlugins, SchedulingBasic")
	if err != nil || len(m) != 2 || m[0].name != "perf:AnnotatedPlugins" || baseOf(m[0].name) != "perf:AnnotatedDefault" {
		t.Fatalf("perfModes: %v, %v", m, err)
	}
	if baseOf("plugins-agents-nospread"+baseSuffix) != "alone-nospread" || baseOf("plugins"+baseSuffix) != "alone" {
		t.Error("baseOf: a -base-scheduler mode's base is its twin's")
	}
	if baseOf("perf:AnnotatedChurnPlugins") != "perf:AnnotatedChurnDefault" || baseOf("plugins") != "alone" {
		t.Error("baseOf: a churn case's base is its default profile's, a mode's is alone")
	}
	if _, err := perfModes("AnnotatedPlugin"); err == nil || !strings.Contains(err.Error(), `"AnnotatedPlugin"`) {
		t.Errorf("an unknown case: %v, want an error naming it", err)
	}
	if m, err := perfModes(""); err != nil || len(m) != 0 {
		t.Errorf(`perfModes(""): %v, %v; want none`, m, err)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// kube-scheduler's own benchmark (scheduler_perf, in e2e/bench/perf) as modes of this one, so
// that its workloads and bench-e2e's modes are measured side by side in one run: mode
// "perf:<case>" runs the test case's <nodes>Nodes workload in its own process (the scheduler and
// an in-process kube-apiserver, with the harness's etcd), and reads its SchedulingThroughput
// average and the process's CPU time per measured pod (perf_test.go's perf-cpu line).

// perfCases are the test cases of e2e/bench/perf/performance-config.yaml, with what they run and
// the case their ratio is taken to (the same nodes with the default profile).
var perfCases = map[string]struct{ about, base string }{
	"SchedulingBasic":        {"scheduler_perf SchedulingBasic, default profile", "AnnotatedDefault"},
	"AnnotatedDefault":       {"scheduler_perf on annotated nodes, default profile", "AnnotatedDefault"},
	"AnnotatedPlugins":       {"scheduler_perf on annotated nodes, agents plugin: safe-overload + congestion", "AnnotatedDefault"},
	"AnnotatedPluginsPigeon": {"scheduler_perf on annotated nodes, agents plugin: safe-overload + congestion + pigeon-holing", "AnnotatedDefault"},
	"AnnotatedChurnDefault":  {"scheduler_perf on annotated nodes with mixed churn, default profile", "AnnotatedChurnDefault"},
	"AnnotatedChurnPlugins":  {"scheduler_perf on annotated nodes with mixed churn, agents plugin: safe-overload + congestion", "AnnotatedChurnDefault"},
}

const perfPrefix = "perf:"

// perfModes returns the modes of the listed cases ("" for none), or an error naming an unknown one.
func perfModes(list string) ([]mode, error) {
	var out []mode
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		pc, ok := perfCases[c]
		if !ok {
			known := make([]string, 0, len(perfCases))
			for k := range perfCases {
				known = append(known, k)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("-perf: no scheduler_perf case %q (the cases: %s)", c, strings.Join(known, ", "))
		}
		out = append(out, mode{name: perfPrefix + c, about: pc.about})
	}
	return out, nil
}

// baseOf is the mode a mode's ratios are taken to: alone, or for a scheduler_perf case the same
// workload with the default profile.
func baseOf(name string) string {
	if c, ok := strings.CutPrefix(name, perfPrefix); ok {
		return perfPrefix + perfCases[c].base
	}
	if strings.HasSuffix(strings.TrimSuffix(name, baseSuffix), "-nospread") {
		return "alone-nospread"
	}
	return "alone"
}

// perfRunner builds scheduler_perf's test binary once and runs its workloads.
type perfRunner struct {
	bin, dir, path string
	sizes          map[int]bool
	logDir         string
	// measured is the pods each workload measures (its measurePods), which the test process
	// takes its CPU per pod over (PERF_MEASURED_PODS).
	measured int
}

func newPerfRunner(s harness.T) *perfRunner {
	root, err := harness.RepoRoot()
	if err != nil {
		s.Fatalf("%v", err)
	}
	cache, err := harness.CacheDir() // the harness's etcd is there
	if err != nil {
		s.Fatalf("%v", err)
	}
	harness.ControlPlane(s)
	r := &perfRunner{
		bin:      filepath.Join(root, ".cache", "scheduler", "perf.test"),
		dir:      filepath.Join(root, "e2e", "bench", "perf"),
		path:     cache + string(os.PathListSeparator) + os.Getenv("PATH"),
		sizes:    map[int]bool{},
		logDir:   harness.LogDir(s),
		measured: 1000,
	}
	cfg, err := os.ReadFile(filepath.Join(r.dir, "performance-config.yaml"))
	if err != nil {
		s.Fatalf("%v", err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*- name: (\d+)Nodes\s*$`).FindAllStringSubmatch(string(cfg), -1) {
		n, _ := strconv.Atoi(m[1])
		r.sizes[n] = true
	}
	fmt.Fprintf(os.Stderr, "bench-e2e: building scheduler_perf's test binary (e2e/bench/perf, -tags perf)\n")
	build := exec.CommandContext(s.Context(), "go", "test", "-c", "-tags", "perf", "-o", r.bin, ".")
	build.Dir = r.dir
	if out, err := build.CombinedOutput(); err != nil {
		s.Fatalf("building scheduler_perf: %v\n%s", err, out)
	}
	return r
}

var (
	perfThroughput = regexp.MustCompile(`([0-9.]+) SchedulingThroughput/Average`)
	perfCPU        = regexp.MustCompile(`(?m)^perf-cpu \S+ ms/pod=([0-9.]+) pods=(\d+)`)
)

// run runs case c's <nodes>Nodes workload; ok is false when the configuration has no workload of
// that size. The rate is 0 when the workload was too short for scheduler_perf to report one.
func (r *perfRunner) run(s harness.T, c string, nodes, round int, timeout time.Duration) (res result, ok bool) {
	if !r.sizes[nodes] {
		return result{}, false
	}
	ctx, cancel := context.WithTimeout(s.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, "-test.run", "^$", "-test.benchtime", "1x", "-test.timeout", timeout.String(),
		"-test.bench", fmt.Sprintf("^BenchmarkPerfScheduling$/^%s$/^%dNodes$", c, nodes))
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "PATH="+r.path, fmt.Sprintf("PERF_MEASURED_PODS=%d", r.measured))
	out, err := cmd.CombinedOutput()
	log := r.logFile(c, nodes, round)
	_ = os.WriteFile(log, out, 0o644)
	cpu := perfCPU.FindSubmatch(out)
	if err != nil || cpu == nil {
		s.Fatalf("scheduler_perf %s/%dNodes: no result (%v); its output: %s", c, nodes, err, log)
	}
	res.schedCPU, _ = strconv.ParseFloat(string(cpu[1]), 64)
	// scheduler_perf reports no throughput for a run shorter than its sampling (1 s): rate 0.
	if tp := perfThroughput.FindSubmatch(out); tp != nil {
		res.rate, _ = strconv.ParseFloat(string(tp[1]), 64)
	}
	res.load = harness.LoadAverage()
	return res, true
}

// logFile is where run keeps the output of case c's workload of that size in that round.
func (r *perfRunner) logFile(c string, nodes, round int) string {
	return filepath.Join(r.logDir, fmt.Sprintf("perf-%s-%d-%d.log", c, nodes, round))
}

// Command bench-e2e measures what the extenders cost kube-scheduler's throughput: pods bound per
// second by the real kube-scheduler against a real kube-apiserver, side by side in one run,
// for
//
//	alone:  kube-scheduler without extenders
//	floor:  the names call pattern served by the template agent (the mechanism's own cost)
//	names:  + safe filter, safe-overload priority, congestion priority (nodeCacheCapable: true)
//	full:   the same extenders receiving full Node objects (nodeCacheCapable: false)
//	pigeon: names + the pigeon-holing priority
//	combined: names' functions in two calls a pod: the safe filter and priorities/combined
//	          (safe-overload=1,congestion=1, weight 2) on one extender serving both agents
//	plugins: no extender: kube-safe-scheduler (scheduler/) running safe-overload (filter and
//	         score) and congestion as framework plugins, with the names mode's weights
//	plugins-pigeon: plugins + pigeon-holing
//	plugins-agents: plugins' functions and weights in one plugin, agents (scheduler/adapter)
//	plugins-agents-pigeon: plugins-agents + pigeon-holing
//
// For each node count it creates the nodes once, starts the extenders once (one process each,
// as sidecars run), then for each mode pre-creates the pods, starts a scheduler with that
// mode's configuration and times the bindings: pods/s = (pods - 1) / (last binding - first
// binding), so scheduler start-up is not counted. It prints a table with each mode's ratio to
// "alone" (and, with -rounds, medians over interleaved rounds). Every pod requests 100m/128Mi
// unless -requests gives classes of requests, which the pods of every mode then take in turn.
// The nodes do not change during a mode's run unless -node-updates gives a rate: then their
// statistics are rewritten, node after node, at that many nodes a second while the mode's pods
// are scheduled, as a node annotator does (its PATCH_QPS bounds it to 20 by default).
// Usage: make bench-e2e, or go run ./bench/e2e -nodes 500,2000 -pods 1000
// [-modes names,combined,plugins -rounds 3] [-requests mixed] [-node-updates 20] [-cpuprofile dir].
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

type mode struct {
	name  string
	about string
	// extenders returns the extenders: section of the scheduler configuration (nil: none).
	extenders func(p ports) string
	// plugins, when set, is the profile's plugins: section, and the scheduler is the plugin
	// scheduler (kube-safe-scheduler, built from scheduler/) instead of kube-scheduler.
	plugins string
	// noDefaultSpread turns PodTopologySpread's system default constraints off (defaultingType:
	// List): with them, kube-scheduler signs no pod and so never batches. Such a mode's ratios are
	// to alone-nospread.
	noDefaultSpread bool
	// binary, when set, is the plugin scheduler to run instead of the one built from this tree
	// (-base-scheduler's "@base" modes).
	binary string
}

// baseSuffix marks the modes run with -base-scheduler's binary.
const baseSuffix = "@base"

type ports struct {
	safe, congestion, pigeon, template, template2, combined int
	// procs are the extender processes, whose CPU time is read around each mode.
	procs []*harness.Process
}

func (p ports) all() []int {
	return []int{p.safe, p.congestion, p.pigeon, p.template, p.template2, p.combined}
}

// serveTimes reads every extender's /metrics and returns, per "agent/function/verb", the
// requests served and the seconds spent serving them.
func serveTimes(p ports) map[string][2]float64 {
	out := map[string][2]float64{}
	for _, port := range p.all() {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			for k, suffix := range []string{"_count{", "_sum{"} {
				prefix := "extender_request_duration_seconds" + suffix
				if !strings.HasPrefix(line, prefix) {
					continue
				}
				labels, value, ok := strings.Cut(line[len(prefix):], "} ")
				v, err := strconv.ParseFloat(value, 64)
				if !ok || err != nil {
					continue
				}
				key := harness.LabelValue(labels, "agent") + "/" + harness.LabelValue(labels, "function") + "/" + harness.LabelValue(labels, "verb")
				e := out[key]
				e[k] += v
				out[key] = e
			}
		}
	}
	return out
}

func safeCongestion(p ports, cacheCapable bool) string {
	return fmt.Sprintf(`extenders:
- urlPrefix: http://127.0.0.1:%d/scheduler
  filterVerb: predicates/safe-overload
  prioritizeVerb: priorities/safe-overload
  weight: 1
  nodeCacheCapable: %v
- urlPrefix: http://127.0.0.1:%d/scheduler
  prioritizeVerb: priorities/congestion
  weight: 1
  nodeCacheCapable: %v
`, p.safe, cacheCapable, p.congestion, cacheCapable)
}

var modes = []mode{
	{name: "alone", about: "kube-scheduler alone"},
	// floor: the names mode's call pattern (a filter and a priority on one extender, a priority
	// on another) served by the template agent, whose functions cost next to nothing: what the
	// HTTP extender mechanism itself costs.
	{name: "floor", about: "template filter + 2 template priorities, NodeNames", extenders: func(p ports) string {
		return fmt.Sprintf(`extenders:
- urlPrefix: http://127.0.0.1:%d/scheduler
  filterVerb: predicates/template-label
  prioritizeVerb: priorities/template-score
  weight: 1
  nodeCacheCapable: true
- urlPrefix: http://127.0.0.1:%d/scheduler
  prioritizeVerb: priorities/template-score
  weight: 1
  nodeCacheCapable: true
`, p.template, p.template2)
	}},
	{name: "names", about: "safe filter + safe-overload + congestion, NodeNames", extenders: func(p ports) string { return safeCongestion(p, true) }},
	{name: "full", about: "safe filter + safe-overload + congestion, full Nodes", extenders: func(p ports) string { return safeCongestion(p, false) }},
	{name: "pigeon", about: "names + pigeon-holing", extenders: func(p ports) string {
		return safeCongestion(p, true) + fmt.Sprintf(`- urlPrefix: http://127.0.0.1:%d/scheduler
  prioritizeVerb: priorities/pigeon-holing
  weight: 1
  nodeCacheCapable: true
`, p.pigeon)
	}},
	{name: "combined", about: "safe filter + combined(safe-overload, congestion), NodeNames", extenders: func(p ports) string {
		return fmt.Sprintf(`extenders:
- urlPrefix: http://127.0.0.1:%d/scheduler
  filterVerb: predicates/safe-overload
  prioritizeVerb: priorities/combined
  weight: 2
  nodeCacheCapable: true
`, p.combined)
	}},
	// Plugin mode: the same agents and weights as names and pigeon, compiled into the scheduler.
	{name: "plugins", about: "kube-safe-scheduler: safe-overload filter+score, congestion score", plugins: pluginsSafeCongestion},
	{name: "plugins-pigeon", about: "plugins + pigeon-holing", plugins: pluginsSafeCongestion + "      - name: pigeon-holing\n        weight: 1\n"},
	// The same functions and weights in one plugin, agents (one Filter and one Score per node).
	{name: "plugins-agents", about: "kube-safe-scheduler: agents plugin running safe-overload and congestion", plugins: pluginsAgents()},
	{name: "plugins-agents-pigeon", about: "plugins-agents + pigeon-holing", plugins: pluginsAgents("pigeon-holing")},
	// Batching: kube-scheduler signs pods (and hands the next pod of one signature the last
	// cycle's next best node) only with PodTopologySpread's system defaults off; alone and
	// plugins-agents so. The hints used are counted (scheduler_batch_attempts_total).
	{name: "alone-nospread", about: "alone, PodTopologySpread system defaults off (batching)", noDefaultSpread: true},
	{name: "plugins-agents-nospread", about: "plugins-agents, PodTopologySpread system defaults off (batching)", plugins: pluginsAgents(), noDefaultSpread: true},
}

// profileConfig is the profile's plugins: and pluginConfig: sections of a mode.
func (m mode) profileConfig() string {
	if !m.noDefaultSpread {
		return m.plugins
	}
	out := m.plugins
	if !strings.Contains(out, "  pluginConfig:\n") {
		out += "  pluginConfig:\n"
	}
	return out + "  - name: PodTopologySpread\n    args:\n      defaultingType: List\n"
}

// extendersSection is the scheduler configuration's extenders: section of the mode ("" for none).
func (m mode) extendersSection(p ports) string {
	if m.extenders == nil {
		return ""
	}
	return m.extenders(p)
}

// pluginsSafeCongestion enables the plugins of the names mode's functions, with its weights.
const pluginsSafeCongestion = `  plugins:
    multiPoint:
      enabled:
      - name: safe-overload
        weight: 1
      - name: congestion
        weight: 1
`

// pluginsAgents enables the agents plugin with the plugins mode's functions and weights (1 each;
// the plugin's weight is their sum), and more, weight 1 each.
func pluginsAgents(more ...string) string {
	fns := append([]string{"safe-overload", "congestion"}, more...)
	out := fmt.Sprintf("  plugins:\n    multiPoint:\n      enabled:\n      - name: agents\n        weight: %d\n  pluginConfig:\n  - name: agents\n    args:\n      functions:\n", len(fns))
	for _, f := range fns {
		out += "      - name: " + f + "\n        weight: 1\n"
	}
	return out
}

func main() {
	nodeCounts := flag.String("nodes", "500,2000", "comma-separated node counts")
	pods := flag.Int("pods", 1000, "pods scheduled per mode")
	only := flag.String("modes", "alone,floor,names,full,pigeon,combined,plugins,plugins-pigeon,plugins-agents,plugins-agents-pigeon,alone-nospread,plugins-agents-nospread", "comma-separated modes to run")
	timeout := flag.Duration("timeout", 15*time.Minute, "longest wait for one mode's pods to be bound")
	rounds := flag.Int("rounds", 1, "run the selected modes this many times, interleaved (a, b, a, b), so that a shared "+
		"machine's drift spreads over every mode; with more than one, medians follow the table")
	flag.StringVar(&profileDir, "cpuprofile", "", "directory to write each scheduler's CPU profile to (<nodes>-<mode>.pprof, the first -profile-seconds of its run)")
	flag.DurationVar(&profileFor, "profile-seconds", 5*time.Second, "length of each CPU profile")
	requestList := flag.String("requests", defaultRequests, requestsHelp)
	flag.Float64Var(&nodeUpdates, "node-updates", 0, "nodes whose usage statistics are rewritten per second while each mode's pods "+
		"are scheduled (a new statistics-timestamp, as a node annotator's refresh writes; 20 is the annotator's default PATCH_QPS); 0: the nodes never change")
	perfList := flag.String("perf", "SchedulingBasic,AnnotatedDefault,AnnotatedPlugins,AnnotatedPluginsPigeon,AnnotatedChurnDefault,AnnotatedChurnPlugins",
		"comma-separated test cases of kube-scheduler's own benchmark (scheduler_perf, e2e/bench/perf/performance-config.yaml) "+
			"to run after the modes in each round, at the node counts it has workloads for (\"\": none)")
	baseScheduler := flag.String("base-scheduler", "", "a kube-safe-scheduler binary built from another commit (make build-scheduler there): every "+
		"selected plugins mode also runs with it, as <mode>"+baseSuffix+", in the same rounds, so that a change is measured side by side")
	flag.Parse()

	s := harness.NewSession(os.Stderr)
	defer s.Close()
	if nodeUpdates < 0 || nodeUpdates > 1000 {
		s.Fatalf("-node-updates: %v is not a rate of node updates a second in [0, 1000]", nodeUpdates)
	}
	var counts []int
	for _, f := range strings.Split(*nodeCounts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			s.Fatalf("-nodes: %q is not a node count", f)
		}
		counts = append(counts, n)
	}
	classes, err := parseRequests(*requestList)
	if err != nil {
		s.Fatalf("%v", err)
	}
	selected := map[string]bool{}
	for _, m := range strings.Split(*only, ",") {
		selected[strings.TrimSpace(m)] = true
	}
	perf, err := perfModes(*perfList)
	if err != nil {
		s.Fatalf("%v", err)
	}
	all := append([]mode(nil), modes...)
	if *baseScheduler != "" {
		if st, err := os.Stat(*baseScheduler); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			s.Fatalf("-base-scheduler: %q is not an executable file (%v)", *baseScheduler, err)
		}
		for _, m := range modes {
			if m.plugins != "" && selected[m.name] {
				m.name += baseSuffix
				m.about += ", the -base-scheduler binary"
				m.binary = *baseScheduler
				all = append(all, m)
				selected[m.name] = true
			}
		}
	}
	all = append(all, perf...)
	for _, m := range perf {
		selected[m.name] = true
	}
	var runner *perfRunner
	if len(perf) > 0 {
		runner = newPerfRunner(s)
	}

	type row struct {
		nodes, round int
		mode         mode
		result
		serve string
	}
	var rows []row
	// The cluster and the extenders are for the modes: scheduler_perf's cases start their own.
	needCluster := slices.ContainsFunc(modes, func(m mode) bool { return selected[m.name] })
	for _, n := range counts {
		var c *harness.Cluster
		var client kubernetes.Interface
		var p ports
		if needCluster {
			c = harness.StartCluster(s)
			client = fastClient(s, c.Config)
			fmt.Fprintf(os.Stderr, "bench-e2e: %d nodes: creating nodes\n", n)
			createNodes(s, c, n)
			p = startExtenders(s, c)
		}
		for round := 1; round <= *rounds; round++ {
			for _, m := range all {
				if !selected[m.name] {
					continue
				}
				if c, ok := strings.CutPrefix(m.name, perfPrefix); ok {
					r, ok := runner.run(s, c, n, round, *timeout)
					if !ok {
						fmt.Fprintf(os.Stderr, "bench-e2e: scheduler_perf has no %d-node workload of %s: skipped\n", n, c)
						continue
					}
					if r.rate == 0 {
						s.Fatalf("scheduler_perf %s/%dNodes reported no SchedulingThroughput: its output: %s", c, n, runner.logFile(c, n, round))
					}
					fmt.Fprintf(os.Stderr, "bench-e2e: %d nodes, round %d, %s: %.1f pods/s, test process %.2f CPU ms/pod, load %.1f\n",
						n, round, m.name, r.rate, r.schedCPU, r.load)
					rows = append(rows, row{n, round, m, r, "-"})
					continue
				}
				before := serveTimes(p)
				r := runMode(s, c, client, m, round, p, n, *pods, classes, *timeout)
				serve := serveSummary(before, serveTimes(p), *pods) + batchText(r.batch, *pods) + updatesText(r.updates, *pods)
				fmt.Fprintf(os.Stderr, "bench-e2e: %d nodes, round %d, %s: %.1f pods/s, scheduler %.2f CPU ms/pod, peak RSS %.0f MiB, extenders %.2f CPU ms/pod, load %.1f; extender time per call: %s\n",
					n, round, m.name, r.rate, r.schedCPU, r.peak, r.extCPU, r.load, serve)
				rows = append(rows, row{n, round, m, r, serve})
			}
		}
		s.Close() // stop this cluster before the next node count
		s = harness.NewSession(os.Stderr)
	}

	fmt.Printf("\nkube-scheduler v1.37.1 throughput, %d pods per mode requesting %s in turn, %s, %d CPUs\n\n", *pods,
		strings.Trim(fmt.Sprint(classes), "[]"), time.Now().UTC().Format("2006-01-02"), numCPU())
	if nodeUpdates > 0 {
		fmt.Printf("Node statistics rewritten at %g nodes a second during every mode's run (-node-updates).\n\n", nodeUpdates)
	}
	if len(perf) > 0 {
		fmt.Println("perf:<case> rows are kube-scheduler's own benchmark (scheduler_perf, e2e/bench/perf): pods/s is its " +
			"SchedulingThroughput average, CPU the test process's (the scheduler and its in-process kube-apiserver) per " +
			"measured pod, and their ratios are to the same nodes with the default profile (perf:AnnotatedDefault, or " +
			"perf:AnnotatedChurnDefault with churn).")
		fmt.Println()
	}
	fmt.Println("| nodes | mode | pods/s | ratio to alone | scheduler CPU ms/pod | CPU ratio to alone | scheduler peak RSS MiB | extenders CPU ms/pod | load | extender's own time per call (mean) |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
	type key struct {
		nodes, round int
		mode         string
	}
	results := map[key]result{}
	for _, r := range rows {
		results[key{r.nodes, r.round, r.mode.name}] = r.result
	}
	ratio := func(x, b float64) string {
		if b > 0 {
			return fmt.Sprintf("%.2f", x/b)
		}
		return "n/a"
	}
	for _, r := range rows {
		b := results[key{r.nodes, r.round, baseOf(r.mode.name)}]
		label := r.mode.name
		if *rounds > 1 {
			label = fmt.Sprintf("%s, round %d", r.mode.name, r.round)
		}
		fmt.Printf("| %d | %s (%s) | %.1f | %s | %.2f | %s | %s | %.2f | %.1f | %s |\n", r.nodes, label, r.mode.about, r.rate, ratio(r.rate, b.rate),
			r.schedCPU, ratio(r.schedCPU, b.schedCPU), peakText(r.peak), r.extCPU, r.load, r.serve)
	}
	if *rounds < 2 {
		return
	}
	// Medians over the rounds, and each mode's ratios to alone and names measured in the same
	// round.
	fmt.Printf("\nMedians over %d rounds\n\n", *rounds)
	fmt.Println("| nodes | mode | pods/s | ratio to alone | scheduler CPU ms/pod | CPU ratio to alone | scheduler peak RSS MiB | extenders CPU ms/pod | pods/s ratio to names | load |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, n := range counts {
		for _, m := range all {
			var rates, toAlone, cpu, cpuToAlone, peak, ext, toNames, load []float64
			for _, r := range rows {
				if r.nodes != n || r.mode.name != m.name {
					continue
				}
				rates, cpu, ext, load = append(rates, r.rate), append(cpu, r.schedCPU), append(ext, r.extCPU), append(load, r.load)
				peak = append(peak, r.peak)
				if b := results[key{n, r.round, baseOf(m.name)}]; b.rate > 0 && b.schedCPU > 0 {
					toAlone, cpuToAlone = append(toAlone, r.rate/b.rate), append(cpuToAlone, r.schedCPU/b.schedCPU)
				}
				if b := results[key{n, r.round, "names"}]; b.rate > 0 && !strings.HasPrefix(m.name, perfPrefix) {
					toNames = append(toNames, r.rate/b.rate)
				}
			}
			if len(rates) > 0 {
				fmt.Printf("| %d | %s | %.1f | %s | %.2f | %s | %s | %.2f | %s | %.1f |\n", n, m.name, median(rates), medianText(toAlone),
					median(cpu), medianText(cpuToAlone), peakText(median(peak)), median(ext), medianText(toNames), median(load))
			}
		}
	}
}

// median returns the median of v (not empty).
func median(v []float64) float64 {
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func medianText(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", median(v))
}

var (
	profileDir string
	profileFor time.Duration
	// nodeUpdates is -node-updates: node statistics rewrites a second during each mode's run.
	nodeUpdates float64
)

// rewriteNodes rewrites the usage statistics of the nodes, node-00000 onwards and round again
// (each mode sees the same sequence), at rate nodes a second until the returned wait is called,
// as a node annotator refreshing them does: a merge patch of the node's annotations with the
// same statistics as createNodes wrote (nodeStatistics) and the time of the rewrite as their
// statistics-timestamp. Each rewrite gives the node a new resourceVersion, so
// kube-scheduler updates its NodeInfo and the agents see a changed node. The returned wait
// stops the rewrites and gives how many were made, and the first patch's error.
func rewriteNodes(ctx context.Context, client kubernetes.Interface, nodes int, rate float64) (wait func() (int, error)) {
	stop := make(chan struct{})
	var (
		made     int
		firstErr error
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for i := 0; ; i = (i + 1) % nodes {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			body, err := json.Marshal(map[string]any{"metadata": map[string]any{
				"annotations": nodeStatistics(i, time.Now())}})
			if err == nil {
				_, err = client.CoreV1().Nodes().Patch(ctx, nodeName(i), types.MergePatchType, body, metav1.PatchOptions{})
			}
			if err != nil {
				if firstErr == nil && ctx.Err() == nil {
					firstErr = fmt.Errorf("rewriting %s: %w", nodeName(i), err)
				}
				continue
			}
			made++
		}
	}()
	return func() (int, error) {
		close(stop)
		wg.Wait()
		return made, firstErr
	}
}

// cpuProfile saves the scheduler's CPU profile (its /debug/pprof/profile) over the next
// profileFor to file; a failure is reported, not fatal.
func cpuProfile(port int, file string) {
	client := &http.Client{Timeout: profileFor + time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the scheduler's self-signed certificate, on loopback
	}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, int(profileFor.Seconds())))
	if err == nil {
		defer resp.Body.Close()
		var body []byte
		body, err = io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		if err == nil {
			err = os.WriteFile(file, body, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-e2e: CPU profile %s: %v\n", file, err)
		return
	}
	fmt.Fprintf(os.Stderr, "bench-e2e: CPU profile written to %s\n", file)
}

// serveSummary gives, per function called during a mode, the mean time the extender spent on
// one call (from its own latency histogram): the part of each call the extender controls.
func serveSummary(before, after map[string][2]float64, pods int) string {
	var parts []string
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		calls := after[k][0] - before[k][0]
		if calls < 1 {
			continue
		}
		secs := after[k][1] - before[k][1]
		parts = append(parts, fmt.Sprintf("%s %.2f ms", k[strings.Index(k, "/")+1:], 1000*secs/calls))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

// fastClient is an admin client whose rate limits do not bound the benchmark's own calls.
func fastClient(s *harness.Session, cfg *rest.Config) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 5000, 5000
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		s.Fatalf("client: %v", err)
	}
	return client
}

// createNodes creates n nodes of 32 cores and 128 GiB whose usage statistics look like those a
// node annotator writes (fixtures.UsageStatistics: means and spreads of free cpu and memory,
// a fifth of the nodes near the safe agent's thresholds, some of which its filter rejects),
// with varied congestion.
func createNodes(s *harness.Session, c *harness.Cluster, n int) {
	specs := make([]harness.NodeSpec, n)
	now := time.Now()
	for i := range specs {
		annotations := nodeStatistics(i, now)
		annotations["congestion-factor"] = strconv.Itoa((i * 37) % 100)
		annotations["template.extender/score"] = strconv.Itoa(i % 11)
		specs[i] = harness.NodeSpec{
			Name: nodeName(i), CPU: "32", Memory: "128Gi", Pods: "110",
			Annotations: annotations,
			Labels:      map[string]string{"template.extender/allowed": "true"},
		}
	}
	parallel(s, n, func(i int) error {
		c.CreateNode(s, specs[i])
		return nil
	})
}

// nodeName is the name of node number i.
func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// nodeStatistics are the usage statistics of node number i (32 cores, 128 GiB) written at now.
func nodeStatistics(i int, now time.Time) map[string]string {
	return fixtures.UsageStatistics(i, 32000, 128<<30, now)
}

// parallel runs f(0..n-1) on 16 workers and stops the session at the first error.
func parallel(s *harness.Session, n int, f func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		s.Fatalf("%v", err)
	}
}

func startExtenders(s *harness.Session, c *harness.Cluster) ports {
	bin := harness.BuildExtender(s, "all")
	var procs []*harness.Process
	start := func(agent string, env map[string]string) int {
		env["AGENTS"] = agent
		env["KUBECONFIG"] = c.Kubeconfig
		env["LOG_LEVEL"] = "WARNING"
		e := harness.StartExtender(s, harness.ExtenderOptions{Name: "extender-" + strings.ReplaceAll(agent, ",", "-"), Binary: bin, Env: env})
		procs = append(procs, e.Process)
		return e.Port
	}
	p := ports{
		safe:       start("safe", map[string]string{}),
		congestion: start("congestion", map[string]string{}),
		pigeon:     start("pigeon", map[string]string{"POLICY_OBJECTIVE": "A_BINPACK"}),
		template:   start("template", map[string]string{}),
		template2:  start("template", map[string]string{}),
		combined:   start("safe,congestion", map[string]string{"COMBINED_PRIORITIES": "safe-overload=1,congestion=1"}),
	}
	p.procs = procs
	return p
}

// result is one mode's run: pods/s, and the CPU milliseconds per bound pod that the scheduler
// process and the extender processes spent between the first and the last binding (user +
// system, from /proc/<pid>/stat), and the machine's 1-minute load average at the end.
type result struct {
	rate, schedCPU, extCPU, load float64
	// batch is the scheduler's scheduler_batch_attempts_total by result, read after its last
	// binding; peak is the scheduler's peak resident memory then (VmHWM), in MiB.
	batch map[string]float64
	peak  float64
	// updates is how many node statistics were rewritten during the run (-node-updates), from
	// the scheduler's start to the last binding.
	updates int
}

func runMode(s *harness.Session, c *harness.Cluster, client kubernetes.Interface, m mode, round int, p ports, nodes, pods int, classes []request, timeout time.Duration) result {
	ctx, cancel := context.WithTimeout(s.Context(), timeout)
	defer cancel()
	var r result
	// id names the mode's namespace and scheduler ("@" is not allowed in a namespace).
	id := fmt.Sprintf("%s-%d", strings.ReplaceAll(m.name, baseSuffix, "-base"), round)
	ns := "bench-" + id
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		s.Fatalf("namespace %s: %v", ns, err)
	}
	fmt.Fprintf(os.Stderr, "bench-e2e: %d nodes, %s: creating %d pods\n", nodes, m.name, pods)
	parallel(s, pods, func(i int) error {
		req := requestOf(classes, i)
		pod, err := harness.PodSpec{Name: fmt.Sprintf("p-%05d", i), Namespace: ns, SchedulerName: "my-scheduler",
			CPU: req.cpu, Memory: req.memory}.Pod()
		if err != nil {
			return err
		}
		_, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})

	// Bindings are timed by an informer (it re-establishes its watch if the server closes it).
	var mu sync.Mutex
	bound := map[string]bool{}
	var first, last time.Time
	// CPU ticks of the scheduler and of the extenders at the first and the last binding;
	// schedPid is 0 until the scheduler has started.
	var schedPid int
	var cpuFirst, cpuLast [2]int64
	cpuNow := func() [2]int64 {
		var ext int64
		for _, e := range p.procs {
			ext += harness.CPUTicks(e.Pid())
		}
		return [2]int64{harness.CPUTicks(schedPid), ext}
	}
	allBound := make(chan struct{})
	record := func(obj any) {
		pod, _ := obj.(*corev1.Pod)
		if pod == nil || pod.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if bound[pod.Name] {
			return
		}
		now := time.Now()
		if first.IsZero() {
			first = now
			if schedPid != 0 {
				cpuFirst = cpuNow()
			}
		}
		last = now
		bound[pod.Name] = true
		if len(bound) == pods {
			cpuLast = cpuNow()
			close(allBound)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		s.Fatalf("informer: %v", err)
	}
	stop := make(chan struct{})
	defer factory.Shutdown()
	defer close(stop) // runs first: Shutdown waits for the informer to stop
	factory.Start(stop)
	factory.WaitForCacheSync(ctx.Done())

	cfg := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 5000
  burst: 5000
leaderElection:
  leaderElect: false
profiles:
- schedulerName: my-scheduler
` + m.profileConfig() + m.extendersSection(p)
	opts := harness.SchedulerOptions{Name: "scheduler-" + id, Config: []byte(cfg)}
	switch {
	case m.binary != "":
		opts.Binary = m.binary
	case m.plugins != "":
		opts.Binary = harness.BuildPluginScheduler(s)
	}
	// The metrics and the profile are read anonymously, on loopback.
	opts.Args = append(opts.Args, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/profile")
	var updates func() (int, error)
	if nodeUpdates > 0 {
		updates = rewriteNodes(ctx, client, nodes, nodeUpdates)
	}
	sched := c.StartScheduler(s, opts)
	defer sched.Stop()
	mu.Lock()
	schedPid = sched.Pid()
	if !first.IsZero() { // bound before StartScheduler returned: count from now
		cpuFirst = cpuNow()
	}
	mu.Unlock()
	profiled := make(chan struct{})
	if profileDir != "" {
		go func() {
			defer close(profiled)
			cpuProfile(sched.Port, fmt.Sprintf("%s/%d-%s.pprof", profileDir, nodes, m.name))
		}()
	} else {
		close(profiled)
	}

	select {
	case <-allBound:
	case <-ctx.Done():
		mu.Lock()
		n := len(bound)
		mu.Unlock()
		s.Fatalf("%s: %d of %d pods bound before the timeout; scheduler log:\n%s", m.name, n, pods, sched.Tail(30))
	}
	if updates != nil {
		n, err := updates()
		if err != nil {
			s.Fatalf("%s: %v", m.name, err)
		}
		r.updates = n
	}
	<-profiled
	batch, err := batchAttempts(sched.Port)
	if err != nil {
		s.Fatalf("%s: scheduler_batch_attempts_total: %v", m.name, err)
	}
	_, peak, err := harness.Memory(sched.Pid())
	if err != nil {
		s.Fatalf("%s: the scheduler's memory: %v", m.name, err)
	}
	sched.Stop()
	// Free the nodes for the next mode: no kubelet runs, so delete at once.
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).DeleteCollection(s.Context(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		s.Fatalf("deleting pods: %v", err)
	}
	if span := last.Sub(first).Seconds(); span > 0 {
		r.rate = float64(pods-1) / span
	}
	if pods > 1 {
		r.schedCPU = float64(cpuLast[0]-cpuFirst[0]) * 1000 / harness.ClockTicks / float64(pods-1)
		r.extCPU = float64(cpuLast[1]-cpuFirst[1]) * 1000 / harness.ClockTicks / float64(pods-1)
	}
	r.load = harness.LoadAverage()
	r.batch, r.peak = batch, peak
	return r
}

// batchAttempts reads the scheduler's scheduler_batch_attempts_total, by result (hint_used and
// the reasons a hint was not).
func batchAttempts(port int) (map[string]float64, error) {
	ss, err := harness.SchedulerMetrics(port)
	if err != nil {
		return nil, err
	}
	return ss.Sum("scheduler_batch_attempts_total", func(s harness.Sample) string { return s.Label("result") }), nil
}

// peakText gives a peak RSS in MiB, "-" when none was read (scheduler_perf's cases, whose
// process holds its kube-apiserver too).
func peakText(mib float64) string {
	if mib <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", mib)
}

// updatesText gives the node rewrites made during the run, when -node-updates asked for them.
func updatesText(updates, pods int) string {
	if nodeUpdates == 0 {
		return ""
	}
	return fmt.Sprintf("; %d node updates (one per %.1f pods)", updates, float64(pods)/max(float64(updates), 1))
}

// batchText gives the batching hints used of the pods, when any attempt was counted.
func batchText(b map[string]float64, pods int) string {
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("; batching hints used %.0f of %d pods", b["hint_used"], pods)
}

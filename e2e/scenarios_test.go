package e2e

// One test per deployment file of yamlfiles/: the file's kube-scheduler and sidecars run
// against a real API server (harness.RunDeployment: same flags, env and ports, remapped to free
// loopback ports; the service account of service-account.yaml as identity), and pods land where
// the file's agents say. Each scenario also asks the sidecars directly why (their verdicts and
// scores), and the nodes are built so that kube-scheduler's own scoring would choose otherwise
// or not at all: only the agents can explain the placements asserted.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

const (
	templateLabel = "template.extender/allowed"
	templateScore = "template.extender/score"
)

// TestTemplateYAML: the template agent keeps the nodes labelled allowed=true and prefers the
// highest template.extender/score annotation, and follows both when they change.
func TestTemplateYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "template")
	c, sa := startWithServiceAccount(t)
	allowed := map[string]string{templateLabel: "true"}
	c.CreateNodes(t,
		harness.NodeSpec{Name: "low", Labels: allowed, Annotations: map[string]string{templateScore: "2"}},
		harness.NodeSpec{Name: "high", Labels: allowed, Annotations: map[string]string{templateScore: "9"}},
		harness.NodeSpec{Name: "unlabelled", Annotations: map[string]string{templateScore: "10"}},
	)
	r := c.RunDeployment(t, loadDeployment(t, "extender.template.yaml"), harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)

	// Three pods: a scheduler left to itself spreads them or picks at random among equal nodes.
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i)}, "high",
			"template-score 9 beats 2, and unlabelled fails template-label")
	}

	// The scores change: the next pod follows them.
	c.UpdateNode(t, "low", func(n *corev1.Node) { n.Annotations[templateScore] = "10" })
	c.UpdateNode(t, "high", func(n *corev1.Node) { n.Annotations[templateScore] = "0" })
	scheduleOn(t, c, harness.PodSpec{Name: "p3"}, "low", "template-score is now 10 on low, 0 on high")

	// No node is allowed any more: the pod stays pending and the event gives each node's reason.
	c.UpdateNode(t, "low", func(n *corev1.Node) { n.Labels[templateLabel] = "false" })
	c.UpdateNode(t, "high", func(n *corev1.Node) { delete(n.Labels, templateLabel) })
	c.CreatePod(t, harness.PodSpec{Name: "p4", SchedulerName: schedulerName})
	c.WaitForEvent(t, "default", "p4", "FailedScheduling", "0/3 nodes are available",
		`label template.extender/allowed is "false", not "true"`, "2 node has no label template.extender/allowed")
	if n := c.PodNode(t, "default", "p4"); n != "" {
		t.Fatalf("p4 bound to %s although no node passes template-label", n)
	}
}

// Usage statistics for the safe agent on 4-cpu, 8 GiB nodes.
var (
	// risky: 300m of 4 cpu free on average: with a pod, the expected cpu utilization is 0.95,
	// above the threshold 0.90.
	riskyStats = statsAnnotations(300, 150, 6*gi, 256*mi)
	// busy: 1.6 cpu and 4 GiB free on average, cpu unsteady: acceptable (a small risk), but
	// busier.
	busyStats = statsAnnotations(1600, 800, 4*gi, 512*mi)
	// idle: 3.6 cpu and 7 GiB free on average, steady.
	idleStats = statsAnnotations(3600, 200, 7*gi, 256*mi)
)

// TestSafeYAML: the safe agent rejects a node whose measured usage makes an overload likely
// (the pod stays pending and the event gives the reason with its numbers), then prefers the
// less used of two acceptable nodes. The pod is yamlfiles/test-pod.yaml.
func TestSafeYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	c, sa := startWithServiceAccount(t)
	c.CreateNode(t, harness.NodeSpec{Name: "risky", Annotations: riskyStats})
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.yaml"), harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)

	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "test-pod.yaml"), false)
	e := c.WaitForEvent(t, "default", "test-pod", "FailedScheduling", "0/1 nodes are available", "cpu risk", "threshold 0.90")
	t.Logf("test-pod on the risky node alone: %s", e.Message)
	if n := c.PodNode(t, "default", "test-pod"); n != "" {
		t.Fatalf("test-pod bound to %s although safe-overload rejects it", n)
	}

	// Two acceptable nodes arrive and the scheduler retries the pod as soon as the first does:
	// idle comes first, so test-pod lands there whether or not busy exists yet; the pods below
	// show the choice between the two.
	c.CreateNodes(t,
		harness.NodeSpec{Name: "idle", Annotations: idleStats},
		harness.NodeSpec{Name: "busy", Annotations: busyStats},
	)
	if n := c.WaitForBinding(t, "default", "test-pod"); n != "idle" {
		t.Fatalf("test-pod went to %s, want idle (the less used node)", n)
	}

	// Why, from the agent itself.
	safe := r.Extenders["safe"]
	probe := probePod(t, harness.PodSpec{Name: "probe", CPU: "100m", Memory: "64Mi"})
	nodes := []string{"busy", "idle", "risky"}
	rejected := filterVerdicts(t, safe, "safe-overload", probe, nodes)
	if len(rejected) != 1 || rejected["risky"] == "" {
		t.Fatalf("safe-overload filter rejected %v, want risky alone", rejected)
	}
	mustContain(t, "risky's reason", rejected["risky"], "cpu risk", "> 0.30", "threshold 0.90")
	for _, prio := range []string{"safe-overload", "safe-balance"} {
		s, err := scores(t.Context(), safe, prio, probe, []string{"busy", "idle"})
		if err != nil {
			t.Fatal(err)
		}
		if s["idle"] <= s["busy"] {
			t.Fatalf("priority %s scores idle %d, busy %d: want idle higher", prio, s["idle"], s["busy"])
		}
		t.Logf("priority %s: idle %d, busy %d", prio, s["idle"], s["busy"])
	}

	// More pods: each goes to the less used node (the statistics do not change: no annotator).
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), CPU: "100m", Memory: "64Mi"}, "idle",
			"safe-overload and safe-balance prefer idle")
	}
}

// TestSafeYAMLStaleStatistics: with SAFE_STALE=reject, a node whose statistics-timestamp is
// older than SAFE_MAX_STATS_AGE (default 1h) is rejected, however idle its statistics say it
// is: the pod stays pending with the age in its event, then lands on a node with fresh, busier
// statistics (which the priorities would score lower than the stale idle ones: only the
// freshness check explains the placement). The sidecar's safe_stale_nodes gauge counts it.
func TestSafeYAMLStaleStatistics(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	c, sa := startWithServiceAccount(t)
	const ts = "statistics-timestamp"
	stale := time.Now().Add(-(2*time.Hour + 10*time.Minute)).UTC().Format(time.RFC3339)
	c.CreateNode(t, harness.NodeSpec{Name: "stale", Annotations: withAnnotations(idleStats, ts, stale)})
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.yaml"), harness.RunOptions{
		Kubeconfig: sa, Env: map[string]map[string]string{"safe": {"SAFE_STALE": "reject"}},
	})
	r.CheckProbes(t)

	c.CreatePod(t, harness.PodSpec{Name: "p0", SchedulerName: schedulerName, CPU: "100m", Memory: "64Mi"})
	e := c.WaitForEvent(t, "default", "p0", "FailedScheduling", "0/1 nodes are available", "usage statistics 2h10m", "old (max 1h)")
	t.Logf("p0 with the stale node alone: %s", e.Message)
	if n := c.PodNode(t, "default", "p0"); n != "" {
		t.Fatalf("p0 bound to %s although its statistics are stale", n)
	}

	c.CreateNode(t, harness.NodeSpec{Name: "fresh", Annotations: withAnnotations(busyStats, ts, time.Now().UTC().Format(time.RFC3339))})
	if n := c.WaitForBinding(t, "default", "p0"); n != "fresh" {
		t.Fatalf("p0 went to %s, want fresh", n)
	}
	safe := r.Extenders["safe"]
	probe := probePod(t, harness.PodSpec{Name: "probe", CPU: "100m", Memory: "64Mi"})
	rejected := filterVerdicts(t, safe, "safe-overload", probe, []string{"fresh", "stale"})
	if len(rejected) != 1 {
		t.Fatalf("safe-overload rejected %v, want stale alone", rejected)
	}
	mustContain(t, "stale's reason", rejected["stale"], "usage statistics 2h10m", "old (max 1h)")
	status, metrics, err := safe.Get(t.Context(), "/metrics")
	if err != nil || status != 200 {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	mustContain(t, "/metrics", string(metrics), `safe_stale_nodes{function="safe-overload",verb="filter"} 1`)
	scheduleOn(t, c, harness.PodSpec{Name: "p1", CPU: "100m", Memory: "64Mi"}, "fresh", "safe-overload rejects stale statistics")
}

// TestCongestionYAML: the congestion agent prefers the node with the lowest congestion-factor
// annotation, and follows it when it changes.
func TestCongestionYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "congestion")
	c, sa := startWithServiceAccount(t)
	cf := func(v string) map[string]string { return map[string]string{"congestion-factor": v} }
	c.CreateNodes(t,
		harness.NodeSpec{Name: "jammed", Annotations: cf("90")},
		harness.NodeSpec{Name: "middling", Annotations: cf("50")},
		harness.NodeSpec{Name: "calm", Annotations: cf("10")},
	)
	r := c.RunDeployment(t, loadDeployment(t, "extender.congestion.yaml"), harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)
	ext := r.Extenders["congestion"]
	nodes := []string{"calm", "jammed", "middling"}
	probe := probePod(t, harness.PodSpec{Name: "probe"})

	// score = 10*(1 - cf/100) rounded half up: 10 -> 9, 50 -> 5, 90 -> 1.
	s, err := scores(t.Context(), ext, "congestion", probe, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if s["calm"] != 9 || s["middling"] != 5 || s["jammed"] != 1 {
		t.Fatalf("congestion scores %v, want calm 9, middling 5, jammed 1", s)
	}
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i)}, "calm", "congestion scores calm 9, middling 5, jammed 1")
	}

	// The congestion moves: 95 -> 10*(1-0.95) = 0.5, rounded half up to 1; 0 -> 10.
	c.UpdateNode(t, "calm", func(n *corev1.Node) { n.Annotations["congestion-factor"] = "95" })
	c.UpdateNode(t, "jammed", func(n *corev1.Node) { n.Annotations["congestion-factor"] = "0" })
	waitForScores(t, ext, "congestion", probe, nodes, "the sidecar sees the new annotations", func(s map[string]int64) bool {
		return s["jammed"] == 10 && s["calm"] == 1
	})
	scheduleOn(t, c, harness.PodSpec{Name: "p3"}, "jammed", "congestion-factor is now 0 on jammed, 95 on calm")
}

// pigeonNodes are three 4-cpu, 8 GiB nodes for the pigeon scenarios.
var pigeonNodes = []string{"node-a", "node-b", "node-c"}

// preload binds pods straight to nodes (no scheduler) to give them allocation.
func preload(t *testing.T, c *harness.Cluster, node, cpu, memory string) {
	t.Helper()
	c.CreatePod(t, harness.PodSpec{Name: "preload-" + node, NodeName: node, CPU: cpu, Memory: memory})
}

// placeFollowingPigeon schedules pods one by one; before each, it waits until the pigeon sidecar
// has seen the previous binding (its best nodes are those want picks from the cpu requests
// bound to each node), then checks the scheduler chose one of them.
func placeFollowingPigeon(t *testing.T, c *harness.Cluster, pigeon *harness.Extender, nodes []string, pods int,
	want func(cpu map[string]int64) []string, why string) []string {
	t.Helper()
	var placed []string
	for i := range pods {
		spec := harness.PodSpec{Name: fmt.Sprintf("p%d", i), CPU: "500m", Memory: "64Mi"}
		cpu := cpuRequests(t, c, nodes)
		expected := want(cpu)
		waitForScores(t, pigeon, "pigeon-holing", probePod(t, harness.PodSpec{Name: "probe", CPU: "500m", Memory: "64Mi"}), nodes,
			fmt.Sprintf("best nodes %v (cpu requests %v)", expected, cpu), func(s map[string]int64) bool {
				return slices.Equal(best(s), expected)
			})
		got := schedule(t, c, spec)
		if !slices.Contains(expected, got) {
			t.Fatalf("pod %s went to %s, want one of %v: %s (cpu requests before: %v)", spec.Name, got, expected, why, cpu)
		}
		c.WaitForEvent(t, "default", spec.Name, "Scheduled", " to "+got)
		placed = append(placed, got)
	}
	return placed
}

// TestPigeonYAML runs extender.pigeon.yaml with each objective named in POLICY_OBJECTIVE.
func TestPigeonYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "pigeon")

	// LOAD_BALANCE spreads on the prime resource, cpu: each pod goes to a node with the least
	// cpu requested. node-b has no cpu requested but 75% of its memory: kube-scheduler's own
	// scoring (least allocated, balanced allocation) prefers node-a and node-c by about 38
	// points; pigeon (weight 2) prefers node-b by 2*10*(10-1) = 180.
	t.Run("LOAD_BALANCE", func(t *testing.T) {
		t.Parallel()
		c, sa := startWithServiceAccount(t)
		for _, n := range pigeonNodes {
			c.CreateNode(t, harness.NodeSpec{Name: n})
		}
		preload(t, c, "node-a", "1", "")
		preload(t, c, "node-b", "", "6Gi")
		preload(t, c, "node-c", "1", "")
		r := c.RunDeployment(t, loadDeployment(t, "extender.pigeon.yaml"), harness.RunOptions{
			Kubeconfig: sa, Env: map[string]map[string]string{"pigeon": {"POLICY_OBJECTIVE": "LOAD_BALANCE"}},
		})
		r.CheckProbes(t)
		placed := placeFollowingPigeon(t, c, r.Extenders["pigeon"], pigeonNodes, 4, func(cpu map[string]int64) []string {
			lowest, _ := extremes(cpu)
			return lowest
		}, "LOAD_BALANCE puts a pod where the least cpu is requested")
		if placed[0] != "node-b" || placed[1] != "node-b" {
			t.Fatalf("placements %v: the first two pods belong on node-b", placed)
		}
		cpu := cpuRequests(t, c, pigeonNodes)
		lowest, highest := extremes(cpu)
		if cpu[highest[0]]-cpu[lowest[0]] > 500 {
			t.Fatalf("cpu requests %v after LOAD_BALANCE: spread more than one pod", cpu)
		}
	})

	// CONSOLIDATE packs: each pod goes to the node with the most cpu requested. kube-scheduler's
	// own scoring prefers the emptier nodes (by about 50 points at the third pod); pigeon (weight
	// 2) prefers the fullest by 180.
	t.Run("CONSOLIDATE", func(t *testing.T) {
		t.Parallel()
		c, sa := startWithServiceAccount(t)
		for _, n := range pigeonNodes {
			c.CreateNode(t, harness.NodeSpec{Name: n})
		}
		preload(t, c, "node-b", "1", "")
		r := c.RunDeployment(t, loadDeployment(t, "extender.pigeon.yaml"), harness.RunOptions{
			Kubeconfig: sa, Env: map[string]map[string]string{"pigeon": {"POLICY_OBJECTIVE": "CONSOLIDATE"}},
		})
		r.CheckProbes(t)
		placed := placeFollowingPigeon(t, c, r.Extenders["pigeon"], pigeonNodes, 3, func(cpu map[string]int64) []string {
			_, highest := extremes(cpu)
			return highest
		}, "CONSOLIDATE puts a pod where the most cpu is requested")
		if want := []string{"node-b", "node-b", "node-b"}; !slices.Equal(placed, want) {
			t.Fatalf("placements %v, want %v", placed, want)
		}
	})
}

// safeCongestionNodes: congestion alone would choose risky (congestion-factor 0), which safe
// rejects for its usage; calm and jammed are equally safe and congestion prefers calm.
var safeCongestionNodes = []harness.NodeSpec{
	{Name: "risky", Annotations: withAnnotations(riskyStats, "congestion-factor", "0")},
	{Name: "calm", Annotations: withAnnotations(idleStats, "congestion-factor", "10")},
	{Name: "jammed", Annotations: withAnnotations(idleStats, "congestion-factor", "90")},
}

// TestSafeCongestionYAML: congestion alone would choose the risky node (congestion-factor 0);
// safe's filter removes it first, and congestion then decides between two equally safe nodes.
func TestSafeCongestionYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "congestion")
	c, sa := startWithServiceAccount(t)
	c.CreateNodes(t, safeCongestionNodes...)
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.congestion.yaml"), harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)
	nodes := []string{"calm", "jammed", "risky"}
	probe := probePod(t, harness.PodSpec{Name: "probe", CPU: "100m", Memory: "64Mi"})

	rejected := filterVerdicts(t, r.Extenders["safe"], "safe-overload", probe, nodes)
	if len(rejected) != 1 || !strings.Contains(rejected["risky"], "cpu risk") {
		t.Fatalf("safe-overload rejected %v, want risky alone, for its cpu risk", rejected)
	}
	s, err := scores(t.Context(), r.Extenders["congestion"], "congestion", probe, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got := best(s); !slices.Equal(got, []string{"risky"}) {
		t.Fatalf("congestion's best nodes %v (scores %v), want risky", got, s)
	}
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), CPU: "100m", Memory: "64Mi"}, "calm",
			"safe rejects risky; congestion scores calm 9, jammed 1")
	}
}

// TestSafeCongestionCombinedYAML: the same cluster as TestSafeCongestionYAML, run by the file
// whose one sidecar serves safe and congestion (listening on 127.0.0.1, exec probes) and whose
// scheduler calls the filter and priorities/combined: two calls a pod. Pods land where the three
// separate calls put them, and the combined score is the weighted mean of the separate ones.
func TestSafeCongestionCombinedYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "congestion")
	c, sa := startWithServiceAccount(t)
	c.CreateNodes(t, safeCongestionNodes...)
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.congestion.combined.yaml"), harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)
	ext := r.Extenders["safe-congestion"]
	nodes := []string{"calm", "jammed", "risky"}
	probe := probePod(t, harness.PodSpec{Name: "probe", CPU: "100m", Memory: "64Mi"})

	rejected := filterVerdicts(t, ext, "safe-overload", probe, nodes)
	if len(rejected) != 1 || !strings.Contains(rejected["risky"], "cpu risk") {
		t.Fatalf("safe-overload rejected %v, want risky alone, for its cpu risk", rejected)
	}
	// COMBINED_PRIORITIES=safe-overload=2,safe-balance=1,congestion=1: floor(sum/4 + 1/2).
	sums := map[string]int64{}
	for prio, w := range map[string]int64{"safe-overload": 2, "safe-balance": 1, "congestion": 1} {
		s, err := scores(t.Context(), ext, prio, probe, nodes)
		if err != nil {
			t.Fatal(err)
		}
		for n, v := range s {
			sums[n] += w * v
		}
	}
	combined, err := scores(t.Context(), ext, "combined", probe, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if want := (2*sums[n] + 4) / 8; combined[n] != want {
			t.Fatalf("combined score of %s %d, want %d (weighted sum %d / 4, rounded half up)", n, combined[n], want, sums[n])
		}
	}
	if combined["calm"] <= combined["jammed"] {
		t.Fatalf("combined scores %v: want calm above jammed", combined)
	}
	t.Logf("combined scores %v (weighted sums %v)", combined, sums)
	for i := range 3 {
		scheduleOn(t, c, harness.PodSpec{Name: fmt.Sprintf("p%d", i), CPU: "100m", Memory: "64Mi"}, "calm",
			"safe rejects risky; the combined priority scores calm above jammed")
	}
}

// TestSafePigeonYAML: with POLICY_OBJECTIVE=CONSOLIDATE, pigeon alone would pack pods onto the
// node with the most cpu requested, which is the risky one; safe's filter removes it, and pigeon
// packs onto the fullest remaining node.
func TestSafePigeonYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "pigeon")
	c, sa := startWithServiceAccount(t)
	c.CreateNodes(t,
		harness.NodeSpec{Name: "node-a", Annotations: idleStats},
		harness.NodeSpec{Name: "node-b", Annotations: idleStats},
		harness.NodeSpec{Name: "risky", Annotations: riskyStats},
	)
	preload(t, c, "risky", "2", "")
	preload(t, c, "node-b", "1", "")
	r := c.RunDeployment(t, loadDeployment(t, "extender.safe.pigeon.yaml"), harness.RunOptions{
		Kubeconfig: sa, Env: map[string]map[string]string{"pigeon": {"POLICY_OBJECTIVE": "CONSOLIDATE"}},
	})
	r.CheckProbes(t)
	probe := probePod(t, harness.PodSpec{Name: "probe", CPU: "500m", Memory: "64Mi"})
	all := []string{"node-a", "node-b", "risky"}

	s, err := scores(t.Context(), r.Extenders["pigeon"], "pigeon-holing", probe, all)
	if err != nil {
		t.Fatal(err)
	}
	if got := best(s); !slices.Equal(got, []string{"risky"}) {
		t.Fatalf("pigeon's best nodes %v (scores %v), want risky, the fullest", got, s)
	}
	rejected := filterVerdicts(t, r.Extenders["safe"], "safe-overload", probe, all)
	if len(rejected) != 1 || !strings.Contains(rejected["risky"], "cpu risk") {
		t.Fatalf("safe-overload rejected %v, want risky alone, for its cpu risk", rejected)
	}
	placed := placeFollowingPigeon(t, c, r.Extenders["pigeon"], []string{"node-a", "node-b"}, 3, func(cpu map[string]int64) []string {
		_, highest := extremes(cpu)
		return highest
	}, "safe rejects risky; CONSOLIDATE packs onto the fullest node left")
	if want := []string{"node-b", "node-b", "node-b"}; !slices.Equal(placed, want) {
		t.Fatalf("placements %v, want %v", placed, want)
	}
}

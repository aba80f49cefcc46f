package adapter_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
)

// annotatedCluster is n nodes of 16 cores and 64 GiB with an annotator's usage statistics
// (fixtures.UsageStatistics: a fifth near safe's thresholds, some of them rejected), congestion
// factors, template labels and scores, and 0-3 pods bound on each.
func annotatedCluster(n int) ([]*corev1.Node, []*corev1.Pod) {
	now := time.Now()
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range n {
		annotations := fixtures.UsageStatistics(i, 16000, 64<<30, now)
		annotations["congestion-factor"] = strconv.Itoa((i * 37) % 100)
		annotations["template.extender/score"] = strconv.Itoa(i % 11)
		node := fixtures.Node(i, annotations)
		node.ResourceVersion = strconv.Itoa(i + 1)
		node.Labels["template.extender/allowed"] = strconv.FormatBool(i%7 != 3)
		nodes = append(nodes, &node)
		for k := range i % 4 {
			p := fixtures.Pod(fmt.Sprintf("bound-%d-%d", i, k), fmt.Sprintf("%dm", 300+900*k), fmt.Sprintf("%dMi", 512*(k+1)))
			p.Spec.NodeName = node.Name
			pods = append(pods, p)
		}
	}
	return nodes, pods
}

// weighted is an agent function with its weight (0: a filter only).
type weighted struct {
	name   string
	weight int64
}

// separateProfile enables fns as separate plugins with their weights; combinedProfile enables
// them in the agents plugin, of weight the sum of theirs, with args.
func separateProfile(fns []weighted) string {
	y := "multiPoint:\n  enabled:\n"
	for _, f := range fns {
		y += "  - name: " + f.name + "\n"
		if f.weight > 0 {
			y += fmt.Sprintf("    weight: %d\n", f.weight)
		}
	}
	return y
}

func combinedProfile(fns []weighted) (plugins, pluginConfig string, total int64) {
	pluginConfig = "- name: agents\n  args:\n    functions:\n"
	for _, f := range fns {
		pluginConfig += "    - name: " + f.name + "\n"
		if f.weight > 0 {
			pluginConfig += fmt.Sprintf("      weight: %d\n", f.weight)
		}
		total += f.weight
	}
	return fmt.Sprintf("multiPoint:\n  enabled:\n  - name: agents\n    weight: %d\n", max(total, 1)), pluginConfig, total
}

// TestCombinedIsTheSeparatePlugins: over an annotator's node statistics (many nodes near safe's
// thresholds, so that some are rejected) and pods of several sizes, the agents plugin rejects the
// nodes the separate plugins reject, with the same status codes and reasons (prefixed with the
// rejecting function), and kube-scheduler's total score of each feasible node (weights applied)
// is the separate plugins' total: exactly when the sum of the weights W divides 10 times the
// weighted sum (W = 1, 2, 5, 10), within W/2 otherwise (the mean rounded half up).
func TestCombinedIsTheSeparatePlugins(t *testing.T) {
	nodes, bound := annotatedCluster(300)
	pods := []*corev1.Pod{
		fixtures.Pod("small", "100m", "128Mi"),
		fixtures.Pod("medium", "2", "4Gi"),
		fixtures.Pod("large", "6", "24Gi"),
		fixtures.Pod("memory", "500m", "40Gi"),
	}
	for _, tc := range []struct {
		name  string
		fns   []weighted
		exact bool
	}{
		{"safe-overload=1,congestion=1", []weighted{{"safe-overload", 1}, {"congestion", 1}}, true},
		{"safe-overload=2,safe-balance=1,congestion=1", []weighted{{"safe-overload", 2}, {"safe-balance", 1}, {"congestion", 1}}, false},
		{"safe-overload=3,congestion=2", []weighted{{"safe-overload", 3}, {"congestion", 2}}, true},
		// Two filters: template-label (a filter only) rejects some nodes safe passes.
		{"template-label,safe-overload=1,template-score=1", []weighted{{"template-label", 0}, {"safe-overload", 1}, {"template-score", 1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sepFW, sepSnap := mustFramework(t, newAdapter(t, agents.All...), profileYAML(separateProfile(tc.fns), ""), nodes, bound)
			plugins, args, total := combinedProfile(tc.fns)
			oneFW, oneSnap := mustFramework(t, newAdapter(t, agents.All...), profileYAML(plugins, args), nodes, bound)
			rejections := 0
			for _, pod := range pods {
				sepState, oneState := schedframework.NewCycleState(), schedframework.NewCycleState()
				sepRejected, sepFeasible := filterAll(t, sepFW, sepSnap, sepState, pod)
				oneRejected, oneFeasible := filterAll(t, oneFW, oneSnap, oneState, pod)
				rejections += len(sepRejected)
				for name, s := range sepRejected {
					o := oneRejected[name]
					if o == nil {
						t.Errorf("pod %s, node %s: the separate plugins reject it (%v), the agents plugin passes it", pod.Name, name, s)
						continue
					}
					if o.Code() != s.Code() || o.Plugin() != adapter.CombinedName || !strings.HasPrefix(o.Message(), s.Plugin()+": ") ||
						strings.TrimPrefix(o.Message(), s.Plugin()+": ") != s.Message() {
						t.Errorf("pod %s, node %s: agents plugin %s %s %q, want %s %q prefixed with %q", pod.Name, name, o.Plugin(), o.Code(), o.Message(), s.Code(), s.Message(), s.Plugin()+": ")
					}
				}
				for name, o := range oneRejected {
					if sepRejected[name] == nil {
						t.Errorf("pod %s, node %s: the agents plugin rejects it (%v), the separate plugins pass it", pod.Name, name, o)
					}
				}
				if len(sepFeasible) == 0 {
					t.Fatalf("pod %s: no feasible node; the test needs some", pod.Name)
				}
				sepTotal, oneTotal := totals(t, sepFW, sepState, pod, sepFeasible), totals(t, oneFW, oneState, pod, oneFeasible)
				distinct := map[int64]bool{}
				for name, want := range sepTotal {
					got, ok := oneTotal[name]
					distinct[want] = true
					switch {
					case !ok:
						t.Errorf("pod %s, node %s: not scored by the agents plugin", pod.Name, name)
					case tc.exact && got != want:
						t.Errorf("pod %s, node %s: total %d, want the separate plugins' %d", pod.Name, name, got, want)
					case !tc.exact && 2*abs(got-want) > total:
						t.Errorf("pod %s, node %s: total %d, want within %d/2 of the separate plugins' %d", pod.Name, name, got, total, want)
					}
				}
				if len(distinct) < 5 {
					t.Fatalf("pod %s: only %d distinct totals: the nodes do not tell the functions apart", pod.Name, len(distinct))
				}
			}
			if rejections == 0 {
				t.Fatal("no node rejected: the nodes do not reach the filters' thresholds")
			}
		})
	}
}

// totals runs PreScore and Score on nodes and returns each node's total score over the plugins
// (each plugin's score times its weight, as kube-scheduler adds them).
func totals(t *testing.T, fw schedframework.Framework, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) map[string]int64 {
	t.Helper()
	if s := fw.RunPreScorePlugins(t.Context(), state, pod, nodes); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	list, s := fw.RunScorePlugins(t.Context(), state, pod, nodes)
	if !s.IsSuccess() {
		t.Fatalf("Score: %v", s)
	}
	out := map[string]int64{}
	for _, n := range list {
		out[n.Name] = n.TotalScore
	}
	return out
}

func abs(x int64) int64 { return max(x, -x) }

// TestCombinedFailures: a failing filter fails the cycle naming its function; a failing
// prioritizer counts 0, as its separate plugin's skipped Score does, and the others still score.
func TestCombinedFailures(t *testing.T) {
	nodes := []*corev1.Node{testNode("n0", "1"), testNode("n1", "4"), testNode("n2", "8")}
	plugins, args, _ := combinedProfile([]weighted{{testFit, 1}})
	fw, snap := mustFramework(t, newAdapter(t, testRegistration), profileYAML(plugins, args), nodes, nil)
	infos, _ := snap.NodeInfos().List()
	pod := testPod("p", map[string]string{failAnno: ""})
	state := schedframework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
	s := fw.RunFilterPlugins(t.Context(), state, pod, infos[0])
	if s.Code() != fwk.Error || !strings.Contains(s.Message(), "filter test-fit failed: the test source is down") {
		t.Fatalf("Filter: %v, want an error naming test-fit", s)
	}

	// Scores: test-rank fails when test-fit does; with both in one plugin, both fail and the
	// plugin's score is skipped; the separate plugins' are too.
	ok := testPod("q", nil)
	plugins, args, _ = combinedProfile([]weighted{{testFit, 1}, {testRank, 1}})
	fw, snap = mustFramework(t, newAdapter(t, testRegistration), profileYAML(plugins, args), nodes, nil)
	state = schedframework.NewCycleState()
	_, feasible := filterAll(t, fw, snap, state, ok)
	got := totals(t, fw, state, ok, feasible)
	// n1 (4) and n2 (8) pass the threshold 3; test-fit scores 4 and 8, test-rank 0 and 10:
	// totals 10*(4+0) = 40 and 10*(8+10) = 180 (mean 20 and 90, weight 2).
	if got["n1"] != 40 || got["n2"] != 180 || len(got) != 2 {
		t.Fatalf("totals %v, want n1 40 and n2 180", got)
	}
	state = schedframework.NewCycleState()
	if s := fw.RunPreScorePlugins(t.Context(), state, pod, feasible); !s.IsSuccess() {
		t.Fatalf("PreScore with every prioritizer failing: %v, want success (the score skipped)", s)
	}
}

// TestCombinedArgs: the agents plugin's args are checked at start, each mistake named.
func TestCombinedArgs(t *testing.T) {
	nodes := []*corev1.Node{testNode("n0", "5")}
	for _, tc := range []struct {
		name, plugins, args, want string
		extra                     string // more pluginConfig
	}{
		{"no args", "multiPoint:\n  enabled:\n  - name: agents\n", "", "plugin agents: pluginConfig args: missing: list the agent functions to run under functions", ""},
		{"unknown field", "", "functions: [{name: safe-overload}]\nweights: {}", `unknown field "weights" (the fields are functions, config)`, ""},
		{"no function", "", "functions: []", "functions: none listed", ""},
		{"unknown function", "", "functions: [{name: safe}]", `functions[0]: no agent offers a function named "safe"`, ""},
		{"twice", "", "functions: [{name: congestion}, {name: congestion}]", "functions[1]: congestion is listed twice", ""},
		{"weight of a filter", "", "functions: [{name: template-label, weight: 2}]", "functions[0]: template-label is a filter only: it takes no weight", ""},
		{"weight out of range", "", "functions: [{name: congestion, weight: 1001}]", "functions[0]: congestion: weight 1001 is not an integer from 1 to 1000", ""},
		{"config of no agent", "", "functions: [{name: congestion}]\nconfig: {safety: {}}", `config: no agent is named "safety"`, ""},
		{"config of an agent not listed", "", "functions: [{name: congestion}]\nconfig: {safe: {utilization: 80}}", "config.safe: none of the agent's functions is listed", ""},
		{"bad agent config", "", "functions: [{name: congestion}]\nconfig: {congestion: {factorMax: 0}}", "plugin agents (agent congestion): pluginConfig args: invalid factorMax", ""},
		{"unknown agent field", "", "functions: [{name: safe-overload}]\nconfig: {safe: {utilisation: 80}}", `plugin agents (agent safe): pluginConfig args: unknown field "utilisation"`, ""},
		{"args differing from the separate plugin's", "multiPoint:\n  enabled:\n  - name: safe-balance\n  - name: agents\n",
			"functions: [{name: safe-overload}]\nconfig: {safe: {utilization: 80}}",
			"of agent safe both carry pluginConfig args, and they differ", "- name: safe-balance\n  args:\n    utilization: 70\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plugins := tc.plugins
			if plugins == "" {
				plugins = "multiPoint:\n  enabled:\n  - name: agents\n"
			}
			cfg := ""
			if tc.args != "" {
				cfg = "- name: agents\n  args:\n" + indent(tc.args, "    ")
			}
			cfg += tc.extra
			_, _, err := newFramework(t, newAdapter(t, agents.All...), profileYAML(plugins, cfg), nodes, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("config reaches the agent", func(t *testing.T) {
		// utilization 1 %: safe rejects every node of the annotated cluster, as the separate
		// plugin with that args does.
		nodes, bound := annotatedCluster(20)
		fw, snap := mustFramework(t, newAdapter(t, agents.All...), profileYAML("multiPoint:\n  enabled:\n  - name: agents\n",
			"- name: agents\n  args:\n    functions: [{name: safe-overload}]\n    config: {safe: {utilization: 1}}\n"), nodes, bound)
		rejected, _ := filterAll(t, fw, snap, schedframework.NewCycleState(), fixtures.Pod("p", "1", "1Gi"))
		if len(rejected) != len(nodes) {
			t.Fatalf("%d of %d nodes rejected with utilization 1, want all", len(rejected), len(nodes))
		}
	})
}

// TestCombinedSigns: the agents plugin signs a pod when each function's own plugin would, and
// refuses as soon as one would refuse (pigeon-holing reads the whole cluster, and says so).
func TestCombinedSigns(t *testing.T) {
	nodes, pods := agentCluster()
	pod := func(name, cpu string) *corev1.Pod { return fixtures.Pod(name, cpu, "1Gi") }
	for _, tc := range []struct {
		fns   []weighted
		signs bool
	}{
		{[]weighted{{"congestion", 1}, {"template-label", 0}, {"template-score", 1}}, true},
		{[]weighted{{"congestion", 1}, {"pigeon-holing", 1}}, false},
		{[]weighted{{"safe-overload", 1}, {"congestion", 1}}, true},
		{[]weighted{{"safe-overload", 2}, {"congestion", 1}, {"pigeon-holing", 1}}, false},
	} {
		plugins, args, _ := combinedProfile(tc.fns)
		t.Run(args, func(t *testing.T) {
			fw, snap := mustFramework(t, newAdapter(t, agents.All...), profileYAML(plugins, args), nodes, pods)
			// Before any answer too (a backlog queued at the scheduler's start): from what the
			// agents declare (framework.Offer.WholeCluster).
			if before, after := fw.SignPod(t.Context(), pod("a", "1")), fw.SignPod(t.Context(), pod("b", "1")); (before != nil) != tc.signs || string(before) != string(after) {
				t.Fatalf("before any answer: signatures a %s, b %s; want them equal, and present: %v", before, after, tc.signs)
			}
			state := schedframework.NewCycleState()
			_, feasible := filterAll(t, fw, snap, state, pod("a", "1"))
			totals(t, fw, state, pod("a", "1"), feasible)
			a, b, c := fw.SignPod(t.Context(), pod("a", "1")), fw.SignPod(t.Context(), pod("b", "1")), fw.SignPod(t.Context(), pod("c", "2"))
			if !tc.signs {
				if a != nil {
					t.Fatalf("signed although a function reads the whole cluster: %s", a)
				}
				return
			}
			if a == nil || string(a) != string(b) || string(a) == string(c) {
				t.Fatalf("signatures a %s, b %s, c %s: want a = b (only the names differ), c different (another request)", a, b, c)
			}
		})
	}
}

// TestNoFunctionNamedAgents: an agent function named agents would collide with the plugin.
func TestNoFunctionNamedAgents(t *testing.T) {
	offer := framework.Offer{Prioritizers: []framework.Weighted{{Name: adapter.CombinedName, Weight: 1}}}
	clash := framework.Register("clash", defaultTestConfig, newTestAgent, offer)
	_, err := adapter.New([]framework.Registration{clash})
	if err == nil || !strings.Contains(err.Error(), "agent clash offers a function named agents, the name of the plugin that combines functions") {
		t.Fatalf("error %v, want one naming the clash", err)
	}
}

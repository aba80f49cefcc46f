package adapter_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
)

// TestChunkedVerdictsAreTheWholeListVerdicts: Filter judges the nodes chunk by chunk as the
// scheduler asks about them (from several goroutines, in any order, some nodes never); each
// verdict is the one the agent's filter function gives when it judges every node in one call,
// code and reason. 203 nodes of annotator-like statistics (13 chunks, the last one short).
func TestChunkedVerdictsAreTheWholeListVerdicts(t *testing.T) {
	now := time.Now()
	var nodes []*corev1.Node
	for i := range 203 {
		n := fixtures.Node(i, fixtures.UsageStatistics(i, 16000, 64<<30, now))
		n.ResourceVersion = strconv.Itoa(i + 1)
		nodes = append(nodes, &n)
	}
	var safe framework.Agent
	for _, r := range agents.All {
		if r.Name == "safe" {
			a, err := r.New(r.NewConfig(), framework.NewHandle(nil))
			if err != nil {
				t.Fatal(err)
			}
			safe = a
		}
	}
	fw, snap := mustFramework(t, newAdapter(t, agents.All...), profileYAML("multiPoint:\n  enabled:\n  - name: safe-overload\n", ""), nodes, nil)
	infos, _ := snap.NodeInfos().List()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 5 {
		pod := fixtures.Pod("p"+strconv.Itoa(round), strconv.Itoa(100+r.IntN(3000))+"m", strconv.Itoa(128+r.IntN(8000))+"Mi")
		views := make([]*corev1.Node, len(infos))
		for i, ni := range infos {
			views[i] = framework.NodeView(ni.Node())
		}
		whole, err := safe.Filters()[0].Func(t.Context(), pod, views)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		rejected := 0
		for i, v := range whole {
			want[views[i].Name] = "Success: "
			if !v.Passes() {
				want[views[i].Name] = "Unschedulable: " + v.Reason
				rejected++
			}
		}
		if rejected == 0 || rejected == len(whole) {
			t.Fatalf("round %d: %d of %d nodes rejected: the test needs both", round, rejected, len(whole))
		}

		state := schedframework.NewCycleState()
		if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
			t.Fatal(s)
		}
		order := r.Perm(len(infos))[:len(infos)*2/3] // a third never asked about
		got := make([]string, len(order))
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for k := w; k < len(order); k += 8 {
					s := fw.RunFilterPlugins(t.Context(), state, pod, infos[order[k]])
					got[k] = "Success: "
					if s != nil {
						got[k] = s.Code().String() + ": " + strings.Join(s.Reasons(), "; ")
					}
				}
			})
		}
		wg.Wait()
		for k, i := range order {
			name := infos[i].Node().Name
			if got[k] != want[name] {
				t.Errorf("round %d, node %s: %q, judged with every node %q", round, name, got[k], want[name])
			}
		}
	}
}

// TestChunkedScoresAreOneCallsScores: every prioritize function of every agent (but telemetry's,
// which needs an API server, and which ranks nodes: WholeList) scores each node as one call over
// every node scores it, whether the adapter scores chunk by chunk as Score asks (a function
// scoring each node by itself) or in one call (a function that declares WholeList, or any
// function while the adapter keeps decisions); so does the agents plugin, mixing both kinds.
// 80 nodes whose statistics run from the first node's to the last's, so that a function ranking
// the nodes of a chunk among themselves would score differently (it fails so when pigeon-holing,
// or safe-balance relative, does not declare WholeList: tried).
func TestChunkedScoresAreOneCallsScores(t *testing.T) {
	nodes, pods := agentClusterOf(80)
	type scored struct{ name, plugin, plugins, args string }
	var cases []scored
	for _, r := range agents.All {
		if r.Name == "telemetry" {
			continue
		}
		for _, name := range r.PrioritizerNames() {
			cases = append(cases, scored{name: name, plugin: name})
		}
	}
	cases = append(cases,
		scored{name: "safe-balance-relative", plugin: "safe-balance", args: "- name: safe-balance\n  args:\n    balanceScale: relative\n"},
		scored{name: "agents", plugin: adapter.CombinedName, plugins: "multiPoint:\n  enabled:\n  - name: agents\n    weight: 6\n",
			args: "- name: agents\n  args:\n    functions: [{name: safe-overload, weight: 2}, {name: congestion}, {name: pigeon-holing, weight: 3}]\n"})
	pod := fixtures.Pod("p", "1500m", "3Gi")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plugins := c.plugins
			if plugins == "" {
				plugins = "multiPoint:\n  enabled:\n  - name: " + c.plugin + "\n"
			}
			scores := func(oneCall bool) map[string]int64 {
				a := newAdapter(t, agents.All...)
				if oneCall {
					a.KeepDecisions(decisions.Config{Kept: 10, InputsBytes: decisions.DefaultInputsBytes})
				}
				fw, snap := mustFramework(t, a, profileYAML(plugins, c.args), nodes, pods)
				infos, _ := snap.NodeInfos().List()
				// In the nodes' order, so that a chunk holds a run of the statistics, not a
				// sample of all of them as the snapshot's order (by zone) would.
				slices.SortFunc(infos, func(a, b fwk.NodeInfo) int { return strings.Compare(a.Node().Name, b.Node().Name) })
				return scoreAll(t, fw, schedframework.NewCycleState(), pod, infos)[c.plugin]
			}
			one, chunked := scores(true), scores(false)
			if diff := cmp.Diff(one, chunked); diff != "" {
				t.Fatalf("scores (-one call +chunk by chunk):\n%s", diff)
			}
			distinct := map[int64]bool{}
			for _, s := range one {
				distinct[s] = true
			}
			// reward scores every node its initial reward until it has observed a pod (here
			// never): its scores are a lookup per node (compared end to end, e2e/plugins_test.go).
			if len(one) != len(nodes) || len(distinct) < 3 && c.plugin != "reward" {
				t.Fatalf("the cluster must give %s scores of some spread on every node, got %v", c.plugin, one)
			}
		})
	}
}

// TestRescoringScoresOneChunk: opportunistic batching's rescoring runs PreScore over every
// cached candidate and asks Score about one node; a prioritize function that scores each node by
// itself is then called for that node's chunk alone (at most 32 nodes of 200), while one that
// declares WholeList scores every candidate in PreScore.
func TestRescoringScoresOneChunk(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 200 {
		nodes = append(nodes, testNode("n"+strconv.Itoa(i), strconv.Itoa(i%10)))
	}
	for _, c := range []struct {
		plugin string
		most   int64
	}{{testFit, 32}, {testRank, 200}} {
		fw, snap := mustFramework(t, newAdapter(t, testRegistration), profileYAML("multiPoint:\n  enabled:\n  - name: "+c.plugin+"\n", ""), nodes, nil)
		infos, _ := snap.NodeInfos().List()
		pod := testPod("p", nil)
		state := schedframework.NewCycleState()
		before := testScored.Load()
		if s := fw.RunPreScorePlugins(t.Context(), state, pod, infos); !s.IsSuccess() {
			t.Fatal(s)
		}
		scores, s := fw.RunRawScorePlugins(t.Context(), state, pod, infos[117])
		if !s.IsSuccess() {
			t.Fatal(s)
		}
		if got := testScored.Load() - before; got != c.most {
			t.Errorf("%s: %d nodes scored to answer for one node of %d, want %d", c.plugin, got, len(infos), c.most)
		}
		if v, _ := strconv.ParseInt(infos[117].Node().Labels["test/value"], 10, 64); c.plugin == testFit && scores[0].Score != v*10 {
			t.Errorf("%s: node %s scored %d, want %d", c.plugin, infos[117].Node().Name, scores[0].Score, v*10)
		}
	}
}

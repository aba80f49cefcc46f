package adapter_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// staticCluster is the extender's view of a fixed cluster, computed as package cluster's cache
// computes it (Allocated: PodRequests summed, plus a pod count), to compare plugin mode's
// snapshot-backed Cluster with.
type staticCluster struct {
	nodes []*corev1.Node
	pods  []*corev1.Pod
}

func (c staticCluster) Node(name string) (*corev1.Node, bool) {
	for _, n := range c.nodes {
		if n.Name == name {
			return framework.NodeView(n), true
		}
	}
	return nil, false
}
func (c staticCluster) HasSynced() bool { return true }
func (c staticCluster) Nodes() []*corev1.Node {
	out := make([]*corev1.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = framework.NodeView(n)
	}
	return out
}
func (c staticCluster) Pods() []*corev1.Pod { return c.pods }
func (c staticCluster) Allocated(node string) framework.Amounts {
	a := framework.Amounts{}
	for _, p := range c.pods {
		if p.Spec.NodeName != node {
			continue
		}
		for name, q := range framework.PodRequests(p) {
			if v := framework.Amount(name, q); v != 0 {
				a[name] += v
			}
		}
		a[corev1.ResourcePods]++
	}
	return a
}

// agentCluster is a cluster every agent has something to say about: usage statistics for safe
// (some nodes too busy), congestion factors, template labels and scores, and pods bound to the
// nodes for pigeon.
func agentCluster() ([]*corev1.Node, []*corev1.Pod) { return agentClusterOf(12) }

// agentClusterOf is agentCluster's kind of cluster with count nodes, their statistics spread from the
// first node's to the last's (the twelfth's of agentCluster) over the whole list, and for counts other
// than 12 their pods too (none on the first quarter, three on the last), so that no run of nodes
// shorter than the list holds the whole range of any agent's values.
func agentClusterOf(count int) ([]*corev1.Node, []*corev1.Pod) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range count {
		x := float64(i) * 11 / float64(max(count-1, 1)) // 0..11, agentCluster's i for n = 12
		free := int64(16000 - 1400*x)                   // millicores free on average, of 16 cores
		node := fixtures.Node(i, map[string]string{
			"mean-free-cpu":            fmt.Sprint(free),
			"std-free-cpu":             fmt.Sprint(400 + 1200*(i%4)),
			"mean-free-memory":         fmt.Sprint(int64((60 - 4*x) * (1 << 30))),
			"std-free-memory":          fmt.Sprint(int64(1+i%3) << 28),
			"congestion-factor":        fmt.Sprint(i * 17 % 100),
			"template.extender/score":  fmt.Sprint(i % 11),
			"requested-cpu":            fmt.Sprint(int64(1000 * x)),
			"requested-memory":         fmt.Sprint(int64(x * (1 << 30))),
			"statistics-timestamp":     time.Now().UTC().Format(time.RFC3339), // fresh: safe ignores stale statistics
			"forcasted-free-cpu":       fmt.Sprint(free - 500),
			"forecasted-free-memory":   fmt.Sprint(int64((50 - 4*x) * (1 << 30))),
			"template.extender/unused": "x",
		})
		node.ResourceVersion = fmt.Sprint(100 + i)
		if i%5 == 4 {
			node.Labels["template.extender/allowed"] = "false"
		}
		nodes = append(nodes, &node)
		bound := i % 4
		if count != 12 {
			bound = int(x) / 3
		}
		for k := range bound {
			p := fixtures.Pod(fmt.Sprintf("bound-%d-%d", i, k), fmt.Sprintf("%dm", 500+700*k), fmt.Sprintf("%dMi", 256*(k+i%3+1)))
			p.Spec.NodeName = node.Name
			if k == 2 {
				p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
			}
			pods = append(pods, p)
		}
	}
	return nodes, pods
}

// TestAgentsAnswerAsTheExtender: every function of every agent (agents.All), run as a plugin
// with the agent's defaults on the scheduler's snapshot, rejects the nodes the extender handler
// rejects, with the same reasons, and scores every node 10 times what the handler answers; the
// extender's agents see the same cluster through a Cluster computed as the extender's cache
// computes it.
func TestAgentsAnswerAsTheExtender(t *testing.T) {
	nodes, pods := agentCluster()
	a := newAdapter(t, agents.All...)
	names := a.Names()
	// One plugin per function name its Registration offers.
	var want []string
	for _, r := range agents.All {
		want = append(want, r.Filters...)
		want = append(want, r.PrioritizerNames()...)
	}
	slices.Sort(want)
	if want = slices.Compact(want); !slices.Equal(names, want) || !slices.Contains(names, "telemetry-policy") {
		t.Fatalf("plugins %v, want %v", names, want)
	}
	cluster := staticCluster{nodes: nodes, pods: pods}
	handlers := map[string]http.Handler{}
	// Every agent of agents.All but those whose Offer says they answer from informers (pod
	// events, PodGroups, TASPolicies: framework.ClusterInformers), which are compared end to end,
	// against a real API server (e2e/plugins_test.go).
	var compared []string
	for _, r := range agents.All {
		if r.Cluster != framework.ClusterInformers {
			compared = append(compared, r.Name)
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { agent, _, _ := a.Describe(n); return !slices.Contains(compared, agent) })
	for _, r := range agents.All {
		if !slices.Contains(compared, r.Name) {
			continue
		}
		h := framework.NewHandle(nil)
		h.Cluster = cluster
		agent, err := r.New(r.NewConfig(), h)
		if err != nil {
			t.Fatal(err)
		}
		handlers[r.Name] = extendertest.NewHandler(t, extendertest.LookupOf(nodes), agent)
	}
	pod := fixtures.Pod("p", "1500m", "3Gi")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			agent, filter, score := a.Describe(name)
			h := handlers[agent]
			// One plugin per profile: each function is compared on its own.
			fw, snap := mustFramework(t, newAdapter(t, agents.All...), profileYAML("multiPoint:\n  enabled:\n  - name: "+name+"\n", ""), nodes, pods)
			state := schedframework.NewCycleState()
			rejected, feasible := filterAll(t, fw, snap, state, pod)
			if filter {
				ext := extendertest.Filter(t, h, name, extendertest.Args(pod, nodes, true))
				want := map[string]string{}
				for n, r := range ext.FailedNodes {
					want[n] = "Unschedulable: " + r
				}
				for n, r := range ext.FailedAndUnresolvableNodes {
					want[n] = "UnschedulableAndUnresolvable: " + r
				}
				got := map[string]string{}
				for n, s := range rejected {
					got[n] = s.Code().String() + ": " + strings.Join(s.Reasons(), "; ")
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("rejections (-extender +plugin):\n%s", diff)
				}
				if len(want) == 0 || len(feasible) == 0 {
					t.Fatalf("the cluster must make %s reject some nodes and pass others: rejected %v", name, want)
				}
				t.Logf("%s rejects %d of %d nodes, e.g. %s", name, len(want), len(nodes), firstValue(want))
			}
			if !score {
				return
			}
			infos, _ := snap.NodeInfos().List()
			got := scoreAll(t, fw, state, pod, infos)[name]
			want := map[string]int64{}
			for _, hp := range extendertest.Prioritize(t, h, name, extendertest.Args(pod, nodes, true)) {
				want[hp.Host] = hp.Score * 10
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("scores (-10*extender +plugin):\n%s", diff)
			}
			distinct := map[int64]bool{}
			for _, s := range got {
				distinct[s] = true
			}
			if len(distinct) < 3 {
				t.Fatalf("the cluster must give %s's scores some spread, got %v", name, got)
			}
		})
	}
}

func firstValue(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	return keys[0] + ": " + m[keys[0]]
}

// TestSignatures: a plugin signs pods for kube-scheduler's opportunistic batching, from the
// scheduler's start, unless its agent reads the whole cluster (pigeon-holing, which says so in its
// Registration: framework.Offer.WholeCluster): pods that differ only by name share a signature, pods an agent could tell apart do not. safe reads only the nodes it
// judges, and declares its adaptive filter's verdicts reusable (framework.Filter.Batchable).
func TestSignatures(t *testing.T) {
	nodes, pods := agentCluster()
	pod := func(name, cpu string) *corev1.Pod { return fixtures.Pod(name, cpu, "1Gi") }
	for _, tc := range []struct {
		plugins []string
		signs   bool
	}{
		{[]string{"congestion"}, true},
		{[]string{"template-label", "template-score"}, true},
		{[]string{"safe-overload", "pigeon-holing"}, false},
		// safe reads the nodes it judges: the load placed since a node's statistics, the
		// requests of a node without statistics.
		{[]string{"safe-overload", "congestion"}, true},
		{[]string{"safe-overload", "safe-balance"}, true},
	} {
		t.Run(strings.Join(tc.plugins, "+"), func(t *testing.T) {
			yaml := "multiPoint:\n  enabled:\n"
			for _, p := range tc.plugins {
				yaml += "  - name: " + p + "\n"
			}
			fw, snap := mustFramework(t, newAdapter(t, agents.All...), profileYAML(yaml, ""), nodes, pods)
			// kube-scheduler signs a pod as it enters the queue: a backlog queued at its start is
			// signed before any answer, from what the agents declare.
			if before, after := fw.SignPod(t.Context(), pod("a", "1")), fw.SignPod(t.Context(), pod("b", "1")); (before != nil) != tc.signs || string(before) != string(after) {
				t.Fatalf("before any answer: signatures a %s, b %s; want them equal, and present: %v", before, after, tc.signs)
			}
			state := schedframework.NewCycleState()
			_, feasible := filterAll(t, fw, snap, state, pod("a", "1"))
			scoreAll(t, fw, state, pod("a", "1"), feasible)
			a, b, c := fw.SignPod(t.Context(), pod("a", "1")), fw.SignPod(t.Context(), pod("b", "1")), fw.SignPod(t.Context(), pod("c", "2"))
			if !tc.signs {
				if a != nil {
					t.Fatalf("signed although %v reads the whole cluster: %s", tc.plugins, a)
				}
				return
			}
			if a == nil || string(a) != string(b) || string(a) == string(c) {
				t.Fatalf("signatures a %s, b %s, c %s: want a = b (only the names differ), c different (another request)", a, b, c)
			}
		})
	}
}

// TestSafeJudgesFromTheSnapshot: in plugin mode safe reads the scheduler's snapshot (issue 26).
// A node without statistics is scored from the requests of its pods, so an empty new node beats
// a node at 75 % measured cpu (before, it scored 0 in both priorities); and a pod assumed on a
// node after its statistics-timestamp adds its request to the node's measured usage.
func TestSafeJudgesFromTheSnapshot(t *testing.T) {
	stamp := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	busy := fixtures.Node(0, map[string]string{"mean-free-cpu": "4000", "std-free-cpu": "800", "statistics-timestamp": stamp})
	empty := fixtures.Node(1, nil)
	idle := fixtures.Node(2, map[string]string{"mean-free-cpu": "12000", "std-free-cpu": "400", "statistics-timestamp": stamp})
	target := fixtures.Node(3, map[string]string{"mean-free-cpu": "12000", "std-free-cpu": "400", "statistics-timestamp": stamp})
	nodes := []*corev1.Node{&busy, &empty, &idle, &target}
	for i, n := range nodes {
		n.ResourceVersion = fmt.Sprint(10 + i)
	}
	// 10 cpu placed on target since its statistics (no PodScheduled condition: assumed).
	placed := fixtures.Pod("placed", "10", "1Gi")
	placed.Spec.NodeName = target.Name
	// 8 cpu bound on busy before its statistics: in them already.
	old := fixtures.Pod("old", "8", "1Gi")
	old.Spec.NodeName = busy.Name
	old.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	pods := []*corev1.Pod{placed, old}
	pod := fixtures.Pod("p", "1", "1Gi")
	a := newAdapter(t, agents.All...)
	fw, snap := mustFramework(t, a, profileYAML("multiPoint:\n  enabled:\n  - name: safe-overload\n  - name: safe-balance\n", ""), nodes, pods)
	state := schedframework.NewCycleState()
	rejected, feasible := filterAll(t, fw, snap, state, pod)
	// target, as it is: (4000 + 10000)/16000 = 0.875 of cpu used; whether the filter rejects it
	// or not, it must not look as idle as idle.
	if len(rejected) > 1 {
		t.Fatalf("rejected %v", rejected)
	}
	got := scoreAll(t, fw, state, pod, feasible)
	o, b := got["safe-overload"], got["safe-balance"]
	t.Logf("safe-overload %v, safe-balance %v", o, b)
	if o[empty.Name] <= o[busy.Name] || b[empty.Name] <= b[busy.Name] {
		t.Errorf("the empty node without statistics does not beat the busy one: safe-overload %v, safe-balance %v", o, b)
	}
	if _, ok := rejected[target.Name]; !ok && !(o[target.Name] < o[idle.Name] && b[target.Name] < b[idle.Name]) {
		t.Errorf("the pod assumed on %s since its statistics does not count: safe-overload %v, safe-balance %v", target.Name, o, b)
	}
}

// TestRegistrationsDeclareWholeClusterReads: every agent whose functions read the whole cluster
// while judging a pod says so (framework.Offer.WholeCluster), since plugin mode signs pods for
// batching from what agents say, before any answer. Each agent's functions, with its defaults,
// judge a pod on agentCluster's nodes; a pod signed before must still be signed after, unless the
// agent says it reads the whole cluster (then it is signed neither before nor after).
// telemetry is not built here: it needs a client (its TASPolicy informers), and it reads no
// framework.Cluster at all (its own informers' nodes and policies, which no placement changes).
func TestRegistrationsDeclareWholeClusterReads(t *testing.T) {
	nodes, pods := agentCluster()
	needsClient := "telemetry"
	if !slices.ContainsFunc(agents.All, func(r framework.Registration) bool { return r.Name == needsClient }) {
		t.Errorf("agents.All has no %s", needsClient)
	}
	for _, reg := range agents.All {
		if reg.Name == needsClient {
			continue
		}
		t.Run(reg.Name, func(t *testing.T) {
			yaml := "multiPoint:\n  enabled:\n"
			for _, f := range slices.Compact(append(slices.Clone(reg.Filters), reg.PrioritizerNames()...)) {
				yaml += "  - name: " + f + "\n"
			}
			fw, snap := mustFramework(t, newAdapter(t, agents.All...), profileYAML(yaml, ""), nodes, pods)
			pod := fixtures.Pod("a", "1", "1Gi")
			before := fw.SignPod(t.Context(), pod)
			if reg.WholeCluster && before != nil {
				t.Fatalf("signed although the agent says it reads the whole cluster: %s", before)
			}
			state := schedframework.NewCycleState()
			_, feasible := filterAll(t, fw, snap, state, pod)
			if len(feasible) > 0 {
				scoreAll(t, fw, state, pod, feasible)
			}
			if after := fw.SignPod(t.Context(), pod); string(after) != string(before) {
				t.Fatalf("signature %s before judging the pod, %s after: the agent read the whole cluster without saying so (framework.Offer.WholeCluster)", before, after)
			}
		})
	}
}

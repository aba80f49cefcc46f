package adapter_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// readerAgent reads the cluster as told for every node its functions judge: its filter
// reader-fit passes every node, its prioritizer reader-score scores every node 5. Its filter may
// be declared WholeList, and Batchable.
type readerAgent struct {
	h                    framework.Handle
	read                 func(h framework.Handle, node string)
	reads                *atomic.Int64
	wholeList, batchable bool
}

func (a *readerAgent) Name() string { return "reader" }

func (a *readerAgent) Filters() []framework.Filter {
	return []framework.Filter{{Name: "reader-fit", WholeList: a.wholeList, Batchable: a.batchable,
		Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
			for _, n := range nodes {
				a.judge(n.Name)
			}
			return make([]framework.Verdict, len(nodes)), nil
		}}}
}

func (a *readerAgent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{{Name: "reader-score", Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
		out := make([]int64, len(nodes))
		for i, n := range nodes {
			a.judge(n.Name)
			out[i] = 5
		}
		return out, nil
	}}}
}

func (a *readerAgent) judge(node string) {
	if a.read != nil {
		a.read(a.h, node)
		a.reads.Add(1)
	}
}

// TestSignRule: plugin mode signs a pod for kube-scheduler's opportunistic batching, from the
// start (before any answer: a backlog queued at the scheduler's start), for an agent that reads
// no cluster or only the nodes it judges (their NodeInfo, which batching re-checks:
// framework.Cluster), and for a whole-list filter that declares its verdicts Batchable; it
// refuses for an agent that says it reads the whole cluster (framework.Offer.WholeCluster) and
// for a whole-list filter that declares nothing; and, once it has, for an agent that read the
// whole cluster (Nodes, Pods) without saying so.
func TestSignRule(t *testing.T) {
	nodeScoped := func(h framework.Handle, node string) {
		h.Cluster.Node(node)
		h.Cluster.Allocated(node)
		h.NodePods.PodsGeneration(node)
		h.NodePods.PodsOn(node)
	}
	for _, tc := range []struct {
		name                 string
		read                 func(h framework.Handle, node string)
		wholeList, batchable bool
		// declared: the Registration says WholeCluster; signsFirst: signed before any answer.
		declared          bool
		signsFirst, signs bool
	}{
		{name: "no read", signsFirst: true, signs: true},
		{name: "node-scoped reads", read: nodeScoped, signsFirst: true, signs: true},
		{name: "Nodes, undeclared", read: func(h framework.Handle, _ string) { h.Cluster.Nodes() }, signsFirst: true},
		{name: "Pods, undeclared", read: func(h framework.Handle, _ string) { h.Cluster.Pods() }, signsFirst: true},
		{name: "Nodes, declared", read: func(h framework.Handle, _ string) { h.Cluster.Nodes() }, declared: true},
		{name: "declared, no read", declared: true},
		{name: "node-scoped reads, then Nodes once", read: func(h framework.Handle, node string) {
			nodeScoped(h, node)
			if node == fixtures.NodeName(3) {
				h.Cluster.Nodes()
			}
		}, signsFirst: true},
		{name: "whole-list filter", wholeList: true},
		{name: "whole-list filter, batchable", wholeList: true, batchable: true, signsFirst: true, signs: true},
		{name: "whole-list filter, batchable, Pods", read: func(h framework.Handle, _ string) { h.Cluster.Pods() }, wholeList: true, batchable: true, signsFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := &atomic.Int64{}
			reg := framework.Register("reader", func() firstConfig { return firstConfig{} },
				func(_ firstConfig, h framework.Handle) (*readerAgent, error) {
					return &readerAgent{h: h, read: tc.read, reads: reads, wholeList: tc.wholeList, batchable: tc.batchable}, nil
				},
				framework.Offer{Filters: []string{"reader-fit"}, Prioritizers: []framework.Weighted{{Name: "reader-score", Weight: 1}}, WholeCluster: tc.declared})
			var nodes []*corev1.Node
			var pods []*corev1.Pod
			for i := range 6 {
				n := fixtures.Node(i, nil)
				nodes = append(nodes, &n)
				p := fixtures.Pod("placed-"+n.Name, "1", "1Gi")
				p.Spec.NodeName = n.Name
				pods = append(pods, p)
			}
			fw, snap := mustFramework(t, newAdapter(t, reg), profileYAML("multiPoint:\n  enabled:\n  - name: reader-fit\n  - name: reader-score\n", ""), nodes, pods)
			pod := func(name, cpu string) *corev1.Pod { return fixtures.Pod(name, cpu, "1Gi") }
			if sig := fw.SignPod(t.Context(), pod("a", "1")); (sig != nil) != tc.signsFirst {
				t.Fatalf("before any answer: signature %s, want one: %v", sig, tc.signsFirst)
			}
			state := schedframework.NewCycleState()
			_, feasible := filterAll(t, fw, snap, state, pod("a", "1"))
			if len(feasible) != len(nodes) {
				t.Fatalf("%d of %d nodes feasible, want all", len(feasible), len(nodes))
			}
			scoreAll(t, fw, state, pod("a", "1"), feasible)
			if tc.read != nil && reads.Load() == 0 {
				t.Fatal("the agent read nothing: the case tests nothing")
			}
			a := fw.SignPod(t.Context(), pod("a", "1"))
			if !tc.signs {
				if a != nil {
					t.Fatalf("signed: %s", a)
				}
				return
			}
			b, c := fw.SignPod(t.Context(), pod("b", "1")), fw.SignPod(t.Context(), pod("c", "2"))
			// d differs from a by its controller only: another workload, whose learned usage
			// (safe's estimate) may differ.
			d := pod("d", "1")
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f", UID: "rs-1", Controller: new(true)}}
			sigD := fw.SignPod(t.Context(), d)
			if a == nil || string(a) != string(b) || string(a) == string(c) || sigD == nil || string(a) == string(sigD) {
				t.Fatalf("signatures a %s, b %s, c %s, d %s: want a = b (only the names differ), c (another request) and d (another owner) different", a, b, c, sigD)
			}
		})
	}
}

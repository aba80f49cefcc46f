package adapter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// firstConfig configures firstAgent, which has no settings.
type firstConfig struct{}

func (firstConfig) Validate() error { return nil }

// firstAgent's filter keeps only the first node of each call: its verdicts depend on the whole
// list, which it declares (WholeList).
type firstAgent struct{}

func (firstAgent) Name() string { return "first" }
func (firstAgent) Filters() []framework.Filter {
	return []framework.Filter{{Name: "first-only", WholeList: true, Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
		out := make([]framework.Verdict, len(nodes))
		for i := 1; i < len(nodes); i++ {
			out[i] = framework.Reject("not the first node of the call")
		}
		return out, nil
	}}}
}
func (firstAgent) Prioritizers() []framework.Prioritizer { return nil }

// fortyNodes returns a framework with the filter plugin of reg enabled over 40 identical nodes,
// their infos in the snapshot's order, a pod, and its cycle state after PreFilter.
func fortyNodes(t *testing.T, reg framework.Registration, plugin string) (schedframework.Framework, []fwk.NodeInfo, *corev1.Pod, *schedframework.CycleState) {
	t.Helper()
	var nodes []*corev1.Node
	for i := range 40 {
		n := fixtures.MakeNode().Name(fmt.Sprintf("n%02d", i)).Resources(fixtures.Res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj()
		nodes = append(nodes, n)
	}
	fw, snap := mustFramework(t, newAdapter(t, reg), profileYAML("multiPoint:\n  enabled:\n  - name: "+plugin+"\n", ""), nodes, nil)
	infos, _ := snap.NodeInfos().List()
	pod := fixtures.MakePod().Name("p").Obj()
	state := schedframework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
	return fw, infos, pod, state
}

// TestWholeListFilterJudgesEveryNodeAtOnce: a filter whose verdicts depend on the other nodes
// of the call (framework.Filter.WholeList, as safe's adaptive filter) is judged over the whole
// node list in one call, not chunk by chunk: of 40 nodes (three chunks of 16 otherwise) exactly
// one passes.
func TestWholeListFilterJudgesEveryNodeAtOnce(t *testing.T) {
	reg := framework.Register("first", func() firstConfig { return firstConfig{} },
		func(firstConfig, framework.Handle) (firstAgent, error) { return firstAgent{}, nil },
		framework.Offer{Filters: []string{"first-only"}})
	fw, infos, pod, state := fortyNodes(t, reg, "first-only")
	passed := 0
	for i := len(infos) - 1; i >= 0; i-- { // the last chunk first
		if s := fw.RunFilterPlugins(t.Context(), state, pod, infos[i]); s.IsSuccess() {
			passed++
		}
	}
	if passed != 1 {
		t.Fatalf("%d of %d nodes passed, want 1 (the filter judged the nodes in several calls)", passed, len(infos))
	}
}

// listAgent's filter keeps only the first node of the whole list, as firstAgent's, and offers
// ForList: it records the calls it gets.
type listAgent struct{ calls *listCalls }

type listCalls struct {
	mu                 sync.Mutex
	forList, funcCalls int
	chunks, largest    int
	listLen            int
}

func (listAgent) Name() string { return "first-of-list" }
func (a listAgent) Filters() []framework.Filter {
	return []framework.Filter{{Name: "first-of-list", WholeList: true,
		Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
			a.calls.mu.Lock()
			a.calls.funcCalls++
			a.calls.mu.Unlock()
			return nil, fmt.Errorf("Func called: plugin mode should judge through ForList")
		},
		ForList: func(_ context.Context, _ *corev1.Pod, list []*corev1.Node) (framework.FilterFunc, error) {
			a.calls.mu.Lock()
			a.calls.forList++
			a.calls.listLen = len(list)
			a.calls.mu.Unlock()
			first := list[0].Name
			return func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
				a.calls.mu.Lock()
				a.calls.chunks++
				a.calls.largest = max(a.calls.largest, len(nodes))
				a.calls.mu.Unlock()
				out := make([]framework.Verdict, len(nodes))
				for i, n := range nodes {
					if n.Name != first {
						out[i] = framework.Reject("not the first node of the list")
					}
				}
				return out, nil
			}, nil
		}}}
}
func (listAgent) Prioritizers() []framework.Prioritizer { return nil }

// TestWholeListFilterForList: a whole-list filter that offers ForList sees the whole list once
// per cycle, then is judged chunk by chunk, only the chunks asked about: its verdicts are the
// whole list's (exactly one of 40 nodes passes, whichever order they are asked in), Func is
// never called, and asking about 10 nodes judges no more than their chunk.
func TestWholeListFilterForList(t *testing.T) {
	calls := &listCalls{}
	reg := framework.Register("first-of-list", func() firstConfig { return firstConfig{} },
		func(firstConfig, framework.Handle) (listAgent, error) { return listAgent{calls}, nil },
		framework.Offer{Filters: []string{"first-of-list"}})
	fw, infos, pod, state := fortyNodes(t, reg, "first-of-list")
	passed := 0
	for i := len(infos) - 1; i >= 0; i-- { // the last chunk first
		if s := fw.RunFilterPlugins(t.Context(), state, pod, infos[i]); s.IsSuccess() {
			passed++
			if infos[i].Node() != infos[0].Node() {
				t.Errorf("node %s passed, want only the list's first, %s", infos[i].Node().Name, infos[0].Node().Name)
			}
		} else if s.Code() == fwk.Error {
			t.Fatal(s)
		}
	}
	if passed != 1 || calls.forList != 1 || calls.funcCalls != 0 || calls.listLen != 40 || calls.largest > 16 || calls.chunks != 3 {
		t.Fatalf("%d of %d nodes passed (want 1); calls %+v (want one ForList of 40 nodes, no Func, three chunks of at most 16)",
			passed, len(infos), calls)
	}

	state = schedframework.NewCycleState() // the next pod: the scheduler asks about 10 nodes
	if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
	for _, ni := range infos[20:30] {
		if s := fw.RunFilterPlugins(t.Context(), state, pod, ni); s.IsSuccess() || s.Code() == fwk.Error {
			t.Fatalf("node %s: %v, want rejected", ni.Node().Name, s)
		}
	}
	if calls.forList != 2 || calls.chunks != 4 {
		t.Fatalf("calls %+v, want a second ForList and the one chunk of nodes 20-29 (16-31) only", calls)
	}
}

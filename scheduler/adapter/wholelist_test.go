package adapter_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/fixtures"
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

// TestWholeListFilterJudgesEveryNodeAtOnce: a filter whose verdicts depend on the other nodes
// of the call (framework.Filter.WholeList, as safe's adaptive filter) is judged over the whole
// node list in one call, not chunk by chunk: of 40 nodes (three chunks of 16 otherwise) exactly
// one passes.
func TestWholeListFilterJudgesEveryNodeAtOnce(t *testing.T) {
	reg := framework.Register("first", func() firstConfig { return firstConfig{} },
		func(firstConfig, framework.Handle) (firstAgent, error) { return firstAgent{}, nil },
		framework.Offer{Filters: []string{"first-only"}})
	var nodes []*corev1.Node
	for i := range 40 {
		n := fixtures.MakeNode().Name(fmt.Sprintf("n%02d", i)).Resources(fixtures.Res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj()
		nodes = append(nodes, n)
	}
	fw, snap := mustFramework(t, newAdapter(t, reg), profileYAML("multiPoint:\n  enabled:\n  - name: first-only\n", ""), nodes, nil)
	infos, _ := snap.NodeInfos().List()
	pod := fixtures.MakePod().Name("p").Obj()
	state := schedframework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
		t.Fatal(s)
	}
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

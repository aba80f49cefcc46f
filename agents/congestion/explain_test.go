package congestion

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// Explain shows the factor the score used, and the raw annotation when it read as 0.
func TestExplain(t *testing.T) {
	a, err := New(Config{FactorMax: 100}, framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*corev1.Node{
		fixtures.MakeNode().Name("a").Annotations(map[string]string{Annotation: "40"}).Obj(),
		fixtures.MakeNode().Name("b").Annotations(map[string]string{Annotation: "lots"}).Obj(),
		fixtures.MakeNode().Name("c").Obj(),
	}
	got := a.Explain(context.Background(), PriorityCongestion, "prioritize", nil, nodes)
	want := []framework.Inputs{
		{"factor": int64(40), "factorMax": int64(100)},
		{"factor": int64(0), "factorMax": int64(100), "annotation": "lots"},
		{"factor": int64(0), "factorMax": int64(100)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

package template

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/fixtures"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

func defaultAgent(t *testing.T, env map[string]string) *Agent {
	t.Helper()
	cfg, err := settingstest.Bind(DefaultConfig(), env)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFilterLabel(t *testing.T) {
	a := defaultAgent(t, nil)
	nodes := []*corev1.Node{
		fixtures.MakeNode().Name("yes").Label("template.extender/allowed", "true").Obj(),
		fixtures.MakeNode().Name("no").Label("template.extender/allowed", "false").Obj(),
		fixtures.MakeNode().Name("none").Obj(),
	}
	got, err := a.filterLabel(context.Background(), &corev1.Pod{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := []framework.Verdict{
		{},
		framework.Reject(`label template.extender/allowed is "false", not "true"`),
		framework.Reject("node has no label template.extender/allowed"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
}

func TestFilterLabelConfigured(t *testing.T) {
	a := defaultAgent(t, map[string]string{"TEMPLATE_LABEL": "zone", "TEMPLATE_LABEL_VALUE": "blue"})
	got, err := a.filterLabel(context.Background(), &corev1.Pod{}, []*corev1.Node{
		fixtures.MakeNode().Name("blue").Label("zone", "blue").Obj(),
		fixtures.MakeNode().Name("red").Label("zone", "red").Obj(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].Passes() || got[1].Passes() {
		t.Errorf("verdicts %+v: want blue to pass and red to fail", got)
	}
}

func TestScore(t *testing.T) {
	a := defaultAgent(t, nil)
	key := "template.extender/score"
	nodes := []*corev1.Node{
		fixtures.MakeNode().Name("seven").Annotation(key, "7").Obj(),
		fixtures.MakeNode().Name("high").Annotation(key, "99").Obj(),  // clamped to 10
		fixtures.MakeNode().Name("low").Annotation(key, "-4").Obj(),   // clamped to 0
		fixtures.MakeNode().Name("junk").Annotation(key, "7.5").Obj(), // not an integer: 0
		fixtures.MakeNode().Name("none").Obj(),                        // no annotation: 0
		fixtures.MakeNode().Name("spaced").Annotation(key, " 3 ").Obj(),
	}
	got, err := a.score(context.Background(), &corev1.Pod{}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{7, 10, 0, 0, 0, 3}, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestInvalidConfig(t *testing.T) {
	_, err := settingstest.Bind(DefaultConfig(), map[string]string{"TEMPLATE_LABEL": "not a key!"})
	if err == nil || !strings.Contains(err.Error(), "invalid TEMPLATE_LABEL (or --template-label)") {
		t.Errorf("err = %v, want it to name TEMPLATE_LABEL", err)
	}
	_, err = New(Config{LabelKey: "", ScoreAnnotation: "x"}, framework.NewHandle(nil))
	if err == nil || !strings.Contains(err.Error(), "labelKey: ") {
		t.Errorf("New accepted an empty label key or did not name the field: %v", err)
	}
}

package template

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

func makeNode(name string, labels, annotations map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
}

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
		makeNode("yes", map[string]string{"template.extender/allowed": "true"}, nil),
		makeNode("no", map[string]string{"template.extender/allowed": "false"}, nil),
		makeNode("none", nil, nil),
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
		makeNode("blue", map[string]string{"zone": "blue"}, nil),
		makeNode("red", map[string]string{"zone": "red"}, nil),
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
		makeNode("seven", nil, map[string]string{key: "7"}),
		makeNode("high", nil, map[string]string{key: "99"}),  // clamped to 10
		makeNode("low", nil, map[string]string{key: "-4"}),   // clamped to 0
		makeNode("junk", nil, map[string]string{key: "7.5"}), // not an integer: 0
		makeNode("none", nil, nil),                           // no annotation: 0
		makeNode("spaced", nil, map[string]string{key: " 3 "}),
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

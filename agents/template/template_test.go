package template

// The model of an agent's tests: one table per function, one t.Run per case, each case saying
// why its answer is what it is; fixtures from the shared builders (internal/testkit/fixtures); results
// compared whole with cmp.Diff. Configuration comes in as the program reads it, from variables
// (settingstest.Bind), so that the tests also cover the env tags.

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

// newAgent builds the agent from the defaults overridden by env, as the extender would.
func newAgent(t *testing.T, env map[string]string) *Agent {
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

const (
	allowed  = "template.extender/allowed" // the default LabelKey
	scoreKey = "template.extender/score"   // the default ScoreAnnotation
)

func TestFilterLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		node *corev1.Node
		want framework.Verdict
	}{
		{
			// The default label with the default value "true": the node passes.
			name: "label has the value",
			node: fixtures.MakeNode().Name("n").Label(allowed, "true").Obj(),
			want: framework.Verdict{},
		},
		{
			// "false" != "true": rejected, and the reason names the label and both values.
			name: "label has another value",
			node: fixtures.MakeNode().Name("n").Label(allowed, "false").Obj(),
			want: framework.Reject(`label template.extender/allowed is "false", not "true"`),
		},
		{
			// No label at all is a rejection of its own, saying the label is missing.
			name: "no label",
			node: fixtures.MakeNode().Name("n").Obj(),
			want: framework.Reject("node has no label template.extender/allowed"),
		},
		{
			// TEMPLATE_LABEL=zone, TEMPLATE_LABEL_VALUE=blue: zone=blue passes.
			name: "configured label, matching",
			env:  map[string]string{"TEMPLATE_LABEL": "zone", "TEMPLATE_LABEL_VALUE": "blue"},
			node: fixtures.MakeNode().Name("n").Label("zone", "blue").Obj(),
			want: framework.Verdict{},
		},
		{
			// zone=red != blue; the default label, present, no longer counts.
			name: "configured label, not matching",
			env:  map[string]string{"TEMPLATE_LABEL": "zone", "TEMPLATE_LABEL_VALUE": "blue"},
			node: fixtures.MakeNode().Name("n").Label("zone", "red").Label(allowed, "true").Obj(),
			want: framework.Reject(`label zone is "red", not "blue"`),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, tc.env)
			got, err := a.filterLabel(context.Background(), fixtures.MakePod().Name("p").Obj(), []*corev1.Node{tc.node})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]framework.Verdict{tc.want}, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScore(t *testing.T) {
	for _, tc := range []struct {
		name       string
		annotation *string // nil: the node has no annotation
		want       int64
	}{
		// An integer in 0..10 is the score as it is.
		{name: "in range", annotation: ptr("7"), want: 7},
		// min(99, MaxScore=10) = 10.
		{name: "above the maximum", annotation: ptr("99"), want: 10},
		// max(-4, 0) = 0.
		{name: "negative", annotation: ptr("-4"), want: 0},
		// Spaces around the number are trimmed: " 3 " reads 3.
		{name: "spaces", annotation: ptr(" 3 "), want: 3},
		// "7.5" is not an integer: unreadable, 0 (the node is not rejected: scoring never is).
		{name: "not an integer", annotation: ptr("7.5"), want: 0},
		// No annotation: 0.
		{name: "none", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t, nil)
			b := fixtures.MakeNode().Name("n")
			if tc.annotation != nil {
				b = b.Annotation(scoreKey, *tc.annotation)
			}
			got, err := a.score(context.Background(), fixtures.MakePod().Name("p").Obj(), []*corev1.Node{b.Obj()})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{tc.want}, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		// want are what the error must contain; none: no error.
		want []string
	}{
		// The defaults are valid.
		{name: "defaults"},
		// A space is not allowed in a label key: the error names the variable and the flag.
		{name: "bad label key", env: map[string]string{"TEMPLATE_LABEL": "not a key!"},
			want: []string{`invalid TEMPLATE_LABEL (or --template-label): "not a key!" is not a valid label or annotation key`}},
		// An empty key is not a key either.
		{name: "empty annotation", env: map[string]string{"TEMPLATE_SCORE_ANNOTATION": ""},
			want: []string{"invalid TEMPLATE_SCORE_ANNOTATION (or --template-score-annotation)"}},
		// Both bad: both reported, not only the first.
		{name: "two bad fields", env: map[string]string{"TEMPLATE_LABEL": "a b", "TEMPLATE_SCORE_ANNOTATION": "c d"},
			want: []string{`invalid TEMPLATE_LABEL (or --template-label): "a b"`, `invalid TEMPLATE_SCORE_ANNOTATION (or --template-score-annotation): "c d"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := settingstest.Bind(DefaultConfig(), tc.env)
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one containing %q", err, w)
				}
			}
		})
	}
	// The constructor checks too (it is the one check, for every program), naming the JSON field.
	if _, err := New(Config{LabelKey: "", ScoreAnnotation: "x"}, framework.NewHandle(nil)); err == nil || !strings.Contains(err.Error(), "labelKey: ") {
		t.Errorf("New: error %v, want one naming labelKey", err)
	}
}

func ptr(s string) *string { return &s }

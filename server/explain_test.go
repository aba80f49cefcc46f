package server

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// explainingAgent is testAgent with framework.Explainer: it reports each node's score label as
// what it saw, for its label functions only, and one entry too few for a node named "short".
type explainingAgent struct {
	testAgent
	calls *int
}

func (a explainingAgent) Explain(_ context.Context, function, verb string, _ *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	*a.calls++
	if function != "label" {
		return nil
	}
	out := make([]framework.Inputs, 0, len(nodes))
	for _, n := range nodes {
		if n.Name == "short" {
			continue
		}
		out = append(out, framework.Inputs{"score label": n.Labels["score"], "verb": verb})
	}
	return out
}

func explainingFixture(t *testing.T, kept int) (*fixture, *int) {
	t.Helper()
	calls := 0
	h, err := New([]framework.Agent{explainingAgent{calls: &calls}}, Options{Log: logrus.New(), Registry: prometheus.NewRegistry(),
		Lookup: nodesLookup(sampleNodes()), Decisions: decisions.Config{Kept: kept, InputsBytes: decisions.DefaultInputsBytes}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, handler: h, logs: &bytes.Buffer{}}, &calls
}

// An agent that explains shows, for each node of a kept decision, what it saw, beside the node
// it saw it of (a node unknown to the cache has none); an answer of the wrong length shows
// nothing; with decisions off the agent is never asked.
func TestDecisionInputs(t *testing.T) {
	f, calls := explainingFixture(t, 10)
	f.post("/scheduler/predicates/label", nameArgs("a", "ghost", "b"))
	f.post("/scheduler/priorities/label", nameArgs("c", "a"))
	got := decode[decisionsAnswer](t, getDecisions(t, f, "", "127.0.0.1:5555", nil))
	want := decisionsAnswer{Capacity: 10, Decisions: []decisionJSON{
		{Pod: "ns/p", Agent: "test", Function: "label", Verb: "prioritize", Nodes: []nodeDecision{
			{Node: "c", Score: score(0), Inputs: framework.Inputs{"score label": "-3", "verb": "prioritize"}},
			{Node: "a", Score: score(7), Inputs: framework.Inputs{"score label": "7", "verb": "prioritize"}}}},
		{Pod: "ns/p", Agent: "test", Function: "label", Verb: "filter", Nodes: []nodeDecision{
			{Node: "a", Verdict: "pass", Inputs: framework.Inputs{"score label": "7", "verb": "filter"}},
			{Node: "ghost", Verdict: "fail", Reason: reasonUnknownNode},
			{Node: "b", Verdict: "fail", Reason: "too hot", Inputs: framework.Inputs{"score label": "12", "verb": "filter"}}}},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(decisionJSON{}, "Time")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// The wrong number of entries: the decision is kept without inputs.
	shortNodes := append(sampleNodes(), *sampleNodes()[0].DeepCopy())
	shortNodes[3].Name = "short"
	f.post("/scheduler/priorities/label", fullArgs(shortNodes))
	got = decode[decisionsAnswer](t, getDecisions(t, f, "?limit=1", "127.0.0.1:5555", nil))
	for _, n := range got.Decisions[0].Nodes {
		if n.Inputs != nil {
			t.Errorf("node %s shows inputs %v from an answer of the wrong length", n.Node, n.Inputs)
		}
	}

	off, calls := explainingFixture(t, 0)
	off.post("/scheduler/predicates/label", nameArgs("a"))
	if *calls != 0 {
		t.Errorf("the agent was asked %d times with decisions off", *calls)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/agents/congestion"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/server"
)

// explainTarget serves the congestion agent through the real server on a loopback listener.
func explainTarget(t *testing.T) *httptest.Server {
	t.Helper()
	a, err := congestion.New(congestion.Config{FactorMax: 100}, framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New([]framework.Agent{a}, server.Options{Log: logrus.New(), Registry: prometheus.NewRegistry(), Decisions: decisions.Config{Kept: 10, InputsBytes: decisions.DefaultInputsBytes}})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func prioritizeAt(t *testing.T, base, pod string, factors map[string]string) {
	t.Helper()
	var nodes []corev1.Node
	for _, n := range []string{"calm", "jammed"} {
		nodes = append(nodes, *fixtures.MakeNode().Name(n).Annotations(map[string]string{congestion.Annotation: factors[n]}).Obj())
	}
	b, _ := json.Marshal(extenderv1.ExtenderArgs{Pod: fixtures.MakePod().Name(pod).Namespace("default").Obj(), Nodes: &corev1.NodeList{Items: nodes}})
	resp, err := http.Post(base+"/scheduler/priorities/"+congestion.PriorityCongestion, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("prioritize: %s", resp.Status)
	}
}

// explain prints the pod's last decision from a real server: the scores, weighted, the sum and
// the factor the agent saw of each node; another pod's decisions are not shown.
func TestExplainCommand(t *testing.T) {
	s := explainTarget(t)
	prioritizeAt(t, s.URL, "web", map[string]string{"calm": "10", "jammed": "90"})
	prioritizeAt(t, s.URL, "other", map[string]string{"calm": "50", "jammed": "50"})
	var out, errOut bytes.Buffer
	if code := explain(context.Background(), []string{"--url", s.URL, "--weights", "congestion=3", "web"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := out.String()
	t.Log("\n" + got)
	// Score(10, 100) = 9, Score(90, 100) = 1 (congestion's README): sums 27 and 3.
	for _, want := range []string{"Pod default/web", "congestion (w3)", "Σ w·score",
		"calm    9", "27", "jammed  1", "What the agents saw:", "factor=10 factorMax=100", "factor=90 factorMax=100"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(got, "factor=50") {
		t.Error("output shows the other pod's decision")
	}
	if strings.Index(got, "calm") > strings.Index(got, "jammed") {
		t.Error("the best node is not first")
	}
	// docs/operations.md gives the pod first and the flags after it: the same explanation.
	for _, args := range [][]string{
		{"web", "--url", s.URL, "--weights", "congestion=3"},
		{"--url", s.URL, "default/web", "--weights=congestion=3"},
	} {
		var after, errAfter bytes.Buffer
		if code := explain(context.Background(), args, &after, &errAfter); code != 0 || after.String() != got {
			t.Errorf("explain %q: exit %d (%s), output\n%s\nwant the output of the flags first", args, code, errAfter.String(), after.String())
		}
	}
}

// Usage errors and a target keeping no decisions are reported by name.
func TestExplainErrors(t *testing.T) {
	s := explainTarget(t)
	notExtender := httptest.NewServer(http.NotFoundHandler())
	defer notExtender.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "give exactly one pod"},
		{[]string{"a", "--url", s.URL, "b"}, 2, "give exactly one pod, as NAMESPACE/NAME or NAME (in default); got 2: a b"},
		{[]string{"p", "--url", s.URL, "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"--weights", "congestion=0", "p"}, 2, `"congestion=0" is not function=weight`},
		{[]string{"--url", "ftp://x", "p"}, 1, `"ftp://x" is not an http or https URL`},
		{[]string{"--url", notExtender.URL, "p"}, 1, "for kube-safe-scheduler, plugin mode, give --scheduler"},
		{[]string{"--url", s.URL, "nobody"}, 1, "no decision about default/nobody is kept"},
	} {
		var out, errOut bytes.Buffer
		code := explain(context.Background(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("explain %v: exit %d, %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}

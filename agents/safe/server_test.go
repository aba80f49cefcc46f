package safe

import (
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// TestRequestForms sends the same nodes as full Node objects and as names: the verdicts,
// reasons and scores must be the same.
func TestRequestForms(t *testing.T) {
	nodes := []*corev1.Node{
		fixtureNode("none").Obj(),
		fixtureNode("quiet").Annotations(ann{nodestats.MeanFreeCPU: "3000", nodestats.StdFreeCPU: "200"}).Obj(),
		fixtureNode("busy").Annotations(ann{nodestats.MeanFreeCPU: "600"}).Obj(),
		fixtureNode("forecast").Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.ForcastedFreeCPU: "200"}).Obj(),
		fixtureNode("zero").Allocatable(fixtures.Res{corev1.ResourceCPU: "0"}).
			Annotations(ann{nodestats.MeanFreeCPU: "3000"}).Obj(),
		fixtureNode("beta").Annotations(ann{nodestats.MeanFreeCPU: "2800", nodestats.StdFreeCPU: "800",
			nodestats.MeanFreeMemory: "5600", nodestats.StdFreeMemory: "1600"}).Obj(),
	}
	nodes = append(nodes, benchNodes(40)...)
	a := newAgent(t, config(func(c *Config) { c.Filter = FilterPod }), nil)
	h := extendertest.NewHandler(t, extendertest.LookupOf(nodes), a)
	pod := makePod("400m", "800")
	full, names := extendertest.Args(pod, nodes, false), extendertest.Args(pod, nodes, true)

	rf := extendertest.Filter(t, h, FilterOverload, full)
	rn := extendertest.Filter(t, h, FilterOverload, names)
	if rf.Error != "" || rn.Error != "" || rf.Nodes == nil || rn.NodeNames == nil {
		t.Fatalf("answers: %+v / %+v", rf, rn)
	}
	var passedFull []string
	for _, n := range rf.Nodes.Items {
		passedFull = append(passedFull, n.Name)
	}
	if diff := cmp.Diff(passedFull, *rn.NodeNames); diff != "" {
		t.Errorf("passing nodes differ (-full +names):\n%s", diff)
	}
	if diff := cmp.Diff(rf.FailedNodes, rn.FailedNodes); diff != "" {
		t.Errorf("failed nodes differ (-full +names):\n%s", diff)
	}
	// The arithmetic of TestFilterOverload, through the wire.
	want := map[string]string{
		"busy":     "cpu risk 1.00 > 0.30 (mu 0.95, sigma 0.00, threshold 0.90)",
		"forecast": "cpu risk 1.00 > 0.30 (mu 0.93, sigma 0.00, threshold 0.90)",
		"zero":     "allocatable cpu is zero or missing: its risk cannot be judged",
	}
	for name, reason := range want {
		if got := rn.FailedNodes[name]; got != reason {
			t.Errorf("node %s: reason %q, want %q", name, got, reason)
		}
	}
	if len(rf.FailedNodes)+len(passedFull) != len(nodes) {
		t.Errorf("%d failed + %d passed != %d nodes", len(rf.FailedNodes), len(passedFull), len(nodes))
	}
	for _, name := range []string{"none", "quiet"} {
		if _, failed := rn.FailedNodes[name]; failed {
			t.Errorf("node %s failed", name)
		}
	}

	for _, p := range []string{PriorityOverload, PriorityBalance} {
		sf := extendertest.Prioritize(t, h, p, full)
		sn := extendertest.Prioritize(t, h, p, names)
		if diff := cmp.Diff(sf, sn); diff != "" {
			t.Errorf("%s scores differ (-full +names):\n%s", p, diff)
		}
		if len(sn) != len(nodes) {
			t.Errorf("%s: %d scores for %d nodes", p, len(sn), len(nodes))
		}
	}
}

// TestRoutes checks the three routes exist and only those.
func TestRoutes(t *testing.T) {
	a := newAgent(t, DefaultConfig(), nil)
	var got []string
	for _, f := range a.Filters() {
		got = append(got, "/scheduler/predicates/"+f.Name)
	}
	for _, p := range a.Prioritizers() {
		got = append(got, "/scheduler/priorities/"+p.Name)
	}
	sort.Strings(got)
	want := []string{"/scheduler/predicates/safe-overload", "/scheduler/priorities/safe-balance", "/scheduler/priorities/safe-overload"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

// BenchmarkHTTP measures each function through the HTTP handler, request decoding and answer
// encoding included (httptest, no network): NodeNames at 500 and 5000 nodes, full Nodes at 500.
func BenchmarkHTTP(b *testing.B) {
	a := newAgent(b, DefaultConfig(), nil)
	pod := makePod("500m", "1Gi")
	routes := []string{"/scheduler/predicates/" + FilterOverload, "/scheduler/priorities/" + PriorityOverload,
		"/scheduler/priorities/" + PriorityBalance}
	for _, c := range []struct {
		n     int
		names bool
	}{{500, true}, {5000, true}, {500, false}} {
		nodes := benchNodes(c.n)
		h := extendertest.NewHandler(b, extendertest.LookupOf(nodes), a)
		body := extendertest.Body(b, extendertest.Args(pod, nodes, c.names))
		form := "names"
		if !c.names {
			form = "nodes"
		}
		for _, route := range routes {
			b.Run(route[len("/scheduler/"):]+"/"+form+"/"+strconv.Itoa(c.n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					extendertest.Post(b, h, route, body)
				}
			})
		}
	}
}

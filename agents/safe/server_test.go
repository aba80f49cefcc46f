package safe

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/server"
)

// lookup is the fake node cache behind NodeNames requests.
type lookup map[string]*corev1.Node

func (l lookup) Node(name string) (*corev1.Node, bool) { n, ok := l[name]; return n, ok }

func newHandler(t testing.TB, a framework.Agent, nodes []*corev1.Node) http.Handler {
	t.Helper()
	l := lookup{}
	for _, n := range nodes {
		l[n.Name] = n
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	h, err := server.New([]framework.Agent{a}, server.Options{Lookup: l, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// requestBody encodes ExtenderArgs for pod and nodes, as full Node objects or as names.
func requestBody(t testing.TB, pod *corev1.Pod, nodes []*corev1.Node, names bool) []byte {
	t.Helper()
	args := extenderv1.ExtenderArgs{Pod: pod}
	if names {
		list := make([]string, len(nodes))
		for i, n := range nodes {
			list[i] = n.Name
		}
		args.NodeNames = &list
	} else {
		args.Nodes = &corev1.NodeList{}
		for _, n := range nodes {
			args.Nodes.Items = append(args.Nodes.Items, *n)
		}
	}
	body, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func post(t testing.TB, h http.Handler, path string, body []byte, out any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, rec.Body)
	}
}

// TestRequestForms sends the same nodes as full Node objects and as names: the verdicts,
// reasons and scores must be the same.
func TestRequestForms(t *testing.T) {
	nodes := []*corev1.Node{
		makeNode("none", nodeCPU, nodeMemory, nil),
		makeNode("quiet", nodeCPU, nodeMemory, ann{AnnotationMeanFreeCPU: "3000", AnnotationStdFreeCPU: "200"}),
		makeNode("busy", nodeCPU, nodeMemory, ann{AnnotationMeanFreeCPU: "600"}),
		makeNode("forecast", nodeCPU, nodeMemory, ann{AnnotationMeanFreeCPU: "800", AnnotationForecastFreeCPULegacy: "200"}),
		makeNode("zero", "0", nodeMemory, ann{AnnotationMeanFreeCPU: "3000"}),
		makeNode("beta", nodeCPU, nodeMemory, ann{AnnotationMeanFreeCPU: "2800", AnnotationStdFreeCPU: "800",
			AnnotationMeanFreeMemory: "5600", AnnotationStdFreeMemory: "1600"}),
	}
	nodes = append(nodes, benchNodes(40)...)
	a := newAgent(t, DefaultConfig(), nil)
	h := newHandler(t, a, nodes)
	pod := makePod("400m", "800")
	full, names := requestBody(t, pod, nodes, false), requestBody(t, pod, nodes, true)

	var rf, rn extenderv1.ExtenderFilterResult
	post(t, h, "/scheduler/predicates/"+FilterOverload, full, &rf)
	post(t, h, "/scheduler/predicates/"+FilterOverload, names, &rn)
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
		var sf, sn extenderv1.HostPriorityList
		post(t, h, "/scheduler/priorities/"+p, full, &sf)
		post(t, h, "/scheduler/priorities/"+p, names, &sn)
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
		h := newHandler(b, a, nodes)
		body := requestBody(b, pod, nodes, c.names)
		form := "names"
		if !c.names {
			form = "nodes"
		}
		for _, route := range routes {
			b.Run(route[len("/scheduler/"):]+"/"+form+"/"+strconv.Itoa(c.n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, route, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatal(rec.Code, rec.Body)
					}
				}
			})
		}
	}
}

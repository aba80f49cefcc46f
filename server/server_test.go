package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// testAgent is an agent whose functions are driven by node labels, so a test states the
// expected answer in the nodes it builds:
//   - filter "label": rejects a node labelled reject=<reason>, and marks it unresolvable when
//     it is also labelled unresolvable=true;
//   - priority "label": the node's score label, parsed as an integer (may be out of range);
//   - filter "panic" and priority "panic": panic;
//   - filter "error" and priority "error": return an error;
//   - filter "short": returns one verdict too few.
type testAgent struct{}

func (testAgent) Name() string { return "test" }

func (testAgent) Filters() []framework.Filter {
	return []framework.Filter{
		{Name: "label", Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
			out := make([]framework.Verdict, len(nodes))
			for i, n := range nodes {
				if r := n.Labels["reject"]; r != "" {
					out[i] = framework.Verdict{Reason: r, Unresolvable: n.Labels["unresolvable"] == "true"}
				}
			}
			return out, nil
		}},
		{Name: "panic", Func: func(context.Context, *corev1.Pod, []*corev1.Node) ([]framework.Verdict, error) {
			panic("agent bug")
		}},
		{Name: "error", Func: func(context.Context, *corev1.Pod, []*corev1.Node) ([]framework.Verdict, error) {
			return nil, errors.New("metrics source unreachable")
		}},
		{Name: "short", Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
			return make([]framework.Verdict, max(len(nodes)-1, 0)), nil
		}},
	}
}

func (testAgent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{
		{Name: "label", Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
			out := make([]int64, len(nodes))
			for i, n := range nodes {
				fmt.Sscan(n.Labels["score"], &out[i])
			}
			return out, nil
		}},
		{Name: "panic", Func: func(context.Context, *corev1.Pod, []*corev1.Node) ([]int64, error) {
			panic(fmt.Errorf("agent bug in prioritize"))
		}},
		{Name: "error", Func: func(context.Context, *corev1.Pod, []*corev1.Node) ([]int64, error) {
			return nil, errors.New("metrics source unreachable")
		}},
	}
}

// lookup is a NodeLookup over a fixed set of nodes.
type lookup map[string]*corev1.Node

func (l lookup) Node(name string) (*corev1.Node, bool) { n, ok := l[name]; return n, ok }

// sampleNodes: a passes with score 7, b is rejected (reason "too hot") with score 12 (clamped to
// 10), c is rejected as unresolvable with score -3 (clamped to 0).
func sampleNodes() []corev1.Node {
	return []corev1.Node{
		*fixtures.MakeNode().Name("a").Label("score", "7").Obj(),
		*fixtures.MakeNode().Name("b").Label("reject", "too hot").Label("score", "12").Obj(),
		*fixtures.MakeNode().Name("c").Label("reject", "no gpu").Label("unresolvable", "true").Label("score", "-3").Obj(),
	}
}

type fixture struct {
	t       testing.TB
	handler http.Handler
	reg     *prometheus.Registry
	logs    *bytes.Buffer
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	logs := &bytes.Buffer{}
	log := logrus.New()
	log.SetOutput(logs)
	log.SetLevel(logrus.DebugLevel)
	opts.Log = log
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	h, err := New([]framework.Agent{testAgent{}}, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &fixture{t: t, handler: h, reg: opts.Registry, logs: logs}
}

func (f *fixture) do(method, path, contentType string, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

func (f *fixture) post(path string, v any) *httptest.ResponseRecorder {
	b, err := json.Marshal(v)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.do(http.MethodPost, path, "application/json", bytes.NewReader(b))
}

func fullArgs(nodes []corev1.Node) extenderv1.ExtenderArgs {
	return extenderv1.ExtenderArgs{Pod: fixtures.MakePod().Name("p").Namespace("ns").UID("uid-p").Obj(), Nodes: &corev1.NodeList{Items: nodes}}
}

func nameArgs(names ...string) extenderv1.ExtenderArgs {
	return extenderv1.ExtenderArgs{Pod: fixtures.MakePod().Name("p").Namespace("ns").UID("uid-p").Obj(), NodeNames: &names}
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, body %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decoding %s: %v", rec.Body, err)
	}
	return v
}

func errorOf(t *testing.T, rec *httptest.ResponseRecorder, status int) string {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
		t.Fatalf("error body %q is not {\"Error\": ...}: %v", rec.Body, err)
	}
	return e.Error
}

func nodesLookup(nodes []corev1.Node) lookup {
	l := lookup{}
	for i := range nodes {
		l[nodes[i].Name] = &nodes[i]
	}
	return l
}

func TestFilterFullNodes(t *testing.T) {
	f := newFixture(t, Options{})
	res := decode[extenderv1.ExtenderFilterResult](t, f.post("/scheduler/predicates/label", fullArgs(sampleNodes())))

	if res.Nodes == nil || len(res.Nodes.Items) != 1 || res.Nodes.Items[0].Name != "a" {
		t.Errorf("passing Nodes = %+v, want only a", res.Nodes)
	}
	if res.NodeNames != nil {
		t.Errorf("NodeNames = %v, want nil for a full-node request", *res.NodeNames)
	}
	if diff := cmp.Diff(extenderv1.FailedNodesMap{"b": "too hot"}, res.FailedNodes); diff != "" {
		t.Errorf("FailedNodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(extenderv1.FailedNodesMap{"c": "no gpu"}, res.FailedAndUnresolvableNodes); diff != "" {
		t.Errorf("FailedAndUnresolvableNodes (-want +got):\n%s", diff)
	}
	if res.Error != "" {
		t.Errorf("Error = %q", res.Error)
	}
}

// A body the structural scan declines (here a second key that folds to "Nodes" only through
// Unicode) is answered from the items captured while decoding again: the same answer, bytes
// included, as for the plain body.
func TestFilterFullNodesScanFallback(t *testing.T) {
	f := newFixture(t, Options{})
	plain, _ := json.Marshal(fullArgs(sampleNodes()))
	folded := append([]byte(`{"Nodeſ":{"items":[]},`), plain[1:]...)
	if _, err := nodeItemSpans(folded); err == nil {
		t.Fatal("the scan accepted the folded key: this test no longer reaches the fallback")
	}
	want := f.do("POST", "/scheduler/predicates/label", "application/json", bytes.NewReader(plain))
	got := f.do("POST", "/scheduler/predicates/label", "application/json", bytes.NewReader(folded))
	if got.Code != 200 || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
		t.Fatalf("fallback answer %d %s\nplain answer %s", got.Code, got.Body, want.Body)
	}
}

// The same request as full nodes and as names (with a lookup) gets the same verdicts and scores.
func TestBothFormsAgree(t *testing.T) {
	nodes := sampleNodes()
	f := newFixture(t, Options{Lookup: nodesLookup(nodes)})

	full := decode[extenderv1.ExtenderFilterResult](t, f.post("/scheduler/predicates/label", fullArgs(nodes)))
	named := decode[extenderv1.ExtenderFilterResult](t, f.post("/scheduler/predicates/label", nameArgs("a", "b", "c")))
	if named.Nodes != nil || named.NodeNames == nil {
		t.Fatalf("names request answered with Nodes=%v NodeNames=%v", named.Nodes, named.NodeNames)
	}
	var fullNames []string
	for _, n := range full.Nodes.Items {
		fullNames = append(fullNames, n.Name)
	}
	if diff := cmp.Diff(fullNames, *named.NodeNames); diff != "" {
		t.Errorf("passing nodes differ (-full +names):\n%s", diff)
	}
	if diff := cmp.Diff(full.FailedNodes, named.FailedNodes); diff != "" {
		t.Errorf("FailedNodes differ (-full +names):\n%s", diff)
	}
	if diff := cmp.Diff(full.FailedAndUnresolvableNodes, named.FailedAndUnresolvableNodes); diff != "" {
		t.Errorf("FailedAndUnresolvableNodes differ (-full +names):\n%s", diff)
	}

	fullScores := decode[extenderv1.HostPriorityList](t, f.post("/scheduler/priorities/label", fullArgs(nodes)))
	nameScores := decode[extenderv1.HostPriorityList](t, f.post("/scheduler/priorities/label", nameArgs("a", "b", "c")))
	if diff := cmp.Diff(fullScores, nameScores); diff != "" {
		t.Errorf("scores differ (-full +names):\n%s", diff)
	}
}

func TestFilterNamesUnknownNode(t *testing.T) {
	nodes := sampleNodes()
	f := newFixture(t, Options{Lookup: nodesLookup(nodes)})
	res := decode[extenderv1.ExtenderFilterResult](t, f.post("/scheduler/predicates/label", nameArgs("ghost", "a")))
	if diff := cmp.Diff([]string{"a"}, *res.NodeNames); diff != "" {
		t.Errorf("NodeNames (-want +got):\n%s", diff)
	}
	if got := res.FailedNodes["ghost"]; got != reasonUnknownNode {
		t.Errorf("ghost reason = %q, want %q", got, reasonUnknownNode)
	}
}

// Every node rejected: NodeNames must be an empty list, not nil (nil would make the scheduler
// fall back to Nodes).
func TestFilterAllRejectedNamesIsEmptyNotNil(t *testing.T) {
	nodes := sampleNodes()
	f := newFixture(t, Options{Lookup: nodesLookup(nodes)})
	rec := f.post("/scheduler/predicates/label", nameArgs("b", "c"))
	if !strings.Contains(rec.Body.String(), `"NodeNames":[]`) {
		t.Errorf("body %s lacks an empty NodeNames list", rec.Body)
	}
}

func TestNamesWithoutClusterAccess(t *testing.T) {
	f := newFixture(t, Options{})
	res := decode[extenderv1.ExtenderFilterResult](t, f.post("/scheduler/predicates/label", nameArgs("a")))
	if !strings.Contains(res.Error, "without cluster access") {
		t.Errorf("filter Error = %q, want it to say the extender runs without cluster access", res.Error)
	}
	msg := errorOf(t, f.post("/scheduler/priorities/label", nameArgs("a")), http.StatusServiceUnavailable)
	if !strings.Contains(msg, "without cluster access") {
		t.Errorf("prioritize error = %q", msg)
	}
}

func TestPrioritize(t *testing.T) {
	nodes := sampleNodes()
	f := newFixture(t, Options{Lookup: nodesLookup(nodes)})
	got := decode[extenderv1.HostPriorityList](t, f.post("/scheduler/priorities/label", nameArgs("c", "ghost", "b", "a")))
	// One entry per input node, in input order; 12 clamps to 10, -3 to 0; unknown scores 0.
	want := extenderv1.HostPriorityList{{Host: "c", Score: 0}, {Host: "ghost", Score: 0}, {Host: "b", Score: 10}, {Host: "a", Score: 7}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t, Options{MaxBodyBytes: 1 << 20})
	valid, _ := json.Marshal(fullArgs(sampleNodes()))
	cases := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        io.Reader
		status      int
		message     string
	}{
		{"malformed JSON", "POST", "/scheduler/predicates/label", "application/json", strings.NewReader(`{"Pod": {`), 400, "decoding ExtenderArgs"},
		{"wrong JSON type", "POST", "/scheduler/priorities/label", "application/json", strings.NewReader(`{"Pod": 5}`), 400, "decoding ExtenderArgs"},
		// jsoniter alone lets raw control characters in a key pass (found by FuzzServe).
		{"control character in a key", "POST", "/scheduler/predicates/label", "application/json", strings.NewReader("{\"Pod\":{},\"Nodes\":{\"items\":[{\"status\":{\"\v\":{}}}]}}"), 400, "invalid character"},
		{"tab in a key", "POST", "/scheduler/priorities/label", "application/json", strings.NewReader("{\"Pod\":{},\"Nodes\":{\"a\tb\":1,\"items\":[]}}"), 400, "invalid character"},
		{"empty body", "POST", "/scheduler/predicates/label", "application/json", strings.NewReader(``), 400, "empty body"},
		{"missing Pod", "POST", "/scheduler/predicates/label", "application/json", strings.NewReader(`{"NodeNames": ["a"]}`), 400, "no Pod"},
		{"no nodes at all", "POST", "/scheduler/priorities/label", "application/json", strings.NewReader(`{"Pod": {}}`), 400, "neither Nodes nor NodeNames"},
		{"GET on a verb", "GET", "/scheduler/predicates/label", "", nil, 405, "method GET is not allowed"},
		{"PUT on a verb", "PUT", "/scheduler/priorities/label", "application/json", bytes.NewReader(valid), 405, "not allowed"},
		{"text/plain", "POST", "/scheduler/predicates/label", "text/plain", bytes.NewReader(valid), 415, "application/json"},
		{"no content type", "POST", "/scheduler/priorities/label", "", bytes.NewReader(valid), 415, "application/json"},
		{"unknown path", "POST", "/scheduler/predicates/nope", "application/json", bytes.NewReader(valid), 404, "no route"},
		{"unknown verb", "POST", "/scheduler/filter", "application/json", bytes.NewReader(valid), 404, "no route"},
		{"bind: malformed", "POST", "/scheduler/bind", "application/json", strings.NewReader(`[`), 400, "decoding ExtenderBindingArgs"},
		{"preemption: no Pod", "POST", "/scheduler/preemption", "application/json", strings.NewReader(`{}`), 400, "no Pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := errorOf(t, f.do(tc.method, tc.path, tc.contentType, tc.body), tc.status)
			if !strings.Contains(msg, tc.message) {
				t.Errorf("message %q does not contain %q", msg, tc.message)
			}
			// The next request is served.
			if rec := f.post("/scheduler/predicates/label", fullArgs(sampleNodes())); rec.Code != 200 {
				t.Errorf("next request: status %d", rec.Code)
			}
		})
	}
}

// A body of the wrong shape is answered 400 with the JSON error body, naming where (the field's
// JSON path, as the client wrote it) and what was expected there, never the Go types it is
// decoded into.
func TestDecodeErrorNamesTheField(t *testing.T) {
	f := newFixture(t, Options{MaxBodyBytes: 1 << 20})
	cases := []struct {
		name, path, body string
		want             []string
	}{
		{"Pod a string", "/scheduler/predicates/label", `{"Pod": "web-1", "NodeNames": ["a"]}`,
			[]string{"decoding ExtenderArgs: Pod: expected an object, got a string"}},
		{"nested field", "/scheduler/priorities/label", `{"Pod": {"metadata": {"name": 5}}, "NodeNames": ["a"]}`,
			[]string{"Pod.metadata.name: expected a string, got a number"}},
		{"node list an object", "/scheduler/priorities/label", `{"Pod": {}, "NodeNames": {"a": 1}}`,
			[]string{"NodeNames: expected an array, got an object"}},
		{"nodes' items", "/scheduler/predicates/label", `{"Pod": {}, "Nodes": {"items": {}}}`,
			[]string{"Nodes.items: expected an array, got an object"}},
		{"malformed", "/scheduler/predicates/label", `{"Pod": {`,
			[]string{"malformed JSON at byte 9: unexpected end of JSON input"}},
		{"bind: Node a number", "/scheduler/bind", `{"PodName": "p", "Node": 3}`,
			[]string{"decoding ExtenderBindingArgs: Node: expected a string, got a number"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := errorOf(t, f.do("POST", tc.path, "application/json", strings.NewReader(tc.body)), http.StatusBadRequest)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
			for _, leak := range []string{"Go struct", "Go value", "v1.", "leanArgs", "nameList", "ReadObject", "ReadString", "jsoniter", "main."} {
				if strings.Contains(msg, leak) {
					t.Errorf("message %q names an internal type (%q)", msg, leak)
				}
			}
		})
	}
}

// A 100 MiB body is refused with 413, declared or chunked, on a real server, and the server
// goes on serving.
func TestBodyLimit(t *testing.T) {
	f := newFixture(t, Options{MaxBodyBytes: 1 << 20})
	ts := httptest.NewServer(f.handler)
	defer ts.Close()
	big := func() io.Reader {
		// A syntactically plausible start, then 100 MiB of padding.
		return io.MultiReader(strings.NewReader(`{"Pod":{},"NodeNames":["`), io.LimitReader(zeros{}, 100<<20))
	}
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/scheduler/predicates/label", big())
			req.Header.Set("Content-Type", "application/json")
			if !chunked {
				req.ContentLength = 100<<20 + 24
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				// The server may close the connection while the client is still sending; that
				// is acceptable only if the answer was 413, which we cannot read then.
				t.Fatalf("request failed before an answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "exceeds the limit") {
				t.Errorf("status %d body %s, want 413", resp.StatusCode, body)
			}
			next, err := ts.Client().Post(ts.URL+"/scheduler/predicates/label", "application/json",
				bytes.NewReader(mustJSON(t, fullArgs(sampleNodes()))))
			if err != nil || next.StatusCode != 200 {
				t.Fatalf("next request: %v %v", err, next)
			}
			next.Body.Close()
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPanicIsA500AndServingGoesOn(t *testing.T) {
	f := newFixture(t, Options{})
	for _, path := range []string{"/scheduler/predicates/panic", "/scheduler/priorities/panic"} {
		msg := errorOf(t, f.post(path, fullArgs(sampleNodes())), http.StatusInternalServerError)
		if !strings.Contains(msg, "agent bug") {
			t.Errorf("%s: message %q lacks the panic's", path, msg)
		}
	}
	if !strings.Contains(f.logs.String(), "goroutine") {
		t.Errorf("the panic's stack was not logged: %s", f.logs)
	}
	if rec := f.post("/scheduler/predicates/label", fullArgs(sampleNodes())); rec.Code != 200 {
		t.Errorf("after a panic: status %d", rec.Code)
	}
}

// An agent's error is the filter result's Error (the scheduler then applies ignorable) and a
// prioritizer's 500; both count as errors in the metrics.
func TestAgentErrors(t *testing.T) {
	nodes := lookup{}
	for _, n := range sampleNodes() {
		nodes[n.Name] = &n
	}
	f := newFixture(t, Options{Lookup: nodes})
	for _, names := range []bool{false, true} {
		args := fullArgs(sampleNodes())
		if names {
			args = nameArgs("a", "b", "c")
		}
		rec := f.post("/scheduler/predicates/error", args)
		res := decode[extenderv1.ExtenderFilterResult](t, rec)
		if rec.Code != 200 || res.Error != "filter failed: metrics source unreachable" || res.Nodes != nil || res.NodeNames != nil {
			t.Errorf("filter error (names %v): %d %+v", names, rec.Code, res)
		}
		msg := errorOf(t, f.post("/scheduler/priorities/error", args), http.StatusInternalServerError)
		if msg != "prioritizer failed: metrics source unreachable" {
			t.Errorf("prioritize error (names %v): %q", names, msg)
		}
	}
	metrics := f.do("GET", "/metrics", "", nil).Body.String()
	for _, want := range []string{
		`extender_request_errors_total{agent="test",function="error",verb="filter"} 2`,
		`extender_request_errors_total{agent="test",function="error",verb="prioritize"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestWrongVerdictCountIsA500(t *testing.T) {
	f := newFixture(t, Options{})
	msg := errorOf(t, f.post("/scheduler/predicates/short", fullArgs(sampleNodes())), http.StatusInternalServerError)
	if !strings.Contains(msg, "2 verdicts for 3 nodes") {
		t.Errorf("message %q", msg)
	}
}

func TestBindIsNotSupported(t *testing.T) {
	f := newFixture(t, Options{})
	res := decode[extenderv1.ExtenderBindingResult](t, f.post("/scheduler/bind",
		extenderv1.ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", PodUID: "u", Node: "a"}))
	if !strings.Contains(res.Error, "binding is not supported") {
		t.Errorf("Error = %q", res.Error)
	}
}

func TestPreemptionEchoesVictims(t *testing.T) {
	f := newFixture(t, Options{})
	victim := fixtures.MakePod().Name("v").UID("uid-v").Obj()
	full := decode[extenderv1.ExtenderPreemptionResult](t, f.post("/scheduler/preemption", extenderv1.ExtenderPreemptionArgs{
		Pod:               fixtures.MakePod().Name("p").Namespace("ns").UID("uid-p").Obj(),
		NodeNameToVictims: map[string]*extenderv1.Victims{"a": {Pods: []*corev1.Pod{victim}, NumPDBViolations: 2}},
	}))
	want := map[string]*extenderv1.MetaVictims{"a": {Pods: []*extenderv1.MetaPod{{UID: "uid-v"}}, NumPDBViolations: 2}}
	if diff := cmp.Diff(want, full.NodeNameToMetaVictims); diff != "" {
		t.Errorf("from Victims (-want +got):\n%s", diff)
	}
	meta := decode[extenderv1.ExtenderPreemptionResult](t, f.post("/scheduler/preemption", extenderv1.ExtenderPreemptionArgs{
		Pod: fixtures.MakePod().Name("p").Namespace("ns").UID("uid-p").Obj(), NodeNameToMetaVictims: want,
	}))
	if diff := cmp.Diff(want, meta.NodeNameToMetaVictims); diff != "" {
		t.Errorf("from MetaVictims (-want +got):\n%s", diff)
	}
}

func TestInfoRoutes(t *testing.T) {
	ready := false
	f := newFixture(t, Options{Version: "v9.9.9", Ready: func() bool { return ready }})

	rec := f.do("GET", "/version", "", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"version":"v9.9.9"`) || !strings.Contains(rec.Body.String(), `"agents":["test"]`) ||
		!strings.Contains(rec.Body.String(), `"routes":{"test":["/scheduler/predicates/label","/scheduler/predicates/panic","/scheduler/predicates/error","/scheduler/predicates/short","/scheduler/priorities/label","/scheduler/priorities/panic","/scheduler/priorities/error"]}`) {
		t.Errorf("/version: %d %s", rec.Code, rec.Body)
	}
	if rec := f.do("GET", "/healthz", "", nil); rec.Code != 200 {
		t.Errorf("/healthz: %d", rec.Code)
	}
	if rec := f.do("GET", "/readyz", "", nil); rec.Code != 503 {
		t.Errorf("/readyz before sync: %d, want 503", rec.Code)
	}
	ready = true
	if rec := f.do("GET", "/readyz", "", nil); rec.Code != 200 {
		t.Errorf("/readyz after sync: %d", rec.Code)
	}
	if rec := f.do("POST", "/version", "application/json", nil); rec.Code != 405 {
		t.Errorf("POST /version: %d, want 405", rec.Code)
	}

	f.post("/scheduler/predicates/label", fullArgs(sampleNodes()))
	f.do("GET", "/scheduler/predicates/label", "", nil)
	f.post("/scheduler/priorities/panic", fullArgs(sampleNodes()))
	rec = f.do("GET", "/metrics", "", nil)
	for _, want := range []string{
		`extender_requests_total{agent="test",code="200",function="label",verb="filter"} 1`,
		`extender_requests_total{agent="test",code="500",function="panic",verb="prioritize"} 1`,
		`extender_request_errors_total{agent="test",function="panic",verb="prioritize"} 1`,
		`extender_request_duration_seconds_count{agent="test",function="label",verb="filter"} 1`,
		fmt.Sprintf(`extender_request_nodes{agent="test",function="label",verb="filter"} %d`, len(sampleNodes())),
		// a passes, b is rejected, c is rejected as unresolvable.
		`extender_filter_verdicts_total{agent="test",function="label",verdict="passed"} 1`,
		`extender_filter_verdicts_total{agent="test",function="label",verdict="failed"} 1`,
		`extender_filter_verdicts_total{agent="test",function="label",verdict="unresolvable"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestDebugLogLine(t *testing.T) {
	f := newFixture(t, Options{})
	f.post("/scheduler/priorities/label", fullArgs(sampleNodes()))
	line := f.logs.String()
	for _, want := range []string{"agent=test", "function=label", "verb=prioritize", "pod=ns/p", "nodes=3", "duration="} {
		if !strings.Contains(line, want) {
			t.Errorf("debug line %q lacks %s", line, want)
		}
	}
	if strings.Contains(line, "Nodes") {
		t.Errorf("body logged below trace level: %q", line)
	}
}

type dupAgent struct{ testAgent }

func (dupAgent) Name() string { return "dup" }

func TestNewRejectsDuplicateNames(t *testing.T) {
	_, err := New([]framework.Agent{testAgent{}, dupAgent{}}, Options{Log: logrus.New()})
	if err == nil || !strings.Contains(err.Error(), `filter "label" is already served by agent "test"`) {
		t.Errorf("err = %v", err)
	}
}

// Reasons reach the scheduler's events as written: "risk 0.4 > 0.3", not "risk 0.4 \u003e 0.3".
func TestReasonsAreNotHTMLEscaped(t *testing.T) {
	nodes := []corev1.Node{*fixtures.MakeNode().Name("a").Label("reject", "risk 0.4 > 0.3 & rising").Obj()}
	f := newFixture(t, Options{Lookup: nodesLookup(nodes)})
	for _, args := range []extenderv1.ExtenderArgs{fullArgs(nodes), nameArgs("a")} {
		rec := f.post("/scheduler/predicates/label", args)
		if !strings.Contains(rec.Body.String(), `"risk 0.4 > 0.3 & rising"`) {
			t.Errorf("body %s escapes the reason", rec.Body)
		}
	}
}

// aliasAgent serves testAgent's "label" functions under more verbs, as the telemetry agent
// serves TAS's "filter" and "prioritize".
type aliasAgent struct {
	testAgent
	filterAliases, priorityAliases []string
	other                          bool // named "other", its functions "other"
}

func (a aliasAgent) Name() string {
	if a.other {
		return "other"
	}
	return "alias"
}
func (a aliasAgent) Filters() []framework.Filter {
	f := a.testAgent.Filters()[0]
	f.Name, f.Aliases = "aliased", a.filterAliases
	if a.other {
		f.Name = "other"
	}
	return []framework.Filter{f}
}
func (a aliasAgent) Prioritizers() []framework.Prioritizer {
	p := a.testAgent.Prioritizers()[0]
	p.Name, p.Aliases = "aliased", a.priorityAliases
	if a.other {
		p.Name = "other"
	}
	return []framework.Prioritizer{p}
}

// An alias serves the same function as the function's own route: same answers, listed at
// /version; two functions claiming one alias, or an alias that is no verb, fail New.
func TestRouteAliases(t *testing.T) {
	nodes := sampleNodes()
	agent := aliasAgent{filterAliases: []string{"filter"}, priorityAliases: []string{"prioritize"}}
	h, err := New([]framework.Agent{testAgent{}, agent}, Options{Log: logrus.New(), Lookup: nodesLookup(nodes)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, handler: h}
	for _, args := range []extenderv1.ExtenderArgs{fullArgs(nodes), nameArgs("a", "b", "c")} {
		want := decode[extenderv1.ExtenderFilterResult](t, f.post("/scheduler/predicates/aliased", args))
		got := decode[extenderv1.ExtenderFilterResult](t, f.post("/scheduler/filter", args))
		if diff := cmp.Diff(want, got); diff != "" || len(got.FailedNodes)+len(got.FailedAndUnresolvableNodes) != 2 {
			t.Errorf("/scheduler/filter (-predicates/aliased +filter):\n%s\n%+v", diff, got)
		}
		wantP := decode[extenderv1.HostPriorityList](t, f.post("/scheduler/priorities/aliased", args))
		gotP := decode[extenderv1.HostPriorityList](t, f.post("/scheduler/prioritize", args))
		if diff := cmp.Diff(wantP, gotP); diff != "" || len(gotP) != 3 {
			t.Errorf("/scheduler/prioritize (-priorities/aliased +prioritize):\n%s", diff)
		}
	}
	rec := f.do(http.MethodGet, "/version", "", nil)
	if !strings.Contains(rec.Body.String(), `"alias":["/scheduler/predicates/aliased","/scheduler/filter","/scheduler/priorities/aliased","/scheduler/prioritize"]`) {
		t.Errorf("/version %s", rec.Body)
	}
	// Without the alias the verb is not served.
	h, _ = New([]framework.Agent{aliasAgent{}}, Options{Log: logrus.New()})
	f = &fixture{t: t, handler: h}
	if rec := f.post("/scheduler/filter", fullArgs(nodes)); rec.Code != http.StatusNotFound {
		t.Errorf("/scheduler/filter without an alias: %d", rec.Code)
	}

	for _, c := range []struct {
		agents []framework.Agent
		want   string
	}{
		{[]framework.Agent{agent, aliasAgent{other: true, filterAliases: []string{"x"}, priorityAliases: []string{"filter"}}}, `alias "filter" is already served by agent "alias"`},
		{[]framework.Agent{aliasAgent{filterAliases: []string{"bind"}}}, `alias "bind" is already served by the extender`},
		{[]framework.Agent{aliasAgent{filterAliases: []string{"predicates/label"}}}, "is not a verb"},
		{[]framework.Agent{aliasAgent{priorityAliases: []string{""}}}, "is not a verb"},
		{[]framework.Agent{aliasAgent{priorityAliases: []string{"/prioritize"}}}, "is not a verb"},
	} {
		if _, err := New(c.agents, Options{Log: logrus.New()}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want an error containing %q", err, c.want)
		}
	}
}

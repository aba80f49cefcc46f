// Package extendertest is the shared plumbing of the agents' tests: it serves agents through the
// real HTTP handler of package server, builds the two forms of an extender request (full Node
// objects, or NodeNames resolved through a NodeLookup), posts them and decodes the answers.
//
// It is meant for tests and benchmarks only; it imports no agent, so every agent can use it.
package extendertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/server"
)

// Lookup is a fixed node cache, by name, behind NodeNames requests.
type Lookup map[string]*corev1.Node

var _ framework.NodeLookup = Lookup(nil)

// Node returns the node called name, if the lookup holds it.
func (l Lookup) Node(name string) (*corev1.Node, bool) { n, ok := l[name]; return n, ok }

// LookupOf returns a Lookup that holds nodes.
func LookupOf(nodes []*corev1.Node) Lookup {
	l := make(Lookup, len(nodes))
	for _, n := range nodes {
		l[n.Name] = n
	}
	return l
}

// NewHandler returns the handler of package server serving agents, with lookup resolving
// NodeNames requests, logs discarded and a fresh metrics registry (so that a test may build
// several). The test fails if the server refuses the agents.
func NewHandler(t testing.TB, lookup framework.NodeLookup, agents ...framework.Agent) http.Handler {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	h, err := server.New(agents, server.Options{Lookup: lookup, Log: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Names returns the names of nodes, in order.
func Names(nodes []*corev1.Node) []string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return names
}

// Args returns the extender request for pod and nodes: with names, the NodeNames form that a
// nodeCacheCapable scheduler sends; otherwise the full Node objects, copied.
func Args(pod *corev1.Pod, nodes []*corev1.Node, names bool) extenderv1.ExtenderArgs {
	args := extenderv1.ExtenderArgs{Pod: pod}
	if names {
		list := Names(nodes)
		args.NodeNames = &list
		return args
	}
	args.Nodes = &corev1.NodeList{}
	for _, n := range nodes {
		args.Nodes.Items = append(args.Nodes.Items, *n)
	}
	return args
}

// Body returns args encoded in JSON; the test fails if they cannot be. It does no test
// bookkeeping on success, so benchmarks may call it in their loop.
func Body(t testing.TB, args extenderv1.ExtenderArgs) []byte {
	body, err := json.Marshal(args)
	if err != nil {
		t.Helper()
		t.Fatal(err)
	}
	return body
}

// NewRequest returns a POST of the JSON body to path, as kube-scheduler sends it.
func NewRequest(path string, body []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Post serves NewRequest(path, body) with h and returns the answer's body; the test fails,
// quoting the answer, when its status is not 200. It does no test bookkeeping on success, so
// benchmarks may call it in their loop.
func Post(t testing.TB, h http.Handler, path string, body []byte) []byte {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, NewRequest(path, body))
	if rec.Code != http.StatusOK {
		t.Helper()
		t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// Filter posts args to the filter called name (/scheduler/predicates/<name>) and decodes the
// answer; the test fails on a status other than 200 or an answer that does not decode.
func Filter(t testing.TB, h http.Handler, name string, args extenderv1.ExtenderArgs) extenderv1.ExtenderFilterResult {
	t.Helper()
	var out extenderv1.ExtenderFilterResult
	post(t, h, "/scheduler/predicates/"+name, args, &out)
	return out
}

// Prioritize posts args to the prioritizer called name (/scheduler/priorities/<name>) and
// decodes the answer; the test fails on a status other than 200 or an answer that does not
// decode.
func Prioritize(t testing.TB, h http.Handler, name string, args extenderv1.ExtenderArgs) extenderv1.HostPriorityList {
	t.Helper()
	var out extenderv1.HostPriorityList
	post(t, h, "/scheduler/priorities/"+name, args, &out)
	return out
}

func post(t testing.TB, h http.Handler, path string, args extenderv1.ExtenderArgs, out any) {
	t.Helper()
	answer := Post(t, h, path, Body(t, args))
	if err := json.Unmarshal(answer, out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, answer)
	}
}

// Must returns v, or panics (failing the test that called it) when err is not nil: it lets a
// test use a filter or prioritize function's result inline.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

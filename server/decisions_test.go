package server

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

type decisionsAnswer struct {
	Capacity  int            `json:"capacity"`
	Decisions []decisionJSON `json:"decisions"`
}

// getDecisions reads /debug/decisions as a client on remote (host:port) would.
func getDecisions(t *testing.T, f *fixture, query, remote string, state *tls.ConnectionState) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/debug/decisions"+query, nil)
	req.RemoteAddr, req.TLS = remote, state
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

func score(v int64) *int64 { return &v }

// Every node of each decision: verdict and reason, or the score answered (clamped); a node the
// cache does not know as the answer had it; newest first; ?pod filters; the ring keeps the last.
func TestDecisions(t *testing.T) {
	nodes := sampleNodes()
	f := newFixture(t, Options{Lookup: nodesLookup(nodes), Decisions: decisions.Config{Kept: 3, InputsBytes: decisions.DefaultInputsBytes}})
	f.post("/scheduler/predicates/label", nameArgs("a", "b", "ghost", "c"))
	f.post("/scheduler/priorities/label", fullArgs(nodes))
	f.post("/scheduler/predicates/error", nameArgs("a"))

	got := decode[decisionsAnswer](t, getDecisions(t, f, "", "127.0.0.1:5555", nil))
	want := decisionsAnswer{Capacity: 3, Decisions: []decisionJSON{
		{Pod: "ns/p", Agent: "test", Function: "error", Verb: "filter", Error: "filter failed: metrics source unreachable"},
		{Pod: "ns/p", Agent: "test", Function: "label", Verb: "prioritize", Nodes: []nodeDecision{
			{Node: "a", Score: score(7)}, {Node: "b", Score: score(10)}, {Node: "c", Score: score(0)}}},
		{Pod: "ns/p", Agent: "test", Function: "label", Verb: "filter", Nodes: []nodeDecision{
			{Node: "a", Verdict: "pass"}, {Node: "b", Verdict: "fail", Reason: "too hot"},
			{Node: "ghost", Verdict: "fail", Reason: reasonUnknownNode}, {Node: "c", Verdict: "unresolvable", Reason: "no gpu"}}},
	}}
	ignoreTime := cmpopts.IgnoreFields(decisionJSON{}, "Time")
	if diff := cmp.Diff(want, got, ignoreTime); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, d := range got.Decisions {
		if d.Time.IsZero() {
			t.Errorf("decision %s/%s has no time", d.Verb, d.Function)
		}
	}

	// Another pod's request pushes the oldest out of the ring of 3.
	other := nameArgs("a")
	other.Pod.Name = "q"
	f.post("/scheduler/priorities/label", other)
	got = decode[decisionsAnswer](t, getDecisions(t, f, "", "[::1]:5555", nil))
	if len(got.Decisions) != 3 || got.Decisions[0].Pod != "ns/q" || got.Decisions[2].Verb != "prioritize" {
		t.Errorf("after a fourth decision: %+v, want q's first and the oldest filter gone", got.Decisions)
	}
	got = decode[decisionsAnswer](t, getDecisions(t, f, "?pod=ns/q", "127.0.0.1:5555", nil))
	if len(got.Decisions) != 1 || got.Decisions[0].Pod != "ns/q" {
		t.Errorf("?pod=ns/q: %+v", got.Decisions)
	}
	got = decode[decisionsAnswer](t, getDecisions(t, f, "?limit=1", "127.0.0.1:5555", nil))
	if len(got.Decisions) != 1 {
		t.Errorf("?limit=1: %d decisions", len(got.Decisions))
	}
	errorOf(t, getDecisions(t, f, "?limit=none", "127.0.0.1:5555", nil), http.StatusBadRequest)
}

// Decisions name pods and nodes: only loopback clients and clients with a verified certificate
// read them.
func TestDecisionsAccess(t *testing.T) {
	f := newFixture(t, Options{Decisions: decisions.Config{Kept: 10, InputsBytes: decisions.DefaultInputsBytes}})
	errorOf(t, getDecisions(t, f, "", "10.1.2.3:4444", nil), http.StatusForbidden)
	errorOf(t, getDecisions(t, f, "", "10.1.2.3:4444", &tls.ConnectionState{}), http.StatusForbidden)
	verified := &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}}
	decode[decisionsAnswer](t, getDecisions(t, f, "", "10.1.2.3:4444", verified))
	decode[decisionsAnswer](t, getDecisions(t, f, "", "127.0.0.1:4444", nil))

	// Off (the default of Options): no route, nothing kept.
	off := newFixture(t, Options{})
	off.post("/scheduler/priorities/label", fullArgs(sampleNodes()))
	errorOf(t, getDecisions(t, off, "", "127.0.0.1:4444", nil), http.StatusNotFound)
}

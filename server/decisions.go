package server

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// keepDecision hands the decision of a verb handler to the instrumenting recorder, which adds
// agent, function, pod and time and keeps it. It costs nothing when decisions are off.
func (s *srv) keepDecision(w http.ResponseWriter, d decisions.Decision) {
	if s.decisions == nil {
		return
	}
	if r, ok := w.(*recorder); ok {
		kept := d // only kept escapes: nothing is allocated while decisions are off
		r.decision = &kept
	}
}

// nodeDecision and decisionJSON are a decision as /debug/decisions shows it.
type (
	nodeDecision = framework.NodeDecision
	decisionJSON = framework.DecisionJSON
)

// privileged reports whether req may read decisions (pod names and per-node reasons): it came
// over loopback, or over TLS with a verified client certificate.
func privileged(req *http.Request) bool {
	if req.TLS != nil && len(req.TLS.VerifiedChains) > 0 {
		return true
	}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveDecisions answers GET /debug/decisions[?pod=<ns>/<name>][&limit=<n>].
func (s *srv) serveDecisions(w http.ResponseWriter, req *http.Request) {
	if !privileged(req) {
		writeError(w, http.StatusForbidden, "/debug/decisions is served only over loopback or to a client with a verified certificate (TLS_CLIENT_CA_FILE)")
		return
	}
	limit := s.decisions.Capacity()
	if v := req.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer, got "+strconv.Quote(v))
			return
		}
		limit = min(n, limit)
	}
	out := struct {
		Capacity  int            `json:"capacity"`
		Decisions []decisionJSON `json:"decisions"`
	}{Capacity: s.decisions.Capacity(), Decisions: s.decisions.Render(req.URL.Query().Get("pod"), limit)}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, http.StatusOK, append(b, '\n'))
}

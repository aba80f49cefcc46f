package server

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kube-safe-scheduler/extender/framework"
)

// DefaultDecisionsKept is how many decisions GET /debug/decisions keeps by default.
const DefaultDecisionsKept = 1000

// decision is one answered filter or prioritize request, kept as the handler had it: the
// request's node names and the agent's verdicts or scores are retained, not copied (about 40
// bytes a node), and rendered only when /debug/decisions is read.
type decision struct {
	time                  time.Time
	pod                   string
	agent, function, verb string
	names                 []string
	// index maps the k-th verdict or score to names[index[k]]; nil when every node was known.
	// Nodes left out are unknown to the cache.
	index    []int
	verdicts []framework.Verdict
	scores   []int64
	// inputs[k] is what the agent saw of the k-th node (framework.Explainer); nil without.
	inputs []framework.Inputs
	err    string
}

// inputsKept bounds the agents' inputs (framework.Explainer) the decisions keep, in nodes: a
// node's inputs are a few small maps (about 0.5 to 1 KiB), so at most some 50 MiB. The newest
// decisions keep theirs; older ones lose them first.
const inputsKept = 50_000

// decisionLog is a bounded ring of the last decisions.
type decisionLog struct {
	mu   sync.Mutex
	ring []decision
	next int
	full bool
	// inputNodes counts the nodes whose inputs the ring holds.
	inputNodes int
}

func newDecisionLog(n int) *decisionLog { return &decisionLog{ring: make([]decision, n)} }

func (l *decisionLog) add(d decision) {
	l.mu.Lock()
	l.inputNodes += len(d.inputs) - len(l.ring[l.next].inputs)
	l.ring[l.next] = d
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
	// Over the bound: drop the inputs of the oldest decisions holding some.
	for i := 0; l.inputNodes > inputsKept && i < len(l.ring); i++ {
		old := &l.ring[(l.next+i)%len(l.ring)]
		l.inputNodes -= len(old.inputs)
		old.inputs = nil
	}
	l.mu.Unlock()
}

// last returns the kept decisions for pod ("" for every pod), newest first, at most limit.
func (l *decisionLog) last(pod string, limit int) []decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	var out []decision
	for i := 1; i <= n && len(out) < limit; i++ {
		d := l.ring[(l.next-i+len(l.ring))%len(l.ring)]
		if pod == "" || d.pod == pod {
			out = append(out, d)
		}
	}
	return out
}

// keepDecision hands the decision of a verb handler to the instrumenting recorder, which adds
// agent, function, pod and time and keeps it. It costs nothing when decisions are off.
func (s *srv) keepDecision(w http.ResponseWriter, d decision) {
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

// render shows every node of the request: its verdict ("pass", "fail", "unresolvable") and
// reason, or the score answered.
func (d *decision) render() decisionJSON {
	out := decisionJSON{Time: d.time, Pod: d.pod, Agent: d.agent, Function: d.function, Verb: d.verb, Error: d.err}
	if d.err != "" {
		return out
	}
	out.Nodes = make([]nodeDecision, len(d.names))
	known := make([]bool, len(d.names))
	for i, n := range d.names {
		out.Nodes[i].Node = n
	}
	count := len(d.verdicts)
	if d.verdicts == nil {
		count = len(d.scores)
	}
	for k := 0; k < count; k++ {
		i := position(d.index, k)
		known[i] = true
		nd := &out.Nodes[i]
		if d.inputs != nil {
			nd.Inputs = d.inputs[k]
		}
		if d.verdicts != nil {
			nd.SetVerdict(d.verdicts[k])
		} else {
			s := clampScore(d.scores[k])
			nd.Score = &s
		}
	}
	for i := range out.Nodes {
		if known[i] {
			continue
		}
		if d.verdicts != nil {
			out.Nodes[i].Verdict, out.Nodes[i].Reason = "fail", reasonUnknownNode
		} else {
			zero := int64(0)
			out.Nodes[i].Score = &zero
		}
	}
	return out
}

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
	limit := len(s.decisions.ring)
	if v := req.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer, got "+strconv.Quote(v))
			return
		}
		limit = min(n, limit)
	}
	kept := s.decisions.last(req.URL.Query().Get("pod"), limit)
	out := struct {
		Capacity  int            `json:"capacity"`
		Decisions []decisionJSON `json:"decisions"`
	}{Capacity: len(s.decisions.ring), Decisions: make([]decisionJSON, 0, len(kept))}
	for i := range kept {
		out.Decisions = append(out.Decisions, kept[i].render())
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, http.StatusOK, append(b, '\n'))
}

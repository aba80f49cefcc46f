package framework

import "time"

// DecisionJSON is one kept filter or prioritize decision as the extender's GET /debug/decisions
// and kube-safe-scheduler's /configz (plugin mode) show it, and `extender explain` reads it.
type DecisionJSON struct {
	Time     time.Time      `json:"time"`
	Pod      string         `json:"pod"`
	Agent    string         `json:"agent"`
	Function string         `json:"function"`
	Verb     string         `json:"verb"`
	Error    string         `json:"error,omitempty"`
	Nodes    []NodeDecision `json:"nodes,omitempty"`
}

// NodeDecision is one node of a decision: its verdict and reason (filter) or its score, 0..10
// (prioritize), and what the agent saw of it when it explains its decisions (Explainer).
type NodeDecision struct {
	Node    string `json:"node"`
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Score   *int64 `json:"score,omitempty"`
	Inputs  Inputs `json:"inputs,omitempty"`
}

// SetVerdict sets the node's verdict, "pass", "fail" or "unresolvable", and reason from v.
func (n *NodeDecision) SetVerdict(v Verdict) {
	switch {
	case v.Passes():
		n.Verdict, n.Reason = "pass", ""
	case v.Unresolvable:
		n.Verdict, n.Reason = "unresolvable", v.Reason
	default:
		n.Verdict, n.Reason = "fail", v.Reason
	}
}

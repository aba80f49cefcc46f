package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Explainer is what an agent may implement to say what it saw of each node when one of its
// functions judged or scored it: safe's mu, sigma and risk per resource, congestion's factor,
// telemetry's values and their ages... The server asks it only for the decisions it keeps
// (GET /debug/decisions, `extender explain`), right after the function answered, with the same
// pod and nodes; an agent that does not implement it keeps its decisions without inputs.
//
// Explain returns one Inputs per node, in the order of nodes, for function (one of the agent's
// filter or prioritize function names; verb "filter" or "prioritize"), or nil when it has
// nothing to say about that function. It must not change the agent's state (no metrics, no
// learning) and must not modify the nodes.
type Explainer interface {
	Explain(ctx context.Context, function, verb string, pod *corev1.Pod, nodes []*corev1.Node) []Inputs
}

// Inputs are what an agent read of one node, by name, as JSON shows them: numbers, strings,
// booleans, or nested Inputs (for example one per resource).
type Inputs map[string]any

package adapter

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-safe-scheduler/extender/framework"
)

// Decisions keeps the plugins' last decisions, as the extender's GET /debug/decisions keeps
// its own (same JSON): for each cycle and plugin, every node judged or scored, its verdict and
// reason or its score (the agent's, 0..10, before the framework's scaling), and what the agent
// saw of it (framework.Explainer). kube-scheduler offers no way to add a path to its secure
// port, so kube-safe-scheduler publishes them through /configz, which kube-scheduler serves
// behind its own authentication and authorization (docs/operations.md). Decisions is a
// runtime.Object for configz, rendered when /configz is read.
type Decisions struct {
	mu   sync.Mutex
	ring []decision
	next int
	full bool
}

// DecisionsGroupVersionKind is what /configz shows as the decisions' apiVersion and kind.
var DecisionsGroupVersionKind = schema.GroupVersionKind{Group: "kube-safe-scheduler.dev", Version: "v1", Kind: "Decisions"}

// decision is one plugin's work of one cycle: a filter's verdicts (judged chunk by chunk while
// the cycle runs; rendered as judged when read) or a prioritizer's scores.
type decision struct {
	time                  time.Time
	pod                   string
	agent, function, verb string
	verdicts              *verdicts
	names                 []string
	scores                []int64
	inputs                []framework.Inputs
}

// explainFunc asks the agent what it saw of each node for the plugin's function.
type explainFunc func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs

// KeepDecisions makes the adapter keep the last n decisions (n > 0) and returns them, to be
// published (main registers them with configz).
func (a *Adapter) KeepDecisions(n int) *Decisions {
	a.decisions = &Decisions{ring: make([]decision, n)}
	return a.decisions
}

func (d *Decisions) add(x decision) {
	d.mu.Lock()
	d.ring[d.next] = x
	d.next++
	if d.next == len(d.ring) {
		d.next, d.full = 0, true
	}
	d.mu.Unlock()
}

// GetObjectKind implements runtime.Object.
func (d *Decisions) GetObjectKind() schema.ObjectKind { return d }

// SetGroupVersionKind implements schema.ObjectKind (the kind is fixed).
func (d *Decisions) SetGroupVersionKind(schema.GroupVersionKind) {}

// GroupVersionKind implements schema.ObjectKind.
func (d *Decisions) GroupVersionKind() schema.GroupVersionKind { return DecisionsGroupVersionKind }

// DeepCopyObject implements runtime.Object: the decisions are shared, never copied.
func (d *Decisions) DeepCopyObject() runtime.Object { return d }

// MarshalJSON renders the kept decisions, newest first, as GET /debug/decisions does.
func (d *Decisions) MarshalJSON() ([]byte, error) {
	d.mu.Lock()
	n := d.next
	if d.full {
		n = len(d.ring)
	}
	kept := make([]decision, 0, n)
	for i := 1; i <= n; i++ {
		kept = append(kept, d.ring[(d.next-i+len(d.ring))%len(d.ring)])
	}
	d.mu.Unlock()
	out := struct {
		APIVersion string                   `json:"apiVersion"`
		Kind       string                   `json:"kind"`
		Capacity   int                      `json:"capacity"`
		Decisions  []framework.DecisionJSON `json:"decisions"`
	}{DecisionsGroupVersionKind.GroupVersion().String(), DecisionsGroupVersionKind.Kind, len(d.ring), make([]framework.DecisionJSON, 0, len(kept))}
	for i := range kept {
		out.Decisions = append(out.Decisions, kept[i].render())
	}
	return json.Marshal(out)
}

func (x *decision) render() framework.DecisionJSON {
	out := framework.DecisionJSON{Time: x.time, Pod: x.pod, Agent: x.agent, Function: x.function, Verb: x.verb}
	if x.verdicts != nil {
		v := x.verdicts
		for k := range v.chunks {
			c := &v.chunks[k]
			if !c.judged.Load() || c.err != nil {
				continue
			}
			lo := k * v.size
			for j, verdict := range c.out {
				nd := framework.NodeDecision{Node: v.list.views[lo+j].Name}
				nd.SetVerdict(verdict)
				if len(c.inputs) == len(c.out) {
					nd.Inputs = c.inputs[j]
				}
				out.Nodes = append(out.Nodes, nd)
			}
		}
		return out
	}
	for i, name := range x.names {
		s := x.scores[i]
		nd := framework.NodeDecision{Node: name, Score: &s}
		if len(x.inputs) == len(x.names) {
			nd.Inputs = x.inputs[i]
		}
		out.Nodes = append(out.Nodes, nd)
	}
	return out
}

// explainer returns the agent's explanation of function, nil when it does not explain.
func (f *funcs) explain(function, verb string) explainFunc {
	ex := f.explainer
	if ex == nil {
		return nil
	}
	return func(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
		return ex.Explain(ctx, function, verb, pod, nodes)
	}
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

package adapter

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// Decisions keeps the plugins' last decisions in the log the extender's GET /debug/decisions
// keeps its own in (package decisions, same JSON): for each cycle and plugin, every node judged
// or scored, its verdict and reason or its score (the agent's, 0..10, before the framework's
// scaling), and what the agent saw of it (framework.Explainer). kube-scheduler offers no way to
// add a path to its secure port, so kube-safe-scheduler publishes them through /configz, which
// kube-scheduler serves behind its own authentication and authorization (docs/operations.md).
// Decisions is a runtime.Object for configz, rendered when /configz is read.
type Decisions struct {
	log *decisions.Log
}

// DecisionsGroupVersionKind is what /configz shows as the decisions' apiVersion and kind.
var DecisionsGroupVersionKind = schema.GroupVersionKind{Group: "kube-safe-scheduler.dev", Version: "v1", Kind: "Decisions"}

// KeepDecisions makes the adapter keep the decisions c asks for (c.Kept > 0; c validated) and
// returns them, to be published (main registers them with configz).
func (a *Adapter) KeepDecisions(c decisions.Config) *Decisions {
	a.decisions = &Decisions{log: decisions.New(c)}
	return a.decisions
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
	return json.Marshal(struct {
		APIVersion string                   `json:"apiVersion"`
		Kind       string                   `json:"kind"`
		Capacity   int                      `json:"capacity"`
		Decisions  []framework.DecisionJSON `json:"decisions"`
	}{DecisionsGroupVersionKind.GroupVersion().String(), DecisionsGroupVersionKind.Kind, d.log.Capacity(), d.log.Render("", d.log.Capacity())})
}

// EachJudged implements decisions.Judged: the nodes of the chunks judged without error.
func (v *verdicts) EachJudged(fn func(i int, node string, verdict framework.Verdict)) {
	for k := range v.chunks {
		c := v.chunks[k].Load()
		if c == nil || !c.judged.Load() || c.err != nil {
			continue
		}
		lo := k * v.size
		for j, verdict := range c.out {
			fn(lo+j, v.list.views[lo+j].Name, verdict)
		}
	}
}

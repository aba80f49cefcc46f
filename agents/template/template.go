// Package template is the scaffold for a new agent, and a small working one: a filter that keeps
// the nodes carrying a configured label value, and a priority read from a numeric node
// annotation. Copy this package to start an agent (see "Adding an agent" in the top README).
package template

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Name is the agent's name and build tag.
const Name = "template"

// Function names: the routes /scheduler/predicates/template-label and
// /scheduler/priorities/template-score.
const (
	FilterLabel   = "template-label"
	PriorityScore = "template-score"
)

// Config holds the agent's settings.
type Config struct {
	// LabelKey is the node label the filter reads (TEMPLATE_LABEL).
	LabelKey string
	// LabelValue is the value LabelKey must have for a node to pass (TEMPLATE_LABEL_VALUE).
	LabelValue string
	// ScoreAnnotation is the node annotation holding the node's score, 0..10
	// (TEMPLATE_SCORE_ANNOTATION).
	ScoreAnnotation string
}

// Declare adds the agent's settings, with their defaults, to s.
func (c *Config) Declare(s *settings.Set) {
	s.String(&c.LabelKey, "TEMPLATE_LABEL", "template-label", "template.extender/allowed",
		"node label the template-label filter reads", checkQualifiedName)
	s.String(&c.LabelValue, "TEMPLATE_LABEL_VALUE", "template-label-value", "true",
		"value the label must have for a node to pass", nil)
	s.String(&c.ScoreAnnotation, "TEMPLATE_SCORE_ANNOTATION", "template-score-annotation", "template.extender/score",
		"node annotation holding the template-score priority (integer 0..10)", checkQualifiedName)
}

func checkQualifiedName(v string) error {
	if errs := validation.IsQualifiedName(v); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid label or annotation key: %s", v, strings.Join(errs, "; "))
	}
	return nil
}

// Agent is the template agent.
type Agent struct {
	cfg Config
}

var _ framework.Agent = (*Agent)(nil)

// New returns the agent for cfg.
func New(cfg Config) (*Agent, error) {
	for _, k := range []string{cfg.LabelKey, cfg.ScoreAnnotation} {
		if err := checkQualifiedName(k); err != nil {
			return nil, fmt.Errorf("invalid template config: %w", err)
		}
	}
	return &Agent{cfg: cfg}, nil
}

// Name implements framework.Agent.
func (a *Agent) Name() string { return Name }

// Filters implements framework.Agent.
func (a *Agent) Filters() []framework.Filter {
	return []framework.Filter{{Name: FilterLabel, Func: a.filterLabel}}
}

// Prioritizers implements framework.Agent.
func (a *Agent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{{Name: PriorityScore, Func: a.score}}
}

// filterLabel passes the nodes whose label LabelKey equals LabelValue.
func (a *Agent) filterLabel(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) []framework.Verdict {
	out := make([]framework.Verdict, len(nodes))
	for i, n := range nodes {
		v, ok := n.Labels[a.cfg.LabelKey]
		switch {
		case !ok:
			out[i] = framework.Reject(fmt.Sprintf("node has no label %s", a.cfg.LabelKey))
		case v != a.cfg.LabelValue:
			out[i] = framework.Reject(fmt.Sprintf("label %s is %q, not %q", a.cfg.LabelKey, v, a.cfg.LabelValue))
		}
	}
	return out
}

// score gives each node the integer in its ScoreAnnotation, clamped to 0..10; a node without a
// readable annotation scores 0.
func (a *Agent) score(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) []int64 {
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		v, err := strconv.ParseInt(strings.TrimSpace(n.Annotations[a.cfg.ScoreAnnotation]), 10, 64)
		if err != nil {
			continue
		}
		out[i] = min(max(v, 0), framework.MaxScore)
	}
	return out
}

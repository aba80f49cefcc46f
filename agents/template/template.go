// Package template is the scaffold for a new agent, and a small working one: a filter that keeps
// the nodes carrying a configured label value, and a priority read from a numeric node
// annotation. Copy this package to start an agent: docs/adding-an-agent.md.
package template

import (
	"context"
	"errors"
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

// Config holds the agent's settings. Each field is bound to an environment variable and a flag
// (tags env, flag, help: see settings.Bind) and to a JSON field (tag json, for a scheduler's
// pluginConfig args); DefaultConfig holds the defaults and Validate is the only check. A number
// declares its bounds with a range tag (range:"[0,10]") and a choice is a typed enum with a
// Choices method: settings.Check refuses what is outside, and the chart's schema carries both.
type Config struct {
	// LabelKey is the node label the filter reads.
	LabelKey string `json:"labelKey" env:"TEMPLATE_LABEL" flag:"template-label" help:"node label the template-label filter reads"`
	// LabelValue is the value LabelKey must have for a node to pass.
	LabelValue string `json:"labelValue" env:"TEMPLATE_LABEL_VALUE" flag:"template-label-value" help:"value the label must have for a node to pass"`
	// ScoreAnnotation is the node annotation holding the node's score, 0..10.
	ScoreAnnotation string `json:"scoreAnnotation" env:"TEMPLATE_SCORE_ANNOTATION" flag:"template-score-annotation" help:"node annotation holding the template-score priority (integer 0..10)"`
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{LabelKey: "template.extender/allowed", LabelValue: "true", ScoreAnnotation: "template.extender/score"}
}

// Validate reports every bad field, each as a settings.FieldError.
func (c Config) Validate() error {
	return errors.Join(checkQualifiedName("labelKey", c.LabelKey), checkQualifiedName("scoreAnnotation", c.ScoreAnnotation))
}

func checkQualifiedName(field, v string) error {
	if errs := validation.IsQualifiedName(v); len(errs) > 0 {
		return settings.Fieldf(field, "%q is not a valid label or annotation key: %s", v, strings.Join(errs, "; "))
	}
	return nil
}

// Registration offers the agent to the programs that run agents (agents.All, the extender's
// build-tagged file): its functions, and its port and weights in the shipped deployments.
var Registration = framework.Register(Name, DefaultConfig, New, framework.Offer{
	Filters:      []string{FilterLabel},
	Prioritizers: []framework.Weighted{{Name: PriorityScore, Weight: 1}},
	Port:         5404,
	Cluster:      framework.ClusterNone, // it reads the request's nodes only
})

// Agent is the template agent.
type Agent struct {
	cfg Config
}

var _ framework.Agent = (*Agent)(nil)

// New returns the agent for cfg. The template agent uses nothing of h; an agent that logs,
// reads the cluster or writes to it takes what it needs from h here.
func New(cfg Config, _ framework.Handle) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid template config: %w", err)
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
func (a *Agent) filterLabel(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
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
	return out, nil
}

// score gives each node the integer in its ScoreAnnotation, clamped to 0..10; a node without a
// readable annotation scores 0.
func (a *Agent) score(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		v, err := strconv.ParseInt(strings.TrimSpace(n.Annotations[a.cfg.ScoreAnnotation]), 10, 64)
		if err != nil {
			continue
		}
		out[i] = min(max(v, 0), framework.MaxScore)
	}
	return out, nil
}

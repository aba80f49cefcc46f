// Package congestion is the congestion agent: a priority that prefers the nodes whose
// congestion factor, an integer annotation written by a node annotator, is low. See README.md.
package congestion

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Name is the agent's name and build tag.
const Name = "congestion"

// PriorityCongestion is the priority's name: the route /scheduler/priorities/congestion.
const PriorityCongestion = "congestion"

// Annotation is the node annotation holding the node's congestion factor, an integer.
const Annotation = "congestion-factor"

// DefaultFactorMax is the default of CONGESTION_FACTOR_MAX.
const DefaultFactorMax = 100

// Config holds the agent's settings (tags: see settings.Bind and template.Config).
type Config struct {
	// FactorMax is M: the congestion factor at and above which a node scores 0 (an integer > 0).
	FactorMax int `json:"factorMax" range:"[1,2147483647]" env:"CONGESTION_FACTOR_MAX" flag:"congestion-factor-max" help:"congestion agent: congestion factor M at and above which a node scores 0 (integer 1..2147483647)"`
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config { return Config{FactorMax: DefaultFactorMax} }

// Validate reports every bad field, each as a settings.FieldError.
func (c Config) Validate() error {
	return settings.Check(c)
}

// Registration offers the agent to the programs that run agents (agents.All, the extender's
// build-tagged file): its functions, and its port and weights in the shipped deployments.
var Registration = framework.Register(Name, DefaultConfig, New, framework.Offer{
	Prioritizers: []framework.Weighted{{Name: PriorityCongestion, Weight: 1}},
	Port:         5402,
})

// Agent is the congestion agent. It is safe for concurrent use; between calls it keeps only
// the factors it parsed (factors), which change no answer.
type Agent struct {
	m int64
	// factors remembers each node's factor by name and resourceVersion: the annotation changes
	// when the annotator rewrites it, every few seconds at most, while the scheduler asks about
	// every node for every pod. Reading the annotation from each node's map was a tenth of
	// plugin mode's scheduler CPU at 2000 nodes (docs/results/performance-history.md, "Remembered
	// answers, the adaptive filter by chunks, congestion's memo").
	factors framework.NodeBatchMemo[int64]
	// listed is the same by position in plugin mode's shared list of nodes
	// (framework.Positions): read in one pass, no lookup by name.
	listed framework.ListMemo[int64]
}

var _ framework.Agent = (*Agent)(nil)

// New returns the agent for cfg; it uses nothing of h.
func New(cfg Config, _ framework.Handle) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid congestion config: %w", err)
	}
	return &Agent{m: int64(cfg.FactorMax)}, nil
}

// Name implements framework.Agent.
func (a *Agent) Name() string { return Name }

// Filters implements framework.Agent: the agent has none.
func (a *Agent) Filters() []framework.Filter { return nil }

// Prioritizers implements framework.Agent.
func (a *Agent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{{Name: PriorityCongestion, Func: a.score}}
}

// score gives each node Score(factor, M), factor read by Factor (or remembered from the node's
// resourceVersion, see factorMemo).
func (a *Agent) score(ctx context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	out := make([]int64, len(nodes))
	factor := func(n *corev1.Node) int64 { return Factor(n.Annotations) }
	if p := framework.PositionsOf(ctx); p != nil && len(p.At) == len(nodes) {
		a.listed.Get(p.List, p.At, nodes, out, factor)
	} else {
		a.factors.Get(nodes, out, factor)
	}
	for i, f := range out {
		out[i] = Score(f, a.m)
	}
	return out, nil
}

// Factor reads the congestion factor from a node's annotations: the integer in Annotation
// (surrounding spaces allowed), or 0 when it is missing, not an integer, or not positive. An
// integer too large for int64 is math.MaxInt64 (so at least any M).
func Factor(annotations map[string]string) int64 {
	s, ok := annotations[Annotation]
	if !ok || s == "" {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		// ParseInt returns math.MaxInt64 for a positive integer out of range, math.MinInt64
		// for a negative one and 0 for a syntax error.
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0
		}
	}
	return max(v, 0)
}

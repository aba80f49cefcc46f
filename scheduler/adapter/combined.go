package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	sigsjson "sigs.k8s.io/json"

	"github.com/kube-safe-scheduler/extender/framework"
)

// CombinedName is the plugin that runs several agent functions of a profile in one framework
// plugin: one Filter per node over all their filters, one Score per node of their weighted mean,
// so that kube-scheduler's work per plugin and per node (its parallel dispatch, status and
// metrics bookkeeping, cycle-state lookups) is paid once per node rather than once per function.
// It is the plugin-mode counterpart of the extender's priorities/combined (framework.Combine).
// Its pluginConfig args are CombinedArgs.
const CombinedName = "agents"

// CombinedArgs are the pluginConfig args of the CombinedName plugin:
//
//	pluginConfig:
//	- name: agents
//	  args:
//	    functions:                 # agent functions (plugin names), filters judged in this order
//	    - {name: safe-overload, weight: 2}
//	    - {name: congestion, weight: 1}
//	    config:                    # optional: an agent's configuration, as its own plugin's args
//	      safe: {utilization: 90}
//
// Enable it with weight W = the sum of the prioritize functions' weights: its score for a node
// is their weighted mean, so kube-scheduler's total is the total the separate plugins of weights
// w_i give, up to rounding (see combinedPlugin.PreScore).
type CombinedArgs struct {
	Functions []CombinedFunction `json:"functions"`
	// Config holds an agent's configuration (the args its own plugins would take), by agent
	// name; an agent not given keeps its defaults (or the args of its own plugin, if enabled
	// in the profile too, which must then be the same).
	Config map[string]json.RawMessage `json:"config,omitempty"`
}

// CombinedFunction is one function of the combined plugin: a plugin name of Names, and the
// weight of its prioritize function (1 when left out; none for a filter-only function).
type CombinedFunction struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}

// combinedPart is one function of a combined plugin.
type combinedPart struct {
	name   string
	weight int64 // of its prioritize function
	fns    *funcs
	// rejected prefixes the reason of a rejection by its filter: "name: ".
	rejected string
}

// combinedPlugin is the CombinedName plugin of one profile.
type combinedPlugin struct {
	adapter *Adapter
	// filters and scorers are the parts with a filter and a prioritize function, in the args'
	// order; all are every part.
	filters, scorers, all []combinedPart
	total                 int64 // sum of the scorers' weights
	// filtered and scored remember the cycle's verdicts and scores (lastWrite).
	filtered, scored lastWrite
}

var (
	_ fwk.PreFilterPlugin   = (*combinedPlugin)(nil)
	_ fwk.FilterPlugin      = (*combinedPlugin)(nil)
	_ fwk.PreScorePlugin    = (*combinedPlugin)(nil)
	_ fwk.ScorePlugin       = (*combinedPlugin)(nil)
	_ fwk.SignPlugin        = (*combinedPlugin)(nil)
	_ fwk.EnqueueExtensions = (*combinedPlugin)(nil)
)

const (
	combinedFilterKey = fwk.StateKey("kube-safe-scheduler/filter/" + CombinedName)
	combinedScoreKey  = fwk.StateKey("kube-safe-scheduler/score/" + CombinedName)
)

// newCombined is the CombinedName plugin's factory: it reads the args (strictly: an unknown
// field, an unknown or repeated function, a weight out of range, a weight on a filter-only
// function, a config for an unknown agent or for one none of whose functions is listed are
// errors naming it) and configures each function's agent as its own plugin would be.
func (a *Adapter) newCombined(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	ca, err := a.combinedArgs(args)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: pluginConfig args: %w", CombinedName, err)
	}
	p := &combinedPlugin{adapter: a}
	for _, f := range ca.Functions {
		s := a.specs[f.Name]
		var agentArgs runtime.Object
		if raw, ok := ca.Config[s.agent]; ok {
			agentArgs = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
		}
		fns, err := a.configure(ctx, CombinedName, f.Name, s.agent, agentArgs, fh)
		if err != nil {
			return nil, err
		}
		part := combinedPart{name: f.Name, weight: f.Weight, fns: fns, rejected: f.Name + ": "}
		p.all = append(p.all, part)
		if s.filter {
			p.filters = append(p.filters, part)
		}
		if s.prioritizer {
			p.scorers = append(p.scorers, part)
			p.total += f.Weight
		}
	}
	return p, nil
}

// combinedArgs decodes and checks the combined plugin's args (none: an error, it has no default
// functions).
func (a *Adapter) combinedArgs(args runtime.Object) (CombinedArgs, error) {
	var ca CombinedArgs
	raw, err := argsJSON(args)
	if err != nil {
		return ca, err
	}
	if len(raw) == 0 {
		return ca, fmt.Errorf("missing: list the agent functions to run under functions (of %s)", strings.Join(a.Names(), ", "))
	}
	strict, err := sigsjson.UnmarshalStrict(raw, &ca, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return ca, err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		slices.Sort(msgs)
		return ca, fmt.Errorf("%s (the fields are functions, config)", strings.Join(msgs, "; "))
	}
	if len(ca.Functions) == 0 {
		return ca, fmt.Errorf("functions: none listed (of %s)", strings.Join(a.Names(), ", "))
	}
	listed := map[string]bool{} // agents with a function listed
	for i := range ca.Functions {
		f := &ca.Functions[i]
		s, ok := a.specs[f.Name]
		switch {
		case !ok:
			return ca, fmt.Errorf("functions[%d]: no agent offers a function named %q (the functions are %s)", i, f.Name, strings.Join(a.Names(), ", "))
		case slices.ContainsFunc(ca.Functions[:i], func(o CombinedFunction) bool { return o.Name == f.Name }):
			return ca, fmt.Errorf("functions[%d]: %s is listed twice", i, f.Name)
		case !s.prioritizer && f.Weight != 0:
			return ca, fmt.Errorf("functions[%d]: %s is a filter only: it takes no weight", i, f.Name)
		case s.prioritizer && f.Weight == 0:
			f.Weight = 1 // kube-scheduler's default weight of a score plugin
		case s.prioritizer && (f.Weight < 1 || f.Weight > framework.MaxCombinedWeight):
			return ca, fmt.Errorf("functions[%d]: %s: weight %d is not an integer from 1 to %d", i, f.Name, f.Weight, framework.MaxCombinedWeight)
		}
		listed[s.agent] = true
	}
	for _, agent := range slices.Sorted(maps.Keys(ca.Config)) {
		if _, ok := a.regs[agent]; !ok {
			return ca, fmt.Errorf("config: no agent is named %q (the agents are %s)", agent, strings.Join(slices.Sorted(maps.Keys(a.regs)), ", "))
		}
		if !listed[agent] {
			return ca, fmt.Errorf("config.%s: none of the agent's functions is listed under functions", agent)
		}
	}
	return ca, nil
}

// Name implements fwk.Plugin.
func (p *combinedPlugin) Name() string { return CombinedName }

// combinedVerdicts are one cycle's verdicts of the combined plugin's filters, in their order,
// over one node list.
type combinedVerdicts struct {
	list  *nodeList
	parts []*verdicts
}

// Clone implements fwk.StateData: the verdicts are shared (see verdicts.Clone).
func (c *combinedVerdicts) Clone() fwk.StateData { return c }

// PreFilter implements fwk.PreFilterPlugin: each filter's verdicts are prepared as the
// filter's own plugin prepares them (judged chunk by chunk as Filter asks). Without filters, the
// plugin's Filter is skipped.
func (p *combinedPlugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if len(p.filters) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	list, _ := p.adapter.nodeList(nodes)
	c := &combinedVerdicts{list: list, parts: make([]*verdicts, len(p.filters))}
	for k, f := range p.filters {
		vs, err := p.adapter.prepareVerdicts(ctx, pod, list, f.name, f.fns)
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("%s: %w", f.name, err))
		}
		c.parts[k] = vs
	}
	p.filtered.write(state, combinedFilterKey, c)
	return nil, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin: the verdicts do not depend on the pods
// placed on a node.
func (p *combinedPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter implements fwk.FilterPlugin: the filters' verdicts on the node, in order, as the
// separate plugins' Filter would give them (kube-scheduler stops at the first plugin that
// rejects a node; so does this); a rejection's reason is prefixed with its function's name
// ("safe-overload: cpu risk ..."), since the scheduler records the plugin, agents, as the one
// that rejected.
func (p *combinedPlugin) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	var c *combinedVerdicts
	i := -1
	if data, err := p.filtered.read(state, combinedFilterKey); err == nil {
		c = data.(*combinedVerdicts)
		if j, ok := c.list.position(node); ok { // one lookup for every filter
			i = int(j)
		}
	}
	for k, f := range p.filters {
		var vs *verdicts
		if c != nil {
			vs = c.parts[k]
		}
		v, err := p.adapter.verdictOf(ctx, pod, f.fns, vs, node, i)
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("filter %s failed: %w", f.name, err))
		}
		if s := rejection(v, f.rejected); s != nil {
			return s
		}
	}
	return nil
}

// EventsToRegister implements fwk.EnqueueExtensions: the events of every filter, as its own
// plugin registers them (every event for one that declares nothing).
func (p *combinedPlugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	var events []fwk.ClusterEventWithHint
	for _, f := range p.filters {
		events = append(events, eventsFor(f.fns.requeue)...)
	}
	return events, nil
}

// PreScore implements fwk.PreScorePlugin: each prioritize function scores the feasible nodes,
// as its own plugin's PreScore does (chunk by chunk as Score asks, or every node in one call
// here), and the node's score is their weighted mean in the framework's range, rounded half up:
//
//	score = floor((sum_i w_i * 10 * clamp(s_i, 0, 10)) / W + 1/2),  W = sum_i w_i
//
// With the plugin's weight W, kube-scheduler adds W * score, which is sum_i w_i * 10 * s_i, the
// separate plugins' total, exactly when W divides 10 * sum_i w_i * s_i (always for W = 1, 2, 5,
// 10) and within W/2 otherwise: a tenth of the rounding of the extender's priorities/combined,
// whose scores are 0..10. A function that fails counts 0 for the nodes it failed to score (its
// own plugin's would be 0 or skipped) and is logged; when every function scores in one call here
// and all fail, the plugin's Score is skipped.
func (p *combinedPlugin) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if len(p.scorers) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	f, status := p.adapter.feasibleViews(state, nodes)
	if status != nil {
		return status
	}
	var chunked []combinedPart
	var sums []int64 // of the functions that score here, by feasible node
	answered := false
	for _, s := range p.scorers {
		if p.adapter.chunked(s.fns) {
			chunked = append(chunked, s)
			continue
		}
		list, err := p.adapter.prioritize(f.withPositions(ctx, 0, f.n), pod, f.viewsOf(0, f.n), s.name, s.fns)
		if err != nil {
			continue
		}
		if sums == nil {
			sums = make([]int64, f.n)
		}
		answered = true
		for i, v := range list {
			sums[i] += s.weight * scaled(v)
		}
	}
	mean := func(sum int64) int64 { return (2*sum + p.total) / (2 * p.total) } // floor(sum/W + 1/2), all terms non-negative
	if len(chunked) == 0 {
		if !answered {
			return fwk.NewStatus(fwk.Skip)
		}
		p.scored.write(state, combinedScoreKey, newFixedScores(f, func(i int) int64 { return mean(sums[i]) }))
		return nil
	}
	p.scored.write(state, combinedScoreKey, newChunkScores(f, func(ctx context.Context, lo int, views []*corev1.Node, out []int64) error {
		if sums != nil {
			copy(out, sums[lo:])
		}
		var errs []error
		for _, s := range chunked {
			list, err := s.fns.score(ctx, pod, views)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
				continue
			}
			for i, v := range list {
				out[i] += s.weight * scaled(v)
			}
		}
		for i := range out {
			out[i] = mean(out[i])
		}
		return errors.Join(errs...)
	}, p.adapter.logChunkFailure(ctx, pod, CombinedName)))
	return nil
}

// Score implements fwk.ScorePlugin: the node's score, from PreScore's table.
func (p *combinedPlugin) Score(ctx context.Context, state fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	return scoreFromTable(ctx, state, &p.scored, combinedScoreKey, CombinedName, nodeInfo)
}

// ScoreExtensions implements fwk.ScorePlugin: the scores are already in the framework's range.
func (p *combinedPlugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod implements fwk.SignPlugin: the pod is signed as each function's own plugin would sign
// it (base.SignPod), when all of them would; otherwise the first refusal is the plugin's.
func (p *combinedPlugin) SignPod(ctx context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	var out []fwk.SignFragment
	for _, f := range p.all {
		b := base{name: f.name, adapter: p.adapter, fns: f.fns}
		frags, status := b.SignPod(ctx, pod)
		if status != nil {
			return nil, fwk.NewStatus(status.Code(), f.name+": "+status.Message())
		}
		out = frags // the same fragment for every function: the pod, as an agent may read it
	}
	return out, nil
}

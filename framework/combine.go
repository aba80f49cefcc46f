package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// CombinedName names the agent Combine returns and its one prioritizer, served at
// /scheduler/priorities/combined.
const CombinedName = "combined"

// MaxCombinedWeight bounds a weight of a combination: far above any useful ratio, and far from
// overflowing the sums.
const MaxCombinedWeight = 1000

// Weighted is one prioritize function of a combination, by name, with its weight.
type Weighted struct {
	Name   string
	Weight int64
}

// ParseWeighted reads a combination: comma-separated name=weight items
// ("safe-overload=2,safe-balance=1,congestion=1"), each weight an integer in
// [1, MaxCombinedWeight], each name once. Spaces around items are ignored.
func ParseWeighted(spec string) ([]Weighted, error) {
	var out []Weighted
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, weight, ok := strings.Cut(item, "=")
		name, weight = strings.TrimSpace(name), strings.TrimSpace(weight)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not name=weight (e.g. safe-overload=2)", item)
		}
		w, err := strconv.ParseInt(weight, 10, 64)
		if err != nil || w < 1 || w > MaxCombinedWeight {
			return nil, fmt.Errorf("%q: the weight must be an integer from 1 to %d", item, MaxCombinedWeight)
		}
		for _, o := range out {
			if o.Name == name {
				return nil, fmt.Errorf("priority %q is listed twice", name)
			}
		}
		out = append(out, Weighted{Name: name, Weight: w})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no priority listed")
	}
	return out, nil
}

// Combine returns the agent "combined" (CombinedName), whose one prioritizer, also named
// "combined", scores each node with the weighted mean of the scores the listed prioritize
// functions of agents give it, rounded half up:
//
//	score = floor(sum(w_i * s_i) / W + 1/2),  W = sum(w_i)
//
// each s_i clamped to [0, MaxScore] first, as the server clamps a function's own answer. One
// extender entry calling it with weight W gives kube-scheduler the same total as one entry per
// function with weight w_i, up to that rounding, in one HTTP call instead of several. The parts
// run concurrently (measured in docs/results/performance-history.md, "One call for several priorities"); the
// error of the first part in the list that failed is the combined call's error. Combine fails when a name is no
// prioritizer of agents.
func Combine(agents []Agent, parts []Weighted) (Agent, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no priority listed")
	}
	var served []string
	funcs := map[string]PrioritizeFunc{}
	for _, a := range agents {
		for _, p := range a.Prioritizers() {
			served = append(served, p.Name)
			funcs[p.Name] = p.Func
		}
	}
	c := &combined{}
	for _, p := range parts {
		f := funcs[p.Name]
		if f == nil {
			return nil, fmt.Errorf("priority %q is not served by the agents of this process (served: %s)",
				p.Name, strings.Join(served, ", "))
		}
		if p.Weight < 1 || p.Weight > MaxCombinedWeight {
			return nil, fmt.Errorf("priority %q: weight %d is not an integer from 1 to %d", p.Name, p.Weight, MaxCombinedWeight)
		}
		c.parts = append(c.parts, part{name: p.Name, weight: p.Weight, f: f})
		c.total += p.Weight
	}
	return c, nil
}

type part struct {
	name   string
	weight int64
	f      PrioritizeFunc
}

type combined struct {
	parts []part
	total int64
}

func (c *combined) Name() string      { return CombinedName }
func (c *combined) Filters() []Filter { return nil }
func (c *combined) Prioritizers() []Prioritizer {
	return []Prioritizer{{Name: CombinedName, Func: c.prioritize}}
}

func (c *combined) prioritize(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	scores := make([][]int64, len(c.parts))
	errs := make([]error, len(c.parts))
	run := func(i int) { scores[i], errs[i] = c.parts[i].f(ctx, pod, nodes) }
	if len(c.parts) == 1 {
		run(0)
	} else {
		// One goroutine a part, as kube-scheduler would call separate extender entries at once.
		// A panic is raised again here, on the caller's goroutine, where the server's recovery
		// turns it into a 500 rather than a crash.
		var (
			wg       sync.WaitGroup
			once     sync.Once
			panicked any
		)
		for i := range c.parts {
			wg.Go(func() {
				defer func() {
					if p := recover(); p != nil {
						once.Do(func() { panicked = p })
					}
				}()
				run(i)
			})
		}
		wg.Wait()
		if panicked != nil {
			panic(panicked)
		}
	}
	sums := make([]int64, len(nodes))
	for k, p := range c.parts {
		if errs[k] != nil {
			return nil, fmt.Errorf("priority %s: %w", p.name, errs[k])
		}
		if len(scores[k]) != len(nodes) {
			return nil, fmt.Errorf("priority %s returned %d scores for %d nodes", p.name, len(scores[k]), len(nodes))
		}
		for i, s := range scores[k] {
			sums[i] += p.weight * min(max(s, 0), MaxScore)
		}
	}
	// floor(sum/W + 1/2) = floor((2 sum + W) / 2W), all terms non-negative.
	for i, s := range sums {
		sums[i] = (2*s + c.total) / (2 * c.total)
	}
	return sums, nil
}

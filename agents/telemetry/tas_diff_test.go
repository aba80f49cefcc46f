package telemetry

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// This file holds a small re-statement of Telemetry Aware Scheduling's decision rules, read
// from its code (github.com/intel/platform-aware-scheduling, telemetry-aware-scheduling/pkg:
// telemetryscheduler/telemetryscheduler.go, strategies/core/operator.go,
// strategies/{dontschedule,deschedule,labeling}/, controller/controller.go), and a test that
// compares this agent's decisions with it on seeded random policies and metric values. Every
// difference it tolerates is one the README's "Beyond TAS" lists; each is named where it is.

// tasRule, tasStrategy and tasPolicy are TAS's v1alpha1 types (telemetrypolicy/api/v1alpha1).
type tasRule struct {
	Metricname string   `json:"metricname"`
	Operator   string   `json:"operator"`
	Target     int64    `json:"target"`
	Labels     []string `json:"labels,omitempty"`
}

type tasStrategy struct {
	LogicalOperator string    `json:"logicalOperator,omitempty"`
	Rules           []tasRule `json:"rules"`
}

type tasPolicy struct {
	Name       string
	Strategies map[string]tasStrategy
}

// tasMetrics is TAS's metric cache: metric -> node -> value. It has no notion of age.
type tasMetrics map[string]map[string]float64

// tasEvaluate is core.EvaluateRule: value < target (LessThan), > (GreaterThan), == (Equals);
// any other operator never holds.
func tasEvaluate(v float64, r tasRule) bool {
	t := float64(r.Target)
	switch r.Operator {
	case "LessThan":
		return v < t
	case "GreaterThan":
		return v > t
	case "Equals":
		return v == t
	}
	return false
}

// tasViolated is the Violated method of dontschedule and deschedule: for each rule, each node
// of the metric's values whose value holds counts one; allOf: violated when the count reaches
// the number of rules, otherwise (anyOf or anything else) at the first rule that holds.
func tasViolated(s tasStrategy, m tasMetrics) map[string]bool {
	out, count := map[string]bool{}, map[string]int{}
	for _, r := range s.Rules {
		for node, v := range m[r.Metricname] {
			if !tasEvaluate(v, r) {
				continue
			}
			count[node]++
			if s.LogicalOperator != "allOf" || count[node] == len(s.Rules) {
				out[node] = true
			}
		}
	}
	return out
}

// tasFilter is MetricsExtender.filterNodes: without a dontschedule strategy with rules every
// node passes; otherwise the nodes its Violated returns fail ("Node violates").
func tasFilter(p tasPolicy, m tasMetrics, nodes []string) map[string]bool {
	failed := map[string]bool{}
	s, ok := p.Strategies["dontschedule"]
	if !ok || len(s.Rules) == 0 {
		return failed
	}
	v := tasViolated(s, m)
	for _, n := range nodes {
		if v[n] {
			failed[n] = true
		}
	}
	return failed
}

// tasPrioritize is MetricsExtender.prioritizeNodes: the first rule of scheduleonmetric (when it
// has a metric name); the candidate nodes that have a value of its metric, ordered by
// core.OrderedList (GreaterThan: descending value, LessThan: ascending, any other operator:
// not sorted, map order, drawn from rng), score 10, 9, 8... in that order (negative past the
// 11th). Nodes without a value are not in the answer: the scheduler counts 0. ordered reports
// whether the order is TAS's decision (false: map order, random).
func tasPrioritize(rng *rand.Rand, p tasPolicy, m tasMetrics, nodes []string) (scores map[string]int64, ordered bool) {
	s, ok := p.Strategies["scheduleonmetric"]
	if !ok || len(s.Rules) == 0 || s.Rules[0].Metricname == "" {
		return nil, true
	}
	r := s.Rules[0]
	type nv struct {
		node string
		v    float64
	}
	var list []nv
	for _, n := range nodes {
		if v, ok := m[r.Metricname][n]; ok {
			list = append(list, nv{n, v})
		}
	}
	rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] }) // map order
	switch r.Operator {
	case "GreaterThan":
		sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	case "LessThan":
		sort.Slice(list, func(i, j int) bool { return list[i].v < list[j].v })
	}
	scores = map[string]int64{}
	for i, x := range list {
		scores[x.node] = int64(10 - i)
	}
	return scores, r.Operator == "GreaterThan" || r.Operator == "LessThan"
}

// tasLabeling is the labeling strategy's nodeStatusForStrategy on one node: the rules that
// hold (fetchRuleViolatingNodes; allOf keeps the node only when every rule holds,
// filterViolatingNodeForAllLogicalOperator); per label key, the winning rule
// (minMaxFilterViolatedRules: the first, replaced by a later one with a strictly larger value
// for GreaterThan, smaller for LessThan; two operators on one key panic, recovered, and the
// policy writes no label on the node: panicked); then createLabels writes every label of every
// winning rule, in map order, so a key may get several values, the last patch winning at random.
// The result: key (without the prefix) -> the values TAS may write.
func tasLabeling(s tasStrategy, m tasMetrics, node string) (candidates map[string][]string, panicked bool) {
	type result struct {
		rule int
		v    float64
	}
	var held []result
	for i, r := range s.Rules {
		if v, ok := m[r.Metricname][node]; ok && tasEvaluate(v, r) {
			held = append(held, result{i, v})
		}
	}
	if len(held) == 0 || (s.LogicalOperator == "allOf" && len(held) != len(s.Rules)) {
		return nil, false
	}
	winners := map[string]result{}
	for _, res := range held {
		r := s.Rules[res.rule]
		for _, l := range r.Labels {
			name := strings.Split(l, "=")[0]
			old, ok := winners[name]
			if ok && s.Rules[old.rule].Operator != r.Operator {
				return nil, true
			}
			if !ok || (r.Operator == "GreaterThan" && res.v > old.v) || (r.Operator == "LessThan" && res.v < old.v) {
				winners[name] = res
			}
		}
	}
	candidates = map[string][]string{}
	for _, w := range winners {
		// Within one rule, its labels are patched in order: a key listed twice ends with its
		// last value.
		last := map[string]string{}
		for _, l := range s.Rules[w.rule].Labels {
			k, v, _ := strings.Cut(l, "=")
			last[k] = v
		}
		for k, v := range last {
			if !slices.Contains(candidates[k], v) {
				candidates[k] = append(candidates[k], v)
			}
		}
	}
	return candidates, false
}

// randomPolicy draws a policy the CRD accepts: known and sometimes unknown strategy names,
// sometimes no rules, allOf/anyOf/none, rules on a few metrics with small targets, labels on
// labeling rules (and sometimes on others), and sometimes a name too long for a label key.
func randomPolicy(rng *rand.Rand) tasPolicy {
	p := tasPolicy{Name: "p", Strategies: map[string]tasStrategy{}}
	if rng.IntN(20) == 0 {
		p.Name = strings.Repeat("long", 17) // 68 characters: no label key
	}
	names := []string{DontSchedule, ScheduleOnMetric, Deschedule, Labeling}
	for _, name := range names {
		if rng.IntN(3) == 0 {
			continue
		}
		p.Strategies[name] = randomStrategy(rng, name)
	}
	if rng.IntN(10) == 0 {
		p.Strategies["sometimesschedule"] = randomStrategy(rng, "sometimesschedule")
	}
	return p
}

func randomStrategy(rng *rand.Rand, name string) tasStrategy {
	var s tasStrategy
	s.LogicalOperator = []string{"", AnyOf, AllOf}[rng.IntN(3)]
	n := 1 + rng.IntN(4)
	if rng.IntN(15) == 0 {
		n = 0
	}
	for range n {
		r := tasRule{
			Metricname: fmt.Sprintf("m%d", rng.IntN(4)),
			Operator:   []string{Equals, LessThan, GreaterThan}[rng.IntN(3)],
			Target:     int64(rng.IntN(10) - 2),
		}
		if name == Labeling || rng.IntN(10) == 0 {
			for range rng.IntN(3) + 1 {
				r.Labels = append(r.Labels, fmt.Sprintf("k%d=v%d", rng.IntN(3), rng.IntN(4)))
			}
		}
		s.Rules = append(s.Rules, r)
	}
	return s
}

// randomMetrics draws each metric's value on each node (some missing): integers and halves
// around the targets, so that Equals holds now and then and values tie.
func randomMetrics(rng *rand.Rand, nodes []string) tasMetrics {
	m := tasMetrics{}
	for i := range 4 {
		metric := fmt.Sprintf("m%d", i)
		m[metric] = map[string]float64{}
		for _, n := range nodes {
			if rng.IntN(4) == 0 {
				continue
			}
			m[metric][n] = float64(rng.IntN(24)-4) / 2
		}
	}
	return m
}

func (p tasPolicy) object(t *testing.T) *unstructured.Unstructured {
	b, err := json.Marshal(map[string]any{"apiVersion": "telemetry.intel.com/v1alpha1", "kind": "TASPolicy",
		"metadata": map[string]any{"name": p.Name, "namespace": "default"}, "spec": map[string]any{"strategies": p.Strategies}})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

// acts reports whether TAS acts on some strategy of the policy: a known name and at least one
// rule (its code skips a strategy without rules, and casts nothing else), and for deschedule a
// name its node patch accepts as a label key.
func (p tasPolicy) acts() bool {
	for name, s := range p.Strategies {
		if slices.Contains(knownStrategies, name) && len(s.Rules) > 0 && (name != Deschedule || len(p.Name) <= 63) {
			return true
		}
	}
	return false
}

// TestDecisionsAgreeWithTAS compares the filter, the priority and the node labels with TAS's
// rules on thousands of seeded random policies and metric sets, all values fresh. The
// differences allowed are the README's "Beyond TAS":
//   - a policy with no usable strategy rejects its pods (TAS lets them through), unless it
//     states no rule at all (every strategy rules: [], or none): then its pods pass, as in TAS;
//   - scores are continuous: nodes TAS ranks apart may tie, never swap; Equals is ordered by
//     distance to the target (TAS: map order); past the 10th node TAS's scores reach 0 and go
//     negative, below nodes without a value, ours stay 1..10 above them;
//   - two operators setting one label key: TAS panics and writes none of the policy's labels,
//     ours keeps the first rule's; where TAS writes a key twice (at random), ours is one of them.
//
// A second pass makes some values stale: ours decides as TAS would without them.
func TestDecisionsAgreeWithTAS(t *testing.T) {
	const runs = 3000
	rng := rand.New(rand.NewPCG(20, 1))
	seen := map[string]int{}
	for run := range runs {
		p := randomPolicy(rng)
		nodes := make([]string, 1+rng.IntN(14))
		for i := range nodes {
			nodes[i] = fmt.Sprintf("n%02d", i)
		}
		m := randomMetrics(rng, nodes)
		stale := run%2 == 1 // half the runs: some values are stale, TAS sees only the fresh ones
		vals, fresh := Values{}, tasMetrics{}
		for metric, byNode := range m {
			vals[metric], fresh[metric] = map[string]Sample{}, map[string]float64{}
			for n, v := range byNode {
				at := t0
				if stale && rng.IntN(4) == 0 {
					at = t0.Add(-2 * time.Minute)
				} else {
					fresh[metric][n] = v
				}
				vals[metric][n] = Sample{Value: v, Time: at}
			}
		}
		desc := func() string {
			b, _ := json.Marshal(p)
			mb, _ := json.Marshal(m)
			return fmt.Sprintf("run %d\npolicy %s\nmetrics %s", run, b, mb)
		}

		a := &Agent{cfg: DefaultConfig(), policies: newPolicyStore(), now: func() time.Time { return t0 }}
		a.values.Store(&vals)
		ours, err := ParsePolicy(p.object(t))
		if err != nil {
			a.policies.setInvalid("default/"+p.Name, err.Error())
		} else {
			a.policies.set(ours)
		}
		pod := fixtures.MakePod().Name("pod").Namespace("default").Label(PodLabel, p.Name).Obj()
		nodeObjs := make([]*corev1.Node, len(nodes))
		for i, n := range nodes {
			nodeObjs[i] = fixtures.MakeNode().Name(n).Obj()
		}

		// Filter.
		verdicts, err := a.filter(t.Context(), pod, nodeObjs)
		if err != nil {
			t.Fatal(err)
		}
		if ours == nil {
			// Beyond TAS: nothing usable left, the pod is rejected with the reason.
			seen["unusable policy rejects"]++
			if p.acts() {
				t.Fatalf("%s\nTAS acts on this policy, ours finds nothing usable: %v", desc(), err)
			}
			for i, v := range verdicts {
				if v.Passes() || !strings.Contains(v.Reason, "is invalid") {
					t.Fatalf("%s\nnode %s: %+v, want a rejection for the unusable policy", desc(), nodes[i], v)
				}
			}
		} else {
			if ours.Empty {
				// As TAS: no strategy has a rule, the pod passes everywhere (checked below).
				seen["rule-less policy passes"]++
				if p.acts() {
					t.Fatalf("%s\nTAS acts on this policy, ours finds it empty", desc())
				}
			}
			want := tasFilter(p, fresh, nodes)
			for i, v := range verdicts {
				if v.Passes() == want[nodes[i]] {
					t.Fatalf("%s\nnode %s: ours %+v, TAS fails it: %v", desc(), nodes[i], v, want[nodes[i]])
				}
			}
			if len(want) > 0 {
				seen["filter rejects"]++
			}
		}

		// Priority.
		scores, err := a.score(t.Context(), pod, nodeObjs)
		if err != nil {
			t.Fatal(err)
		}
		tas, ordered := tasPrioritize(rng, p, fresh, nodes)
		for i, n := range nodes {
			_, hasValue := tas[n]
			if hasValue != (scores[i] > 0) || scores[i] < 0 || scores[i] > 10 {
				t.Fatalf("%s\nnode %s: ours %d, TAS %v (listed %v)", desc(), n, scores[i], tas[n], hasValue)
			}
			if tas[n] <= 0 && hasValue {
				seen["TAS scores a node with a value 0 or below"]++
			}
			for j, o := range nodes {
				_, otherHas := tas[o]
				if !ordered || !hasValue || !otherHas {
					continue
				}
				rule := p.Strategies[ScheduleOnMetric].Rules[0]
				if fresh[rule.Metricname][n] == fresh[rule.Metricname][o] {
					continue // ties: TAS's sort is not stable
				}
				switch {
				case scores[i] == scores[j]:
					seen["continuous scores tie"]++
				case (scores[i] > scores[j]) != (tas[n] > tas[o]):
					t.Fatalf("%s\nnodes %s, %s: ours %d, %d; TAS %d, %d", desc(), n, o, scores[i], scores[j], tas[n], tas[o])
				}
			}
		}

		// Labels: deschedule and labeling, node by node.
		var policies []*Policy
		if ours != nil {
			policies = []*Policy{ours}
		}
		for _, n := range nodes {
			got := wantedLabels(policies, vals, n, t0, time.Minute)
			if ours == nil {
				if len(got) > 0 {
					t.Fatalf("%s\nnode %s: labels %v from an unusable policy", desc(), n, got)
				}
				continue
			}
			// deschedule: <policy>=violating where violated; TAS's patch fails on a name that is
			// no label key, so neither writes it.
			if s, ok := p.Strategies[Deschedule]; ok && len(p.Name) <= 63 {
				if _, has := got[p.Name]; has != tasViolated(s, fresh)[n] {
					t.Fatalf("%s\nnode %s: deschedule label %v, TAS violated %v", desc(), n, has, tasViolated(s, fresh)[n])
				}
			} else if _, has := got[p.Name]; has {
				t.Fatalf("%s\nnode %s: deschedule label without a usable deschedule strategy", desc(), n)
			}
			prefix := LabelingPrefix + p.Name + "/"
			labeling := map[string]string{}
			for k, v := range got {
				if strings.HasPrefix(k, prefix) {
					labeling[strings.TrimPrefix(k, prefix)] = v
				}
			}
			s, ok := p.Strategies[Labeling]
			if !ok || len(prefix)-1 > 253 {
				if len(labeling) > 0 {
					t.Fatalf("%s\nnode %s: labeling labels %v without a labeling strategy", desc(), n, labeling)
				}
				continue
			}
			cands, panicked := tasLabeling(s, fresh, n)
			if panicked {
				seen["two operators on one key: TAS writes none"]++
				continue
			}
			if len(cands) != len(labeling) {
				t.Fatalf("%s\nnode %s: labeling labels %v, TAS %v", desc(), n, labeling, cands)
			}
			for k, vs := range cands {
				if !slices.Contains(vs, labeling[k]) {
					t.Fatalf("%s\nnode %s: label %s=%q, TAS writes one of %v", desc(), n, k, labeling[k], vs)
				}
				if len(vs) > 1 {
					seen["TAS writes a key twice, at random"]++
				} else {
					seen["labels agree"]++
				}
			}
		}
	}
	t.Logf("%d runs: %v", runs, seen)
	for _, c := range []string{"unusable policy rejects", "rule-less policy passes", "filter rejects", "continuous scores tie", "labels agree",
		"two operators on one key: TAS writes none"} {
		if seen[c] == 0 {
			t.Errorf("no run exercised %q: the generator misses it", c)
		}
	}
}

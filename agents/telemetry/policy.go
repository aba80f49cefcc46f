package telemetry

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The TASPolicy custom resource, as Telemetry Aware Scheduling defines it
// (yamlfiles/telemetry-policy-crd.yaml).
var PolicyResource = schema.GroupVersionResource{Group: "telemetry.intel.com", Version: "v1alpha1", Resource: "taspolicies"}

// PodLabel is the pod label naming the policy (in the pod's namespace) that schedules the pod.
const PodLabel = "telemetry-policy"

// Strategy names.
const (
	DontSchedule     = "dontschedule"
	ScheduleOnMetric = "scheduleonmetric"
	Deschedule       = "deschedule"
	Labeling         = "labeling"
)

// Operators and logical operators.
const (
	Equals      = "Equals"
	LessThan    = "LessThan"
	GreaterThan = "GreaterThan"
	AllOf       = "allOf"
	AnyOf       = "anyOf"
)

// LabelingPrefix starts the keys of the labels the labeling strategy writes:
// telemetry.aware.scheduling.<policy>/<key>.
const LabelingPrefix = "telemetry.aware.scheduling."

// ViolatingValue is the value of the label <policy>=violating the deschedule strategy writes.
const ViolatingValue = "violating"

// Rule is one condition on a node metric.
type Rule struct {
	Metricname string   `json:"metricname"`
	Operator   string   `json:"operator"`
	Target     int64    `json:"target"`
	Labels     []string `json:"labels,omitempty"`
}

// Strategy is a set of rules combined by LogicalOperator (anyOf when empty).
type Strategy struct {
	PolicyName      string `json:"policyName,omitempty"`
	LogicalOperator string `json:"logicalOperator,omitempty"`
	Rules           []Rule `json:"rules"`
}

// AllOf reports whether every rule must hold (allOf) rather than any (anyOf, the default).
func (s *Strategy) AllOf() bool { return s.LogicalOperator == AllOf }

// Policy is a TASPolicy reduced to what can be used: the strategies, rules and labels that
// are valid. Problems names every part left out (or read differently), for the InvalidPolicy
// event. A policy with nothing usable left is never a Policy (ParsePolicy fails), except one
// that states no rule at all (Empty).
type Policy struct {
	Namespace, Name string
	Strategies      map[string]*Strategy
	Problems        []string
	// Empty: no strategy has a rule (every one has rules: [], or there is none; the CRD allows
	// both). TAS acts on no strategy without rules, so its pods pass every node, unscored, and
	// so do they here; the EmptyPolicy event says so.
	Empty bool
}

// Key is namespace/name.
func (p *Policy) Key() string { return p.Namespace + "/" + p.Name }

// Metrics returns the metric names the policy's rules read.
func (p *Policy) Metrics() []string {
	var out []string
	for _, s := range p.Strategies {
		for _, r := range s.Rules {
			if !slices.Contains(out, r.Metricname) {
				out = append(out, r.Metricname)
			}
		}
	}
	return out
}

type policySpec struct {
	Strategies map[string]*Strategy `json:"strategies"`
}

// ParsePolicy decodes a TASPolicy object and keeps what is usable of it, as TAS uses the rest
// of a policy around the parts it cannot use (see usable). Every problem is reported: in the
// policy's Problems when something usable is left, else in the error (a spec that does not
// decode, or no usable strategy while some strategy has rules: rules that cannot be used are a
// mistake to report to the pods, not a policy that asks nothing).
func ParsePolicy(u *unstructured.Unstructured) (*Policy, error) {
	specObj, ok := u.Object["spec"].(map[string]any)
	if !ok {
		return nil, errors.New("no spec")
	}
	var spec policySpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(specObj, &spec, true); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	p := &Policy{Namespace: u.GetNamespace(), Name: u.GetName()}
	p.Strategies, p.Problems = p.usable(spec.Strategies)
	p.Empty = !slices.ContainsFunc(slices.Collect(maps.Values(spec.Strategies)), func(s *Strategy) bool { return s != nil && len(s.Rules) > 0 })
	if len(p.Strategies) == 0 && !p.Empty {
		return nil, errors.New(strings.Join(append(p.Problems, "no usable strategy is left"), "; "))
	}
	return p, nil
}

var knownStrategies = []string{DontSchedule, ScheduleOnMetric, Deschedule, Labeling}

// usable returns the strategies of in that can be used, reduced to their usable rules and
// labels, and the problems met. What is left out, and why it matches TAS:
//   - a strategy with an unknown name, or without rules: TAS never acts on either;
//   - a rule without metric or with an unknown operator: it never holds in TAS. So it is
//     dropped from an anyOf strategy, and an allOf strategy holding one (never violated) is
//     dropped whole, as is a scheduleonmetric whose first (only used) rule it is;
//   - labels on a rule outside labeling: TAS ignores them;
//   - a labeling label that is not key=value or not a valid label: TAS's patch fails;
//   - deschedule when the policy's name is no label key: TAS's patch fails.
//
// An unknown logicalOperator is read as anyOf, as TAS reads anything but allOf.
func (p *Policy) usable(in map[string]*Strategy) (map[string]*Strategy, []string) {
	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	out := map[string]*Strategy{}
	if len(in) == 0 {
		report("spec.strategies: no strategy")
	}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		at := "spec.strategies." + name
		if !slices.Contains(knownStrategies, name) {
			report("%s: unknown strategy %q (known: %s): ignored", at, name, strings.Join(knownStrategies, ", "))
			continue
		}
		s := in[name]
		if s == nil || len(s.Rules) == 0 {
			report("%s: no rules: ignored", at)
			continue
		}
		if name == Deschedule {
			if msgs := validation.IsQualifiedName(p.Name); len(msgs) > 0 {
				report("%s: the policy name %q is not a valid node label key (%s): ignored", at, p.Name, strings.Join(msgs, "; "))
				continue
			}
		}
		kept := &Strategy{PolicyName: s.PolicyName, LogicalOperator: s.LogicalOperator}
		if kept.LogicalOperator != "" && kept.LogicalOperator != AllOf && kept.LogicalOperator != AnyOf {
			report("%s.logicalOperator: unknown %q (allOf or anyOf): read as anyOf", at, kept.LogicalOperator)
			kept.LogicalOperator = AnyOf
		}
		neverViolated := false
		for i, r := range s.Rules {
			rat := fmt.Sprintf("%s.rules[%d]", at, i)
			var bad []string
			if r.Metricname == "" {
				bad = append(bad, "no metricname")
			}
			switch r.Operator {
			case Equals, LessThan, GreaterThan:
			default:
				bad = append(bad, fmt.Sprintf("unknown operator %q (Equals, LessThan or GreaterThan)", r.Operator))
			}
			if len(bad) > 0 {
				switch {
				case name == ScheduleOnMetric && i > 0:
					report("%s: %s: not used (scheduleonmetric uses its first rule)", rat, strings.Join(bad, ", "))
				case kept.AllOf() || (name == ScheduleOnMetric && i == 0):
					report("%s: %s: the rule never holds, so the strategy is ignored", rat, strings.Join(bad, ", "))
					neverViolated = true
				default:
					report("%s: %s: the rule never holds: ignored", rat, strings.Join(bad, ", "))
				}
				continue
			}
			if name != Labeling && len(r.Labels) > 0 {
				report("%s.labels: only the labeling strategy writes labels: ignored", rat)
				r.Labels = nil
			}
			var labels []string
			for _, l := range r.Labels {
				if _, _, err := p.labelingLabel(l); err != nil {
					report("%s.labels: %v: ignored", rat, err)
					continue
				}
				labels = append(labels, l)
			}
			r.Labels = labels
			kept.Rules = append(kept.Rules, r)
		}
		if neverViolated || len(kept.Rules) == 0 {
			continue
		}
		out[name] = kept
	}
	return out, problems
}

// labelingLabel returns the node label a labeling rule's "key=value" sets:
// telemetry.aware.scheduling.<policy>/<key>=<value>.
func (p *Policy) labelingLabel(kv string) (key, value string, err error) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return "", "", fmt.Errorf("%q is not key=value", kv)
	}
	key = LabelingPrefix + p.Name + "/" + k
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		return "", "", fmt.Errorf("label key %q: %s", key, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		return "", "", fmt.Errorf("label value %q: %s", v, strings.Join(msgs, "; "))
	}
	return key, v, nil
}

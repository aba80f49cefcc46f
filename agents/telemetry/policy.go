package telemetry

import (
	"errors"
	"fmt"
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

// Policy is a validated TASPolicy.
type Policy struct {
	Namespace, Name string
	Strategies      map[string]*Strategy
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

// ParsePolicy decodes and validates a TASPolicy object. Every problem is reported, joined.
func ParsePolicy(u *unstructured.Unstructured) (*Policy, error) {
	specObj, ok := u.Object["spec"].(map[string]any)
	if !ok {
		return nil, errors.New("no spec")
	}
	var spec policySpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(specObj, &spec, true); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	p := &Policy{Namespace: u.GetNamespace(), Name: u.GetName(), Strategies: spec.Strategies}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

var knownStrategies = []string{DontSchedule, ScheduleOnMetric, Deschedule, Labeling}

func (p *Policy) validate() error {
	var errs []error
	if len(p.Strategies) == 0 {
		errs = append(errs, errors.New("spec.strategies: no strategy"))
	}
	names := make([]string, 0, len(p.Strategies))
	for name := range p.Strategies {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := p.Strategies[name]
		at := "spec.strategies." + name
		if !slices.Contains(knownStrategies, name) {
			errs = append(errs, fmt.Errorf("%s: unknown strategy %q (known: %s)", at, name, strings.Join(knownStrategies, ", ")))
			continue
		}
		if s == nil || len(s.Rules) == 0 {
			errs = append(errs, fmt.Errorf("%s: no rules", at))
			continue
		}
		if s.LogicalOperator != "" && s.LogicalOperator != AllOf && s.LogicalOperator != AnyOf {
			errs = append(errs, fmt.Errorf("%s.logicalOperator: unknown %q (allOf or anyOf)", at, s.LogicalOperator))
		}
		for i, r := range s.Rules {
			rat := fmt.Sprintf("%s.rules[%d]", at, i)
			if r.Metricname == "" {
				errs = append(errs, fmt.Errorf("%s.metricname: empty", rat))
			}
			switch r.Operator {
			case Equals, LessThan, GreaterThan:
			default:
				errs = append(errs, fmt.Errorf("%s.operator: unknown %q (Equals, LessThan or GreaterThan)", rat, r.Operator))
			}
			if name != Labeling && len(r.Labels) > 0 {
				errs = append(errs, fmt.Errorf("%s.labels: only the labeling strategy writes labels", rat))
			}
			for _, l := range r.Labels {
				if _, _, err := p.labelingLabel(l); err != nil {
					errs = append(errs, fmt.Errorf("%s.labels: %w", rat, err))
				}
			}
		}
		if name == Deschedule {
			if msgs := validation.IsQualifiedName(p.Name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s: the policy name %q is not a valid node label key: %s", at, p.Name, strings.Join(msgs, "; ")))
			}
		}
	}
	return errors.Join(errs...)
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

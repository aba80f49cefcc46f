package charts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/settings"
)

// schemaAccepts evaluates the keywords values.schema.json gives an agent setting (type,
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, enum, pattern) on v, as Helm's JSON
// Schema validation does.
func schemaAccepts(s map[string]any, v any) error {
	switch s["type"] {
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%v is not an integer", v)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%v is not a number", v)
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%v is not a string", v)
		}
	}
	if f, ok := v.(float64); ok {
		if m, ok := s["minimum"].(float64); ok && f < m {
			return fmt.Errorf("%v < minimum %v", f, m)
		}
		if m, ok := s["maximum"].(float64); ok && f > m {
			return fmt.Errorf("%v > maximum %v", f, m)
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && f <= m {
			return fmt.Errorf("%v <= exclusiveMinimum %v", f, m)
		}
		if m, ok := s["exclusiveMaximum"].(float64); ok && f >= m {
			return fmt.Errorf("%v >= exclusiveMaximum %v", f, m)
		}
	}
	if e, ok := s["enum"].([]any); ok && !slices.Contains(e, v) {
		return fmt.Errorf("%v is not in enum %v", v, e)
	}
	if p, ok := s["pattern"].(string); ok {
		if str, _ := v.(string); !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%q does not match %s", str, p)
		}
	}
	return nil
}

// outside returns values just outside what a setting declares: past each end of its range (the
// end itself where the interval excludes it), or a value not among its choices.
func outside(f settings.Field) []any {
	var out []any
	if r := f.Range; r != nil && !r.Duration {
		lo, hi := r.Min-1, r.Max+1
		if r.MinOpen {
			lo = r.Min
		}
		if r.MaxOpen {
			hi = r.Max
		}
		out = append(out, lo, hi)
	}
	if r := f.Range; r != nil && r.Duration && r.Min >= 0 {
		out = append(out, "-1s") // the schema's pattern takes no sign
	}
	if f.Choices != nil {
		out = append(out, "bogus")
	}
	return out
}

// TestSchemaRefusesWhatValidateRefuses: for every agent setting with a declared range or
// choices, a value outside them is refused by the agent's Validate (or its decoding) and by
// values.schema.json; the default is accepted by both. A duration's bounds are Validate's alone
// (JSON Schema cannot compare durations): the schema only keeps it a duration.
func TestSchemaRefusesWhatValidateRefuses(t *testing.T) {
	data, err := os.ReadFile("kube-safe-scheduler/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	prop := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			m, _ = m["properties"].(map[string]any)[k].(map[string]any)
			if m == nil {
				t.Fatalf("values.schema.json has no %v", keys)
			}
		}
		return m
	}
	checked := 0
	for _, r := range agents.All {
		for _, f := range settings.Fields(r.NewConfig()) {
			s := prop(root, "agents", r.Name, "settings", f.Name)
			if err := schemaAccepts(s, s["default"]); err != nil {
				t.Errorf("%s.%s: the schema refuses the default: %v", r.Name, f.Name, err)
			}
			for _, v := range outside(f) {
				checked++
				if err := schemaAccepts(s, v); err == nil {
					t.Errorf("%s.%s (%s): the schema accepts %v, outside %v%v", r.Name, f.Name, f.Env, v, f.Range, f.Choices)
				}
				cfg := r.NewConfig()
				raw, _ := json.Marshal(map[string]any{f.Name: v})
				if err := json.Unmarshal(raw, cfg); err != nil {
					continue // refused while decoding (pigeon's objective)
				}
				var fe *settings.FieldError
				if err := cfg.Validate(); !errors.As(err, &fe) || !slices.ContainsFunc(settings.Leaves(err), func(e error) bool {
					return errors.As(e, &fe) && fe.Field == f.Name
				}) {
					t.Errorf("%s.%s (%s): Validate accepts %v: %v", r.Name, f.Name, f.Env, v, err)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no setting declares a range or choices")
	}
}

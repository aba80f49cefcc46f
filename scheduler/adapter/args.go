package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/jsonerr"
	"github.com/kube-safe-scheduler/extender/settings"
)

// decodeArgs returns the agent's configuration from a plugin's pluginConfig args: the agent's
// defaults (reg.NewConfig), overwritten by the fields args gives, then the agent's own file when
// it has one. given is false when there are no args (nil, or no raw bytes): the defaults are
// returned. Args are decoded strictly: field names are the JSON names, case-sensitive; an
// unknown or repeated field is an error naming it. The values are checked once, by the agent's
// constructor (Validate), whose errors describe renders.
func decodeArgs(reg framework.Registration, args runtime.Object) (cfg framework.Config, given bool, err error) {
	cfg = reg.NewConfig()
	raw, err := argsJSON(args)
	if err != nil {
		return nil, false, err
	}
	if len(raw) == 0 {
		return cfg, false, nil
	}
	strict, err := sigsjson.UnmarshalStrict(raw, cfg, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, false, fieldOf(reg, raw, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		slices.Sort(msgs)
		return nil, false, fmt.Errorf("%s (the agent's fields are %s)", strings.Join(msgs, "; "), strings.Join(jsonFields(cfg), ", "))
	}
	if fc, ok := cfg.(framework.FileConfig); ok {
		var present map[string]json.RawMessage
		if err := json.Unmarshal(raw, &present); err != nil {
			return nil, false, err
		}
		envs := envToJSON(cfg)
		if err := fc.ApplyFile(func(env string) bool { _, ok := present[envs[env]]; return ok }); err != nil {
			return nil, false, err
		}
	}
	return cfg, true, nil
}

// argsJSON returns a plugin's pluginConfig args as JSON, nil when there are none (nil, or no
// raw bytes).
func argsJSON(args runtime.Object) ([]byte, error) {
	if args == nil {
		return nil, nil
	}
	u, ok := args.(*runtime.Unknown)
	if !ok {
		return nil, fmt.Errorf("want args of type runtime.Unknown, got %T", args)
	}
	raw := bytes.TrimSpace(u.Raw)
	if len(raw) == 0 {
		return nil, nil
	}
	switch u.ContentType {
	case runtime.ContentTypeJSON, "":
		return raw, nil
	case runtime.ContentTypeYAML:
		return yaml.YAMLToJSON(raw)
	default:
		return nil, fmt.Errorf("content type %s is not supported", u.ContentType)
	}
}

// describe returns Validate's error (as the agent's constructor returns it, wrapped or not) with
// each settings.FieldError on its own line as "invalid <field>: <problem>", the field being its
// JSON name in the args.
func describe(err error) error {
	errs := []error{err}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
			break
		}
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		var fe *settings.FieldError
		if errors.As(e, &fe) {
			out[i] = fmt.Errorf("invalid %s: %w", fe.Field, fe.Err)
		} else {
			out[i] = e
		}
	}
	return errors.Join(out...)
}

// fieldOf returns err, a decoding error of raw, naming the field that causes it when one alone
// does (a value's own decoder, such as an enum's UnmarshalText, does not name it), and what was
// expected there in JSON's terms rather than the Go types (jsonerr: "cacheWait: expected a
// string, got a number", not "cannot unmarshal number into Go struct field Config.cacheWait of
// type framework.Duration").
func fieldOf(reg framework.Registration, raw []byte, err error) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return inJSONTerms(err)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		if _, ferr := sigsjson.UnmarshalStrict(one, reg.NewConfig()); ferr != nil {
			if msg, ok := jsonerr.Describe(ferr); ok {
				return fmt.Errorf("invalid %s", msg)
			}
			return fmt.Errorf("invalid %s: %w", k, ferr)
		}
	}
	return inJSONTerms(err)
}

// inJSONTerms returns err described by jsonerr when it can be, else err.
func inJSONTerms(err error) error {
	if msg, ok := jsonerr.Describe(err); ok {
		return errors.New(msg)
	}
	return err
}

// jsonFields returns the JSON names of the fields of the struct cfg points to.
func jsonFields(cfg any) []string {
	var out []string
	eachField(cfg, func(f reflect.StructField, name string) { out = append(out, name) })
	return out
}

// envToJSON maps the env tag of each field of the struct cfg points to onto its JSON name.
func envToJSON(cfg any) map[string]string {
	out := map[string]string{}
	eachField(cfg, func(f reflect.StructField, name string) {
		if env := f.Tag.Get("env"); env != "" {
			out[env] = name
		}
	})
	return out
}

func eachField(cfg any, fn func(f reflect.StructField, name string)) {
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		fn(f, name)
	}
}

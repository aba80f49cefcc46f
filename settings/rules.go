package settings

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A configuration struct declares what each of its settings accepts once, where the setting is
// declared, and every program reads it from there: Check (each agent's Validate) refuses what
// is outside, and the chart's schema generator (hack/generate) writes the same bounds
// and choices into values.schema.json, so that the chart refuses what the agent would.
//
//   - A range is the field's `range` tag, an interval in mathematical notation: "[0,100]",
//     "(0,1]" (0 excluded), "[0s,4s]" for a duration. It applies to fields of kind int, int64
//     and float64, and to durations (framework.Duration), whose bounds are Go durations.
//   - Choices are those of the field's type: a string type with a Choices method (a typed
//     enum, such as safe.StalePolicy) accepts only the values it lists.
//
// What depends on several fields (pigeon's resource index below NUM_RESOURCES) stays in the
// configuration's Validate, after Check.

// Chooser is a typed enum: a string type whose values are the closed list Choices returns.
type Chooser interface {
	Choices() []string
}

// Names returns the values of a typed enum as strings, for a Choices method.
func Names[T ~string](values ...T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// Interval is a declared range: [Min, Max], either end excluded when MinOpen or MaxOpen.
// A duration's bounds are in nanoseconds.
type Interval struct {
	Min, Max         float64
	MinOpen, MaxOpen bool
	// Duration: the field is a duration and its bounds were written as durations.
	Duration bool
}

// Contains reports whether v lies within the interval (NaN never does).
func (r Interval) Contains(v float64) bool {
	if v != v {
		return false
	}
	lo := v > r.Min || !r.MinOpen && v == r.Min
	hi := v < r.Max || !r.MaxOpen && v == r.Max
	return lo && hi
}

// String writes the interval as it is declared: [0, 100], (0, 1], [0s, 4s].
func (r Interval) String() string {
	open, shut := "[", "]"
	if r.MinOpen {
		open = "("
	}
	if r.MaxOpen {
		shut = ")"
	}
	return open + r.format(r.Min) + ", " + r.format(r.Max) + shut
}

func (r Interval) format(v float64) string {
	if r.Duration {
		return shortDuration(time.Duration(v))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// shortDuration writes d as time.Duration does, without zero trailing units: 720h, 5m, 1m30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// parseInterval reads a `range` tag.
func parseInterval(tag string) (Interval, error) {
	var r Interval
	tag = strings.TrimSpace(tag)
	if len(tag) < 5 {
		return r, fmt.Errorf("%q is not an interval such as [0,100] or (0,1]", tag)
	}
	switch tag[0] {
	case '[':
	case '(':
		r.MinOpen = true
	default:
		return r, fmt.Errorf("%q does not start with [ or (", tag)
	}
	switch tag[len(tag)-1] {
	case ']':
	case ')':
		r.MaxOpen = true
	default:
		return r, fmt.Errorf("%q does not end with ] or )", tag)
	}
	lo, hi, ok := strings.Cut(tag[1:len(tag)-1], ",")
	if !ok {
		return r, fmt.Errorf("%q has no comma", tag)
	}
	lo, hi = strings.TrimSpace(lo), strings.TrimSpace(hi)
	var err1, err2 error
	if r.Min, err1 = strconv.ParseFloat(lo, 64); err1 == nil {
		r.Max, err2 = strconv.ParseFloat(hi, 64)
	} else {
		r.Duration = true
		var dlo, dhi time.Duration
		dlo, err1 = time.ParseDuration(lo)
		dhi, err2 = time.ParseDuration(hi)
		r.Min, r.Max = float64(dlo), float64(dhi)
	}
	if err := errors.Join(err1, err2); err != nil {
		return r, fmt.Errorf("%q: %w", tag, err)
	}
	if r.Min > r.Max {
		return r, fmt.Errorf("%q is empty", tag)
	}
	return r, nil
}

// Field is one setting of a configuration struct, as its tags declare it.
type Field struct {
	// Name is the JSON name (the pluginConfig args field, and the FieldError's Field).
	Name            string
	Env, Flag, Help string
	// Range is the `range` tag, nil without one.
	Range *Interval
	// Choices are the values of a typed enum (Chooser), nil for any other type.
	Choices []string

	index []int
}

// Fields returns the settings of the struct cfg is or points to: its fields with an env tag.
// A malformed declaration (a range that does not parse, a range on a field that is not a
// number or a duration) is a programming error and panics, as Bind does.
func Fields(cfg any) []Field {
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("settings.Fields: %T is not a struct", cfg))
	}
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		env := f.Tag.Get("env")
		if env == "" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		fd := Field{Name: name, Env: env, Flag: f.Tag.Get("flag"), Help: f.Tag.Get("help"), index: f.Index}
		if tag, ok := f.Tag.Lookup("range"); ok {
			r, err := parseInterval(tag)
			if err != nil {
				panic(fmt.Sprintf("settings: %s.%s: range %v", t, f.Name, err))
			}
			switch f.Type.Kind() {
			case reflect.Int, reflect.Int64, reflect.Float64:
			default:
				panic(fmt.Sprintf("settings: %s.%s: a range on a field of kind %s", t, f.Name, f.Type.Kind()))
			}
			if r.Duration && f.Type.Kind() != reflect.Int64 {
				panic(fmt.Sprintf("settings: %s.%s: a duration range on a field of kind %s", t, f.Name, f.Type.Kind()))
			}
			fd.Range = &r
		}
		if c, ok := reflect.Zero(f.Type).Interface().(Chooser); ok && f.Type.Kind() == reflect.String {
			fd.Choices = c.Choices()
		}
		out = append(out, fd)
	}
	return out
}

// Check reports every field of the struct cfg is or points to whose value is outside its
// declared range or choices, each as a FieldError named by its JSON name.
func Check(cfg any) error {
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var errs []error
	for _, f := range Fields(cfg) {
		fv := v.FieldByIndex(f.index)
		if f.Range != nil {
			var x float64
			var shown string
			switch fv.Kind() {
			case reflect.Int, reflect.Int64:
				x, shown = float64(fv.Int()), strconv.FormatInt(fv.Int(), 10)
				if f.Range.Duration {
					shown = shortDuration(time.Duration(fv.Int()))
				}
			case reflect.Float64:
				x, shown = fv.Float(), strconv.FormatFloat(fv.Float(), 'g', -1, 64)
			}
			if !f.Range.Contains(x) {
				errs = append(errs, Fieldf(f.Name, "%s is out of range %s", shown, f.Range))
			}
		}
		if f.Choices != nil && !slices.Contains(f.Choices, fv.String()) {
			errs = append(errs, Fieldf(f.Name, "%q is not one of %s", fv.String(), strings.Join(f.Choices, ", ")))
		}
	}
	return errors.Join(errs...)
}

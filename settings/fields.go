package settings

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
)

// FieldError is a bad value of one field of a configuration, named by the field's JSON name.
// A Config's Validate reports its problems as FieldErrors (joined with errors.Join); the
// program renders them in its users' terms: the extender by the field's variable and flag
// (Bound.Describe), a scheduler plugin by its pluginConfig args field (Error).
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Fieldf returns a FieldError for field with a formatted message.
func Fieldf(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Range returns a FieldError when v is outside [lo, hi], else nil.
func Range[T int | int64 | float64 | time.Duration](field string, v, lo, hi T) error {
	if v >= lo && v <= hi && v == v {
		return nil
	}
	return Fieldf(field, "%v is out of range [%v, %v]", v, lo, hi)
}

// OneOf returns a FieldError when v is not one of choices, else nil.
func OneOf[T ~string](field string, v T, choices ...T) error {
	for _, c := range choices {
		if v == c {
			return nil
		}
	}
	names := make([]string, len(choices))
	for i, c := range choices {
		names[i] = string(c)
	}
	return Fieldf(field, "%q is not one of %s", v, strings.Join(names, ", "))
}

// Bound is a configuration struct whose fields Bind has declared; it renders that
// configuration's FieldErrors in terms of variables and flags.
type Bound struct {
	// names maps a field's JSON name to "VAR (or --flag)".
	names map[string]string
}

// Bind declares a setting for every field of the struct cfg points to that has an `env` tag:
// the variable is the tag's value, the flag the `flag` tag's, the help text the `help` tag's,
// and the default the field's current value (so bind a configuration that holds its defaults).
// Fields of kind string, bool, int, int64 and float64, and types implementing
// encoding.TextUnmarshaler (framework.Duration for every duration) are supported; anything else is a programming error and panics at
// start. Values are only parsed here: ranges and choices are the configuration's Validate's.
func (s *Set) Bind(cfg any) Bound {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("settings.Bind: %T is not a pointer to a struct", cfg))
	}
	v = v.Elem()
	b := Bound{names: map[string]string{}}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		env := f.Tag.Get("env")
		if env == "" {
			continue
		}
		flagName, help := f.Tag.Get("flag"), f.Tag.Get("help")
		if flagName == "" {
			panic(fmt.Sprintf("settings.Bind: field %s.%s has env %q but no flag tag", v.Type(), f.Name, env))
		}
		field, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if field == "" {
			field = f.Name
		}
		b.names[field] = fmt.Sprintf("%s (or --%s)", env, flagName)
		s.bindField(v.Field(i), env, flagName, help)
	}
	return b
}

func (s *Set) bindField(dst reflect.Value, env, flagName, help string) {
	if u, ok := dst.Addr().Interface().(encoding.TextUnmarshaler); ok {
		def := fmt.Sprint(dst.Interface())
		s.add(env, flagName, help, def, func(raw string) error { return u.UnmarshalText([]byte(strings.TrimSpace(raw))) })
		return
	}
	switch p := dst.Addr().Interface().(type) {
	case *string:
		s.String(p, env, flagName, *p, help, nil)
	case *bool:
		s.Bool(p, env, flagName, *p, help)
	case *int:
		s.Int(p, env, flagName, *p, math.MinInt, math.MaxInt, help)
	case *int64:
		s.Int64(p, env, flagName, *p, math.MinInt64, math.MaxInt64, help)
	case *float64:
		s.Float(p, env, flagName, *p, math.Inf(-1), math.Inf(1), help)
	case *time.Duration:
		// A bare time.Duration would read "2s" from a variable but write nanoseconds to JSON:
		// a configuration's durations are a text type (framework.Duration), one for all.
		panic(fmt.Sprintf("settings.Bind: %s is a bare time.Duration: use framework.Duration, which reads and writes \"2s\" in JSON too", env))
	default:
		if dst.Kind() == reflect.String { // a typed enum without a text decoder: Check judges it
			s.add(env, flagName, help, dst.String(), func(raw string) error { dst.SetString(raw); return nil })
			return
		}
		panic(fmt.Sprintf("settings.Bind: %s has unsupported type %s", env, dst.Type()))
	}
}

// Describe returns err with every FieldError of the bound configuration named by its variable
// and flag ("invalid SAFEUTILIZATION (or --safe-utilization): 120 is out of range [0, 100]"),
// one problem per line; other errors are kept as they are.
func (b Bound) Describe(err error) error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range leaves(err) {
		var fe *FieldError
		if errors.As(e, &fe) {
			if name, ok := b.names[fe.Field]; ok {
				out = append(out, fmt.Errorf("invalid %s: %w", name, fe.Err))
				continue
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// leaves flattens the trees errors.Join builds (through any wrapping) into their leaves.
func leaves(err error) []error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, c := range j.Unwrap() {
				out = append(out, leaves(c)...)
			}
			return out
		}
	}
	return []error{err}
}

// Leaves returns the errors that errors.Join joined in err (through any wrapping), each on its
// own: nil for nil.
func Leaves(err error) []error {
	if err == nil {
		return nil
	}
	return leaves(err)
}

// Package jsonerr describes a JSON decoding error in the terms of the JSON its user wrote: where
// (the field's path, as written) and what was expected there, never the Go types the JSON is
// decoded into ("cannot unmarshal string into Go struct field leanArgs.Pod of type v1.Pod" says
// nothing to an operator and names a program's internals). The extender's HTTP layer and
// kube-safe-scheduler's plugin args both answer with it.
package jsonerr

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Describe returns encoding/json's error err in the JSON's terms, and false for an error of
// another kind (a value's own decoder: its message is its own).
func Describe(err error) (string, bool) {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d: %s", syntax.Offset, syntax.Error()), true
	case errors.As(err, &typ):
		where := typ.Field
		if where == "" {
			where = "the body"
		}
		return fmt.Sprintf("%s: expected %s, got %s", where, expected(typ.Type), jsonKind(typ.Value)), true
	}
	return "", false
}

// expected names what a JSON value decoding into t must be.
func expected(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	if t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return expected(t.Elem())
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another value"
}

// jsonKind names the kind of JSON value an UnmarshalTypeError's Value describes ("string",
// "number", "number 1.5", "object", "array", "bool").
func jsonKind(v string) string {
	switch v {
	case "object", "array":
		return "an " + v
	case "bool":
		return "true or false"
	case "":
		return "another value"
	}
	return "a " + v
}

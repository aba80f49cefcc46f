package server

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// A decoding error is answered in the protocol's terms: where in the body (the JSON path of the
// field, as the client wrote it) and what was expected there, never the Go types it is decoded
// into ("cannot unmarshal string into Go struct field leanArgs.Pod of type v1.Pod" says nothing
// to a scheduler's operator and names this program's internals).

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// jsonProblem describes why body does not decode into a value of target's type (a pointer):
// decoding failed with err (by jsoniter or encoding/json). It decodes again with encoding/json,
// whose errors carry the field's path, on this error path only.
func jsonProblem(body []byte, target any, err error) string {
	fresh := reflect.New(reflect.TypeOf(target).Elem()).Interface()
	if e := json.Unmarshal(body, fresh); e != nil {
		err = e
	} else {
		// encoding/json reads what jsoniter refused: say so without jsoniter's type names.
		return "the body is not valid JSON for this request"
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		where := typ.Field
		if where == "" {
			where = "the body"
		}
		return fmt.Sprintf("%s: expected %s, got %s", where, expected(typ.Type), jsonKind(typ.Value))
	}
	return err.Error()
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

package server

import (
	"encoding/json"
	"reflect"

	"github.com/kube-safe-scheduler/extender/internal/jsonerr"
)

// jsonProblem describes why body does not decode into a value of target's type (a pointer):
// decoding failed with err (by jsoniter or encoding/json). It decodes again with encoding/json,
// whose errors carry the field's path, on this error path only, and answers in the protocol's
// terms (jsonerr): the field's JSON path and what was expected, never the Go types.
func jsonProblem(body []byte, target any, err error) string {
	fresh := reflect.New(reflect.TypeOf(target).Elem()).Interface()
	if e := json.Unmarshal(body, fresh); e != nil {
		err = e
	} else {
		// encoding/json reads what jsoniter refused: say so without jsoniter's type names.
		return "the body is not valid JSON for this request"
	}
	if msg, ok := jsonerr.Describe(err); ok {
		return msg
	}
	return err.Error()
}

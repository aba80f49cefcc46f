package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// stdlibEncode is what the answers must equal: an encoding/json Encoder without HTML escaping.
func stdlibEncode(t testing.TB, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// oddNames are names that take every path: plain, HTML characters, escapes, control
// characters, non-ASCII, invalid UTF-8, the line separators encoding/json escapes.
var oddNames = []string{"node-1", "", "a<b>&c", `q"uote`, `back\slash`, "tab\there", "\x00\x1f\x7f", "ünï", "\xff\xfe", "\u2028\u2029", "sp ace"}

func checkNamesCodec(t testing.TB, names []string) {
	// Decoding: nameList agrees with encoding/json on the array encoding/json writes.
	raw := stdlibEncode(t, names)
	var got nameList
	if err := got.UnmarshalJSON(raw); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	var want []string
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual([]string(got), want) {
		t.Fatalf("decoded %q, encoding/json %q", got, want)
	}
	// Encoding: a names filter answer and a priority list equal encoding/json's bytes.
	res := &extenderv1.ExtenderFilterResult{NodeNames: &names, FailedNodes: extenderv1.FailedNodesMap{}}
	for _, n := range names {
		res.FailedNodes[n] = "reason <" + n + ">"
	}
	var buf bytes.Buffer
	if err := appendFilterResult(&buf, nil, res); err != nil {
		t.Fatal(err)
	}
	if want := stdlibEncode(t, res); !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("filter answer\n%s\nencoding/json\n%s", buf.Bytes(), want)
	}
	list := make(extenderv1.HostPriorityList, len(names))
	for i, n := range names {
		list[i] = extenderv1.HostPriority{Host: n, Score: int64(i*37) - 100}
	}
	buf.Reset()
	appendPriorities(&buf, list)
	if want := stdlibEncode(t, list); !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("priorities\n%s\nencoding/json\n%s", buf.Bytes(), want)
	}
}

func TestNamesCodecMatchesEncodingJSON(t *testing.T) {
	checkNamesCodec(t, []string{"a", "b"})
	checkNamesCodec(t, []string{})
	checkNamesCodec(t, oddNames)
	for _, n := range oddNames {
		checkNamesCodec(t, []string{"x", n, "y"})
	}
	// Nil lists and a filter answer without names.
	var buf bytes.Buffer
	appendPriorities(&buf, nil)
	if want := stdlibEncode(t, extenderv1.HostPriorityList(nil)); !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("nil priorities %s, encoding/json %s", buf.Bytes(), want)
	}
	buf.Reset()
	res := &extenderv1.ExtenderFilterResult{Error: "e"}
	if err := appendFilterResult(&buf, nil, res); err != nil {
		t.Fatal(err)
	}
	if want := stdlibEncode(t, res); !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("filter answer %s, encoding/json %s", buf.Bytes(), want)
	}
}

// Arrays that are not plain (whitespace, escapes, nulls, wrong types, bad syntax) decode as
// encoding/json decodes them, errors included.
func TestNameListMatchesEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`[]`, ` [ ] `, `["a","b"]`, " [ \"a\" ,\n\"b\" ] ", `["a",null]`, `[null]`, `["\u0041"]`, `["a\/b"]`,
		`["a",]`, `[,"a"]`, `["a" "b"]`, `["a"`, `["a`, `[1]`, `["a",1]`, `{}`, `"a"`, `1`, `[["a"]]`, `["a"]x`,
		"[\"a\x01\"]", "[\"\xff\"]", `["a"]]`, `[`,
	} {
		checkNameList(t, []byte(raw))
	}
}

func checkNameList(t *testing.T, raw []byte) {
	var got nameList
	gotErr := got.UnmarshalJSON(raw)
	var want []string
	wantErr := json.Unmarshal(raw, &want)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json %v", raw, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual([]string(got), want) {
		t.Fatalf("%q: %q, encoding/json %q", raw, got, want)
	}
}

func FuzzNameList(f *testing.F) {
	f.Add([]byte(`["a","b"]`))
	f.Add([]byte(` [ "x" , "\u00e9" , null ] `))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkNameList(t, raw)
	})
}

func FuzzNamesCodec(f *testing.F) {
	for _, n := range oddNames {
		f.Add(n, "node-2")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkNamesCodec(t, []string{a, b})
	})
}

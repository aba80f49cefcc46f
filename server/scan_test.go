package server

import (
	"bytes"
	"encoding/json"
	"testing"
)

// itemsByStdlib returns the raw items encoding/json finds at Nodes.items.
func itemsByStdlib(body []byte) ([]json.RawMessage, bool) {
	var w struct {
		Nodes *struct {
			Items []json.RawMessage `json:"items"`
		}
	}
	if err := json.Unmarshal(body, &w); err != nil || w.Nodes == nil {
		return nil, false
	}
	return w.Nodes.Items, true
}

// checkSpans fails unless nodeItemSpans either declines body or finds exactly the items
// encoding/json finds.
func checkSpans(t *testing.T, body []byte) {
	t.Helper()
	want, ok := itemsByStdlib(body)
	spans, err := nodeItemSpans(body)
	if err != nil || !ok {
		return // declined (the caller falls back), or nothing to compare with
	}
	if len(spans) != len(want) {
		// The caller compares counts with the decoder's and falls back; still, on valid
		// input the scan should agree.
		t.Fatalf("%d spans, encoding/json finds %d items in %s", len(spans), len(want), body)
	}
	for i, sp := range spans {
		if got := body[sp[0]:sp[1]]; !bytes.Equal(got, want[i]) {
			t.Fatalf("item %d: span %q, encoding/json %q", i, got, want[i])
		}
	}
}

func TestNodeItemSpans(t *testing.T) {
	for _, body := range []string{
		`{"Pod":{},"Nodes":{"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}}`,
		// Brackets, braces, quotes and escapes inside strings.
		`{"Pod":{"x":"]}\"{["},"Nodes":{"items":[{"a":"\\"},{"b":"x\"]}"},{"c":["}",{"d":"\\\""}]}]}}`,
		// Case-insensitive keys, whitespace, numbers and literals.
		"{ \"nodes\" : { \"ITEMS\" : [ 1 , true , null , -2.5e3 , \"s\" , [ ] , { } ] } , \"Pod\" : { } }",
		// Duplicate keys: the last wins, as when decoding.
		`{"Nodes":{"items":[{"n":1}]},"Pod":{},"Nodes":{"items":[{"n":2},{"n":3}]}}`,
		`{"Nodes":{"items":[{"n":1}],"items":[{"n":2}]},"Pod":{}}`,
		// An escaped key.
		`{"N\u006fdes":{"items":[{"n":1}]},"Pod":{}}`,
		`{"Pod":{},"Nodes":{"items":[]}}`,
		`{"Pod":{},"Nodes":{"items":null}}`,
	} {
		checkSpans(t, []byte(body))
		if _, err := nodeItemSpans([]byte(body)); err != nil {
			t.Errorf("declined %s: %v", body, err)
		}
	}
	// Decline: no Nodes, Nodes null, a non-ASCII key folding to Nodes.
	for _, body := range []string{`{"Pod":{}}`, `{"Pod":{},"Nodes":null}`, `{"Pod":{},"Nodeſ":{"items":[]}}`} {
		if _, err := nodeItemSpans([]byte(body)); err == nil {
			t.Errorf("accepted %s", body)
		}
	}
}

func FuzzNodeItemSpans(f *testing.F) {
	f.Add([]byte(`{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"a\"]"}},{}]}}`))
	f.Add([]byte(`{"nodes":{"Items":[1,"x",[{}]]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkSpans(t, body)
	})
}

// hasControlByte must agree with a byte-by-byte test at every length and position.
func FuzzHasControlByte(f *testing.F) {
	f.Add([]byte("plain ascii text, then \x1f"))
	f.Add([]byte("\xff\xfe\x80 \x20\x7f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := false
		for _, c := range b {
			want = want || c < 0x20
		}
		if got := hasControlByte(b); got != want {
			t.Fatalf("hasControlByte(%q) = %v", b, got)
		}
	})
}

func TestHasControlByte(t *testing.T) {
	base := bytes.Repeat([]byte{0x20, 0xff, 0x7f, 'a', 0x80, 0x21, '"', '\\'}, 3)
	for i := range base {
		for _, c := range []byte{0, '\t', '\n', '\r', 0x1f} {
			b := append([]byte(nil), base...)
			b[i] = c
			if !hasControlByte(b) || !hasControlByte(b[i:]) || !hasControlByte(b[:i+1]) {
				t.Fatalf("missed %#x at %d", c, i)
			}
		}
	}
	if hasControlByte(base) {
		t.Fatal("false positive")
	}
}

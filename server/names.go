package server

import (
	"bytes"
	"encoding/json"
)

// In names mode (nodeCacheCapable) a request and its answer are mostly node names: thousands of
// short ASCII strings. Decoding them through reflection grows the slice by doubling and
// encoding them through encoding/json escapes each one; both showed in profiles of 5000-name
// requests. The fast paths here and in encode.go handle plain names (printable ASCII without
// quote or backslash) directly and hand anything else to encoding/json, so the result is always
// exactly what encoding/json decodes or writes.

// nameList is the NodeNames of a request.
type nameList []string

// UnmarshalJSON decodes a JSON array of plain strings into a slice of the right size; any other
// shape (escapes, non-ASCII, null elements, a non-array) is decoded by encoding/json.
func (l *nameList) UnmarshalJSON(b []byte) error {
	if names, ok := plainNames(b); ok {
		*l = names
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// plainNames parses b as an array of plain strings, or reports that it is not one.
func plainNames(b []byte) ([]string, bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '[' {
		return nil, false
	}
	names := make([]string, 0, bytes.Count(b, []byte{','})+1)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return names, skipSpace(b, i+1) == len(b)
	}
	for i < len(b) {
		if b[i] != '"' {
			return nil, false
		}
		start := i + 1
		end := start
		for end < len(b) && plain(b[end]) {
			end++
		}
		if end == len(b) || b[end] != '"' {
			return nil, false
		}
		names = append(names, string(b[start:end]))
		i = skipSpace(b, end+1)
		if i == len(b) {
			return nil, false
		}
		switch b[i] {
		case ']':
			return names, skipSpace(b, i+1) == len(b)
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, false
		}
	}
	return nil, false
}

// plain reports whether c stands for itself in a JSON string as encoding/json reads and
// writes it: printable ASCII other than the quote and the backslash. ('<', '>' and '&' are
// plain here: the answers are encoded without HTML escaping.)
func plain(c byte) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

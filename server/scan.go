package server

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// nodeItemSpans returns the byte range of each element of Nodes.items in an ExtenderArgs body
// that has already been decoded successfully, without decoding anything: a filter answer
// echoes those bytes for the passing nodes. Keys match as the decoder matches them (case
// insensitive, escapes resolved, the last of duplicate keys wins). It returns an error for any
// shape it does not expect; the caller then falls back to capturing the items while decoding.
func nodeItemSpans(body []byte) ([][2]int, error) {
	sc := &scanner{b: body}
	var spans [][2]int
	found := false
	err := sc.object(func(key string) error {
		if match, err := keyIs(key, "Nodes"); err != nil {
			return err
		} else if !match {
			return sc.skip()
		}
		found, spans = true, nil
		if sc.peek() == 'n' {
			found = false
			return sc.skip()
		}
		return sc.object(func(key string) error {
			if match, err := keyIs(key, "items"); err != nil {
				return err
			} else if !match {
				return sc.skip()
			}
			spans = spans[:0]
			if sc.peek() == 'n' {
				return sc.skip()
			}
			return sc.array(func() error {
				start := sc.pos()
				if err := sc.skip(); err != nil {
					return err
				}
				spans = append(spans, [2]int{start, sc.i})
				return nil
			})
		})
	})
	if err == nil && !found {
		err = errors.New("no Nodes")
	}
	return spans, err
}

var errShape = errors.New("unexpected JSON shape")

// errFold stops the scan at a non-ASCII key that folds to a key of interest: decoders differ in
// Unicode case folding, so the caller falls back to capturing the items while decoding.
var errFold = errors.New("non-ASCII key folding")

// keyIs reports whether key matches want (ASCII) case-insensitively, as the decoder matches
// field names; errFold when key only matches through non-ASCII folding.
func keyIs(key, want string) (bool, error) {
	if !strings.EqualFold(key, want) {
		return false, nil
	}
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return false, errFold
		}
	}
	return true, nil
}

// scanner walks JSON that is known to be valid.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) pos() int { s.ws(); return s.i }

// object calls member for each key, with the scanner at the key's value; member must consume it.
func (s *scanner) object(member func(key string) error) error {
	if s.peek() != '{' {
		return errShape
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return errShape
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errShape
		}
	}
}

// array calls elem for each element, with the scanner at it; elem must consume it.
func (s *scanner) array(elem func() error) error {
	if s.peek() != '[' {
		return errShape
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errShape
		}
	}
}

// str reads a string and returns its value (escapes resolved only when present).
func (s *scanner) str() (string, error) {
	if s.peek() != '"' {
		return "", errShape
	}
	start := s.i
	escaped := false
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i++
		case '"':
			s.i++
			raw := s.b[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), nil
			}
			return strconv.Unquote(string(raw))
		}
	}
	return "", errShape
}

// skip consumes one value of any kind.
func (s *scanner) skip() error {
	switch c := s.peek(); c {
	case '"':
		_, err := s.str()
		return err
	case '{', '[':
		// Nesting only needs counting: strings are the one place brackets may hide.
		depth := 0
		for ; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return nil
				}
			case '"':
				end := bytes.IndexByte(s.b[s.i+1:], '"')
				for end >= 0 && backslashes(s.b[:s.i+1+end])%2 == 1 {
					next := bytes.IndexByte(s.b[s.i+1+end+1:], '"')
					if next < 0 {
						end = -1
						break
					}
					end += 1 + next
				}
				if end < 0 {
					return errShape
				}
				s.i += 1 + end
			}
		}
		return errShape
	case 0:
		return errShape
	default:
		// A number, true, false or null: up to the next delimiter.
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			s.i++
		}
		return nil
	}
}

// backslashes counts the backslashes that end b.
func backslashes(b []byte) int {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n
}

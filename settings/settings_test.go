package settings

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

type values struct {
	n   int
	b   bool
	d   time.Duration
	s   string
	e   string
	f   float64
	i64 int64
}

func declare(env map[string]string) (*Set, *values) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s := New(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	v := &values{}
	s.Int(&v.n, "N", "n", 5, 0, 100, "an int")
	s.Bool(&v.b, "B", "b", false, "a bool")
	s.Duration(&v.d, "D", "d", time.Minute, time.Second, time.Hour, "a duration")
	s.String(&v.s, "S", "s", "x", "a string", nil)
	s.Enum(&v.e, "E", "e", "ONE", []string{"ONE", "TWO"}, "an enum")
	s.Float(&v.f, "F", "f", 0.5, 0, 1, "a float")
	s.Int64(&v.i64, "I", "i", 7, 1, 10, "an int64")
	return s, v
}

func TestDefaultsEnvAndFlags(t *testing.T) {
	s, v := declare(map[string]string{"N": "42", "E": "two", "B": "false"})
	if err := s.Parse([]string{"--n", "43", "--d", "5s", "--b=false", "--b"}); err != nil {
		t.Fatal(err)
	}
	// The flag wins over N=42; a bare --b (the last given) wins over B=false; E is matched
	// case-insensitively and stored as declared.
	want := values{n: 43, b: true, d: 5 * time.Second, s: "x", e: "TWO", f: 0.5, i64: 7}
	if *v != want {
		t.Errorf("got %+v, want %+v", *v, want)
	}
	if !s.Explicit("N") || !s.Explicit("D") || s.Explicit("S") || s.Explicit("NOPE") {
		t.Errorf("Explicit: N=%v D=%v S=%v", s.Explicit("N"), s.Explicit("D"), s.Explicit("S"))
	}
}

// Every bad value is reported, each naming its variable; none falls back to the default.
func TestInvalidValuesAreAllReported(t *testing.T) {
	s, _ := declare(map[string]string{"N": "abc", "B": "maybe", "D": "5", "E": "THREE", "F": "NaN", "I": "11"})
	err := s.Parse([]string{"--n", "101"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`invalid --n (or N): 101 is out of range [0, 100]`,
		`invalid B (or --b): "maybe" is not true or false`,
		`invalid D (or --d): "5" is not a duration`,
		`invalid E (or --e): "THREE" is not one of ONE, TWO`,
		`invalid F (or --f): "NaN" is not a number`,
		`invalid I (or --i): 11 is out of range [1, 10]`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestListen(t *testing.T) {
	for v, want := range map[string]string{"8080": ":8080", ":8080": ":8080", "127.0.0.1:5401": "127.0.0.1:5401", "[::1]:80": "[::1]:80"} {
		if err := CheckListen(v); err != nil {
			t.Errorf("CheckListen(%q): %v", v, err)
		}
		if got := ListenAddress(v); got != want {
			t.Errorf("ListenAddress(%q) = %q, want %q", v, got, want)
		}
	}
	for _, v := range []string{"", "eighty", "70000", "host", "host:", "1.2.3.4"} {
		if err := CheckListen(v); err == nil {
			t.Errorf("CheckListen(%q) accepted it", v)
		}
	}
}

// A share is an integer percent; the old fraction spelling is read for one release, with a
// warning naming the setting, the value and the new spelling.
func TestPercent(t *testing.T) {
	cases := []struct {
		raw     string
		want    int
		err     string
		warning string
	}{
		{raw: "90", want: 90},
		{raw: "1", want: 1}, // one percent: an integer is always the new spelling
		{raw: "0", want: 0}, // the same in both
		{raw: "0.9", want: 90, warning: "P=0.9 is a fraction, the old spelling of this setting: read as 90 (percent); write P=90"},
		{raw: "0.025", want: 3, warning: "read as 3 (percent)"},
		{raw: "1.0", want: 100, warning: "read as 100 (percent)"},
		{raw: "1.5", err: `invalid P (or --p): "1.5" is not an integer percent`},
		{raw: "101", err: "invalid P (or --p): 101 is out of range [0, 100] (percent)"},
		{raw: "ninety", err: "is not an integer percent"},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s := New(fs, func(k string) (string, bool) { return c.raw, k == "P" })
		var p int
		s.Percent(&p, "P", "p", 50, 0, 100, "a share")
		err := s.Parse(nil)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("P=%s: error %v, want %q", c.raw, err, c.err)
			}
			continue
		case err != nil:
			t.Errorf("P=%s: %v", c.raw, err)
			continue
		}
		if p != c.want {
			t.Errorf("P=%s: got %d, want %d", c.raw, p, c.want)
		}
		w := strings.Join(s.Warnings(), "\n")
		if c.warning == "" && w != "" || !strings.Contains(w, c.warning) {
			t.Errorf("P=%s: warnings %q, want %q", c.raw, w, c.warning)
		}
	}
}

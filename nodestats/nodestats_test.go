package nodestats

import (
	"testing"
	"time"
)

func TestLookup(t *testing.T) {
	for _, c := range []struct {
		raw     string
		present bool // the key is set to raw
		want    float64
		ok      bool
	}{
		{present: false},
		{raw: "", present: true},
		{raw: "1500", present: true, want: 1500, ok: true},
		{raw: " 600 ", present: true, want: 600, ok: true}, // spaces around are allowed
		{raw: "-5", present: true, want: -5, ok: true},     // a reader decides what a negative means
		{raw: "2.5e3", present: true, want: 2500, ok: true},
		{raw: "abc", present: true},
		{raw: "NaN", present: true},
		{raw: "+Inf", present: true},
		{raw: "-Inf", present: true},
		{raw: "1e999", present: true}, // out of range: ParseFloat's +Inf with an error
	} {
		ann := map[string]string{}
		if c.present {
			ann[MeanFreeCPU] = c.raw
		}
		if got, ok := Lookup(ann, MeanFreeCPU); got != c.want || ok != c.ok {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}

func TestParseIsStrict(t *testing.T) {
	for _, raw := range []string{"", " 1", "1 ", "x", "NaN", "Inf", "-Inf", "1e400"} {
		if v, err := Parse(raw); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", raw, v)
		}
	}
	if v, err := Parse("8053063680"); err != nil || v != 8053063680 {
		t.Errorf("Parse(8053063680) = %v, %v", v, err)
	}
}

// TestFormatRoundTrip: what the annotator writes, every reader reads back to the integer.
func TestFormatRoundTrip(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0"}, {1499.5, "1500"}, {-0.5, "-1"}, {2.4, "2"}, {8053063680.49, "8053063680"}} {
		s := FormatAmount(c.v)
		if s != c.want {
			t.Errorf("FormatAmount(%v) = %q, want %q", c.v, s, c.want)
		}
		if v, err := Parse(s); err != nil || FormatInt(int64(v)) != s {
			t.Errorf("Parse(FormatAmount(%v)) = %v, %v", c.v, v, err)
		}
	}
	at := time.Date(2026, 1, 2, 4, 5, 6, 700, time.FixedZone("CET", 3600))
	s := FormatTimestamp(at)
	if s != "2026-01-02T03:05:06Z" {
		t.Errorf("FormatTimestamp = %q, want UTC to the second", s)
	}
	if back, err := ParseTimestamp(s); err != nil || !back.Equal(at.Truncate(time.Second)) {
		t.Errorf("ParseTimestamp(%q) = %v, %v", s, back, err)
	}
	if _, err := ParseTimestamp(" " + s); err == nil {
		t.Error("ParseTimestamp accepts surrounding spaces")
	}
}

func TestWindow(t *testing.T) {
	for _, c := range []struct {
		value string
		want  time.Duration
	}{
		{"", DefaultWindow},
		{"45", 45 * time.Second},
		{FormatWindow(90 * time.Minute), 90 * time.Minute},
		{"0", DefaultWindow},
		{"-30", DefaultWindow},
		{"15m", DefaultWindow},
		{"1e300", DefaultWindow},
	} {
		a := map[string]string{}
		if c.value != "" {
			a[StatisticsWindow] = c.value
		}
		if got := Window(a); got != c.want {
			t.Errorf("Window(%q) = %v, want %v", c.value, got, c.want)
		}
	}
}

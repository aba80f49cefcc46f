package settings

import (
	"strings"
	"testing"
	"time"
)

type color string

func (color) Choices() []string { return []string{"red", "blue"} }

type dur int64 // a duration type, as framework.Duration

type ruled struct {
	Share  int     `json:"share" range:"[0,100]" env:"SHARE" flag:"share"`
	Weight float64 `json:"weight" range:"(0,1]" env:"WEIGHT" flag:"weight"`
	Wait   dur     `json:"wait" range:"[0s,4s]" env:"WAIT" flag:"wait"`
	Color  color   `json:"color" env:"COLOR" flag:"color"`
	Free   int     `json:"free" env:"FREE" flag:"free"`
}

// Check refuses what is outside each field's declared range or choices, naming the field; the
// ends of a closed interval are inside, those of an open one outside.
func TestCheck(t *testing.T) {
	ok := ruled{Share: 100, Weight: 1, Wait: dur(4 * time.Second), Color: "red", Free: -7}
	if err := Check(ok); err != nil {
		t.Errorf("Check(%+v) = %v", ok, err)
	}
	bad := ruled{Share: 101, Weight: 0, Wait: dur(5 * time.Second), Color: "green"}
	err := Check(&bad)
	for _, want := range []string{
		"share: 101 is out of range [0, 100]",
		"weight: 0 is out of range (0, 1]",
		"wait: 5s is out of range [0s, 4s]",
		`color: "green" is not one of red, blue`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%+v) = %v, want %q", bad, err, want)
		}
	}
	if n := len(Leaves(err)); n != 4 {
		t.Errorf("%d errors, want 4: %v", n, err)
	}
	fs := Fields(ruled{})
	if fs[1].Range == nil || !fs[1].Range.MinOpen || fs[1].Range.MaxOpen || fs[4].Range != nil || fs[3].Choices == nil {
		t.Errorf("Fields: %+v", fs)
	}
}

// A malformed declaration is a programming error, found at start.
func TestFieldsPanicsOnBadRange(t *testing.T) {
	for _, cfg := range []any{
		struct {
			S string `json:"s" range:"[0,1]" env:"S"`
		}{},
		struct {
			N int `json:"n" range:"0..1" env:"N"`
		}{},
		struct {
			N int `json:"n" range:"[2,1]" env:"N"`
		}{},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Fields(%T) did not panic", cfg)
				}
			}()
			Fields(cfg)
		}()
	}
}

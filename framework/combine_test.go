package framework

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// fixed is an agent whose prioritizers answer fixed scores (or an error).
type fixed map[string][]int64

func (f fixed) Name() string      { return "fixed" }
func (f fixed) Filters() []Filter { return nil }
func (f fixed) Prioritizers() []Prioritizer {
	var out []Prioritizer
	for name, scores := range f {
		out = append(out, Prioritizer{Name: name, Func: func(context.Context, *corev1.Pod, []*corev1.Node) ([]int64, error) {
			if scores == nil {
				return nil, errors.New("source down")
			}
			return scores, nil
		}})
	}
	return out
}

func TestParseWeighted(t *testing.T) {
	got, err := ParseWeighted(" safe-overload=2, safe-balance = 1 ,congestion=1,")
	if err != nil {
		t.Fatal(err)
	}
	want := []Weighted{{"safe-overload", 2}, {"safe-balance", 1}, {"congestion", 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	for spec, msg := range map[string]string{
		"":                  "no priority listed",
		" , ":               "no priority listed",
		"safe-overload":     `"safe-overload" is not name=weight`,
		"=2":                `"=2" is not name=weight`,
		"a=0":               `"a=0": the weight must be an integer from 1 to 1000`,
		"a=-1":              `"a=-1": the weight must be an integer from 1 to 1000`,
		"a=1.5":             `"a=1.5": the weight must be an integer from 1 to 1000`,
		"a=1001":            `"a=1001": the weight must be an integer from 1 to 1000`,
		"a=1,b=2,a=3":       `priority "a" is listed twice`,
		"a=one":             `"a=one": the weight must be an integer`,
		"safe-overload=2;x": `the weight must be an integer`,
	} {
		if _, err := ParseWeighted(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", spec, err, msg)
		}
	}
}

func TestCombine(t *testing.T) {
	agents := []Agent{fixed{
		"a":    {10, 3, 0, 10, 12, -4},
		"b":    {5, 4, 1, 0, 10, 10},
		"down": nil,
	}}
	nodes := make([]*corev1.Node, 6)
	for _, c := range []struct {
		parts []Weighted
		want  []int64
	}{
		// a=1,b=1: (10+5)/2 = 7.5 -> 8; (3+4)/2 = 3.5 -> 4 (half up); 0.5 -> 1; 5; (10+10)/2 = 10
		// (12 is clamped to 10 first); (0+10)/2 = 5 (-4 clamped to 0).
		{[]Weighted{{"a", 1}, {"b", 1}}, []int64{8, 4, 1, 5, 10, 5}},
		// a=2,b=1: 25/3 = 8.33 -> 8; 10/3 = 3.33 -> 3; 1/3 -> 0; 20/3 = 6.67 -> 7; 10; 10/3 -> 3.
		{[]Weighted{{"a", 2}, {"b", 1}}, []int64{8, 3, 0, 7, 10, 3}},
		// One part: its own scores, clamped.
		{[]Weighted{{"b", 3}}, []int64{5, 4, 1, 0, 10, 10}},
	} {
		c1, err := Combine(agents, c.parts)
		if err != nil {
			t.Fatal(err)
		}
		if c1.Name() != "combined" || len(c1.Filters()) != 0 || len(c1.Prioritizers()) != 1 || c1.Prioritizers()[0].Name != "combined" {
			t.Fatalf("shape: %s, %v, %v", c1.Name(), c1.Filters(), c1.Prioritizers())
		}
		got, err := c1.Prioritizers()[0].Func(context.Background(), nil, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", c.parts, diff)
		}
	}

	// A part's error is the combined call's error, naming the part.
	c1, _ := Combine(agents, []Weighted{{"a", 1}, {"down", 1}})
	if _, err := c1.Prioritizers()[0].Func(context.Background(), nil, nodes); err == nil || err.Error() != "priority down: source down" {
		t.Errorf("error %v", err)
	}
	// A part answering the wrong number of scores is an error, not a panic.
	if _, err := c1.Prioritizers()[0].Func(context.Background(), nil, nodes[:2]); err == nil || !strings.Contains(err.Error(), "priority a returned 6 scores for 2 nodes") {
		t.Errorf("error %v", err)
	}
	if _, err := Combine(agents, []Weighted{{"a", 1}, {"nope", 1}}); err == nil ||
		!strings.Contains(err.Error(), `priority "nope" is not served by the agents of this process (served: `) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Combine(agents, []Weighted{{"a", 0}}); err == nil {
		t.Error("weight 0 accepted")
	}
	if _, err := Combine(agents, nil); err == nil {
		t.Error("empty combination accepted")
	}
}

// A part's panic reaches the caller's goroutine (where the server recovers it), not a crash.
func TestCombinePanicReachesCaller(t *testing.T) {
	boom := Prioritizer{Name: "boom", Func: func(context.Context, *corev1.Pod, []*corev1.Node) ([]int64, error) { panic("boom") }}
	c, err := Combine([]Agent{fixed{"a": {1}}, panicky{boom}}, []Weighted{{"a", 1}, {"boom", 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want boom", p)
		}
	}()
	c.Prioritizers()[0].Func(context.Background(), nil, make([]*corev1.Node, 1)) //nolint:errcheck
	t.Fatal("no panic")
}

type panicky struct{ p Prioritizer }

func (p panicky) Name() string                { return "panicky" }
func (p panicky) Filters() []Filter           { return nil }
func (p panicky) Prioritizers() []Prioritizer { return []Prioritizer{p.p} }

package congestion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

func TestScore(t *testing.T) {
	tests := []struct {
		factor, m int64
		want      int64
	}{
		{0, 100, 10},  // 10*(1 - 0) = 10
		{25, 100, 8},  // 10*0.75 = 7.5, half up: 8
		{35, 100, 7},  // 10*0.65 = 6.5, half up: 7
		{44, 100, 6},  // 10*0.56 = 5.6: 6
		{45, 100, 6},  // 10*0.55 = 5.5, half up: 6
		{46, 100, 5},  // 10*0.54 = 5.4: 5
		{95, 100, 1},  // 10*0.05 = 0.5, half up: 1
		{96, 100, 0},  // 10*0.04 = 0.4: 0
		{100, 100, 0}, // cf = M: 0
		{150, 100, 0}, // cf = min(150, 100) = 100: 0
		{-5, 100, 10}, // a negative factor counts as 0
		{1, 3, 7},     // 10*(2/3) = 6.67: 7
		{2, 3, 3},     // 10*(1/3) = 3.33: 3
		{0, 1, 10},    // M 1: 0 scores 10 ...
		{1, 1, 0},     // ... anything else 0
		{1, 20, 10},   // 10*(19/20) = 9.5, half up: 10
		{3, 20, 9},    // 10*(17/20) = 8.5, half up: 9
		{5, 0, 0},     // M 0 (never configured): 0, no division
		{5, -3, 0},    // M negative: 0
		// M = MaxInt64 (odd), cf = (M-1)/2: 10*(M+1)/(2M) = 5.0000...: 5.
		{math.MaxInt64 / 2, math.MaxInt64, 5},
		// M = MaxInt64, cf = M/20 rounded down: 10*(1 - 1/20 + tiny) = 9.5 + tiny: 10.
		{math.MaxInt64 / 20, math.MaxInt64, 10},
		{math.MaxInt64, math.MaxInt64, 0},
		{0, math.MaxInt64, 10},
	}
	for _, tc := range tests {
		if got := Score(tc.factor, tc.m); got != tc.want {
			t.Errorf("Score(%d, %d) = %d, want %d", tc.factor, tc.m, got, tc.want)
		}
	}
}

// TestScoreMatchesRealArithmetic checks the integer formula against the definition computed with
// exact rationals for every factor of small Ms: score = floor(10*(M-cf)/M + 1/2), i.e. the
// largest s with 2*M*s <= 20*(M-cf) + M.
func TestScoreMatchesRealArithmetic(t *testing.T) {
	for m := int64(1); m <= 300; m++ {
		for f := int64(-2); f <= m+2; f++ {
			cf := max(min(f, m), 0)
			var want int64
			for s := int64(0); s <= 10; s++ {
				if 2*m*s <= 20*(m-cf)+m {
					want = s
				}
			}
			if got := Score(f, m); got != want {
				t.Fatalf("Score(%d, %d) = %d, want %d", f, m, got, want)
			}
		}
	}
}

func TestFactor(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want int64
	}{
		{"missing", nil, 0},
		{"other annotations only", map[string]string{"x": "5"}, 0},
		{"empty", map[string]string{Annotation: ""}, 0},
		{"integer", map[string]string{Annotation: "42"}, 42},
		{"spaces", map[string]string{Annotation: " 42 "}, 42},
		{"plus sign", map[string]string{Annotation: "+7"}, 7},
		{"zero", map[string]string{Annotation: "0"}, 0},
		{"negative", map[string]string{Annotation: "-3"}, 0},
		{"fraction", map[string]string{Annotation: "12.5"}, 0},
		{"hex", map[string]string{Annotation: "0x10"}, 0},
		{"word", map[string]string{Annotation: "high"}, 0},
		{"NaN", map[string]string{Annotation: "NaN"}, 0},
		{"Inf", map[string]string{Annotation: "+Inf"}, 0},
		// Integers beyond int64: the largest positive one; a negative one is 0.
		{"huge", map[string]string{Annotation: "99999999999999999999"}, math.MaxInt64},
		{"huge negative", map[string]string{Annotation: "-99999999999999999999"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Factor(tc.ann); got != tc.want {
				t.Errorf("Factor(%v) = %d, want %d", tc.ann, got, tc.want)
			}
		})
	}
}

func TestAgentScores(t *testing.T) {
	nodes := []*corev1.Node{
		fixtures.MakeNode().Name("a").Annotation(Annotation, "0").Obj(),    // 10
		fixtures.MakeNode().Name("b").Annotation(Annotation, "25").Obj(),   // 7.5: 8
		fixtures.MakeNode().Name("c").Annotation(Annotation, "100").Obj(),  // 0
		fixtures.MakeNode().Name("d").Obj(),                                // missing: 0 -> 10
		fixtures.MakeNode().Name("e").Annotation(Annotation, "-1").Obj(),   // 0 -> 10
		fixtures.MakeNode().Name("f").Annotation(Annotation, "junk").Obj(), // 0 -> 10
		fixtures.MakeNode().Name("g").Annotation(Annotation, "1000").Obj(), // min(1000, 100) = 100: 0
	}
	a, err := New(DefaultConfig(), framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := extendertest.Must(a.score(context.Background(), &corev1.Pod{}, nodes))
	if diff := cmp.Diff([]int64{10, 8, 0, 10, 10, 10, 0}, got); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	// M 50: "25" is 10*(1 - 0.5) = 5; "100" is capped at 50: 0.
	a, err = New(Config{FactorMax: 50}, framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := extendertest.Must(a.score(context.Background(), &corev1.Pod{}, nodes[:3])); !cmp.Equal(got, []int64{10, 5, 0}) {
		t.Errorf("M 50: scores %v, want [10 5 0]", got)
	}
	if len(a.Filters()) != 0 || len(a.Prioritizers()) != 1 || a.Prioritizers()[0].Name != "congestion" {
		t.Errorf("functions: %d filters, prioritizers %+v", len(a.Filters()), a.Prioritizers())
	}
}

func TestSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want int
		err  bool
	}{
		{name: "default", want: 100},
		{name: "variable", env: map[string]string{"CONGESTION_FACTOR_MAX": "250"}, want: 250},
		{name: "flag wins", env: map[string]string{"CONGESTION_FACTOR_MAX": "250"}, args: []string{"--congestion-factor-max=7"}, want: 7},
		{name: "largest", env: map[string]string{"CONGESTION_FACTOR_MAX": "2147483647"}, want: math.MaxInt32},
		{name: "zero", env: map[string]string{"CONGESTION_FACTOR_MAX": "0"}, err: true},
		{name: "negative", env: map[string]string{"CONGESTION_FACTOR_MAX": "-1"}, err: true},
		{name: "not an integer", env: map[string]string{"CONGESTION_FACTOR_MAX": "abc"}, err: true},
		{name: "fraction", env: map[string]string{"CONGESTION_FACTOR_MAX": "1.5"}, err: true},
		{name: "too large", env: map[string]string{"CONGESTION_FACTOR_MAX": "2147483648"}, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := settingstest.Bind(DefaultConfig(), tc.env, tc.args...)
			switch {
			case tc.err && (err == nil || !strings.Contains(err.Error(), "CONGESTION_FACTOR_MAX")):
				t.Errorf("error %v, want one naming CONGESTION_FACTOR_MAX", err)
			case !tc.err && err != nil:
				t.Fatal(err)
			case !tc.err && got.FactorMax != tc.want:
				t.Errorf("FactorMax %d, want %d", got.FactorMax, tc.want)
			}
		})
	}
	if _, err := New(Config{FactorMax: 0}, framework.NewHandle(nil)); err == nil || !strings.Contains(err.Error(), "factorMax: 0 is out of range") {
		t.Errorf("New(FactorMax 0): %v, want an error naming factorMax", err)
	}
}

// The factors remembered by node name and resourceVersion answer as a fresh parse: random
// nodes (valid, missing, negative, junk and huge factors; some without a resourceVersion),
// then random updates of a node's annotation (a new resourceVersion) and calls on random
// subsets in random order, by one agent that lives through the sequence, two calls at once.
func TestFactorMemoMatchesParse(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 2026))
	values := []string{"0", "7", "42", " 99 ", "100", "250", "-3", "junk", "", "99999999999999999999"}
	rv := 0
	node := func(i int) *corev1.Node {
		b := fixtures.MakeNode().Name(fmt.Sprintf("n%d", i))
		if k := r.IntN(len(values) + 1); k < len(values) {
			b = b.Annotation(Annotation, values[k])
		}
		n := b.Obj()
		if r.IntN(10) > 0 {
			rv++
			n.ResourceVersion = strconv.Itoa(rv)
		}
		return n
	}
	a, err := New(Config{FactorMax: 100}, framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*corev1.Node, 40)
	for i := range nodes {
		nodes[i] = node(i)
	}
	changed := 0
	for step := range 400 {
		if r.IntN(2) == 0 {
			i := r.IntN(len(nodes))
			old := nodes[i]
			nodes[i] = node(i)
			if Factor(old.Annotations) != Factor(nodes[i].Annotations) {
				changed++
			}
		}
		var subset []*corev1.Node
		for _, i := range r.Perm(len(nodes)) {
			if r.IntN(3) > 0 {
				subset = append(subset, nodes[i])
			}
		}
		want := make([]int64, len(subset))
		for i, n := range subset {
			want[i] = Score(Factor(n.Annotations), 100)
		}
		// Plugin mode's shared list of the nodes (framework.Positions), now and then in
		// another order: the second caller asks by position in it.
		list := &nodeList{nodes: slices.Clone(nodes)}
		if r.IntN(4) == 0 {
			r.Shuffle(len(list.nodes), func(i, j int) { list.nodes[i], list.nodes[j] = list.nodes[j], list.nodes[i] })
		}
		at := make([]int32, len(subset))
		for i, n := range subset {
			at[i] = int32(slices.Index(list.nodes, n))
		}
		var wg sync.WaitGroup
		for caller := range 2 {
			wg.Go(func() {
				ctx := context.Background()
				if caller == 1 {
					ctx = framework.WithPositions(ctx, &framework.Positions{List: list, At: at})
				}
				got := extendertest.Must(a.score(ctx, &corev1.Pod{}, subset))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("step %d, caller %d: scores differ from a fresh parse (-parse +memo):\n%s", step, caller, diff)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
	if changed < 50 {
		t.Errorf("only %d updates changed a factor: the test does not exercise the memo's invalidation", changed)
	}
}

// nodeList is plugin mode's shared list of nodes (framework.NodeList) over a test's nodes.
type nodeList struct{ nodes []*corev1.Node }

func (l *nodeList) Len() int                   { return len(l.nodes) }
func (l *nodeList) Node(i int) *corev1.Node    { return l.nodes[i] }
func (l *nodeList) PodsGenerationAt(int) int64 { return 0 }

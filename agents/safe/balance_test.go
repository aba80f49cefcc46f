package safe

import (
	"context"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

func TestRelativeScores(t *testing.T) {
	for _, c := range []struct {
		name string
		fine []int64
		has  []bool
		want []int64
	}{
		{"spread onto 0..10", []int64{300000, 250000, 275000, 262500}, []bool{true, true, true, true}, []int64{10, 0, 5, 3}},
		{"without statistics: 0, out of the range", []int64{300000, 0, 200000}, []bool{true, false, true}, []int64{10, 0, 0}},
		{"all equal", []int64{420000, 420000}, []bool{true, true}, []int64{10, 10}},
		{"one node", []int64{1}, []bool{true}, []int64{10}},
		{"none judged", []int64{0, 0}, []bool{false, false}, []int64{0, 0}},
		{"empty", []int64{}, []bool{}, []int64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := RelativeScores(append([]int64(nil), c.fine...), c.has); !cmp.Equal(got, c.want, cmpopts.EquateEmpty()) {
				t.Errorf("RelativeScores(%v, %v) = %v, want %v", c.fine, c.has, got, c.want)
			}
		})
	}
}

// TestRelativeBalanceSeparatesWhatAbsoluteMerges: three busy nodes at 67, 73 and 79 % measured
// cpu (the same spread; 70, 76 and 82 % with the pod) score alike on the fixed scale, so kube-scheduler's request scores
// decide among them; relative scores rank them by usage over the whole 0-10 range. A node
// whose statistics are all unreadable scores 0 in both and does not stretch the range.
func TestRelativeBalanceSeparatesWhatAbsoluteMerges(t *testing.T) {
	stats := func(usedMilli int) map[string]string {
		return map[string]string{"mean-free-cpu": strconv.Itoa(16000 - usedMilli), "std-free-cpu": "800",
			"mean-free-memory": strconv.Itoa(32 << 30), "std-free-memory": strconv.Itoa(1 << 30)}
	}
	nodes := []*corev1.Node{bigNode("a", stats(10700)), bigNode("b", stats(11660)), bigNode("c", stats(12620)),
		bigNode("unreadable", map[string]string{"mean-free-cpu": "x", "mean-free-memory": "y"})}
	pod := fixtures.MakePod().Name("p").Req(fixtures.Res{corev1.ResourceCPU: "500m", corev1.ResourceMemory: "1Gi"}).Obj()
	score := func(scale BalanceScale) []int64 {
		cfg := DefaultConfig()
		cfg.BalanceScale = scale
		got, err := newAgent(t, cfg, nil).scoreBalance(context.Background(), pod, nodes)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	abs, rel := score(BalanceAbsolute), score(BalanceRelative)
	if abs[0] != abs[1] || abs[1] != abs[2] {
		t.Errorf("absolute scores %v: the test wants the three busy nodes merged on the fixed scale", abs)
	}
	if want := []int64{10, 5, 0, 0}; !cmp.Equal(rel, want) {
		t.Errorf("relative scores %v, want %v (absolute %v)", rel, want, abs)
	}
}

// TestRelativeBalanceRanksNodesPastCapacity: with the pod, node a would be at 112.5 % of its
// cpu, b at 118.75 % and c at 125 % (the same spread and memory). Clamped at 1 they would tie
// (all 10, and the request scores would decide, issue 51's offline placements: 1.39x the cpu
// overload volume of LeastAllocated); ranked by how far past capacity they are, a scores 10 and c
// 0.
func TestRelativeBalanceRanksNodesPastCapacity(t *testing.T) {
	stats := func(freeMilli int) map[string]string {
		return map[string]string{"mean-free-cpu": strconv.Itoa(freeMilli), "std-free-cpu": "800",
			"mean-free-memory": strconv.Itoa(32 << 30), "std-free-memory": strconv.Itoa(1 << 30)}
	}
	nodes := []*corev1.Node{bigNode("a", stats(2000)), bigNode("b", stats(1000)), bigNode("c", stats(0))}
	pod := fixtures.MakePod().Name("p").Req(fixtures.Res{corev1.ResourceCPU: "4", corev1.ResourceMemory: "1Gi"}).Obj()
	cfg := DefaultConfig()
	cfg.BalanceScale = BalanceRelative
	got, err := newAgent(t, cfg, nil).scoreBalance(context.Background(), pod, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{10, 5, 0}; !cmp.Equal(got, want) {
		t.Errorf("relative scores %v, want %v", got, want)
	}
	for _, c := range []struct{ free, capacity, demand, want float64 }{
		{2000, 16000, 4000, 1.125}, {0, 16000, 4000, 1.25}, {20000, 16000, 4000, 0.25}, {16000, 16000, -8000, 0},
		{0, 0, 1, 1}, {0, 1, 1e9, maxLevel},
	} {
		if got := Level(c.free, c.capacity, c.demand); got != c.want {
			t.Errorf("Level(%v, %v, %v) = %v, want %v", c.free, c.capacity, c.demand, got, c.want)
		}
	}
}

func TestBalanceScaleConfig(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.BalanceScale != BalanceAbsolute {
		t.Errorf("default %q", cfg.BalanceScale)
	}
	var s BalanceScale
	if err := s.UnmarshalText([]byte(" Relative ")); err != nil || s != BalanceRelative {
		t.Errorf("UnmarshalText: %q, %v", s, err)
	}
	cfg.BalanceScale = "steep"
	if err := cfg.Validate(); err == nil {
		t.Error("balanceScale steep accepted")
	}
}

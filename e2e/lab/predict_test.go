package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/agents/safe/beta"
)

// flatShape is a PlanetLab shape at level everywhere.
func flatShape(level float64) *Shape {
	s := &Shape{Name: "flat", Values: make([]float64, 288)}
	for i := range s.Values {
		s.Values[i] = level
	}
	return s
}

// TestPredictCountsViolationsOverTheHorizon: one node of 10 cores, a pod of workload a using
// 5 cores all along and a pod of b using 4.5 cores that leaves at minute 30. Judged every 5
// minutes from 10 to 45 over the next 15 minutes: b is on the node and runs within the horizon
// at 10, 15, 20 and 25 (9.5 cores > 9: over), gone from 30 on (5 cores): 4 of 8 node-times
// exceed. A predictor of 0 fits everywhere (8 fits, 4 violations, 9 cores usable each time);
// one of 100 cores fits nowhere; the clairvoyant leaves 4 cores at the 4 node-times that fit.
func TestPredictCountsViolationsOverTheHorizon(t *testing.T) {
	shape := flatShape(1)
	w := Workload{Name: "hand", Pods: []PodPlan{
		{Index: 0, Name: "a-0", Duration: 100 * time.Minute, CPU: 5000, Memory: 1 << 30, CPURatio: 1, Workload: "a", Shape: shape},
		{Index: 1, Name: "b-0", Duration: 30 * time.Minute, CPU: 5000, Memory: 1 << 30, CPURatio: 0.9, Workload: "b", Shape: shape},
	}}
	ps := []Predictor{
		{"zero", "", func(*Composed, float64) float64 { return 0 }},
		{"huge", "", func(*Composed, float64) float64 { return 100000 }},
	}
	got, err := Predict(w, Model{}, 1, Cluster{Nodes: 1, CPU: 10000, Memory: 64 << 30}, 60*time.Minute, 10*time.Minute, 15*time.Minute, 5*time.Minute, ps)
	if err != nil {
		t.Fatal(err)
	}
	if got.NodeTimes != 8 || got.Over != 4 {
		t.Errorf("node-times %d, over %d; want 8, 4", got.NodeTimes, got.Over)
	}
	if math.Abs(got.Usable-2) > 1e-9 { // (4 * 4 cores + 4 * 0) / 8
		t.Errorf("clairvoyant usable %.3f, want 2", got.Usable)
	}
	want := []PredictorScore{
		{Predictor: "zero", NodeTimes: 8, Fits: 8, Violations: 4, Usable: 9},
		{Predictor: "huge", NodeTimes: 8, Fits: 0, Violations: 0, Usable: 0},
	}
	for i, w := range want {
		g := got.Scores[i]
		if g.Predictor != w.Predictor || g.NodeTimes != w.NodeTimes || g.Fits != w.Fits || g.Violations != w.Violations || math.Abs(g.Usable-w.Usable) > 1e-9 {
			t.Errorf("score %d = %+v, want %+v", i, g, w)
		}
	}
}

// TestComposeCorrelation: two replicas of workload a (std 0.2 of a 1000m request each) and one
// pod of b (std 0.1 of 2000m). Linear within a workload: sqrt((200 + 200)^2 + 200^2) = 447.2;
// in quadrature within too: sqrt(200^2 + 200^2 + 200^2) = 346.4. The mean sums: 0.5 * 2000 +
// 0.4 * 2000 = 1800; safe's level the p90s: 0.8 * 2000 + 0.6 * 2000 = 2800, its spread
// (p90 - p50) / z(0.9) per pod, linear within a workload: sqrt((0.3/z * 2000)^2 + (0.2/z * 2000)^2).
func TestComposeCorrelation(t *testing.T) {
	learned := map[string]learnedWorkload{
		"a": {mean: 0.5, std: 0.2, pct: map[int]float64{50: 0.5, 75: 0.6, 80: 0.65, 85: 0.7, 90: 0.8, 95: 0.9, 99: 1}},
		"b": {mean: 0.4, std: 0.1, pct: map[int]float64{50: 0.4, 75: 0.5, 80: 0.5, 85: 0.55, 90: 0.6, 95: 0.7, 99: 0.8}},
	}
	c, shared := compose([]Member{{"a", 1000}, {"b", 2000}, {"a", 1000}}, learned)
	z := math.Sqrt2 * math.Erfinv(0.8)
	for _, x := range []struct {
		name      string
		got, want float64
	}{
		{"mean", c.Mean, 1800},
		{"linear", c.SigmaLinear, math.Sqrt(400*400 + 200*200)},
		{"quadrature", c.SigmaQuad, math.Sqrt(3 * 200 * 200)},
		{"p95 sum", c.Pct[95], 0.9*2000 + 0.7*2000},
		{"safe level", c.SafeLevel, 2800},
		{"safe sigma", c.SafeSigma, math.Hypot(0.3/z*2000, 0.2/z*2000)},
	} {
		if math.Abs(x.got-x.want) > 1e-6 {
			t.Errorf("%s = %.4f, want %.4f", x.name, x.got, x.want)
		}
	}
	if !shared {
		t.Error("two replicas of a with a spread: shared should be set")
	}
	if _, shared := compose([]Member{{"a", 1000}, {"b", 2000}}, learned); shared {
		t.Error("one pod per workload: shared should not be set")
	}
}

// TestBetaPeakIsTheQuantile: the predicted peak is where safe's Beta risk equals E, and a
// smaller E predicts a higher peak.
func TestBetaPeakIsTheQuantile(t *testing.T) {
	const capacity = 16000
	prev := 0.0
	for _, e := range []float64{0.3, 0.1, 0.01} {
		pk := betaPeak(8000, 1600, capacity, e)
		if r := beta.Risk(0.5, 0.1, pk/capacity); math.Abs(r-e) > 1e-6 {
			t.Errorf("E=%g: risk at the predicted peak %.0f is %.6f", e, pk, r)
		}
		if pk <= prev {
			t.Errorf("E=%g: peak %.0f not above the larger E's %.0f", e, pk, prev)
		}
		prev = pk
	}
	if pk := betaPeak(17000, 100, capacity, 0.1); pk != capacity {
		t.Errorf("a composed mean over capacity predicts %.0f, want the capacity", pk)
	}
}

// TestCheckDaily: VM x keeps its hourly profile from one day to the next (hour h at 10 + h
// percent, a tenth less on the second day): the hourly means of the first day predict the
// second's hours better than its daily mean, and explain all of the second day's variance.
func TestCheckDaily(t *testing.T) {
	dir := t.TempDir()
	write := func(day string, scale float64, other string) {
		var vals []string
		for i := range 288 {
			vals = append(vals, fmt.Sprint(math.Round(scale*float64(10+i/12))))
		}
		line := "x," + strings.Join(vals, ",") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "planetlab-"+day+".csv"), []byte(line+other+","+strings.Repeat("1,", 287)+"1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1", 1, "only-on-1")
	write("2", 0.9, "only-on-2")
	d, err := CheckDaily(dir, "1", "2")
	if err != nil {
		t.Fatal(err)
	}
	if d.VMs != 1 {
		t.Errorf("%d VMs on both days, want 1 (x)", d.VMs)
	}
	if !(d.HourlyA < d.FlatA) || d.HourlyA > 0.11 {
		t.Errorf("hourly means off by %.3f, daily mean by %.3f: want the hourly below 0.11 and below the daily", d.HourlyA, d.FlatA)
	}
	if math.Abs(d.HourShare-1) > 1e-9 {
		t.Errorf("hourly share of the variance %.3f, want 1 (constant within each hour)", d.HourShare)
	}
	if _, err := CheckDaily(dir, "1", "3"); err == nil {
		t.Error("a missing day: want an error")
	}
}

// TestPlaceByLevelAvoidsTheHotNode: two nodes of 10 cores; pods a (2 cpu requested, using 4x:
// 8 cores), b (6 cpu, using 0.6) and c (like a) arrive together for 20 minutes. LeastAllocated
// on requests puts a on node 0, b on node 1 (empty), c beside a (2 cpu requested against 6):
// 16 cores used, 7 above 9 for 20 minutes, 140 core-minutes. Balancing on the learned means puts
// c beside b (8.6 cores against 16): nothing above 9.
func TestPlaceByLevelAvoidsTheHotNode(t *testing.T) {
	shape := flatShape(1)
	pod := func(i int, name, workload string, cpu int64, ratio float64) PodPlan {
		return PodPlan{Index: i, Name: name, Duration: 20 * time.Minute, CPU: cpu, Memory: 1 << 30, CPURatio: ratio, Workload: workload, Shape: shape}
	}
	w := Workload{Name: "hand", Pods: []PodPlan{pod(0, "a", "hot", 2000, 4), pod(1, "b", "cold", 6000, 0.1), pod(2, "c", "hot", 2000, 4)}}
	pols := Policies()
	got := Place(w, Model{}, 1, Cluster{Nodes: 2, CPU: 10000, Memory: 64 << 30}, 20*time.Minute, 0, pols[:2])
	if got[0].Policy != "requests" || math.Abs(got[0].Volume-140) > 1e-6 || got[0].Placed != 3 {
		t.Errorf("requests: %+v, want 140 core-minutes, 3 placed", got[0])
	}
	if got[1].Policy != "level-mean" || got[1].Volume != 0 || got[1].Placed != 3 {
		t.Errorf("level-mean: %+v, want 0 core-minutes, 3 placed", got[1])
	}
}

// TestPlaceObservedIsCausal: as TestPlaceByLevelAvoidsTheHotNode, but the policies that see
// only what was observed before a pod's arrival. When c arrives at minute 5, a has run five
// minutes at 8 cores: the hot workload is observed at 4x its request, and c goes beside b (no
// overload), for the whole-history, the windowed and the per-pod variants alike. When all three
// arrive at once nothing has been observed: each pod counts at its request, c goes beside a
// (2 + 2 cpu requested against 6 + 2), 7 cores above 9 for 20 minutes: 140 core-minutes, as
// LeastAllocated; the clairvoyant policy, which reads the future, avoids it (0).
func TestPlaceObservedIsCausal(t *testing.T) {
	shape := flatShape(1)
	pod := func(i int, name, workload string, arrive time.Duration, cpu int64, ratio float64) PodPlan {
		return PodPlan{Index: i, Name: name, Arrive: arrive, Duration: 20*time.Minute - arrive, CPU: cpu, Memory: 1 << 30, CPURatio: ratio, Workload: workload, Shape: shape}
	}
	var observed []Policy
	for _, p := range Policies() {
		if p.Observed {
			observed = append(observed, p)
		}
	}
	if len(observed) < 3 {
		t.Fatalf("%d observed policies, want the whole-history, windowed and per-pod ones", len(observed))
	}
	for _, c := range []struct {
		arriveC time.Duration
		want    float64
	}{{5 * time.Minute, 0}, {0, 140}} {
		w := Workload{Name: "hand", Pods: []PodPlan{pod(0, "a", "hot", 0, 2000, 4), pod(1, "b", "cold", 0, 6000, 0.1), pod(2, "c", "hot", c.arriveC, 2000, 4)}}
		for _, got := range Place(w, Model{}, 1, Cluster{Nodes: 2, CPU: 10000, Memory: 64 << 30}, 20*time.Minute, 0, observed) {
			if math.Abs(got.Volume-c.want) > 1e-6 || got.Placed != 3 {
				t.Errorf("c at %v, %s: %+v, want %v core-minutes, 3 placed", c.arriveC, got.Policy, got, c.want)
			}
		}
		for _, p := range Policies() {
			if p.Clairvoyant {
				if got := Place(w, Model{}, 1, Cluster{Nodes: 2, CPU: 10000, Memory: 64 << 30}, 20*time.Minute, 0, []Policy{p})[0]; got.Volume != 0 || got.Placed != 3 {
					t.Errorf("c at %v, %s: %+v, want 0 core-minutes, 3 placed", c.arriveC, got.Policy, got)
				}
			}
		}
	}
}

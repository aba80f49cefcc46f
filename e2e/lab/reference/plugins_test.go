package reference

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	fwkimpl "k8s.io/kubernetes/pkg/scheduler/framework"
)

const gib = 1 << 30

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// node has 10 cpu and 10 GiB allocatable.
func node(name string, pods ...*v1.Pod) *fwkimpl.NodeInfo {
	list := v1.ResourceList{v1.ResourceCPU: resource.MustParse("10"), v1.ResourceMemory: *resource.NewQuantity(10*gib, resource.BinarySI)}
	ni := fwkimpl.NewNodeInfo(pods...)
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Capacity: list, Allocatable: list.DeepCopy()}})
	return ni
}

// pod requests reqMilli cpu and 1 GiB; started (minutes after t0), when not negative, is its
// status's start time.
func pod(name string, reqMilli int64, started float64) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(reqMilli, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(gib, resource.BinarySI)}}}}}}
	if started >= 0 {
		st := metav1.NewTime(t0.Add(time.Duration(started * float64(time.Minute))))
		p.Status.StartTime = &st
	}
	return p
}

// usage is a plan entry: arrive at minute from, run for run minutes, using cpu[i] millicores
// (and 1 GiB) in minute from+i; the last value repeats to the plan's 20 minutes.
func usage(workload string, from int, run float64, cpu ...float64) *PodUsage {
	u := &PodUsage{Workload: workload, Arrive: float64(from), Run: run, From: from}
	for m := from; m < 20; m++ {
		c := cpu[min(m-from, len(cpu)-1)]
		u.CPU, u.Memory = append(u.CPU, c), append(u.Memory, gib)
	}
	return u
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func scores(t *testing.T, pl fwk.ScorePlugin, p *v1.Pod, nodes ...*fwkimpl.NodeInfo) map[string]int64 {
	t.Helper()
	var list fwk.NodeScoreList
	for _, ni := range nodes {
		s, st := pl.Score(context.Background(), nil, p, ni)
		if !st.IsSuccess() {
			t.Fatalf("Score on %s: %v", ni.Node().Name, st)
		}
		list = append(list, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	if st := pl.ScoreExtensions().NormalizeScore(context.Background(), nil, p, list); !st.IsSuccess() {
		t.Fatal(st)
	}
	out := map[string]int64{}
	for _, s := range list {
		out[s.Name] = s.Score
	}
	return out
}

// oracleAt is an Oracle on plan whose clock reads simulated minute 5 (speed 1).
func oracleAt(plan *Plan) *Oracle {
	return &Oracle{src: &planSource{plan: plan, now: func() time.Time { return t0.Add(5 * time.Minute) }}, starts: map[string]float64{}}
}

// TestOracleMinimizesAddedVolume: a pod using 3 cpu for minutes 5-14, on nodes of 10 cpu
// (90 %: 9 cpu), by hand:
//   - A runs a1, 8 cpu until minute 8 then 2: minutes 5-7 go to 11 cpu, 2 above 90 % each, 0.2
//     of the node: 0.6 node-minutes added;
//   - B runs b1, 5 cpu throughout: 8 cpu, none added;
//   - C runs c1, 9.5 cpu ending at minute 6: in minute 5 12.5 cpu, 3.5 above instead of 0.5:
//     0.3 added;
//   - D runs d1, 4 cpu until minute 10 then 8: minutes 10-14 at 11 cpu: 1.0 added.
//
// B adds none and scores 100; among the rest, C (hot now but cooling) beats A, which beats D
// (cool now, hot later): what no scheduler reading the present usage sees. The requests say the
// opposite (b1 requests the most), so a request-based score would not pick B.
func TestOracleMinimizesAddedVolume(t *testing.T) {
	plan := &Plan{Start: t0, Speed: 1, Minutes: 20, Pods: map[string]*PodUsage{
		"a1": usage("a", 0, 20, append(repeat(8000, 8), 2000)...),
		"b1": usage("b", 0, 20, 5000),
		"c1": usage("c", 0, 6, 9500),
		"d1": usage("d", 0, 20, append(repeat(4000, 10), 8000)...),
		"p":  usage("p", 5, 10, 3000),
	}}
	pl := oracleAt(plan)
	a, b, c, d := node("a", pod("a1", 1000, 0)), node("b", pod("b1", 6000, 0)), node("c", pod("c1", 1000, 0)), node("d", pod("d1", 1000, 0))
	for _, x := range []struct {
		ni          *fwkimpl.NodeInfo
		added, peak float64
	}{{a, 0.6, 1.1}, {b, 0, 0.8}, {c, 0.3, 1.25}, {d, 1.0, 1.1}} {
		added, peak := pl.cost(plan, pod("p", 1000, -1), x.ni, 5)
		if diff := added - x.added; diff > 1e-9 || diff < -1e-9 || peak-x.peak > 1e-9 || x.peak-peak > 1e-9 {
			t.Errorf("node %s: added %v, peak %v; want %v, %v", x.ni.Node().Name, added, peak, x.added, x.peak)
		}
	}
	got := scores(t, pl, pod("p", 1000, -1), a, b, c, d)
	// B: least volume, 100. The others by volume, 0-49: D (1.0) 0, A (0.6) 49*0.4/1.0 = 19, C 34.
	if got["b"] != 100 || got["d"] != 0 || got["a"] != 19 || got["c"] != 34 {
		t.Errorf("scores %v, want b 100, c 34, a 19, d 0", got)
	}
}

// TestOracleCountsReservedPodsAndBreaksTiesByPeak: two idle-enough nodes, both adding no volume:
// the one whose peak with the pod is lower wins. A pod the Oracle reserved on a node counts from
// its reservation, for its run time, without a start time in its status.
func TestOracleCountsReservedPodsAndBreaksTiesByPeak(t *testing.T) {
	plan := &Plan{Start: t0, Speed: 1, Minutes: 20, Pods: map[string]*PodUsage{
		"e1": usage("e", 5, 10, 4000),
		"f1": usage("f", 0, 20, 2000),
		"p":  usage("p", 5, 10, 3000),
	}}
	pl := oracleAt(plan)
	if st := pl.Reserve(context.Background(), nil, pod("e1", 1000, -1), "e"); !st.IsSuccess() {
		t.Fatal(st)
	}
	e, f := node("e", pod("e1", 1000, -1)), node("f", pod("f1", 1000, 0))
	if _, peak := pl.cost(plan, pod("p", 1000, -1), e, 5); peak != 0.7 {
		t.Errorf("node e's peak %v, want 0.7 (e1 reserved at minute 5, running)", peak)
	}
	got := scores(t, pl, pod("p", 1000, -1), e, f)
	if got["f"] != 100 || got["e"] != 50 {
		t.Errorf("scores %v, want f 100 (peak 0.5), e 50 (peak 0.7)", got)
	}
	pl.Unreserve(context.Background(), nil, pod("e1", 1000, -1), "e")
	if len(pl.starts) != 0 {
		t.Errorf("Unreserve left %v", pl.starts)
	}
}

// TestWorkloadLevelBalancesOnTrueMeans: node A's pod requests 6 cpu but its workload uses 1 on
// average; node B's requests 1 and its workload uses 6. The pod (its workload's mean 2 cpu)
// goes to A: (1+2)/10 = 0.3 against (6+2)/10 = 0.8, the opposite of what requests say.
// A workload's mean is the mean of its pods' means over their lives: w-hot's two pods use 5 and
// 7 cpu (7 only until minute 10, then 20 outside its life): 6.
func TestWorkloadLevelBalancesOnTrueMeans(t *testing.T) {
	plan := &Plan{Start: t0, Speed: 1, Minutes: 20, Pods: map[string]*PodUsage{
		"cool-1": usage("w-cool", 0, 20, 1000),
		"hot-1":  usage("w-hot", 0, 20, 5000),
		"hot-2":  usage("w-hot", 0, 10, append(repeat(7000, 10), 20000)...),
		"p":      usage("w-mid", 5, 10, 2000),
	}}
	if m := plan.WorkloadMeans(); m["w-hot"][0] != 6000 || m["w-cool"][0] != 1000 || m["w-mid"][0] != 2000 || m["w-hot"][1] != gib {
		t.Errorf("workload means %v", m)
	}
	pl := &WorkloadLevel{src: &planSource{plan: plan, now: time.Now}}
	a, b := node("a", pod("cool-1", 6000, 0)), node("b", pod("hot-1", 1000, 0))
	got := scores(t, pl, pod("p", 1000, -1), a, b)
	if got["a"] != 100 || got["b"] != 0 {
		t.Errorf("scores %v, want a 100, b 0", got)
	}
	if s, _ := pl.Score(context.Background(), nil, pod("p", 1000, -1), a); s != 3000 {
		t.Errorf("node a's raw score %d, want 3000 (30 %% in basis points)", s)
	}
}

// TestPlanFile: a plan round-trips through its file; a missing variable stops the plugin at
// start, naming it; a missing file fails Score with the variable's name.
func TestPlanFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	plan := &Plan{Start: t0, Speed: 10, Minutes: 20, Pods: map[string]*PodUsage{"p": usage("w", 5, 10, 2000)}}
	if err := WritePlan(path, plan); err != nil {
		t.Fatal(err)
	}
	back, err := ReadPlan(path)
	if err != nil || !back.Start.Equal(t0) || back.Pods["p"].CPU[3] != 2000 || back.Now(t0.Add(time.Minute)) != 10 {
		t.Fatalf("read back %+v, %v", back, err)
	}
	t.Setenv(PlanEnv, "")
	if _, err := NewOracle(context.Background(), nil, nil); err == nil || !contains(err.Error(), PlanEnv) {
		t.Errorf("no %s: %v", PlanEnv, err)
	}
	t.Setenv(PlanEnv, filepath.Join(dir, "none.json"))
	pl, err := NewWorkloadLevel(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, st := pl.(*WorkloadLevel).Score(context.Background(), nil, pod("p", 1000, -1), node("a")); st.IsSuccess() || !contains(st.Message(), PlanEnv) {
		t.Errorf("missing plan file: %v", st)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

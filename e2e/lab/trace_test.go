package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestTraceWorkloads: under the trace model, every pod belongs to a workload of one owner kind
// whose pods share their requests and VM shape, and each pod's ratios are those of a task of
// the workload's Google job (the cpu one scaled); the seed fixes the workload.
func TestTraceWorkloads(t *testing.T) {
	dir, err := tracesDir()
	if err != nil {
		t.Fatal(err)
	}
	m, err := TraceModel(dir, DefaultTraceDay, 3)
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string][]TraceTask{} // job -> its tasks
	for _, task := range m.Traces.Tasks {
		tasks[task.Job] = append(tasks[task.Job], task)
	}
	ofJob := func(job string, cpu, mem float64) bool {
		for _, task := range tasks[job] {
			if math.Abs(task.CPURatio*3-cpu) <= 1e-12 && task.MemRatio == mem {
				return true
			}
		}
		return false
	}
	c := Cluster{Nodes: 10, CPU: 16000, Memory: 64 << 30}
	w, err := Generate(WorkBurst, c, time.Hour, 20*time.Minute, 1, m)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]*PodPlan{}
	for i := range w.Pods {
		p := &w.Pods[i]
		if p.Workload == "" || p.Shape == nil {
			t.Fatalf("pod %s has no workload or shape", p.Name)
		}
		kind, job := "ReplicaSet", p.Workload[len("svc-"):]
		if p.Type == "batch" {
			kind, job = "Job", p.Workload[len("batch-"):]
		}
		if p.OwnerKind != kind {
			t.Errorf("pod %s (%s) owned by a %s", p.Name, p.Type, p.OwnerKind)
		}
		if !ofJob(job, p.CPURatio, p.MemRatio) {
			t.Errorf("pod %s: ratios %v/3, %v are no task's of job %s", p.Name, p.CPURatio, p.MemRatio, job)
		}
		if f := first[p.Workload]; f == nil {
			first[p.Workload] = p
		} else if f.CPU != p.CPU || f.Memory != p.Memory || f.Shape != p.Shape || f.ShapeStart != p.ShapeStart {
			t.Errorf("pods %s and %s of workload %s differ in requests or shape", f.Name, p.Name, p.Workload)
		}
		if refs := ownerRefs(p); len(refs) != 1 || refs[0].Kind != p.OwnerKind || refs[0].UID == "" {
			t.Errorf("pod %s: owner references %+v", p.Name, refs)
		}
	}
	if len(first) < 10 || len(first) > len(w.Pods)/2 {
		t.Errorf("%d workloads for %d pods", len(first), len(w.Pods))
	}
	again, _ := Generate(WorkBurst, c, time.Hour, 20*time.Minute, 1, m)
	if len(again.Pods) != len(w.Pods) || again.Pods[7].Workload != w.Pods[7].Workload || again.Pods[7].CPURatio != w.Pods[7].CPURatio {
		t.Error("the same seed gave another workload")
	}
	// Usage follows the shape and the cap.
	p := w.Pods[0]
	cpu, mem := m.Usage(1, &p, 17*time.Minute)
	want := float64(p.CPU) * math.Min(m.CPUCap, p.CPURatio*p.Shape.At(p.ShapeStart+17*time.Minute))
	if math.Abs(cpu-want) > 1e-9*want || mem != float64(p.Memory)*p.MemRatio {
		t.Errorf("usage %v %v, want %v %v", cpu, mem, want, float64(p.Memory)*p.MemRatio)
	}
}

// TestShapeAt: a shape is linear between its 5-minute samples and wraps at the day.
func TestShapeAt(t *testing.T) {
	s := Shape{Values: make([]float64, 288)}
	s.Values[0], s.Values[1], s.Values[287] = 1, 3, 5
	for _, c := range []struct {
		t    time.Duration
		want float64
	}{{0, 1}, {150 * time.Second, 2}, {5 * time.Minute, 3}, {24 * time.Hour, 1}, {24*time.Hour - 150*time.Second, 3}} {
		if got := s.At(c.t); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("At(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

// TestEstimateByHand: three pods of one workload using 0.5, 0.5 and 2 times their request,
// one pod of another workload using 1x; the third pod of the first workload arrives when the
// first has run 10 minutes and the second has not started.
func TestEstimateByHand(t *testing.T) {
	flat := &Shape{Values: make([]float64, 288)}
	for i := range flat.Values {
		flat.Values[i] = 1
	}
	pod := func(i int, work string, arrive, run int, ratio float64) PodPlan {
		return PodPlan{Index: i, Workload: work, Arrive: time.Duration(arrive) * time.Minute, Duration: time.Duration(run) * time.Minute,
			CPU: 1000, Memory: 1 << 30, CPURatio: ratio, MemRatio: 1, Shape: flat}
	}
	w := Workload{Pods: []PodPlan{
		pod(0, "a", 0, 30, 0.5),
		pod(1, "a", 10, 30, 0.5), // arrives with a's first pod 10 minutes in
		pod(2, "a", 10, 30, 2),   // the same minute: history is pod 0 only (pod 1 has run 0 minutes)
		pod(3, "b", 5, 30, 1),
	}}
	m := Model{CPUCap: 10}
	e := Estimate(w, m, 1, time.Hour, 0)
	if e.Pods != 4 || e.WithHistory != 2 {
		t.Fatalf("pods %d, with history %d, want 4 and 2", e.Pods, e.WithHistory)
	}
	ln2 := math.Log(2)
	// |log used/request|: 0.69, 0.69, 0.69, 0 -> median 0.69; with history (pods 1, 2): 0.69, 0.69.
	// |log used/history| (history 0.5): pod 1 0, pod 2 log 4 -> median log 2.
	for name, c := range map[string][2]float64{
		"cpu request": {e.CPURequest, ln2}, "cpu request, same pods": {e.CPUReqSame, ln2},
		"cpu history": {e.CPUHistory, (0 + 2*ln2) / 2}, "memory history": {e.MemHistory, 0},
		"cpu used/requested": {e.CPUUsedShare, 4.0 / 4}, "memory request": {e.MemRequest, 0},
	} {
		if math.Abs(c[0]-c[1]) > 1e-9 {
			t.Errorf("%s: %v, want %v", name, c[0], c[1])
		}
	}
}

// TestTraceDays: both committed PlanetLab days load (every VM's shape of mean 1, at least 10 %
// mean utilization kept as tracegen's rule says), they differ, the default day is the one every
// table before issue 52 used, and an unknown day is refused naming the days there are.
func TestTraceDays(t *testing.T) {
	dir, err := tracesDir()
	if err != nil {
		t.Fatal(err)
	}
	if DefaultTraceDay != "20110303" {
		t.Errorf("default day %s: the published tables are of 20110303", DefaultTraceDay)
	}
	a, err := LoadTraces(dir, "20110303")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadTraces(dir, "20110322")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Shapes) != 403 || len(b.Shapes) != 486 || b.Day != "20110322" {
		t.Errorf("%d and %d VMs (day %s), want 403 and 486 (tracegen's 10 %% rule)", len(a.Shapes), len(b.Shapes), b.Day)
	}
	for _, s := range b.Shapes {
		sum := 0.0
		for _, v := range s.Values {
			sum += v
		}
		if sum/288 < 0.999 || sum/288 > 1.001 {
			t.Fatalf("VM %s: mean %v, want 1", s.Name, sum/288)
		}
	}
	if a.Shapes[0].Name == b.Shapes[0].Name && a.Shapes[0].Values[0] == b.Shapes[0].Values[0] {
		t.Error("the two days' first VMs are the same")
	}
	if _, err := LoadTraces(dir, "20990101"); err == nil || !strings.Contains(err.Error(), "20110322") {
		t.Errorf("unknown day: %v", err)
	}
}

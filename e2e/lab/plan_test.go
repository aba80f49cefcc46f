package main

import (
	"math"
	"testing"
	"time"
)

// TestPlanFollowsTheLabsClock: the reference schedulers' plan gives each pod's usage in each
// simulated minute as the lab's model computes it (at the middle of the minute), from its
// arrival's minute to the run's end, and maps real time to simulated minutes as the tracker's
// clock does (simulated = real since the start x speed).
func TestPlanFollowsTheLabsClock(t *testing.T) {
	dir, err := tracesDir()
	if err != nil {
		t.Fatal(err)
	}
	m, err := TraceModel(dir, DefaultTraceDay, DefaultCPUScale)
	if err != nil {
		t.Fatal(err)
	}
	rc := RunConfig{Cluster: Cluster{Nodes: 4, CPU: 16000, Memory: 64 << 30}, Duration: 20 * time.Minute, MeanRun: 5 * time.Minute, Speed: 10, Model: m}
	w, err := Generate(WorkSteady, rc.Cluster, rc.Duration, rc.MeanRun, 3, m)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Hour)
	plan := planFor(rc, w, 3, start)
	if len(plan.Pods) != len(w.Pods) || plan.Minutes != 20 {
		t.Fatalf("%d pods, %d minutes; want %d, 20", len(plan.Pods), plan.Minutes, len(w.Pods))
	}
	for i := range w.Pods {
		p := &w.Pods[i]
		u := plan.Pods[p.Name]
		if u.From != int(p.Arrive/time.Minute) || len(u.CPU) != 20-u.From || u.Run != p.Duration.Minutes() || u.Workload != p.Workload {
			t.Fatalf("pod %s: from %d, %d values, run %v, workload %s", p.Name, u.From, len(u.CPU), u.Run, u.Workload)
		}
		for minute := u.From; minute < 20; minute++ {
			c, mem := m.Usage(3, p, time.Duration(minute)*time.Minute+30*time.Second)
			if gc, gm := u.At(minute); gc != math.Round(c) || gm != math.Round(mem) {
				t.Fatalf("pod %s minute %d: plan %v %v, model %v %v", p.Name, minute, gc, gm, c, mem)
			}
		}
	}
	tr := &tracker{rc: rc}
	tr.start.Store(&start)
	// 6 real seconds at 10x: one simulated minute, on both clocks.
	if got := plan.Now(start.Add(6 * time.Second)); got != 1 {
		t.Errorf("plan's clock at 6 s: %v simulated minutes, want 1", got)
	}
	if diff := plan.Now(time.Now()) - tr.now().Minutes(); math.Abs(diff) > 0.01 {
		t.Errorf("plan and tracker disagree by %v simulated minutes", diff)
	}
}

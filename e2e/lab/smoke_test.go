package main

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestLabSmoke runs the lab end to end in a small configuration (20 nodes, 12 simulated
// minutes of the reward workload, trace-driven usage from the committed fixtures, as make
// eval's default) for kube-scheduler's defaults and for the safe and congestion agents as
// extenders, and checks that the whole path works: kwok runs, completes and fails pods; usage
// reaches the node annotations through Prometheus and the annotator, and the pods' usage series
// reach Prometheus; every scheduler placed pods; the figures are finite.
func TestLabSmoke(t *testing.T) {
	prom, err := harness.PrometheusBinary()
	if err != nil {
		if os.Getenv("REQUIRE_PROMETHEUS") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	annotator, err := buildAnnotator()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := tracesDir()
	if err != nil {
		t.Fatal(err)
	}
	model, err := TraceModel(dir, DefaultTraceDay, DefaultCPUScale)
	if err != nil {
		t.Fatal(err)
	}
	rc := RunConfig{
		Cluster:  Cluster{Nodes: 20, CPU: 16000, Memory: 64 << 30},
		Duration: 12 * time.Minute, Warmup: 2 * time.Minute, MeanRun: 4 * time.Minute,
		Speed: 30, Model: model, Progress: testWriter{t},
		AnnotatorBin: annotator, PrometheusBin: prom,
	}
	w, err := Generate(WorkReward, rc.Cluster, rc.Duration, rc.MeanRun, 1, rc.Model)
	if err != nil {
		t.Fatal(err)
	}
	// placedByDefaults is what the defaults placed, and stretchByDefaults how long their pods
	// ran against their given time: safe is held to the first when its own run kept time as
	// the defaults' did (the order matters).
	placedByDefaults, stretchByDefaults := 0, 0.0
	for _, name := range []string{"defaults", "safe"} {
		s, err := findScheduler(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			r := Run(t, rc, w, s, 1)
			f := r.Figures
			t.Logf("%s: %+v; completed %d, nodes with statistics %d (busy %d), pods with usage series %d", name, f, r.Completed, r.StatsNodes, r.BusyStatsNodes, r.PodSeries)
			if f.Created < len(w.Pods)/2 {
				t.Errorf("created %d of %d pods", f.Created, len(w.Pods))
			}
			// The workload fits the cluster by requests, so what is left pending at the end is the
			// machine's lag: 12 simulated minutes are 24 s here, and on a loaded machine the
			// defaults themselves have left a quarter of the pods pending (bind p50 9 s). So every
			// scheduler must place most pods, and safe nearly as many as the defaults in the same
			// test. (Before safe counted the growth of a node's requests since its statistics, pods
			// gone counted off, it held back 11 % in this run of short-lived pods.)
			if f.Placed < f.Created/2 {
				t.Errorf("placed %d of %d pods, want at least half", f.Placed, f.Created)
			}
			//
			// The comparison is fair only between runs whose pods lived as long as given alike: a
			// run beside other work (CI runs this beside the e2e suite) can see its pods live 1.6x
			// their time, and pods living longer fill the nodes whatever the scheduler.
			if name == "defaults" {
				placedByDefaults, stretchByDefaults = f.Placed, f.RunStretch
			} else if !sameStretch(f.RunStretch, stretchByDefaults) {
				t.Logf("placed %d of %d pods beside the defaults' %d, not compared: pods ran %.2fx their given time here and %.2fx in the defaults' run", f.Placed, f.Created, placedByDefaults, f.RunStretch, stretchByDefaults)
			} else if minPlaced := 9 * placedByDefaults / 10; f.Placed < minPlaced {
				t.Errorf("placed %d of %d pods, want at least %d (nine tenths of the defaults' %d)", f.Placed, f.Created, minPlaced, placedByDefaults)
			}
			if r.Completed == 0 {
				t.Error("kwok completed no pod")
			}
			if f.FailedStarts == 0 {
				t.Error("no fragile pod failed (kwok's fail stage on the bad nodes)")
			}
			if r.StatsNodes != rc.Cluster.Nodes || r.BusyStatsNodes == 0 {
				t.Errorf("%d nodes carry statistics (%d busy), want all %d with some busy", r.StatsNodes, r.BusyStatsNodes, rc.Cluster.Nodes)
			}
			if r.PodSeries == 0 {
				t.Error("Prometheus holds no container_memory_working_set_bytes series of the pods")
			}
			if f.Minutes < 8 || f.NodesInUse <= 0 || f.CPUInUse <= 0 || f.MemInUse <= 0 {
				t.Errorf("minutes %v, nodes in use %v, utilization %v %v", f.Minutes, f.NodesInUse, f.CPUInUse, f.MemInUse)
			}
			for _, v := range append([]float64{f.WorstP99, f.CV, f.BindP50, f.BindP99}, f.Overload...) {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Errorf("figure %v is not a finite non-negative number: %+v", v, f)
				}
			}
			if f.BindP99 < f.BindP50 || f.BindP50 <= 0 {
				t.Errorf("bind p50 %v, p99 %v", f.BindP50, f.BindP99)
			}
			if len(r.Series) < 10 {
				t.Errorf("%d points in the time series", len(r.Series))
			}
		})
	}
}

// sameStretch reports whether two runs' pods lived their given time alike (pod run / given
// within 10 % of each other), so that what they placed can be compared.
func sameStretch(a, b float64) bool {
	return a > 0 && b > 0 && math.Max(a, b)/math.Min(a, b) <= 1.1
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

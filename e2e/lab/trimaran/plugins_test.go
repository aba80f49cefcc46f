package trimaran

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwkimpl "k8s.io/kubernetes/pkg/scheduler/framework"
)

const gib = 1 << 30

func node(name string) *v1.Node {
	list := v1.ResourceList{v1.ResourceCPU: resource.MustParse("16"), v1.ResourceMemory: *resource.NewQuantity(64*gib, resource.BinarySI)}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Capacity: list, Allocatable: list.DeepCopy()}}
}

func nodeInfo(n *v1.Node) *fwkimpl.NodeInfo {
	ni := fwkimpl.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

// pod returns a pod of one container with the given cpu request and limit (millicores, 0: none)
// and memory request (bytes, 0: none).
func pod(name string, reqMilli, limitMilli, memBytes int64) *v1.Pod {
	c := v1.Container{Name: "main", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}
	if reqMilli > 0 {
		c.Resources.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(reqMilli, resource.DecimalSI)
	}
	if memBytes > 0 {
		c.Resources.Requests[v1.ResourceMemory] = *resource.NewQuantity(memBytes, resource.BinarySI)
	}
	if limitMilli > 0 {
		c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(limitMilli, resource.DecimalSI)}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func args(raw string) runtime.Object {
	if raw == "" {
		return nil
	}
	return &runtime.Unknown{Raw: []byte(raw), ContentType: runtime.ContentTypeJSON}
}

// TestTargetLoadPackingScore checks TargetLoadPacking's scores (targetloadpacking.go Score and
// PredictUtilisation of scheduler-plugins v0.33.5) against numbers computed by hand, with the
// shipped defaults (target 40 %, multiplier 1.5, default request 1000m) on a 16-cpu node.
func TestTargetLoadPackingScore(t *testing.T) {
	end := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stats := func(freeMilli float64) Metrics {
		return Metrics{Window: Window{Start: end.Add(-15 * time.Minute), End: end},
			Nodes: map[string]nodeFree{"n": {cpuAvg: freeMilli, cpuStd: 500, memAvg: 32 * gib, has: [4]bool{true, true, true, false}}}}
	}
	type bound struct {
		p  *v1.Pod
		at time.Duration // after the window's end
	}
	cases := []struct {
		name   string
		free   float64
		pod    *v1.Pod
		bound  []bound
		noNode bool
		want   int64
	}{
		// util 4000m; pod 1000m x 1.5 = 1500m: U = 100 (4000+1500)/16000 = 34.375 <= 40:
		// round(60 x 34.375/40 + 40) = round(91.5625) = 92.
		{name: "below target", free: 12000, pod: pod("p", 1000, 0, 0), want: 92},
		// A cpu limit is the prediction: U = 100 (4000+2000)/16000 = 37.5: round(56.25+40) = 96.
		{name: "limit predicts", free: 12000, pod: pod("p", 1000, 2000, 0), want: 96},
		// No cpu request: the default 1000m: U = 31.25: round(46.875+40) = 86.875 -> 87.
		{name: "default request", free: 12000, pod: pod("p", 0, 0, 0), want: 87},
		// A 2000m pod bound 10 s after the window's end adds 3000m: U = 100 (4000+1500+3000)/16000
		// = 53.125 > 40: round(40 (100-53.125)/60) = round(31.25) = 31.
		{name: "bound after the metrics", free: 12000, pod: pod("p", 1000, 0, 0), bound: []bound{{pod("b", 2000, 0, 0), 10 * time.Second}}, want: 31},
		// Bound 30 s before the end: within the 60 s reporting interval, counted: 31 again.
		{name: "bound within the reporting interval", free: 12000, pod: pod("p", 1000, 0, 0), bound: []bound{{pod("b", 2000, 0, 0), -30 * time.Second}}, want: 31},
		// Bound 90 s before the end: in the metrics, not counted: 92.
		{name: "bound before the interval", free: 12000, pod: pod("p", 1000, 0, 0), bound: []bound{{pod("b", 2000, 0, 0), -90 * time.Second}}, want: 92},
		// util 14000m: U = 100 (14000+1500)/16000 = 96.875: round(40 x 3.125/60) = round(2.083) = 2.
		{name: "above target", free: 2000, pod: pod("p", 1000, 0, 0), want: 2},
		// util 16000m: U = 109.375 > 100: 0.
		{name: "above capacity", free: 0, pod: pod("p", 1000, 0, 0), want: 0},
		// U = 40 exactly: round(60 + 40) = 100. util 4900m + 1500m = 6400m = 40 %.
		{name: "at target", free: 11100, pod: pod("p", 1000, 0, 0), want: 100},
		{name: "no statistics", free: 12000, pod: pod("p", 1000, 0, 0), noNode: true, want: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl, err := newTargetLoadPacking(nil)
			if err != nil {
				t.Fatal(err)
			}
			pl.collector = &Collector{}
			pl.collector.set(stats(c.free))
			pl.cache = newPodAssignCache(60 * time.Second)
			for _, b := range c.bound {
				at := end.Add(b.at)
				pl.cache.now = func() time.Time { return at }
				b.p.Spec.NodeName = "n"
				pl.cache.add(b.p)
			}
			name := "n"
			if c.noNode {
				name = "other"
			}
			got, st := pl.Score(context.Background(), nil, c.pod, nodeInfo(node(name)))
			if !st.IsSuccess() {
				t.Fatalf("status %v", st)
			}
			if got != c.want {
				t.Errorf("score %d, want %d", got, c.want)
			}
		})
	}
}

// TestLoadVariationRiskBalancingScore checks LoadVariationRiskBalancing's scores
// (loadvariationriskbalancing.go Score, analysis.go computeScore, resourcestats.go
// CreateResourceStats and GetMuSigma of scheduler-plugins v0.33.5) against numbers computed by
// hand, on a node of 16 cpu and 64 GiB, for a pod requesting 2 cpu and 4 GiB.
func TestLoadVariationRiskBalancingScore(t *testing.T) {
	// cpu: free 8000m on average (utilization 50 %), deviation 1600m (10 %): mu = (8000+2000)/16000
	// = 0.625, sigma = 0.1. memory: free 48 GiB (25 %), deviation 3.2 GiB (5 %): mu = (16+4)/64
	// = 0.3125, sigma = 0.05.
	typical := nodeFree{cpuAvg: 8000, cpuStd: 1600, memAvg: 48 * gib, memStd: 3.2 * gib, has: [4]bool{true, true, true, true}}
	cases := []struct {
		name string
		args string
		free nodeFree
		want int64
	}{
		// defaults (margin 1, sensitivity 1): cpu risk (0.625+0.1)/2 = 0.3625, score 63.75;
		// memory risk (0.3125+0.05)/2 = 0.18125, score 81.875; the lower, 63.75 -> 64.
		{name: "defaults", free: typical, want: 64},
		// sensitivity 2: cpu sigma sqrt(0.1) = 0.31623, risk 0.47061, score 52.94; memory
		// sqrt(0.05) = 0.22361, risk 0.26805, score 73.19: 53.
		{name: "sensitivity 2", args: `{"safeVarianceSensitivity": 2}`, free: typical, want: 53},
		// margin 2: cpu sigma 0.2, risk 0.4125, score 58.75 -> 59 (memory 79.375).
		{name: "margin 2", args: `{"safeVarianceMargin": 2}`, free: typical, want: 59},
		// A negative margin is replaced by the default 1 (SetDefaults): 64.
		{name: "negative margin", args: `{"safeVarianceMargin": -3}`, free: typical, want: 64},
		// cpu fully used: mu clipped to 1, sigma 0: risk 0.5, score 50 (memory 81.875).
		{name: "saturated", free: nodeFree{cpuAvg: 0, memAvg: 48 * gib, memStd: 3.2 * gib, has: [4]bool{true, true, true, true}}, want: 50},
		// Only cpu statistics: the cpu score alone, 63.75 -> 64; memory's absence does not count as 0.
		{name: "cpu only", free: nodeFree{cpuAvg: 8000, cpuStd: 1600, has: [4]bool{true, true}}, want: 64},
		// Only memory's average: mu 0.3125, sigma 0: risk 0.15625, score 84.375 -> 84.
		{name: "memory average only", free: nodeFree{memAvg: 48 * gib, has: [4]bool{false, false, true, false}}, want: 84},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl, err := newLoadVariationRiskBalancing(args(c.args))
			if err != nil {
				t.Fatal(err)
			}
			pl.collector = &Collector{}
			pl.collector.set(Metrics{Nodes: map[string]nodeFree{"n": c.free}})
			got, st := pl.Score(context.Background(), nil, pod("p", 2000, 0, 4*gib), nodeInfo(node("n")))
			if !st.IsSuccess() {
				t.Fatalf("status %v", st)
			}
			if got != c.want {
				t.Errorf("score %d, want %d", got, c.want)
			}
		})
	}
	t.Run("no statistics", func(t *testing.T) {
		pl, _ := newLoadVariationRiskBalancing(nil)
		pl.collector = &Collector{}
		if got, _ := pl.Score(context.Background(), nil, pod("p", 2000, 0, 4*gib), nodeInfo(node("n"))); got != 0 {
			t.Errorf("before any fetch: score %d, want 0", got)
		}
		pl.collector.set(Metrics{Nodes: map[string]nodeFree{"other": typical}})
		if got, _ := pl.Score(context.Background(), nil, pod("p", 2000, 0, 4*gib), nodeInfo(node("n"))); got != 0 {
			t.Errorf("node missing from the statistics: score %d, want 0", got)
		}
	})
}

// TestArgs checks the defaults and the errors of the plugins' args.
func TestArgs(t *testing.T) {
	pl, err := newTargetLoadPacking(nil)
	if err != nil || pl.target != 40 || pl.requestsFactor != 1.5 || pl.defaultMilli != 1000 {
		t.Errorf("TargetLoadPacking defaults: %+v, %v; want target 40, multiplier 1.5, default request 1000m", pl, err)
	}
	pl, err = newTargetLoadPacking(args(`{"targetUtilization": 0, "defaultRequestsMultiplier": "2", "defaultRequests": {"cpu": "500m"}}`))
	if err != nil || pl.target != 40 || pl.requestsFactor != 2 || pl.defaultMilli != 500 {
		t.Errorf("TargetLoadPacking args: %+v, %v; want target 40 (0 is defaulted), multiplier 2, default request 500m", pl, err)
	}
	for raw, want := range map[string]string{
		`{"defaultRequestsMultiplier": "x"}`: `defaultRequestsMultiplier "x" is not a number`,
		`{"targetUtilisation": 50}`:          `unknown field "targetUtilisation"`,
	} {
		if _, err := newTargetLoadPacking(args(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("args %s: error %v, want one containing %q", raw, err, want)
		}
	}
	if _, err := newLoadVariationRiskBalancing(args(`{"safeVarianceMargins": 1}`)); err == nil || !strings.Contains(err.Error(), `unknown field "safeVarianceMargins"`) {
		t.Errorf("LoadVariationRiskBalancing unknown field: error %v", err)
	}
}

// TestFetch checks the load-watcher stand-in's queries (load-watcher's buildPromQuery over all
// hosts) and the percentages it makes of Prometheus' answers.
func TestFetch(t *testing.T) {
	var queries []string
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		queries = append(queries, q)
		v := map[string]string{
			"avg_over_time(free_cpu[30000ms])":    "12000",
			"stddev_over_time(free_cpu[30000ms])": "800",
			"avg_over_time(free_mem[30000ms])":    fmt.Sprint(48 * gib),
			"stddev_over_time(free_mem[30000ms])": fmt.Sprint(gib),
		}[q]
		if v == "" {
			fmt.Fprintf(w, `{"status":"error","error":"unexpected query %s"}`, q)
			return
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"n","instance":"x"},"value":[1700000000,"%s"]}]}}`, v)
	}))
	defer prom.Close()
	env := map[string]string{"TRIMARAN_PROMETHEUS_URL": prom.URL, "TRIMARAN_CPU_FREE_METRIC": "free_cpu",
		"TRIMARAN_MEMORY_FREE_METRIC": "free_mem", "TRIMARAN_WINDOW": "30s"}
	s, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0)
	f := &fetcher{s: s, client: prom.Client(), now: func() time.Time { return at }}
	m, err := f.fetch(context.Background())
	if err != nil {
		t.Fatalf("fetch: %v (queries %v)", err, queries)
	}
	if !m.Window.End.Equal(at) || !m.Window.Start.Equal(at.Add(-30*time.Second)) {
		t.Errorf("window %v, want 30 s ending at %v", m.Window, at)
	}
	// cpu: 100 (1 - 12000/16000) = 25 %, deviation 100 x 800/16000 = 5 %; memory 100 (1 - 48/64)
	// = 25 %, deviation 100/64 = 1.5625 %.
	want := []Metric{{CPU, Average, 25}, {CPU, Std, 5}, {Memory, Average, 25}, {Memory, Std, 1.5625}}
	got := m.NodeMetrics(node("n"))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	if m.NodeMetrics(node("other")) != nil {
		t.Errorf("a node Prometheus did not name has metrics")
	}
	env["TRIMARAN_CPU_FREE_METRIC"] = "unknown"
	s, _ = SettingsFromEnv(func(k string) string { return env[k] })
	f.s = s
	if _, err := f.fetch(context.Background()); err == nil {
		t.Errorf("a fetch with a failed query succeeded")
	}
}

// TestSettingsFromEnv checks that a misconfiguration names its variable.
func TestSettingsFromEnv(t *testing.T) {
	for env, want := range map[string]string{
		"":                                       "TRIMARAN_PROMETHEUS_URL is not set",
		"TRIMARAN_PROMETHEUS_URL=localhost:9090": "TRIMARAN_PROMETHEUS_URL",
		"TRIMARAN_WINDOW=15":                     "TRIMARAN_WINDOW",
		"TRIMARAN_COLLECTOR_INTERVAL=-1s":        "TRIMARAN_COLLECTOR_INTERVAL",
		"TRIMARAN_REPORTING_INTERVAL=a":          "TRIMARAN_REPORTING_INTERVAL",
		"TRIMARAN_WATCHER_INTERVAL=0s":           "TRIMARAN_WATCHER_INTERVAL",
		"TRIMARAN_CACHE_CLEANUP=1h TRIMARAN_X=1": "",
	} {
		vars := map[string]string{}
		if !strings.HasPrefix(env, "TRIMARAN_PROMETHEUS_URL") && env != "" {
			vars["TRIMARAN_PROMETHEUS_URL"] = "http://127.0.0.1:9090"
		}
		for _, kv := range strings.Fields(env) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		_, err := SettingsFromEnv(func(k string) string { return vars[k] })
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", env, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want one naming %s", env, err, want)
		}
	}
}

// TestPodAssignCache checks the cache's removal and its cleanup, which keeps a node all of whose
// entries are old (handler.go cleanupCache) and drops the old entries of the others.
func TestPodAssignCache(t *testing.T) {
	c := newPodAssignCache(60 * time.Second)
	t0 := time.Unix(1000, 0)
	at := t0
	c.now = func() time.Time { return at }
	for i, spec := range []struct {
		node string
		at   time.Duration
	}{{"a", 0}, {"a", 100 * time.Second}, {"b", 0}, {"b", 10 * time.Second}} {
		p := pod(fmt.Sprint("p", i), 1000, 0, 0)
		p.Spec.NodeName = spec.node
		at = t0.Add(spec.at)
		c.add(p)
	}
	at = t0.Add(120 * time.Second)
	c.cleanup()
	if len(c.byNode["a"]) != 1 || c.byNode["a"][0].pod.Name != "p1" {
		t.Errorf("node a after cleanup: %v, want p1 only", c.byNode["a"])
	}
	if len(c.byNode["b"]) != 2 {
		t.Errorf("node b (every entry old) after cleanup: %d entries, want both kept as handler.go keeps them", len(c.byNode["b"]))
	}
	predict := func(*v1.Pod) int64 { return 1 }
	if got := c.missingCPU("b", t0.Add(65*time.Second), predict); got != 1 {
		t.Errorf("node b missing at 65 s: %d pods counted, want 1 (p3, bound 55 s before)", got)
	}
	p := pod("p3", 1000, 0, 0)
	p.Spec.NodeName = "b"
	c.remove(p)
	if len(c.byNode["b"]) != 1 || c.byNode["b"][0].pod.Name != "p2" {
		t.Errorf("node b after removing p3: %v", c.byNode["b"])
	}
}

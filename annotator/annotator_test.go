package annotator

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

// fakeCluster is a Cluster over fixed nodes and allocations that reads the nodes back from a
// fake clientset, so that patches show in the next cycle as they would through an informer.
type fakeCluster struct {
	client *fake.Clientset
	alloc  map[string]framework.Amounts
}

func (f *fakeCluster) HasSynced() bool { return true }
func (f *fakeCluster) Nodes() []*corev1.Node {
	list, err := f.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}
func (f *fakeCluster) Allocated(node string) framework.Amounts { return f.alloc[node] }

// stubSource serves fixed series: it stands for a source in the tests of the annotator's own
// logic (the real sources have their own tests).
type stubSource struct {
	series   map[string]NodeSeries
	problems map[string]string
	err      error
	calls    int
}

func (s *stubSource) Name() string                                            { return "stub" }
func (s *stubSource) Sample(context.Context, []*corev1.Node, time.Time) error { return nil }
func (s *stubSource) Series(context.Context, []*corev1.Node, time.Time) (map[string]NodeSeries, map[string]string, error) {
	s.calls++
	return s.series, s.problems, s.err
}

// kubeletNode starts a node as a kubelet reports it: capacity and allocatable of the given cpu
// and memory, 110 pods and 100Gi of ephemeral storage.
func kubeletNode(name, cpu, memory string) *fixtures.NodeWrapper {
	return fixtures.MakeNode().Name(name).Resources(fixtures.Res{
		corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory,
		corev1.ResourcePods: "110", corev1.ResourceEphemeralStorage: "100Gi",
	})
}

// defaults returns the declared defaults, as the command would have them with nothing set.
func defaults(t *testing.T) Config {
	t.Helper()
	c, err := settingstest.Parse[Config](nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type rig struct {
	a      *Annotator
	client *fake.Clientset
	source *stubSource
	hook   *logtest.Hook
}

func newRig(t *testing.T, cfg Config, alloc map[string]framework.Amounts, source *stubSource, nodes ...runtime.Object) *rig {
	t.Helper()
	client := fake.NewClientset(nodes...)
	l, hook := logtest.NewNullLogger()
	l.SetLevel(logrus.DebugLevel)
	var src Source
	if source != nil {
		src = source
	}
	a, err := New(cfg, &fakeCluster{client: client, alloc: alloc}, client, src, logrus.NewEntry(l), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{a: a, client: client, source: source, hook: hook}
}

// patches returns the merge patches sent since the last call, by node.
func (r *rig) patches(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, act := range r.client.Actions() {
		p, ok := act.(k8stesting.PatchAction)
		if !ok {
			continue
		}
		if p.GetPatchType() != types.MergePatchType {
			t.Errorf("patch type %s, want a merge patch", p.GetPatchType())
		}
		var body struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		out[p.GetName()] = body.Metadata.Annotations
	}
	r.client.ClearActions()
	return out
}

func (r *rig) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := r.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAllocationAnnotations(t *testing.T) {
	cfg := defaults(t)
	alloc := map[string]framework.Amounts{
		"n1": {corev1.ResourceCPU: 1500, corev1.ResourceMemory: 3 << 30, corev1.ResourcePods: 4, "nvidia.com/gpu": 1,
			corev1.ResourceEphemeralStorage: 10 << 30},
	}
	fresh := fixtures.MakeNode().Name("new").Obj() // no status yet
	r := newRig(t, cfg, alloc, nil, kubeletNode("n1", "4", "16Gi").Obj(), kubeletNode("n2", "2", "8Gi").Obj(), fresh)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	res := r.a.Cycle(context.Background(), now)
	if res.Patched != 3 || res.Failed != 0 || res.Statistics {
		t.Errorf("result %+v, want 3 patched, no statistics", res)
	}
	want := map[string]map[string]string{
		// n1: 4000m - 1500m = 2500m; 16Gi - 3Gi = 13Gi; 110 - 4 pods; 0 GPUs allocatable - 1
		// requested = -1 (overcommitted, reported as it is); 100Gi - 10Gi storage.
		"n1": {
			nodestats.RequestedCPU: "1500", nodestats.RequestedMemory: "3221225472", nodestats.RequestedPods: "4", nodestats.RequestedGPU: "1",
			nodestats.RequestedEphemeralStorage: "10737418240",
			nodestats.FreeCPU:                   "2500", nodestats.FreeMemory: "13958643712", nodestats.FreePods: "106", nodestats.FreeGPU: "-1", nodestats.FreeEphemeralStorage: "96636764160",
		},
		// n2: nothing bound: all requested 0, free = allocatable.
		"n2": {
			nodestats.RequestedCPU: "0", nodestats.RequestedMemory: "0", nodestats.RequestedPods: "0", nodestats.RequestedGPU: "0", nodestats.RequestedEphemeralStorage: "0",
			nodestats.FreeCPU: "2000", nodestats.FreeMemory: "8589934592", nodestats.FreePods: "110", nodestats.FreeGPU: "0", nodestats.FreeEphemeralStorage: "107374182400",
		},
		// A node that has not reported its allocatable gets no free-* (they would be garbage).
		"new": {nodestats.RequestedCPU: "0", nodestats.RequestedMemory: "0", nodestats.RequestedPods: "0", nodestats.RequestedGPU: "0", nodestats.RequestedEphemeralStorage: "0"},
	}
	if diff := cmp.Diff(want, r.patches(t)); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
	if got := r.node(t, "n1").Annotations[nodestats.FreeCPU]; got != "2500" {
		t.Errorf("n1 free-cpu after the patch = %q", got)
	}

	// Nothing changed: no patch at all.
	if res := r.a.Cycle(context.Background(), now.Add(time.Minute)); res.Patched != 0 {
		t.Errorf("second cycle patched %d nodes", res.Patched)
	}
	if p := r.patches(t); len(p) != 0 {
		t.Errorf("second cycle sent %v", p)
	}

	// A pod lands on n2: only n2's changed keys are sent.
	alloc["n2"] = framework.Amounts{corev1.ResourceCPU: 100, corev1.ResourcePods: 1}
	r.a.Cycle(context.Background(), now.Add(2*time.Minute))
	want = map[string]map[string]string{"n2": {nodestats.RequestedCPU: "100", nodestats.FreeCPU: "1900", nodestats.RequestedPods: "1", nodestats.FreePods: "109"}}
	if diff := cmp.Diff(want, r.patches(t)); diff != "" {
		t.Errorf("patches after a change (-want +got):\n%s", diff)
	}
}

// statsRig has two nodes; the stub source knows n1 well and n2 badly.
func statsRig(t *testing.T) *rig {
	t.Helper()
	cfg := defaults(t)
	cfg.Source = "stub"
	cfg.MinSamples = 3
	cfg.Holt = Holt{Alpha: 0.5, Beta: 0.5}
	src := &stubSource{series: map[string]NodeSeries{
		// cpu 2, 4, 4, 4, 5, 5, 7, 9 (x1000): mean 5000, std 2000, forecast 9090.33 (see
		// TestSummarize); memory constant 1 GiB.
		"n1": {CPU: []float64{2000, 4000, 4000, 4000, 5000, 5000, 7000, 9000},
			Memory: []float64{1 << 30, 1 << 30, 1 << 30}},
		"n2": {CPU: []float64{1000, 1000, 1000}, Memory: []float64{1, 2}}, // too few memory samples
	}}
	ann := map[string]string{nodestats.MeanFreeCPU: "123", nodestats.StatisticsTimestamp: "2020-01-01T00:00:00Z"}
	alloc := map[string]framework.Amounts{"n1": {corev1.ResourceCPU: 2500, corev1.ResourceMemory: 3 << 30}}
	return newRig(t, cfg, alloc, src, kubeletNode("n1", "16", "64Gi").Obj(), kubeletNode("n2", "16", "64Gi").Annotations(ann).Obj())
}

func statsOnly(p map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		if !strings.HasPrefix(k, "requested-") && !strings.HasPrefix(k, "free-") {
			out[k] = v
		}
	}
	return out
}

func TestStatisticsAnnotations(t *testing.T) {
	r := statsRig(t)
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	res := r.a.Cycle(context.Background(), t0)
	if !res.Statistics || res.Patched != 2 {
		t.Fatalf("result %+v", res)
	}
	got := r.patches(t)
	want := map[string]string{
		nodestats.MeanFreeCPU: "5000", nodestats.StdFreeCPU: "2000", nodestats.ForcastedFreeCPU: "9090",
		nodestats.MeanFreeMemory: "1073741824", nodestats.StdFreeMemory: "0", nodestats.ForcastedFreeMemory: "1073741824",
		nodestats.StatisticsTimestamp: "2026-01-02T03:00:00Z",
		// the node's requests when the statistics were written, with them
		nodestats.StatisticsRequestedCPU: "2500", nodestats.StatisticsRequestedMemory: "3221225472", nodestats.StatisticsWindow: "900",
	}
	if diff := cmp.Diff(want, statsOnly(got["n1"])); diff != "" {
		t.Errorf("n1 statistics (-want +got):\n%s", diff)
	}
	// n2's window is too thin: its statistics stay as they were (only allocation is written).
	if s := statsOnly(got["n2"]); len(s) != 0 {
		t.Errorf("n2 got statistics %v from too few samples", s)
	}
	if n2 := r.node(t, "n2"); n2.Annotations[nodestats.MeanFreeCPU] != "123" || n2.Annotations[nodestats.StatisticsTimestamp] != "2020-01-01T00:00:00Z" {
		t.Errorf("n2's old statistics were touched: %v", n2.Annotations)
	}

	// Before STATS_INTERVAL has passed, the source is not asked again.
	r.a.Cycle(context.Background(), t0.Add(r.a.cfg.StatsInterval/2))
	if r.source.calls != 1 {
		t.Errorf("source asked %d times within one STATS_INTERVAL", r.source.calls)
	}

	// Within the tolerance (2 %): 5000 -> 5050 is 1 %, not rewritten; the timestamp stays.
	r.source.series["n1"] = NodeSeries{CPU: []float64{5050, 5050, 5050}, Memory: []float64{1 << 30, 1 << 30, 1 << 30}}
	t1 := t0.Add(r.a.cfg.StatsInterval)
	r.a.Cycle(context.Background(), t1)
	// std 2000 -> 0 and forecast 9090 -> 5050 moved: those two are sent, with a new timestamp;
	// mean 5000 -> 5050 (1 %) is not.
	want = map[string]string{nodestats.StdFreeCPU: "0", nodestats.ForcastedFreeCPU: "5050", nodestats.StatisticsTimestamp: t1.Format(time.RFC3339),
		nodestats.StatisticsRequestedCPU: "2500", nodestats.StatisticsRequestedMemory: "3221225472", nodestats.StatisticsWindow: "900"}
	if diff := cmp.Diff(want, statsOnly(r.patches(t)["n1"])); diff != "" {
		t.Errorf("n1 after a small change (-want +got):\n%s", diff)
	}

	// Same values again: nothing to send.
	t2 := t1.Add(r.a.cfg.StatsInterval)
	r.a.Cycle(context.Background(), t2)
	if p := r.patches(t); len(p["n1"]) != 0 {
		t.Errorf("unchanged statistics were sent: %v", p)
	}

	// Once the timestamp is STATS_REFRESH old, everything is rewritten.
	t3 := t1.Add(r.a.cfg.Refresh)
	r.a.Cycle(context.Background(), t3)
	want = map[string]string{
		nodestats.MeanFreeCPU: "5050", nodestats.StdFreeCPU: "0", nodestats.ForcastedFreeCPU: "5050",
		nodestats.MeanFreeMemory: "1073741824", nodestats.StdFreeMemory: "0", nodestats.ForcastedFreeMemory: "1073741824",
		nodestats.StatisticsTimestamp: t3.Format(time.RFC3339), nodestats.StatisticsRequestedCPU: "2500", nodestats.StatisticsRequestedMemory: "3221225472", nodestats.StatisticsWindow: "900",
	}
	if diff := cmp.Diff(want, statsOnly(r.patches(t)["n1"])); diff != "" {
		t.Errorf("n1 at refresh (-want +got):\n%s", diff)
	}
}

// Bad data leaves the node's annotations untouched and is logged once per node per cycle.
func TestBadDataLeavesAnnotations(t *testing.T) {
	r := statsRig(t)
	r.source.series["n1"] = NodeSeries{CPU: []float64{1, 2, 3}, Memory: []float64{1, 2, 3}}
	r.source.series["n2"] = NodeSeries{CPU: []float64{1, 2, 3}, Memory: []float64{1, 2, 3}}
	r.source.problems = map[string]string{"n2": "several series match the node"}
	r.source.series["n3"] = NodeSeries{CPU: []float64{1, 2, 3}, Memory: []float64{1, 2, 3}} // not a node: ignored
	before := r.node(t, "n2").Annotations
	// n1's cpu has a NaN: bad data too.
	r.source.series["n1"] = NodeSeries{CPU: []float64{1, nan(), 3}, Memory: []float64{1, 2, 3}}
	if _, err := r.client.CoreV1().Nodes().Create(context.Background(), kubeletNode("n4", "1", "1Gi").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for cycle := range 2 {
		r.hook.Reset()
		now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC).Add(time.Duration(cycle) * r.a.cfg.StatsInterval)
		res := r.a.Cycle(context.Background(), now)
		if res.BadData != 3 {
			t.Errorf("cycle %d: %d nodes with bad data, want 3 (n1 NaN, n2 ambiguous, n4 missing)", cycle, res.BadData)
		}
		for node, p := range r.patches(t) {
			if s := statsOnly(p); len(s) != 0 {
				t.Errorf("cycle %d: %s got statistics %v from bad data", cycle, node, s)
			}
		}
		warned := map[string]int{}
		for _, e := range r.hook.AllEntries() {
			if e.Level == logrus.WarnLevel {
				warned[e.Data["node"].(string)]++
			}
		}
		if diff := cmp.Diff(map[string]int{"n1": 1, "n2": 1, "n4": 1}, warned); diff != "" {
			t.Errorf("cycle %d: warnings per node (-want +got):\n%s", cycle, diff)
		}
	}
	after := r.node(t, "n2").Annotations
	for _, k := range []string{nodestats.MeanFreeCPU, nodestats.StatisticsTimestamp} {
		if before[k] != after[k] {
			t.Errorf("%s changed from %q to %q", k, before[k], after[k])
		}
	}
}

func nan() float64 { var z float64; return z / z }

// A source that fails as a whole leaves every node's statistics, and allocation goes on.
func TestSourceFailure(t *testing.T) {
	r := statsRig(t)
	r.source.err = errors.New("connection refused")
	res := r.a.Cycle(context.Background(), time.Now())
	if res.Statistics || res.Patched != 2 {
		t.Errorf("result %+v: want allocation patched, no statistics", res)
	}
	for node, p := range r.patches(t) {
		if s := statsOnly(p); len(s) != 0 {
			t.Errorf("%s got statistics %v from a failed source", node, s)
		}
	}
}

// A node deleted between the cache and the patch is skipped quietly; other patch errors are
// counted and retried next cycle.
func TestPatchErrors(t *testing.T) {
	cfg := defaults(t)
	r := newRig(t, cfg, nil, nil, kubeletNode("n1", "1", "1Gi").Obj(), kubeletNode("n2", "1", "1Gi").Obj())
	r.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.(k8stesting.PatchAction).GetName() {
		case "n1":
			return true, nil, errors.New("etcd is down")
		case "n2":
			return true, nil, apierrors.NewNotFound(corev1.Resource("nodes"), "n2")
		}
		return false, nil, nil
	})
	r.hook.Reset()
	res := r.a.Cycle(context.Background(), time.Now())
	if res.Failed != 1 || res.Patched != 0 {
		t.Errorf("result %+v, want 1 failed (n1), n2 skipped", res)
	}
	// One summary warning for the cycle, naming the first failure.
	var warnings []string
	for _, e := range r.hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warnings = append(warnings, e.Message)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "etcd is down") {
		t.Errorf("warnings %q, want one naming the failure", warnings)
	}
}

func TestWithinToleranceAndStale(t *testing.T) {
	cases := []struct {
		old  string
		ok   bool
		want string
		tol  float64
		same bool
	}{
		{"", false, "5", 0.5, false},     // missing
		{"x", true, "5", 0.5, false},     // unreadable
		{"100", true, "102", 0.02, true}, // 2 % of 100 = 2
		{"100", true, "103", 0.02, false},
		{"100", true, "98", 0.02, true},
		{"0", true, "1", 0.5, false}, // anything is far from 0
		{"0", true, "0", 0, true},
		{"NaN", true, "1", 1, false},
	}
	for _, c := range cases {
		if got := withinTolerance(c.old, c.ok, c.want, c.tol); got != c.same {
			t.Errorf("withinTolerance(%q, %v, %q, %g) = %v", c.old, c.ok, c.want, c.tol, got)
		}
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	stales := []struct {
		v     string
		ok    bool
		stale bool
	}{
		{"", false, true},
		{"yesterday", true, true},
		{"2026-01-01T11:45:00Z", true, false},
		{"2026-01-01T11:30:00Z", true, true}, // exactly 30 min old
		{"2026-01-01T13:00:00Z", true, true}, // from the future
	}
	for _, c := range stales {
		if got := stale(c.v, c.ok, now, 30*time.Minute); got != c.stale {
			t.Errorf("stale(%q) = %v", c.v, got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := defaults(t)
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	cfg.Source = SourcePrometheus
	cfg.Window = 2 * time.Minute
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "PROMETHEUS_URL") || !strings.Contains(err.Error(), "STATS_WINDOW") {
		t.Errorf("error %v should name PROMETHEUS_URL and STATS_WINDOW", err)
	}
	cfg = defaults(t)
	cfg.Source = SourceMetricsAPI
	cfg.Interval = time.Hour
	cfg.Window = 2 * time.Hour // 2 samples < STATS_MIN_SAMPLES 3
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "INTERVAL") {
		t.Errorf("error %v should name INTERVAL", err)
	}

	for env, v := range map[string]string{"PROMETHEUS_URL": "localhost:9090", "GPU_RESOURCE": "gpu",
		"PROMETHEUS_NODE_LABEL": "1abc", "STATS_TOLERANCE": "101", "FORECAST_ALPHA": "0"} {
		if _, err := settingstest.Parse[Config](map[string]string{env: v}); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%s=%s: error %v does not name it", env, v, err)
		}
	}
}

func TestHandler(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(Handler(ready.Load, prometheus.NewRegistry()))
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if get("/healthz") != 200 || get("/readyz") != 503 || get("/metrics") != 200 {
		t.Error("before sync: want healthz 200, readyz 503, metrics 200")
	}
	ready.Store(true)
	if get("/readyz") != 200 {
		t.Error("after sync: readyz not 200")
	}
}

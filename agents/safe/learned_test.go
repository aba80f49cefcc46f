package safe

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
	"github.com/kube-safe-scheduler/extender/usage"
)

// learnedAt is when the tests' samples start: two whole hours before now, because a follower
// reads the workload's memory peak against the real clock (usage's PeakWindow, 24 hours; past
// two windows the peak is forgotten). A fixed date made TestLearnedEstimator fail from two days
// after it (2026-11-29 10:00 UTC).
var learnedAt = time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)

// webPod is a pod of the workload "app shop/web" requesting cpu and memory.
func webPod(name, cpu, memory string) *corev1.Pod {
	return fixtures.MakePod().Name(name).Namespace("shop").Label("app", "web").
		Container("c", "", fixtures.Res{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}).Obj()
}

// learnedShards is what a writer stores after n samples of web pods (1 cpu, 1Gi) using ratio
// times their request of each resource, one a minute.
func learnedShards(t testing.TB, n int, ratio float64) []map[string]string {
	t.Helper()
	cfg := usage.DefaultConfig()
	cfg.MinObservations, cfg.MinSpan = 5, time.Minute
	w, err := usage.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		w.Observe(webPod("web-1", "1", "1Gi"), ratio, ratio*(1<<30), learnedAt.Add(time.Duration(i)*time.Minute))
	}
	shards, _, _ := w.Shards(1, 1<<20)
	return shards
}

// follower is a learned estimator at percentile p that read shards.
func followerOf(t testing.TB, p float64, shards []map[string]string) learnedEstimator {
	t.Helper()
	l, err := usage.NewFollower(p, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shards {
		if _, err := l.Merge(s, true); err != nil {
			t.Fatal(err)
		}
	}
	return learnedEstimator{l: l}
}

// TestLearnedEstimator: a trusted workload's pod is estimated at the percentile of its ratio
// times its own request (the memory no lower than the workload's peak); an untrusted or unknown
// workload's pod at its request.
func TestLearnedEstimator(t *testing.T) {
	est := followerOf(t, 0.9, learnedShards(t, 10, 2))
	// Every sample at ratio 2: the p90 is the end of 2's bucket. Buckets start at
	// 0.01 * (1.05^i - 1) / 0.05: bucket 49 at 1.9843, 50 at 2.0935, so 2 is in 49 and its
	// end is 2.0935 (4.7 % above).
	ratio := learnedRatio
	got := est.Estimate(webPod("web-2", "2", "1Gi"))
	if !got.Learned || got.Source != "app/shop/web" || got.RequestCPU != 2000 || got.RequestMemory != 1<<30 {
		t.Fatalf("estimate %+v: want learned from app/shop/web, request 2000m 1Gi", got)
	}
	// cpu 2000m * 2.0935 = 4187m; memory 1Gi * 2.0935, above the peak of 2Gi.
	if !closeTo(got.CPU, 2000*ratio) || !closeTo(got.Memory, ratio*(1<<30)) {
		t.Errorf("estimate %.1fm %.0f bytes, want %.1fm %.0f", got.CPU, got.Memory, 2000*ratio, ratio*(1<<30))
	}
	// A pod requesting 256Mi: 2.0935 * 256Mi is below the workload's peak, 2Gi, which floors it.
	if got := est.Estimate(webPod("web-3", "1", "256Mi")); got.Memory != 2<<30 {
		t.Errorf("memory %.0f, want the peak %d", got.Memory, 2<<30)
	}
	if ev := est.Evidence(webPod("web-2", "2", "1Gi")); ev != "p90 of 10 observations of app shop/web, request 2 cpu 1.00Gi memory" {
		t.Errorf("evidence %q", ev)
	}
	// Seven samples: trusted by the writer (5 needed), though fewer than a writer of the
	// follower's defaults would need (10): the evidence is the estimate's, not the request's.
	if ev := followerOf(t, 0.9, learnedShards(t, 7, 2)).Evidence(webPod("web-2", "2", "1Gi")); ev != "p90 of 7 observations of app shop/web, request 2 cpu 1.00Gi memory" {
		t.Errorf("evidence of a workload the writer trusts with 7 observations: %q", ev)
	}
	// Three samples: not trusted by the writer (5 needed), the request.
	if got := followerOf(t, 0.9, learnedShards(t, 3, 2)).Estimate(webPod("web-2", "2", "1Gi")); got.Learned || got.CPU != 2000 {
		t.Errorf("untrusted workload: %+v, want the request", got)
	}
	other := makePod("1", "1Gi")
	if got := est.Estimate(other); got.Learned || got.CPU != 1000 || got.Memory != 1<<30 {
		t.Errorf("pod of no workload: %+v, want the request", got)
	}
}

// learnedRatio is the p90 of a workload whose every sample is 2: the end of 2's bucket.
var learnedRatio = 0.2 * (math.Pow(1.05, 50) - 1)

func closeTo(x, y float64) bool { return x > y*0.9999 && x < y*1.0001 }

// TestLearnedEstimatorAllocations: the estimate allocates what the request's computation
// allocates, nothing more.
func TestLearnedEstimatorAllocations(t *testing.T) {
	est := followerOf(t, 0.9, learnedShards(t, 10, 2))
	pod := webPod("web-2", "2", "1Gi")
	req := testing.AllocsPerRun(100, func() { requestEstimator{}.Estimate(pod) })
	learned := testing.AllocsPerRun(100, func() { est.Estimate(pod) })
	if learned > req {
		t.Errorf("learned estimate: %v allocations, the request's %v", learned, req)
	}
}

// TestLearnedPlacement: a node with room for the pod's request but not for its learned
// estimate is rejected, the reason naming the estimate and its evidence; the pods placed since
// the statistics count at their estimates, in growth mode too; a newer store changes the
// remembered answers.
func TestLearnedPlacement(t *testing.T) {
	stamp := learnedAt.Add(time.Hour)
	// used 16000 - 9000 = 7000m of 16000m.
	node := bigNode("n", ann{nodestats.MeanFreeCPU: "9000", nodestats.StdFreeCPU: "100", nodestats.StatisticsTimestamp: stamp.Format(time.RFC3339),
		nodestats.StatisticsRequestedCPU: "0", nodestats.StatisticsRequestedMemory: "0"})
	node.ResourceVersion = "1"
	placedPod := webPod("web-placed", "1", "1Gi")
	placedPod.Spec.NodeName = "n"
	placedPod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(stamp.Add(time.Minute))}}
	c := testCluster{nodes: []*corev1.Node{node}, pods: []*corev1.Pod{placedPod}}
	pod := webPod("web-new", "3", "1Gi")
	for _, tc := range []struct {
		name   string
		placed PlacedMode
		est    Estimator
		pass   bool
	}{
		// By request: 7000 + placed 1000 + pod 3000 = 11000 of 16000 (mu 0.69): passes.
		{"request, arrivals", PlacedArrivals, requestEstimator{}, true},
		{"request, growth", PlacedGrowth, requestEstimator{}, true},
		// Learned 2.0935x: 7000 + placed 2093 + pod 6280 = 15374 of 16000 (mu 0.96 > 0.90): rejected.
		{"learned, arrivals", PlacedArrivals, followerOf(t, 0.9, learnedShards(t, 10, 2)), false},
		// Growth: the requests grew by 1000 since the statistics, and the placed pod's estimate
		// exceeds its request by 1093: the same 15374.
		{"learned, growth", PlacedGrowth, followerOf(t, 0.9, learnedShards(t, 10, 2)), false},
	} {
		h := framework.NewHandle(nil)
		h.Cluster = c
		a, err := NewWithEstimator(config(func(c *Config) { c.Filter, c.Placed = FilterPod, tc.placed }), h, tc.est)
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
		call := a.newCall(pod)
		a.placeSince(c.nodes, call)
		cpu, _, _ := a.measureNode(node, call)
		v := extendertest.Must(a.filterOverload(context.Background(), pod, c.nodes))[0]
		if v.Passes() != tc.pass {
			t.Errorf("%s: verdict %+v (mu %.4f, placed %.0f), want passes %v", tc.name, v, cpu.mu, cpu.placed, tc.pass)
			continue
		}
		if _, learned := tc.est.(learnedEstimator); learned {
			placed := math.Round(1000 * learnedRatio) // each placed pod's estimate is rounded to a millicore
			if mu := (7000 + placed + 3000*learnedRatio) / 16000; cpu.placed != placed || !closeTo(cpu.mu, mu) {
				t.Errorf("%s: placed %.1f, mu %.5f; want %.1f, %.5f", tc.name, cpu.placed, cpu.mu, placed, mu)
			}
			want := "; pod estimated 6280m cpu 2144Mi memory: p90 of 10 observations of app shop/web, request 3 cpu 1.00Gi memory"
			if !strings.HasSuffix(v.Reason, want) {
				t.Errorf("%s: reason %q, want it to end with %q", tc.name, v.Reason, want)
			}
		}
	}
}

// TestLearnedVersion: the same pod on the same node is judged anew once the store changed.
func TestLearnedVersion(t *testing.T) {
	l, err := usage.NewFollower(0.9, 100)
	if err != nil {
		t.Fatal(err)
	}
	est := learnedEstimator{l: l}
	node := bigNode("n", ann{nodestats.MeanFreeCPU: "9000", nodestats.StdFreeCPU: "100"})
	node.ResourceVersion = "1"
	a, err := NewWithEstimator(config(func(c *Config) { c.Filter = FilterPod }), framework.NewHandle(nil), est)
	if err != nil {
		t.Fatal(err)
	}
	pod := webPod("web-new", "4", "1Gi")
	// Nothing learned: 7000 + 4000 of 16000 passes, and is remembered.
	if v := extendertest.Must(a.filterOverload(context.Background(), pod, []*corev1.Node{node}))[0]; !v.Passes() {
		t.Fatalf("before learning: %+v", v)
	}
	if _, err := l.Merge(learnedShards(t, 10, 2)[0], true); err != nil {
		t.Fatal(err)
	}
	// Learned 2.0935x: 7000 + 8374 = 15374 of 16000: rejected, not the remembered pass.
	if v := extendertest.Must(a.filterOverload(context.Background(), pod, []*corev1.Node{node}))[0]; v.Passes() {
		t.Fatalf("after learning: %+v, want a rejection", v)
	}
}

// TestLearnedNeedsCluster: SAFE_ESTIMATE learned without cluster access is ErrNoCluster.
func TestLearnedNeedsCluster(t *testing.T) {
	_, err := New(config(func(c *Config) { c.Estimate = EstimateLearned }), framework.NewHandle(nil))
	if !errors.Is(err, framework.ErrNoCluster) || !strings.Contains(err.Error(), "SAFE_ESTIMATE") {
		t.Errorf("error %v, want ErrNoCluster naming SAFE_ESTIMATE", err)
	}
}

// TestLearnedFollowsTheStore: the agent's Start follows the learner's ConfigMaps through the
// API (here a fake clientset), and a pod is estimated by what they hold.
func TestLearnedFollowsTheStore(t *testing.T) {
	shards := learnedShards(t, 10, 2)
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "usage", Name: "usage-learner-0",
		Labels: map[string]string{"app.kubernetes.io/managed-by": usage.ManagedBy, usage.ShardLabel: "0"}}, Data: shards[0]})
	h := framework.NewHandle(nil)
	h.Client = client
	a, err := New(config(func(c *Config) { c.Estimate, c.EstimateNamespace = EstimateLearned, "usage" }), h)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !a.estimator.Estimate(webPod("web-2", "1", "1Gi")).Learned {
		if time.Now().After(deadline) {
			t.Fatal("the store was not read")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkEstimate: a pod's estimate by its request and by its workload's learned usage.
func BenchmarkEstimate(b *testing.B) {
	pod := webPod("web-2", "2", "1Gi")
	for _, tc := range []struct {
		name string
		est  Estimator
	}{{"request", requestEstimator{}}, {"learned", followerOf(b, 0.9, learnedShards(b, 10, 2))}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.est.Estimate(pod)
			}
		})
	}
}

// TestLearnedSpread: a workload whose web pods (1 cpu) use 3 cpu in 3 samples of 10 and 1 cpu
// in the others has its p90 at the end of 3's bucket (0.2 (1.05^57 - 1) = 3.0272) and its median
// at the end of 1's (0.2 (1.05^37 - 1) = 1.0163): spread (3.0272 - 1.0163) / z(0.9) (1.2816) =
// 1.5691 of the request, 1569.1m. A constant workload has none.
func TestLearnedSpread(t *testing.T) {
	cfg := usage.DefaultConfig()
	cfg.MinObservations, cfg.MinSpan = 5, time.Minute
	w, err := usage.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		ratio := 1.0
		if i < 3 {
			ratio = 3
		}
		w.Observe(webPod("web-1", "1", "1Gi"), ratio, ratio*(1<<30), learnedAt.Add(time.Duration(i)*time.Minute))
	}
	shards, _, _ := w.Shards(1, 1<<20)
	e := followerOf(t, 0.9, shards).Estimate(webPod("web-2", "1", "1Gi"))
	hi, mid := 0.2*(math.Pow(1.05, 57)-1), 0.2*(math.Pow(1.05, 37)-1)
	if want := (hi - mid) / 1.2815515655446004 * 1000; !e.Learned || !closeTo(e.CPU, 1000*hi) || !closeTo(e.SpreadCPU, want) {
		t.Errorf("estimate %+v, want cpu %.1f spread %.1f", e, 1000*hi, want)
	}
	if e := followerOf(t, 0.9, learnedShards(t, 10, 2)).Estimate(webPod("web-2", "1", "1Gi")); e.SpreadCPU != 0 || e.SpreadMemory != 0 {
		t.Errorf("constant workload: spread %v, %v; want 0", e.SpreadCPU, e.SpreadMemory)
	}
}

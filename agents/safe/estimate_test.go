package safe

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// scaled estimates every pod at factor times its request, as a learner that found its workload
// uses more than it asks would.
type scaled struct{ factor float64 }

func (s scaled) Estimate(pod *corev1.Pod) Estimate {
	e := requestEstimator{}.Estimate(pod)
	e.CPU, e.Memory, e.Learned, e.Source = s.factor*e.CPU, s.factor*e.Memory, true, "scaled"
	return e
}

func (s scaled) Evidence(*corev1.Pod) string {
	return "scaled by " + strconv.FormatFloat(s.factor, 'f', -1, 64)
}

func (scaled) Version() uint64 { return 1 }

func TestNewWithEstimatorNil(t *testing.T) {
	if _, err := NewWithEstimator(DefaultConfig(), framework.NewHandle(nil), nil); err == nil {
		t.Error("a nil Estimator is accepted")
	}
}

// TestRequestEstimator: the default estimate is the request as kube-scheduler computes it, in
// millicores and bytes, without evidence.
func TestRequestEstimator(t *testing.T) {
	got := requestEstimator{}.Estimate(makePod("1500m", "2Gi"))
	if want := (Estimate{CPU: 1500, Memory: 2 << 30, RequestCPU: 1500, RequestMemory: 2 << 30}); got != want {
		t.Errorf("Estimate = %+v, want %+v", got, want)
	}
}

// TestEstimatorGivesTheDemand: the pod's estimate, not its request, is what the risk adds to a
// node's usage, and what the pods placed since the statistics add; kube-scheduler's fit
// (anyTakes) still checks the request.
func TestEstimatorGivesTheDemand(t *testing.T) {
	stamp := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	target := bigNode("target", ann{nodestats.MeanFreeCPU: "8000", nodestats.StdFreeCPU: "400",
		nodestats.StatisticsTimestamp: stamp.Format(time.RFC3339)})
	c := testCluster{nodes: []*corev1.Node{target}, pods: []*corev1.Pod{
		boundPod("after", "2", "target", stamp.Add(time.Minute)),
	}}
	pod := makePod("1", "1Gi")
	agent := func(est Estimator) *Agent {
		h := framework.NewHandle(nil)
		h.Cluster = c
		a, err := NewWithEstimator(config(func(c *Config) { c.Placed = PlacedArrivals }), h, est)
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
		return a
	}
	for _, tc := range []struct {
		name   string
		est    Estimator
		placed float64 // the placed pod's estimate, millicores
		mu     float64
	}{
		// used 8000 + placed 2000 + pod 1000 = 11000 of 16000
		{name: "request", est: requestEstimator{}, placed: 2000, mu: 11000.0 / 16000},
		// used 8000 + placed 2 * 2000 + pod 2 * 1000 = 14000 of 16000
		{name: "twice the request", est: scaled{2}, placed: 4000, mu: 14000.0 / 16000},
	} {
		a := agent(tc.est)
		call := a.newCall(pod)
		a.placeSince(c.nodes, call)
		cpu, _, _ := a.measureNode(target, call)
		if cpu.placed != tc.placed || cpu.placedPods != 1 || cpu.mu != tc.mu {
			t.Errorf("%s: placed %v (%d pods), mu %v; want %v (1 pod), %v", tc.name, cpu.placed, cpu.placedPods, cpu.mu, tc.placed, tc.mu)
		}
		if call.fit != (demand{cpu: 1000, memory: 1 << 30}) {
			t.Errorf("%s: fit %+v, want the request", tc.name, call.fit)
		}
	}
	// The filter judges by the estimate: at its request the pod fits (mu 0.6875); estimated at
	// three times it, used 8000 + placed 6000 + pod 3000 = 17000 of 16000: mu 1, rejected.
	for _, tc := range []struct {
		est  Estimator
		pass bool
	}{{requestEstimator{}, true}, {scaled{3}, false}} {
		h := framework.NewHandle(nil)
		h.Cluster = c
		a, err := NewWithEstimator(config(func(c *Config) { c.Filter = FilterPod }), h, tc.est)
		if err != nil {
			t.Fatal(err)
		}
		a.now = func() time.Time { return stamp.Add(5 * time.Minute) }
		if v := extendertest.Must(a.filterOverload(context.Background(), pod, c.nodes)); v[0].Passes() != tc.pass {
			t.Errorf("%+v: verdict %+v, want passes %v", tc.est, v[0], tc.pass)
		}
	}
}

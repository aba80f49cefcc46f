package safe

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/nodestats"
)

// TestComposeVariance: within a workload spreads add, across workloads variances add.
func TestComposeVariance(t *testing.T) {
	// w: now 3 (cpu), the statistics held 1: 9 - 1 = 8; v: now 4, held none: 16. Memory: w
	// now 2, held 2: 0. Total cpu 24, memory 0.
	v := composeVariance(map[string]*groupSpread{
		"w": {now: [2]float64{3, 2}, stats: [2]float64{1, 2}},
		"v": {now: [2]float64{4, 0}},
	})
	if v != [2]float64{24, 0} {
		t.Errorf("variance %v, want [24 0]", v)
	}
	// The k-th replica of spread s joins k-1: (k s)^2 - ((k-1) s)^2 = (2k - 1) s^2.
	for k := 1; k <= 5; k++ {
		if got, want := marginalVariance(float64(k-1)*2, 2), float64(2*k-1)*4; got != want {
			t.Errorf("replica %d: %v, want %v", k, got, want)
		}
	}
}

// spreadEstimator estimates each pod at a fixed figure by its "app" label: the workload
// "app <name>", with a spread.
type spreadEstimator map[string]Estimate

func (e spreadEstimator) Estimate(p *corev1.Pod) Estimate { return e[p.Labels["app"]] }
func (spreadEstimator) Evidence(*corev1.Pod) string       { return "" }
func (spreadEstimator) Version() uint64                   { return 1 }

// TestComposedSigma: a node of 16 cpu measured at std 400m holds, placed after its statistics,
// two replicas of web (spread 500m each) and one of db (spread 300m); the next web pod (spread
// 500m) joins web's group.
//
//	correlated:  400^2 + (500 + 500)^2 + 300^2 + (2·1000·500 + 500^2) = 160000 + 1000000 + 90000 + 1250000 = 2500000: std 1581.14m, sigma 0.098821
//	independent: 400^2 + 3·500^2 + 300^2 + ... would be 160000 + 750000 + 90000 = 1000000 with the pod: std 1000m, sigma 0.0625
func TestComposedSigma(t *testing.T) {
	est := spreadEstimator{
		"web": {CPU: 2000, Memory: 1 << 30, SpreadCPU: 500, Learned: true, Source: "app shop/web"},
		"db":  {CPU: 1000, Memory: 1 << 30, SpreadCPU: 300, Learned: true, Source: "app shop/db"},
	}
	stamp := learnedAt
	after := stamp.Add(time.Minute)
	pods := []*corev1.Pod{
		boundAt(webPod("w1", "1", "1Gi"), "n", after),
		boundAt(webPod("w2", "1", "1Gi"), "n", after),
		boundAt(webPod("d1", "1", "1Gi"), "n", after),
	}
	pods[2].Labels["app"] = "db"
	sum := modelSum{window: nodestats.DefaultWindow, spreads: true}
	for _, p := range pods {
		sum.addPresent(est, p, stamp)
	}
	l := sum.load(1)
	if l.comp == nil || l.comp.variance[0] != 1090000 || l.comp.spreads["app shop/web"][0] != 1000 {
		t.Fatalf("composition %+v; want variance 1090000, web's spread 1000", l.comp)
	}
	m := measure{state: measured, std: 400, capacity: 16000, sigma: 400.0 / 16000}
	if got, want := l.composedSigma(&m, 500, "app shop/web", 0), math.Sqrt(2500000)/16000; got != want {
		t.Errorf("sigma with the next web pod %v, want %v (0.098821)", got, want)
	}
	// A pod of another workload composes in quadrature: 160000 + 1090000 + 500^2 = 1500000.
	if got, want := l.composedSigma(&m, 500, "app other/x", 0), math.Sqrt(1500000)/16000; got != want {
		t.Errorf("sigma with a pod of another workload %v, want %v", got, want)
	}
	// The same pods there all window: the statistics hold them, nothing is added but the
	// next pod's share of web's group: 160000 + 2·1000·500 + 500^2 = 1410000.
	held := modelSum{window: nodestats.DefaultWindow, spreads: true}
	for _, p := range pods {
		p.Status.Conditions[0].LastTransitionTime.Time = stamp.Add(-time.Hour)
		held.addPresent(est, p, stamp)
	}
	hl := held.load(1)
	if hl.comp == nil || hl.comp.variance != [2]float64{} || hl.pods != 0 {
		t.Fatalf("held: composition %+v, pods %d; want variance 0, 0 pods", hl.comp, hl.pods)
	}
	if got, want := hl.composedSigma(&m, 500, "app shop/web", 0), math.Sqrt(1410000)/16000; got != want {
		t.Errorf("held: sigma %v, want %v", got, want)
	}
}

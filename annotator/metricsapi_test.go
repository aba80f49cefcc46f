package annotator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
	"github.com/kube-safe-scheduler/extender/usage/metricsource"
)

// nodeMetricsGVR is where the metrics fake clientset lists NodeMetrics from (the client's
// resource is "nodes", which the tracker would not guess from the kind).
var nodeMetricsGVR = metricsv1beta1.SchemeGroupVersion.WithResource("nodes")

func setUsage(t *testing.T, c *metricsfake.Clientset, node string, at time.Time, cpu, mem string) {
	t.Helper()
	nm := &metricsv1beta1.NodeMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Timestamp:  metav1.NewTime(at),
		Window:     metav1.Duration{Duration: 15 * time.Second},
		Usage:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
	}
	if _, err := c.Tracker().Get(nodeMetricsGVR, "", node); err == nil {
		if err := c.Tracker().Update(nodeMetricsGVR, nm, ""); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := c.Tracker().Create(nodeMetricsGVR, nm, ""); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsAPISource(t *testing.T) {
	c := metricsfake.NewSimpleClientset()
	m := metricsource.NewMetricsAPI(c, 10*time.Minute)
	ctx := context.Background()
	n1 := kubeletNode("n1", "4", "8Gi").Obj()
	n2 := kubeletNode("n2", "2", "4Gi").Obj()
	n3 := fixtures.MakeNode().Name("n3").Obj() // no allocatable yet
	nodes := []*corev1.Node{n1, n2, n3}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	steps := []struct {
		at        time.Duration // metrics-server's timestamp and the sampling time
		n1CPU     string
		n1Mem     string
		n2Present bool
	}{
		{0, "1", "1Gi", true},
		{time.Minute, "1500m", "2Gi", true},
		{time.Minute, "3", "3Gi", true}, // same timestamp as before: metrics-server has not refreshed; skipped
		{2 * time.Minute, "500m", "1Gi", false},
	}
	for _, s := range steps {
		setUsage(t, c, "n1", t0.Add(s.at), s.n1CPU, s.n1Mem)
		if s.n2Present {
			setUsage(t, c, "n2", t0.Add(s.at), "250m", "512Mi")
		}
		setUsage(t, c, "n3", t0.Add(s.at), "1", "1Gi")
		if err := m.Sample(ctx, nodes, t0.Add(s.at+time.Second)); err != nil {
			t.Fatal(err)
		}
	}

	series, problems, err := m.Series(ctx, nodes, t0.Add(2*time.Minute+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Free = allocatable - usage. n1 (4000m, 8Gi): usages 1000m/1Gi, 1500m/2Gi, 500m/1Gi.
	// n2 (2000m, 4Gi): the sample at 1 min was not refreshed, so 2 samples of 250m/512Mi.
	want := map[string]NodeSeries{
		"n1": {CPU: []float64{3000, 2500, 3500}, Memory: []float64{7 << 30, 6 << 30, 7 << 30}},
		"n2": {CPU: []float64{1750, 1750}, Memory: []float64{3.5 * (1 << 30), 3.5 * (1 << 30)}},
	}
	if diff := cmp.Diff(want, series); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	if _, ok := problems["n3"]; !ok {
		t.Errorf("n3 has no allocatable but no problem was reported: %v", problems)
	}

	// Ten minutes later the first two samples have left the window; n2's all have, and n2 has
	// no data any more.
	series, _, _ = m.Series(ctx, nodes, t0.Add(11*time.Minute+30*time.Second))
	want = map[string]NodeSeries{"n1": {CPU: []float64{3500}, Memory: []float64{7 << 30}}}
	if diff := cmp.Diff(want, series); diff != "" {
		t.Errorf("series after the window moved (-want +got):\n%s", diff)
	}
}

func TestMetricsAPISourceFailure(t *testing.T) {
	c := metricsfake.NewSimpleClientset()
	c.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is currently unable to handle the request")
	})
	m := metricsource.NewMetricsAPI(c, time.Hour)
	if err := m.Sample(context.Background(), nil, time.Now()); err == nil {
		t.Error("a failed list gave no error")
	}
}

// The metrics API source through a whole annotator cycle: after three samples the node gets
// its statistics.
func TestMetricsAPIThroughAnnotator(t *testing.T) {
	mc := metricsfake.NewSimpleClientset()
	cfg := defaults(t)
	cfg.Source = SourceMetricsAPI
	cfg.StatsInterval = time.Minute
	cfg.MinSamples = 3
	src := metricsource.NewMetricsAPI(mc, cfg.Window)
	r := newRig(t, cfg, nil, nil, kubeletNode("n1", "4", "8Gi").Obj())
	r.a.source = src
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	// Usage 1000m, 2000m, 3000m: free 3000, 2000, 1000; mean 2000; std sqrt(2/3)*1000 = 816.5;
	// a straight line: forecast 0 (clamped, not negative, as it happens exactly 0).
	for i, cpu := range []string{"1", "2", "3"} {
		setUsage(t, mc, "n1", t0.Add(time.Duration(i)*time.Minute), cpu, "4Gi")
		r.a.Cycle(context.Background(), t0.Add(time.Duration(i)*time.Minute+time.Second))
	}
	n := r.node(t, "n1")
	want := map[string]string{
		nodestats.MeanFreeCPU: "2000", nodestats.StdFreeCPU: "816", nodestats.ForcastedFreeCPU: "0",
		nodestats.MeanFreeMemory: "4294967296", nodestats.StdFreeMemory: "0", nodestats.ForcastedFreeMemory: "4294967296",
		nodestats.StatisticsTimestamp:    "2026-01-01T12:02:01Z",
		nodestats.StatisticsRequestedCPU: "0", nodestats.StatisticsRequestedMemory: "0",
		nodestats.StatisticsWindow: "900",
	}
	if diff := cmp.Diff(want, statsOnly(n.Annotations)); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

package usage

import (
	"github.com/kube-safe-scheduler/extender/workload"

	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

type fakeSource struct {
	samples []PodUsage
	err     error
}

func (f *fakeSource) Name() string { return "fake" }
func (f *fakeSource) PodUsage(context.Context, time.Time) ([]PodUsage, error) {
	return f.samples, f.err
}

// metric returns the value of the series name{labels} in reg (a counter, gauge, or a
// histogram's sample count), and the number of series of that name.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) (float64, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		v := 0.0
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				v = float64(m.GetHistogram().GetSampleCount())
			}
		}
		return v, len(mf.GetMetric())
	}
	return 0, 0
}

func TestRound(t *testing.T) {
	web := webPod("shop", "web", "1", "1Gi")
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(web); err != nil {
		t.Fatal(err)
	}
	l := testLearner(t, func(c *Config) { c.MinObservations, c.MinSpan = 3, 0 })
	src := &fakeSource{}
	reg := prometheus.NewRegistry()
	r := &Runner{Learner: l, Source: src, Pods: corelisters.NewPodLister(indexer), Store: testStore(fake.NewClientset(), l, 1),
		Metrics: NewMetrics(reg), Interval: time.Second, Log: quietLog()}

	// Not the leader: nothing learnt.
	src.samples = []PodUsage{{Namespace: "shop", Name: web.Name, CPU: 2, Memory: 1 << 30, At: t0}}
	r.Round(t.Context(), t0)
	if v, _ := metric(t, reg, "usage_learner_rounds_total", "result", "skipped"); l.Len() != 0 || v != 1 {
		t.Fatalf("a follower learnt: %d workloads", l.Len())
	}
	r.Store.Elected(t.Context())

	// Three rounds of new samples, one repeated (the source's sample did not move), and a pod
	// the cluster does not know.
	for i, at := range []time.Time{t0, t0.Add(time.Minute), t0.Add(time.Minute), t0.Add(2 * time.Minute)} {
		src.samples = []PodUsage{{Namespace: "shop", Name: web.Name, CPU: 2, Memory: 1 << 30, At: at},
			{Namespace: "shop", Name: "ghost", CPU: 5, Memory: 5, At: at}}
		r.Round(t.Context(), t0.Add(time.Duration(i)*time.Minute))
	}
	if st := l.m[workload.Key{Kind: "deployment", Namespace: "shop", Name: "web"}]; st == nil || st.n != 3 || l.Len() != 1 {
		t.Fatalf("workloads %d, web %+v: want 3 samples of web only", l.Len(), st)
	}
	if got, _ := metric(t, reg, "usage_learner_estimate_coverage_ratio"); got != 0 {
		t.Errorf("coverage %v before the estimate is trusted, want 0", got)
	}
	// Trusted now: the next sample (3 cpu against about 2.1) is scored against the estimate and
	// the request (1 cpu).
	src.samples = []PodUsage{{Namespace: "shop", Name: web.Name, CPU: 3, Memory: 1 << 30, At: t0.Add(3 * time.Minute)}}
	r.Round(t.Context(), t0.Add(3*time.Minute))
	if got, _ := metric(t, reg, "usage_learner_estimate_coverage_ratio"); got != 1 {
		t.Errorf("coverage %v, want 1", got)
	}
	for _, state := range []string{"observed", "estimated"} {
		if v, _ := metric(t, reg, "usage_learner_pods", "state", state); v != 1 {
			t.Errorf("%s pods %v, want 1", state, v)
		}
	}
	if _, n := metric(t, reg, "usage_learner_estimate_error"); n != 4 {
		t.Errorf("%d error series, want 4 (cpu and memory, by estimate and request)", n)
	}
	// cpu by estimate: one sample, |ln(3 / 2.1)| (about 0.36).
	if v, _ := metric(t, reg, "usage_learner_estimate_error", "resource", "cpu", "by", "estimate"); v != 1 {
		t.Errorf("cpu estimate errors %v, want 1", v)
	}

	// A failing source: counted, nothing learnt.
	src.err = errors.New("down")
	r.Round(t.Context(), t0.Add(4*time.Minute))
	if v, _ := metric(t, reg, "usage_learner_rounds_total", "result", "error"); v != 1 || l.m[workload.Key{Kind: "deployment", Namespace: "shop", Name: "web"}].n != 4 {
		t.Error("a failed round was not counted as such")
	}
}

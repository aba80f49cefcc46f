package safe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// callTime is the fixed clock of the staleness tests.
var callTime = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

// stamped returns the annotations a plus a statistics-timestamp of ts.
func stamped(a ann, ts string) ann {
	out := ann{nodestats.StatisticsTimestamp: ts}
	for k, v := range a {
		out[k] = v
	}
	return out
}

func ago(d time.Duration) string { return callTime.Add(-d).Format(time.RFC3339) }

// staleNodes are 4-cpu nodes at callTime with MaxStatsAge 30m. quiet: 3000m free of 4000, no
// spread: with the 400m pod mu = 0.35, sigma 0: risk 0, passes, safe-overload 10, safe-balance
// floor((1 - 0.35/2)*10 + 0.5) = 8. risky: 200m free: mu = 1 > T 0.9, sigma 0: risk 1,
// rejected for its cpu risk, safe-overload 0, safe-balance floor((1 - 1/2)*10 + 0.5) = 5.
func staleNodes() []*corev1.Node {
	quiet := ann{nodestats.MeanFreeCPU: "3000"}
	risky := ann{nodestats.MeanFreeCPU: "200"}
	return []*corev1.Node{
		fixtureNode("fresh").Annotations(stamped(quiet, ago(10*time.Minute))).Obj(),
		fixtureNode("at-limit").Annotations(stamped(quiet, ago(30*time.Minute))).Obj(), // age == max: fresh
		fixtureNode("missing").Annotations(quiet).Obj(),                                // no timestamp: judged as today
		fixtureNode("blank").Annotations(stamped(quiet, "  ")).Obj(),                   // blank counts as missing
		fixtureNode("stale").Annotations(stamped(quiet, ago(2*time.Hour+10*time.Minute))).Obj(),
		fixtureNode("stale-risky").Annotations(stamped(risky, ago(31*time.Minute))).Obj(),
		fixtureNode("unreadable").Annotations(stamped(quiet, "yesterday")).Obj(),
		fixtureNode("ahead").Annotations(stamped(quiet, ago(-45*time.Minute))).Obj(),
		fixtureNode("fresh-risky").Annotations(stamped(risky, ago(time.Minute))).Obj(),
		// A timestamp without statistics: nothing to be stale, judged as today (no statistics).
		fixtureNode("stamp-only").Annotations(stamped(nil, ago(5*time.Hour))).Obj(),
	}
}

func staleAgent(t *testing.T, maxAge time.Duration, policy StalePolicy, metrics prometheus.Registerer) *Agent {
	t.Helper()
	h := framework.NewHandle(nil)
	h.Metrics = metrics
	a, err := New(config(func(c *Config) { c.MaxStatsAge, c.Stale, c.Filter = framework.Duration(maxAge), policy, FilterPod }), h)
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return callTime }
	return a
}

func verdicts(t *testing.T, a *Agent, nodes []*corev1.Node) map[string]framework.Verdict {
	t.Helper()
	vs := extendertest.Must(a.filterOverload(context.Background(), makePod("400m", "800"), nodes))
	out := map[string]framework.Verdict{}
	for i, v := range vs {
		if !v.Passes() {
			out[nodes[i].Name] = v
		}
	}
	return out
}

const riskReason = "cpu risk 1.00 > 0.30 (mu 1.00, sigma 0.00, threshold 0.90)"

func TestStaleStatistics(t *testing.T) {
	nodes := staleNodes()
	tests := []struct {
		name     string
		maxAge   time.Duration
		policy   StalePolicy
		rejected map[string]framework.Verdict
		// overload and balance are the scores of the nodes, in order.
		overload, balance []int64
	}{{
		// ignore: stale, unreadable and ahead count as no statistics: they pass (stale-risky
		// too) and score 0, like a node without statistics.
		name: "ignore", maxAge: 30 * time.Minute, policy: StaleIgnore,
		rejected: map[string]framework.Verdict{"fresh-risky": framework.Reject(riskReason)},
		overload: []int64{10, 10, 10, 10, 0, 0, 0, 0, 0, 0},
		balance:  []int64{8, 8, 8, 8, 0, 0, 0, 0, 5, 0},
	}, {
		// reject: the filter rejects them, unresolvable, with the age; the priorities score as
		// with ignore.
		name: "reject", maxAge: 30 * time.Minute, policy: StaleReject,
		rejected: map[string]framework.Verdict{
			"stale":       framework.RejectUnresolvable("usage statistics 2h10m old (max 30m)"),
			"stale-risky": framework.RejectUnresolvable("usage statistics 31m old (max 30m)"),
			"unreadable":  framework.RejectUnresolvable(`usage statistics timestamp "yesterday" is not RFC 3339`),
			"ahead":       framework.RejectUnresolvable("usage statistics dated 45m ahead of this extender's clock (max 30m)"),
			"fresh-risky": framework.Reject(riskReason),
		},
		overload: []int64{10, 10, 10, 10, 0, 0, 0, 0, 0, 0},
		balance:  []int64{8, 8, 8, 8, 0, 0, 0, 0, 5, 0},
	}, {
		// 0 turns the check off: every node is judged on its statistics, whatever its timestamp.
		name: "off", maxAge: 0, policy: StaleReject,
		rejected: map[string]framework.Verdict{"stale-risky": framework.Reject(riskReason), "fresh-risky": framework.Reject(riskReason)},
		overload: []int64{10, 10, 10, 10, 10, 0, 10, 10, 0, 0},
		balance:  []int64{8, 8, 8, 8, 8, 5, 8, 8, 5, 0},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := staleAgent(t, tc.maxAge, tc.policy, nil)
			if diff := cmp.Diff(tc.rejected, verdicts(t, a, nodes)); diff != "" {
				t.Errorf("rejections (-want +got):\n%s", diff)
			}
			pod := makePod("400m", "800")
			if got := extendertest.Must(a.scoreOverload(context.Background(), pod, nodes)); !cmp.Equal(got, tc.overload) {
				t.Errorf("safe-overload %v, want %v", got, tc.overload)
			}
			if got := extendertest.Must(a.scoreBalance(context.Background(), pod, nodes)); !cmp.Equal(got, tc.balance) {
				t.Errorf("safe-balance %v, want %v", got, tc.balance)
			}
		})
	}
}

// Freshness is judged at each call's time from the memoized timestamp: the same node version,
// fresh at one call, is stale at a later one, and fresh again once the annotator rewrites it.
func TestStalenessFollowsTheClock(t *testing.T) {
	a := staleAgent(t, 30*time.Minute, StaleReject, nil)
	n := fixtureNode("n").Annotations(stamped(ann{nodestats.MeanFreeCPU: "3000"}, ago(20*time.Minute))).Obj()
	n.ResourceVersion = "7" // memoized
	if got := verdicts(t, a, []*corev1.Node{n}); len(got) != 0 {
		t.Fatalf("at 20m: %v", got)
	}
	a.now = func() time.Time { return callTime.Add(15 * time.Minute) }
	if got := verdicts(t, a, []*corev1.Node{n}); got["n"].Reason != "usage statistics 35m old (max 30m)" {
		t.Fatalf("15 minutes later, same version: %v", got)
	}
	n2 := fixtureNode("n").Annotations(stamped(ann{nodestats.MeanFreeCPU: "3000"}, callTime.Format(time.RFC3339))).Obj()
	n2.ResourceVersion = "8"
	if got := verdicts(t, a, []*corev1.Node{n2}); len(got) != 0 {
		t.Fatalf("rewritten: %v", got)
	}
}

// safe_stale_nodes holds, per function, the stale nodes of its latest call; no registry, no
// metrics (and no panic).
func TestStaleNodesMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := staleAgent(t, 30*time.Minute, StaleIgnore, reg)
	nodes := staleNodes()
	pod := makePod("400m", "800")
	verdicts(t, a, nodes)
	extendertest.Must(a.scoreBalance(context.Background(), pod, nodes[:5]))
	want := map[string]float64{"safe-overload/filter": 4, "safe-overload/prioritize": 0, "safe-balance/prioritize": 1}
	if diff := cmp.Diff(want, gauges(t, reg)); diff != "" {
		t.Errorf("safe_stale_nodes (-want +got):\n%s", diff)
	}
	// A second call replaces the count.
	verdicts(t, a, nodes[:1])
	if got := gauges(t, reg)["safe-overload/filter"]; got != 0 {
		t.Errorf("after a call without stale nodes: %v", got)
	}
	// Two agents on one registry: the second is refused, naming the metrics.
	h := framework.NewHandle(nil)
	h.Metrics = reg
	if _, err := New(DefaultConfig(), h); err == nil || !strings.Contains(err.Error(), "safe agent metrics") {
		t.Errorf("second registration: %v", err)
	}
}

// gauges returns the safe_stale_nodes series of reg by "function/verb".
func gauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "safe_stale_nodes" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["function"]+"/"+labels["verb"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

package safe

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

// The fixtures: nodes of 4 cpus (4000m) and 8000 bytes of memory, pods asking 400m and 800
// bytes: a tenth of each, so the arithmetic stays readable.
const (
	nodeCPU    = "4"
	nodeMemory = "8000"
)

type ann = map[string]string

// fixtureNode starts a node of the fixtures' size: nodeCPU and nodeMemory allocatable.
func fixtureNode(name string) *fixtures.NodeWrapper {
	return fixtures.MakeNode().Name(name).Allocatable(fixtures.Res{corev1.ResourceCPU: nodeCPU, corev1.ResourceMemory: nodeMemory})
}

// makePod returns a pod "p" with one container "c" requesting cpu and memory.
func makePod(cpu, memory string) *corev1.Pod {
	return fixtures.MakePod().Name("p").Namespace("default").
		Container("c", "", fixtures.Res{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}).Obj()
}

func newAgent(t testing.TB, cfg Config, log *logrus.Entry) *Agent {
	t.Helper()
	a, err := New(cfg, framework.NewHandle(log))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// config returns the defaults changed by f.
func config(f func(*Config)) Config {
	c := DefaultConfig()
	if f != nil {
		f(&c)
	}
	return c
}

func TestFilterOverload(t *testing.T) {
	pod := makePod("400m", "800")
	// T 50: the Beta(2,3) fixtures below have rank I_0.5(2,3) = 0.6875, risk 0.3125.
	t50 := func(c *Config) { c.Utilization = 50 }
	beta23CPU := ann{nodestats.MeanFreeCPU: "2800", nodestats.StdFreeCPU: "800"} // mu (1200+400)/4000 = 0.4, sigma 0.2
	tests := []struct {
		name   string
		cfg    Config
		node   *corev1.Node
		pod    *corev1.Pod
		reason string // "" passes
	}{
		{name: "no statistics", node: fixtureNode("n").Obj()},
		// used 4000-3000 = 1000; mu (1000+400)/4000 = 0.35, sigma 200/4000 = 0.05: far below T.
		{name: "quiet cpu only", node: fixtureNode("n").
			Annotations(ann{nodestats.MeanFreeCPU: "3000", nodestats.StdFreeCPU: "200"}).Obj()},
		// mu (3200+400)/4000 = 0.9 = T, std missing so sigma 0: rank 1.
		{name: "sigma 0, mu at T", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "800"}).Obj()},
		// mu (3400+400)/4000 = 0.95 > T, sigma 0: rank 0, risk 1.
		{name: "sigma 0, mu above T", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "600"}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 0.95, sigma 0.00, threshold 0.90)"},
		// cpu as beta23CPU; memory: used 8000-5600 = 2400, mu (2400+800)/8000 = 0.4, sigma
		// 1600/8000 = 0.2: risk 0.3125 > 0.30 for both.
		{name: "Beta(2,3) on both resources", cfg: config(t50),
			node: fixtureNode("n").Annotations(ann{
				nodestats.MeanFreeCPU: "2800", nodestats.StdFreeCPU: "800",
				nodestats.MeanFreeMemory: "5600", nodestats.StdFreeMemory: "1600"}).Obj(),
			reason: "cpu risk 0.31 > 0.30 (mu 0.40, sigma 0.20, threshold 0.50); " +
				"memory risk 0.31 > 0.30 (mu 0.40, sigma 0.20, threshold 0.50)"},
		// Same risk 0.3125 <= E 0.32.
		{name: "Beta(2,3) within E 32", cfg: config(func(c *Config) { c.Utilization, c.Percentile = 50, 32 }),
			node: fixtureNode("n").Annotations(beta23CPU).Obj()},
		// T 30: rank I_0.3(2,3) = 6*0.09*0.49 + 4*0.027*0.7 + 0.0081 = 0.3483, risk 0.6517 >
		// E 0.65. Both print 0.65 with two decimals, so three are used.
		{name: "close call prints more digits", cfg: config(func(c *Config) { c.Utilization, c.Percentile = 30, 65 }),
			node:   fixtureNode("n").Annotations(beta23CPU).Obj(),
			reason: "cpu risk 0.652 > 0.650 (mu 0.40, sigma 0.20, threshold 0.30)"},
		// Memory only: used 7500 + 800 = 8300 > 8000: mu 1, sigma 0, risk 1.
		{name: "memory only, failing", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeMemory: "500"}).Obj(),
			reason: "memory risk 1.00 > 0.30 (mu 1.00, sigma 0.00, threshold 0.90)"},
		// Forecasts, w = 0.2: free = 0.8*800 + 0.2*200 = 680; mu (3320+400)/4000 = 0.93 > T.
		{name: "forecast, deployed spelling", node: fixtureNode("n").
			Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.ForcastedFreeCPU: "200"}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 0.93, sigma 0.00, threshold 0.90)"},
		{name: "forecast, correct spelling", node: fixtureNode("n").
			Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.ForecastedFreeCPU: "200"}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 0.93, sigma 0.00, threshold 0.90)"},
		// Both spellings: the deployed one is read first. (The other, 4000, would give free
		// 0.8*800 + 800 = 1440, mu (2560+400)/4000 = 0.74: a pass.)
		{name: "forecast, both spellings", node: fixtureNode("n").
			Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.ForcastedFreeCPU: "200", nodestats.ForecastedFreeCPU: "4000"}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 0.93, sigma 0.00, threshold 0.90)"},
		// Unparseable forecasts are absent: free 800, mu 0.9 = T.
		{name: "forecast unparseable", node: fixtureNode("n").
			Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.ForcastedFreeCPU: "abc"}).Obj()},
		{name: "forecast NaN", node: fixtureNode("n").
			Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.ForecastedFreeCPU: "NaN"}).Obj()},
		// w = 0: the forecast does not count.
		{name: "forecast weight 0", cfg: config(func(c *Config) { c.ForecastWeight = 0 }),
			node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.ForecastedFreeCPU: "200"}).Obj()},
		// w = 1: free = 200, mu (3800+400)/4000 = 1.05, clamped to 1.
		{name: "forecast weight 100", cfg: config(func(c *Config) { c.ForecastWeight = 100 }),
			node:   fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "3000", nodestats.ForecastedFreeCPU: "200"}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 1.00, sigma 0.00, threshold 0.90)"},
		// Memory forecast, correct spelling: free 0.8*1000 + 0.2*0 = 800; mu (7200+800)/8000 = 1.
		{name: "memory forecast", node: fixtureNode("n").
			Annotations(ann{nodestats.MeanFreeMemory: "1000", nodestats.ForecastedFreeMemory: "0"}).Obj(),
			reason: "memory risk 1.00 > 0.30 (mu 1.00, sigma 0.00, threshold 0.90)"},
		// Zero or missing allocatable with statistics: not judgeable, rejected.
		{name: "zero allocatable cpu", node: fixtureNode("n").Allocatable(fixtures.Res{corev1.ResourceCPU: "0"}).
			Annotations(ann{nodestats.MeanFreeCPU: "3000"}).Obj(),
			reason: "allocatable cpu is zero or missing: its risk cannot be judged"},
		{name: "missing allocatable, both", node: fixtures.MakeNode().Name("n").
			Annotations(ann{nodestats.MeanFreeCPU: "3000", nodestats.MeanFreeMemory: "3000"}).Obj(),
			reason: "allocatable cpu is zero or missing: its risk cannot be judged; " +
				"allocatable memory is zero or missing: its risk cannot be judged"},
		// ... but a resource without statistics is not judged at all.
		{name: "missing allocatable, no statistics", node: fixtures.MakeNode().Name("n").Obj()},
		// Bad numbers: NaN and infinities are absent; -5 is a number (free -5: used 4005,
		// mu clamped to 1).
		{name: "mean NaN", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "NaN"}).Obj()},
		{name: "mean +Inf", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "+Inf"}).Obj()},
		{name: "mean -Inf", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "-Inf"}).Obj()},
		{name: "mean 1e999", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "1e999"}).Obj()},
		{name: "mean empty", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: ""}).Obj()},
		{name: "mean -5", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "-5"}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 1.00, sigma 0.00, threshold 0.90)"},
		// std NaN, +Inf or -5: sigma 0 (NaN and Inf absent, -5/4000 clamped); mu 0.9 = T.
		{name: "std NaN", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.StdFreeCPU: "NaN"}).Obj()},
		{name: "std +Inf", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.StdFreeCPU: "+Inf"}).Obj()},
		{name: "std -5", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "800", nodestats.StdFreeCPU: "-5"}).Obj()},
		// Spaces around numbers are allowed: mu (3400+400)/4000 = 0.95.
		{name: "spaces", node: fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: " 600 "}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 0.95, sigma 0.00, threshold 0.90)"},
		// The demand counts init containers and overhead as kube-scheduler does:
		// max(400m, 1000m) + 100m = 1100m; mu (1000+1100)/4000 = 0.525 > T 0.5.
		{name: "init container and overhead", cfg: config(t50), pod: withInitAndOverhead(makePod("400m", "800")),
			node:   fixtureNode("n").Annotations(ann{nodestats.MeanFreeCPU: "3000"}).Obj(),
			reason: "cpu risk 1.00 > 0.30 (mu 0.53, sigma 0.00, threshold 0.50)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg == (Config{}) {
				tc.cfg = DefaultConfig()
			}
			// These cases check the arithmetic with the pod's request added (FilterPod);
			// TestFilterModes compares the modes.
			tc.cfg.Filter = FilterPod
			if tc.pod == nil {
				tc.pod = pod
			}
			a := newAgent(t, tc.cfg, nil)
			got := extendertest.Must(a.filterOverload(context.Background(), tc.pod, []*corev1.Node{tc.node}))
			want := []framework.Verdict{{Reason: tc.reason}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// withInitAndOverhead adds an init container asking 1000m and a pod overhead of 100m.
func withInitAndOverhead(p *corev1.Pod) *corev1.Pod {
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}}}}
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	return p
}

func TestPriorities(t *testing.T) {
	pod := makePod("400m", "800")
	// T 50, E 50. Fixtures:
	// cpu Beta(2,3): mu 0.4, sigma 0.2, risk 0.3125; overload f = 0.625, floor((1 - 0.7906)*10)
	//   = 2; balance obj (0.4 + sqrt 0.2)/2 = 0.4236, floor(5.764 + 0.5) = 6.
	// memory quiet: free 5600, no std: mu (2400+800)/8000 = 0.4, sigma 0 <= T: risk 0, overload 10;
	//   balance obj 0.2, floor(8 + 0.5) = 8.
	// memory full: free 500: mu 1, sigma 0 > T: risk 1, overload 0; balance obj 0.5, floor(5.5) = 5.
	cfg := config(func(c *Config) { c.Utilization, c.Percentile = 50, 50 })
	cpuBeta := ann{nodestats.MeanFreeCPU: "2800", nodestats.StdFreeCPU: "800"}
	merge := func(ms ...ann) ann {
		out := ann{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	memQuiet := ann{nodestats.MeanFreeMemory: "5600"}
	memFull := ann{nodestats.MeanFreeMemory: "500"}
	nan := ann{nodestats.MeanFreeCPU: "NaN", nodestats.StdFreeCPU: "NaN", nodestats.MeanFreeMemory: "+Inf", nodestats.StdFreeMemory: "-Inf"}
	tests := []struct {
		name              string
		node              *corev1.Node
		overload, balance int64
	}{
		{"no statistics", fixtureNode("n").Obj(), 0, 0},
		{"cpu only", fixtureNode("n").Annotations(cpuBeta).Obj(), 2, 6},
		{"memory only", fixtureNode("n").Annotations(memQuiet).Obj(), 10, 8},
		// Both: the smaller of each.
		{"both", fixtureNode("n").Annotations(merge(cpuBeta, memQuiet)).Obj(), 2, 6},
		// cpu 2 and 6, memory 0 and 5.
		{"memory full", fixtureNode("n").Annotations(merge(cpuBeta, memFull)).Obj(), 0, 5},
		// Zero allocatable cpu scores 0 for cpu, so 0 overall.
		{"zero allocatable cpu", fixtureNode("n").Allocatable(fixtures.Res{corev1.ResourceCPU: "0"}).
			Annotations(merge(cpuBeta, memQuiet)).Obj(), 0, 0},
		// Missing allocatable memory with memory statistics: memory 0, min(2, 0) = 0.
		{"missing allocatable memory", fixtures.MakeNode().Name("n").Allocatable(fixtures.Res{corev1.ResourceCPU: nodeCPU}).
			Annotations(merge(cpuBeta, memQuiet)).Obj(), 0, 0},
		{"NaN and Inf annotations", fixtureNode("n").Annotations(nan).Obj(), 0, 0},
	}
	a := newAgent(t, cfg, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*corev1.Node{tc.node}
			if got := extendertest.Must(a.scoreOverload(context.Background(), pod, nodes)); !cmp.Equal(got, []int64{tc.overload}) {
				t.Errorf("safe-overload = %v, want [%d]", got, tc.overload)
			}
			if got := extendertest.Must(a.scoreBalance(context.Background(), pod, nodes)); !cmp.Equal(got, []int64{tc.balance}) {
				t.Errorf("safe-balance = %v, want [%d]", got, tc.balance)
			}
		})
	}
}

func TestDefaultOverloadScores(t *testing.T) {
	// With the defaults (T 0.9, E 0.3): a quiet node, sigma 0 and mu 0.35: risk 0, score 10;
	// one at mu 0.95: risk 1, score 0.
	a := newAgent(t, DefaultConfig(), nil)
	nodes := []*corev1.Node{
		fixtureNode("quiet").Annotations(ann{nodestats.MeanFreeCPU: "3000"}).Obj(),
		fixtureNode("busy").Annotations(ann{nodestats.MeanFreeCPU: "600"}).Obj(),
	}
	if got := extendertest.Must(a.scoreOverload(context.Background(), makePod("400m", "800"), nodes)); !cmp.Equal(got, []int64{10, 0}) {
		t.Errorf("safe-overload = %v, want [10 0]", got)
	}
}

func TestSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want Config
		// errs are the substrings the error must hold; none means success.
		errs []string
	}{
		{name: "defaults", want: Config{Utilization: 90, Percentile: 30, ForecastWeight: 20,
			MaxStatsAge: framework.Duration(time.Hour), Stale: StaleIgnore, Filter: DefaultFilter, PlacedShare: DefaultPlacedShare, Placed: DefaultPlaced,
			BalanceScale: BalanceAbsolute, Estimate: EstimateRequest, EstimatePercentile: 90, EstimateObject: "usage-learner"}},
		{name: "variables", env: map[string]string{"SAFEUTILIZATION": "80", "SAFEPERCENTILE": "0",
			"SAFEFORECASTWEIGHT": "100", "SAFEPRINTTABLE": "true", "SAFE_MAX_STATS_AGE": "1h30m", "SAFE_STALE": "Reject",
			"SAFE_FILTER": "Pod", "SAFE_PLACED_SHARE": "50", "SAFE_PLACED": "Arrivals", "SAFE_BALANCE_SCALE": "Relative",
			"SAFE_ESTIMATE": "Learned", "SAFE_ESTIMATE_PERCENTILE": "95", "SAFE_ESTIMATE_NAMESPACE": "usage", "SAFE_ESTIMATE_OBJECT": "learned"},
			want: Config{Utilization: 80, Percentile: 0, ForecastWeight: 100, PrintTable: true,
				MaxStatsAge: framework.Duration(90 * time.Minute), Stale: StaleReject, Filter: FilterPod, PlacedShare: 50, Placed: PlacedArrivals,
				BalanceScale: BalanceRelative, Estimate: EstimateLearned, EstimatePercentile: 95, EstimateNamespace: "usage", EstimateObject: "learned"}},
		{name: "flags win", env: map[string]string{"SAFEUTILIZATION": "80", "SAFE_MAX_STATS_AGE": "1h", "SAFE_FILTER": "pod"},
			args: []string{"--safe-utilization=70", "--safe-percentile=5", "--safe-forecast-weight=1", "--safe-print-table=true",
				"--safe-max-stats-age=0", "--safe-stale=reject", "--safe-filter=off", "--safe-placed-share=0", "--safe-balance-scale=relative"},
			want: Config{Utilization: 70, Percentile: 5, ForecastWeight: 1, PrintTable: true, Stale: StaleReject, Filter: FilterOff, Placed: PlacedGrowth,
				BalanceScale: BalanceRelative, Estimate: EstimateRequest, EstimatePercentile: 90, EstimateObject: "usage-learner"}},
		{name: "bad estimate", env: map[string]string{"SAFE_ESTIMATE": "vpa"}, errs: []string{"SAFE_ESTIMATE (or --safe-estimate)", `"vpa" is not one of request, learned`}},
		{name: "estimate percentile out of range", env: map[string]string{"SAFE_ESTIMATE_PERCENTILE": "0"}, errs: []string{"SAFE_ESTIMATE_PERCENTILE"}},
		{name: "bad estimate namespace", env: map[string]string{"SAFE_ESTIMATE_NAMESPACE": "Kube_System"}, errs: []string{"SAFE_ESTIMATE_NAMESPACE", "not a namespace name"}},
		{name: "bad estimate object", env: map[string]string{"SAFE_ESTIMATE_OBJECT": "a/b"}, errs: []string{"SAFE_ESTIMATE_OBJECT", "not an object name"}},
		{name: "bad balance scale", env: map[string]string{"SAFE_BALANCE_SCALE": "steep"}, errs: []string{"SAFE_BALANCE_SCALE (or --safe-balance-scale)", `"steep" is not one of absolute, relative`}},
		{name: "bad placed", env: map[string]string{"SAFE_PLACED": "all"}, errs: []string{"SAFE_PLACED (or --safe-placed)", `"all" is not one of growth, arrivals`}},
		{name: "bad filter", env: map[string]string{"SAFE_FILTER": "both"}, errs: []string{"SAFE_FILTER (or --safe-filter)", `"both" is not one of node, pod, adaptive, off`}},
		{name: "placed share out of range", args: []string{"--safe-placed-share=1001"}, errs: []string{"--safe-placed-share", "1001"}},
		{name: "bad duration", env: map[string]string{"SAFE_MAX_STATS_AGE": "30"}, errs: []string{"SAFE_MAX_STATS_AGE", `"30" is not a duration`}},
		{name: "negative age", env: map[string]string{"SAFE_MAX_STATS_AGE": "-5m"},
			errs: []string{"SAFE_MAX_STATS_AGE (or --safe-max-stats-age): -5m is out of range [0s, 720h]"}},
		{name: "bad policy", args: []string{"--safe-stale=drop"}, errs: []string{"SAFE_STALE (or --safe-stale)", `"drop" is not one of ignore, reject`}},
		{name: "out of range", env: map[string]string{"SAFEUTILIZATION": "150"}, errs: []string{"SAFEUTILIZATION", "150"}},
		{name: "not an integer", env: map[string]string{"SAFEUTILIZATION": "abc"}, errs: []string{"SAFEUTILIZATION", `"abc"`}},
		{name: "fraction", env: map[string]string{"SAFEPERCENTILE": "30.5"}, errs: []string{"SAFEPERCENTILE"}},
		{name: "negative", env: map[string]string{"SAFEFORECASTWEIGHT": "-1"}, errs: []string{"SAFEFORECASTWEIGHT"}},
		{name: "bad bool", env: map[string]string{"SAFEPRINTTABLE": "maybe"}, errs: []string{"SAFEPRINTTABLE"}},
		{name: "bad flag", args: []string{"--safe-percentile=101"}, errs: []string{"--safe-percentile"}},
		{name: "every bad one reported", env: map[string]string{"SAFEUTILIZATION": "-1", "SAFEPERCENTILE": "x", "SAFEFORECASTWEIGHT": "200"},
			errs: []string{"SAFEUTILIZATION", "SAFEPERCENTILE", "SAFEFORECASTWEIGHT"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := settingstest.Bind(DefaultConfig(), tc.env, tc.args...)
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("config (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, config %+v", got)
			}
			for _, s := range tc.errs {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{Utilization: 101, Percentile: -1, ForecastWeight: 20}, framework.NewHandle(nil))
	if err == nil || !strings.Contains(err.Error(), "utilization: 101 is out of range") || !strings.Contains(err.Error(), "percentile: -1") {
		t.Errorf("New with bad config: err = %v, want both fields named", err)
	}
}

func TestPrintTable(t *testing.T) {
	nodes := []*corev1.Node{
		fixtureNode("quiet-node").Annotations(ann{nodestats.MeanFreeCPU: "3000", nodestats.StdFreeCPU: "200"}).Obj(),
		fixtureNode("zero-node").Allocatable(fixtures.Res{corev1.ResourceCPU: "0"}).
			Annotations(ann{nodestats.MeanFreeCPU: "3000"}).Obj(),
	}
	run := func(printTable bool, level logrus.Level) string {
		var buf bytes.Buffer
		log := logrus.New()
		log.SetOutput(&buf)
		log.SetLevel(level)
		a := newAgent(t, config(func(c *Config) { c.PrintTable = printTable }), logrus.NewEntry(log))
		pod := makePod("400m", "800")
		extendertest.Must(a.filterOverload(context.Background(), pod, nodes))
		extendertest.Must(a.scoreOverload(context.Background(), pod, nodes))
		extendertest.Must(a.scoreBalance(context.Background(), pod, nodes))
		return buf.String()
	}
	out := run(true, logrus.DebugLevel)
	if n := strings.Count(out, "safe agent per-node computation"); n != 3 {
		t.Errorf("%d tables logged for 3 calls, want 3:\n%s", n, out)
	}
	for _, s := range []string{"quiet-node", "zero-node", "function=safe-balance", "0.3500"} {
		if !strings.Contains(out, s) {
			t.Errorf("table does not show %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "NaN") {
		t.Errorf("table shows NaN:\n%s", out)
	}
	if out := run(true, logrus.InfoLevel); out != "" {
		t.Errorf("at info level, logged:\n%s", out)
	}
	if out := run(false, logrus.DebugLevel); out != "" {
		t.Errorf("without SAFEPRINTTABLE, logged:\n%s", out)
	}
}

// TestConcurrentCalls runs every function from several goroutines on shared nodes (go test
// -race checks the agent keeps no shared mutable state) and checks each answer matches the
// sequential one.
func TestConcurrentCalls(t *testing.T) {
	a := newAgent(t, DefaultConfig(), nil)
	nodes := benchNodes(200)
	pod := makePod("500m", "1Gi")
	ctx := context.Background()
	wantF, wantO, wantB := extendertest.Must(a.filterOverload(ctx, pod, nodes)), extendertest.Must(a.scoreOverload(ctx, pod, nodes)), extendertest.Must(a.scoreBalance(ctx, pod, nodes))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if !cmp.Equal(extendertest.Must(a.filterOverload(ctx, pod, nodes)), wantF) ||
					!cmp.Equal(extendertest.Must(a.scoreOverload(ctx, pod, nodes)), wantO) ||
					!cmp.Equal(extendertest.Must(a.scoreBalance(ctx, pod, nodes)), wantB) {
					t.Error("a concurrent call answered differently")
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestRealisticNodesNeverNaN runs the benchmark population, and the same with every number
// annotation replaced by odd strings, through every function: scores stay in [0, 10] and no
// reason shows NaN or Inf.
func TestRealisticNodesNeverNaN(t *testing.T) {
	a := newAgent(t, DefaultConfig(), nil)
	nodes := benchNodes(2000)
	odd := []string{"NaN", "+Inf", "-Inf", "-5", "0", "1e308", "-1e308", "abc", ""}
	for i, n := range nodes[:len(odd)*6] {
		m := ann{}
		for k, v := range n.Annotations {
			m[k] = v
		}
		key := []string{nodestats.MeanFreeCPU, nodestats.StdFreeCPU, nodestats.ForcastedFreeCPU,
			nodestats.MeanFreeMemory, nodestats.StdFreeMemory, nodestats.ForecastedFreeMemory}[i%6]
		m[key] = odd[i/6]
		n.Annotations = m
	}
	pod := makePod("500m", "1Gi")
	ctx := context.Background()
	for _, v := range extendertest.Must(a.filterOverload(ctx, pod, nodes)) {
		if strings.Contains(v.Reason, "NaN") || strings.Contains(v.Reason, "Inf") {
			t.Errorf("reason %q", v.Reason)
		}
	}
	for _, fn := range []framework.PrioritizeFunc{a.scoreOverload, a.scoreBalance} {
		for i, s := range extendertest.Must(fn(ctx, pod, nodes)) {
			if s < 0 || s > framework.MaxScore {
				t.Errorf("node %s scores %d", nodes[i].Name, s)
			}
		}
	}
}

// TestChunksMatchSingleNodeCalls: a large call, split across goroutines, answers for every node
// what a call with that node alone answers. (Not with SAFE_FILTER=adaptive, whose verdicts depend
// on whether any node of the call takes the pod: TestAdaptiveFilter.)
func TestChunksMatchSingleNodeCalls(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	a := newAgent(t, config(func(c *Config) { c.Filter = FilterPod }), nil)
	nodes := benchNodes(3000)
	pod := makePod("500m", "1Gi")
	ctx := context.Background()
	verdicts, overload, balance := extendertest.Must(a.filterOverload(ctx, pod, nodes)), extendertest.Must(a.scoreOverload(ctx, pod, nodes)), extendertest.Must(a.scoreBalance(ctx, pod, nodes))
	rejected := 0
	for i, n := range nodes {
		one := []*corev1.Node{n}
		if v := extendertest.Must(a.filterOverload(ctx, pod, one))[0]; v != verdicts[i] {
			t.Fatalf("node %d: verdict %+v alone, %+v in the large call", i, v, verdicts[i])
		}
		if s := extendertest.Must(a.scoreOverload(ctx, pod, one))[0]; s != overload[i] {
			t.Fatalf("node %d: safe-overload %d alone, %d in the large call", i, s, overload[i])
		}
		if s := extendertest.Must(a.scoreBalance(ctx, pod, one))[0]; s != balance[i] {
			t.Fatalf("node %d: safe-balance %d alone, %d in the large call", i, s, balance[i])
		}
		if !verdicts[i].Passes() {
			rejected++
		}
	}
	// The population has nodes on both sides of the threshold.
	if rejected == 0 || rejected == len(nodes) {
		t.Errorf("%d of %d nodes rejected", rejected, len(nodes))
	}
}

func TestForChunks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, minChunk - 1, minChunk, 2*minChunk - 1, 2 * minChunk, 1000, 5000, 5001} {
			seen := make([]int32, n)
			forChunks(n, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					seen[i]++ // ranges are disjoint: no race
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("GOMAXPROCS %d, n %d: index %d visited %d times", procs, n, i, c)
				}
			}
		}
	}
}

func TestForChunksRaisesPanicOnCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want boom", p)
		}
	}()
	forChunks(4*minChunk, func(lo, _ int) {
		if lo > 0 {
			panic("boom")
		}
	})
	t.Error("forChunks returned")
}

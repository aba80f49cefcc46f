package telemetry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/settings"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

func policyObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// demoPolicy is TAS's own demo policy shape: dontschedule, scheduleonmetric and deschedule.
const demoPolicy = `
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata: {name: demo-policy, namespace: default}
spec:
  strategies:
    deschedule:
      rules:
      - {metricname: node_cpu, operator: GreaterThan, target: 95}
    dontschedule:
      rules:
      - {metricname: node_cpu, operator: GreaterThan, target: 90}
    scheduleonmetric:
      rules:
      - {metricname: node_cpu, operator: LessThan}
`

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy(policyObject(t, demoPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if p.Key() != "default/demo-policy" || len(p.Strategies) != 3 || p.Strategies[DontSchedule].Rules[0].Target != 90 ||
		p.Strategies[DontSchedule].AllOf() {
		t.Errorf("parsed %+v", p)
	}
	if diff := cmp.Diff([]string{"node_cpu"}, p.Metrics()); diff != "" {
		t.Error(diff)
	}
	// Policies the CRD accepts but TAS cannot fully use: TAS uses the rest, and so does this
	// agent. Each case: the problem reported, and the strategies left (rules per strategy);
	// none left: the policy is unusable, ParsePolicy fails, unless no strategy has a rule
	// (empty: TAS acts on nothing and its pods pass, so the policy is used, empty).
	for _, c := range []struct {
		name, spec, want string
		left             map[string]int // {}: the policy is empty
	}{
		{"unknown strategy", `{strategies: {sometimesschedule: {rules: [{metricname: m, operator: Equals}]}, dontschedule: {rules: [{metricname: m, operator: Equals}]}}}`,
			`unknown strategy "sometimesschedule"`, map[string]int{DontSchedule: 1}},
		{"unknown strategy alone", `{strategies: {sometimesschedule: {rules: [{metricname: m, operator: Equals}]}}}`,
			`unknown strategy "sometimesschedule"`, nil},
		{"no rules", `{strategies: {dontschedule: {rules: []}, scheduleonmetric: {rules: [{metricname: m, operator: LessThan}]}}}`,
			"spec.strategies.dontschedule: no rules", map[string]int{ScheduleOnMetric: 1}},
		{"no rules alone", `{strategies: {dontschedule: {rules: []}}}`, "spec.strategies.dontschedule: no rules", map[string]int{}},
		{"no rules anywhere", `{strategies: {dontschedule: {rules: []}, scheduleonmetric: {rules: []}, sometimesschedule: {rules: []}}}`,
			"spec.strategies.scheduleonmetric: no rules", map[string]int{}},
		{"no rules but unusable ones", `{strategies: {dontschedule: {rules: []}, sometimesschedule: {rules: [{metricname: m, operator: Equals}]}}}`,
			`unknown strategy "sometimesschedule"`, nil},
		{"labels outside labeling", `{strategies: {dontschedule: {rules: [{metricname: m, operator: Equals, labels: ["a=b"]}]}}}`,
			"only the labeling strategy", map[string]int{DontSchedule: 1}},
		{"deschedule name too long", `{strategies: {deschedule: {rules: [{metricname: m, operator: Equals}]}, dontschedule: {rules: [{metricname: m, operator: Equals}]}}}`,
			"is not a valid node label key", map[string]int{DontSchedule: 1}},
		{"bad label", `{strategies: {labeling: {rules: [{metricname: m, operator: Equals, labels: ["no-equals", "ok=yes"]}]}}}`,
			`"no-equals" is not key=value`, map[string]int{Labeling: 1}},
		// Not accepted by TAS's CRD, but possible without its schema: read as TAS reads them.
		{"unknown operator, anyOf", `{strategies: {dontschedule: {rules: [{metricname: m, operator: Above}, {metricname: m, operator: Equals}]}}}`,
			`rules[0]: unknown operator "Above"`, map[string]int{DontSchedule: 1}},
		{"unknown operator, allOf", `{strategies: {dontschedule: {logicalOperator: allOf, rules: [{metricname: m, operator: Above}, {metricname: m, operator: Equals}]},
			labeling: {rules: [{metricname: m, operator: Equals, labels: [a=b]}]}}}`,
			"the rule never holds, so the strategy is ignored", map[string]int{Labeling: 1}},
		{"unknown logical operator", `{strategies: {dontschedule: {logicalOperator: oneOf, rules: [{metricname: m, operator: Equals}]}}}`,
			`logicalOperator: unknown "oneOf" (allOf or anyOf): read as anyOf`, map[string]int{DontSchedule: 1}},
		{"no metric", `{strategies: {dontschedule: {rules: [{operator: Equals}]}}}`, "no metricname", nil},
		{"no strategies", `{strategies: {}}`, "no strategy", map[string]int{}},
		{"target not a number", `{strategies: {dontschedule: {rules: [{metricname: m, operator: Equals, target: high}]}}}`, "spec:", nil},
		{"unknown field", `{strategies: {dontschedule: {rules: [{metricname: m, operator: Equals, tagret: 3}]}}}`, "tagret", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "p"
			if c.name == "deschedule name too long" {
				name = strings.Repeat("p", 64)
			}
			doc := "apiVersion: telemetry.intel.com/v1alpha1\nkind: TASPolicy\nmetadata: {name: " + name + ", namespace: ns}\nspec: " + c.spec
			p, err := ParsePolicy(policyObject(t, doc))
			problems := ""
			if err != nil {
				problems = err.Error()
			}
			if p != nil {
				if empty := c.left != nil && len(c.left) == 0; p.Empty != empty {
					t.Errorf("Empty %v, want %v", p.Empty, empty)
				}
				problems = strings.Join(p.Problems, "; ")
				left := map[string]int{}
				for n, s := range p.Strategies {
					left[n] = len(s.Rules)
				}
				if diff := cmp.Diff(c.left, left); diff != "" {
					t.Errorf("strategies left (-want +got):\n%s", diff)
				}
				for _, s := range p.Strategies {
					for _, r := range s.Rules {
						if len(r.Labels) > 0 && s != p.Strategies[Labeling] || slices.Contains(r.Labels, "no-equals") {
							t.Errorf("labels kept: %v", r.Labels)
						}
					}
				}
			} else if c.left != nil {
				t.Errorf("unusable (%v), want %v left", err, c.left)
			}
			if !strings.Contains(problems, c.want) {
				t.Errorf("problems %q, want one containing %q", problems, c.want)
			}
		})
	}
	// Every problem is reported, not only the first.
	_, err = ParsePolicy(policyObject(t, `{metadata: {name: p}, spec: {strategies: {a: {rules: [{metricname: m, operator: Equals}]}, dontschedule: {rules: [{metricname: m, operator: X}]}}}}`))
	if err == nil || !strings.Contains(err.Error(), `unknown strategy "a"`) || !strings.Contains(err.Error(), `unknown operator "X"`) ||
		!strings.Contains(err.Error(), "no usable strategy is left") {
		t.Errorf("error %v, want both problems", err)
	}
}

func TestConfig(t *testing.T) {
	cfg, err := settingstest.Bind(DefaultConfig(), map[string]string{"TELEMETRY_METRICS_SOURCE": "prometheus",
		"PROMETHEUS_URL": "http://127.0.0.1:9090", "TELEMETRY_STALE": "reject", "TELEMETRY_DESCHEDULE": "false"})
	if err != nil || cfg.MetricsSource != SourcePrometheus || cfg.Stale != StaleReject || cfg.Deschedule {
		t.Fatalf("%+v, %v", cfg, err)
	}
	cfg.PrometheusURL = ""
	err = cfg.Validate()
	var fe *settings.FieldError
	if !errors.As(err, &fe) || fe.Field != "prometheusURL" {
		t.Errorf("prometheus without a URL: %v", err)
	}
	bad := DefaultConfig()
	bad.Stale, bad.MaxAge = "maybe", bad.SyncPeriod
	err = bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "maxAge") {
		t.Errorf("bad stale and max age: %v", err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	// Without cluster access, New says so.
	if _, err := New(DefaultConfig(), framework.NewHandle(nil)); !errors.Is(err, framework.ErrNoCluster) || !strings.Contains(err.Error(), "CLUSTER_ACCESS") {
		t.Errorf("New without a cluster: %v", err)
	}
}

// fakeSource serves fixed samples.
type fakeSource struct {
	mu   sync.Mutex
	data map[string]map[string]Sample
	err  error
}

func (f *fakeSource) Name() string { return "fake" }
func (f *fakeSource) Read(_ context.Context, m string, _ time.Time) (map[string]Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.data[m], f.err
}

type recordedEvent struct{ name, typ, reason, message string }

type fakeEvents struct {
	mu  sync.Mutex
	got []recordedEvent
}

func (f *fakeEvents) Event(o runtime.Object, typ, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, recordedEvent{o.(*unstructured.Unstructured).GetName(), typ, reason, message})
}

func (f *fakeEvents) all() []recordedEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedEvent(nil), f.got...)
}

// testAgent runs the agent's policy informer over a fake dynamic client holding objs.
func testAgent(t *testing.T, cfg Config, src Source, objs ...runtime.Object) (*Agent, *fakeEvents) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{PolicyResource: "TASPolicyList"}, objs...)
	ev := &fakeEvents{}
	h := framework.NewHandle(nil)
	h.Events = ev
	h.Dynamic = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	a, err := newAgent(cfg, h, dyn, src)
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return t0 }
	// The program starts the informers the agent asked for.
	ctx, stop := context.WithCancel(t.Context())
	t.Cleanup(func() { stop(); h.Dynamic.Shutdown() })
	h.Dynamic.Start(ctx.Done())
	wait, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if !a.policiesSynced(wait) {
		t.Fatal("the policy informer did not sync")
	}
	return a, ev
}

func TestFilterAndScore(t *testing.T) {
	src := &fakeSource{data: map[string]map[string]Sample{"node_cpu": {
		"hot":   {Value: 93, Time: t0.Add(-12 * time.Second)},
		"warm":  {Value: 60, Time: t0},
		"cool":  {Value: 20, Time: t0},
		"stale": {Value: 10, Time: t0.Add(-5 * time.Minute)},
		// "none" has no value
	}}}
	bad := policyObject(t, `{apiVersion: telemetry.intel.com/v1alpha1, kind: TASPolicy, metadata: {name: broken, namespace: default},
spec: {strategies: {dontschedule: {rules: [{metricname: node_cpu, operator: Above, target: 1}]}}}}`)
	// partial is usable without its unknown strategy and the labels of its dontschedule rule.
	partial := policyObject(t, `{apiVersion: telemetry.intel.com/v1alpha1, kind: TASPolicy, metadata: {name: partial, namespace: default},
spec: {strategies: {sometimesschedule: {rules: [{metricname: node_cpu, operator: LessThan, target: 1}]},
  dontschedule: {rules: [{metricname: node_cpu, operator: LessThan, target: 50, labels: ["a=b"]}]}}}}`)
	// empty states no rule (the CRD allows rules: []): TAS acts on none of it and lets its pods
	// through; so does the agent, with a Warning EmptyPolicy event.
	empty := policyObject(t, `{apiVersion: telemetry.intel.com/v1alpha1, kind: TASPolicy, metadata: {name: empty, namespace: default},
spec: {strategies: {dontschedule: {rules: []}, scheduleonmetric: {rules: []}}}}`)
	nodes := []*corev1.Node{}
	for _, n := range []string{"hot", "warm", "cool", "stale", "none"} {
		nodes = append(nodes, fixtures.MakeNode().Name(n).Obj())
	}
	labelled := func(policy string) *corev1.Pod {
		return fixtures.MakePod().Name("p").Namespace("default").Label(PodLabel, policy).Obj()
	}
	for _, mode := range []StalePolicy{StaleIgnore, StaleReject} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Stale = mode
			a, ev := testAgent(t, cfg, src, policyObject(t, demoPolicy), bad, partial, empty)
			a.refresh(t.Context())

			// The broken policy is reported by an event and not used; the partial one is
			// reported and used; the empty one is reported and lets its pods through.
			got := ev.all()
			slices.SortFunc(got, func(a, b recordedEvent) int { return strings.Compare(a.name, b.name) })
			if len(got) != 3 || got[0].name != "broken" || got[0].typ != corev1.EventTypeWarning || got[0].reason != "InvalidPolicy" ||
				!strings.Contains(got[0].message, `not used by the telemetry scheduler extender: spec.strategies.dontschedule.rules[0]: unknown operator "Above"`) ||
				got[1].name != "empty" || got[1].typ != corev1.EventTypeWarning || got[1].reason != "EmptyPolicy" ||
				!strings.Contains(got[1].message, "no strategy has a rule (spec.strategies.dontschedule: no rules: ignored; spec.strategies.scheduleonmetric: no rules: ignored)") ||
				!strings.Contains(got[1].message, "pass every node, unscored, as TAS does") ||
				got[2].name != "partial" || got[2].typ != corev1.EventTypeWarning || got[2].reason != "InvalidPolicy" ||
				!strings.Contains(got[2].message, `used by the telemetry scheduler extender without what is invalid: `) ||
				!strings.Contains(got[2].message, `unknown strategy "sometimesschedule"`) || !strings.Contains(got[2].message, "only the labeling strategy") {
				t.Errorf("events %+v, want one warning on broken, empty and partial each", got)
			}
			v, err := a.filter(t.Context(), labelled("empty"), nodes)
			if diff := cmp.Diff(make([]framework.Verdict, 5), v); err != nil || diff != "" {
				t.Errorf("empty policy verdicts (%v): %s", err, diff)
			}
			s, err := a.score(t.Context(), labelled("empty"), nodes)
			if diff := cmp.Diff(make([]int64, 5), s); err != nil || diff != "" {
				t.Errorf("empty policy scores (%v): %s", err, diff)
			}
			// partial's dontschedule (node_cpu < 50) rejects cool alone; no value, no rejection
			// (but for TELEMETRY_STALE=reject).
			v, err = a.filter(t.Context(), labelled("partial"), nodes[:3])
			if err != nil || v[0].Reason != "" || v[1].Reason != "" || !strings.Contains(v[2].Reason, "telemetry policy default/partial: node_cpu 20 < 50") {
				t.Errorf("partial policy verdicts %+v, %v", v, err)
			}

			v, err = a.filter(t.Context(), labelled("demo-policy"), nodes)
			if err != nil {
				t.Fatal(err)
			}
			want := []framework.Verdict{
				framework.RejectUnresolvable("telemetry policy default/demo-policy: node_cpu 93 > 90 (12s old)"), {}, {}, {}, {},
			}
			if mode == StaleReject {
				want[3] = framework.RejectUnresolvable("telemetry policy default/demo-policy: node_cpu 10 stale (5m0s old, max 1m0s) (TELEMETRY_STALE=reject)")
				want[4] = framework.RejectUnresolvable("telemetry policy default/demo-policy: node_cpu missing (TELEMETRY_STALE=reject)")
			}
			if diff := cmp.Diff(want, v); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			// LessThan: lower is better over the fresh values 93, 60, 20: 1+(93-v)/73*9:
			// hot 1, warm 5.07 -> 5, cool 10; stale and none 0.
			s, err = a.score(t.Context(), labelled("demo-policy"), nodes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{1, 5, 10, 0, 0}, s); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}

			// No label: every node passes and scores 0.
			v, _ = a.filter(t.Context(), fixtures.MakePod().Name("q").Namespace("default").Obj(), nodes)
			s, _ = a.score(t.Context(), fixtures.MakePod().Name("q").Namespace("default").Obj(), nodes)
			if diff := cmp.Diff(make([]framework.Verdict, 5), v); diff != "" {
				t.Errorf("unlabelled pod verdicts: %s", diff)
			}
			if diff := cmp.Diff(make([]int64, 5), s); diff != "" {
				t.Errorf("unlabelled pod scores: %s", diff)
			}
			// A missing or broken policy rejects with the reason.
			v, _ = a.filter(t.Context(), labelled("nope"), nodes[:1])
			if !strings.Contains(v[0].Reason, "default/nope (pod label telemetry-policy) does not exist") {
				t.Errorf("missing policy: %+v", v)
			}
			v, _ = a.filter(t.Context(), labelled("broken"), nodes[:1])
			if !strings.Contains(v[0].Reason, "default/broken is invalid") {
				t.Errorf("broken policy: %+v", v)
			}
		})
	}
}

// A failing read keeps the previous samples, which age into staleness.
func TestRefreshKeepsSamplesOnError(t *testing.T) {
	src := &fakeSource{data: map[string]map[string]Sample{"node_cpu": {"hot": {Value: 93, Time: t0}}}}
	a, _ := testAgent(t, DefaultConfig(), src, policyObject(t, demoPolicy))
	a.refresh(t.Context())
	src.mu.Lock()
	src.data, src.err = nil, errors.New("down")
	src.mu.Unlock()
	a.now = func() time.Time { return t0.Add(2 * time.Minute) }
	a.refresh(t.Context())
	s, found, fresh := a.values.Load().Lookup("node_cpu", "hot", a.now(), a.cfg.MaxAge.D())
	if !found || fresh || s.Value != 93 {
		t.Errorf("after a failed read: %+v found %v fresh %v, want the old value, stale", s, found, fresh)
	}
}

// TAS's scheduler configuration calls /scheduler/filter and /scheduler/prioritize: they answer
// what the agent's own routes answer, through the real HTTP handler.
func TestTASVerbs(t *testing.T) {
	src := &fakeSource{data: map[string]map[string]Sample{"node_cpu": {"hot": {Value: 93, Time: t0}, "cool": {Value: 20, Time: t0}}}}
	a, _ := testAgent(t, DefaultConfig(), src, policyObject(t, demoPolicy))
	a.refresh(t.Context())
	nodes := []*corev1.Node{fixtures.MakeNode().Name("hot").Obj(), fixtures.MakeNode().Name("cool").Obj()}
	h := extendertest.NewHandler(t, extendertest.LookupOf(nodes), a)
	pod := fixtures.MakePod().Name("p").Namespace("default").Label(PodLabel, "demo-policy").Obj()
	for _, names := range []bool{false, true} {
		body := extendertest.Body(t, extendertest.Args(pod, nodes, names))
		own := extendertest.Post(t, h, "/scheduler/predicates/"+FilterPolicy, body)
		tas := extendertest.Post(t, h, "/scheduler/"+TASFilterVerb, body)
		if string(own) != string(tas) || !strings.Contains(string(tas), "node_cpu 93 > 90") {
			t.Errorf("filter: /scheduler/filter answers %s, the agent's route %s", tas, own)
		}
		own = extendertest.Post(t, h, "/scheduler/priorities/"+PriorityPolicy, body)
		tas = extendertest.Post(t, h, "/scheduler/"+TASPrioritizeVerb, body)
		if string(own) != string(tas) || !strings.Contains(string(tas), `"Score":10`) {
			t.Errorf("prioritize: /scheduler/prioritize answers %s, the agent's route %s", tas, own)
		}
	}
}

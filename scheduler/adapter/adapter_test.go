package adapter_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
)

func TestMain(m *testing.M) {
	metrics.Register() // the framework records plugin metrics
	os.Exit(m.Run())
}

// profileYAML is a KubeSchedulerConfiguration with one profile whose plugins and pluginConfig are
// the given YAML (indented under the profile).
func profileYAML(plugins, pluginConfig string) string {
	cfg := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: test\n" +
		"  plugins:\n" + indent(plugins, "    ")
	if pluginConfig != "" {
		cfg += "  pluginConfig:\n" + indent(pluginConfig, "  ")
	}
	return cfg
}

func indent(s, by string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(by + l + "\n")
	}
	return b.String()
}

// allPlugins enables the test agent's plugins under multiPoint, each with weight 1.
const allPlugins = "multiPoint:\n  enabled:\n  - name: test-fit\n  - name: test-rank\n"

// newFramework decodes a KubeSchedulerConfiguration as kube-scheduler does (so that pluginConfig
// args reach the plugins as they do in the scheduler) and builds its first profile's framework
// with the adapter's plugins, over a snapshot of nodes and pods. The default in-tree plugins the
// decoding adds are dropped, except the queue sort and the binder every profile needs.
func newFramework(t testing.TB, a *adapter.Adapter, cfgYAML string, nodes []*corev1.Node, pods []*corev1.Pod, opts ...frameworkruntime.Option) (schedframework.Framework, *cache.Snapshot, error) {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode([]byte(cfgYAML), nil, nil)
	if err != nil {
		t.Fatalf("decoding the configuration: %v\n%s", err, cfgYAML)
	}
	cfg := obj.(*config.KubeSchedulerConfiguration)
	prof := cfg.Profiles[0]
	ours := func(set config.PluginSet) config.PluginSet {
		var out config.PluginSet
		for _, p := range set.Enabled {
			if slices.Contains(a.Names(), p.Name) || p.Name == adapter.CombinedName || testRegistry[p.Name] != nil {
				out.Enabled = append(out.Enabled, p)
			}
		}
		return out
	}
	prof.Plugins = &config.Plugins{
		QueueSort:  config.PluginSet{Enabled: []config.Plugin{{Name: "PrioritySort"}}},
		Bind:       config.PluginSet{Enabled: []config.Plugin{{Name: "DefaultBinder"}}},
		MultiPoint: ours(prof.Plugins.MultiPoint),
		Filter:     ours(prof.Plugins.Filter),
		PreScore:   ours(prof.Plugins.PreScore),
		Score:      ours(prof.Plugins.Score),
	}
	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(a.Registry()); err != nil {
		t.Fatal(err)
	}
	if err := registry.Merge(testRegistry); err != nil {
		t.Fatal(err)
	}
	snap := cache.NewSnapshot(pods, nodes)
	fw, err := frameworkruntime.NewFramework(t.Context(), registry, &prof, append([]frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(snap), frameworkruntime.WithClientSet(fake.NewClientset())}, opts...)...)
	return fw, snap, err
}

func mustFramework(t *testing.T, a *adapter.Adapter, cfgYAML string, nodes []*corev1.Node, pods []*corev1.Pod) (schedframework.Framework, *cache.Snapshot) {
	t.Helper()
	fw, snap, err := newFramework(t, a, cfgYAML, nodes, pods)
	if err != nil {
		t.Fatal(err)
	}
	return fw, snap
}

func newAdapter(t testing.TB, regs ...framework.Registration) *adapter.Adapter {
	t.Helper()
	a, err := adapter.New(regs)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testNode is a node whose label test/value is value ("" for no label).
func testNode(name, value string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Labels: map[string]string{}}}
	if value != "" {
		n.Labels["test/value"] = value
	}
	return n
}

func testPod(name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + "name", Annotations: annotations}}
}

// filterAll runs the framework's prefilters, then its filters on every node, and returns the statuses of the rejected
// nodes and the names of the feasible ones.
func filterAll(t *testing.T, fw schedframework.Framework, snap *cache.Snapshot, state fwk.CycleState, pod *corev1.Pod) (map[string]*fwk.Status, []fwk.NodeInfo) {
	t.Helper()
	infos, err := snap.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	if _, s, _ := fw.RunPreFilterPlugins(t.Context(), state, pod); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	rejected := map[string]*fwk.Status{}
	var feasible []fwk.NodeInfo
	for _, ni := range infos {
		if s := fw.RunFilterPlugins(t.Context(), state, pod, ni); !s.IsSuccess() {
			rejected[ni.Node().Name] = s
		} else {
			feasible = append(feasible, ni)
		}
	}
	return rejected, feasible
}

// scoreAll runs PreScore and Score on nodes and returns each node's score by plugin.
func scoreAll(t *testing.T, fw schedframework.Framework, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) map[string]map[string]int64 {
	t.Helper()
	if s := fw.RunPreScorePlugins(t.Context(), state, pod, nodes); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	list, s := fw.RunScorePlugins(t.Context(), state, pod, nodes)
	if !s.IsSuccess() {
		t.Fatalf("Score: %v", s)
	}
	out := map[string]map[string]int64{}
	for _, n := range list {
		for _, ps := range n.Scores {
			if out[ps.Name] == nil {
				out[ps.Name] = map[string]int64{}
			}
			out[ps.Name][n.Name] = ps.Score
		}
	}
	return out
}

func infoNames(infos []fwk.NodeInfo) []string {
	var out []string
	for _, ni := range infos {
		out = append(out, ni.Node().Name)
	}
	slices.Sort(out)
	return out
}

// TestPluginsAnswerAsTheExtender: for the same pod and nodes, the plugins reject the nodes the
// extender handler rejects, with the same reasons (Unresolvable ones as
// UnschedulableAndUnresolvable), and score the feasible nodes 10 times what it answers, for the
// per-node prioritizer and for the whole-cluster one.
func TestPluginsAnswerAsTheExtender(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("n0", "0"), testNode("n1", "2"), testNode("n2", "3"), testNode("n3", "5"),
		testNode("n4", "9"), testNode("n5", ""), testNode("n6", "12"),
	}
	for _, tc := range []struct {
		name      string
		plugins   string // the profile's plugins, YAML
		args      string // pluginConfig, YAML
		threshold int
	}{
		{name: "defaults", plugins: allPlugins, threshold: 3},
		{name: "args", plugins: allPlugins, args: "- name: test-fit\n  args:\n    threshold: 5\n", threshold: 5},
		// Without preFilter, Filter calls the filter function node by node.
		{name: "filter without preFilter", plugins: "filter:\n  enabled:\n  - name: test-fit\npreScore:\n  enabled:\n  - name: test-fit\n  - name: test-rank\n" +
			"score:\n  enabled:\n  - name: test-fit\n  - name: test-rank\n", threshold: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdapter(t, testRegistration)
			fw, snap := mustFramework(t, a, profileYAML(tc.plugins, tc.args), nodes, nil)
			if got := len(fw.ListPlugins().PreFilter.Enabled); got != strings.Count(tc.plugins, "multiPoint") {
				t.Fatalf("%d preFilter plugins: the case does not test what it says", got)
			}
			pod := testPod("p", nil)
			state := schedframework.NewCycleState()

			cfg := defaultTestConfig()
			cfg.Threshold = tc.threshold
			agent, err := newTestAgent(cfg, framework.NewHandle(nil))
			if err != nil {
				t.Fatal(err)
			}
			h := extendertest.NewHandler(t, extendertest.LookupOf(nodes), agent)

			rejected, feasible := filterAll(t, fw, snap, state, pod)
			ext := extendertest.Filter(t, h, testFit, extendertest.Args(pod, nodes, true))
			if ext.Error != "" {
				t.Fatalf("extender filter error %q", ext.Error)
			}
			type verdict struct {
				Code   string
				Reason string
			}
			got, want := map[string]verdict{}, map[string]verdict{}
			for n, s := range rejected {
				got[n] = verdict{s.Code().String(), strings.Join(s.Reasons(), "; ")}
				if s.Plugin() != testFit {
					t.Errorf("node %s rejected by plugin %q, want %s", n, s.Plugin(), testFit)
				}
			}
			for n, r := range ext.FailedNodes {
				want[n] = verdict{"Unschedulable", r}
			}
			for n, r := range ext.FailedAndUnresolvableNodes {
				want[n] = verdict{"UnschedulableAndUnresolvable", r}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("rejections (-extender +plugins):\n%s", diff)
			}
			if len(want) < 2 || len(feasible) < 2 {
				t.Fatalf("the case must reject some nodes and keep several: rejected %v, feasible %v", want, infoNames(feasible))
			}
			if !slices.Equal(infoNames(feasible), slices.Sorted(slices.Values(*ext.NodeNames))) {
				t.Fatalf("feasible %v, extender passes %v", infoNames(feasible), *ext.NodeNames)
			}

			scores := scoreAll(t, fw, state, pod, feasible)
			var feasibleNodes []*corev1.Node
			for _, ni := range feasible {
				feasibleNodes = append(feasibleNodes, ni.Node())
			}
			for _, prio := range []string{testFit, testRank} {
				want := map[string]int64{}
				for _, hp := range extendertest.Prioritize(t, h, prio, extendertest.Args(pod, feasibleNodes, true)) {
					want[hp.Host] = hp.Score * 10
				}
				if diff := cmp.Diff(want, scores[prio]); diff != "" {
					t.Errorf("%s scores (-10*extender +plugin):\n%s", prio, diff)
				}
			}
			// test-fit scores n6 12, clamped to 10 (x10 = 100) as the extender clamps it.
			if scores[testFit]["n6"] != 100 {
				t.Errorf("test-fit scores n6 %d, want 100 (12 clamped to 10, times 10)", scores[testFit]["n6"])
			}
		})
	}
}

// TestFilterErrorFailsTheCycle: a filter function's error is an Error status (the pod's cycle
// fails, as with a failing extender filter), not a rejection; a prioritizer's error skips the
// plugin's score for the pod (as kube-scheduler ignores a failing extender prioritizer).
func TestFilterErrorFailsTheCycle(t *testing.T) {
	nodes := []*corev1.Node{testNode("n0", "5"), testNode("n1", "7")}
	a := newAdapter(t, testRegistration)
	fw, snap := mustFramework(t, a, profileYAML(allPlugins, ""), nodes, nil)
	pod := testPod("p", map[string]string{failAnno: ""})
	// PreFilter judges no node: the nodes are judged, and the error met, when Filter asks.
	cycle := schedframework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(t.Context(), cycle, pod); !s.IsSuccess() {
		t.Fatalf("preFilter status %v, want success", s)
	}
	n1, _ := snap.NodeInfos().Get("n1")
	if s := fw.RunFilterPlugins(t.Context(), cycle, pod, n1); s.Code() != fwk.Error ||
		!strings.Contains(s.Message(), "filter failed: the test source is down") {
		t.Fatalf("filter status after preFilter %v, want Error with the agent's error", s)
	}
	// Enabled at filter alone, the plugin calls the function from Filter.
	filterOnly, snap := mustFramework(t, a, profileYAML("filter:\n  enabled:\n  - name: test-fit\n", ""), nodes, nil)
	ni, _ := snap.NodeInfos().Get("n0")
	s := filterOnly.RunFilterPlugins(t.Context(), schedframework.NewCycleState(), pod, ni)
	if s.Code() != fwk.Error || !strings.Contains(s.Message(), "filter failed: the test source is down") {
		t.Fatalf("filter status %v, want Error with the agent's error", s)
	}

	infos, _ := snap.NodeInfos().List()
	state := schedframework.NewCycleState()
	if s := fw.RunPreScorePlugins(t.Context(), state, pod, infos); !s.IsSuccess() {
		t.Fatalf("PreScore: %v, want success (the failing prioritizers skipped)", s)
	}
	// test-rank scores in PreScore (WholeList) and is skipped there; test-fit scores as Score
	// asks, and scores 0 where it fails.
	if skipped := state.GetSkipScorePlugins(); skipped.Has(testFit) || !skipped.Has(testRank) {
		t.Fatalf("score plugins skipped %v, want test-rank alone", skipped.UnsortedList())
	}
	list, s := fw.RunScorePlugins(t.Context(), state, pod, infos)
	if !s.IsSuccess() {
		t.Fatalf("Score: %v", s)
	}
	for _, n := range list {
		if n.TotalScore != 0 {
			t.Errorf("node %s scored %d by the skipped plugins", n.Name, n.TotalScore)
		}
	}
}

// TestExtensionPoints: a function name that is a filter and a prioritizer is one plugin with
// both extension points; a prioritizer alone is no filter.
func TestExtensionPoints(t *testing.T) {
	a := newAdapter(t, testRegistration)
	if got, want := a.Names(), []string{testFit, testRank}; !slices.Equal(got, want) {
		t.Fatalf("plugins %v, want %v", got, want)
	}
	fw, _ := mustFramework(t, a, profileYAML(allPlugins, ""), []*corev1.Node{testNode("n", "1")}, nil)
	points := map[string][]string{}
	for point, list := range map[string][]config.Plugin{
		"preFilter": fw.ListPlugins().PreFilter.Enabled, "filter": fw.ListPlugins().Filter.Enabled,
		"preScore": fw.ListPlugins().PreScore.Enabled, "score": fw.ListPlugins().Score.Enabled,
	} {
		for _, p := range list {
			points[p.Name] = append(points[p.Name], point)
		}
	}
	for _, l := range points {
		slices.Sort(l)
	}
	want := map[string][]string{testFit: {"filter", "preFilter", "preScore", "score"}, testRank: {"preScore", "score"}}
	if diff := cmp.Diff(want, points); diff != "" {
		t.Fatalf("extension points under multiPoint (-want +got):\n%s", diff)
	}
}

// TestScoreWithoutPreScore: a score plugin enabled at score but not at preScore says how to fix
// the configuration instead of scoring nothing.
func TestScoreWithoutPreScore(t *testing.T) {
	a := newAdapter(t, testRegistration)
	nodes := []*corev1.Node{testNode("n0", "5"), testNode("n1", "7")}
	fw, snap := mustFramework(t, a, profileYAML("score:\n  enabled:\n  - name: test-rank\n", ""), nodes, nil)
	infos, _ := snap.NodeInfos().List()
	state := schedframework.NewCycleState()
	_, s := fw.RunScorePlugins(t.Context(), state, testPod("p", nil), infos)
	if s.IsSuccess() || !strings.Contains(s.Message(), "enable test-rank at the preScore extension point as well as score, or under multiPoint") {
		t.Fatalf("status %v, want an error saying to enable preScore", s)
	}
}

// TestArgs: pluginConfig args configure the agent once, strictly decoded and validated, naming
// the fields by their JSON names.
func TestArgs(t *testing.T) {
	nodes := []*corev1.Node{testNode("n0", "4"), testNode("n1", "6"), testNode("n2", "8")}
	for _, tc := range []struct {
		name string
		args string
		// wantErr, when set, is what NewFramework's error must contain; otherwise the nodes
		// passing test-fit must be wantPass.
		wantErr  []string
		wantPass []string
	}{
		{name: "none: defaults", wantPass: []string{"n0", "n1", "n2"}},
		{name: "on the filter plugin", args: "- name: test-fit\n  args:\n    threshold: 6\n", wantPass: []string{"n1", "n2"}},
		{name: "on another plugin of the agent", args: "- name: test-rank\n  args:\n    threshold: 7\n", wantPass: []string{"n2"}},
		{name: "the same on both", args: "- name: test-fit\n  args:\n    threshold: 6\n- name: test-rank\n  args:\n    threshold: 6\n    label: test/value\n",
			wantPass: []string{"n1", "n2"}},
		{name: "json args", args: "- name: test-fit\n  args: {\"threshold\": 8}\n", wantPass: []string{"n2"}},
		{name: "differing", args: "- name: test-fit\n  args:\n    threshold: 6\n- name: test-rank\n  args:\n    threshold: 7\n",
			wantErr: []string{"test-fit", "test-rank", "of agent test both carry pluginConfig args, and they differ"}},
		{name: "unknown field", args: "- name: test-fit\n  args:\n    treshold: 6\n    colour: red\n",
			wantErr: []string{`plugin test-fit (agent test): pluginConfig args: unknown field "colour"; unknown field "treshold" (the agent's fields are threshold, label)`}},
		{name: "wrong case", args: "- name: test-fit\n  args:\n    Threshold: 6\n", wantErr: []string{`unknown field "Threshold"`}},
		{name: "out of range", args: "- name: test-rank\n  args:\n    threshold: 11\n    label: \"\"\n",
			wantErr: []string{"plugin test-rank (agent test): pluginConfig args: invalid threshold: 11 is out of range [0, 10]", "invalid label: must not be empty"}},
		{name: "wrong type", args: "- name: test-fit\n  args:\n    label: x\n    threshold: high\n", wantErr: []string{"plugin test-fit (agent test): pluginConfig args: invalid threshold: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Factories run in map order: repeat, so that either plugin comes first.
			for range 8 {
				a := newAdapter(t, testRegistration)
				fw, snap, err := newFramework(t, a, profileYAML(allPlugins, tc.args), nodes, nil)
				if tc.wantErr != nil {
					if err == nil {
						t.Fatal("NewFramework succeeded, want an error")
					}
					for _, w := range tc.wantErr {
						if !strings.Contains(err.Error(), w) {
							t.Fatalf("error %q does not contain %q", err, w)
						}
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				_, feasible := filterAll(t, fw, snap, schedframework.NewCycleState(), testPod("p", nil))
				if got := infoNames(feasible); !slices.Equal(got, tc.wantPass) {
					t.Fatalf("nodes passing test-fit %v, want %v", got, tc.wantPass)
				}
			}
		})
	}
}

// TestDuplicateFunctionNames: two agents offering a function of one name cannot both be
// plugins.
func TestDuplicateFunctionNames(t *testing.T) {
	other := framework.Register("other", defaultTestConfig, func(cfg testConfig, h framework.Handle) (*otherAgent, error) {
		return &otherAgent{testAgent{cfg: cfg}}, nil
	}, testOffer)
	_, err := adapter.New([]framework.Registration{testRegistration, other})
	if err == nil || !strings.Contains(err.Error(), "agents test and other both offer a function named test-") {
		t.Fatalf("error %v, want one naming both agents", err)
	}
}

type otherAgent struct{ testAgent }

func (a *otherAgent) Name() string { return "other" }

// ExampleAdapter_Names lists the plugins of a list of agents.
func ExampleAdapter_Names() {
	a, err := adapter.New([]framework.Registration{testRegistration})
	if err != nil {
		panic(err)
	}
	for _, name := range a.Names() {
		agent, filter, score := a.Describe(name)
		fmt.Printf("%s: agent %s, filter %v, score %v\n", name, agent, filter, score)
	}
	// Output:
	// test-fit: agent test, filter true, score true
	// test-rank: agent test, filter false, score true
}

// TestProfilesHaveTheirOwnAgents: each profile builds its own agents from its own args, even
// from one Adapter (as the scheduler builds every profile from one registry).
func TestProfilesHaveTheirOwnAgents(t *testing.T) {
	nodes := []*corev1.Node{testNode("n0", "4"), testNode("n1", "6"), testNode("n2", "8")}
	a := newAdapter(t, testRegistration)
	for _, tc := range []struct {
		threshold int
		pass      []string
	}{{6, []string{"n1", "n2"}}, {8, []string{"n2"}}, {0, []string{"n0", "n1", "n2"}}} {
		fw, snap := mustFramework(t, a, profileYAML(allPlugins, fmt.Sprintf("- name: test-rank\n  args:\n    threshold: %d\n", tc.threshold)), nodes, nil)
		defer func() {
			// The earlier profiles still filter with their own threshold.
			_, feasible := filterAll(t, fw, snap, schedframework.NewCycleState(), testPod("p", nil))
			if got := infoNames(feasible); !slices.Equal(got, tc.pass) {
				t.Errorf("profile with threshold %d passes %v, want %v", tc.threshold, got, tc.pass)
			}
		}()
	}
}

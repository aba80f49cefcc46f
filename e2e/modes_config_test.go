package e2e

// Both modes from one chart: the same values rendered with mode extender (separate sidecars, or
// one combined sidecar) and mode plugin must make kube-scheduler do the same. Every extender
// setting that changes what the scheduler does is checked against its plugin-mode counterpart;
// what has none is named below with the reason (by design) or as a known gap.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// renderedConfig is the part of the chart's KubeSchedulerConfiguration compared here.
type renderedConfig struct {
	Profiles []struct {
		SchedulerName string `json:"schedulerName"`
		Plugins       *struct {
			MultiPoint struct {
				Enabled []struct {
					Name   string `json:"name"`
					Weight int64  `json:"weight"`
				} `json:"enabled"`
			} `json:"multiPoint"`
		} `json:"plugins"`
		PluginConfig []struct {
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"pluginConfig"`
	} `json:"profiles"`
	Extenders []struct {
		FilterVerb       string `json:"filterVerb"`
		PrioritizeVerb   string `json:"prioritizeVerb"`
		Weight           int64  `json:"weight"`
		BindVerb         string `json:"bindVerb"`
		PreemptVerb      string `json:"preemptVerb"`
		Ignorable        *bool  `json:"ignorable"`
		ManagedResources []struct {
			Name               string `json:"name"`
			IgnoredByScheduler bool   `json:"ignoredByScheduler"`
		} `json:"managedResources"`
	} `json:"extenders"`
}

// renderConfig renders the chart's scheduler configuration with sets.
func renderConfig(t *testing.T, sets ...string) renderedConfig {
	t.Helper()
	args := []string{"template", "kss", chartDir(t), "--namespace", "kube-system", "--kube-version", "v1.37.1",
		"--show-only", "templates/scheduler-config.yaml"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := runHelm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(out, &cm); err != nil || len(cm.Data) != 1 {
		t.Fatalf("helm %v: not one ConfigMap with one file (%v):\n%s", sets, err, out)
	}
	var cfg renderedConfig
	for _, v := range cm.Data {
		// the configuration has more than is compared (leaderElection, ...)
		if err := yaml.Unmarshal([]byte(v), &cfg); err != nil {
			t.Fatalf("helm %v: %v\n%s", sets, err, v)
		}
	}
	if len(cfg.Profiles) == 0 {
		t.Fatalf("helm %v: no profile", sets)
	}
	return cfg
}

// nodeResourcesFit returns the profile's NodeResourcesFit args (nil without).
func (c renderedConfig) nodeResourcesFit(profile int) map[string]any {
	for _, pc := range c.Profiles[profile].PluginConfig {
		if pc.Name == "NodeResourcesFit" {
			return pc.Args
		}
	}
	return nil
}

// Known differences between the modes, each with its reason. A verb of the extenders list named
// here is not required to have a plugin-mode counterpart.
var modeDifferences = map[string]string{
	// by design: plugin mode places gangs all-or-nothing with pod-group (scheduler/gangplugin) in
	// the main profile; the extender's quorum filter is plugin.quorumProfile's gang plugin.
	"predicates/gang": "pod-group",
	// known gap: reward's preemption verb drops candidates where the pod's type fares badly;
	// plugin mode has no counterpart yet (a PostFilter in scheduler/adapter), so preemption in
	// plugin mode is kube-scheduler's own.
	"preemption": "",
}

// expandAgents returns c with its first profile's agents plugin (scheduler/adapter's
// CombinedName) replaced by the functions its args list, with their weights, as the separate
// plugins they stand for; the agents plugin's own weight must be the sum of theirs.
func expandAgents(t *testing.T, c renderedConfig) renderedConfig {
	t.Helper()
	p := &c.Profiles[0]
	var functions []any
	for _, pc := range p.PluginConfig {
		if pc.Name == "agents" {
			functions, _ = pc.Args["functions"].([]any)
		}
	}
	enabled := p.Plugins.MultiPoint.Enabled[:0:0]
	found := false
	for _, e := range p.Plugins.MultiPoint.Enabled {
		if e.Name != "agents" {
			enabled = append(enabled, e)
			continue
		}
		found = true
		var sum int64
		for _, f := range functions {
			f := f.(map[string]any)
			w, _ := f["weight"].(float64)
			sum += int64(w)
			enabled = append(enabled, struct {
				Name   string `json:"name"`
				Weight int64  `json:"weight"`
			}{f["name"].(string), int64(w)})
		}
		if e.Weight != max(sum, 1) {
			t.Errorf("the agents plugin's weight %d, its functions' weights sum to %d", e.Weight, sum)
		}
	}
	if !found || len(functions) == 0 {
		t.Fatalf("combined.enabled in plugin mode renders no agents plugin with functions: %+v", p)
	}
	p.Plugins.MultiPoint.Enabled = enabled
	return c
}

// compareModes checks that plugin mode's profile does what the extenders list makes the
// scheduler do.
func compareModes(t *testing.T, ext, plug renderedConfig) {
	t.Helper()
	managingVerbs := managingAgentsVerbs(t)
	// priorities/combined is a managing agent's verb when every prioritizer it combines is one
	combinedManaging := true
	if len(plug.Extenders) != 0 || plug.Profiles[0].Plugins == nil {
		t.Fatalf("plugin mode: %d extenders, plugins %v", len(plug.Extenders), plug.Profiles[0].Plugins)
	}
	enabled := map[string]int64{}
	var scoreSum int64
	for _, p := range plug.Profiles[0].Plugins.MultiPoint.Enabled {
		enabled[p.Name] = p.Weight
		scoreSum += p.Weight
		if p.Weight > 0 && !managingVerbs["priorities/"+p.Name] {
			combinedManaging = false
		}
	}
	managingVerbs["priorities/combined"] = combinedManaging
	used := map[string]bool{}
	var ignored []string
	for i, e := range ext.Extenders {
		at := fmt.Sprintf("extenders[%d]", i)
		if e.FilterVerb != "" {
			name := strings.TrimPrefix(e.FilterVerb, "predicates/")
			if alt, ok := modeDifferences[e.FilterVerb]; ok {
				name = alt
			}
			if _, ok := enabled[name]; !ok {
				t.Errorf("%s filterVerb %s: plugin %s is not enabled in plugin mode", at, e.FilterVerb, name)
			}
			used[name] = true
			// ignorable: a plugin's filter error always fails the pod's cycle; an ignorable
			// filter extender would let the pod through instead.
			if e.Ignorable == nil || *e.Ignorable {
				t.Errorf("%s filterVerb %s is ignorable: plugin mode cannot skip a failing filter", at, e.FilterVerb)
			}
		}
		switch {
		case e.PrioritizeVerb == "priorities/combined":
			// the combined sidecar's weight is the sum of the prioritizers' weights, each of
			// which is a plugin's score weight in plugin mode
			if e.Weight != scoreSum {
				t.Errorf("%s priorities/combined weight %d, plugin mode's score weights sum to %d", at, e.Weight, scoreSum)
			}
			for n, w := range enabled {
				if w > 0 {
					used[n] = true
				}
			}
		case e.PrioritizeVerb != "":
			name := strings.TrimPrefix(e.PrioritizeVerb, "priorities/")
			if w, ok := enabled[name]; !ok || w != e.Weight {
				t.Errorf("%s prioritizeVerb %s weight %d: plugin %s weight %d (enabled %v)", at, e.PrioritizeVerb, e.Weight, name, w, ok)
			}
			used[name] = true
		}
		if e.PreemptVerb != "" {
			if _, ok := modeDifferences[e.PreemptVerb]; !ok {
				t.Errorf("%s preemptVerb %s has no plugin-mode counterpart", at, e.PreemptVerb)
			}
		}
		if e.BindVerb != "" {
			t.Errorf("%s bindVerb %s: plugin mode binds with DefaultBinder (the chart refuses bind in plugin mode)", at, e.BindVerb)
		}
		for _, r := range e.ManagedResources {
			if r.IgnoredByScheduler && !slices.Contains(ignored, r.Name) {
				ignored = append(ignored, r.Name)
			}
		}
		// An entry with managedResources is called only for the pods requesting one; its
		// verbs must be those of the agent managing them (telemetry's functions judge only
		// TAS pods), or every other pod skips them, which no plugin does.
		if len(e.ManagedResources) > 0 {
			for _, verb := range []string{e.FilterVerb, e.PrioritizeVerb} {
				if verb != "" && !managingVerbs[verb] {
					t.Errorf("%s manages %v, so the scheduler calls its %s only for pods requesting them; plugin mode calls it for every pod",
						at, e.ManagedResources, verb)
				}
			}
		}
	}
	for n := range enabled {
		if !used[n] {
			t.Errorf("plugin %s is enabled in plugin mode, but no extender calls its function", n)
		}
	}
	// managedResources with ignoredByScheduler: kube-scheduler adds them to every profile's
	// NodeResourcesFit ignoredResources; plugin mode's profile must name them itself.
	var got []string
	for _, r := range asList(plug.nodeResourcesFit(0)["ignoredResources"]) {
		got = append(got, fmt.Sprint(r))
	}
	slices.Sort(got)
	slices.Sort(ignored)
	if diff := cmp.Diff(ignored, got); diff != "" {
		t.Errorf("resources the scheduler ignores: extender mode's managedResources (-) vs plugin mode's NodeResourcesFit ignoredResources (+):\n%s", diff)
	}
	// The rest of NodeResourcesFit's args (the scoring strategy) is the same in both.
	if diff := cmp.Diff(ext.nodeResourcesFit(0)["scoringStrategy"], plug.nodeResourcesFit(0)["scoringStrategy"]); diff != "" {
		t.Errorf("NodeResourcesFit scoringStrategy (-extender +plugin):\n%s", diff)
	}
}

// managingAgentsVerbs returns the verbs of the agents that manage an extended resource, from
// the chart's table of the agents (files/agents.json, generated from their Offers).
func managingAgentsVerbs(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "files", "agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table map[string]struct {
		Calls []struct {
			FilterVerb       string   `json:"filterVerb"`
			PrioritizeVerb   string   `json:"prioritizeVerb"`
			ManagedResources []string `json:"managedResources"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, a := range table {
		manages := slices.ContainsFunc(a.Calls, func(c struct {
			FilterVerb       string   `json:"filterVerb"`
			PrioritizeVerb   string   `json:"prioritizeVerb"`
			ManagedResources []string `json:"managedResources"`
		}) bool {
			return len(c.ManagedResources) > 0
		})
		for _, c := range a.Calls {
			if manages {
				out[c.FilterVerb], out[c.PrioritizeVerb] = true, true
			}
		}
	}
	delete(out, "")
	if len(out) == 0 {
		t.Fatal("files/agents.json: no agent manages a resource (telemetry's telemetry/scheduling is gone)")
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestModesConfigureTheSame renders each set of values in extender mode (separate sidecars and
// one combined sidecar) and in plugin mode (separate plugins, and the agents plugin of
// combined.enabled read as the plugins it runs), and compares them (compareModes). Not by design and
// not checked: nodeCacheCapable and clusterAccess (plugin mode reads the scheduler's snapshot;
// the chart refuses them in plugin mode), httpTimeout and TLS (no HTTP call).
func TestModesConfigureTheSame(t *testing.T) {
	t.Parallel()
	agents := chartAgents(t)
	withAgents := func(names ...string) []string {
		var s []string
		for _, a := range agents {
			s = append(s, fmt.Sprintf("agents.%s.enabled=%v", a, slices.Contains(names, a)))
		}
		return s
	}
	// gang maps to pod-group in the main profile (see the table above): its own case below.
	every := slices.DeleteFunc(slices.Clone(agents), func(a string) bool { return a == "gang" })
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"every agent but gang", withAgents(every...)},
		{"every agent but gang, MostAllocated", append(withAgents(every...), "scoringStrategy=MostAllocated")},
		{"telemetry alone", withAgents("telemetry")},
		{"telemetry after safe", withAgents("safe", "telemetry")},
		{"safe and congestion", append(withAgents("safe", "congestion"), "scoringStrategy=LeastAllocated")},
		{"gang", withAgents("gang", "safe")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plug := renderConfig(t, append(tc.sets, "mode=plugin")...)
			// combined.enabled in plugin mode: the agents plugin, read as the plugins it runs.
			plugAgents := expandAgents(t, renderConfig(t, append(tc.sets, "mode=plugin", "combined.enabled=true")...))
			for _, combined := range []bool{false, true} {
				t.Run(fmt.Sprintf("combined=%v", combined), func(t *testing.T) {
					ext := renderConfig(t, append(tc.sets, "mode=extender", fmt.Sprintf("combined.enabled=%v", combined))...)
					compareModes(t, ext, plug)
					compareModes(t, ext, plugAgents)
				})
			}
		})
	}
	// The gang agent's quorum filter in plugin mode: the profile plugin.quorumProfile.
	q := renderConfig(t, "mode=plugin", "agents.safe.enabled=false", "agents.gang.enabled=true", "plugin.quorumProfile=quorum")
	if len(q.Profiles) != 2 || q.Profiles[1].SchedulerName != "quorum" || q.Profiles[1].Plugins == nil ||
		len(q.Profiles[1].Plugins.MultiPoint.Enabled) != 1 || q.Profiles[1].Plugins.MultiPoint.Enabled[0].Name != "gang" {
		t.Errorf("plugin.quorumProfile: profiles %+v, want a second profile quorum enabling gang", q.Profiles)
	}
}

// TestPluginModeConfigLoads: what `extender config --mode plugin` prints for every agent but
// gang runs kube-safe-scheduler as is (leader election off), and a pod requesting
// telemetry/scheduling: 1 (no node has it) binds: the profile's NodeResourcesFit ignores it, as
// the extenders' managedResources make kube-scheduler do in extender mode.
func TestPluginModeConfigLoads(t *testing.T) {
	t.Parallel()
	bin := harness.BuildExtender(t, "all")
	agents := slices.DeleteFunc(chartAgents(t), func(a string) bool { return a == "gang" })
	args := []string{"config", "--agents", strings.Join(agents, ","), "--mode", "plugin", "--scheduler-name", "generated"}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("extender %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var m map[string]any
	if err := yaml.Unmarshal(stdout.Bytes(), &m); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, stdout.String())
	}
	m["leaderElection"] = map[string]any{"leaderElect": false}
	cfg, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	c := harness.StartCluster(t)
	// template-label passes only nodes labelled template.extender/allowed
	c.CreateNodes(t, harness.NodeSpec{Name: "n1", Labels: map[string]string{"template.extender/allowed": "true"}})
	c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-safe-scheduler generated", Config: cfg, Binary: harness.BuildPluginScheduler(t)})
	// An unlabelled pod: the telemetry plugin lets it through; only the resource could stop it.
	if n := schedule(t, c, harness.PodSpec{Name: "tas-resource", SchedulerName: "generated", Extra: tasResource}); n != "n1" {
		t.Fatalf("the pod requesting telemetry/scheduling went to %q, want n1", n)
	}
}

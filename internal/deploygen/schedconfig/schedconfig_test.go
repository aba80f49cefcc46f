package schedconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	allagents "github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework"
)

// Every agent has a port of its own, and the table is derived from the registrations as
// Table's comment says.
func TestTable(t *testing.T) {
	table := Table(allagents.All)
	ports := map[int]string{}
	for _, a := range table {
		if a.Port <= 0 || a.Port > 65535 {
			t.Errorf("%s: port %d", a.Name, a.Port)
		}
		if other, ok := ports[a.Port]; ok {
			t.Errorf("%s and %s share port %d", a.Name, other, a.Port)
		}
		ports[a.Port] = a.Name
	}
	got := map[string]Agent{}
	for _, a := range table {
		got[a.Name] = a
	}
	for _, want := range []Agent{
		// One filter, two prioritizers: the filter shares the first prioritizer's entry, which
		// holds pods back; the second entry is a prioritizer alone, ignorable.
		{Name: "safe", Port: 5401, Calls: []Call{
			{FilterVerb: "predicates/safe-overload", PrioritizeVerb: "priorities/safe-overload", Weight: 2, HoldOnError: true},
			{PrioritizeVerb: "priorities/safe-balance", Weight: 1},
		}},
		// A filter and a prioritizer of different names share one entry.
		{Name: "template", Port: 5404, Calls: []Call{
			{FilterVerb: "predicates/template-label", PrioritizeVerb: "priorities/template-score", Weight: 1, HoldOnError: true},
		}},
		// No filter, but bind and preemption: the entry holds pods back. BIND (its Config's
		// field json "bind") turns its binding on.
		{Name: "reward", Port: 5407, BindEnv: "BIND", Calls: []Call{
			{PrioritizeVerb: "priorities/reward", Weight: 2, BindVerb: "bind", PreemptVerb: "preemption", HoldOnError: true},
		}},
		// A prioritizer alone: ignorable.
		{Name: "congestion", Port: 5402, Calls: []Call{{PrioritizeVerb: "priorities/congestion", Weight: 1}}},
		// A filter alone.
		{Name: "gang", Port: 5406, Calls: []Call{{FilterVerb: "predicates/gang", HoldOnError: true}}},
	} {
		if diff := cmp.Diff(want, got[want.Name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", want.Name, diff)
		}
	}
}

// shipped reads a file of yamlfiles/: its scheduler configuration and its containers by name.
func shipped(t *testing.T, name string) (KubeSchedulerConfiguration, map[string]map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "yamlfiles", name))
	if err != nil {
		t.Fatal(err)
	}
	var cfg KubeSchedulerConfiguration
	containers := map[string]map[string]any{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []map[string]any `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch obj.Kind {
		case "ConfigMap":
			if err := yaml.Unmarshal([]byte(obj.Data["my-scheduler-config.yaml"]), &cfg); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		case "Deployment":
			for _, c := range obj.Spec.Template.Spec.Containers {
				containers[c["name"].(string)] = c
			}
		}
	}
	return cfg, containers
}

// The generator writes the extenders list and the sidecars of the shipped files from the table:
// what one changes without the other shows here.
// Every yamlfiles/extender.*.yaml is checked: extender.<agent>.yaml, for an agent of
// agents.All, against extender config --agents <agent> --node-cache --sidecars (--bind for an
// agent that binds: the shipped file binds with it; no --node-cache for one whose Offer needs no
// cluster, framework.ClusterNone); any other file
// against the options listed here (an unlisted one fails the test), or it is listed with why it
// is not generated. Every agent ships its extender.<agent>.yaml.
func TestShippedFilesMatchTable(t *testing.T) {
	files := map[string]Options{
		"extender.safe.congestion.yaml": {Agents: []string{"safe", "congestion"}, NodeCache: true},
		"extender.safe.pigeon.yaml":     {Agents: []string{"safe", "pigeon"}, NodeCache: true},
		"extender.safe.mtls.yaml":       {Agents: []string{"safe"}, NodeCache: true, HTTPS: true},
	}
	for _, r := range allagents.All {
		if _, ok := files["extender."+r.Name+".yaml"]; !ok {
			// An agent that needs no cluster ships without a node cache (its Offer says so).
			files["extender."+r.Name+".yaml"] = Options{Agents: []string{r.Name}, NodeCache: r.Cluster != framework.ClusterNone, Bind: r.Bind}
		}
	}
	// Not generated: a file whose extenders list is not one the generator writes.
	notGenerated := map[string]string{
		"extender.safe.congestion.combined.yaml": "one extender calling priorities/combined, the weighted mean of several agents' scores in one sidecar",
	}
	shippedFiles, err := filepath.Glob(filepath.Join("..", "..", "..", "yamlfiles", "extender.*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range shippedFiles {
		file := filepath.Base(path)
		if _, ok := files[file]; !ok && notGenerated[file] == "" {
			t.Errorf("yamlfiles/%s is not listed in TestShippedFilesMatchTable: add the options that generate it (extender config --agents ... --sidecars)", file)
		}
	}
	for file, o := range files {
		if !slices.Contains(shippedFiles, filepath.Join("..", "..", "..", "yamlfiles", file)) {
			t.Errorf("yamlfiles/%s is missing", file)
			continue
		}
		t.Run(file, func(t *testing.T) {
			o.Sidecars = true
			out, err := Generate(allagents.All, o)
			if err != nil {
				t.Fatal(err)
			}
			docs := strings.SplitN(string(out), "\n---\n", 2)
			if len(docs) != 2 {
				t.Fatalf("want two documents, got:\n%s", out)
			}
			var got KubeSchedulerConfiguration
			if err := yaml.UnmarshalStrict([]byte(docs[0]), &got); err != nil {
				t.Fatal(err)
			}
			want, containers := shipped(t, file)
			if diff := cmp.Diff(want.Extenders, got.Extenders); diff != "" {
				t.Errorf("extenders (-%s +generated):\n%s", file, diff)
			}
			if len(got.Profiles) != 1 || got.Profiles[0].SchedulerName != want.Profiles[0].SchedulerName {
				t.Errorf("profiles %+v, want %+v", got.Profiles, want.Profiles)
			}
			if diff := cmp.Diff(want.LeaderElection, got.LeaderElection); diff != "" {
				t.Errorf("leaderElection (-%s +generated):\n%s", file, diff)
			}
			var side struct {
				Containers []map[string]any `json:"containers"`
			}
			if err := yaml.UnmarshalStrict([]byte(docs[1]), &side); err != nil {
				t.Fatal(err)
			}
			if len(side.Containers) != len(o.Agents) {
				t.Fatalf("%d sidecars, want %d", len(side.Containers), len(o.Agents))
			}
			for _, g := range side.Containers {
				name := g["name"].(string)
				w, ok := containers[name]
				if !ok {
					t.Errorf("sidecar %s is not in %s", name, file)
					continue
				}
				for _, field := range []string{"image", "ports", "volumeMounts"} {
					if diff := cmp.Diff(w[field], g[field]); diff != "" {
						t.Errorf("sidecar %s %s (-%s +generated):\n%s", name, field, file, diff)
					}
				}
				for _, probe := range []string{"livenessProbe", "readinessProbe"} {
					if diff := cmp.Diff(w[probe].(map[string]any)["exec"], g[probe].(map[string]any)["exec"]); diff != "" {
						t.Errorf("sidecar %s %s (-%s +generated):\n%s", name, probe, file, diff)
					}
				}
				// Every variable generated is in the file with the same value (the file sets
				// more: the agents' knobs).
				fileEnv := map[string]any{}
				for _, e := range w["env"].([]any) {
					fileEnv[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
				}
				for _, e := range g["env"].([]any) {
					n, v := e.(map[string]any)["name"].(string), e.(map[string]any)["value"]
					if fileEnv[n] != v {
						t.Errorf("sidecar %s: %s=%v generated, %v in %s", name, n, v, fileEnv[n], file)
					}
				}
			}
		})
	}
}

func TestGenerateRejects(t *testing.T) {
	for _, tc := range []struct {
		agents []string
		want   string
	}{
		{[]string{"oracle"}, `unknown agent "oracle" (agents: ` + strings.Join(names(Table(allagents.All)), ", ") + ")"},
		{nil, "no agent given"},
		{[]string{" "}, "no agent given"},
	} {
		if _, err := Generate(allagents.All, Options{Agents: tc.agents}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("agents %q: error %v, want %q", tc.agents, err, tc.want)
		}
	}
	out, err := Generate(allagents.All, Options{Agents: []string{"congestion", "safe", "congestion"}, SchedulerName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var cfg KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Extenders) != 3 || cfg.Extenders[0].PrioritizeVerb != "priorities/congestion" || cfg.Profiles[0].SchedulerName != "s" {
		t.Errorf("agents in the order given, once each, profile s: got\n%s", out)
	}
}

// TAS pods request telemetry/scheduling: 1. The telemetry extender manages it, ignored by the
// scheduler's own fit check, as TAS's configuration has it; otherwise those pods stay Pending
// with "Insufficient telemetry/scheduling".
func TestTelemetryManagesTASResource(t *testing.T) {
	out, err := Generate(allagents.All, Options{Agents: []string{"safe", "telemetry"}})
	if err != nil {
		t.Fatal(err)
	}
	var cfg KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(out, &cfg); err != nil {
		t.Fatal(err)
	}
	want := []ManagedResource{{Name: "telemetry/scheduling", IgnoredByScheduler: true}}
	for _, e := range cfg.Extenders {
		if strings.Contains(e.FilterVerb, "telemetry") {
			if diff := cmp.Diff(want, e.ManagedResources); diff != "" {
				t.Errorf("telemetry's managedResources (-want +got):\n%s", diff)
			}
		} else if e.ManagedResources != nil {
			t.Errorf("%s manages %v", e.URLPrefix, e.ManagedResources)
		}
	}
	if !strings.Contains(string(out), "managedResources:\n  - ignoredByScheduler: true\n    name: telemetry/scheduling\n") {
		t.Errorf("generated:\n%s", out)
	}
}

// Plugin mode's profile is the extenders list's counterpart: each function a plugin, each
// prioritizer's weight its score weight, each resource the scheduler ignores for an extender
// among NodeResourcesFit's ignoredResources (without which a TAS pod is "Insufficient
// telemetry/scheduling" in plugin mode); the extender-only options are refused.
func TestPluginModeMatchesTheExtenders(t *testing.T) {
	every := names(Table(allagents.All))
	ext, err := Generate(allagents.All, Options{Agents: every})
	if err != nil {
		t.Fatal(err)
	}
	plug, err := Generate(allagents.All, Options{Agents: every, Plugins: true, SchedulerName: "safe-scheduler"})
	if err != nil {
		t.Fatal(err)
	}
	var e, p KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(ext, &e); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(plug, &p); err != nil {
		t.Fatalf("%v\n%s", err, plug)
	}
	if len(p.Extenders) != 0 || len(p.Profiles) != 1 || p.Profiles[0].SchedulerName != "safe-scheduler" || p.Profiles[0].Plugins == nil {
		t.Fatalf("plugin mode:\n%s", plug)
	}
	plugins := map[string]int64{}
	for _, pl := range p.Profiles[0].Plugins.MultiPoint.Enabled {
		if _, dup := plugins[pl.Name]; dup {
			t.Errorf("plugin %s enabled twice", pl.Name)
		}
		plugins[pl.Name] = pl.Weight
	}
	var ignored []any
	for _, x := range e.Extenders {
		if x.FilterVerb != "" {
			name := strings.TrimPrefix(x.FilterVerb, "predicates/")
			if _, ok := plugins[name]; !ok {
				t.Errorf("filter %s has no plugin", x.FilterVerb)
			}
		}
		if x.PrioritizeVerb != "" {
			name := strings.TrimPrefix(x.PrioritizeVerb, "priorities/")
			if w, ok := plugins[name]; !ok || w != x.Weight {
				t.Errorf("prioritizer %s weight %d: plugin %s weight %d (enabled %v)", x.PrioritizeVerb, x.Weight, name, w, ok)
			}
		}
		for _, r := range x.ManagedResources {
			if r.IgnoredByScheduler {
				ignored = append(ignored, r.Name)
			}
		}
	}
	if len(ignored) == 0 {
		t.Fatal("no extender manages a resource: the telemetry agent's telemetry/scheduling is gone")
	}
	want := []PluginConfig{{Name: "NodeResourcesFit", Args: map[string]any{"ignoredResources": ignored}}}
	if diff := cmp.Diff(want, p.Profiles[0].PluginConfig); diff != "" {
		t.Errorf("pluginConfig (-want +got):\n%s", diff)
	}

	// Without an agent that manages a resource, no NodeResourcesFit args.
	plug, err = Generate(allagents.All, Options{Agents: []string{"safe"}, Plugins: true})
	if err != nil || strings.Contains(string(plug), "NodeResourcesFit") || !strings.Contains(string(plug), "name: safe-balance") {
		t.Errorf("safe alone, plugin mode (%v):\n%s", err, plug)
	}
	if _, err := Generate(allagents.All, Options{Agents: []string{"safe"}, Plugins: true, HTTPS: true, Sidecars: true}); err == nil ||
		!strings.Contains(err.Error(), "HTTPS, sidecars: extender mode only") {
		t.Errorf("plugin mode with HTTPS and sidecars: %v", err)
	}
}

// every lists the option sets the lease and bind tests generate: each agent alone and all of
// them together, in plugin mode and in extender mode with and without sidecars and bind (bind
// only where an agent binds), with the default scheduler name and another.
func every(t *testing.T) []Options {
	t.Helper()
	table := Table(allagents.All)
	sets := [][]string{names(table)}
	for _, a := range table {
		sets = append(sets, []string{a.Name})
	}
	var out []Options
	for _, agents := range sets {
		canBind := slices.ContainsFunc(table, func(a Agent) bool { return slices.Contains(agents, a.Name) && binds(a) })
		for _, name := range []string{"", "other-scheduler"} {
			out = append(out, Options{Agents: agents, SchedulerName: name, Plugins: true})
			for _, sidecars := range []bool{false, true} {
				for _, bind := range []bool{false, true} {
					if bind && !canBind {
						continue
					}
					out = append(out, Options{Agents: agents, SchedulerName: name, Sidecars: sidecars, Bind: bind, NodeCache: true})
				}
			}
		}
	}
	return out
}

// generate runs Generate and splits its output into the configuration and, with sidecars, the
// sidecar containers.
func generate(t *testing.T, o Options) (string, KubeSchedulerConfiguration, []map[string]any) {
	t.Helper()
	out, err := Generate(allagents.All, o)
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
	docs := strings.SplitN(string(out), "\n---\n", 2)
	var cfg KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cfg); err != nil {
		t.Fatalf("%+v: %v\n%s", o, err, out)
	}
	var side struct {
		Containers []map[string]any `json:"containers"`
	}
	if len(docs) == 2 {
		if err := yaml.UnmarshalStrict([]byte(docs[1]), &side); err != nil {
			t.Fatalf("%+v: %v\n%s", o, err, out)
		}
	}
	return string(out), cfg, side.Containers
}

// Issue 49: without leaderElection kube-scheduler leads on kube-system/kube-scheduler, the
// default scheduler's Lease, so that of the two only one schedules. Every generated
// configuration, in both modes, leads on a Lease of its own named after its profile, in the
// namespace of the shipped files (whose Role lets the scheduler update a Lease of that name).
func TestGeneratedSchedulerLeadsOnItsOwnLease(t *testing.T) {
	for _, o := range every(t) {
		_, cfg, _ := generate(t, o)
		name := o.SchedulerName
		if name == "" {
			name = "my-scheduler"
		}
		want := &LeaderElection{LeaderElect: true, ResourceNamespace: "kube-system", ResourceName: name}
		if diff := cmp.Diff(want, cfg.LeaderElection); diff != "" {
			t.Errorf("%+v: leaderElection (-want +got):\n%s", o, diff)
		}
		if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != name {
			t.Errorf("%+v: profiles %+v, want one named %s", o, cfg.Profiles, name)
		}
	}
}

// Issue 49: `extender config --agents reward --sidecars` wrote bindVerb: bind beside a sidecar
// without BIND=true, which answers every bind "binding is not supported": no pod was bound.
// Every generated configuration that declares a bind verb has its sidecar bind (with sidecars:
// the variable is in the env of the sidecar on the binder's port; without: the output says the
// sidecar needs it), no sidecar binds without the verb, and a configuration without bind leaves
// binding to kube-scheduler while the binder's entry still holds pods back (its preemption).
func TestGeneratedBindVerbBinds(t *testing.T) {
	bindEnv := map[string]string{} // urlPrefix port -> the variable of the agent there
	for _, a := range Table(allagents.All) {
		if binds(a) {
			bindEnv[strconv.Itoa(a.Port)] = a.BindEnv
		}
	}
	if len(bindEnv) == 0 {
		t.Fatal("no agent binds: reward's Offer lost Bind")
	}
	for _, o := range every(t) {
		if o.Plugins {
			continue
		}
		out, cfg, containers := generate(t, o)
		binders := 0
		var binderPort string
		for _, e := range cfg.Extenders {
			port := e.URLPrefix[strings.LastIndex(e.URLPrefix, ":")+1 : strings.LastIndex(e.URLPrefix, "/")]
			if e.BindVerb != "" {
				binders++
				binderPort = port
			}
			if _, ok := bindEnv[port]; ok && (e.Ignorable == nil || *e.Ignorable) {
				t.Errorf("%+v: the binder's entry %s is ignorable", o, e.URLPrefix)
			}
		}
		if o.Bind != (binders == 1) || binders > 1 {
			t.Errorf("%+v: %d entries with bindVerb\n%s", o, binders, out)
			continue
		}
		for _, c := range containers {
			port := strings.TrimPrefix(envOf(c)["HTTP_PORT"], "127.0.0.1:")
			v, set := envOf(c)[bindEnv[port]]
			if port == binderPort && v != "true" {
				t.Errorf("%+v: the sidecar %s serves bindVerb: bind without %s=true: it answers every bind \"binding is not supported\"\n%s", o, c["name"], bindEnv[port], out)
			}
			if port != binderPort && set {
				t.Errorf("%+v: the sidecar %s sets %s=%s, and no bindVerb calls it", o, c["name"], bindEnv[port], v)
			}
		}
		if binders == 1 && !o.Sidecars && !strings.Contains(out, "must run with "+bindEnv[binderPort]+"=true") {
			t.Errorf("%+v: bindVerb without sidecars, and no word that the sidecar needs %s=true:\n%s", o, bindEnv[binderPort], out)
		}
	}
	for _, o := range []Options{{Agents: []string{"safe"}, Bind: true}, {Agents: []string{"reward"}, Bind: true, Plugins: true}} {
		if _, err := Generate(allagents.All, o); err == nil {
			t.Errorf("%+v: no error (safe does not bind; plugin mode has no bind verb)", o)
		}
	}
}

// envOf returns a generated container's env by name.
func envOf(c map[string]any) map[string]string {
	out := map[string]string{}
	env, _ := c["env"].([]any)
	for _, e := range env {
		m := e.(map[string]any)
		out[m["name"].(string)] = m["value"].(string)
	}
	return out
}

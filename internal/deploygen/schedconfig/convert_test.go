package schedconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func convertFile(t *testing.T, name string) (KubeSchedulerConfiguration, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	out, notes, err := Convert(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var cfg KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(out, &cfg); err != nil {
		t.Fatalf("%s: output does not read back: %v\n%s", name, err, out)
	}
	t.Logf("%s:\n%s\nnotes:\n%s", name, out, strings.Join(notes, "\n"))
	return cfg, notes
}

func yes() *bool { t := true; return &t }

// converted are the profile and the Lease of every converted Policy: a Policy names no
// scheduler.
var (
	convertedLease    = &LeaderElection{LeaderElect: true, ResourceNamespace: "kube-system", ResourceName: "my-scheduler"}
	convertedProfiles = []Profile{{SchedulerName: "my-scheduler"}}
)

// Issue 49: a configuration without leaderElection leads on kube-system/kube-scheduler, the
// default scheduler's Lease, and one without profiles serves default-scheduler's pods. A
// converted Policy's scheduler leads on the Lease of its own profile, and says at its top to
// rename both.
func TestConvertedSchedulerLeadsOnItsOwnLease(t *testing.T) {
	for _, file := range []string{"tas-policy.json", "generals-scheduler-policy.json", "classic-policy.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := Convert(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var cfg KubeSchedulerConfiguration
		if err := yaml.UnmarshalStrict(out, &cfg); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if diff := cmp.Diff(convertedLease, cfg.LeaderElection); diff != "" {
			t.Errorf("%s: leaderElection (-want +got):\n%s", file, diff)
		}
		if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != cfg.LeaderElection.ResourceName {
			t.Errorf("%s: profiles %+v, want one named as its Lease", file, cfg.Profiles)
		}
		if !strings.HasPrefix(string(out), "# A Policy names no scheduler") ||
			!strings.Contains(string(out), "Give profiles[0].schedulerName and leaderElection.resourceName your scheduler's name") {
			t.Errorf("%s: no word on renaming the profile and its Lease:\n%s", file, out)
		}
	}
}

// The Policy of telemetry-aware-scheduling's README: HTTPS with a client certificate, a managed
// resource, ignorable; its extender's apiVersion is no Policy field and is reported.
func TestConvertTASPolicy(t *testing.T) {
	cfg, notes := convertFile(t, "tas-policy.json")
	want := KubeSchedulerConfiguration{APIVersion: APIVersion, Kind: Kind, LeaderElection: convertedLease, Profiles: convertedProfiles, Extenders: []Extender{{
		URLPrefix: "https://tas-service.default.svc.cluster.local:9001", FilterVerb: "scheduler/filter",
		PrioritizeVerb: "scheduler/prioritize", Weight: 1, EnableHTTPS: true,
		TLSConfig:        &TLSConfig{CertFile: "/host/certs/client.crt", KeyFile: "/host/certs/client.key"},
		ManagedResources: []ManagedResource{{Name: "telemetry/scheduling", IgnoredByScheduler: true}},
		Ignorable:        yes(),
	}}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "extenders[0].apiVersion is not a field of a legacy Policy") {
		t.Errorf("notes %q, want one on extenders[0].apiVersion", notes)
	}
}

// A generals-space style scheduler-policy.json: filter, prioritize, preempt and bind verbs.
func TestConvertGeneralsPolicy(t *testing.T) {
	cfg, notes := convertFile(t, "generals-scheduler-policy.json")
	want := KubeSchedulerConfiguration{APIVersion: APIVersion, Kind: Kind, LeaderElection: convertedLease, Profiles: convertedProfiles, Extenders: []Extender{{
		URLPrefix:  "http://kube-scheduler-extender.kube-system.svc.cluster.local:8080",
		FilterVerb: "predicates/always_true", PrioritizeVerb: "priorities/zero_score", PreemptVerb: "preemption",
		BindVerb: "bind", Weight: 1,
	}}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(notes) != 0 {
		t.Errorf("notes %q, want none", notes)
	}
}

// Predicates and priorities have no v1 form: every one is reported with the plugin to use
// (or why none), never dropped silently; the symmetric weight becomes InterPodAffinity args;
// the timeout in nanoseconds a duration.
func TestConvertClassicPolicy(t *testing.T) {
	cfg, notes := convertFile(t, "classic-policy.yaml")
	want := KubeSchedulerConfiguration{APIVersion: APIVersion, Kind: Kind, LeaderElection: convertedLease,
		Profiles: []Profile{{SchedulerName: "my-scheduler", PluginConfig: []PluginConfig{{
			Name: "InterPodAffinity", Args: map[string]any{"hardPodAffinityWeight": float64(10)}}}}},
		Extenders: []Extender{{
			URLPrefix: "http://127.0.0.1:10262/scheduler", FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 5,
			HTTPTimeout: "30s", NodeCacheCapable: true, ManagedResources: []ManagedResource{{Name: "example.com/gpu"}}, Ignorable: yes(),
		}}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{
		"predicate GeneralPredicates: use the plugin NodeResourcesFit, NodePorts, NodeName, NodeAffinity (filter",
		"predicate PodToleratesNodeTaints: use the plugin TaintToleration",
		"predicate MatchInterPodAffinity: use the plugin InterPodAffinity",
		"predicate CheckVolumeBinding: use the plugin VolumeBinding",
		"predicate CheckNodeMemoryPressure: use the plugin TaintToleration",
		"predicate CheckNodeLabelPresence: no v1 plugin replaces it",
		`its argument {"labelsPresence"`,
		"priority LeastRequestedPriority (weight 1): use the plugin NodeResourcesFit (score, weight 1",
		"priority BalancedResourceAllocation (weight 1): use the plugin NodeResourcesBalancedAllocation",
		"priority SelectorSpreadPriority (weight 2): use the plugin PodTopologySpread (score, weight 2",
		"priority EqualPriority (weight 1): no v1 plugin replaces it",
		"priority NodePreferAvoidPodsPriority (weight 10000): no v1 plugin replaces it",
		"alwaysCheckAllPredicates: no v1 equivalent",
		"hardPodAffinitySymmetricWeight 10",
		"predicates: a Policy's list replaced the default filters",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("notes lack %q", want)
		}
	}
}

func TestConvertRejects(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not a Policy", `{"kind": "KubeSchedulerConfiguration"}`, `not a Policy: kind "KubeSchedulerConfiguration"`},
		{"not an object", `[1, 2]`, "not a Policy"},
		{"not YAML", "kind: [", "not JSON or YAML"},
		{"weight 0", `{"kind": "Policy", "extenders": [{"urlPrefix": "http://x", "prioritizeVerb": "p"}]}`, "weight must be positive"},
		{"two binders", `{"kind": "Policy", "extenders": [{"urlPrefix": "http://x", "bindVerb": "b"}, {"urlPrefix": "http://y", "bindVerb": "b"}]}`, "at most one may bind"},
		{"no urlPrefix", `{"kind": "Policy", "extenders": [{"filterVerb": "f"}]}`, "no urlPrefix"},
		{"bad timeout", `{"kind": "Policy", "extenders": [{"urlPrefix": "http://x", "httpTimeout": "soon"}]}`, "httpTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Convert([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A timeout written as a duration string is read too; unknown fields at every level are
// reported, whatever their case.
func TestConvertTimeoutAndUnknownFields(t *testing.T) {
	out, notes, err := Convert([]byte(`{"kind": "Policy", "apiVersion": "v1", "color": "blue",
		"extenders": [{"urlPrefix": "http://x", "filterVerb": "f", "httpTimeout": "2s", "EnableHTTPS": true,
		"tlsConfig": {"insecure": true, "pinned": "x"}, "managedResources": [{"name": "r", "count": 1}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "httpTimeout: 2s") || !strings.Contains(string(out), "enableHTTPS: true") {
		t.Errorf("output lacks the timeout or HTTPS:\n%s", out)
	}
	all := strings.Join(notes, "\n")
	for _, want := range []string{"color is not a field", "extenders[0].tlsConfig.pinned is not a field", "extenders[0].managedResources[0].count is not a field"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if strings.Contains(all, "EnableHTTPS") {
		t.Errorf("EnableHTTPS (another case of enableHttps) reported as unknown: %q", notes)
	}
}

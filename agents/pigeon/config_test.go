package pigeon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

// load declares the settings, parses args and env, applies the file and validates, as main
// and pigeon.go do.
func load(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	s := settingstest.New(env)
	cfg := DefaultConfig()
	bound := s.Bind(&cfg)
	if err := s.Parse(args); err != nil {
		return cfg, err
	}
	if err := cfg.ApplyFile(s.Explicit); err != nil {
		return cfg, err
	}
	return cfg, bound.Describe(cfg.Validate())
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pigeon.cfg")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var ignoreOrigin = cmpopts.IgnoreUnexported(Config{})

func TestConfigDefaults(t *testing.T) {
	cfg, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{NumResources: 2, Objective: ABinpack, ResourceIndex: 0, GPUResource: "nvidia.com/gpu"}
	if diff := cmp.Diff(want, cfg, ignoreOrigin); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestConfigFile(t *testing.T) {
	file := writeFile(t, "# the original's pigeon.cfg\n\npolicyObjective = consolidate\n"+
		"policyResourceIndex=1   # memory\n  numResources = 3\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want Config
	}{
		{name: "file fills what nobody set", env: map[string]string{"PIGEON_CONFIG": file},
			want: Config{NumResources: 3, Objective: Consolidate, ResourceIndex: 1}},
		{name: "env wins over the file", env: map[string]string{"PIGEON_CONFIG": file, "POLICY_OBJECTIVE": "LOAD_BALANCE"},
			want: Config{NumResources: 3, Objective: LoadBalance, ResourceIndex: 1}},
		// the flag gives the default value explicitly: it still wins over the file
		{name: "flag wins over the file", args: []string{"--pigeon-config", file, "--policy-resource-index", "0"},
			want: Config{NumResources: 3, Objective: Consolidate, ResourceIndex: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := load(t, tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.GPUResource, tc.want.ConfigFile = "nvidia.com/gpu", file
			if diff := cmp.Diff(tc.want, cfg, ignoreOrigin); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // written to pigeon.cfg and given as PIGEON_CONFIG, when not empty
		env  map[string]string
		want []string // substrings of the error
	}{
		{name: "not key = value", file: "# ok\npolicyObjective CONSOLIDATE\n",
			want: []string{"PIGEON_CONFIG", "pigeon.cfg line 2", "not a key = value line"}},
		{name: "unknown key", file: "policyObjective = CONSOLIDATE\n\nnodeCount = 3\n",
			want: []string{"pigeon.cfg line 3", `unknown key "nodeCount"`}},
		{name: "bad objective", file: "policyObjective = PACK\n",
			want: []string{"pigeon.cfg line 1", `"PACK" is not one of A_BINPACK, LOAD_BALANCE, CONSOLIDATE`}},
		{name: "bad index", file: "policyResourceIndex = first\n", want: []string{"pigeon.cfg line 1", "not an integer"}},
		{name: "index out of range", file: "policyResourceIndex = 5\n",
			want: []string{"invalid POLICY_RESOURCE_INDEX (or --policy-resource-index): 5 is out of range [0, 4] (set by ", "pigeon.cfg line 1)"}},
		{name: "resources out of range", file: "numResources = 6\n",
			want: []string{"invalid NUM_RESOURCES (or --num-resources): 6 is out of range [1, 5] (set by ", "pigeon.cfg line 1)"}},
		{name: "repeated key", file: "numResources = 2\nnumResources = 3\n",
			want: []string{"pigeon.cfg line 2", "already set on line 1"}},
		// a bad line stops the program even when the variable overrides that setting
		{name: "bad line under an explicit variable", file: "policyObjective = PACK\n",
			env: map[string]string{"POLICY_OBJECTIVE": "CONSOLIDATE"}, want: []string{"pigeon.cfg line 1"}},
		{name: "index beyond the resources", env: map[string]string{"POLICY_RESOURCE_INDEX": "2"},
			want: []string{"invalid POLICY_RESOURCE_INDEX (or --policy-resource-index): 2 is beyond the resources: NUM_RESOURCES (numResources) is 2, so it must be in 0..1"}},
		{name: "index beyond the resources, from the file", file: "numResources = 1\npolicyResourceIndex = 1\n",
			want: []string{"POLICY_RESOURCE_INDEX (or --policy-resource-index): 1 (set by ", "pigeon.cfg line 2) is beyond the resources: NUM_RESOURCES (numResources) is 1"}},
		{name: "too many resources", env: map[string]string{"NUM_RESOURCES": "6"},
			want: []string{"NUM_RESOURCES (or --num-resources)", "out of range [1, 5]"}},
		{name: "unknown objective", env: map[string]string{"POLICY_OBJECTIVE": "SPREAD"}, want: []string{"POLICY_OBJECTIVE"}},
		{name: "bad gpu name", env: map[string]string{"PIGEON_GPU_RESOURCE": "not a name"},
			want: []string{"PIGEON_GPU_RESOURCE", "not a valid resource name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = v
			}
			if tc.file != "" {
				env["PIGEON_CONFIG"] = writeFile(t, tc.file)
			}
			_, err := load(t, nil, env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestConfigUnreadableFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.cfg")
	_, err := load(t, []string{"--pigeon-config=" + missing}, nil)
	if err == nil || !strings.Contains(err.Error(), "PIGEON_CONFIG") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error %v, want one naming PIGEON_CONFIG and %s", err, missing)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Config{NumResources: 2, Objective: "FAST", ResourceIndex: 3, GPUResource: "nvidia.com/gpu"}, framework.NewHandle(nil))
	// both bad fields are reported, by their JSON names
	if err == nil || !strings.Contains(err.Error(), `policyObjective: "FAST" is not one of`) || !strings.Contains(err.Error(), "policyResourceIndex: 3 is beyond") {
		t.Fatalf("error %v, want one naming policyObjective and policyResourceIndex", err)
	}
}

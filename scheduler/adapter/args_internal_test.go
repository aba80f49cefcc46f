package adapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-safe-scheduler/extender/agents/gang"
	"github.com/kube-safe-scheduler/extender/agents/pigeon"
	"github.com/kube-safe-scheduler/extender/framework"
)

// TestArgsWithConfigFile: pigeon's configFile fills the fields the args leave out, as it fills
// those no flag or variable sets in extender mode; a field the args give wins over the file.
func TestArgsWithConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pigeon.cfg")
	if err := os.WriteFile(file, []byte("policyObjective = CONSOLIDATE\nnumResources = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw := `{"configFile": "` + file + `", "numResources": 3}`
	cfg, given, err := decodeArgs(pigeon.Registration, &runtime.Unknown{Raw: []byte(raw), ContentType: runtime.ContentTypeJSON})
	if err != nil || !given {
		t.Fatalf("decodeArgs: given %v, error %v", given, err)
	}
	got := cfg.(*pigeon.Config)
	if got.Objective != pigeon.Consolidate || got.NumResources != 3 {
		t.Fatalf("objective %s, numResources %d; want CONSOLIDATE (from the file) and 3 (from the args)", got.Objective, got.NumResources)
	}

	// A bad line of the file is an error naming the file and the line.
	if err := os.WriteFile(file, []byte("policyObjective = PACK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = decodeArgs(pigeon.Registration, &runtime.Unknown{Raw: []byte(`{"configFile": "` + file + `"}`)})
	if err == nil || !strings.Contains(err.Error(), file+" line 1") {
		t.Fatalf("error %v, want one naming %s line 1", err, file)
	}
}

// TestArgsYAML: args in YAML (a content type kube-scheduler may hand over) decode as JSON do.
func TestArgsYAML(t *testing.T) {
	cfg, given, err := decodeArgs(pigeon.Registration, &runtime.Unknown{Raw: []byte("policyObjective: LOAD_BALANCE\n"), ContentType: runtime.ContentTypeYAML})
	if err != nil || !given || cfg.(*pigeon.Config).Objective != pigeon.LoadBalance {
		t.Fatalf("decodeArgs: %+v, given %v, error %v", cfg, given, err)
	}
	if _, given, err := decodeArgs(pigeon.Registration, nil); err != nil || given {
		t.Fatalf("no args: given %v, error %v; want the defaults", given, err)
	}
}

// TestArgsDuration: a duration in the args is text ("250ms", as metav1.Duration); a number
// there is an error naming the field, never a count of nanoseconds. The range is the agent's
// constructor's check, rendered as the adapter's build renders it.
func TestArgsDuration(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       time.Duration // when wantErr is empty
		wantErr    string
	}{
		{name: "text", args: `{"cacheWait": "250ms"}`, want: 250 * time.Millisecond},
		{name: "yaml text", args: "cacheWait: 1s", want: time.Second},
		{name: "a number", args: `{"cacheWait": 2}`,
			wantErr: "invalid cacheWait: expected a string, got a number"},
		{name: "a bad string", args: `{"cacheWait": "2"}`, wantErr: `invalid cacheWait: "2" is not a duration`},
		{name: "out of range", args: `{"cacheWait": "1m"}`, wantErr: "invalid cacheWait: 1m is out of range [0s, 4s]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := runtime.ContentTypeJSON
			if !strings.HasPrefix(tc.args, "{") {
				ct = runtime.ContentTypeYAML
			}
			cfg, _, err := decodeArgs(gang.Registration, &runtime.Unknown{Raw: []byte(tc.args), ContentType: ct})
			if err == nil {
				if _, err = gang.Registration.New(cfg, framework.NewHandle(nil)); err != nil {
					err = describe(err)
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.(*gang.Config).CacheWait.D(); got != tc.want {
				t.Errorf("cacheWait %s, want %s", got, tc.want)
			}
		})
	}
}

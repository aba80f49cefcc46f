package adapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-safe-scheduler/extender/agents/pigeon"
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

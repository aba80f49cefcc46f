package agents_test

import (
	"testing"

	"github.com/kube-safe-scheduler/extender/internal/deploygen/generate"
)

// root is the repository root, from this package's directory.
const root = ".."

// The files that name the agents outside their own packages are generated from agents.All by
// hack/generate (make generate): the extender's build-tagged files (<agent>.go at the root),
// dockerfiles/Dockerfile.<agent> and Dockerfile.all, the agent table of README.md and the
// plugin table of docs/plugin-mode.md. This test computes them in memory and fails, naming the
// file, when a committed one is missing or stale.
func TestGeneratedFromRegistry(t *testing.T) {
	plan, err := generate.Registry(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range plan.Check(root) {
		t.Error(err)
	}
}

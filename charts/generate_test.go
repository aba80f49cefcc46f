package charts

import (
	"testing"

	"github.com/kube-safe-scheduler/extender/internal/deploygen/generate"
)

// The chart's knowledge of the agents comes from the code: hack/generate (make generate, make
// chart) writes files/agents.json, values.schema.json, the agents entries of values.yaml and
// the plugin matcher of the plugin-mode alert. This test computes them in memory and fails,
// naming the file, when a committed one drifts from the code.
func TestChartMatchesCode(t *testing.T) {
	plan, err := generate.Chart("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range plan.Check("..") {
		t.Error(err)
	}
}

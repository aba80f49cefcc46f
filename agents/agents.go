// Package agents is the registry: All is the one list of the agents. The programs and tests that
// run them all (the plugin scheduler, the benchmarks) read it, and everything else that names
// the agents is generated from it by `make generate` (hack/generate) or derived from it at test
// time: the extender's build-tagged files (safe.go, ...: it compiles in only the agents its tags
// name), dockerfiles/Dockerfile.<agent>, the chart's agent table, call order and values, the
// tables of README.md and docs/plugin-mode.md. What a test needs to tell agents apart (end to end
// only, no cluster access) is in each agent's Offer. TestGeneratedFromRegistry fails when a
// generated file is stale, TestNoHandListOfAgents when a file lists the agents by hand, and
// TestNoPartialHandListOfAgents when a Go file lists some of them by name (docs/adding-an-agent.md).
package agents

import (
	"github.com/kube-safe-scheduler/extender/agents/congestion"
	"github.com/kube-safe-scheduler/extender/agents/gang"
	"github.com/kube-safe-scheduler/extender/agents/pigeon"
	"github.com/kube-safe-scheduler/extender/agents/reward"
	"github.com/kube-safe-scheduler/extender/agents/safe"
	"github.com/kube-safe-scheduler/extender/agents/telemetry"
	"github.com/kube-safe-scheduler/extender/agents/template"
	"github.com/kube-safe-scheduler/extender/framework"
)

// All is every agent, in the order the shipped deployments' scheduler calls them (the order of
// the extenders list the chart renders). A new agent goes at the end.
var All = []framework.Registration{
	safe.Registration,
	congestion.Registration,
	pigeon.Registration,
	template.Registration,
	telemetry.Registration,
	reward.Registration,
	gang.Registration,
}

// Package agents lists every agent, for the programs and tests that run them all: the plugin
// scheduler, the benchmarks. The extender itself compiles in only the agents its build tags
// name, each added by its own top-level file (safe.go, ...); TestEveryAgentIsListed, built with
// -tags all, holds that list and All equal.
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

// All is every agent, sorted by name.
var All = []framework.Registration{
	congestion.Registration,
	gang.Registration,
	pigeon.Registration,
	reward.Registration,
	safe.Registration,
	telemetry.Registration,
	template.Registration,
}

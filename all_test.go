//go:build all

package main

import (
	"slices"
	"testing"

	allagents "github.com/kube-safe-scheduler/extender/agents"
)

// With -tags all, the build-tagged files add exactly the agents of agents.All (the list the
// plugin scheduler and the benchmarks use). The files are generated from agents.All (make
// generate); agents' TestGeneratedFromRegistry fails when one is missing or stale.
func TestEveryAgentIsListed(t *testing.T) {
	var compiledNames, allNames []string
	for _, r := range agentsByName() {
		compiledNames = append(compiledNames, r.Name)
	}
	for _, r := range allagents.All {
		allNames = append(allNames, r.Name)
	}
	slices.Sort(allNames) // agentsByName sorts; All is in call order
	if !slices.Equal(compiledNames, allNames) {
		t.Errorf("compiled in with -tags all: %v; agents.All: %v", compiledNames, allNames)
	}
}

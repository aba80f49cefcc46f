// Command kube-safe-scheduler is kube-scheduler with the project's agents compiled in as
// scheduler framework plugins: every filter function of every agent (agents.All) is a Filter
// plugin and every prioritize function a Score plugin, named as the function its agent's
// framework.Registration names (docs/plugin-mode.md has the table). Profiles enable them
// like any plugin and configure them through pluginConfig args (see docs/plugin-mode.md). Every
// flag, and --version, is kube-scheduler's.
//
// Beside them, package gangplugin adds pod-group (PreFilter, PostFilter, Reserve, Permit: gang
// scheduling), the same under scheduler-plugins' name Coscheduling (with its QueueSort), and
// group-priority (QueueSort).
package main

import (
	"fmt"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // for JSON log format registration, as kube-scheduler
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version" // for version metric registration
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
	"github.com/kube-safe-scheduler/extender/scheduler/gangplugin"
)

func main() {
	plugins, err := adapter.New(agents.All)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-safe-scheduler: %v\n", err)
		os.Exit(2)
	}
	var options []app.Option
	for _, name := range plugins.Names() {
		options = append(options, app.WithPlugin(name, plugins.Factory(name)))
	}
	// The gang plugins (gang scheduling and the riya-scheduler's queue order) are not agent
	// functions: they hold placements and order the queue, which only a scheduler can.
	// pod-group and Coscheduling are one gang implementation under riya's and scheduler-plugins'
	// names; the three share one view of the groups.
	groups := gangplugin.NewGroups()
	options = append(options,
		app.WithPlugin(gangplugin.PodGroupName, groups.NewPodGroup),
		app.WithPlugin(gangplugin.CoschedulingName, groups.NewCoscheduling),
		app.WithPlugin(gangplugin.GroupPriorityName, groups.NewGroupPriority))
	os.Exit(cli.Run(app.NewSchedulerCommand(options...)))
}

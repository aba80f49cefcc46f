// Command kube-safe-scheduler is kube-scheduler with the project's agents compiled in as
// scheduler framework plugins: every filter function of every agent (agents.All) is a Filter
// plugin and every prioritize function a Score plugin, named as the function its agent's
// framework.Registration names (docs/plugin-mode.md has the table). Profiles enable them
// like any plugin and configure them through pluginConfig args (see docs/plugin-mode.md); the
// plugin agents (adapter.CombinedName) runs several of them in one pass. Every flag, and
// --version, is kube-scheduler's.
//
// Beside them, package gangplugin adds pod-group (PreFilter, PostFilter, Reserve, Permit: gang
// scheduling), the same under scheduler-plugins' name Coscheduling (with its QueueSort), and
// group-priority (QueueSort).
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/configz"
	_ "k8s.io/component-base/logs/json/register" // for JSON log format registration, as kube-scheduler
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version" // for version metric registration
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/memlimit"
	"github.com/kube-safe-scheduler/extender/scheduler/adapter"
	"github.com/kube-safe-scheduler/extender/scheduler/gangplugin"
)

func main() {
	// The soft memory limit is set at once; it is logged when the first plugin is built, after
	// kube-scheduler has set up its logging (and never for --version or --help).
	memoryLimit := memlimit.Apply()
	var logLimit sync.Once
	logged := func(f frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
		return func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			logLimit.Do(func() { klog.FromContext(ctx).Info(memoryLimit) })
			return f(ctx, obj, h)
		}
	}
	plugins, err := adapter.New(agents.All)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-safe-scheduler: %v\n", err)
		os.Exit(2)
	}
	if err := keepDecisions(plugins); err != nil {
		fmt.Fprintf(os.Stderr, "kube-safe-scheduler: %v\n", err)
		os.Exit(2)
	}
	var options []app.Option
	for _, name := range append(plugins.Names(), adapter.CombinedName) {
		options = append(options, app.WithPlugin(name, logged(plugins.Factory(name))))
	}
	// The gang plugins (gang scheduling and the riya-scheduler's queue order) are not agent
	// functions: they hold placements and order the queue, which only a scheduler can.
	// pod-group and Coscheduling are one gang implementation under riya's and scheduler-plugins'
	// names; the three share one view of the groups.
	groups := gangplugin.NewGroups()
	options = append(options,
		app.WithPlugin(gangplugin.PodGroupName, logged(groups.NewPodGroup)),
		app.WithPlugin(gangplugin.CoschedulingName, logged(groups.NewCoscheduling)),
		app.WithPlugin(gangplugin.GroupPriorityName, logged(groups.NewGroupPriority)))
	os.Exit(cli.Run(app.NewSchedulerCommand(options...)))
}

// keepDecisions keeps the plugins' last DECISIONS_KEPT decisions, with at most
// DECISIONS_INPUTS_BYTES of the agents' inputs, read as the extender reads them
// (package framework/decisions: range 0..100000; default 0 here, none kept, since keeping them
// adds the agents' explanations to every cycle), and publishes them under /configz, which
// kube-scheduler serves on its secure port behind its own authentication and authorization
// (`extender explain --scheduler`). kube-scheduler owns the flags: only the variable is read.
func keepDecisions(plugins *adapter.Adapter) error {
	cfg, err := decisions.FromEnv(os.LookupEnv, decisions.Config{Kept: 0, InputsBytes: decisions.DefaultInputsBytes})
	if err != nil || cfg.Kept == 0 {
		return err
	}
	cz, err := configz.New(decisions.ConfigzKey)
	if err != nil {
		return err
	}
	return cz.Set(plugins.KeepDecisions(cfg))
}

// The config subcommand: extender config prints the KubeSchedulerConfiguration (and the sidecar
// containers) that calls the compiled-in agents, as the shipped yamlfiles do.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kube-safe-scheduler/extender/internal/deploygen/schedconfig"
)

// generateConfig prints the KubeSchedulerConfiguration (and with --sidecars the sidecar
// containers) calling the agents named as the shipped yamlfiles do, from the Registrations of
// the agents compiled in.
func generateConfig(_ context.Context, args []string, stdout, stderr io.Writer) int {
	registrations := agentsByName()
	if len(registrations) == 0 {
		fmt.Fprintln(stderr, buildHint)
		return 2
	}
	var names []string
	for _, r := range registrations {
		names = append(names, r.Name)
	}
	fs := flag.NewFlagSet("extender config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agentList := fs.String("agents", "", "comma-separated agents to call, in order, among those compiled in ("+strings.Join(names, ", ")+")")
	var o schedconfig.Options
	fs.BoolVar(&o.NodeCache, "node-cache", false, "nodeCacheCapable: the scheduler sends node names, the extender reads nodes from its cache (needs cluster access)")
	fs.BoolVar(&o.HTTPS, "https", false, "call the extenders over mutual TLS, with the Secrets and paths of yamlfiles/extender.safe.mtls.yaml")
	fs.BoolVar(&o.Sidecars, "sidecars", false, "also print the sidecar containers to add to the scheduler's pod")
	fs.BoolVar(&o.Bind, "bind", false, "the agent that can bind pods (reward) binds them: its bindVerb, and with --sidecars BIND=true in its sidecar (default: kube-scheduler binds)")
	fs.StringVar(&o.SchedulerName, "scheduler-name", "my-scheduler", "the profile's schedulerName")
	mode := fs.String("mode", "extender", "extender (the extenders list) or plugin (kube-safe-scheduler's profile: the agents' plugins, docs/plugin-mode.md)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: extender config --agents safe,congestion [flags]\n\nPrints a KubeSchedulerConfiguration whose extenders call the agents on the ports the shipped yamlfiles use\n(--mode plugin: whose profile runs them as kube-safe-scheduler's plugins).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "extender config: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	switch *mode {
	case "extender":
	case "plugin":
		o.Plugins = true
		for name, set := range map[string]bool{"--node-cache": o.NodeCache, "--https": o.HTTPS, "--sidecars": o.Sidecars, "--bind": o.Bind} {
			if set {
				fmt.Fprintf(stderr, "extender config: %s is extender mode only (plugin mode has no extender and no sidecar)\n", name)
				return 2
			}
		}
	default:
		fmt.Fprintf(stderr, "extender config: --mode %q: want extender or plugin\n", *mode)
		return 2
	}
	o.Agents = strings.Split(*agentList, ",")
	out, err := schedconfig.Generate(registrations, o)
	if err != nil {
		fmt.Fprintf(stderr, "extender config: --agents: %v\n", err)
		return 2
	}
	stdout.Write(out)
	return 0
}

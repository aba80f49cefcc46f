// Command extender serves the kube-scheduler extender protocol for the agents compiled into it.
//
// Each agent is compiled in by a build tag (go build -tags safe, -tags safe,congestion, or
// -tags all); the build-tagged files next to this one (safe.go, congestion.go, pigeon.go,
// template.go) each add the agent's framework.Registration to the list compiled, which is the
// whole registration. At run time --agents (env AGENTS) chooses among the compiled-in agents, so
// one "all" image can play any agent's sidecar.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"

	"github.com/kube-safe-scheduler/extender/cluster"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/logging"
	"github.com/kube-safe-scheduler/extender/server"
	"github.com/kube-safe-scheduler/extender/settings"
)

// version is stamped at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.LookupEnv, os.Stderr))
}

// compiled lists the agents compiled into this binary: each build-tagged file (safe.go, ...)
// adds its agent in an init function, and nothing else does. Read it through agentsByName.
var compiled []framework.Registration

// agentsByName returns the compiled-in agents, sorted by name.
func agentsByName() []framework.Registration {
	return slices.SortedFunc(slices.Values(compiled), func(a, b framework.Registration) int {
		return strings.Compare(a.Name, b.Name)
	})
}

// buildHint is the message of a binary built without any agent. It names no agent: the tags
// are the agents' names, which live in the build-tagged files alone.
const buildHint = "this extender was built without any agent; build it with one or more agent tags, " +
	"for example: go build -tags safe . (each agent's tag is its name, as in its file safe.go, pigeon.go, ...; " +
	"-tags all builds every agent)"

// fileConfig is a configuration that also reads a file of its own (pigeon's pigeon.cfg), filling
// what no flag or variable set; main applies it after parsing the settings.
type fileConfig interface {
	ApplyFile(explicit func(env string) bool) error
}

// config is the server's own configuration.
type config struct {
	listen       string
	agents       string
	log          logging.Config
	maxBodyBytes int64
}

func (c *config) declare(s *settings.Set, compiled []string) {
	s.String(&c.listen, "HTTP_PORT", "listen", ":8080",
		"address to serve on: a port (5401) or host:port (127.0.0.1:5401)", settings.CheckListen)
	s.String(&c.agents, "AGENTS", "agents", strings.Join(compiled, ","),
		"comma-separated agents to serve, among those compiled in ("+strings.Join(compiled, ", ")+")", nil)
	c.log.Declare(s)
	s.Int64(&c.maxBodyBytes, "MAX_BODY_BYTES", "max-body-bytes", server.DefaultMaxBodyBytes, 1<<10, 1<<34,
		"largest request body accepted; larger ones get 413")
}

func run(ctx context.Context, args []string, getenv func(string) (string, bool), stderr io.Writer) int {
	registrations := agentsByName()
	if len(registrations) == 0 {
		fmt.Fprintln(stderr, buildHint)
		return 2
	}
	var names []string
	for _, r := range registrations {
		names = append(names, r.Name)
	}

	fs := flag.NewFlagSet("extender", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: extender [flags]\n\nServes the kube-scheduler extender protocol for the agents compiled in: %s.\n"+
			"Each flag may also be set by the environment variable named in its help; a flag wins over its variable.\n\nFlags:\n",
			strings.Join(names, ", "))
		fs.PrintDefaults()
	}
	set := settings.New(fs, getenv)
	var cfg config
	cfg.declare(set, names)
	var clusterCfg cluster.Config
	clusterCfg.Declare(set)
	// Every compiled-in agent's settings are declared (so --help lists them all); only the
	// selected agents' are validated and used.
	type agentSettings struct {
		cfg   framework.Config
		bound settings.Bound
	}
	agentCfg := map[string]agentSettings{}
	for _, r := range registrations {
		c := r.NewConfig()
		agentCfg[r.Name] = agentSettings{cfg: c, bound: set.Bind(c)}
	}
	if err := set.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "configuration error:\n%v\n", err)
		return 2
	}

	log := cfg.log.New(stderr)

	cluster.RouteKlog(log)
	state, err := cluster.Connect(clusterCfg, log.WithField("component", "cluster"), "kube-safe-scheduler-extender/"+version)
	if err != nil {
		fmt.Fprintf(stderr, "configuration error:\ncluster access: %v\n", err)
		return 2
	}
	// view and ready stay nil without cluster access (a nil *cluster.Cache in the interface
	// would not be nil).
	var view framework.Cluster
	var ready func() bool
	if state != nil {
		view, ready = state, state.HasSynced
	}

	selected, err := selectAgents(cfg.agents, names)
	if err != nil {
		fmt.Fprintf(stderr, "configuration error:\ninvalid AGENTS (or --agents): %v\n", err)
		return 2
	}
	var agents []framework.Agent
	for _, r := range registrations {
		if !slices.Contains(selected, r.Name) {
			continue
		}
		ac := agentCfg[r.Name]
		if fc, ok := ac.cfg.(fileConfig); ok {
			if err := fc.ApplyFile(set.Explicit); err != nil {
				fmt.Fprintf(stderr, "configuration error:\nagent %s: %v\n", r.Name, err)
				return 2
			}
		}
		if err := ac.cfg.Validate(); err != nil {
			fmt.Fprintf(stderr, "configuration error:\nagent %s:\n%v\n", r.Name, ac.bound.Describe(err))
			return 2
		}
		h := framework.Handle{Log: log.WithField("agent", r.Name), Cluster: view}
		if state != nil {
			h.Client, h.Events = state.Client(), state.Events(r.Name)
		}
		a, err := r.New(ac.cfg, h)
		if err != nil {
			fmt.Fprintf(stderr, "configuration error:\nagent %s: %v\n", r.Name, err)
			return 2
		}
		agents = append(agents, a)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	handler, err := server.New(agents, server.Options{
		Version:      version,
		MaxBodyBytes: cfg.maxBodyBytes,
		Lookup:       view,
		Ready:        ready,
		Log:          log,
		Registry:     reg,
	})
	if err != nil {
		fmt.Fprintf(stderr, "configuration error:\n%v\n", err)
		return 2
	}

	ln, err := net.Listen("tcp", settings.ListenAddress(cfg.listen))
	if err != nil {
		log.Errorf("cannot listen (HTTP_PORT or --listen %q): %v", cfg.listen, err)
		return 1
	}
	if state != nil {
		stopCluster := state.Start(ctx)
		defer stopCluster()
	}
	// Agents with background work start it once the cluster cache runs; it stops with ctx.
	for _, a := range agents {
		if st, ok := a.(framework.Starter); ok {
			if err := st.Start(ctx); err != nil {
				log.Errorf("agent %s: cannot start: %v", a.Name(), err)
				return 1
			}
		}
	}
	log.WithFields(logrus.Fields{"version": version, "address": ln.Addr().String(), "agents": strings.Join(selected, ","),
		"cluster": state != nil}).Info("extender serving")
	if err := server.Serve(ctx, ln, handler, log); err != nil {
		log.Errorf("server stopped: %v", err)
		return 1
	}
	log.Info("extender stopped")
	return 0
}

// selectAgents parses the comma-separated list of agents to serve and checks each is compiled in.
func selectAgents(list string, compiled []string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(compiled, name) {
			return nil, fmt.Errorf("agent %q is not compiled into this binary (compiled in: %s)", name, strings.Join(compiled, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no agent selected (compiled in: %s)", strings.Join(compiled, ", "))
	}
	return out, nil
}

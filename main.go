// Command extender serves the kube-scheduler extender protocol for the agents compiled into it.
//
// Each agent is compiled in by a build tag (go build -tags safe, -tags safe,congestion, or
// -tags all): each agent has one build-tagged file next to this one, named after it (safe.go
// for safe), which adds the agent's framework.Registration to the list compiled; that is the
// whole registration (agents.All lists every agent for the programs that run them all). At run
// time --agents (env AGENTS) chooses among the compiled-in agents, so one "all" image can play
// any agent's sidecar.
//
// This file only wires: it reads the configuration, builds the selected agents, cluster access
// and the HTTP server, and serves until a signal. The other commands (extender <name>) each
// have a file named for them: config.go, convert-policy.go, probe.go, explain.go; pprof.go is
// the --pprof-addr listener and flags.go the flag parsing they share.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
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
	"github.com/kube-safe-scheduler/extender/framework/decisions"
	"github.com/kube-safe-scheduler/extender/internal/logging"
	"github.com/kube-safe-scheduler/extender/internal/memlimit"
	"github.com/kube-safe-scheduler/extender/internal/tlsreload"
	"github.com/kube-safe-scheduler/extender/server"
	"github.com/kube-safe-scheduler/extender/settings"
)

// version is stamped at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if len(os.Args) > 1 {
		if cmd, ok := subcommands[os.Args[1]]; ok {
			os.Exit(cmd(ctx, os.Args[2:], os.Stdout, os.Stderr))
		}
	}
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

// config is the server's own configuration.
type config struct {
	listen       string
	agents       string
	combined     string
	log          logging.Config
	maxBodyBytes int64
	// pprof is PPROF_ADDR: a loopback host:port serving net/http/pprof, or "" (off).
	pprof string
	// decisions is DECISIONS_KEPT and DECISIONS_INPUTS_BYTES, bound by decisionsBound, as kube-safe-scheduler reads it too.
	decisions      decisions.Config
	decisionsBound settings.Bound
}

func (c *config) declare(s *settings.Set, compiled []string) {
	s.String(&c.listen, "HTTP_PORT", "listen", ":8080",
		"address to serve on: a port (5401) or host:port (127.0.0.1:5401)", settings.CheckListen)
	s.String(&c.agents, "AGENTS", "agents", strings.Join(compiled, ","),
		"comma-separated agents to serve, among those compiled in ("+strings.Join(compiled, ", ")+")", nil)
	s.String(&c.combined, "COMBINED_PRIORITIES", "combined-priorities", "",
		"serve the priority "+framework.CombinedName+": the weighted mean of these functions' scores, rounded half up, "+
			"as name=weight,... (e.g. safe-overload=2,congestion=1; integer weights 1..1000; functions of the agents served)", nil)
	c.log.Declare(s)
	s.Int64(&c.maxBodyBytes, "MAX_BODY_BYTES", "max-body-bytes", server.DefaultMaxBodyBytes, 1<<10, 1<<34,
		"largest request body accepted; larger ones get 413")
	s.String(&c.pprof, "PPROF_ADDR", "pprof-addr", "",
		"loopback host:port (127.0.0.1:6060) serving Go's profiles at /debug/pprof/, for diagnosis; empty: off", checkPprofAddr)
	c.decisions = decisions.Config{Kept: decisions.DefaultKept, InputsBytes: decisions.DefaultInputsBytes}
	c.decisionsBound = s.Bind(&c.decisions)
}

// validate checks the server's own settings that their declaration does not range-check.
func (c *config) validate() error {
	var combined error
	if strings.TrimSpace(c.combined) != "" {
		// The syntax here; the names once the agents are built (combine).
		if _, err := framework.ParseWeighted(c.combined); err != nil {
			combined = fmt.Errorf("invalid COMBINED_PRIORITIES (or --combined-priorities): %w", err)
		}
	}
	return errors.Join(c.decisionsBound.Describe(c.decisions.Validate()), combined)
}

// run is the extender: it reads its configuration, then starts, in order, TLS, cluster access,
// the agents and the HTTP server, and serves until ctx ends. A configuration error stops it at
// start with exit code 2, naming the setting; a failure after that, with 1.
func run(ctx context.Context, args []string, getenv func(string) (string, bool), stderr io.Writer) int {
	registrations := agentsByName()
	if len(registrations) == 0 {
		fmt.Fprintln(stderr, buildHint)
		return 2
	}
	st, err := parseSettings(registrations, args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return configError(stderr, err)
	}
	log := st.cfg.log.New(stderr)
	for _, w := range st.set.Warnings() {
		log.Warn(w)
	}
	log.Info(memlimit.Apply())
	tlsServer, err := st.tlsServer(log)
	if err != nil {
		return configError(stderr, err)
	}
	cluster.RouteKlog(log)
	state, err := cluster.Connect(st.cluster, log.WithField("component", "cluster"), "kube-safe-scheduler-extender/"+version)
	if err != nil {
		return configError(stderr, fmt.Errorf("cluster access: %w", err))
	}
	// The agents' metrics go to the server's registry, served at /metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if tlsServer != nil {
		reg.MustRegister(tlsServer.Collector()) // the serving certificate's expiry, for the alert
	}
	agents, err := st.buildAgents(log, state, reg)
	if err != nil {
		return configError(stderr, err)
	}
	// lookup and ready stay nil without cluster access (a nil *cluster.Cache in the interface
	// would not be nil).
	var lookup framework.NodeLookup
	var ready func() bool
	if state != nil {
		lookup, ready = state, state.HasSynced
	}
	handler, err := server.New(agents, server.Options{
		Version:      version,
		MaxBodyBytes: st.cfg.maxBodyBytes,
		Decisions:    st.cfg.decisions,
		Lookup:       lookup,
		Ready:        ready,
		Log:          log,
		Registry:     reg,
	})
	if err != nil {
		return configError(stderr, err)
	}
	return serve(ctx, st, log, tlsServer, state, agents, handler)
}

// configError reports a configuration error and returns the exit code that goes with it.
func configError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "configuration error:\n%v\n", err)
	return 2
}

// startup is the extender's configuration as read from its flags and environment.
type startup struct {
	set     *settings.Set
	cfg     config
	cluster cluster.Config
	tls     tlsreload.Config
	// tlsBound and agents[name].bound name each field by its variable and flag, for errors.
	tlsBound settings.Bound
	agents   map[string]agentSettings
	// registrations are the agents compiled in, sorted by name.
	registrations []framework.Registration
}

// agentSettings is one compiled-in agent's configuration, bound to its variables and flags.
type agentSettings struct {
	cfg   framework.Config
	bound settings.Bound
}

// parseSettings declares every setting (the server's, cluster access, TLS, and every compiled-in
// agent's, so that --help lists them all) and parses args and the environment. It returns
// flag.ErrHelp after printing the help.
func parseSettings(registrations []framework.Registration, args []string, getenv func(string) (string, bool), stderr io.Writer) (*startup, error) {
	var names []string
	for _, r := range registrations {
		names = append(names, r.Name)
	}
	fs := flag.NewFlagSet("extender", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: extender [flags]\n\nServes the kube-scheduler extender protocol for the agents compiled in: %s.\n"+
			"Each flag may also be set by the environment variable named in its help; a flag wins over its variable.\n\n"+
			"Other commands (each with -h):\n"+
			"  extender probe URL                      exec probe: exit 0 when URL answers 200\n"+
			"  extender explain [NAMESPACE/]POD        the pod's last scheduling cycle: verdicts, scores, what the agents saw\n"+
			"  extender config --agents safe,...       print a KubeSchedulerConfiguration calling the agents\n"+
			"  extender convert-policy FILE            convert a legacy Policy to KubeSchedulerConfiguration v1\n\nFlags:\n",
			strings.Join(names, ", "))
		fs.PrintDefaults()
	}
	st := &startup{set: settings.New(fs, getenv), tls: tlsreload.DefaultConfig(), agents: map[string]agentSettings{}, registrations: registrations}
	st.cfg.declare(st.set, names)
	st.cluster.Declare(st.set)
	st.tlsBound = st.set.Bind(&st.tls)
	for _, r := range registrations {
		c := r.NewConfig()
		st.agents[r.Name] = agentSettings{cfg: c, bound: st.set.Bind(c)}
	}
	err := st.set.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, err
	}
	// Every bad setting at once, of the extender and of every agent compiled in: those that do
	// not parse, and the values their Validate refuses (a value that does not parse leaves its
	// default, which Validate accepts, so nothing is reported twice).
	if err = errors.Join(err, st.cfg.validate(), st.tlsBound.Describe(st.tls.Validate()), st.validateAgents(names)); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (the extender takes flags only; its other commands: %s)",
			fs.Arg(0), strings.Join(slices.Sorted(maps.Keys(subcommands)), ", "))
	}
	return st, nil
}

// validateAgents checks AGENTS and every compiled-in agent's configuration, reporting every
// problem: a served agent's own file (pigeon's PIGEON_CONFIG) is read first, as it fills what no
// flag or variable set; an agent not served is checked on its flags and variables alone. The
// agents' constructors validate again (the one check in plugin mode).
func (st *startup) validateAgents(names []string) error {
	selected, err := selectAgents(st.cfg.agents, names)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("invalid AGENTS (or --agents): %w", err))
	}
	for _, r := range st.registrations {
		ac := st.agents[r.Name]
		if fc, ok := ac.cfg.(framework.FileConfig); ok && slices.Contains(selected, r.Name) {
			if err := fc.ApplyFile(st.set.Explicit); err != nil {
				errs = append(errs, fmt.Errorf("agent %s: %w", r.Name, err))
				continue
			}
		}
		errs = append(errs, ac.bound.Describe(ac.cfg.Validate()))
	}
	return errors.Join(errs...)
}

// tlsServer returns the TLS certificates' reloader, or nil when TLS is off. The TLS settings are
// validated once: by tlsreload.New when TLS is on, here otherwise.
func (st *startup) tlsServer(log logrus.FieldLogger) (*tlsreload.Reloader, error) {
	if !st.tls.Enabled() {
		return nil, st.tlsBound.Describe(st.tls.Validate())
	}
	r, err := tlsreload.New(st.tls, log.WithField("component", "tls"))
	if err != nil {
		return nil, st.tlsBound.Describe(err)
	}
	return r, nil
}

// buildAgents builds the agents AGENTS selects (each agent's constructor validates its
// configuration: the one check), and the combined priority when COMBINED_PRIORITIES asks for it.
func (st *startup) buildAgents(log logrus.FieldLogger, state *cluster.Cache, reg *prometheus.Registry) ([]framework.Agent, error) {
	var names []string
	for _, r := range st.registrations {
		names = append(names, r.Name)
	}
	selected, err := selectAgents(st.cfg.agents, names)
	if err != nil {
		return nil, fmt.Errorf("invalid AGENTS (or --agents): %w", err)
	}
	var agents []framework.Agent
	for _, r := range st.registrations {
		if !slices.Contains(selected, r.Name) {
			continue
		}
		ac := st.agents[r.Name] // validated, its file read, by parseSettings
		h := framework.Handle{Log: log.WithField("agent", r.Name), Metrics: reg}
		if state != nil {
			h = state.Handle(h, r.Name)
		}
		a, err := r.New(ac.cfg, h)
		if errors.Is(err, framework.ErrNoCluster) && !st.set.Explicit("AGENTS") && len(selected) > 1 {
			log.Warnf("agent %s left out: %v", r.Name, err)
			continue
		}
		var fe *settings.FieldError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("agent %s:\n%w", r.Name, ac.bound.Describe(err))
		}
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", r.Name, err)
		}
		agents = append(agents, a)
	}
	if strings.TrimSpace(st.cfg.combined) != "" {
		c, err := combine(agents, st.cfg.combined)
		if err != nil {
			return nil, fmt.Errorf("invalid COMBINED_PRIORITIES (or --combined-priorities): %w", err)
		}
		agents = append(agents, c)
	}
	return agents, nil
}

// serve listens, starts cluster access and the agents' background work, and serves handler
// until ctx ends.
func serve(ctx context.Context, st *startup, log *logrus.Logger, tlsServer *tlsreload.Reloader, state *cluster.Cache, agents []framework.Agent, handler http.Handler) int {
	ln, err := net.Listen("tcp", settings.ListenAddress(st.cfg.listen))
	if err != nil {
		log.Errorf("cannot listen (HTTP_PORT or --listen %q): %v", st.cfg.listen, err)
		return 1
	}
	mode := "plain HTTP"
	if tlsServer != nil {
		ln = tls.NewListener(ln, tlsServer.ServerConfig())
		go tlsServer.Run(ctx)
		mode = "HTTPS"
		if st.tls.ClientCAFile != "" {
			mode = "HTTPS, client certificates required"
		}
	}
	if st.cfg.pprof != "" {
		if err := servePprof(ctx, st.cfg.pprof, log); err != nil {
			log.Error(err)
			return 1
		}
	}
	if state != nil {
		stopCluster := state.Start(ctx)
		defer stopCluster()
	}
	for _, a := range agents {
		if s, ok := a.(framework.Starter); ok {
			if err := s.Start(ctx); err != nil {
				log.Errorf("agent %s: cannot start: %v", a.Name(), err)
				return 1
			}
		}
	}
	var served []string
	for _, a := range agents {
		served = append(served, a.Name())
	}
	log.WithFields(logrus.Fields{"version": version, "address": ln.Addr().String(), "agents": strings.Join(served, ","),
		"cluster": state != nil, "tls": mode}).Info("extender serving")
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

// subcommands are the extender's other commands: extender <name> [flags] [arguments].
var subcommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"probe":          probe,
	"explain":        explain,
	"config":         generateConfig,
	"convert-policy": convertPolicy,
}

// combine builds the agent serving priorities/combined from the list spec (see
// framework.ParseWeighted) over the functions of agents.
func combine(agents []framework.Agent, spec string) (framework.Agent, error) {
	parts, err := framework.ParseWeighted(spec)
	if err != nil {
		return nil, err
	}
	return framework.Combine(agents, parts)
}

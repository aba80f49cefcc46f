// Package server is the HTTP layer of the extender: it serves the kube-scheduler extender
// protocol (k8s.io/kube-scheduler/extender/v1) for any set of framework.Agent values, and knows
// nothing of any particular agent.
//
// Routes (compatible with deployments of the original design):
//
//	POST /scheduler/predicates/<filter>     ExtenderArgs -> ExtenderFilterResult
//	POST /scheduler/priorities/<priority>   ExtenderArgs -> HostPriorityList
//	POST /scheduler/<alias>                 the function that declares the alias (Filter.Aliases,
//	                                        Prioritizer.Aliases), as its own route
//	POST /scheduler/bind                    ExtenderBindingArgs -> ExtenderBindingResult (the agent that
//	                                        implements framework.Binder, else "not supported")
//	POST /scheduler/preemption              ExtenderPreemptionArgs -> ExtenderPreemptionResult (the
//	                                        candidates every framework.Preempter keeps; all without one)
//	GET  /version (the version, the agents and each agent's routes), /healthz, /readyz, /metrics
//	GET  /debug/decisions[?pod=<ns>/<name>]  the last decisions (Options.Decisions)
package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// DefaultMaxBodyBytes bounds a request body: enough for 5000 full Node objects of ~12 KiB.
const DefaultMaxBodyBytes = 64 << 20

// Options configures the handler returned by New.
type Options struct {
	// Version is served at /version.
	Version string
	// MaxBodyBytes bounds request bodies; larger ones get 413. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Lookup resolves node names for nodeCacheCapable requests. Nil means the extender runs
	// without cluster access: such requests are answered with an error.
	Lookup framework.NodeLookup
	// Ready reports readiness at /readyz (for example: caches synced). Nil means always ready.
	Ready func() bool
	// Log receives one line per request at debug level, bodies at trace level, and errors.
	Log *logrus.Logger
	// Registry receives the extender's metrics and is served at /metrics. Nil: a new registry.
	Registry *prometheus.Registry
	// Decisions is how many of the last filter and prioritize decisions GET /debug/decisions
	// shows (over loopback or to a verified client certificate only), and how much of the
	// agents' inputs they keep (validated); Kept zero keeps none and does not serve the route.
	Decisions decisions.Config
}

// New returns the handler that serves agents. It fails when two functions of the same kind share
// a name, when a name is empty, or when a function is nil.
func New(agents []framework.Agent, opts Options) (http.Handler, error) {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	m, err := newMetrics(opts.Registry)
	if err != nil {
		return nil, err
	}
	s := &srv{opts: opts, metrics: m}
	if opts.Decisions.Kept > 0 {
		s.decisions = decisions.New(opts.Decisions)
	}

	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", req.Method, req.URL.Path))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", req.Method, req.URL.Path))
	})

	filters, priorities := map[string]string{}, map[string]string{}
	// aliases: the verbs claimed by aliases, so that no two functions, and no fixed route, share one.
	aliases := map[string]string{"bind": "the extender", "preemption": "the extender"}
	var names []string
	// routes lists each agent's routes at /version, where deployments and tests read them.
	routes := map[string][]string{}
	for _, a := range agents {
		names = append(names, a.Name())
		routes[a.Name()] = []string{}
		for _, f := range a.Filters() {
			if err := claim(filters, "filter", a.Name(), f.Name, f.Func == nil); err != nil {
				return nil, err
			}
			h := s.verb(a.Name(), f.Name, "filter", s.filter(f.Func, decisions.ExplainerOf(a, f.Name, "filter")))
			for _, verb := range append([]string{"predicates/" + f.Name}, f.Aliases...) {
				if verb != "predicates/"+f.Name {
					if err := claimAlias(aliases, a.Name(), "filter", f.Name, verb); err != nil {
						return nil, err
					}
				}
				r.Handle("/scheduler/"+verb, h).Methods(http.MethodPost)
				routes[a.Name()] = append(routes[a.Name()], "/scheduler/"+verb)
			}
		}
		for _, p := range a.Prioritizers() {
			if err := claim(priorities, "prioritizer", a.Name(), p.Name, p.Func == nil); err != nil {
				return nil, err
			}
			h := s.verb(a.Name(), p.Name, "prioritize", s.prioritize(p.Func, decisions.ExplainerOf(a, p.Name, "prioritize")))
			for _, verb := range append([]string{"priorities/" + p.Name}, p.Aliases...) {
				if verb != "priorities/"+p.Name {
					if err := claimAlias(aliases, a.Name(), "prioritizer", p.Name, verb); err != nil {
						return nil, err
					}
				}
				r.Handle("/scheduler/"+verb, h).Methods(http.MethodPost)
				routes[a.Name()] = append(routes[a.Name()], "/scheduler/"+verb)
			}
		}
	}
	sort.Strings(names)
	binder, err := findBinder(agents)
	if err != nil {
		return nil, err
	}
	s.preempters = findPreempters(agents)
	r.Handle("/scheduler/bind", s.verb(binder.agent, "bind", "bind", s.bind(binder.b))).Methods(http.MethodPost)
	r.Handle("/scheduler/preemption", s.verb("", "preemption", "preempt", http.HandlerFunc(s.preempt))).Methods(http.MethodPost)

	version, _ := json.Marshal(map[string]any{"version": opts.Version, "agents": names, "routes": routes})
	r.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, http.StatusOK, append(version, '\n'))
	}).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok\n")
	}).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if opts.Ready != nil && !opts.Ready() {
			writeText(w, http.StatusServiceUnavailable, "not ready: cluster caches have not synced\n")
			return
		}
		writeText(w, http.StatusOK, "ok\n")
	}).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/metrics", promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{})).Methods(http.MethodGet)
	if s.decisions != nil {
		r.HandleFunc("/debug/decisions", s.serveDecisions).Methods(http.MethodGet)
	}

	// The outermost layer turns a panic anywhere below, routing included, into a 500.
	return recoverPanics(opts.Log, r), nil
}

func claim(seen map[string]string, kind, agent, name string, nilFunc bool) error {
	switch {
	case name == "":
		return fmt.Errorf("agent %q: a %s has an empty name", agent, kind)
	case nilFunc:
		return fmt.Errorf("agent %q: %s %q has no function", agent, kind, name)
	case seen[name] != "":
		return fmt.Errorf("agent %q: %s %q is already served by agent %q", agent, kind, name, seen[name])
	}
	seen[name] = agent
	return nil
}

// claimAlias records that verb (a path under /scheduler/) is an alias of agent's function, or
// says why it cannot be: empty, a path of its own kind (predicates/, priorities/, a slash at
// either end), or already taken.
func claimAlias(seen map[string]string, agent, kind, name, verb string) error {
	switch {
	case verb == "" || strings.HasPrefix(verb, "/") || strings.HasSuffix(verb, "/") ||
		strings.HasPrefix(verb, "predicates/") || strings.HasPrefix(verb, "priorities/"):
		return fmt.Errorf("agent %q: %s %q: alias %q is not a verb (a path under /scheduler/, outside predicates/ and priorities/)", agent, kind, name, verb)
	case seen[verb] != "":
		return fmt.Errorf("agent %q: %s %q: alias %q is already served by %s", agent, kind, name, verb, seen[verb])
	}
	seen[verb] = fmt.Sprintf("agent %q", agent)
	return nil
}

// srv holds what the verb handlers share.
type srv struct {
	opts    Options
	metrics *metrics
	// decisions keeps the last decisions; nil when Options.Decisions.Kept is zero.
	decisions *decisions.Log
	// preempters are the agents that judge preemption candidates, in the agents' order.
	preempters []namedPreempter
}

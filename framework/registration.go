package framework

import (
	"fmt"
	"slices"
)

// Config is an agent's configuration: a struct whose fields carry the tags that bind them to
// environment variables and flags (package settings: env, flag, help) and to JSON (json, in
// camelCase, for a scheduler's pluginConfig args). Every duration is a Duration. Validate is the
// only check of its values, run once per configuration, by the agent's constructor; it reports
// every bad field as a settings.FieldError named by its JSON name, so that each program can name
// the field the way its users set it.
type Config interface {
	Validate() error
}

// Offer is what an agent offers, known without building it: the names of its functions (its
// routes /scheduler/predicates/<name> and /scheduler/priorities/<name> in the extender, its
// plugins' names in kube-scheduler), how the shipped deployments call it (package
// internal/deploygen/schedconfig writes yamlfiles/extender.*.yaml from it) and what it needs of
// the cluster. The agent New builds offers
// exactly these functions, whatever its configuration: Registration.New checks it.
type Offer struct {
	// Filters names the agent's filter functions, in the order Agent.Filters returns them.
	Filters []string
	// Prioritizers names its prioritize functions with the weight the shipped deployments give
	// each in the scheduler's extenders list (1..), in the order Agent.Prioritizers returns them.
	Prioritizers []Weighted
	// Bind and Preempt: the agent serves the bind verb (when configured to: a Binder) and the
	// preemption verb (a Preempter).
	Bind, Preempt bool
	// Port is the port the agent's sidecar listens on in the shipped deployments; one per agent.
	Port int
	// ManagedResources names extended resources that the agent's pods request and no node has
	// (TAS's telemetry/scheduling): the shipped deployments list them in the extender's
	// managedResources with ignoredByScheduler, so that the scheduler neither counts them nor
	// calls the extender for pods that request none of them.
	ManagedResources []string
	// WholeCluster: the agent's functions may read the whole cluster while judging a pod
	// (Cluster.Nodes or Cluster.Pods, or PodsChanges: pigeon's objective over every node, gang's
	// room for a group), so that a placement on one node may move its answers on any other.
	// Plugin mode then signs no pod for kube-scheduler's opportunistic batching through the
	// agent's plugins; an agent that does not say so is signed for from the scheduler's start
	// (its backlog too), and reading the whole cluster all the same is a defect the adapter logs
	// and then refuses to sign.
	WholeCluster bool
	// Cluster is what the agent needs of the cluster beyond the scheduler's request: the shipped
	// deployments and the tests that compare its two modes read it, so that no list of agents by
	// name says it.
	Cluster ClusterNeed
}

// ClusterNeed is what an agent needs of the cluster beyond the scheduler's request.
type ClusterNeed int

const (
	// ClusterNodesAndPods (the default): the agent reads nodes and pods through Handle.Cluster
	// (the extender's cache, the scheduler's snapshot in plugin mode); its shipped sidecar has
	// cluster access and a node cache (nodeCacheCapable: true).
	ClusterNodesAndPods ClusterNeed = iota
	// ClusterNone: the agent judges from the scheduler's request alone (whole Node objects); it
	// ships without cluster access (nodeCacheCapable: false, clusterAccess: none).
	ClusterNone
	// ClusterInformers: the agent also answers from what it watches beyond a snapshot of nodes
	// and pods (pod events, PodGroups, TASPolicies), so its two modes are compared end to end
	// against a real API server (e2e/plugins_test.go), not over a static cluster
	// (scheduler/adapter's TestAgentsAnswerAsTheExtender).
	ClusterInformers
)

// Registration is what a program needs to know of an agent to offer it: its name (also its
// build tag), what it offers, a fresh configuration holding every default, and its constructor.
// Programs keep an ordinary list of Registrations: the extender's build-tagged files add to it,
// one each; package agents lists them all.
type Registration struct {
	Name string
	Offer
	// NewConfig returns a pointer to a new configuration holding every default, ready to be
	// filled by settings or JSON.
	NewConfig func() Config
	// New builds the agent from a configuration NewConfig returned (the agent's constructor
	// validates it), and checks that the agent offers the functions Offer names.
	New func(cfg Config, h Handle) (Agent, error)
}

// Register returns the Registration of the agent called name, offering offer, whose
// configuration type is C (defaultConfig returning every default) and whose constructor is
// newAgent. It is the one place where the agent's typed configuration meets the untyped list:
// newAgent receives exactly what NewConfig made.
func Register[C any, P interface {
	*C
	Config
}, A Agent](name string, defaultConfig func() C, newAgent func(C, Handle) (A, error), offer Offer) Registration {
	return Registration{
		Name:      name,
		Offer:     offer,
		NewConfig: func() Config { c := defaultConfig(); return P(&c) },
		New: func(cfg Config, h Handle) (Agent, error) {
			a, err := newAgent(*cfg.(P), h)
			if err != nil {
				return nil, err
			}
			if err := offer.check(a); err != nil {
				return nil, fmt.Errorf("agent %s: %w", name, err)
			}
			return a, nil
		},
	}
}

// PrioritizerNames returns the names of the prioritize functions.
func (o Offer) PrioritizerNames() []string {
	out := make([]string, len(o.Prioritizers))
	for i, p := range o.Prioritizers {
		out[i] = p.Name
	}
	return out
}

// check reports an agent whose functions are not the ones offered.
func (o Offer) check(a Agent) error {
	var filters, prioritizers []string
	for _, f := range a.Filters() {
		filters = append(filters, f.Name)
	}
	for _, p := range a.Prioritizers() {
		prioritizers = append(prioritizers, p.Name)
	}
	if !slices.Equal(filters, o.Filters) || !slices.Equal(prioritizers, o.PrioritizerNames()) {
		return fmt.Errorf("offers filters %q and prioritizers %q, its Registration names filters %q and prioritizers %q",
			filters, prioritizers, o.Filters, o.PrioritizerNames())
	}
	return nil
}

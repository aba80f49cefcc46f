// Package schedconfig writes kube-scheduler configuration for the extender: the extenders list
// (and sidecar containers) of the shipped deployments for a choice of agents (Generate), and the
// v1 KubeSchedulerConfiguration equivalent of a legacy Policy file (Convert).
//
// It does not import k8s.io/kubernetes: the few structs of KubeSchedulerConfiguration v1 and of
// the legacy Policy it needs are its own, and YAML is written with sigs.k8s.io/yaml.
package schedconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Call is one entry an agent needs in the scheduler's extenders list.
type Call struct {
	FilterVerb     string
	PrioritizeVerb string
	Weight         int64
	// BindVerb and PreemptVerb: the agent binds pods (at most one extender may) and judges
	// preemption candidates.
	BindVerb, PreemptVerb string
	// HoldOnError: a failing filter holds pods back (ignorable: false written out) rather than
	// letting them through.
	HoldOnError bool
	// ManagedResources: the scheduler calls the extender only for pods that request one of
	// these extended resources.
	ManagedResources []ManagedResource
}

// Agent is how the shipped deployments (yamlfiles/extender.*.yaml) run one agent: its sidecar
// port and its entries in the extenders list.
type Agent struct {
	Name  string
	Port  int
	Calls []Call
	// BindEnv, for an agent that may bind (a Call has a BindVerb), is the environment variable
	// that turns its binding on: the sidecar answers every bind "binding is not supported"
	// unless it is "true".
	BindEnv string
}

// Table returns how the shipped deployments run each agent of regs, in order, derived from its
// framework.Offer (the agents are listed nowhere else): the agent's port; one entry in the
// extenders list per function, except that the i-th filter and the i-th prioritizer share one
// (safe-overload, template-label with template-score), weighted as the Offer says; the bind and
// preemption verbs on the first entry. An entry with a filter, bind or preemption verb holds
// pods back when it fails (ignorable: false): a filter that cannot judge must not let pods
// through. A prioritizer alone stays ignorable, as kube-scheduler ignores its failures anyway.
func Table(regs []framework.Registration) []Agent {
	out := make([]Agent, 0, len(regs))
	for _, r := range regs {
		a := Agent{Name: r.Name, Port: r.Port}
		if r.Bind {
			a.BindEnv = bindVariable(r)
		}
		for i := range max(len(r.Filters), len(r.Prioritizers)) {
			var c Call
			if i < len(r.Filters) {
				c.FilterVerb = "predicates/" + r.Filters[i]
			}
			if i < len(r.Prioritizers) {
				c.PrioritizeVerb, c.Weight = "priorities/"+r.Prioritizers[i].Name, r.Prioritizers[i].Weight
			}
			if i == 0 && r.Bind {
				c.BindVerb = "bind"
			}
			if i == 0 && r.Preempt {
				c.PreemptVerb = "preemption"
			}
			if i == 0 {
				for _, name := range r.ManagedResources {
					c.ManagedResources = append(c.ManagedResources, ManagedResource{Name: name, IgnoredByScheduler: true})
				}
			}
			c.HoldOnError = holds(c)
			a.Calls = append(a.Calls, c)
		}
		out = append(out, a)
	}
	return out
}

// holds reports whether a failure of the entry c must hold pods back (ignorable: false): it
// filters, binds or judges preemption.
func holds(c Call) bool { return c.FilterVerb != "" || c.BindVerb != "" || c.PreemptVerb != "" }

// bindVariable returns the environment variable of the setting that turns r's binding on: the
// one of its configuration whose JSON name is "bind" (the chart's agents.<name>.settings.bind),
// "" when it has none.
func bindVariable(r framework.Registration) string {
	if r.NewConfig == nil {
		return ""
	}
	for _, f := range settings.Fields(r.NewConfig()) {
		if f.Name == "bind" {
			return f.Env
		}
	}
	return ""
}

// binds reports whether an entry of a has a bind verb.
func binds(a Agent) bool {
	return slices.ContainsFunc(a.Calls, func(c Call) bool { return c.BindVerb != "" })
}

// names lists the agents of a table.
func names(table []Agent) []string {
	var out []string
	for _, a := range table {
		out = append(out, a.Name)
	}
	return out
}

// Paths of the TLS files in the shipped mutual-TLS deployment (yamlfiles/extender.safe.mtls.yaml).
const (
	SchedulerTLSDir  = "/etc/kubernetes/my-scheduler-tls" // the scheduler's client certificate (Secret my-scheduler-client-tls)
	ExtenderTLSDir   = "/etc/extender-tls"                // the extender's serving certificate (Secret my-scheduler-extender-tls)
	ProbeTLSDir      = "/etc/my-scheduler-tls"            // the client certificate, in the sidecar, for its probes
	ClientSecretName = "my-scheduler-client-tls"
	ServerSecretName = "my-scheduler-extender-tls"
)

// DefaultSchedulerName is the profile's scheduler name when none is given, that of the shipped
// yamlfiles; LeaseNamespace is where the generated scheduler's Lease lives: the namespace of
// their Deployment and of the Role (yamlfiles/service-account.yaml) that lets it update a Lease
// of its own name.
const (
	DefaultSchedulerName = "my-scheduler"
	LeaseNamespace       = "kube-system"
)

// ownLease is the leader election of a scheduler whose profile is schedulerName, as the shipped
// files and the chart write it: on, with a Lease of that name. Left out, kube-scheduler would
// lead on kube-system/kube-scheduler, the Lease the default scheduler holds, and whichever
// holds it schedules while the other waits (system:kube-scheduler may update that Lease).
func ownLease(schedulerName string) *LeaderElection {
	return &LeaderElection{LeaderElect: true, ResourceNamespace: LeaseNamespace, ResourceName: schedulerName}
}

// Options choose what Generate writes.
type Options struct {
	// Agents to call, in the order given.
	Agents []string
	// NodeCache sets nodeCacheCapable: the scheduler sends node names only and the extender
	// reads nodes from its own cache (it needs cluster access).
	NodeCache bool
	// HTTPS calls the extenders over mutual TLS, as yamlfiles/extender.safe.mtls.yaml does.
	HTTPS bool
	// SchedulerName is the profile's scheduler name (default my-scheduler), and the name of
	// the scheduler's Lease.
	SchedulerName string
	// Sidecars adds the sidecar containers to add to the scheduler's pod.
	Sidecars bool
	// Bind lets the agent that can bind pods (reward) bind them: its entry gets the bind verb
	// and, with Sidecars, its sidecar the variable that turns its binding on (BIND=true), as the
	// chart's agents.reward.settings.bind does both. Without Bind no bind verb is written and
	// kube-scheduler binds. One switch for both halves: a bind verb whose sidecar does not bind
	// fails every pod's binding ("binding is not supported"), and binding is the one verb whose
	// failure no pod survives. Without Sidecars the generator cannot set the variable, and the
	// output says in a comment that the sidecar needs it.
	Bind bool
	// Plugins writes plugin mode's configuration (kube-safe-scheduler, docs/plugin-mode.md)
	// instead: the agents' functions as the profile's plugins (PluginMode). NodeCache, HTTPS,
	// Sidecars and Bind are extender mode only.
	Plugins bool
}

// lookup returns the agents of table named, in order, or an error naming the unknown one.
func lookup(table []Agent, want []string) ([]Agent, error) {
	var out []Agent
	for _, n := range want {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		i := slices.IndexFunc(table, func(a Agent) bool { return a.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown agent %q (agents: %s)", n, strings.Join(names(table), ", "))
		}
		if !slices.ContainsFunc(out, func(a Agent) bool { return a.Name == n }) {
			out = append(out, table[i])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no agent given (agents: %s)", strings.Join(names(table), ", "))
	}
	return out, nil
}

// Generate returns the KubeSchedulerConfiguration calling the agents o names, among regs, as the
// shipped files do and, with Sidecars, a second YAML document listing the sidecar containers.
// In both modes the scheduler leads on a Lease of its own (ownLease), never the default
// scheduler's.
func Generate(regs []framework.Registration, o Options) ([]byte, error) {
	agents, err := lookup(Table(regs), o.Agents)
	if err != nil {
		return nil, err
	}
	name := o.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	if o.Plugins {
		var extenderOnly []string
		for flag, set := range map[string]bool{"node cache": o.NodeCache, "HTTPS": o.HTTPS, "sidecars": o.Sidecars, "bind": o.Bind} {
			if set {
				extenderOnly = append(extenderOnly, flag)
			}
		}
		if len(extenderOnly) > 0 {
			slices.Sort(extenderOnly)
			return nil, fmt.Errorf("%s: extender mode only (plugin mode has no extender and no sidecar)", strings.Join(extenderOnly, ", "))
		}
		return marshal(KubeSchedulerConfiguration{APIVersion: APIVersion, Kind: Kind, LeaderElection: ownLease(name),
			Profiles: []Profile{PluginProfile(name, agents)}})
	}
	// The agents that can bind: at most one may, and only when o.Bind turns it on (see Bind).
	var binders []Agent
	for _, a := range agents {
		if binds(a) {
			binders = append(binders, a)
		}
	}
	var header []string
	switch {
	case o.Bind && len(binders) == 0:
		var all []string
		for _, a := range Table(regs) {
			if binds(a) {
				all = append(all, a.Name)
			}
		}
		return nil, fmt.Errorf("no agent of %s binds pods (bind needs one of: %s)", strings.Join(names(agents), ", "), strings.Join(all, ", "))
	case o.Bind && len(binders) > 1:
		return nil, fmt.Errorf("%s all bind pods: at most one extender may bind", strings.Join(names(binders), ", "))
	case o.Bind && binders[0].BindEnv == "":
		return nil, fmt.Errorf("%s binds, but its configuration has no bind setting to turn it on", binders[0].Name)
	case o.Bind && !o.Sidecars:
		header = []string{
			fmt.Sprintf("# bindVerb: the %s sidecar must run with %s=true, or it answers every bind", binders[0].Name, binders[0].BindEnv),
			"# \"binding is not supported\" and no pod of " + name + " is bound (--sidecars writes it).",
		}
	case !o.Bind && len(binders) > 0:
		header = []string{
			fmt.Sprintf("# No bindVerb: kube-scheduler binds. %s can bind pods itself (a failed bind then counts", binders[0].Name),
			fmt.Sprintf("# against the node): --bind writes its bindVerb, and with --sidecars %s=true in its sidecar.", binders[0].BindEnv),
		}
	}
	cfg := KubeSchedulerConfiguration{
		APIVersion: APIVersion, Kind: Kind,
		LeaderElection: ownLease(name),
		Profiles:       []Profile{{SchedulerName: name}},
	}
	scheme := "http"
	if o.HTTPS {
		scheme = "https"
	}
	for _, a := range agents {
		for _, c := range a.Calls {
			if !o.Bind {
				c.BindVerb = ""
				c.HoldOnError = holds(c)
			}
			e := Extender{
				URLPrefix:        fmt.Sprintf("%s://localhost:%d/scheduler", scheme, a.Port),
				FilterVerb:       c.FilterVerb,
				PrioritizeVerb:   c.PrioritizeVerb,
				Weight:           c.Weight,
				BindVerb:         c.BindVerb,
				PreemptVerb:      c.PreemptVerb,
				NodeCacheCapable: o.NodeCache,
				ManagedResources: c.ManagedResources,
				HTTPTimeout:      "5s",
			}
			if c.HoldOnError {
				f := false
				e.Ignorable = &f
			}
			if o.HTTPS {
				e.EnableHTTPS = true
				e.TLSConfig = &TLSConfig{CertFile: SchedulerTLSDir + "/tls.crt", KeyFile: SchedulerTLSDir + "/tls.key", CAFile: SchedulerTLSDir + "/ca.crt"}
			}
			cfg.Extenders = append(cfg.Extenders, e)
		}
	}
	out, err := marshal(cfg)
	if err != nil {
		return nil, err
	}
	if len(header) > 0 {
		out = append([]byte(strings.Join(header, "\n")+"\n"), out...)
	}
	if !o.Sidecars {
		return out, nil
	}
	var containers []map[string]any
	for _, a := range agents {
		containers = append(containers, sidecar(a, o.HTTPS, o.Bind && binds(a)))
	}
	side, err := marshal(map[string]any{"containers": containers})
	if err != nil {
		return nil, err
	}
	note := "# The sidecar containers to add to the scheduler pod's spec.containers"
	if o.HTTPS {
		note += "; the pod needs the volumes\n# client-tls (Secret " + ClientSecretName + ") and extender-tls (Secret " + ServerSecretName + "),\n# as yamlfiles/extender.safe.mtls.yaml has them"
	}
	return append(append(out, []byte("---\n"+note+".\n")...), side...), nil
}

// PluginProfile is plugin mode's counterpart of the extenders list calling agents: what changes
// what the scheduler does in extender mode has its equivalent in the profile.
//   - Each function is a plugin of the same name, in the order of the extenders list, enabled
//     under multiPoint; a prioritizer's plugin has the extender's weight as its score weight
//     (the adapter scales the agent's 0..10 to 0..100, so the weight means the same).
//   - The extended resources an agent manages (managedResources, ignoredByScheduler) are the
//     ignoredResources of NodeResourcesFit: kube-scheduler sets those itself from the extenders;
//     with no extender, the profile must, or a pod requesting one (a TAS pod's
//     telemetry/scheduling: 1, which no node has) is "Insufficient" on every node.
//
// What has no counterpart, by design: ignorable (a plugin's error always fails the pod's cycle
// for a filter, and is skipped for a score, as a non-ignorable filter extender and any
// prioritizer), httpTimeout and TLS (no call), nodeCacheCapable (the plugins read the
// scheduler's own snapshot), and the managed resources' other effect, that the extender sees
// only the pods requesting one: a plugin sees every pod, so a pod labelled telemetry-policy
// that requests no telemetry/scheduling is judged by its policy in plugin mode and not in
// extender mode (nor by TAS).
func PluginProfile(schedulerName string, agents []Agent) Profile {
	p := Profile{SchedulerName: schedulerName, Plugins: &Plugins{}}
	var ignored []any
	for _, a := range agents {
		for _, c := range a.Calls {
			for _, verb := range []string{c.FilterVerb, c.PrioritizeVerb} {
				if verb == "" {
					continue
				}
				_, plugin, _ := strings.Cut(verb, "/")
				var w int64
				if verb == c.PrioritizeVerb {
					w = c.Weight
				}
				i := slices.IndexFunc(p.Plugins.MultiPoint.Enabled, func(e Plugin) bool { return e.Name == plugin })
				if i < 0 {
					p.Plugins.MultiPoint.Enabled = append(p.Plugins.MultiPoint.Enabled, Plugin{Name: plugin, Weight: w})
				} else if w > 0 {
					p.Plugins.MultiPoint.Enabled[i].Weight = w
				}
			}
			for _, r := range c.ManagedResources {
				if r.IgnoredByScheduler && !slices.Contains(ignored, any(r.Name)) {
					ignored = append(ignored, r.Name)
				}
			}
		}
	}
	if len(ignored) > 0 {
		p.PluginConfig = []PluginConfig{{Name: "NodeResourcesFit", Args: map[string]any{"ignoredResources": ignored}}}
	}
	return p
}

// sidecar is the container of one agent, listening on 127.0.0.1 with exec probes; bind turns
// the agent's binding on (its bind verb is in the extenders list).
func sidecar(a Agent, https, bind bool) map[string]any {
	port := strconv.Itoa(a.Port)
	env := []map[string]any{
		{"name": "HTTP_PORT", "value": "127.0.0.1:" + port},
		{"name": "AGENTS", "value": a.Name},
		{"name": "LOG_LEVEL", "value": "INFO"},
	}
	if bind {
		env = append(env, map[string]any{"name": a.BindEnv, "value": "true"})
	}
	probe := func(path string) []string {
		return []string{"/extender", "probe", "http://127.0.0.1:" + port + path}
	}
	c := map[string]any{
		"name":            a.Name,
		"image":           "kube-sched-ext-" + a.Name + ":latest",
		"imagePullPolicy": "IfNotPresent",
		"ports":           []map[string]any{{"name": a.Name, "containerPort": a.Port}},
	}
	if https {
		env = append(env,
			map[string]any{"name": "TLS_CERT_FILE", "value": ExtenderTLSDir + "/tls.crt"},
			map[string]any{"name": "TLS_KEY_FILE", "value": ExtenderTLSDir + "/tls.key"},
			map[string]any{"name": "TLS_CLIENT_CA_FILE", "value": ExtenderTLSDir + "/ca.crt"},
			map[string]any{"name": "TLS_ALLOWED_CLIENTS", "value": "my-scheduler"},
		)
		probe = func(path string) []string {
			return []string{"/extender", "probe", "--ca-file=" + ExtenderTLSDir + "/ca.crt",
				"--cert-file=" + ProbeTLSDir + "/tls.crt", "--key-file=" + ProbeTLSDir + "/tls.key",
				"https://127.0.0.1:" + port + path}
		}
		c["volumeMounts"] = []map[string]any{
			{"name": "extender-tls", "mountPath": ExtenderTLSDir, "readOnly": true},
			{"name": "client-tls", "mountPath": ProbeTLSDir, "readOnly": true},
		}
	}
	c["env"] = env
	c["livenessProbe"] = map[string]any{"exec": map[string]any{"command": probe("/healthz")}, "timeoutSeconds": 3, "periodSeconds": 10, "failureThreshold": 3}
	c["readinessProbe"] = map[string]any{"exec": map[string]any{"command": probe("/readyz")}, "timeoutSeconds": 3, "periodSeconds": 5}
	c["securityContext"] = map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
		"capabilities": map[string]any{"drop": []string{"ALL"}}}
	return c
}

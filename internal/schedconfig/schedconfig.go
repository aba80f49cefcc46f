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
}

// Agents is the one table of the agents' ports and calls; the shipped yaml files agree with it
// (TestShippedFilesMatchTable).
var Agents = []Agent{
	{Name: "safe", Port: 5401, Calls: []Call{
		{FilterVerb: "predicates/safe-overload", PrioritizeVerb: "priorities/safe-overload", Weight: 2, HoldOnError: true},
		{PrioritizeVerb: "priorities/safe-balance", Weight: 1},
	}},
	{Name: "congestion", Port: 5402, Calls: []Call{
		{PrioritizeVerb: "priorities/congestion", Weight: 1},
	}},
	{Name: "pigeon", Port: 5403, Calls: []Call{
		{PrioritizeVerb: "priorities/pigeon-holing", Weight: 2},
	}},
	{Name: "template", Port: 5404, Calls: []Call{
		{FilterVerb: "predicates/template-label", PrioritizeVerb: "priorities/template-score", Weight: 1, HoldOnError: true},
	}},
	{Name: "telemetry", Port: 5405, Calls: []Call{
		// TAS pods request telemetry/scheduling: 1, a resource no node has; TAS's configuration
		// lists it, so that the scheduler does not count it and calls the extender for them.
		{FilterVerb: "predicates/telemetry-policy", PrioritizeVerb: "priorities/telemetry-policy", Weight: 1, HoldOnError: true,
			ManagedResources: []ManagedResource{{Name: "telemetry/scheduling", IgnoredByScheduler: true}}},
	}},
	{Name: "reward", Port: 5407, Calls: []Call{
		{PrioritizeVerb: "priorities/reward", Weight: 2, BindVerb: "bind", PreemptVerb: "preemption", HoldOnError: true},
	}},
	{Name: "gang", Port: 5406, Calls: []Call{
		{FilterVerb: "predicates/gang", HoldOnError: true},
	}},
}

// AgentNames lists the agents of the table.
func AgentNames() []string {
	var out []string
	for _, a := range Agents {
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

// Options choose what Generate writes.
type Options struct {
	// Agents to call, in the order given.
	Agents []string
	// NodeCache sets nodeCacheCapable: the scheduler sends node names only and the extender
	// reads nodes from its own cache (it needs cluster access).
	NodeCache bool
	// HTTPS calls the extenders over mutual TLS, as yamlfiles/extender.safe.mtls.yaml does.
	HTTPS bool
	// SchedulerName is the profile's scheduler name (default my-scheduler).
	SchedulerName string
	// Sidecars adds the sidecar containers to add to the scheduler's pod.
	Sidecars bool
}

// lookup returns the agents named, in order, or an error naming the unknown one.
func lookup(names []string) ([]Agent, error) {
	var out []Agent
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		i := slices.IndexFunc(Agents, func(a Agent) bool { return a.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown agent %q (agents: %s)", n, strings.Join(AgentNames(), ", "))
		}
		if !slices.ContainsFunc(out, func(a Agent) bool { return a.Name == n }) {
			out = append(out, Agents[i])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no agent given (agents: %s)", strings.Join(AgentNames(), ", "))
	}
	return out, nil
}

// Generate returns the KubeSchedulerConfiguration calling the agents as the shipped files do
// and, with Sidecars, a second YAML document listing the sidecar containers.
func Generate(o Options) ([]byte, error) {
	agents, err := lookup(o.Agents)
	if err != nil {
		return nil, err
	}
	name := o.SchedulerName
	if name == "" {
		name = "my-scheduler"
	}
	cfg := KubeSchedulerConfiguration{
		APIVersion: APIVersion, Kind: Kind,
		Profiles: []Profile{{SchedulerName: name}},
	}
	scheme := "http"
	if o.HTTPS {
		scheme = "https"
	}
	for _, a := range agents {
		for _, c := range a.Calls {
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
	if !o.Sidecars {
		return out, nil
	}
	var containers []map[string]any
	for _, a := range agents {
		containers = append(containers, sidecar(a, o.HTTPS))
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

// sidecar is the container of one agent, listening on 127.0.0.1 with exec probes.
func sidecar(a Agent, https bool) map[string]any {
	port := strconv.Itoa(a.Port)
	env := []map[string]any{
		{"name": "HTTP_PORT", "value": "127.0.0.1:" + port},
		{"name": "AGENTS", "value": a.Name},
		{"name": "LOG_LEVEL", "value": "INFO"},
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

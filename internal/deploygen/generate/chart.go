package generate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kube-safe-scheduler/extender/agents"
	"github.com/kube-safe-scheduler/extender/internal/deploygen/schedconfig"
	"github.com/kube-safe-scheduler/extender/settings"
)

// The chart's knowledge of the agents comes from the code: files/agents.json (ports, extender
// calls, plugin-mode plugins, each setting's environment variable) and values.schema.json (each
// setting by its Config field's JSON name, with its type, default and help), the agents entries
// of values.yaml and the plugin matcher of the plugin-mode alert.

// Paths of the chart's generated files, from the repository root.
const (
	chartDir   = "charts/kube-safe-scheduler"
	chartFiles = chartDir + "/files"
)

type chartSetting struct {
	Env     string `json:"env"`
	Type    string `json:"type"`
	Default any    `json:"default"`
	Help    string `json:"help"`
	// Range and Choices are what the Config declares (settings.Fields): the schema carries them,
	// so that the chart refuses what the agent's Validate refuses.
	Range    *settings.Interval `json:"-"`
	Choices  []string           `json:"-"`
	Duration bool               `json:"-"`
}

type chartCall struct {
	FilterVerb     string `json:"filterVerb,omitempty"`
	PrioritizeVerb string `json:"prioritizeVerb,omitempty"`
	Weight         int64  `json:"weight,omitempty"`
	BindVerb       string `json:"bindVerb,omitempty"`
	PreemptVerb    string `json:"preemptVerb,omitempty"`
	Ignorable      bool   `json:"ignorable"`
	// ManagedResources are extended resources the scheduler leaves to the extender (TAS's
	// telemetry/scheduling), each ignoredByScheduler.
	ManagedResources []string `json:"managedResources,omitempty"`
}

type chartPlugin struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}

type chartAgent struct {
	// Order is the agent's place in agents.All, the order the scheduler calls the agents
	// (kss.order).
	Order int         `json:"order"`
	Port  int         `json:"port"`
	Calls []chartCall `json:"calls"`
	// Plugins are the plugin-mode plugins the agent's functions become, ArgsPlugin the one
	// whose pluginConfig carries the agent's settings.
	Plugins    []chartPlugin           `json:"plugins"`
	ArgsPlugin string                  `json:"argsPlugin,omitempty"`
	Settings   map[string]chartSetting `json:"settings"`
}

var durationType = reflect.TypeOf(time.Duration(0))

// settingsOf reads the settings of a Config struct: fields with json and env tags, with the
// ranges and choices settings.Fields reads from their declarations.
func settingsOf(v reflect.Value, out map[string]chartSetting) error {
	declared := map[string]settings.Field{}
	for _, f := range settings.Fields(v.Interface()) {
		declared[f.Name] = f
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := settingsOf(v.Field(i), out); err != nil {
				return err
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		env := f.Tag.Get("env")
		if name == "" || name == "-" || env == "" {
			continue
		}
		s := chartSetting{Env: env, Help: f.Tag.Get("help"), Range: declared[name].Range, Choices: declared[name].Choices}
		fv := v.Field(i)
		switch {
		case f.Type.ConvertibleTo(durationType) && f.Type.Kind() == reflect.Int64:
			s.Type, s.Default, s.Duration = "string", time.Duration(fv.Int()).String(), true
		default:
			switch f.Type.Kind() {
			case reflect.Int, reflect.Int32, reflect.Int64:
				s.Type, s.Default = "integer", fv.Int()
			case reflect.Float64, reflect.Float32:
				s.Type, s.Default = "number", fv.Float()
			case reflect.Bool:
				s.Type, s.Default = "boolean", fv.Bool()
			case reflect.String:
				s.Type, s.Default = "string", fv.String()
			default:
				return fmt.Errorf("setting %s (%s): type %s has no chart form", name, env, f.Type)
			}
		}
		out[name] = s
	}
	return nil
}

// managed returns the names of rs.
func managed(rs []schedconfig.ManagedResource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func chartAgents() (map[string]chartAgent, error) {
	out := map[string]chartAgent{}
	for i, a := range schedconfig.Table(agents.All) {
		ca := chartAgent{Order: i, Port: a.Port, Settings: map[string]chartSetting{}}
		seen := map[string]bool{}
		plugin := func(verb string, w int64) {
			name := verb[strings.Index(verb, "/")+1:]
			if seen[name] {
				for i := range ca.Plugins {
					if ca.Plugins[i].Name == name && w > 0 {
						ca.Plugins[i].Weight = w
					}
				}
				return
			}
			seen[name] = true
			ca.Plugins = append(ca.Plugins, chartPlugin{Name: name, Weight: w})
		}
		for _, c := range a.Calls {
			ca.Calls = append(ca.Calls, chartCall{FilterVerb: c.FilterVerb, PrioritizeVerb: c.PrioritizeVerb, Weight: c.Weight,
				BindVerb: c.BindVerb, PreemptVerb: c.PreemptVerb, Ignorable: !c.HoldOnError, ManagedResources: managed(c.ManagedResources)})
			if c.FilterVerb != "" {
				plugin(c.FilterVerb, 0)
			}
			if c.PrioritizeVerb != "" {
				plugin(c.PrioritizeVerb, c.Weight)
			}
		}
		if a.Name == "gang" {
			// Plugin mode places gangs with the pod-group plugin (scheduler/gangplugin), not the
			// extender's filter; the agent's settings are the extender's only.
			ca.Plugins = []chartPlugin{{Name: "pod-group"}}
		} else {
			ca.ArgsPlugin = ca.Plugins[0].Name
		}
		for _, r := range agents.All {
			if r.Name == a.Name {
				if err := settingsOf(reflect.ValueOf(r.NewConfig()).Elem(), ca.Settings); err != nil {
					return nil, fmt.Errorf("agent %s: %w", r.Name, err)
				}
			}
		}
		out[a.Name] = ca
	}
	if len(out) != len(agents.All) {
		return nil, fmt.Errorf("schedconfig.Table has %d agents, agents.All %d", len(out), len(agents.All))
	}
	return out, nil
}

// goDuration matches what time.ParseDuration reads without a sign (no setting takes a negative
// duration): 30s, 1h30m, 1.5h, 0.
const goDuration = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$`

// settingSchema is one agent setting's schema: its type, default and help, and what the Config
// declares it accepts: a number's range (minimum, maximum, exclusive where the interval is
// open), a typed enum's choices. A duration's range cannot be written in JSON Schema (a string):
// its pattern keeps it a duration, and the agent's Validate judges its bounds at start.
func settingSchema(s chartSetting) map[string]any {
	m := map[string]any{"type": s.Type, "default": s.Default, "description": s.Help + " (" + s.Env + ")"}
	switch r := s.Range; {
	case s.Duration:
		m["pattern"] = goDuration
	case r != nil:
		if r.MinOpen {
			m["exclusiveMinimum"] = r.Min
		} else {
			m["minimum"] = r.Min
		}
		if r.MaxOpen {
			m["exclusiveMaximum"] = r.Max
		} else {
			m["maximum"] = r.Max
		}
	}
	if s.Choices != nil {
		m["enum"] = s.Choices
	}
	return m
}

// schema is values.schema.json: the chart's own values and each agent's settings.
func schema(ag map[string]chartAgent) map[string]any {
	obj := func(props map[string]any, required ...string) map[string]any {
		m := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
		if len(required) > 0 {
			m["required"] = required
		}
		return m
	}
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	k8s := func(desc string) map[string]any { return map[string]any{"type": "object", "description": desc} }
	agentProps := map[string]any{}
	var names []string
	for name, a := range ag {
		names = append(names, name)
		settings := map[string]any{}
		for k, s := range a.Settings {
			settings[k] = settingSchema(s)
		}
		agentProps[name] = obj(map[string]any{
			"enabled":          map[string]any{"type": "boolean", "description": "run the " + name + " agent"},
			"image":            str("the agent's image (extender mode); default kube-sched-ext-" + name + ":<chart appVersion>"),
			"resources":        k8s("the sidecar's resources"),
			"nodeCacheCapable": map[string]any{"type": "boolean", "description": "extender mode: the scheduler sends node names only and the sidecar reads nodes from its cache (needs cluster access)"},
			"clusterAccess":    map[string]any{"type": "string", "enum": []string{"", "auto", "none"}, "description": "extender mode: the sidecar's CLUSTER_ACCESS (empty: unset, auto)"},
			"settings":         obj(settings),
		})
	}
	return map[string]any{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"title":   "kube-safe-scheduler values (generated by " + Program + " from the agents' Config types)",
		"type":    "object", "additionalProperties": false,
		"properties": map[string]any{
			"mode":            map[string]any{"type": "string", "enum": []string{"extender", "plugin"}, "description": "extender: kube-scheduler with the agents as sidecars; plugin: kube-safe-scheduler with the agents compiled in"},
			"schedulerName":   str("the profile's schedulerName pods ask for"),
			"replicas":        map[string]any{"type": "integer", "minimum": 1},
			"scoringStrategy": map[string]any{"type": "string", "enum": []string{"", "LeastAllocated", "MostAllocated"}, "description": "kube-scheduler's NodeResourcesFit scoring beside the agents (empty: its default, LeastAllocated); MostAllocated for pigeon's packing objectives"},
			"logLevel":        map[string]any{"type": "string", "enum": []string{"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "ALERT"}},
			"verbosity":       map[string]any{"type": "integer", "minimum": 0, "description": "the scheduler's --v"},
			"leaderElection": obj(map[string]any{
				"enabled":      map[string]any{"type": "boolean"},
				"resourceName": str("the Lease's name; default the scheduler name"),
			}),
			"images": obj(map[string]any{
				"registry":        map[string]any{"type": "string", "pattern": "^([^/:@\\s]+(:[0-9]+)?(/[^/:@\\s]+)*/?)?$", "description": "prefix of this project's images: <registry>/<name>:<tag> (empty: none)"},
				"tag":             map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_.-]*$", "description": "tag of this project's images (empty: the chart's appVersion)"},
				"scheduler":       str("kube-scheduler's image (extender mode), a full reference: never prefixed"),
				"pluginScheduler": str("kube-safe-scheduler's image (plugin mode): a name, prefixed by registry and tagged with tag, or a reference with a tag or digest, used as it is"),
				"nodeAnnotator":   str("the node annotator's image: a name, prefixed by registry and tagged with tag, or a reference with a tag or digest"),
				"pullPolicy":      map[string]any{"type": "string", "enum": []string{"Always", "IfNotPresent", "Never"}},
			}),
			"agents": obj(agentProps),
			"tls":    obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "serverSecret": str("Secret with the extenders' serving tls.crt, tls.key and the client CA ca.crt"), "clientSecret": str("Secret with the scheduler's client tls.crt, tls.key and the extenders' CA ca.crt (mutual TLS)"), "allowedClients": str("TLS_ALLOWED_CLIENTS"), "minVersion": map[string]any{"type": "string", "enum": []string{"", "1.2", "1.3"}, "description": "TLS_MIN_VERSION (empty: the extender's default)"}}),
			"combined": obj(map[string]any{
				"enabled":   map[string]any{"type": "boolean", "description": "extender mode: one sidecar serves every enabled agent and the scheduler calls priorities/combined; plugin mode: the agents plugin runs every enabled agent's functions in one pass"},
				"image":     str("the sidecar's image; default kube-sched-ext-all:<chart appVersion>"),
				"resources": k8s("the sidecar's resources"),
			}),
			"plugin": obj(map[string]any{
				"podGroupArgs": obj(map[string]any{
					"defaultScheduleTimeoutSeconds": map[string]any{"type": "integer", "minimum": 1, "maximum": 900, "description": "Permit wait of a group that sets none, seconds"},
					"podGroupBackoffSeconds":        map[string]any{"type": "integer", "minimum": 0, "description": "how long a group that found no room stays out (0: 1 s doubling to 10 s)"},
					"podGroupRejectPercentage":      map[string]any{"type": "integer", "minimum": 0, "maximum": 100, "description": "keep a group's waiting members while at most this percentage of its minimum is missing"},
				}),
				"quorumProfile": str("plugin mode: a second profile of this name with the gang plugin (quorum) in place of pod-group; empty: none"),
				"decisionsKept": map[string]any{"type": "integer", "minimum": 0, "maximum": 100000, "description": "plugin mode: DECISIONS_KEPT, the plugins' last decisions kept for extender explain --scheduler (0: none)"},
			}),
			"nodeAnnotator": obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "env": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": []string{"string", "number", "boolean"}}, "description": "the annotator's settings, by environment variable (annotator/README.md); numbers and booleans are written as strings"}, "resources": k8s(""),
				"learner": obj(map[string]any{"enabled": map[string]any{"type": "boolean", "description": "run the usage learner (USAGE_LEARNER) and grant its RBAC"},
					"namespace": str("namespace of the learner's ConfigMaps and Lease (USAGE_NAMESPACE; empty: the release's)"),
					"object":    str("name of the learner's Lease and ConfigMaps <object>-0.. (USAGE_OBJECT)")})}),
			"crds":              obj(map[string]any{"podGroup": map[string]any{"type": "boolean"}, "tasPolicy": map[string]any{"type": "boolean"}}),
			"alerts":            obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "labels": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}}),
			"dashboard":         obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "labels": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}}),
			"resources":         k8s("the scheduler container's resources"),
			"nodeSelector":      map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
			"tolerations":       map[string]any{"type": "array"},
			"affinity":          k8s(""),
			"priorityClassName": str(""),
			"descheduler": obj(map[string]any{
				"enabled":             map[string]any{"type": "boolean", "description": "run kubernetes-sigs/descheduler with a policy rendered from these values (docs/operations.md)"},
				"image":               str("the descheduler's image"),
				"podLabelSelector":    map[string]any{"type": []string{"object", "null"}, "description": "the pods it may evict (DefaultEvictor's labelSelector); null: those labelled kube-safe-scheduler.io/scheduler=<schedulerName>; {}: any pod"},
				"excludeNamespaces":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "namespaces whose pods it never evicts"},
				"interval":            map[string]any{"type": "string", "pattern": "^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$", "description": "--descheduling-interval, a duration (30s, 2m)"},
				"maxEvictionsPerNode": map[string]any{"type": "integer", "minimum": 1, "description": "maxNoOfPodsToEvictPerNode: evictions from one node per run"},
				"verbosity":           map[string]any{"type": "integer", "minimum": 0, "description": "the descheduler's --v"},
				"resources":           k8s("the descheduler container's resources"),
				"lowNodeUtilization": obj(map[string]any{
					"enabled":       map[string]any{"type": "boolean", "description": "LowNodeUtilization on actual usage, thresholds from safe's utilization threshold"},
					"source":        map[string]any{"type": "string", "enum": []string{"", "Prometheus", "KubernetesMetrics"}, "description": "where actual usage comes from (empty: Prometheus when prometheusURL is set, else KubernetesMetrics)"},
					"prometheusURL": str("Prometheus's URL (source Prometheus)"),
					"query":         str("PromQL: each node's usage as a fraction 0..1, labelled instance=<node name> (source Prometheus)"),
					"gap":           map[string]any{"type": "integer", "minimum": 0, "maximum": 100, "description": "a node below safe's utilization threshold minus gap, percent, has room for evicted pods"},
				}),
			}),
		},
		"required": []string{"mode", "agents"},
	}
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// defaultAgent is the agent the chart enables by default: the first of agents.All (safe).
var defaultAgent = agents.All[0].Name

// Markers around the generated agents entries of values.yaml.
const (
	beginValues = "  # generated by make generate from agents.All (" + Program + "): one entry per agent, in call order\n"
	endValues   = "  # end generated\n"
)

// values returns values.yaml with its agents entries, one per agent of agents.All, in order.
func values(root string) ([]byte, error) {
	path := chartDir + "/values.yaml"
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i, j := strings.Index(s, beginValues), strings.Index(s, endValues)
	if i < 0 || j < i {
		return nil, fmt.Errorf("%s: no %q ... %q block", path, beginValues, endValues)
	}
	var b strings.Builder
	b.WriteString(s[:i+len(beginValues)])
	for _, r := range agents.All {
		fmt.Fprintf(&b, `  %s:
    enabled: %t
    image: ""
    resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 512Mi}}
    nodeCacheCapable: true
    clusterAccess: ""
    settings: {}
`, r.Name, r.Name == defaultAgent)
	}
	b.WriteString(s[j:])
	return []byte(b.String()), nil
}

// alertPlugins matches the plugin matcher of the plugin-mode alert in alerts.rules.yaml.
var alertPlugins = regexp.MustCompile(`plugin=~"[^"]*"`)

// alertRules returns alerts.rules.yaml with its plugin matcher naming every plugin of ag (in
// call order), the agents plugin (scheduler/adapter) and the pod-group plugins of
// scheduler/gangplugin.
func alertRules(root string, ag map[string]chartAgent) ([]byte, error) {
	path := chartFiles + "/alerts.rules.yaml"
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	if n := len(alertPlugins.FindAll(data, -1)); n != 1 {
		return nil, fmt.Errorf("%s: want one plugin=~ matcher, found %d", path, n)
	}
	var names []string
	for _, r := range agents.All {
		for _, f := range r.Filters {
			names = append(names, f)
		}
		for _, p := range r.Prioritizers {
			names = append(names, p.Name)
		}
		for _, p := range ag[r.Name].Plugins {
			names = append(names, p.Name)
		}
	}
	// agents: scheduler/adapter's CombinedName, the plugin that runs several agent functions.
	names = append(names, "agents", "pod-group", "group-priority")
	var uniq []string
	for _, n := range names {
		if !slices.Contains(uniq, n) {
			uniq = append(uniq, n)
		}
	}
	return alertPlugins.ReplaceAll(data, []byte(`plugin=~"`+strings.Join(uniq, "|")+`"`)), nil
}

// Chart is the plan of the chart's files that come from the code, read against the repository
// at root (the hand-written parts of values.yaml and alerts.rules.yaml).
func Chart(root string) (Plan, error) {
	p := newPlan()
	ag, err := chartAgents()
	if err != nil {
		return p, err
	}
	if p.Write[chartFiles+"/agents.json"], err = marshal(ag); err != nil {
		return p, err
	}
	if p.Write[chartDir+"/values.schema.json"], err = marshal(schema(ag)); err != nil {
		return p, err
	}
	if p.Write[chartDir+"/values.yaml"], err = values(root); err != nil {
		return p, err
	}
	if p.Write[chartFiles+"/alerts.rules.yaml"], err = alertRules(root, ag); err != nil {
		return p, err
	}
	return p, nil
}

package schedconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Policy is the legacy scheduler Policy (kind Policy, apiVersion v1, read through
// --policy-config-file or algorithmSource.policy), removed in Kubernetes 1.23.
type Policy struct {
	Kind                           string           `json:"kind"`
	APIVersion                     string           `json:"apiVersion"`
	Predicates                     []NamedPolicy    `json:"predicates"`
	Priorities                     []NamedPolicy    `json:"priorities"`
	Extenders                      []LegacyExtender `json:"extenders"`
	HardPodAffinitySymmetricWeight *int32           `json:"hardPodAffinitySymmetricWeight"`
	AlwaysCheckAllPredicates       bool             `json:"alwaysCheckAllPredicates"`
}

// NamedPolicy is a predicate or a priority of a Policy.
type NamedPolicy struct {
	Name     string          `json:"name"`
	Weight   int64           `json:"weight"`
	Argument json.RawMessage `json:"argument"`
}

// LegacyExtender is an extender of a Policy.
type LegacyExtender struct {
	URLPrefix        string            `json:"urlPrefix"`
	FilterVerb       string            `json:"filterVerb"`
	PreemptVerb      string            `json:"preemptVerb"`
	PrioritizeVerb   string            `json:"prioritizeVerb"`
	Weight           int64             `json:"weight"`
	BindVerb         string            `json:"bindVerb"`
	EnableHTTPS      bool              `json:"enableHttps"`
	TLSConfig        *TLSConfig        `json:"tlsConfig"`
	HTTPTimeout      legacyDuration    `json:"httpTimeout"`
	NodeCacheCapable bool              `json:"nodeCacheCapable"`
	ManagedResources []ManagedResource `json:"managedResources"`
	Ignorable        bool              `json:"ignorable"`
}

// legacyDuration is the Policy's httpTimeout: a Go time.Duration, so a number of nanoseconds in
// JSON; a duration string ("5s") is accepted too.
type legacyDuration time.Duration

func (d *legacyDuration) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*d = legacyDuration(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("httpTimeout %s is neither nanoseconds nor a duration string", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("httpTimeout: %v", err)
	}
	*d = legacyDuration(v)
	return nil
}

// known JSON field names of each Policy level, to report the others (encoding/json matches
// names without regard to case, as the scheduler's decoder did).
var (
	policyFields    = []string{"kind", "apiversion", "predicates", "priorities", "extenders", "hardpodaffinitysymmetricweight", "alwayscheckallpredicates"}
	extenderFields  = []string{"urlprefix", "filterverb", "preemptverb", "prioritizeverb", "weight", "bindverb", "enablehttps", "tlsconfig", "httptimeout", "nodecachecapable", "managedresources", "ignorable"}
	tlsFields       = []string{"insecure", "servername", "certfile", "keyfile", "cafile", "certdata", "keydata", "cadata"}
	resourceFields  = []string{"name", "ignoredbyscheduler"}
	namedFields     = []string{"name", "weight", "argument"}
	predicateFields = []string{"name", "argument"}
)

func unknownFields(where string, v any, known []string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for k := range m {
		if !slices.Contains(known, strings.ToLower(k)) {
			out = append(out, fmt.Sprintf("%s%s is not a field of a legacy Policy: ignored (it has no v1 equivalent)", where, k))
		}
	}
	slices.Sort(out)
	return out
}

// Convert reads a legacy Policy (JSON or YAML) and returns the v1 KubeSchedulerConfiguration
// equivalent, with notes on everything that has no place in it (the predicates and priorities
// lists, with the v1 plugins to use instead; unknown fields). It fails on a Policy the scheduler
// would have rejected (a prioritizing extender without weight, two binders, no urlPrefix).
//
// A Policy names no scheduler (that was kube-scheduler's --scheduler-name): the output's profile
// is DefaultSchedulerName's, leading on a Lease of that name (ownLease), as `extender config`
// writes it, and a comment at its top says to rename both. Left without a profile and a
// leaderElection, the converted scheduler would serve the pods of default-scheduler and lead on
// kube-system/kube-scheduler: both the default scheduler's.
func Convert(data []byte) (out []byte, notes []string, err error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not JSON or YAML: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(j, &raw); err != nil || raw == nil {
		return nil, nil, errors.New("not a Policy: the document is not an object")
	}
	var p Policy
	if err := json.Unmarshal(j, &p); err != nil {
		return nil, nil, fmt.Errorf("not a Policy: %v", err)
	}
	if p.Kind != "Policy" {
		return nil, nil, fmt.Errorf("not a Policy: kind %q (want Policy)", p.Kind)
	}
	if p.APIVersion != "" && p.APIVersion != "v1" {
		notes = append(notes, fmt.Sprintf("apiVersion %q: read as the v1 Policy", p.APIVersion))
	}
	notes = append(notes, unknownFields("", raw, policyFields)...)
	rawExts, _ := raw["extenders"].([]any)
	for i, re := range rawExts {
		where := fmt.Sprintf("extenders[%d].", i)
		notes = append(notes, unknownFields(where, re, extenderFields)...)
		if m, ok := re.(map[string]any); ok {
			for k, v := range m {
				switch strings.ToLower(k) {
				case "tlsconfig":
					notes = append(notes, unknownFields(where+k+".", v, tlsFields)...)
				case "managedresources":
					rs, _ := v.([]any)
					for ri, r := range rs {
						notes = append(notes, unknownFields(fmt.Sprintf("%s%s[%d].", where, k, ri), r, resourceFields)...)
					}
				}
			}
		}
	}
	for _, list := range []struct {
		key    string
		fields []string
	}{{"predicates", predicateFields}, {"priorities", namedFields}} {
		items, _ := raw[list.key].([]any)
		for i, it := range items {
			notes = append(notes, unknownFields(fmt.Sprintf("%s[%d].", list.key, i), it, list.fields)...)
		}
	}

	cfg := KubeSchedulerConfiguration{APIVersion: APIVersion, Kind: Kind, LeaderElection: ownLease(DefaultSchedulerName),
		Profiles: []Profile{{SchedulerName: DefaultSchedulerName}}}
	var errs []error
	binders := 0
	for i, le := range p.Extenders {
		where := fmt.Sprintf("extenders[%d] (%s)", i, le.URLPrefix)
		if le.URLPrefix == "" {
			errs = append(errs, fmt.Errorf("extenders[%d]: no urlPrefix", i))
		}
		if le.PrioritizeVerb != "" && le.Weight <= 0 {
			errs = append(errs, fmt.Errorf("%s: prioritizeVerb %q with weight %d: the weight must be positive", where, le.PrioritizeVerb, le.Weight))
		}
		if le.BindVerb != "" {
			binders++
		}
		if le.FilterVerb == "" && le.PrioritizeVerb == "" && le.PreemptVerb == "" && le.BindVerb == "" {
			notes = append(notes, where+": no verb: the scheduler never calls it")
		}
		if le.TLSConfig != nil && !le.EnableHTTPS && !strings.HasPrefix(le.URLPrefix, "https:") {
			notes = append(notes, where+": tlsConfig without enableHttps: the scheduler does not use it (kept as is)")
		}
		e := Extender{
			URLPrefix: le.URLPrefix, FilterVerb: le.FilterVerb, PreemptVerb: le.PreemptVerb, PrioritizeVerb: le.PrioritizeVerb,
			Weight: le.Weight, BindVerb: le.BindVerb, EnableHTTPS: le.EnableHTTPS, TLSConfig: le.TLSConfig,
			NodeCacheCapable: le.NodeCacheCapable, ManagedResources: le.ManagedResources,
		}
		if le.HTTPTimeout != 0 {
			e.HTTPTimeout = time.Duration(le.HTTPTimeout).String()
		}
		if le.Ignorable {
			t := true
			e.Ignorable = &t
		}
		cfg.Extenders = append(cfg.Extenders, e)
	}
	if binders > 1 {
		errs = append(errs, fmt.Errorf("%d extenders set bindVerb: at most one may bind", binders))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, notes, err
	}

	if p.Predicates != nil {
		notes = append(notes, "predicates: a Policy's list replaced the default filters; a v1 profile runs the default plugins "+
			"unless profiles[].plugins disables them: the list has no v1 equivalent, each entry's plugin follows")
	}
	for _, pr := range p.Predicates {
		notes = append(notes, "predicate "+pr.Name+": "+advice(predicatePlugins, pr.Name, "filter", 0, pr.Argument))
	}
	if p.Priorities != nil {
		notes = append(notes, "priorities: a Policy's list replaced the default scores; in v1 each is a score plugin with a weight "+
			"(profiles[].plugins.score.enabled[].weight): the list has no v1 equivalent, each entry's plugin follows")
	}
	for _, pr := range p.Priorities {
		notes = append(notes, fmt.Sprintf("priority %s (weight %d): %s", pr.Name, pr.Weight, advice(priorityPlugins, pr.Name, "score", pr.Weight, pr.Argument)))
	}
	if p.AlwaysCheckAllPredicates {
		notes = append(notes, "alwaysCheckAllPredicates: no v1 equivalent (removed): filters stop at the first that fails a node")
	}
	if p.HardPodAffinitySymmetricWeight != nil {
		cfg.Profiles[0].PluginConfig = []PluginConfig{{
			Name: "InterPodAffinity", Args: map[string]any{"hardPodAffinityWeight": *p.HardPodAffinitySymmetricWeight},
		}}
		notes = append(notes, fmt.Sprintf("hardPodAffinitySymmetricWeight %d: written as the InterPodAffinity args hardPodAffinityWeight "+
			"of the profile %s", *p.HardPodAffinitySymmetricWeight, DefaultSchedulerName))
	}
	out, err = marshal(cfg)
	if err != nil {
		return nil, notes, err
	}
	header := fmt.Sprintf("# A Policy names no scheduler: this one serves the pods of schedulerName %[1]s and leads on\n"+
		"# its own Lease, %[2]s/%[1]s, not the default scheduler's (%[2]s/kube-scheduler).\n"+
		"# Give profiles[0].schedulerName and leaderElection.resourceName your scheduler's name.\n", DefaultSchedulerName, LeaseNamespace)
	return append([]byte(header), out...), notes, nil
}

// mapping is where a legacy predicate or priority went in v1.
type mapping struct {
	plugins []string
	note    string // how to configure it, or why nothing replaces it
}

// advice tells what replaces a predicate or priority named name.
func advice(table map[string]mapping, name, point string, weight int64, arg json.RawMessage) string {
	m, ok := table[name]
	if !ok {
		return "unknown to this converter: find its plugin in the kube-scheduler documentation (Scheduling Framework plugins)"
	}
	var b strings.Builder
	if len(m.plugins) == 0 {
		b.WriteString("no v1 plugin replaces it")
	} else {
		fmt.Fprintf(&b, "use the plugin %s (%s", strings.Join(m.plugins, ", "), point)
		if point == "score" {
			fmt.Fprintf(&b, ", weight %d", weight)
		}
		b.WriteString("; enabled by default)")
	}
	if m.note != "" {
		b.WriteString(": " + m.note)
	}
	if len(arg) > 0 && string(arg) != "null" {
		fmt.Fprintf(&b, "; its argument %s has no direct v1 form: see the plugin's args in profiles[].pluginConfig", arg)
	}
	return b.String()
}

var predicatePlugins = map[string]mapping{
	"PodFitsResources":                {plugins: []string{"NodeResourcesFit"}},
	"PodFitsHostPorts":                {plugins: []string{"NodePorts"}},
	"PodFitsPorts":                    {plugins: []string{"NodePorts"}},
	"HostName":                        {plugins: []string{"NodeName"}},
	"MatchNodeSelector":               {plugins: []string{"NodeAffinity"}},
	"GeneralPredicates":               {plugins: []string{"NodeResourcesFit", "NodePorts", "NodeName", "NodeAffinity"}},
	"NoDiskConflict":                  {plugins: []string{"VolumeRestrictions"}},
	"NoVolumeZoneConflict":            {plugins: []string{"VolumeZone"}},
	"NoVolumeNodeConflict":            {plugins: []string{"VolumeBinding"}},
	"CheckVolumeBinding":              {plugins: []string{"VolumeBinding"}},
	"PodToleratesNodeTaints":          {plugins: []string{"TaintToleration"}},
	"PodToleratesNodeNoExecuteTaints": {plugins: []string{"TaintToleration"}},
	"CheckNodeUnschedulable":          {plugins: []string{"NodeUnschedulable"}},
	"MatchInterPodAffinity":           {plugins: []string{"InterPodAffinity"}},
	"MaxEBSVolumeCount":               {plugins: []string{"NodeVolumeLimits"}},
	"MaxGCEPDVolumeCount":             {plugins: []string{"NodeVolumeLimits"}},
	"MaxAzureDiskVolumeCount":         {plugins: []string{"NodeVolumeLimits"}},
	"MaxCinderVolumeCount":            {plugins: []string{"NodeVolumeLimits"}},
	"MaxCSIVolumeCountPred":           {plugins: []string{"NodeVolumeLimits"}},
	"EvenPodsSpread":                  {plugins: []string{"PodTopologySpread"}},
	"CheckNodeCondition":              {plugins: []string{"TaintToleration"}, note: "node conditions are taints now (node.kubernetes.io/not-ready, ...)"},
	"CheckNodeMemoryPressure":         {plugins: []string{"TaintToleration"}, note: "memory pressure is the taint node.kubernetes.io/memory-pressure"},
	"CheckNodeDiskPressure":           {plugins: []string{"TaintToleration"}, note: "disk pressure is the taint node.kubernetes.io/disk-pressure"},
	"CheckNodePIDPressure":            {plugins: []string{"TaintToleration"}, note: "PID pressure is the taint node.kubernetes.io/pid-pressure"},
	"CheckNodeLabelPresence":          {note: "the NodeLabel plugin was removed; require labels with node affinity (NodeAffinity, addedAffinity in its args)"},
	"CheckServiceAffinity":            {note: "the ServiceAffinity plugin was removed; use pod affinity (InterPodAffinity)"},
}

var priorityPlugins = map[string]mapping{
	"LeastRequestedPriority":           {plugins: []string{"NodeResourcesFit"}, note: "scoringStrategy type LeastAllocated (the default) in its args"},
	"MostRequestedPriority":            {plugins: []string{"NodeResourcesFit"}, note: "scoringStrategy type MostAllocated in its args"},
	"RequestedToCapacityRatioPriority": {plugins: []string{"NodeResourcesFit"}, note: "scoringStrategy type RequestedToCapacityRatio in its args"},
	"BalancedResourceAllocation":       {plugins: []string{"NodeResourcesBalancedAllocation"}},
	"SelectorSpreadPriority":           {plugins: []string{"PodTopologySpread"}, note: "its default constraints spread pods of a service or controller"},
	"ServiceSpreadingPriority":         {plugins: []string{"PodTopologySpread"}, note: "its default constraints spread pods of a service"},
	"EvenPodsSpreadPriority":           {plugins: []string{"PodTopologySpread"}},
	"InterPodAffinityPriority":         {plugins: []string{"InterPodAffinity"}},
	"NodeAffinityPriority":             {plugins: []string{"NodeAffinity"}},
	"TaintTolerationPriority":          {plugins: []string{"TaintToleration"}},
	"ImageLocalityPriority":            {plugins: []string{"ImageLocality"}},
	"NodePreferAvoidPodsPriority":      {note: "the NodePreferAvoidPods plugin was removed with its node annotation"},
	"ResourceLimitsPriority":           {note: "removed; no plugin scores resource limits"},
	"NodeLabelPriority":                {note: "the NodeLabel plugin was removed; prefer labels with preferred node affinity (NodeAffinity)"},
	"EqualPriority":                    {note: "it scored every node the same: drop it"},
}

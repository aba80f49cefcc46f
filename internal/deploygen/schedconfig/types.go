package schedconfig

import "sigs.k8s.io/yaml"

// APIVersion and Kind of the configuration written.
const (
	APIVersion = "kubescheduler.config.k8s.io/v1"
	Kind       = "KubeSchedulerConfiguration"
)

// KubeSchedulerConfiguration is the part of kubescheduler.config.k8s.io/v1 written here.
type KubeSchedulerConfiguration struct {
	APIVersion     string          `json:"apiVersion"`
	Kind           string          `json:"kind"`
	LeaderElection *LeaderElection `json:"leaderElection,omitempty"`
	Profiles       []Profile       `json:"profiles,omitempty"`
	Extenders      []Extender      `json:"extenders,omitempty"`
}

// LeaderElection is the scheduler's leader election (v1 LeaderElectionConfiguration, the fields
// written here). Without it kube-scheduler takes the Lease kube-system/kube-scheduler, the
// default scheduler's.
type LeaderElection struct {
	LeaderElect       bool   `json:"leaderElect"`
	ResourceNamespace string `json:"resourceNamespace"`
	ResourceName      string `json:"resourceName"`
}

// Profile is a scheduling profile.
type Profile struct {
	SchedulerName string         `json:"schedulerName"`
	Plugins       *Plugins       `json:"plugins,omitempty"`
	PluginConfig  []PluginConfig `json:"pluginConfig,omitempty"`
}

// Plugins are a profile's plugins; only multiPoint is written (it enables every extension point
// a plugin has).
type Plugins struct {
	MultiPoint PluginSet `json:"multiPoint"`
}

// PluginSet lists plugins to enable.
type PluginSet struct {
	Enabled []Plugin `json:"enabled,omitempty"`
}

// Plugin is one enabled plugin; Weight is its score weight (0: the default, 1).
type Plugin struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}

// PluginConfig gives one plugin's arguments.
type PluginConfig struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// Extender is one entry of extenders (v1 Extender).
type Extender struct {
	URLPrefix        string            `json:"urlPrefix"`
	FilterVerb       string            `json:"filterVerb,omitempty"`
	PreemptVerb      string            `json:"preemptVerb,omitempty"`
	PrioritizeVerb   string            `json:"prioritizeVerb,omitempty"`
	Weight           int64             `json:"weight,omitempty"`
	BindVerb         string            `json:"bindVerb,omitempty"`
	EnableHTTPS      bool              `json:"enableHTTPS,omitempty"`
	TLSConfig        *TLSConfig        `json:"tlsConfig,omitempty"`
	HTTPTimeout      string            `json:"httpTimeout,omitempty"`
	NodeCacheCapable bool              `json:"nodeCacheCapable"`
	ManagedResources []ManagedResource `json:"managedResources,omitempty"`
	Ignorable        *bool             `json:"ignorable,omitempty"`
}

// TLSConfig is an extender's client TLS (v1 ExtenderTLSConfig; the legacy Policy's is the same).
type TLSConfig struct {
	Insecure   bool   `json:"insecure,omitempty"`
	ServerName string `json:"serverName,omitempty"`
	CertFile   string `json:"certFile,omitempty"`
	KeyFile    string `json:"keyFile,omitempty"`
	CAFile     string `json:"caFile,omitempty"`
	// The *Data fields are PEM, base64 in JSON, as in both APIs.
	CertData []byte `json:"certData,omitempty"`
	KeyData  []byte `json:"keyData,omitempty"`
	CAData   []byte `json:"caData,omitempty"`
}

// ManagedResource is an extended resource an extender manages.
type ManagedResource struct {
	Name               string `json:"name"`
	IgnoredByScheduler bool   `json:"ignoredByScheduler,omitempty"`
}

func marshal(v any) ([]byte, error) { return yaml.Marshal(v) }

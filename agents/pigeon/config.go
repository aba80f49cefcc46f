package pigeon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kube-safe-scheduler/extender/settings"
)

// Objective is a placement policy: the cluster-wide quantity the agent minimizes.
type Objective string

// The objectives (POLICY_OBJECTIVE).
const (
	// ABinpack is adaptive bin packing: make the variation of node utilizations match the
	// variation of pod demands.
	ABinpack Objective = "A_BINPACK"
	// LoadBalance minimizes the spread of the prime resource's utilization over the nodes.
	LoadBalance Objective = "LOAD_BALANCE"
	// Consolidate maximizes the distance of the prime utilizations from their mean, pushing
	// nodes towards empty or full (the original design's objective).
	Consolidate Objective = "CONSOLIDATE"
	// FewestNodes minimizes the number of nodes in use (running a pod), leaving the order among
	// the nodes in use to the scheduler's MostAllocated.
	FewestNodes Objective = "FEWEST_NODES"
)

// objectiveNames lists the objectives in the order shown to users.
var objectiveNames = settings.Names(ABinpack, LoadBalance, Consolidate, FewestNodes)

// Choices implements settings.Chooser.
func (Objective) Choices() []string { return objectiveNames }

// The environment variables of the settings; each also has a kebab-case flag (see Config).
const (
	EnvNumResources  = "NUM_RESOURCES"
	EnvObjective     = "POLICY_OBJECTIVE"
	EnvResourceIndex = "POLICY_RESOURCE_INDEX"
	EnvGPUResource   = "PIGEON_GPU_RESOURCE"
	EnvConfigFile    = "PIGEON_CONFIG"
)

// Config holds the agent's settings (tags: see settings.Bind and template.Config).
// DefaultConfig holds the defaults; Validate checks them together.
type Config struct {
	// NumResources is n: the agent considers the first n of cpu, memory, pods, gpu,
	// ephemeral-storage (1..5).
	NumResources int `json:"numResources" range:"[1,5]" env:"NUM_RESOURCES" flag:"num-resources" help:"number of resources considered, the first n of cpu, memory, pods, gpu, ephemeral-storage (1..5)"`
	// Objective is the policy.
	Objective Objective `json:"policyObjective" env:"POLICY_OBJECTIVE" flag:"policy-objective" help:"placement objective of the pigeon-holing priority, one of A_BINPACK, LOAD_BALANCE, CONSOLIDATE, FEWEST_NODES"`
	// ResourceIndex is the prime resource of LOAD_BALANCE and CONSOLIDATE, 0..n-1.
	ResourceIndex int `json:"policyResourceIndex" range:"[0,4]" env:"POLICY_RESOURCE_INDEX" flag:"policy-resource-index" help:"prime resource of LOAD_BALANCE and CONSOLIDATE, an index below NUM_RESOURCES (0 cpu, 1 memory, 2 pods, 3 gpu, 4 ephemeral-storage)"`
	// GPUResource is the extended resource counted as gpu.
	GPUResource string `json:"gpuResource" env:"PIGEON_GPU_RESOURCE" flag:"pigeon-gpu-resource" help:"extended resource counted as the gpu resource"`
	// ConfigFile is the original's pigeon.cfg, read by ApplyFile (default none).
	ConfigFile string `json:"configFile,omitempty" env:"PIGEON_CONFIG" flag:"pigeon-config" help:"pigeon.cfg file of key = value lines (policyObjective, policyResourceIndex, numResources); a setting given by flag or variable wins over the file"`

	// origin tells, by JSON field, the file line a value came from, for messages.
	origin map[string]string
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{NumResources: 2, Objective: ABinpack, ResourceIndex: 0, GPUResource: "nvidia.com/gpu"}
}

// UnmarshalText reads an objective's name, in any case (POLICY_OBJECTIVE, pluginConfig args).
func (o *Objective) UnmarshalText(text []byte) error {
	v, ok := parseObjective(string(text))
	if !ok {
		return fmt.Errorf("%q is not one of %s", text, strings.Join(objectiveNames, ", "))
	}
	*o = v
	return nil
}

func checkResourceName(v string) error {
	if errs := validation.IsQualifiedName(v); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid resource name: %s", v, strings.Join(errs, "; "))
	}
	return nil
}

// configFileSetting names PIGEON_CONFIG in the file's errors, as package settings names settings.
const configFileSetting = EnvConfigFile + " (or --pigeon-config)"

// fileKeys maps the keys of pigeon.cfg to the variables they fill, and to Config's JSON
// fields.
var fileKeys = map[string]struct{ env, field string }{
	"policyObjective":     {EnvObjective, "policyObjective"},
	"policyResourceIndex": {EnvResourceIndex, "policyResourceIndex"},
	"numResources":        {EnvNumResources, "numResources"},
}

// ApplyFile reads ConfigFile, when set, and fills from it each setting for which explicit
// (settings.Set.Explicit after Parse) reports that no flag or variable gave a value. The file
// holds key = value lines; keys are policyObjective, policyResourceIndex and numResources
// (case-insensitive); '#' starts a comment; blank lines are skipped. An unreadable file, a line
// that is not key = value, an unknown or repeated key, or a value that does not parse is an
// error naming the file and the line; ranges are Validate's, which names the line too.
func (c *Config) ApplyFile(explicit func(env string) bool) error {
	if c.ConfigFile == "" {
		return nil
	}
	data, err := os.ReadFile(c.ConfigFile)
	if err != nil {
		return fmt.Errorf("%s: cannot read the pigeon config file: %w", configFileSetting, err)
	}
	seen := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		where := fmt.Sprintf("%s line %d", c.ConfigFile, i+1)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: %s: %s", configFileSetting, where, fmt.Sprintf(format, args...))
		}
		if k := strings.IndexByte(line, '#'); k >= 0 {
			line = line[:k]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.Trim(strings.TrimSpace(value), `"`)
		if !ok || key == "" || value == "" {
			return bad("%q is not a key = value line", line)
		}
		var target struct{ env, field string }
		for k, t := range fileKeys {
			if strings.EqualFold(k, key) {
				key, target = k, t
			}
		}
		if target.env == "" {
			return bad("unknown key %q (known keys: numResources, policyObjective, policyResourceIndex)", key)
		}
		if first, dup := seen[key]; dup {
			return bad("%s is already set on line %d", key, first)
		}
		seen[key] = i + 1
		var obj Objective
		var n int
		switch target.env {
		case EnvObjective:
			if err := obj.UnmarshalText([]byte(value)); err != nil {
				return bad("%s: %v", key, err)
			}
		default:
			if n, err = strconv.Atoi(value); err != nil {
				return bad("%s: %q is not an integer", key, value)
			}
		}
		if explicit(target.env) {
			continue
		}
		switch target.env {
		case EnvObjective:
			c.Objective = obj
		case EnvNumResources:
			c.NumResources = n
		default:
			c.ResourceIndex = n
		}
		if c.origin == nil {
			c.origin = map[string]string{}
		}
		c.origin[target.field] = where
	}
	return nil
}

func parseObjective(v string) (Objective, bool) {
	for _, name := range objectiveNames {
		if strings.EqualFold(strings.TrimSpace(v), name) {
			return Objective(name), true
		}
	}
	return "", false
}

// from says, for a field whose value came from the config file, which line set it.
func (c *Config) from(field string) string {
	if where, ok := c.origin[field]; ok {
		return " (set by " + where + ")"
	}
	return ""
}

// Validate reports every bad field, each as a settings.FieldError: the ranges and choices the
// fields declare (numResources 1..MaxResources, policyResourceIndex below MaxResources), each
// naming the file line that set it; then the resource index against NUM_RESOURCES.
func (c Config) Validate() error {
	var errs []error
	bad := map[string]bool{}
	for _, e := range settings.Leaves(settings.Check(c)) {
		var fe *settings.FieldError
		if errors.As(e, &fe) {
			bad[fe.Field] = true
			e = &settings.FieldError{Field: fe.Field, Err: fmt.Errorf("%w%s", fe.Err, c.from(fe.Field))}
		}
		errs = append(errs, e)
	}
	if hi := min(max(c.NumResources, 1), MaxResources) - 1; !bad["policyResourceIndex"] && (c.ResourceIndex < 0 || c.ResourceIndex > hi) {
		errs = append(errs, settings.Fieldf("policyResourceIndex", "%d%s is beyond the resources: NUM_RESOURCES (numResources) is %d, so it must be in 0..%d",
			c.ResourceIndex, c.from("policyResourceIndex"), c.NumResources, hi))
	}
	if err := checkResourceName(c.GPUResource); err != nil {
		errs = append(errs, settings.Fieldf("gpuResource", "%v", err))
	}
	return errors.Join(errs...)
}

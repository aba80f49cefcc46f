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
	// nodes towards empty or full.
	Consolidate Objective = "CONSOLIDATE"
)

// objectiveNames lists the objectives in the order shown to users.
var objectiveNames = []string{string(ABinpack), string(LoadBalance), string(Consolidate)}

// The environment variables of the settings; each also has a kebab-case flag.
const (
	EnvNumResources  = "NUM_RESOURCES"
	EnvObjective     = "POLICY_OBJECTIVE"
	EnvResourceIndex = "POLICY_RESOURCE_INDEX"
	EnvGPUResource   = "PIGEON_GPU_RESOURCE"
	EnvConfigFile    = "PIGEON_CONFIG"
)

// flags maps each variable to its flag, for error messages.
var flags = map[string]string{
	EnvNumResources:  "num-resources",
	EnvObjective:     "policy-objective",
	EnvResourceIndex: "policy-resource-index",
	EnvGPUResource:   "pigeon-gpu-resource",
	EnvConfigFile:    "pigeon-config",
}

// settingName names a setting in messages the way package settings does: "VAR (or --flag)".
func settingName(env string) string { return fmt.Sprintf("%s (or --%s)", env, flags[env]) }

// Config holds the agent's settings. Defaults live in Declare; Validate checks them together.
type Config struct {
	// NumResources is n: the agent considers the first n of cpu, memory, pods, gpu,
	// ephemeral-storage (NUM_RESOURCES, 1..5, default 2).
	NumResources int
	// Objective is the policy (POLICY_OBJECTIVE, default A_BINPACK).
	Objective Objective
	// ResourceIndex is the prime resource of LOAD_BALANCE and CONSOLIDATE, 0..n-1
	// (POLICY_RESOURCE_INDEX, default 0: cpu).
	ResourceIndex int
	// GPUResource is the extended resource counted as gpu (PIGEON_GPU_RESOURCE, default
	// nvidia.com/gpu).
	GPUResource string
	// ConfigFile is the original's pigeon.cfg, read by ApplyFile (PIGEON_CONFIG, default none).
	ConfigFile string

	// origin tells, by variable, the file line a value came from, for messages.
	origin map[string]string
}

// Declare adds the agent's settings, with their defaults, to s.
func (c *Config) Declare(s *settings.Set) {
	s.Int(&c.NumResources, EnvNumResources, flags[EnvNumResources], 2, 1, MaxResources,
		"number of resources considered, the first n of cpu, memory, pods, gpu, ephemeral-storage")
	s.Enum((*string)(&c.Objective), EnvObjective, flags[EnvObjective], string(ABinpack), objectiveNames,
		"placement objective of the pigeon-holing priority")
	s.Int(&c.ResourceIndex, EnvResourceIndex, flags[EnvResourceIndex], 0, 0, MaxResources-1,
		"prime resource of LOAD_BALANCE and CONSOLIDATE, an index below NUM_RESOURCES (0 cpu, 1 memory, 2 pods, 3 gpu, 4 ephemeral-storage)")
	s.String(&c.GPUResource, EnvGPUResource, flags[EnvGPUResource], "nvidia.com/gpu",
		"extended resource counted as the gpu resource", checkResourceName)
	s.String(&c.ConfigFile, EnvConfigFile, flags[EnvConfigFile], "",
		"pigeon.cfg file of key = value lines (policyObjective, policyResourceIndex, numResources); "+
			"a setting given by flag or variable wins over the file", nil)
}

func checkResourceName(v string) error {
	if errs := validation.IsQualifiedName(v); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid resource name: %s", v, strings.Join(errs, "; "))
	}
	return nil
}

// fileKeys maps the keys of pigeon.cfg to the variables they fill.
var fileKeys = map[string]string{
	"policyObjective":     EnvObjective,
	"policyResourceIndex": EnvResourceIndex,
	"numResources":        EnvNumResources,
}

// ApplyFile reads ConfigFile, when set, and fills from it each setting for which explicit
// (settings.Set.Explicit after Parse) reports that no flag or variable gave a value. The file
// holds key = value lines; keys are policyObjective, policyResourceIndex and numResources
// (case-insensitive); '#' starts a comment; blank lines are skipped. An unreadable file, a line
// that is not key = value, an unknown or repeated key, or a bad value is an error naming the
// file and the line.
func (c *Config) ApplyFile(explicit func(env string) bool) error {
	if c.ConfigFile == "" {
		return nil
	}
	data, err := os.ReadFile(c.ConfigFile)
	if err != nil {
		return fmt.Errorf("%s: cannot read the pigeon config file: %w", settingName(EnvConfigFile), err)
	}
	seen := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		where := fmt.Sprintf("%s line %d", c.ConfigFile, i+1)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: %s: %s", settingName(EnvConfigFile), where, fmt.Sprintf(format, args...))
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
		env := ""
		for k, e := range fileKeys {
			if strings.EqualFold(k, key) {
				key, env = k, e
			}
		}
		if env == "" {
			return bad("unknown key %q (known keys: numResources, policyObjective, policyResourceIndex)", key)
		}
		if first, dup := seen[key]; dup {
			return bad("%s is already set on line %d", key, first)
		}
		seen[key] = i + 1
		apply := !explicit(env)
		switch env {
		case EnvObjective:
			o, ok := parseObjective(value)
			if !ok {
				return bad("%s: %q is not one of %s", key, value, strings.Join(objectiveNames, ", "))
			}
			if apply {
				c.Objective = o
			}
		case EnvResourceIndex, EnvNumResources:
			lo, hi := 0, MaxResources-1
			if env == EnvNumResources {
				lo, hi = 1, MaxResources
			}
			v, err := strconv.Atoi(value)
			if err != nil {
				return bad("%s: %q is not an integer", key, value)
			}
			if v < lo || v > hi {
				return bad("%s: %d is out of range [%d, %d]", key, v, lo, hi)
			}
			if apply && env == EnvNumResources {
				c.NumResources = v
			} else if apply {
				c.ResourceIndex = v
			}
		}
		if apply {
			if c.origin == nil {
				c.origin = map[string]string{}
			}
			c.origin[env] = where
		}
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

// describe names a setting and, when its value came from the config file, the line.
func (c *Config) describe(env string) string {
	if where, ok := c.origin[env]; ok {
		return fmt.Sprintf("%s (set by %s)", settingName(env), where)
	}
	return settingName(env)
}

// Validate reports every invalid setting, each by its variable and flag.
func (c *Config) Validate() error {
	var errs []error
	if c.NumResources < 1 || c.NumResources > MaxResources {
		errs = append(errs, fmt.Errorf("%s is %d: must be in 1..%d", c.describe(EnvNumResources), c.NumResources, MaxResources))
	}
	if _, ok := objectives[c.Objective]; !ok {
		errs = append(errs, fmt.Errorf("%s is %q: must be one of %s", c.describe(EnvObjective), c.Objective,
			strings.Join(objectiveNames, ", ")))
	}
	if hi := min(max(c.NumResources, 1), MaxResources) - 1; c.ResourceIndex < 0 || c.ResourceIndex > hi {
		errs = append(errs, fmt.Errorf("%s is %d but %s is %d: must be in 0..%d",
			c.describe(EnvResourceIndex), c.ResourceIndex, EnvNumResources, c.NumResources, hi))
	}
	if err := checkResourceName(c.GPUResource); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", settingName(EnvGPUResource), err))
	}
	return errors.Join(errs...)
}

package gangplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/agents/gang/core"
)

// maxTimeoutSeconds is kube-scheduler's longest Permit wait (15 minutes).
const maxTimeoutSeconds = int64(core.MaxScheduleTimeout / time.Second)

// Args are the gang plugins' pluginConfig args: pod-group's and Coscheduling's are the same
// settings, the timeout named as each plugin's users know it (pod-group:
// defaultScheduleTimeoutSeconds; Coscheduling: permitWaitingTimeSeconds, as scheduler-plugins).
type Args struct {
	// ScheduleTimeoutSeconds is how long the members of a group wait for each other at Permit
	// when the group does not say (a riya group, a PodGroup without scheduleTimeoutSeconds).
	ScheduleTimeoutSeconds int64
	// PodGroupBackoffSeconds keeps a group out of scheduling (rejected at PreFilter) for this
	// long after one of its members found no node while the group had all its members and was
	// short of its minimum placed; 0 (the default) keeps it out as kube-scheduler backs off a
	// pod (1 s doubling to 10 s over consecutive failures).
	PodGroupBackoffSeconds int64
	// PodGroupRejectPercentage: when a member finds no node, its waiting siblings are released
	// at once (PostFilter) unless the members still missing are at most this percentage of the
	// minimum (0..100, default 10, Coscheduling's).
	PodGroupRejectPercentage int32
}

// DefaultArgs returns the args with every default (Coscheduling's: 60 s, no backoff, 10 %).
func DefaultArgs() Args {
	return Args{ScheduleTimeoutSeconds: int64(core.DefaultScheduleTimeout / time.Second), PodGroupRejectPercentage: 10}
}

// argsSchema is how one plugin spells its args.
type argsSchema struct {
	plugin string
	// timeoutField is the JSON name of ScheduleTimeoutSeconds; minTimeout its least valid value.
	timeoutField string
	minTimeout   int64
}

var (
	podGroupSchema     = argsSchema{plugin: PodGroupName, timeoutField: "defaultScheduleTimeoutSeconds", minTimeout: 1}
	coschedulingSchema = argsSchema{plugin: CoschedulingName, timeoutField: "permitWaitingTimeSeconds", minTimeout: 0}
)

// Validate names every bad field, as the user wrote it.
func (s argsSchema) validate(a Args) error {
	var errs []error
	if a.ScheduleTimeoutSeconds < s.minTimeout || a.ScheduleTimeoutSeconds > maxTimeoutSeconds {
		errs = append(errs, fmt.Errorf("invalid %s: %d is not in %d..%d", s.timeoutField, a.ScheduleTimeoutSeconds, s.minTimeout, maxTimeoutSeconds))
	}
	if a.PodGroupBackoffSeconds < 0 {
		errs = append(errs, fmt.Errorf("invalid podGroupBackoffSeconds: %d is negative", a.PodGroupBackoffSeconds))
	}
	if a.PodGroupRejectPercentage < 0 || a.PodGroupRejectPercentage > 100 {
		errs = append(errs, fmt.Errorf("invalid podGroupRejectPercentage: %d is not in 0..100", a.PodGroupRejectPercentage))
	}
	return errors.Join(errs...)
}

// decode reads the pluginConfig args strictly (an unknown field is an error naming it), over
// the defaults, and validates them.
func (s argsSchema) decode(obj runtime.Object) (Args, error) {
	args := DefaultArgs()
	if obj == nil {
		return args, nil
	}
	u, ok := obj.(*runtime.Unknown)
	if !ok {
		return args, fmt.Errorf("want args of type runtime.Unknown, got %T", obj)
	}
	raw := bytes.TrimSpace(u.Raw)
	if len(raw) == 0 {
		return args, nil
	}
	if u.ContentType == runtime.ContentTypeYAML {
		var err error
		if raw, err = yaml.YAMLToJSON(raw); err != nil {
			return args, err
		}
	}
	fields := map[string]any{
		s.timeoutField:             &args.ScheduleTimeoutSeconds,
		"podGroupBackoffSeconds":   &args.PodGroupBackoffSeconds,
		"podGroupRejectPercentage": &args.PodGroupRejectPercentage,
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil {
		return args, err
	}
	names := slices.Sorted(maps.Keys(values))
	for _, name := range names {
		dst, ok := fields[name]
		if !ok {
			return args, fmt.Errorf("unknown field %q (the fields are %s, podGroupBackoffSeconds, podGroupRejectPercentage)", name, s.timeoutField)
		}
		if err := json.Unmarshal(values[name], dst); err != nil {
			return args, fmt.Errorf("%s: %w", name, err)
		}
	}
	return args, s.validate(args)
}

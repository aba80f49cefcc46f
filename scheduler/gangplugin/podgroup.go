// Package gangplugin holds the gang plugins of plugin mode (kube-safe-scheduler): pod-group
// (PreFilter, Reserve and Permit: a group's members are held until enough exist, then placed
// all together or not at all within the group's timeout) and group-priority (QueueSort: the
// riya-scheduler's queue order). The group logic is agents/gang's (KeyOf, Resolve, Counts);
// this package adds what only a scheduler can do: hold a placement. See docs/plugin-mode.md.
package gangplugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/agents/gang"
)

// PodGroupName is the plugin's name.
const PodGroupName = "pod-group"

// maxTimeoutSeconds is kube-scheduler's longest Permit wait (15 minutes).
const maxTimeoutSeconds = 900

// Args are pod-group's pluginConfig args.
type Args struct {
	// DefaultScheduleTimeoutSeconds is how long the members of a group wait for each other at
	// Permit when the group does not say (a riya group, a PodGroup without
	// scheduleTimeoutSeconds): 1..900.
	DefaultScheduleTimeoutSeconds int `json:"defaultScheduleTimeoutSeconds"`
}

// DefaultArgs returns the args with every default (60 s, Coscheduling's).
func DefaultArgs() Args {
	return Args{DefaultScheduleTimeoutSeconds: int(gang.DefaultScheduleTimeout / time.Second)}
}

// Validate names the bad field.
func (a Args) Validate() error {
	if a.DefaultScheduleTimeoutSeconds < 1 || a.DefaultScheduleTimeoutSeconds > maxTimeoutSeconds {
		return fmt.Errorf("invalid defaultScheduleTimeoutSeconds: %d is not in 1..%d", a.DefaultScheduleTimeoutSeconds, maxTimeoutSeconds)
	}
	return nil
}

// decodeArgs reads the pluginConfig args strictly (an unknown field is an error naming it).
func decodeArgs(obj runtime.Object) (Args, error) {
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
	strict, err := sigsjson.UnmarshalStrict(raw, &args, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return args, err
	}
	if len(strict) > 0 {
		return args, fmt.Errorf("%v (the fields are defaultScheduleTimeoutSeconds)", errors.Join(strict...))
	}
	return args, args.Validate()
}

// PodGroup is the plugin pod-group.
//
// PreFilter: while fewer than the minimum non-terminated members of the pod's group exist (the
// pod included), the pod is unschedulable and unresolvable (no preemption is tried), with the
// extender filter's reason; a pod whose group cannot be resolved is rejected with the reason
// naming the bad label or object.
//
// Permit: a member placed while fewer than the minimum members are assumed or bound (it
// included) waits, up to the group's scheduleTimeoutSeconds (or the args' default); the member
// that completes the minimum is allowed and allows every waiting member of its group, so they
// bind together. When a waiting member is rejected (its timeout, or any later failure), Unreserve
// rejects every other waiting member of its group: none of them binds, their reservations are
// released, and they return to the queue.
type PodGroup struct {
	args       Args
	counts     *gang.Counts
	podsSynced func() bool
	groups     groupStore
	// assigned returns how many pods of the group, other than pod, are assumed or bound in the
	// scheduler's snapshot.
	assigned func(key gang.Key, pod *corev1.Pod) int
	// waiting iterates over the pods waiting at Permit.
	waiting func(func(fwk.WaitingPod))
}

// groupStore is what the plugin reads of the PodGroup informer.
type groupStore interface {
	GetStore() cache.Store
	HasSynced() bool
}

var (
	_ fwk.PreFilterPlugin   = (*PodGroup)(nil)
	_ fwk.ReservePlugin     = (*PodGroup)(nil)
	_ fwk.PermitPlugin      = (*PodGroup)(nil)
	_ fwk.EnqueueExtensions = (*PodGroup)(nil)
)

// NewPodGroup is the plugin's factory: it counts members from the scheduler's own pod informer
// and reads PodGroup objects through an informer of its own (started with ctx).
func NewPodGroup(ctx context.Context, obj runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", PodGroupName, err)
	}
	pl := &PodGroup{args: args, counts: gang.NewCounts(), waiting: fh.IterateOverWaitingPods}
	reg, err := fh.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(pl.counts.Handler())
	if err != nil {
		return nil, err
	}
	pl.podsSynced = reg.HasSynced
	dyn, err := dynamic.NewForConfig(fh.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: a client for PodGroups: %w", PodGroupName, err)
	}
	groups := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0).ForResource(gang.PodGroupResource).Informer()
	go groups.RunWithContext(ctx)
	pl.groups = groups
	pl.assigned = func(key gang.Key, pod *corev1.Pod) int {
		nodes, err := fh.SnapshotSharedLister().NodeInfos().List()
		if err != nil {
			return 0
		}
		n := 0
		for _, ni := range nodes {
			for _, pi := range ni.GetPods() {
				if p := pi.GetPod(); p.UID != pod.UID {
					if k, ok := gang.KeyOf(p); ok && k == key {
						n++
					}
				}
			}
		}
		return n
	}
	return pl, nil
}

// Name implements fwk.Plugin.
func (*PodGroup) Name() string { return PodGroupName }

// lookup reads a PodGroup from the informer's cache.
func (pl *PodGroup) lookup(namespace, name string) (*gang.PodGroup, error) {
	return gang.LookupIn(pl.groups.GetStore(), namespace, name)
}

// resolve returns the pod's group requirement, its Permit timeout being the PodGroup's
// scheduleTimeoutSeconds when set, else the args' default.
func (pl *PodGroup) resolve(pod *corev1.Pod) (gang.Requirement, bool, error) {
	var pg *gang.PodGroup
	req, in, err := gang.Resolve(pod, func(ns, name string) (*gang.PodGroup, error) {
		var err error
		pg, err = pl.lookup(ns, name)
		return pg, err
	})
	if in {
		req.ScheduleTimeout = time.Duration(pl.args.DefaultScheduleTimeoutSeconds) * time.Second
		if pg != nil && pg.ScheduleTimeoutSeconds != nil && *pg.ScheduleTimeoutSeconds > 0 {
			req.ScheduleTimeout = time.Duration(min(*pg.ScheduleTimeoutSeconds, maxTimeoutSeconds)) * time.Second
		}
	}
	return req, in, err
}

// PreFilter implements fwk.PreFilterPlugin: the quorum check.
func (pl *PodGroup) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	key, in := gang.KeyOf(pod)
	if !in {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !pl.podsSynced() {
		return nil, fwk.AsStatus(errors.New("the pod informer has not synced yet"))
	}
	if key.Label == gang.LabelPodGroupName && !pl.groups.HasSynced() {
		return nil, fwk.AsStatus(fmt.Errorf("the PodGroup objects (%s) have not been read yet; is the PodGroup definition installed and may the scheduler list them?",
			gang.PodGroupResource.GroupResource()))
	}
	req, in, err := pl.resolve(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !in {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if reason := req.Check(pl.counts.CountWith(req.Key, pod)); reason != "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return nil, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin: none.
func (*PodGroup) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Reserve implements fwk.ReservePlugin: nothing to reserve.
func (*PodGroup) Reserve(context.Context, fwk.CycleState, *corev1.Pod, string) *fwk.Status {
	return nil
}

// Unreserve implements fwk.ReservePlugin: a member that will not bind takes its waiting group
// with it, so that no part of the group binds without it.
func (pl *PodGroup) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	key, in := gang.KeyOf(pod)
	if !in {
		return
	}
	pl.waiting(func(wp fwk.WaitingPod) {
		if p := wp.GetPod(); p.UID != pod.UID {
			if k, ok := gang.KeyOf(p); ok && k == key {
				wp.Reject(PodGroupName, fmt.Sprintf("pod group %s: member %s was not placed; the group is released", key, pod.Name))
			}
		}
	})
}

// Permit implements fwk.PermitPlugin: wait for the group, or allow it whole.
func (pl *PodGroup) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	req, in, err := pl.resolve(pod)
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), 0
	}
	if !in || req.Min <= 1 {
		return nil, 0
	}
	placed := pl.assigned(req.Key, pod) + 1
	if placed < int(req.Min) {
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("pod group %s has %d of %d members placed", req.Key, placed, req.Min)), req.ScheduleTimeout
	}
	pl.waiting(func(wp fwk.WaitingPod) {
		if k, ok := gang.KeyOf(wp.GetPod()); ok && k == req.Key {
			wp.Allow(PodGroupName)
		}
	})
	return nil, 0
}

// EventsToRegister implements fwk.EnqueueExtensions: a member rejected for a short group comes
// back when another member of its group is created; a group released at Permit comes back when
// room may have appeared (a node added or grown, a placed pod deleted).
func (*PodGroup) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: sameGroup},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}

// sameGroup queues pod when the added pod is a member of its group.
func sameGroup(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	k1, ok1 := gang.KeyOf(pod)
	k2, ok2 := gang.KeyOf(added)
	if ok1 && ok2 && k1 == k2 {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// Package gangplugin holds the gang plugins of plugin mode (kube-safe-scheduler): pod-group and
// Coscheduling (one gang implementation under two names: PreFilter, PostFilter, Reserve and
// Permit; a group's members are held until enough exist, then placed all together or not at
// all within the group's timeout, and a group that cannot complete gives its room back at
// once), and the queue orders (Coscheduling's own QueueSort, and group-priority: the
// riya-scheduler's). It is glue: the group logic and every decision (a pod's group and minimum,
// the counts, the quorum and minResources checks, Permit's wait, PostFilter's release, the
// backoff, a group's age in the queue, the PodGroup status) are agents/gang/core's,
// framework-free and shared with the extender agent; this package turns the scheduler's types
// into the core's and its answers into statuses, and does what only a scheduler can: hold a
// placement, order the queue (group-priority's riya keys, groupPriority and QoS class, are here:
// no extender sees the queue). See docs/plugin-mode.md.
package gangplugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/kube-safe-scheduler/extender/agents/gang/core"
)

// PodGroupName is the plugin's name.
const PodGroupName = "pod-group"

// PodGroup is the gang plugin; pod-group is its name for riya's users, Coscheduling for
// scheduler-plugins' (with Coscheduling's queue order besides).
//
// PreFilter: while fewer than the minimum non-terminated, ungated members of the pod's group
// exist (the pod included), while the group is backed off, or while the cluster's summed free
// room cannot hold the PodGroup's spec.minResources, the pod is unschedulable and unresolvable
// (no preemption is tried). A pod whose group cannot be resolved is rejected with the reason
// naming the bad label or object.
//
// PostFilter: a member that found no node while fewer than the minimum of its group are
// placed rejects every waiting member of its group at once (their room is free for others at
// once), and the group goes behind the others in the queue (its timestamp becomes its last
// failure) and, with podGroupBackoffSeconds, out of scheduling for that long.
//
// Permit: a member placed while fewer than the minimum members are assumed or bound (it
// included) waits, up to the group's scheduleTimeoutSeconds (or the args' default); the first
// to wait brings its unplaced siblings back to the active queue; the member that completes the
// minimum is allowed and allows every waiting member of its group, so they bind together. When
// a waiting member is rejected (its timeout, or any later failure), Unreserve rejects every
// other waiting member of its group.
type PodGroup struct {
	name   string
	args   Args
	groups *Groups
	// assigned returns how many pods of the group, other than pod, are assumed or bound in the
	// scheduler's snapshot.
	assigned func(key core.Key, pod *corev1.Pod) int
	// waiting iterates over the pods waiting at Permit.
	waiting func(func(fwk.WaitingPod))
	// members lists the pods of a group (the scheduler's pod lister); nil in tests.
	members func(key core.Key) []*corev1.Pod
	// activate moves pods back to the active queue (the handle's Activate); nil in tests.
	activate func(pods map[string]*corev1.Pod)
	// warn records a Warning event on a PodGroup, warnPod on a pod; nil in tests.
	warn    func(pg *core.PodGroup, reason, note string)
	warnPod func(pod *corev1.Pod, reason, note string)
}

var (
	_ fwk.PreFilterPlugin   = (*PodGroup)(nil)
	_ fwk.PostFilterPlugin  = (*PodGroup)(nil)
	_ fwk.ReservePlugin     = (*PodGroup)(nil)
	_ fwk.PermitPlugin      = (*PodGroup)(nil)
	_ fwk.EnqueueExtensions = (*PodGroup)(nil)
)

// NewPodGroup is pod-group's factory.
func (g *Groups) NewPodGroup(ctx context.Context, obj runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	return g.newPlugin(ctx, podGroupSchema, obj, fh)
}

func (g *Groups) newPlugin(ctx context.Context, schema argsSchema, obj runtime.Object, fh fwk.Handle) (*PodGroup, error) {
	args, err := schema.decode(obj)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", schema.plugin, err)
	}
	if err := g.ensure(ctx, fh); err != nil {
		return nil, fmt.Errorf("%s: %w", schema.plugin, err)
	}
	pl := &PodGroup{name: schema.plugin, args: args, groups: g, waiting: fh.IterateOverWaitingPods}
	pl.assigned = func(key core.Key, pod *corev1.Pod) int {
		nodes, err := fh.SnapshotSharedLister().NodeInfos().List()
		if err != nil {
			return 0
		}
		n := 0
		for _, ni := range nodes {
			for _, pi := range ni.GetPods() {
				if p := pi.GetPod(); p.UID != pod.UID {
					if k, ok := core.KeyOf(p); ok && k == key {
						n++
					}
				}
			}
		}
		return n
	}
	lister := fh.SharedInformerFactory().Core().V1().Pods().Lister()
	pl.members = func(key core.Key) []*corev1.Pod {
		pods, err := lister.Pods(key.Namespace).List(labels.SelectorFromSet(labels.Set{key.Label: key.Name}))
		if err != nil {
			return nil
		}
		return pods
	}
	logger := klog.FromContext(ctx)
	pl.activate = func(pods map[string]*corev1.Pod) { fh.Activate(logger, pods) }
	recorder := fh.EventRecorder()
	pl.warn = func(pg *core.PodGroup, reason, note string) {
		if pg.Object != nil {
			recorder.Eventf(pg.Object, nil, corev1.EventTypeWarning, reason, "Scheduling", "%s", note)
		}
	}
	pl.warnPod = func(pod *corev1.Pod, reason, note string) {
		recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "Scheduling", "%s", note)
	}
	// A PodGroup created or changed after its pods were turned away (it did not exist, or its
	// minimum was higher) brings them back.
	if _, err := g.store.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { pl.activateGroupOf(obj) },
		UpdateFunc: func(old, obj any) {
			// The spec changed (not only the status, which the scheduler itself writes).
			o, ok1 := old.(interface{ GetGeneration() int64 })
			n, ok2 := obj.(interface{ GetGeneration() int64 })
			if !ok1 || !ok2 || o.GetGeneration() != n.GetGeneration() {
				pl.activateGroupOf(obj)
			}
		},
	}); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name implements fwk.Plugin.
func (pl *PodGroup) Name() string { return pl.name }

// resolve returns the pod's group requirement, its Permit timeout being the PodGroup's
// scheduleTimeoutSeconds when set, else the args' default, and the PodGroup object (nil for a
// riya group).
func (pl *PodGroup) resolve(pod *corev1.Pod) (core.Requirement, *core.PodGroup, bool, error) {
	var pg *core.PodGroup
	req, in, err := core.Resolve(pod, func(ns, name string) (*core.PodGroup, error) {
		var err error
		pg, err = pl.groups.lookup(ns, name)
		return pg, err
	})
	req.ScheduleTimeout = core.PermitTimeout(pg, time.Duration(pl.args.ScheduleTimeoutSeconds)*time.Second)
	return req, pg, in, err
}

// PreFilter implements fwk.PreFilterPlugin: backoff, quorum and minResources.
func (pl *PodGroup) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	key, in := core.KeyOf(pod)
	if !in {
		if w := core.Overruled(pod); w != "" && pl.warnPod != nil && pl.groups.history.WarnOnce("pod/"+string(pod.UID), "warned") {
			pl.warnPod(pod, "PodGroupOverruled", w)
		}
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !pl.groups.podsSynced() {
		return nil, fwk.AsStatus(errors.New("the pod informer has not synced yet"))
	}
	if key.Label == core.LabelPodGroupName && !pl.groups.store.HasSynced() {
		return nil, fwk.AsStatus(fmt.Errorf("the PodGroup objects (%s) have not been read yet; is the PodGroup definition installed and may the scheduler list them?",
			core.PodGroupResource.GroupResource()))
	}
	req, pg, in, err := pl.resolve(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !in {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	pl.groups.status.tried(req.Key)
	if req.Warning != "" && pg != nil && pl.warn != nil && pg.Object != nil && pl.groups.history.WarnOnce(req.Key.String(), pg.Object.GetResourceVersion()) {
		pl.warn(pg, "NoMinMember", req.Warning)
	}
	if until, ok := pl.groups.history.BackedOff(req.Key, pl.groups.now(), true); ok {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("pod group %s failed recently: backed off until %s (podGroupBackoffSeconds %d)",
			req.Key, until.Format(time.RFC3339), pl.args.PodGroupBackoffSeconds))
	}
	if reason := req.Admit(pl.groups.counts, pod, func() []corev1.ResourceList { return freeRoom(nodes, req.Key) }); reason != "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return nil, nil
}

// freeRoom returns each node's free allocatable (pods: free slots), the requests of the group's
// own pods on it given back: they are part of what spec.minResources asks.
func freeRoom(nodes []fwk.NodeInfo, key core.Key) []corev1.ResourceList {
	out := make([]corev1.ResourceList, 0, len(nodes))
	for _, ni := range nodes {
		if ni == nil || ni.Node() == nil {
			continue
		}
		alloc, used := ni.GetAllocatable(), ni.GetRequested()
		cpu, mem, eph := alloc.GetMilliCPU()-used.GetMilliCPU(), alloc.GetMemory()-used.GetMemory(), alloc.GetEphemeralStorage()-used.GetEphemeralStorage()
		pods := int64(alloc.GetAllowedPodNumber() - len(ni.GetPods()))
		scalar := map[corev1.ResourceName]int64{}
		for name, q := range alloc.GetScalarResources() {
			scalar[name] = q - used.GetScalarResources()[name]
		}
		for _, pi := range ni.GetPods() {
			if k, ok := core.KeyOf(pi.GetPod()); !ok || k != key {
				continue
			}
			r := pi.CalculateResource().Resource
			cpu, mem, eph, pods = cpu+r.GetMilliCPU(), mem+r.GetMemory(), eph+r.GetEphemeralStorage(), pods+1
			for name, q := range r.GetScalarResources() {
				scalar[name] += q
			}
		}
		free := corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewMilliQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(eph, resource.BinarySI),
			corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		}
		for name, q := range scalar {
			free[name] = *resource.NewQuantity(q, resource.DecimalSI)
		}
		out = append(out, free)
	}
	return out
}

// PreFilterExtensions implements fwk.PreFilterPlugin: none.
func (*PodGroup) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter implements fwk.PostFilterPlugin, as Coscheduling's: a member that found no node
// while its group is short of its minimum placed releases the group's waiting members at once,
// so that two half-placed groups cannot hold each other's room until their timeouts, and a group
// that cannot complete does not hold room that others could use.
func (pl *PodGroup) PostFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	req, _, in, err := pl.resolve(pod)
	if err != nil || !in {
		return nil, fwk.NewStatus(fwk.Unschedulable, "not in a pod group")
	}
	// A member turned away because its group is backed off: the group was released and
	// backed off already; doing it again would only push the backoff further.
	if _, ok := pl.groups.backedOff(req.Key); ok {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	assigned := pl.assigned(req.Key, pod)
	if !req.Release(assigned, pl.args.PodGroupRejectPercentage) {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	released := 0
	pl.waiting(func(wp fwk.WaitingPod) {
		if p := wp.GetPod(); p.UID != pod.UID && core.SameGroup(p, pod) {
			wp.Reject(pl.name, req.ReleasedWaiting(pod.Name, assigned))
			released++
		}
	})
	// A group backed off is brought back when its backoff ends if members were turned away
	// meanwhile; the others wait for their events, as any pod (a retry here would only move the
	// group's failure time on).
	if d := pl.groups.history.Fail(req, pl.groups.counts, pod, pl.groups.now(), time.Duration(pl.args.PodGroupBackoffSeconds)*time.Second, released); d > 0 {
		time.AfterFunc(d, func() {
			if pl.groups.backoffEnded(req.Key) {
				pl.activateGroup(req.Key)
			}
		})
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, req.Released(pod.Name, assigned, released))
}

// Reserve implements fwk.ReservePlugin: nothing to reserve.
func (*PodGroup) Reserve(context.Context, fwk.CycleState, *corev1.Pod, string) *fwk.Status {
	return nil
}

// Unreserve implements fwk.ReservePlugin: a member that will not bind takes its waiting group
// with it, so that no part of the group binds without it.
func (pl *PodGroup) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	key, in := core.KeyOf(pod)
	if !in {
		return
	}
	pl.waiting(func(wp fwk.WaitingPod) {
		if p := wp.GetPod(); p.UID != pod.UID && core.SameGroup(p, pod) {
			wp.Reject(pl.name, core.NotPlaced(key, pod.Name))
		}
	})
	pl.groups.markFailed(key)
}

// Permit implements fwk.PermitPlugin: wait for the group, or allow it whole.
func (pl *PodGroup) Permit(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	req, _, in, err := pl.resolve(pod)
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), 0
	}
	if !in {
		return nil, 0
	}
	d := req.Permit(func() int { return pl.assigned(req.Key, pod) })
	if d.Wait {
		if d.First {
			pl.activateSiblings(state, pod, req.Key)
		}
		return fwk.NewStatus(fwk.Wait, d.Reason), req.ScheduleTimeout
	}
	pl.groups.placed(req.Key)
	if d.Completes {
		pl.waiting(func(wp fwk.WaitingPod) {
			if core.SameGroup(wp.GetPod(), pod) {
				wp.Allow(pl.name)
			}
		})
	}
	return nil, 0
}

// activateSiblings asks the scheduler to bring the group's unplaced members back to the active
// queue at the end of this cycle (as Coscheduling does): a member turned away at PreFilter
// before its siblings existed is tried again now that one of them waits for it. Without the
// GenericWorkload feature kube-scheduler does not pass the addition of an unscheduled pod to
// the queueing hints (EventsToRegister's Pod/Add), so this is what brings it back.
func (pl *PodGroup) activateSiblings(state fwk.CycleState, pod *corev1.Pod, key core.Key) {
	if pl.members == nil || state == nil {
		return
	}
	data, err := state.Read(schedfw.PodsToActivateKey)
	if err != nil {
		return
	}
	s, ok := data.(*schedfw.PodsToActivate)
	if !ok {
		return
	}
	s.Lock()
	defer s.Unlock()
	for _, p := range pl.members(key) {
		if p.UID != pod.UID && p.Spec.NodeName == "" {
			s.Map[p.Namespace+"/"+p.Name] = p
		}
	}
}

// activateGroup moves the group's unplaced members to the active queue now.
func (pl *PodGroup) activateGroup(key core.Key) {
	if pl.members == nil || pl.activate == nil {
		return
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range pl.members(key) {
		if p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) == 0 {
			pods[p.Namespace+"/"+p.Name] = p
		}
	}
	if len(pods) > 0 {
		pl.activate(pods)
	}
}

// activateGroupOf is the PodGroup informer's handler: the pods of a PodGroup just created or
// changed are tried again.
func (pl *PodGroup) activateGroupOf(obj any) {
	m, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	if !ok {
		return
	}
	pl.activateGroup(core.Key{Label: core.LabelPodGroupName, Namespace: m.GetNamespace(), Name: m.GetName()})
}

// EventsToRegister implements fwk.EnqueueExtensions: a member rejected for a short group comes
// back when another member of its group is created (kube-scheduler passes that event to the
// hints only with the GenericWorkload feature on; Permit's activateSiblings and the PodGroup
// handler bring members back without it) or ungated; a group released at Permit comes back when
// room may have appeared (a node added or grown, a placed pod deleted).
func (*PodGroup) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: sameGroup},
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: sameGroup},
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
	if core.SameGroup(pod, added) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

package adapter

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
)

// snapshotCluster is the framework.Cluster of plugin mode: the scheduler's own snapshot of the
// cluster, taken at the start of each scheduling cycle, with the pods the scheduler has assumed
// on nodes (bound in its cache, not yet in the API). Agents call it from within a cycle (Filter,
// PreScore), which is when the snapshot is consistent.
//
// Where it differs from the extender's informer cache (package cluster): Pods returns the pods
// on nodes (bound or assumed), not the pending ones; Allocated comes from the scheduler's
// NodeInfo (its own accounting of requests, including assumed pods); and it reflects the cluster
// as of the cycle's start, consistently for every plugin.
type snapshotCluster struct {
	fh      fwk.Handle
	adapter *Adapter
	// wholeRead tells that the agent has read the whole cluster (Nodes, Pods): its answers may
	// then move with any placement (see SignPod). The node-scoped methods read the node judged
	// (framework.Cluster), whose NodeInfo batching re-checks: they leave it unset.
	wholeRead atomic.Bool
	// agent, when the agent does not say it reads the whole cluster (framework.Offer.WholeCluster),
	// names it for the error markWholeRead logs if it does all the same (log).
	agent string
	log   klog.Logger
	// alloc memoizes Allocated by node name and NodeInfo generation (bumped on every change).
	alloc sync.Map // node name -> allocEntry
}

type allocEntry struct {
	generation int64
	amounts    framework.Amounts
}

var (
	_ framework.Cluster         = (*snapshotCluster)(nil)
	_ framework.NodePods        = (*snapshotCluster)(nil)
	_ framework.NodePodsChanges = (*snapshotCluster)(nil)
)

func newSnapshotCluster(fh fwk.Handle, a *Adapter) *snapshotCluster {
	return &snapshotCluster{fh: fh, adapter: a}
}

func (c *snapshotCluster) nodeInfos() fwk.NodeInfoLister {
	l := c.fh.SnapshotSharedLister()
	if l == nil {
		return nil
	}
	return l.NodeInfos()
}

// HasSynced implements framework.Cluster: the scheduler schedules only once its informers have
// synced.
func (c *snapshotCluster) HasSynced() bool { return true }

// markWholeRead sets wholeRead. An agent may read the whole cluster for every pod from several
// goroutines: a store each time would bounce wholeRead's cache line between the cores.
func (c *snapshotCluster) markWholeRead() {
	if !c.wholeRead.Load() && !c.wholeRead.Swap(true) && c.agent != "" {
		c.log.Error(nil, "The agent read the whole cluster, which its Registration does not declare (framework.Offer.WholeCluster): "+
			"its pods are no longer signed for batching, but pods batched before may have been placed on stale answers", "agent", c.agent)
	}
}

// Node implements framework.NodeLookup: the node's NodeView.
func (c *snapshotCluster) Node(name string) (*corev1.Node, bool) {
	l := c.nodeInfos()
	if l == nil {
		return nil, false
	}
	ni, err := l.Get(name)
	if err != nil || ni == nil || ni.Node() == nil {
		return nil, false
	}
	return c.adapter.view(ni.Node()), true
}

// Nodes implements framework.Cluster: every node of the snapshot, as NodeViews.
func (c *snapshotCluster) Nodes() []*corev1.Node {
	c.markWholeRead()
	l := c.nodeInfos()
	if l == nil {
		return nil
	}
	infos, err := l.List()
	if err != nil {
		return nil
	}
	return c.adapter.allViews(infos)
}

// Pods implements framework.Cluster: the pods on the snapshot's nodes, bound or assumed.
func (c *snapshotCluster) Pods() []*corev1.Pod {
	c.markWholeRead()
	l := c.nodeInfos()
	if l == nil {
		return nil
	}
	infos, err := l.List()
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, ni := range infos {
		for _, p := range ni.GetPods() {
			out = append(out, p.GetPod())
		}
	}
	return out
}

// PodsGeneration implements framework.NodePods: the NodeInfo's generation, which the scheduler
// bumps on every change of the node or of its pods (assumed ones included).
func (c *snapshotCluster) PodsGeneration(node string) int64 {
	ni := c.nodeInfo(node)
	if ni == nil {
		return 0
	}
	return ni.GetGeneration()
}

// PodsChangedSince implements framework.NodePodsChanges: the snapshot's nodes whose NodeInfo
// generation is above mark, and as next the highest generation of its nodes. The scheduler
// gives a NodeInfo a generation from one counter on every change, and takes the snapshot
// under its cache's lock with every NodeInfo changed since the last one (UpdateSnapshot): a
// change after this snapshot gets a generation above every one here, so above next. (Like
// PodsGeneration, this follows the generations: the pods a pod group cycle assumes in the
// snapshot itself keep their NodeInfo's generation.)
//
// The snapshot keeps no order by generation that a plugin can read, so this looks at every
// node, by position in its list: one comparison each, where PodsGeneration per node is a
// lookup by name. It is never unknown, except without a snapshot. It reads the whole cluster
// (wholeRead), as Nodes does.
func (c *snapshotCluster) PodsChangedSince(mark int64, changes []framework.PodsChange) ([]framework.PodsChange, int64, bool) {
	c.markWholeRead()
	l := c.nodeInfos()
	if l == nil {
		return changes, mark, false
	}
	infos, err := l.List()
	if err != nil {
		return changes, mark, false
	}
	next := mark
	for _, ni := range infos {
		g := ni.GetGeneration()
		if g <= mark {
			continue
		}
		next = max(next, g)
		if n := ni.Node(); n != nil {
			changes = append(changes, framework.PodsChange{Node: n.Name, Generation: g})
		}
	}
	return changes, next, true
}

// PodsOn implements framework.NodePods: the pods of the node's NodeInfo, bound or assumed.
func (c *snapshotCluster) PodsOn(node string) ([]*corev1.Pod, int64) {
	ni := c.nodeInfo(node)
	if ni == nil {
		return nil, 0
	}
	infos := ni.GetPods()
	if len(infos) == 0 {
		return nil, ni.GetGeneration()
	}
	out := make([]*corev1.Pod, len(infos))
	for i, p := range infos {
		out[i] = p.GetPod()
	}
	return out, ni.GetGeneration()
}

// nodeInfo returns the snapshot's NodeInfo of node, nil when it has none.
func (c *snapshotCluster) nodeInfo(node string) fwk.NodeInfo {
	l := c.nodeInfos()
	if l == nil {
		return nil
	}
	ni, err := l.Get(node)
	if err != nil || ni == nil {
		return nil
	}
	return ni
}

// Allocated implements framework.Cluster: the NodeInfo's requested resources (cpu in
// millicores, memory and ephemeral-storage in bytes, extended resources) and its pod count
// under "pods"; zero amounts are left out, as the extender's cache does.
func (c *snapshotCluster) Allocated(node string) framework.Amounts {
	l := c.nodeInfos()
	if l == nil {
		return framework.Amounts{}
	}
	ni, err := l.Get(node)
	if err != nil || ni == nil {
		return framework.Amounts{}
	}
	gen := ni.GetGeneration()
	if e, ok := c.alloc.Load(node); ok && e.(allocEntry).generation == gen {
		return e.(allocEntry).amounts
	}
	a := amounts(ni)
	c.alloc.Store(node, allocEntry{generation: gen, amounts: a})
	return a
}

// amounts returns what the pods of ni request, as framework.Amounts.
func amounts(ni fwk.NodeInfo) framework.Amounts {
	r := ni.GetRequested()
	a := framework.Amounts{}
	put := func(name corev1.ResourceName, v int64) {
		if v != 0 {
			a[name] += v
		}
	}
	put(corev1.ResourceCPU, r.GetMilliCPU())
	put(corev1.ResourceMemory, r.GetMemory())
	put(corev1.ResourceEphemeralStorage, r.GetEphemeralStorage())
	for name, v := range r.GetScalarResources() {
		put(name, v)
	}
	put(corev1.ResourcePods, int64(len(ni.GetPods())))
	return a
}

// eventRecorder records agents' events through the scheduler's recorder (events.k8s.io).
//
// kube-scheduler starts sending that recorder's events to the API server in app.Run, after
// every plugin is built, and its broadcaster drops what is recorded before: an agent's events
// from its New or Start (telemetry reporting an invalid policy it has just read) would be lost.
// So until sending reports true (the scheduler's informers have synced, which Run starts after
// the events), events are held, then sent in order.
type eventRecorder struct {
	r       events.EventRecorder
	ctx     context.Context
	sending func() bool

	mu      sync.Mutex
	held    []heldEvent
	flushed bool // sending has reported true: no more holding
}

type heldEvent struct {
	object                     runtime.Object
	eventType, reason, message string
}

func newEventRecorder(ctx context.Context, r events.EventRecorder, sending func() bool) *eventRecorder {
	return &eventRecorder{r: r, ctx: ctx, sending: sending, flushed: sending == nil}
}

// Event implements framework.EventRecorder.
func (e *eventRecorder) Event(object runtime.Object, eventType, reason, message string) {
	e.mu.Lock()
	if !e.flushed && e.sending() {
		e.flushLocked()
	}
	if e.flushed {
		e.mu.Unlock()
		e.send(heldEvent{object, eventType, reason, message})
		return
	}
	e.held = append(e.held, heldEvent{object, eventType, reason, message})
	first := len(e.held) == 1
	e.mu.Unlock()
	if first {
		go e.wait()
	}
}

func (e *eventRecorder) send(ev heldEvent) {
	e.r.Eventf(ev.object, nil, ev.eventType, ev.reason, "Scheduling", "%s", ev.message)
}

// flushLocked sends the held events and stops holding (e.mu held).
func (e *eventRecorder) flushLocked() {
	for _, ev := range e.held {
		e.send(ev)
	}
	e.held, e.flushed = nil, true
}

// wait sends the held events once sending reports true (or drops them when ctx ends first).
func (e *eventRecorder) wait() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		e.mu.Lock()
		if e.flushed || e.sending() {
			e.flushLocked()
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
	}
}

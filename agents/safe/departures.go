package safe

import (
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The pods that left each node: the node model (model.go) takes a departed pod's estimate off
// the node's measured usage for the part of the statistics' window it was there, at once,
// instead of waiting for the annotator's next statistics. The agent hears departures from the
// program's pod events (framework.Handle.PodEvents: the extender's cache, or the scheduler's
// pod informer in plugin mode): a deleted pod, or one that reached Succeeded or Failed.

// departure is one pod that left a node.
type departure struct {
	pod *corev1.Pod
	// placed is when it was bound (placedAt; the zero time when unknown), left when it left.
	placed, left time.Time
}

// nodeDepartures is what departures keeps of one node.
type nodeDepartures struct {
	// seq changes with every departure recorded: answers derived from the list are keyed by it.
	seq  uint64
	list []departure
}

// departures keeps, per node, the pods that left it within keep, at most maxDepartures in all.
type departures struct {
	keep time.Duration
	now  func() time.Time

	mu     sync.RWMutex
	byNode map[string]*nodeDepartures
	total  int
	seq    uint64
	// seqs holds each node's seq for seqOf, read without the lock on every node of every call;
	// any is false until the first departure.
	seqs sync.Map // node name -> uint64
	any  atomic.Bool
	// last is seq, published after every node's seqs: a reader that loads it, then a node's
	// seq, reads that node's seq as of last or later (global).
	last atomic.Uint64
}

// maxDepartures bounds what departures keeps: past it, the oldest half of each node's list is
// dropped (a node then looks as busy as its statistics say, the design before the node model).
const maxDepartures = 1 << 16

func newDepartures(keep time.Duration, now func() time.Time) *departures {
	return &departures{keep: keep, now: now, byNode: map[string]*nodeDepartures{}}
}

// handler is the pod event handler that records departures.
func (d *departures) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*corev1.Pod)
			p, ok2 := obj.(*corev1.Pod)
			if ok1 && ok2 && !isTerminated(o) && isTerminated(p) {
				d.left(o)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok && !isTerminated(p) {
				d.left(p)
			}
		},
	}
}

func isTerminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// left records that pod left its node now.
func (d *departures) left(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	now := d.now()
	placed, _ := placedAt(pod)
	d.mu.Lock()
	defer d.mu.Unlock()
	nd := d.byNode[pod.Spec.NodeName]
	if nd == nil {
		nd = &nodeDepartures{}
		d.byNode[pod.Spec.NodeName] = nd
	}
	// Drop what is older than keep on this node, and everywhere when the bound is reached.
	d.total -= len(nd.list)
	nd.list = prune(nd.list, now.Add(-d.keep))
	d.total += len(nd.list)
	if d.total >= maxDepartures {
		for node, o := range d.byNode {
			d.total -= len(o.list) - len(o.list)/2
			o.list = append([]departure(nil), o.list[len(o.list)-len(o.list)/2:]...)
			d.seq++
			o.seq = d.seq
			d.seqs.Store(node, o.seq)
			if len(o.list) == 0 && o != nd {
				delete(d.byNode, node)
			}
		}
	}
	nd.list = append(nd.list, departure{pod: pod, placed: placed, left: now})
	d.total++
	d.seq++
	nd.seq = d.seq
	d.seqs.Store(pod.Spec.NodeName, nd.seq)
	d.any.Store(true)
	d.last.Store(d.seq)
}

// global returns the sequence of the latest departure anywhere (0: none, or no departures
// kept): a node's seqOf read after it is current as of it, so an answer keyed by a node's
// sequence that was found current at global g stays current while global is g.
func (d *departures) global() uint64 {
	if d == nil {
		return 0
	}
	return d.last.Load()
}

// prune returns list without the departures that left before since.
func prune(list []departure, since time.Time) []departure {
	i := 0
	for i < len(list) && list[i].left.Before(since) {
		i++
	}
	if i == 0 {
		return list
	}
	return append(list[:0:0], list[i:]...)
}

// on returns the departures from node and their sequence number; the list is shared, never
// modified.
func (d *departures) on(node string) ([]departure, uint64) {
	if d == nil {
		return nil, 0
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	nd := d.byNode[node]
	if nd == nil {
		return nil, 0
	}
	return nd.list, nd.seq
}

// seqOf returns node's sequence number alone (cheap: the key of remembered answers).
func (d *departures) seqOf(node string) uint64 {
	if d == nil || !d.any.Load() {
		return 0
	}
	if v, ok := d.seqs.Load(node); ok {
		return v.(uint64)
	}
	return 0
}

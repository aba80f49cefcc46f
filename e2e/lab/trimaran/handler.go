package trimaran

import (
	"context"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
)

// assigned is a pod seen bound, and when: handler.go's podInfo.
type assigned struct {
	at  time.Time
	pod *v1.Pod
}

// PodAssignCache is trimaran's PodAssignEventHandler (pkg/trimaran/handler.go): each node's
// pods in the order they were seen bound, with the time they were seen, cleaned every
// CacheCleanup of the pods seen more than ReportingInterval ago.
type PodAssignCache struct {
	mu        sync.RWMutex
	byNode    map[string][]assigned
	reporting time.Duration
	now       func() time.Time
}

func newPodAssignCache(reporting time.Duration) *PodAssignCache {
	return &PodAssignCache{byNode: map[string][]assigned{}, reporting: reporting, now: time.Now}
}

// start cleans the cache every period until ctx ends (handler.go New).
func (p *PodAssignCache) start(ctx context.Context, period time.Duration) {
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.cleanup()
			}
		}
	}()
}

// addToHandle registers the cache on the scheduler's pod informer, for bound pods only
// (handler.go AddToHandle and isAssigned).
func (p *PodAssignCache) addToHandle(h fwk.Handle) error {
	_, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			pod := podOf(obj)
			return pod != nil && pod.Spec.NodeName != ""
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { p.add(podOf(obj)) },
			UpdateFunc: func(oldObj, newObj any) {
				if o, n := podOf(oldObj), podOf(newObj); o != nil && n != nil && o.Spec.NodeName != n.Spec.NodeName {
					p.add(n)
				}
			},
			DeleteFunc: func(obj any) { p.remove(podOf(obj)) },
		},
	})
	return err
}

// podOf returns the pod of an informer's object, a tombstone's included (handler.go's OnDelete
// would panic on a tombstone; here it is read).
func podOf(obj any) *v1.Pod {
	switch t := obj.(type) {
	case *v1.Pod:
		return t
	case cache.DeletedFinalStateUnknown:
		pod, _ := t.Obj.(*v1.Pod)
		return pod
	}
	return nil
}

// add is handler.go updateCache.
func (p *PodAssignCache) add(pod *v1.Pod) {
	if pod == nil || pod.Spec.NodeName == "" {
		return
	}
	p.mu.Lock()
	p.byNode[pod.Spec.NodeName] = append(p.byNode[pod.Spec.NodeName], assigned{at: p.now(), pod: pod})
	p.mu.Unlock()
}

// remove is handler.go OnDelete: the first entry of the pod's node with its UID.
func (p *PodAssignCache) remove(pod *v1.Pod) {
	if pod == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.byNode[pod.Spec.NodeName]
	for i, a := range list {
		if a.pod.UID == pod.UID {
			p.byNode[pod.Spec.NodeName] = append(list[:i:i], list[i+1:]...)
			return
		}
	}
}

// cleanup is handler.go cleanupCache: per node, the entries before the first one seen less
// than the reporting interval ago are dropped. As there, a node all of whose entries are old
// keeps them (sort.Search finds no recent entry and the node is skipped); they no longer count
// in TargetLoadPacking's score unless the metrics are older than they are.
func (p *PodAssignCache) cleanup() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for node, list := range p.byNode {
		idx := sort.Search(len(list), func(i int) bool { return list[i].at.Add(p.reporting).After(now) })
		if idx == len(list) {
			continue
		}
		list = append(list[:0:0], list[idx:]...)
		if len(list) == 0 {
			delete(p.byNode, node)
		} else {
			p.byNode[node] = list
		}
	}
}

// missingCPU is the predicted cpu (millicores) of the pods bound to node that the metrics of
// window end may not show yet: TargetLoadPacking.Score's loop over ScheduledPodsCache. A pod
// counts when it was seen bound after the window's end, or less than the reporting interval
// before it.
func (p *PodAssignCache) missingCPU(node string, end time.Time, predict func(*v1.Pod) int64) int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var missing int64
	for _, a := range p.byNode[node] {
		if a.at.After(end) || end.Sub(a.at) < p.reporting {
			missing += predict(a.pod)
		}
	}
	return missing
}

package gang

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Counts keeps the number of non-terminated pods of every group, fed with pod events (Set for
// an addition or update, Delete for a deletion), so that a group's count costs a map lookup
// instead of a list of pods. Any source of pod events feeds it: the extender's shared pod cache,
// a scheduler plugin's informer. It is safe for concurrent use; the zero value is not ready:
// use NewCounts.
type Counts struct {
	mu      sync.RWMutex
	byGroup map[Key]int
	// member is the group each counted pod is counted in, by pod key (namespace/name).
	member map[string]Key
}

// NewCounts returns empty counts.
func NewCounts() *Counts {
	return &Counts{byGroup: map[Key]int{}, member: map[string]Key{}}
}

// PodKey is the key Counts knows a pod by: namespace/name, as the informers' keys.
func PodKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Set records pod as it now is: counted in its group unless it is in none or has terminated,
// and no longer counted in a group it has left (a relabelled pod).
func (c *Counts) Set(pod *corev1.Pod) {
	key := PodKey(pod)
	group, in := KeyOf(pod)
	in = in && !terminated(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, was := c.member[key]
	if was && in && prev == group {
		return
	}
	if was {
		c.dropLocked(key, prev)
	}
	if in {
		c.member[key] = group
		c.byGroup[group]++
	}
}

// Delete forgets the pod of key (namespace/name).
func (c *Counts) Delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, was := c.member[key]; was {
		c.dropLocked(key, prev)
	}
}

func (c *Counts) dropLocked(key string, group Key) {
	delete(c.member, key)
	if c.byGroup[group]--; c.byGroup[group] <= 0 {
		delete(c.byGroup, group)
	}
}

// Count returns the number of non-terminated pods counted in group.
func (c *Counts) Count(group Key) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byGroup[group]
}

// CountWith returns Count(group), plus one when pod itself is not counted there yet: the pod
// being placed exists (the scheduler got it from the API server) even when the events that
// feed the counts have not told of it yet.
func (c *Counts) CountWith(group Key, pod *corev1.Pod) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.byGroup[group]
	if g, ok := c.member[PodKey(pod)]; !ok || g != group {
		n++
	}
	return n
}

// Seen reports whether pod is counted in some group: the events have told of it.
func (c *Counts) Seen(pod *corev1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.member[PodKey(pod)]
	return ok
}

// Groups returns the number of groups with at least one pod counted.
func (c *Counts) Groups() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.byGroup)
}

// Handler returns the informer event handler that keeps c current (deletions may come as
// cache.DeletedFinalStateUnknown).
func (c *Counts) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				c.Set(p)
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				c.Set(p)
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.Delete(key)
			}
		},
	}
}

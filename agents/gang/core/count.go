package core

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Counts keeps the number of non-terminated pods of every group, fed with pod events (Set for
// an addition or update, Delete for a deletion), so that a group's count costs a map lookup
// instead of a list of pods. Any source of pod events feeds it: the extender's shared pod cache,
// a scheduler plugin's informer. It is safe for concurrent use; the zero value is not ready:
// use NewCounts.
//
// A pod that still carries scheduling gates is counted apart (Gated): it exists but cannot be
// placed, so it does not count towards its group's quorum (as Coscheduling's PreFilter, which
// lets gated pods fill only the room between minMember and the group's size).
type Counts struct {
	mu sync.RWMutex
	// byGroup counts the ungated members, gated the gated ones.
	byGroup map[Key]int
	gated   map[Key]int
	// since is the earliest creation time of the members counted since the group was last
	// empty: the group's age, for the queue order of groups that have no object of their own.
	since map[Key]time.Time
	// member is the group each counted pod is counted in, by pod key (namespace/name).
	member map[string]entry
}

type entry struct {
	group Key
	gated bool
}

// NewCounts returns empty counts.
func NewCounts() *Counts {
	return &Counts{byGroup: map[Key]int{}, gated: map[Key]int{}, since: map[Key]time.Time{}, member: map[string]entry{}}
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
	now := entry{group: group, gated: len(pod.Spec.SchedulingGates) > 0}
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, was := c.member[key]
	if was && in && prev == now {
		return
	}
	if was {
		c.dropLocked(key, prev)
	}
	if in {
		c.member[key] = now
		if now.gated {
			c.gated[group]++
		} else {
			c.byGroup[group]++
		}
		if s, ok := c.since[group]; !ok || pod.CreationTimestamp.Time.Before(s) {
			c.since[group] = pod.CreationTimestamp.Time
		}
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

func (c *Counts) dropLocked(key string, e entry) {
	delete(c.member, key)
	counts := c.byGroup
	if e.gated {
		counts = c.gated
	}
	if counts[e.group]--; counts[e.group] <= 0 {
		delete(counts, e.group)
	}
	if c.byGroup[e.group] == 0 && c.gated[e.group] == 0 {
		delete(c.since, e.group)
	}
}

// Count returns the number of non-terminated, ungated pods counted in group.
func (c *Counts) Count(group Key) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byGroup[group]
}

// Gated returns the number of non-terminated pods of group that carry scheduling gates.
func (c *Counts) Gated(group Key) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gated[group]
}

// Since returns the earliest creation time among the pods counted in group since it was last
// empty, and false when none is counted.
func (c *Counts) Since(group Key) (time.Time, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.since[group]
	return s, ok
}

// CountWith returns Count(group) with pod counted among them: the pod being placed exists (the
// scheduler got it from the API server) and is ungated, even when the events that feed the
// counts have not told of it yet, or have not yet told that its gates were removed.
func (c *Counts) CountWith(group Key, pod *corev1.Pod) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.byGroup[group]
	if e, ok := c.member[PodKey(pod)]; !ok || e.group != group || e.gated {
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
	return len(c.since)
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

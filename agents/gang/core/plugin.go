package core

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// This file is the group logic only a scheduler can act on (plugin mode: scheduler/gangplugin):
// the Permit and PostFilter decisions, the group's backoff and its age in the queue. It knows
// no scheduler types: the plugin passes counts, numbers and times in, and turns the answers
// into statuses.

// MaxScheduleTimeout is kube-scheduler's longest Permit wait (15 minutes): a PodGroup's
// scheduleTimeoutSeconds beyond it is cut to it.
const MaxScheduleTimeout = 15 * time.Minute

// PermitTimeout is how long the members of the group of pg wait for each other at Permit: the
// PodGroup's scheduleTimeoutSeconds when it sets one above 0 (at most MaxScheduleTimeout), else
// def (a riya group, pg nil, has no setting of its own).
func PermitTimeout(pg *PodGroup, def time.Duration) time.Duration {
	if pg != nil && pg.ScheduleTimeoutSeconds != nil && *pg.ScheduleTimeoutSeconds > 0 {
		return min(time.Duration(*pg.ScheduleTimeoutSeconds)*time.Second, MaxScheduleTimeout)
	}
	return def
}

// Admit is the quorum and room check of a member about to be placed (plugin mode's PreFilter
// after the backoff; the extender's filter): "" when enough members exist (CheckCounts) and,
// for a PodGroup with spec.minResources, the room free (free, called only then; nil when the
// room is unknown, which skips the check) holds it (CheckMinResources); else the reason.
func (r Requirement) Admit(counts *Counts, pod *corev1.Pod, free func() []corev1.ResourceList) string {
	if reason := r.CheckCounts(counts, pod); reason != "" {
		return reason
	}
	if len(r.MinResources) == 0 || free == nil {
		return ""
	}
	return r.CheckMinResources(free())
}

// Permit is the Permit decision for a member placed on a node.
type Permit struct {
	// Wait: the member waits (up to the group's timeout) for its siblings, for Reason.
	Wait   bool
	Reason string
	// First: it is the group's first member to wait, whose unplaced siblings are brought back to
	// the scheduling queue (a sibling turned away before it existed is tried again).
	First bool
	// Completes: it is the member that brings the group to its minimum: its waiting siblings
	// are allowed with it, so that they bind together.
	Completes bool
}

// Permit decides for a member of the group just placed, assigned returning how many other
// members are assumed or bound (called only for a minimum above 1): it waits while fewer than
// the minimum are placed, it included, and else completes the group (a group of minimum 0 or 1
// holds nothing back: its members neither wait nor complete anything).
func (r Requirement) Permit(assigned func() int) Permit {
	if r.Min <= 1 {
		return Permit{}
	}
	placed := assigned() + 1
	if placed >= int(r.Min) {
		return Permit{Completes: true}
	}
	return Permit{Wait: true, First: placed == 1, Reason: fmt.Sprintf("pod group %s has %d of %d members placed", r.Key, placed, r.Min)}
}

// Release is the PostFilter decision, as Coscheduling's: when a member finds no node while
// assigned other members are placed, the group's waiting members are released at once unless
// the group has its minimum placed, or the members missing are at most rejectPercentage (0..100)
// of the minimum (with only a few missing, the others may still fit).
func (r Requirement) Release(assigned int, rejectPercentage int32) bool {
	if assigned >= int(r.Min) {
		return false
	}
	missing := float64(int(r.Min)-assigned) / float64(r.Min)
	return missing > float64(rejectPercentage)/100
}

// ReleasedWaiting is the reason a waiting member is rejected with when member found no node.
func (r Requirement) ReleasedWaiting(member string, assigned int) string {
	return fmt.Sprintf("pod group %s: member %s found no node while %d of %d were placed; the group is released", r.Key, member, assigned, r.Min)
}

// Released is the reason of the member that found no node, released waiting members with it.
func (r Requirement) Released(member string, assigned, released int) string {
	return fmt.Sprintf("pod group %s is released: %s found no node (%d of %d placed, %d waiting released)", r.Key, member, assigned, r.Min, released)
}

// NotPlaced is the reason a waiting member of group is rejected with when member, placed, will
// not bind (its timeout, or a later failure): no part of the group binds without it.
func NotPlaced(group Key, member string) string {
	return fmt.Sprintf("pod group %s: member %s was not placed; the group is released", group, member)
}

// SameGroup reports whether a and b are members of one group (a pod in no group is in none).
func SameGroup(a, b *corev1.Pod) bool {
	k1, ok1 := KeyOf(a)
	k2, ok2 := KeyOf(b)
	return ok1 && ok2 && k1 == k2
}

// Created is the group's creation, for the queue order: its PodGroup object's (lookup nil, the
// object not read yet or without a creation time: zero), a riya group's oldest member counted
// since the group was last empty (none: zero).
func Created(key Key, lookup PodGroupLookup, counts *Counts) time.Time {
	if key.Label == LabelPodGroupName {
		if lookup == nil {
			return time.Time{}
		}
		if pg, err := lookup(key.Namespace, key.Name); err == nil && pg != nil {
			return pg.Created
		}
		return time.Time{}
	}
	since, _ := counts.Since(key)
	return since
}

// The default group backoff: kube-scheduler's default per-pod backoff (podInitialBackoffSeconds
// 1, podMaxBackoffSeconds 10).
const (
	InitialGroupBackoff = time.Second
	MaxGroupBackoff     = 10 * time.Second
)

// History is what plugin mode remembers of each group's scheduling: its last failure (a member
// found no node, or the group was released at Permit), its backoff, the members turned away
// during it, and the PodGroups already warned about. It is safe for concurrent use; the clock is
// the caller's (the now arguments). The zero value is not ready: use NewHistory.
type History struct {
	mu sync.Mutex
	// failed is each group's last failure: its timestamp in the queue order until it is placed.
	failed map[Key]time.Time
	// backoff is when a group backed off may be tried again; streak counts its consecutive
	// default backoffs (for their doubling).
	backoff map[Key]time.Time
	streak  map[Key]int
	// turnedAway marks the groups a member of which was rejected for the backoff: only those
	// need bringing back when it ends (the others are in the queue, waiting for their events).
	turnedAway map[Key]bool
	// warned is, per key, the version last warned about.
	warned map[string]string
}

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{failed: map[Key]time.Time{}, backoff: map[Key]time.Time{}, streak: map[Key]int{},
		turnedAway: map[Key]bool{}, warned: map[string]string{}}
}

// QueueTime is Coscheduling's queue timestamp of a member of the group key: the group's last
// failure if it has one, else its creation (see Created; zero: unknown), else queued (the time
// the member first entered the queue).
func (h *History) QueueTime(key Key, created, queued time.Time) time.Time {
	h.mu.Lock()
	failed, ok := h.failed[key]
	h.mu.Unlock()
	switch {
	case ok:
		return failed
	case !created.IsZero():
		return created
	}
	return queued
}

// MarkFailed records a failure of the group at now: it goes behind the groups and pods that
// have waited since.
func (h *History) MarkFailed(key Key, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failed[key] = now
}

// Placed forgets the group's failures and backoff once it is placed.
func (h *History) Placed(key Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.failed, key)
	delete(h.backoff, key)
	delete(h.streak, key)
	delete(h.turnedAway, key)
}

// Fail records that pod, a member of the group req, found no node at now (PostFilter, after
// Release), released waiting members being rejected with it. A group whose members exist (pod
// counted among counts: at least its minimum; one short waits for them instead, they bring it
// back) is kept out
// for backoff (podGroupBackoffSeconds), or, when that is 0 and members were released (their
// release is what would wake the group again at once), for the default: 1 s doubling to 10 s
// over its consecutive failures. It returns the backoff started, 0 for none.
func (h *History) Fail(req Requirement, counts *Counts, pod *corev1.Pod, now time.Time, backoff time.Duration, released int) time.Duration {
	key, complete := req.Key, counts.CountWith(req.Key, pod) >= int(req.Min)
	h.mu.Lock()
	defer h.mu.Unlock()
	d := backoff
	if d == 0 && released > 0 {
		d = min(InitialGroupBackoff<<min(h.streak[key], 4), MaxGroupBackoff)
		h.streak[key]++
	}
	if d == 0 || !complete {
		d = 0
	} else {
		h.backoff[key] = now.Add(d)
	}
	h.failed[key] = now
	return d
}

// BackedOff returns when the group may be tried again, and true while it is backed off at now;
// a member turned away for it (turnAway) is remembered for BackoffEnded.
func (h *History) BackedOff(key Key, now time.Time, turnAway bool) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	until, ok := h.backoff[key]
	if !ok {
		return time.Time{}, false
	}
	if !now.Before(until) {
		delete(h.backoff, key)
		return time.Time{}, false
	}
	if turnAway {
		h.turnedAway[key] = true
	}
	return until, true
}

// BackoffEnded reports whether members of the group were turned away during the backoff that
// just ended (and forgets it): only then is the group brought back.
func (h *History) BackoffEnded(key Key) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.turnedAway[key]
	delete(h.turnedAway, key)
	return was
}

// WarnOnce reports whether a warning about key at version is due: once per version of the
// object, so that fixing it (a new version) is warned about again only if still wrong.
func (h *History) WarnOnce(key, version string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.warned[key] == version {
		return false
	}
	h.warned[key] = version
	return true
}

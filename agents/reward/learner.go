package reward

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-safe-scheduler/extender/workload"
)

// Observation values.
const (
	xRunning     = 1.0 // became Running and Ready, or Succeeded
	xFailed      = 0.0 // Failed, Unknown, not started in time, bind failed
	xLongRestart = 0.5 // a container restarted after running at least the MTTF
	xQuickCrash  = 0.0 // a container restarted after running less than the MTTF
)

// PodType is the type a pod's rewards are kept under: its label podtype, else, for a pod with a
// controller, its workload (package workload, the usage learner's key: "deployment/shop/web"),
// else its label app, else name, else the pod's name. The labels keep their meaning from before
// the workload key existed (no namespace, the pod's name last), so that tables already learnt
// for pods of no controller keep their rows; a workload key has slashes, which no label value
// has, so the two never collide.
func PodType(p *corev1.Pod) string {
	if v := p.Labels["podtype"]; v != "" {
		return v
	}
	if metav1.GetControllerOf(p) != nil {
		if k := workload.Of(p, nil); !k.IsZero() {
			return k.String()
		}
	}
	for _, l := range []string{"app", "name"} {
		if v := p.Labels[l]; v != "" {
			return v
		}
	}
	return p.Name
}

// podState is what the learner remembers of a live pod, so that each transition counts once.
type podState struct {
	namespace, name string
	typ             string
	node            string
	// boundAt is when the pod was bound (its PodScheduled condition, else when first seen bound).
	boundAt  time.Time
	deleting bool
	// running: the pod has been seen Running (it started, for the start timeout).
	running bool
	// Transitions already counted.
	ready, unknown, timedOut bool
	restarts                 map[string]int32
	// bindFailed lists the nodes a bind of this pod failed on (counted once each).
	bindFailed map[string]bool
}

// observation is one outcome to learn.
type observation struct {
	typ, node string
	x         float64
	why       string
}

// learner turns pod changes into observations, once per pod UID and transition. It is not safe
// for concurrent use: the pod informer calls it one change at a time, and the timeout sweep
// takes the same lock (see Agent.mu).
type learner struct {
	mttf, startTimeout time.Duration
	pods               map[types.UID]*podState
}

func newLearner(mttf, startTimeout time.Duration) *learner {
	return &learner{mttf: mttf, startTimeout: startTimeout, pods: map[types.UID]*podState{}}
}

// update learns from the pod's new state p, first seen or changed. since is the time up to which
// transitions were already counted before this process started (the stored table's
// observedUntil): a transition at or before it is taken as counted. now is the local time.
func (l *learner) update(p *corev1.Pod, since, now time.Time) []observation {
	st := l.pods[p.UID]
	if st == nil {
		st = &podState{namespace: p.Namespace, name: p.Name, typ: PodType(p), restarts: map[string]int32{}}
		l.pods[p.UID] = st
	}
	st.deleting = p.DeletionTimestamp != nil
	if p.Spec.NodeName == "" {
		return nil
	}
	if st.node == "" {
		st.node = p.Spec.NodeName
		st.boundAt = now
		if c := condition(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			st.boundAt = c.LastTransitionTime.Time
		}
	}
	if st.deleting {
		// Outcomes of a pod being deleted say nothing of the node.
		return nil
	}
	var out []observation
	add := func(x float64, why string) {
		out = append(out, observation{typ: st.typ, node: st.node, x: x, why: why})
	}
	after := func(t time.Time) bool { return t.IsZero() || t.After(since) }

	switch p.Status.Phase {
	case corev1.PodRunning:
		st.running = true
		if c := condition(p, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue && !st.ready {
			st.ready = true
			if after(c.LastTransitionTime.Time) {
				add(xRunning, "running and ready")
			}
		}
	case corev1.PodUnknown:
		if !st.unknown {
			st.unknown = true
			add(xFailed, "phase Unknown")
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		prev, seen := st.restarts[cs.Name]
		if cs.RestartCount <= prev {
			continue
		}
		st.restarts[cs.Name] = cs.RestartCount
		t := cs.LastTerminationState.Terminated
		if !seen && prev == 0 && t != nil && !after(t.FinishedAt.Time) {
			continue // restarts that happened before the stored table was written
		}
		x, why := xQuickCrash, "container "+cs.Name+" restarted within the MTTF"
		if t != nil && !t.StartedAt.IsZero() && t.FinishedAt.Sub(t.StartedAt.Time) >= l.mttf {
			x, why = xLongRestart, "container "+cs.Name+" restarted after running at least the MTTF"
		}
		add(x, why)
	}
	return out
}

// sweep reports the bound pods that have not become Running within the start timeout, once each.
// A timeout that expired at or before since was counted before this process started.
func (l *learner) sweep(since, now time.Time) []observation {
	var out []observation
	for _, st := range l.pods {
		if st.node == "" || st.running || st.timedOut || st.deleting || st.boundAt.IsZero() {
			continue
		}
		if expiry := st.boundAt.Add(l.startTimeout); !now.Before(expiry) {
			st.timedOut = true
			if expiry.After(since) {
				out = append(out, observation{typ: st.typ, node: st.node, x: xFailed, why: "not running within the start timeout"})
			}
		}
	}
	return out
}

// follows reports whether the learner follows the pod (it is in the shared informer).
func (l *learner) follows(uid types.UID) bool {
	_, ok := l.pods[uid]
	return ok
}

// gone forgets a pod that left the informer and returns its state (nil if unknown).
func (l *learner) gone(uid types.UID) *podState {
	st := l.pods[uid]
	delete(l.pods, uid)
	return st
}

// terminal learns the final phase of a pod that left the informer without being deleted.
func terminal(st *podState, phase corev1.PodPhase) (observation, bool) {
	if st == nil || st.node == "" || st.deleting {
		return observation{}, false
	}
	switch phase {
	case corev1.PodSucceeded:
		return observation{typ: st.typ, node: st.node, x: xRunning, why: "succeeded"}, true
	case corev1.PodFailed:
		return observation{typ: st.typ, node: st.node, x: xFailed, why: "failed"}, true
	}
	return observation{}, false
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

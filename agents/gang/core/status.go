package core

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The PodGroup phases Coscheduling's controller (scheduler-plugins pkg/controllers) writes.
const (
	PhasePending    = "Pending"
	PhaseScheduling = "Scheduling"
	PhaseRunning    = "Running"
	PhaseFinished   = "Finished"
	PhaseFailed     = "Failed"
)

// Status is what the scheduler writes of a PodGroup's status.
type Status struct {
	Phase     string `json:"phase,omitempty"`
	Scheduled int32  `json:"scheduled"`
	Running   int32  `json:"running"`
	Succeeded int32  `json:"succeeded"`
	Failed    int32  `json:"failed"`
	// ScheduleStartTime is when the scheduler first tried a member of the group.
	ScheduleStartTime *metav1.Time `json:"scheduleStartTime,omitempty"`
}

// NextStatus is Coscheduling's controller's reconciliation, run until it settles: from no
// phase to Pending; from Pending to Scheduling once minMember pods exist; then, from the
// members' phases: Pending when fewer than minMember exist, Scheduling while fewer than
// minMember run or have succeeded, Running once they do, Failed when a member failed and
// failed+running+succeeded reach minMember, Finished once minMember have succeeded. Finished
// and Failed are final. Scheduled counts the members bound to a node.
func NextStatus(cur Status, min int32, pods []*corev1.Pod) Status {
	next := cur
	next.Scheduled, next.Running, next.Succeeded, next.Failed = 0, 0, 0, 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			next.Scheduled++
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			next.Running++
		case corev1.PodSucceeded:
			next.Succeeded++
		case corev1.PodFailed:
			next.Failed++
		}
	}
	if cur.Phase == PhaseFinished || cur.Phase == PhaseFailed {
		return next
	}
	for range 3 {
		before := next.Phase
		switch next.Phase {
		case "":
			next.Phase = PhasePending
		case PhasePending:
			if len(pods) >= int(min) {
				next.Phase = PhaseScheduling
			}
		default:
			switch {
			case len(pods) < int(min):
				next.Phase = PhasePending
			case next.Succeeded >= min:
				next.Phase = PhaseFinished
			case next.Failed != 0 && next.Failed+next.Running+next.Succeeded >= min:
				next.Phase = PhaseFailed
			case next.Succeeded+next.Running >= min:
				next.Phase = PhaseRunning
			default:
				next.Phase = PhaseScheduling
			}
		}
		if next.Phase == before {
			break
		}
	}
	return next
}

// StatusEqual reports whether a and b say the same (ScheduleStartTime compared as times: a
// status read back from the API server holds it in another location).
func StatusEqual(a, b Status) bool {
	ta, tb := a.ScheduleStartTime, b.ScheduleStartTime
	a.ScheduleStartTime, b.ScheduleStartTime = nil, nil
	return a == b && (ta == nil) == (tb == nil) && (ta == nil || ta.Equal(tb))
}

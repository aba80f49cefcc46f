package gangplugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestNextStatus(t *testing.T) {
	member := func(node string, phase corev1.PodPhase) *corev1.Pod {
		p := mkPod("m")
		p.Spec.NodeName, p.Status.Phase = node, phase
		return p
	}
	pending, bound, running := member("", corev1.PodPending), member("n1", corev1.PodPending), member("n1", corev1.PodRunning)
	succeeded, failed := member("n1", corev1.PodSucceeded), member("n1", corev1.PodFailed)
	for _, tc := range []struct {
		name string
		cur  string
		pods []*corev1.Pod
		want Status
	}{
		{"new, no member", "", nil, Status{Phase: PhasePending}},
		{"new, 1 of 2", "", []*corev1.Pod{pending}, Status{Phase: PhasePending}},
		{"minMember exist: Scheduling", "", []*corev1.Pod{pending, pending}, Status{Phase: PhaseScheduling}},
		{"bound, not running: Scheduling", PhaseScheduling, []*corev1.Pod{bound, bound}, Status{Phase: PhaseScheduling, Scheduled: 2}},
		{"one running of 2", PhaseScheduling, []*corev1.Pod{running, bound}, Status{Phase: PhaseScheduling, Scheduled: 2, Running: 1}},
		{"minMember running", PhaseScheduling, []*corev1.Pod{running, running, pending}, Status{Phase: PhaseRunning, Scheduled: 2, Running: 2}},
		{"running and succeeded reach the minimum", PhaseRunning, []*corev1.Pod{running, succeeded}, Status{Phase: PhaseRunning, Scheduled: 2, Running: 1, Succeeded: 1}},
		{"a member failed", PhaseRunning, []*corev1.Pod{running, failed}, Status{Phase: PhaseFailed, Scheduled: 2, Running: 1, Failed: 1}},
		{"minMember succeeded", PhaseRunning, []*corev1.Pod{succeeded, succeeded}, Status{Phase: PhaseFinished, Scheduled: 2, Succeeded: 2}},
		{"a member deleted: back to Pending", PhaseScheduling, []*corev1.Pod{bound}, Status{Phase: PhasePending, Scheduled: 1}},
		{"Finished is final", PhaseFinished, nil, Status{Phase: PhaseFinished}},
		{"Failed is final", PhaseFailed, []*corev1.Pod{running, running}, Status{Phase: PhaseFailed, Scheduled: 2, Running: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, nextStatus(Status{Phase: tc.cur}, 2, tc.pods)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

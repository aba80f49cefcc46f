package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kube-safe-scheduler/extender/e2e/harness"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRejections(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want map[string]int
	}{
		{"", nil},
		// kube-scheduler's FitError with an extender's or a plugin's reasons holding ", " and
		// numbers, and the preemption part, which is left out.
		{"0/200 nodes are available: 120 Insufficient memory, 1 cpu risk 0.42 > 0.30 (mu 0.81, sigma 0.12, threshold 0.90), " +
			"2 cpu risk 0.51 > 0.30 (mu 0.85, sigma 0.10, threshold 0.90); memory risk 0.33 > 0.30 (mu 0.9, sigma 0.1, threshold 0.90), " +
			"77 cpu risk 0.99 > 0.30 (mu 0.95, sigma 0.02, threshold 0.90). preemption: 0/200 nodes are available: 200 No preemption victims found for incoming pod.",
			map[string]int{"Insufficient memory": 120, "cpu risk # > #": 78, "cpu risk # > #; memory risk # > #": 2}},
	} {
		if diff := cmp.Diff(tc.want, rejections(tc.msg)); diff != "" {
			t.Errorf("rejections(%q): -want +got\n%s", tc.msg, diff)
		}
	}
}

func TestPendingReasons(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	pod := func(node string, msg string) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
		p.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
		if msg != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: msg}}
		}
		return p
	}
	pods := []corev1.Pod{
		pod("node-1", ""), // placed
		pod("", "0/4 nodes are available: 3 Insufficient memory, 1 Too many pods."),
		pod("", "0/4 nodes are available: 1 Insufficient memory, 3 cpu risk 0.5 > 0.3 (mu 0.9, sigma 0.1)."),
		pod("", ""), // not judged yet
		pod("", "running PreFilter plugin \"agents\": timed out after 12s"),
	}
	// 4 pending: Insufficient memory 4 nodes, cpu risk 3, Too many pods 1, over 4 pods; one
	// error.
	want := "4 pods pending (1 not judged yet, created 1m30s to 1m30s ago in real time, median 1m30s); nodes rejected per pending pod, by reason: 1.0 Insufficient memory, 0.8 cpu risk # > #, 0.2 Too many pods; " +
		`1 pods: "running PreFilter plugin \"agents\": timed out after #s"`
	if got := pendingReasons(pods, now); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := pendingReasons(pods[:1], now); got != "no pod pending" {
		t.Errorf("no pod pending: got %s", got)
	}
}

func TestSummarizeQueue(t *testing.T) {
	body := `# HELP scheduler_schedule_attempts_total x
scheduler_schedule_attempts_total{profile="lab",result="scheduled"} 4000
scheduler_schedule_attempts_total{profile="lab",result="unschedulable"} 9000
scheduler_pending_pods{queue="active"} 700
scheduler_pending_pods{queue="backoff"} 12
scheduler_pending_pods{queue="unschedulable"} 400
scheduler_pending_pods{queue="gated"} 0
scheduler_queue_incoming_pods_total{event="NodeUpdate",queue="backoff"} 300
scheduler_queue_incoming_pods_total{event="NodeUpdate",queue="active"} 20
scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"} 4948
scheduler_queue_incoming_pods_total{event="ScheduleAttemptFailure",queue="unschedulable"} 9000
`
	want := "attempts scheduled 4000, unschedulable 9000, error 0; pending active 700, backoff 12, unschedulable 400, gated 0; pods queued by event: PodAdd 4948, NodeUpdate 320"
	ss, err := harness.ParseSamples(body)
	if err != nil {
		t.Fatal(err)
	}
	if got := summarizeQueue(ss); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
	pod := func(node string, msg string) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
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
	}
	// 3 pending: Insufficient memory 4 nodes, cpu risk 3, Too many pods 1, over 3 pods.
	want := "3 pods pending (1 not judged yet); nodes rejected per pending pod, by reason: 1.3 Insufficient memory, 1.0 cpu risk # > #, 0.3 Too many pods"
	if got := pendingReasons(pods); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := pendingReasons(pods[:1]); got != "no pod pending" {
		t.Errorf("no pod pending: got %s", got)
	}
}

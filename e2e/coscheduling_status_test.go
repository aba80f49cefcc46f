package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

var podGroupsGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// waitPodGroupStatus waits until the PodGroup's status has every field of want (as the API
// returns them: phase a string, counts int64) and returns the status.
func waitPodGroupStatus(t *testing.T, c *harness.Cluster, name string, want map[string]any) map[string]any {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	var status map[string]any
	deadline := time.Now().Add(harness.BindingTimeout)
	for time.Now().Before(deadline) {
		u, err := dyn.Resource(podGroupsGVR).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			status, _ = u.Object["status"].(map[string]any)
			ok := status != nil
			for k, v := range want {
				ok = ok && fmt.Sprint(status[k]) == fmt.Sprint(v)
			}
			if ok {
				return status
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("PodGroup %s: status %v, want %v", name, status, want)
	return nil
}

// setPhase sets a pod's status.phase, as its kubelet would.
func setPhase(t *testing.T, c *harness.Cluster, name string, phase corev1.PodPhase) {
	t.Helper()
	pod, err := c.Client.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = phase
	if _, err := c.Client.CoreV1().Pods("default").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCoschedulingPodGroupStatus: the scheduler writes the PodGroup's status as Coscheduling's
// controller does, through the status subresource, under the plugin file's service account:
// Pending with one of two members, Scheduling (scheduled 2, scheduleStartTime set) once both are
// bound, Running when their kubelet says so, Finished when they succeed.
func TestCoschedulingPodGroupStatus(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := startGang(t, m, harness.NodeSpec{Name: "n1"})
			podGroup(t, c, "pg", `"minMember": 2`)
			c.CreatePod(t, member(m, "pg-0", "pg", "1"))
			s := waitPodGroupStatus(t, c, "pg", map[string]any{"phase": "Pending", "scheduled": 0})
			if s["scheduleStartTime"] == nil {
				t.Errorf("no scheduleStartTime once a member was tried: %v", s)
			}
			c.CreatePod(t, member(m, "pg-1", "pg", "1"))
			c.WaitForBinding(t, "default", "pg-0")
			c.WaitForBinding(t, "default", "pg-1")
			waitPodGroupStatus(t, c, "pg", map[string]any{"phase": "Scheduling", "scheduled": 2, "running": 0})
			setPhase(t, c, "pg-0", corev1.PodRunning)
			setPhase(t, c, "pg-1", corev1.PodRunning)
			waitPodGroupStatus(t, c, "pg", map[string]any{"phase": "Running", "running": 2})
			setPhase(t, c, "pg-0", corev1.PodSucceeded)
			setPhase(t, c, "pg-1", corev1.PodSucceeded)
			waitPodGroupStatus(t, c, "pg", map[string]any{"phase": "Finished", "succeeded": 2, "running": 0})
		})
	}
}

package e2e

// Plugin mode's gang plugins (scheduler/gangplugin): pod-group holds a group's placements at
// Permit and lets them bind all together or releases them all on the group's timeout;
// group-priority orders the queue. Both as yamlfiles/scheduler.plugins.yaml enables them, against
// a real API server, under the file's service account.

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// gangPodGroup is the gang plugin the plugin file enables beside the agent functions.
const gangPodGroup = "pod-group"

// TestPluginsGang: nodes with room for 2 of a group of 3 (PodGroup minMember 3,
// scheduleTimeoutSeconds 5; each pod requests 1 cpu, the node has 2): none of the 3 binds, and
// the 2 that waited at Permit are released (FailedScheduling with the release, or the timeout)
// as soon as the third finds no room, before the timeout, still unbound. A second node: all 3
// bind.
func TestPluginsGang(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", "podgroup-crd.yaml"))
	c.Apply(t, []byte(`{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": {"name": "pg", "namespace": "default"}, "spec": {"minMember": 3, "scheduleTimeoutSeconds": 5}}`), false)
	c.CreateNode(t, harness.NodeSpec{Name: "n1", CPU: "2"})
	c.RunDeployment(t, withPlugins(t, []string{gangPodGroup}, nil), harness.RunOptions{Kubeconfig: sa})

	pods := []string{"g-0", "g-1", "g-2"}
	labels := map[string]string{"scheduling.x-k8s.io/pod-group": "pg"}
	created := time.Now()
	for _, p := range pods {
		c.CreatePod(t, harness.PodSpec{Name: p, SchedulerName: pluginSchedulerName, CPU: "1", Labels: labels})
	}
	// Two members fit on n1 and wait at Permit; the third fits nowhere. Until both waiting
	// members have been released (a FailedScheduling event naming the timeout or the release),
	// and for a second more, no member may be bound.
	released := map[string]string{}
	var releasedAt time.Time
	for {
		for _, p := range pods {
			if n := c.PodNode(t, "default", p); n != "" {
				t.Fatalf("%s bound to %s %.1fs after the group's creation although only 2 of 3 fit; events:\n%s",
					p, n, time.Since(created).Seconds(), harness.FormatEvents(c.Events(t, "default", p)))
			}
			if _, ok := released[p]; ok {
				continue
			}
			for _, e := range c.Events(t, "default", p) {
				if e.Reason == "FailedScheduling" && (strings.Contains(e.Message, "rejected due to timeout after waiting 5s at plugin pod-group") ||
					strings.Contains(e.Message, "pod group default/pg: member")) {
					released[p] = e.Message
				}
			}
		}
		if len(released) >= 2 && releasedAt.IsZero() {
			releasedAt = time.Now()
			t.Logf("released after %.1fs: %v", time.Since(created).Seconds(), released)
		}
		if !releasedAt.IsZero() && time.Since(releasedAt) > time.Second {
			break
		}
		if time.Since(created) > harness.BindingTimeout {
			t.Fatalf("no two members released within %s (released: %v); events of g-0:\n%s", harness.BindingTimeout, released,
				harness.FormatEvents(c.Events(t, "default", "g-0")))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The member that finds no room releases the waiting ones at once (PostFilter), not after
	// the group's 5 s timeout.
	if since := releasedAt.Sub(created); since >= 5*time.Second {
		t.Errorf("members released %.1fs after creation: they held the room until the group's 5s timeout", since.Seconds())
	}

	added := time.Now()
	c.CreateNode(t, harness.NodeSpec{Name: "n2", CPU: "2"})
	bound := waitBound(t, c, pods, added)
	t.Logf("room for the group: bound after the second node's creation: g-0 %.1fs, g-1 %.1fs, g-2 %.1fs",
		bound["g-0"].Seconds(), bound["g-1"].Seconds(), bound["g-2"].Seconds())
}

// TestPluginsQueueOrder: group-priority orders the queue. Two nodes with room for one pod each;
// the pods, created while no scheduler runs, wait in the queue together when it starts, older
// and alphabetically first (the order kube-scheduler's PrioritySort would take them in) the
// loser: on slot-a a pod with groupPriority 10 wins over an older one with groupPriority 1; on
// slot-b, at equal priority, a Guaranteed pod wins over an older BestEffort one.
func TestPluginsQueueOrder(t *testing.T) {
	t.Parallel()
	c, sa := startWithPluginServiceAccount(t)
	c.CreateNodes(t,
		harness.NodeSpec{Name: "slot-a", Pods: "1", Labels: map[string]string{"slot": "a"}},
		harness.NodeSpec{Name: "slot-b", Pods: "1", Labels: map[string]string{"slot": "b"}},
	)
	create := func(name, slot string, labels map[string]string, guaranteed bool) {
		spec := harness.PodSpec{Name: name, SchedulerName: pluginSchedulerName, Labels: labels}
		if guaranteed {
			spec.CPU, spec.Memory = "100m", "64Mi"
		}
		pod, err := spec.Pod()
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.NodeSelector = map[string]string{"slot": slot}
		if guaranteed {
			pod.Spec.Containers[0].Resources.Limits = pod.Spec.Containers[0].Resources.Requests
		}
		if pod, err = c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: QoS %s, created %s", name, pod.Status.QOSClass, pod.CreationTimestamp.Format(time.RFC3339))
	}
	create("a-low", "a", map[string]string{"groupPriority": "1"}, false)
	create("a-besteffort", "b", nil, false)
	time.Sleep(1100 * time.Millisecond) // creation timestamps have second resolution
	create("b-high", "a", map[string]string{"groupPriority": "10"}, false)
	create("b-guaranteed", "b", nil, true)

	c.RunDeployment(t, withPlugins(t, []string{gangPodGroup}, nil), harness.RunOptions{Kubeconfig: sa})
	if n := c.WaitForBinding(t, "default", "b-high"); n != "slot-a" {
		t.Fatalf("b-high on %s, want slot-a", n)
	}
	if n := c.WaitForBinding(t, "default", "b-guaranteed"); n != "slot-b" {
		t.Fatalf("b-guaranteed on %s, want slot-b", n)
	}
	for _, p := range []string{"a-low", "a-besteffort"} {
		if n := c.PodNode(t, "default", p); n != "" {
			t.Errorf("%s bound to %s, want pending (its slot is taken)", p, n)
		}
	}
}

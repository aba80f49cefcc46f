package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestCoschedulingQueueOrder: the queue in Coscheduling's order, through the real queue. Two
// slots, each taken by a bound blocker; on slot a, a group (PodGroup created first) and a lone
// pod created 1.5 s later; on slot b, group pg-b and, 1.5 s later, group pg-a (whose name sorts
// first). All four fail and park; then the blockers go, one at a time, and the queue decides: the
// group on slot a (its PodGroup is older than the lone pod), pg-b on slot b (older, though its
// name sorts later). Before, group-priority put the lone pod and pg-a first.
func TestCoschedulingQueueOrder(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := startGang(t, m,
				harness.NodeSpec{Name: "slot-a", CPU: "1", Labels: map[string]string{"slot": "a"}},
				harness.NodeSpec{Name: "slot-b", CPU: "1", Labels: map[string]string{"slot": "b"}})
			// Wait until the scheduler has read the PodGroups: a member tried before that fails
			// with an error and is retried on kube-scheduler's error backoff, out of the order
			// under test.
			podGroup(t, c, "warm", `"minMember": 1`)
			c.CreatePod(t, member(m, "warm", "warm", ""))
			c.WaitForBinding(t, "default", "warm")
			c.CreatePod(t, harness.PodSpec{Name: "blocker-a", NodeName: "slot-a", CPU: "1"})
			c.CreatePod(t, harness.PodSpec{Name: "blocker-b", NodeName: "slot-b", CPU: "1"})
			create := func(spec harness.PodSpec, slot string) {
				pod, err := spec.Pod()
				if err != nil {
					t.Fatal(err)
				}
				pod.Spec.NodeSelector = map[string]string{"slot": slot}
				if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			podGroup(t, c, "pg-z", `"minMember": 1`)
			podGroup(t, c, "pg-b", `"minMember": 1`)
			create(member(m, "z-group", "pg-z", "1"), "a")
			create(member(m, "b-group", "pg-b", "1"), "b")
			time.Sleep(1500 * time.Millisecond)
			podGroup(t, c, "pg-a", `"minMember": 1`)
			create(harness.PodSpec{Name: "a-lone", SchedulerName: m.scheduler, CPU: "1"}, "a")
			create(member(m, "a-group", "pg-a", "1"), "b")
			for _, p := range []string{"z-group", "b-group", "a-lone", "a-group"} {
				c.WaitForEvent(t, "default", p, "FailedScheduling")
			}
			// Past every pod's first backoff (1 s): the deletions move them to the active queue
			// together, where the order decides.
			time.Sleep(2500 * time.Millisecond)
			// One slot at a time: one event makes room for one pod, and the queue decides. Slot a
			// first: the event of slot a retries slot b's two groups too, in queue order, so
			// their failure times keep their order (a group retried after the lone pod came would
			// go behind it: its timestamp is its last failure, as in Coscheduling).
			for _, slot := range []struct{ blocker, node, want string }{{"blocker-a", "slot-a", "z-group"}, {"blocker-b", "slot-b", "b-group"}} {
				c.DeletePod(t, "default", slot.blocker)
				if n := c.WaitForBinding(t, "default", slot.want); n != slot.node {
					t.Errorf("%s on %s, want %s", slot.want, n, slot.node)
				}
			}
			for _, p := range []string{"a-lone", "a-group"} {
				if n := c.PodNode(t, "default", p); n != "" {
					t.Errorf("%s: %s bound to %s, want it behind the older group", m.name, p, n)
				}
			}
		})
	}
}

// TestCoschedulingNoMinMember: a PodGroup without spec.minMember (the CRD allows it) places its
// pod, as Coscheduling does (minimum 0), and the scheduler warns on the PodGroup.
func TestCoschedulingNoMinMember(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := startGang(t, m, harness.NodeSpec{Name: "n1"})
			podGroup(t, c, "nomin", `"scheduleTimeoutSeconds": 10`)
			c.CreatePod(t, member(m, "nomin-0", "nomin", "1"))
			c.WaitForBinding(t, "default", "nomin-0")
			e := c.WaitForEvent(t, "default", "nomin", "NoMinMember", "PodGroup default/nomin has no spec.minMember: read as 0")
			if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "PodGroup" {
				t.Errorf("event %s about %s, want a Warning about the PodGroup", e.Type, e.InvolvedObject.Kind)
			}
		})
	}
}

// TestCoschedulingMinResources: a group whose spec.minResources the cluster cannot hold (8 cpu
// asked, one 4-cpu node) is turned away at PreFilter, the reason naming the resource, the
// request and the room, before any member holds room; a second node brings it back and it binds.
func TestCoschedulingMinResources(t *testing.T) {
	t.Parallel()
	for _, m := range gangModes {
		t.Run(m.name, func(t *testing.T) {
			c := startGang(t, m, harness.NodeSpec{Name: "n1", CPU: "4"})
			podGroup(t, c, "big", `"minMember": 2, "minResources": {"cpu": "8"}`)
			c.CreatePod(t, member(m, "big-0", "big", "4"))
			c.CreatePod(t, member(m, "big-1", "big", "4"))
			// Whichever member the scheduler judges once both exist is turned away for minResources:
			// a member judged alone before is turned away for the quorum and waits, parked, for an
			// event that may help (the second node below).
			// Both waits are for a condition, bounded only against a hang (three binding timeouts:
			// the group's members back off between attempts, longer on a loaded machine).
			const reason = "pod group default/big: spec.minResources does not fit in the cluster's free room (summed over 1 nodes): cpu 8 requested, 4 free"
			within := 3 * harness.BindingTimeout
			deadline := time.Now().Add(within)
			for !hasEvent(c.Events(t, "default", "big-0"), reason) && !hasEvent(c.Events(t, "default", "big-1"), reason) {
				if time.Now().After(deadline) {
					t.Fatalf("no FailedScheduling event naming minResources within %s; events:\n%s\n%s", within,
						harness.FormatEvents(c.Events(t, "default", "big-0")), harness.FormatEvents(c.Events(t, "default", "big-1")))
				}
				time.Sleep(100 * time.Millisecond)
			}
			c.CreateNode(t, harness.NodeSpec{Name: "n2", CPU: "4"})
			added := time.Now()
			if d, ok := waitAllBound(t, c, []string{"big-0", "big-1"}, added, within); !ok {
				t.Fatalf("not bound after a second node; events:\n%s", harness.FormatEvents(c.Events(t, "default", "big-0")))
			} else {
				t.Logf("%s: bound %.1fs after the second node", m.name, d.Seconds())
			}
		})
	}
}

// TestGangExtenderMinResources: the extender's gang filter checks spec.minResources too.
func TestGangExtenderMinResources(t *testing.T) {
	t.Parallel()
	requireAgents(t, "gang")
	c, sa := startWithServiceAccount(t)
	c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", "podgroup-crd.yaml"))
	d := loadDeployment(t, "extender.gang.yaml")
	for _, o := range d.Objects {
		if k := o.GetKind(); k == "ClusterRole" || k == "ClusterRoleBinding" || k == "Role" || k == "RoleBinding" {
			data, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			c.Apply(t, data, false)
		}
	}
	podGroup(t, c, "big", `"minMember": 2, "minResources": {"cpu": "8"}`)
	c.CreateNodes(t, harness.NodeSpec{Name: "n1", CPU: "4"})
	c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	labels := map[string]string{"scheduling.x-k8s.io/pod-group": "big"}
	c.CreatePod(t, harness.PodSpec{Name: "big-0", SchedulerName: schedulerName, CPU: "2", Labels: labels})
	c.CreatePod(t, harness.PodSpec{Name: "big-1", SchedulerName: schedulerName, CPU: "2", Labels: labels})
	c.WaitForEvent(t, "default", "big-1", "FailedScheduling", "spec.minResources does not fit", "cpu 8 requested, 4 free")
	if n := c.PodNode(t, "default", "big-0"); n != "" {
		t.Errorf("big-0 bound to %s though the group's minResources cannot fit", n)
	}
}

// hasEvent reports whether one of events is a FailedScheduling event whose message contains
// text.
func hasEvent(events []corev1.Event, text string) bool {
	for _, e := range events {
		if e.Reason == "FailedScheduling" && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

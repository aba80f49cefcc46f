package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestGangYAML: with yamlfiles/extender.gang.yaml as shipped (and the PodGroup definition of
// yamlfiles/podgroup-crd.yaml), the pods of a group with minimum 3, created one by one, stay
// pending while 2 exist, with the reason in their FailedScheduling events; once the third exists
// all three bind, within the scheduler's requeue (measured and logged). The same for a riya
// group (labels podGroup/minAvailable) and a Coscheduling group (label
// scheduling.x-k8s.io/pod-group and a PodGroup). Pods in no group are unaffected; a missing
// PodGroup and a bad minimum are rejected with a reason naming them.
func TestGangYAML(t *testing.T) {
	t.Parallel()
	requireAgents(t, "gang")
	c, sa := startWithServiceAccount(t)
	c.ApplyCRDFile(t, filepath.Join(repoRoot(t), "yamlfiles", "podgroup-crd.yaml"))
	d := loadDeployment(t, "extender.gang.yaml")
	// The file's own RBAC (PodGroups) on top of service-account.yaml's: the sidecar runs as
	// the service account, so a missing permission leaves its PodGroups unread.
	for _, o := range d.Objects {
		if k := o.GetKind(); k == "ClusterRole" || k == "ClusterRoleBinding" || k == "Role" || k == "RoleBinding" {
			data, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			c.Apply(t, data, false)
		}
	}
	c.Apply(t, []byte(`{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": {"name": "pg", "namespace": "default"}, "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30}}`), false)
	c.CreateNodes(t, harness.NodeSpec{Name: "n1"}, harness.NodeSpec{Name: "n2"})
	r := c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	r.CheckProbes(t)

	schedule(t, c, harness.PodSpec{Name: "loose-0"})

	t.Run("riya", func(t *testing.T) {
		holdsUntilQuorum(t, c, schedulerName, "g", map[string]string{"podGroup": "g", "minAvailable": "3"}, "minAvailable")
	})
	t.Run("coscheduling", func(t *testing.T) {
		holdsUntilQuorum(t, c, schedulerName, "pg", map[string]string{"scheduling.x-k8s.io/pod-group": "pg"}, "minMember")
	})
	t.Run("burst", func(t *testing.T) {
		// Three members created back to back, as a Job or ReplicaSet creates them.
		labels := map[string]string{"podGroup": "b", "minAvailable": "3"}
		pods := []string{"b-0", "b-1", "b-2"}
		created := time.Now()
		for _, p := range pods {
			c.CreatePod(t, harness.PodSpec{Name: p, SchedulerName: schedulerName, Labels: labels})
		}
		bound := waitBound(t, c, pods, created)
		t.Logf("group b created in a burst: bound after the first member's creation: b-0 %.1fs, b-1 %.1fs, b-2 %.1fs",
			bound["b-0"].Seconds(), bound["b-1"].Seconds(), bound["b-2"].Seconds())
		for _, p := range pods {
			t.Logf("%s's events:\n%s", p, harness.FormatEvents(c.Events(t, "default", p)))
		}
	})
	t.Run("rejected", func(t *testing.T) {
		c.CreatePod(t, harness.PodSpec{Name: "ghost-0", SchedulerName: schedulerName,
			Labels: map[string]string{"scheduling.x-k8s.io/pod-group": "ghost"}})
		c.CreatePod(t, harness.PodSpec{Name: "bad-0", SchedulerName: schedulerName,
			Labels: map[string]string{"podGroup": "bad", "minAvailable": "three"}})
		e := c.WaitForEvent(t, "default", "ghost-0", "FailedScheduling",
			"PodGroup default/ghost named by label scheduling.x-k8s.io/pod-group does not exist")
		t.Logf("ghost-0: %s", e.Message)
		e = c.WaitForEvent(t, "default", "bad-0", "FailedScheduling", `label minAvailable is "three", not an integer`)
		t.Logf("bad-0: %s", e.Message)
		// Pods in no group still bind meanwhile.
		schedule(t, c, harness.PodSpec{Name: "loose-1"})
		for _, p := range []string{"ghost-0", "bad-0"} {
			if n := c.PodNode(t, "default", p); n != "" {
				t.Errorf("%s bound to %s although its group is invalid", p, n)
			}
		}
	})
}

// holdsUntilQuorum creates, for scheduler, the three members of group name (labels put them in it; minField
// names the minimum in the reason) one by one: the first two stay pending with the reason, and
// the third brings all three to bind. It logs how long after the third's creation each bound.
func holdsUntilQuorum(t *testing.T, c *harness.Cluster, scheduler, name string, labels map[string]string, minField string) {
	t.Helper()
	pods := []string{name + "-0", name + "-1", name + "-2"}
	for i, p := range pods[:2] {
		c.CreatePod(t, harness.PodSpec{Name: p, SchedulerName: scheduler, Labels: labels})
		e := c.WaitForEvent(t, "default", p, "FailedScheduling",
			fmt.Sprintf("pod group default/%s has %d of 3 pods (%s 3)", name, i+1, minField))
		t.Logf("%s: %s", p, e.Message)
	}
	// The first member is not retried when the second appears: kube-scheduler (1.37, without the
	// GenericWorkload gate) requeues a pod an extender rejected on node and assigned-pod events,
	// not on the creation of another pending pod. The third member's binding is such an event.
	for _, p := range pods[:2] {
		if n := c.PodNode(t, "default", p); n != "" {
			t.Fatalf("%s bound to %s while its group has 2 of 3 pods", p, n)
		}
	}

	created := time.Now()
	c.CreatePod(t, harness.PodSpec{Name: pods[2], SchedulerName: scheduler, Labels: labels})
	bound := waitBound(t, c, pods, created)
	t.Logf("group %s at quorum: bound after the third member's creation: %s %.1fs, %s %.1fs, %s %.1fs", name,
		pods[0], bound[pods[0]].Seconds(), pods[1], bound[pods[1]].Seconds(), pods[2], bound[pods[2]].Seconds())
}

// waitBound waits until every pod of pods is bound and returns how long after since each was
// seen bound (polling every 100 ms). It fails t after harness.BindingTimeout.
func waitBound(t *testing.T, c *harness.Cluster, pods []string, since time.Time) map[string]time.Duration {
	t.Helper()
	bound := map[string]time.Duration{}
	deadline := since.Add(harness.BindingTimeout)
	for len(bound) < len(pods) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			for _, p := range list.Items {
				if _, seen := bound[p.Name]; !seen && p.Spec.NodeName != "" && isMember(p.Name, pods) {
					bound[p.Name] = time.Since(since)
				}
			}
		}
		if time.Now().After(deadline) {
			for _, p := range pods {
				if _, ok := bound[p]; !ok {
					t.Fatalf("%s not bound within %s (bound: %v); its events:\n%s",
						p, harness.BindingTimeout, bound, harness.FormatEvents(c.Events(t, "default", p)))
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return bound
}

func isMember(name string, pods []string) bool {
	for _, p := range pods {
		if p == name {
			return true
		}
	}
	return false
}

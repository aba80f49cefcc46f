package e2e

// safe knows each node by its pods (issue 51), in both modes, against a real kube-apiserver and
// kube-scheduler: the usage learner learns Deployment default/web at twice its request; then
// node "full" holds three replicas bound a minute before its statistics (which, a 15-minute
// mean, hold a fifteenth of them) and node "freed" three replicas there for an hour, which
// leave after its statistics. The next replica is judged by the node model: "full" is full
// before its statistics say so, and "freed" is free as soon as its replicas are gone. Before
// the model, the next replica went to "full" (its statistics said 2 of 16 cpu used).

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

func TestNodeModelExtender(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	nodeModel(t, false)
}

func TestNodeModelPlugin(t *testing.T) {
	t.Parallel()
	nodeModel(t, true)
}

// nodeModel: web pods request 2 cpu and 256Mi and use 4 cpu and 512Mi, learned at about 2.09
// times their request (4187m cpu). Both nodes have 16 cpu.
//
//   - full: statistics 2000m used, stamped now; three replicas bound 60s before (the window
//     held 1/15 of each). Model: 2000 + 3 × 14/15 × 4187 + 4187 (the next) = 17910 (mu > 0.9):
//     rejected. Before the model: 2000 + 4187 = 6187 (mu 0.39): taken.
//   - freed: statistics 14000m used, stamped now; three replicas bound an hour before. First
//     rejected by its statistics (14000 + 4187); once the replicas are deleted, the model takes
//     them off at their estimate: 14000 − 3 × 4187 + 4187 = 5626 (mu 0.35): taken. Before the
//     model the requests gone counted off at most the growth since the statistics (0).
func nodeModel(t *testing.T, plugin bool) {
	w := learnWeb(t, plugin)
	c, sa, scheduler := w.c, w.sa, w.scheduler
	// The statistics below are the test's: the annotator writes no more.
	w.annotator.Stop()

	rs, err := c.Client.AppsV1().ReplicaSets("default").Get(t.Context(), "web-5d8f9c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	replica := func(name, node, schedulerName string) *corev1.Pod {
		p, err := harness.PodSpec{Name: name, NodeName: node, SchedulerName: schedulerName, CPU: "2", Memory: "256Mi",
			Labels: map[string]string{"app.kubernetes.io/name": "web-label", "pod-template-hash": "5d8f9c"}}.Pod()
		if err != nil {
			t.Fatal(err)
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
		return p
	}
	now := time.Now().UTC().Truncate(time.Second)
	// boundAt creates n replicas on node, bound at (their PodScheduled condition, as the API
	// server's binding writes it; no kubelet runs to change it).
	boundAt := func(node string, n int, at time.Time) []string {
		var names []string
		for i := range n {
			p, err := c.Client.CoreV1().Pods("default").Create(t.Context(), replica(fmt.Sprintf("%s-%d", node, i), node, ""), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
			if _, err := c.Client.CoreV1().Pods("default").UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, p.Name)
		}
		return names
	}
	boundAt("full", 3, now.Add(-time.Minute))
	gone := boundAt("freed", 3, now.Add(-time.Hour))
	stats := func(freeCPU int64) map[string]string {
		return withAnnotations(statsAnnotations(freeCPU, 100, 48*gi, gi), "statistics-timestamp", now.Format(time.RFC3339),
			"statistics-requested-cpu", "6000", "statistics-requested-memory", fmt.Sprint(3*256*mi))
	}
	c.CreateNode(t, harness.NodeSpec{Name: "full", CPU: "16", Memory: "64Gi", Annotations: stats(14000)})
	c.CreateNode(t, harness.NodeSpec{Name: "freed", CPU: "16", Memory: "64Gi", Annotations: stats(2000)})

	if plugin {
		d := withPlugins(t, []string{"safe-overload", "safe-balance"}, map[string]map[string]any{"safe-overload": {
			"filter": "pod", "estimate": "learned", "estimateNamespace": "kube-system"}})
		c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	} else {
		r := c.RunDeployment(t, loadDeployment(t, "extender.safe.yaml"), harness.RunOptions{Kubeconfig: sa,
			Env: map[string]map[string]string{"safe": {"SAFE_FILTER": "pod", "SAFE_ESTIMATE": "learned", "SAFE_ESTIMATE_NAMESPACE": "kube-system"}}})
		r.CheckProbes(t)
	}

	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), replica("web-next", "", scheduler), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := c.WaitForEvent(t, "default", "web-next", "FailedScheduling", "node model: 3 pods beyond the statistics")
	t.Logf("web-next while freed's replicas run: %s", e.Message)
	if n := c.PodNode(t, "default", "web-next"); n != "" {
		t.Fatalf("web-next bound to %s, where the model says it does not fit", n)
	}
	for _, name := range gone {
		if err := c.Client.CoreV1().Pods("default").Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.WaitForBinding(t, "default", "web-next"); n != "freed" {
		t.Fatalf("web-next went to %s, want freed", n)
	}
}

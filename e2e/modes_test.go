package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// extenderConfig is a KubeSchedulerConfiguration with one profile and one template extender.
func extenderConfig(profile, urlPrefix string, nodeCacheCapable, ignorable bool) []byte {
	return fmt.Appendf(nil, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: %s
extenders:
- urlPrefix: %s
  filterVerb: predicates/template-label
  prioritizeVerb: priorities/template-score
  weight: 1
  nodeCacheCapable: %t
  ignorable: %t
  httpTimeout: 5s
`, profile, urlPrefix, nodeCacheCapable, ignorable)
}

// TestNodeCacheCapable: with nodeCacheCapable: true the scheduler sends node names only, and
// the extender, given --kubeconfig for the same API server, resolves them from its informer
// cache, which follows nodes added and changed later. The same configuration against an
// extender without cluster access fails the pod with that extender's explanation.
func TestNodeCacheCapable(t *testing.T) {
	t.Parallel()
	requireAgents(t, "template")
	c := harness.StartCluster(t)
	allowed := map[string]string{templateLabel: "true"}
	c.CreateNodes(t,
		harness.NodeSpec{Name: "n1", Labels: allowed, Annotations: map[string]string{templateScore: "3"}},
		harness.NodeSpec{Name: "n2", Labels: allowed, Annotations: map[string]string{templateScore: "7"}},
		harness.NodeSpec{Name: "n3", Annotations: map[string]string{templateScore: "10"}},
	)
	ext := harness.StartExtender(t, harness.ExtenderOptions{
		Name: "extender template", Tags: []string{"template"}, Args: []string{"--kubeconfig=" + c.Kubeconfig},
	})
	c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-scheduler cached", Config: extenderConfig("cached", ext.URLPrefix(), true, false)})

	for i := range 2 {
		c.CreatePod(t, harness.PodSpec{Name: fmt.Sprintf("a%d", i), SchedulerName: "cached"})
		if n := c.WaitForBinding(t, "default", fmt.Sprintf("a%d", i)); n != "n2" {
			t.Fatalf("a%d went to %s, want n2 (template-score 7; n3 has no label)", i, n)
		}
	}

	// A node created after the extender started: its cache learns it from the API server.
	c.CreateNode(t, harness.NodeSpec{Name: "n4", Labels: allowed, Annotations: map[string]string{templateScore: "10"}})
	probe := probePod(t, harness.PodSpec{Name: "probe"})
	waitForScores(t, ext, "template-score", probe, []string{"n1", "n2", "n4"}, "the cache knows n4", func(s map[string]int64) bool {
		return s["n4"] == 10
	})
	c.CreatePod(t, harness.PodSpec{Name: "b", SchedulerName: "cached"})
	if n := c.WaitForBinding(t, "default", "b"); n != "n4" {
		t.Fatalf("b went to %s, want n4 (template-score 10)", n)
	}

	// Without cluster access the extender cannot resolve names, and says so.
	blind := harness.StartExtender(t, harness.ExtenderOptions{
		Name: "extender template blind", Tags: []string{"template"}, Env: map[string]string{"CLUSTER_ACCESS": "none"},
	})
	c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-scheduler blind", Config: extenderConfig("blind", blind.URLPrefix(), true, false)})
	c.CreatePod(t, harness.PodSpec{Name: "c", SchedulerName: "blind"})
	c.WaitForEvent(t, "default", "c", "FailedScheduling", "without cluster access")
	if n := c.PodNode(t, "default", "c"); n != "" {
		t.Fatalf("c bound to %s through an extender that cannot resolve node names", n)
	}
}

// TestExtenderDown: the extender is down. With ignorable: false the pod stays pending and its
// FailedScheduling event names the extender's URL; with ignorable: true the scheduler skips the
// extender and binds the pod. When the extender comes back, the pending pod is scheduled.
func TestExtenderDown(t *testing.T) {
	t.Parallel()
	requireAgents(t, "template")
	c := harness.StartCluster(t)
	allowed := map[string]string{templateLabel: "true"}
	c.CreateNodes(t,
		harness.NodeSpec{Name: "n1", Labels: allowed, Annotations: map[string]string{templateScore: "9"}},
		harness.NodeSpec{Name: "n2", Labels: allowed},
	)
	// Start the extender once to own a port, then take it down.
	bin := harness.BuildExtender(t, "template")
	ext := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender template", Binary: bin})
	port, prefix := ext.Port, ext.URLPrefix()
	ext.Stop()

	c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-scheduler strict", Config: extenderConfig("strict", prefix, false, false)})
	c.StartScheduler(t, harness.SchedulerOptions{Name: "kube-scheduler lenient", Config: extenderConfig("lenient", prefix, false, true)})

	c.CreatePod(t, harness.PodSpec{Name: "strict-pod", SchedulerName: "strict"})
	c.CreatePod(t, harness.PodSpec{Name: "lenient-pod", SchedulerName: "lenient"})
	e := c.WaitForEvent(t, "default", "strict-pod", "FailedScheduling", prefix+"/predicates/template-label")
	t.Logf("strict-pod: %s", e.Message)
	if n := c.WaitForBinding(t, "default", "lenient-pod"); n == "" {
		t.Fatal("lenient-pod not bound")
	}
	if n := c.PodNode(t, "default", "strict-pod"); n != "" {
		t.Fatalf("strict-pod bound to %s while its filter extender is down and not ignorable", n)
	}
	for _, ev := range c.Events(t, "default", "lenient-pod") {
		if ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, prefix) {
			t.Errorf("lenient-pod has a FailedScheduling event about the ignorable extender: %s", ev.Message)
		}
	}

	// The extender returns on the same port: the scheduler's retries now get through.
	harness.StartExtender(t, harness.ExtenderOptions{Name: "extender template", Binary: bin, Port: port})
	if n := c.WaitForBinding(t, "default", "strict-pod"); n != "n1" {
		t.Fatalf("strict-pod went to %s after the extender came back, want n1 (template-score 9)", n)
	}
}

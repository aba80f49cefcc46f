package e2e

// safe places pods by their workload's learned usage (SAFE_ESTIMATE=learned, issue 37), in both
// modes, against a real kube-apiserver and kube-scheduler: the node annotator's usage learner
// learns a Deployment whose pods use twice their request from Prometheus' cAdvisor-like series,
// stores it in its ConfigMaps, and the scheduler's safe agent, following them, rejects a node
// with room for the next pod's request but not for its estimate.

import (
	"net/http/httptest"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

func TestUsagePlacementExtender(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	usagePlacement(t, false)
}

func TestUsagePlacementPlugin(t *testing.T) {
	t.Parallel()
	usagePlacement(t, true)
}

// grantFollower lets the scheduler's service account (user) follow the learner's ConfigMaps in
// kube-system, as the chart grants with agents.safe.settings.estimate=learned.
func grantFollower(t *testing.T, c *harness.Cluster, user string) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "safe-estimates", Namespace: "kube-system"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}}
	if _, err := c.Client.RbacV1().Roles("kube-system").Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "safe-estimates", Namespace: "kube-system"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}}
	if _, err := c.Client.RbacV1().RoleBindings("kube-system").Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// usagePlacement: pods of Deployment default/web request 2 cpu and use 4 (memory 256Mi, used
// 512Mi). Node tight (16 cpu) has 11 cpu in use by its statistics: the next web pod's request
// (11 + 2 = 13 of 16, mu 0.81) fits under the threshold 0.9, its estimate (11 + 2 * ~2.1 = 15.2,
// mu 0.95) does not. The filter judges the pod (SAFE_FILTER pod: adaptive would take tight as
// it is when no node takes the pod). Alone, tight rejects the pod with the estimate in the
// reason; once roomy (3 cpu in use) joins, the pod lands there.
// learnedWeb is what learnWeb leaves running: the cluster, the scheduler's kubeconfig, user
// and name, and the node annotator with its usage learner.
type learnedWeb struct {
	c                   *harness.Cluster
	sa, user, scheduler string
	annotator           *harness.Process
}

// learnWeb starts a cluster whose scheduler (plugin mode, or the extenders' kube-scheduler) runs
// as its service account, and the node annotator's usage learner, until the learner stores a
// trusted estimate of Deployment default/web: three pods that request 2 cpu and 256Mi and use 4
// cpu and 512Mi (Prometheus' cAdvisor-like series) on the cordoned node learn, which the
// scheduler never offers.
func learnWeb(t *testing.T, plugin bool) learnedWeb {
	t.Helper()
	exporter := &cadvisorExporter{start: time.Now(), pods: map[[2]string]podLoad{}}
	target := httptest.NewServer(exporter)
	t.Cleanup(target.Close)
	prom := startPrometheusFor(t, target.Listener.Addr().String())

	var w learnedWeb
	if plugin {
		w.c, w.sa = startWithPluginServiceAccount(t)
		w.user, w.scheduler = pluginServiceAccount, pluginSchedulerName
	} else {
		w.c, w.sa = startWithServiceAccount(t)
		w.user, w.scheduler = serviceAccountUser, schedulerName
	}
	c := w.c
	c.CreateNode(t, harness.NodeSpec{Name: "learn", CPU: "64", Memory: "256Gi", Unschedulable: true})
	pods := createDeploymentPods(t, c, "web", "learn", 3, "2", "256Mi")
	exporter.mu.Lock()
	for _, p := range pods {
		exporter.pods[[2]string{"default", p}] = podLoad{cores: 4, bytes: 512 << 20}
	}
	exporter.mu.Unlock()
	grantLearner(t, c)
	grantFollower(t, c, w.user)
	w.annotator = startAnnotator(t, c, map[string]string{
		"STATS_SOURCE": "prometheus", "PROMETHEUS_URL": prom, "PROMETHEUS_NODE_LABEL": "node",
		"USAGE_LEARNER": "true", "USAGE_INTERVAL": "1s", "USAGE_FLUSH_INTERVAL": "1s", "USAGE_STORE_SHARDS": "2",
		"USAGE_MIN_OBSERVATIONS": "6", "USAGE_MIN_SPAN": "2s", "USAGE_LEASE_DURATION": "3s",
		"USAGE_PROMETHEUS_CPU_QUERY": `sum by (namespace, pod) (irate(container_cpu_usage_seconds_total{container!=""}[5s]))`,
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		e, _, found := storedEstimate(t, c, "deployment.default.web")
		if found && e.Estimate.Trusted {
			t.Logf("learned: %+v, %d observations", e.Estimate, e.N)
			break
		}
		if w.annotator.Exited() || time.Now().After(deadline) {
			t.Fatalf("no trusted estimate of deployment default/web stored:\n%s", w.annotator.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return w
}

func usagePlacement(t *testing.T, plugin bool) {
	w := learnWeb(t, plugin)
	c, sa, scheduler := w.c, w.sa, w.scheduler
	c.CreateNode(t, harness.NodeSpec{Name: "tight", CPU: "16", Memory: "64Gi", Annotations: statsAnnotations(5000, 100, 48*gi, gi)})

	// The scheduler starts after the store is written: it reads it back at start.
	if plugin {
		d := withPlugins(t, []string{"safe-overload", "safe-balance"}, map[string]map[string]any{"safe-overload": {
			"filter": "pod", "estimate": "learned", "estimateNamespace": "kube-system"}})
		c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: sa})
	} else {
		r := c.RunDeployment(t, loadDeployment(t, "extender.safe.yaml"), harness.RunOptions{Kubeconfig: sa,
			Env: map[string]map[string]string{"safe": {"SAFE_FILTER": "pod", "SAFE_ESTIMATE": "learned", "SAFE_ESTIMATE_NAMESPACE": "kube-system"}}})
		r.CheckProbes(t)
	}

	// The next pod of the workload.
	next, err := harness.PodSpec{Name: "web-next", SchedulerName: scheduler, CPU: "2", Memory: "256Mi",
		Labels: map[string]string{"app.kubernetes.io/name": "web-label", "pod-template-hash": "5d8f9c"}}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.Client.AppsV1().ReplicaSets("default").Get(t.Context(), "web-5d8f9c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	next.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), next, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := c.WaitForEvent(t, "default", "web-next", "FailedScheduling", "pod estimated", "of deployment default/web, request 2 cpu")
	t.Logf("web-next with tight alone: %s", e.Message)
	if n := c.PodNode(t, "default", "web-next"); n != "" {
		t.Fatalf("web-next bound to %s, where its estimate does not fit", n)
	}
	c.CreateNode(t, harness.NodeSpec{Name: "roomy", CPU: "16", Memory: "64Gi", Annotations: statsAnnotations(13000, 100, 48*gi, gi)})
	if n := c.WaitForBinding(t, "default", "web-next"); n != "roomy" {
		t.Fatalf("web-next went to %s, want roomy", n)
	}
}

package e2e

// The descheduler's LowNodeUtilization on actual usage, with the policy the chart renders for
// the metrics server (descheduler.lowNodeUtilization.source=KubernetesMetrics), on the real
// control plane, in both modes: a test-side metrics.k8s.io server (harness.StartMetricsAPI,
// behind the real aggregation layer) reports each node's usage as the sum of its pods' plus a
// base; the node annotator reads the same API (STATS_SOURCE=metrics-api) for safe's
// statistics, so the descheduler and safe judge the nodes from one source, against one
// threshold (the chart derives the descheduler's from safe's).

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// lnuUsage is the usage the metrics server reports: each node's base (what runs outside the
// pods: the system, a neighbour nobody may move) plus, for each live pod bound to it, the usage
// of its app.
type lnuUsage struct {
	c     *harness.Cluster
	base  map[string]harness.ResourceUsage
	byApp map[string]harness.ResourceUsage
}

func (u *lnuUsage) read(ctx context.Context) (harness.MetricsUsage, error) {
	pods, err := u.c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return harness.MetricsUsage{}, err
	}
	out := harness.MetricsUsage{Nodes: map[string]harness.ResourceUsage{}, Pods: map[types.NamespacedName]harness.ResourceUsage{}}
	for n, b := range u.base {
		out.Nodes[n] = b
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		pu := u.byApp[p.Labels["app"]]
		out.Pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = pu
		n := out.Nodes[p.Spec.NodeName]
		n.MilliCPU += pu.MilliCPU
		n.Memory += pu.Memory
		out.Nodes[p.Spec.NodeName] = n
	}
	return out, nil
}

// TestDeschedulerLowNodeUtilization: extender mode (yamlfiles/extender.safe.yaml).
func TestDeschedulerLowNodeUtilization(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe")
	deschedulerLNU(t, false)
}

// TestPluginsDeschedulerLowNodeUtilization: plugin mode (safe-overload and safe-balance compiled
// into kube-safe-scheduler).
func TestPluginsDeschedulerLowNodeUtilization(t *testing.T) {
	t.Parallel()
	deschedulerLNU(t, true)
}

// deschedulerLNU: three nodes of 4 cpu. hot uses 95 % (a base of 1.9 cpu, two pods of
// ReplicaSet load using 0.9 cpu each, one pod of guarded using 0.1), a and b 7.5 %. With safe's
// threshold T 90 and the chart's gap 30, hot is over-used (> 90 %), a and b have room (< 60 %):
// the descheduler, running the chart's policy as the chart's service account, evicts from hot
// until, by its measure, hot is no longer above 90 % (one load pod: 72.5 %), one pod a run (the
// chart's maxEvictionsPerNode). guarded's PodDisruptionBudget allows no disruption: it is the
// first the descheduler tries (Burstable, while the load pods are Guaranteed: it evicts the
// lower QoS first), the eviction API refuses, and it stays. The evicted load pod's replacement
// (made by the test's ReplicaSet loop) is placed by the real kube-scheduler with safe on a or
// b, not back on hot, and no pod is evicted twice: the replacement's node stays below 90 %.
func deschedulerLNU(t *testing.T, plugin bool) {
	// Longer than the descheduler's smoothing of the metrics server's samples (it reads them
	// every 5 s and moves a tenth of the way each time): hot's 72.5 % after the eviction shows
	// below 90 % to it within three reads (15 s), so the next run, one interval later, sees it.
	const interval = 30 * time.Second
	const threshold = 0.90 // safe's utilization threshold, the chart's targetThresholds
	sets := []string{"descheduler.lowNodeUtilization.source=KubernetesMetrics"}
	c, sa, scheduler, policy := deschedulerCluster(t, plugin, sets...)
	mustContain(t, "the chart's policy", string(policy), "source: KubernetesMetrics", "cpu: 90", "cpu: 60")

	const mib = int64(1) << 20
	u := &lnuUsage{c: c,
		base: map[string]harness.ResourceUsage{
			"hot": {MilliCPU: 1900, Memory: 2 * gi}, "a": {MilliCPU: 300, Memory: gi}, "b": {MilliCPU: 300, Memory: gi}},
		byApp: map[string]harness.ResourceUsage{"load": {MilliCPU: 900, Memory: 256 * mib}, "guarded": {MilliCPU: 100, Memory: 64 * mib}},
	}
	metrics := c.StartMetricsAPI(t, u.read, nil)
	for _, n := range []string{"hot", "a", "b"} {
		c.CreateNode(t, harness.NodeSpec{Name: n, CPU: "4", Memory: "16Gi"})
	}
	hotCPU := func() float64 {
		got, err := u.read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return float64(got.Nodes["hot"].MilliCPU) / 4000
	}

	// Two load pods (Guaranteed) and the guarded pod (Burstable) on hot; replacements unbound.
	load := replicaSet(t, c, "load", 2)
	bound := 2
	loop := startReplicaLoop(t, c, load, func(name string) *corev1.Pod {
		node := ""
		if bound > 0 { // the loop's goroutine is the only caller
			node, bound = "hot", bound-1
		}
		return lnuPod(t, scheduler, name, "load", node, "1", "256Mi", true)
	})
	guardedRS := replicaSet(t, c, "guarded", 1)
	guarded := startReplicaLoop(t, c, guardedRS, func(name string) *corev1.Pod {
		node := ""
		if strings.HasSuffix(name, "-0") {
			node = "hot"
		}
		return lnuPod(t, scheduler, name, "guarded", node, "100m", "64Mi", false)
	})
	pdb(t, c, "guarded", 0)
	waitUntil(t, time.Minute, "the pods on hot", func() bool {
		return len(podsOn(t, c, "load", "hot")) == 2 && len(podsOn(t, c, "guarded", "hot")) == 1
	})
	if got := hotCPU(); got != 0.95 {
		t.Fatalf("hot's cpu by the metrics server: %.3f, want 0.95", got)
	}

	// safe's statistics from the same metrics API, through the annotator.
	startAnnotator(t, c, map[string]string{
		"STATS_SOURCE": "metrics-api", "INTERVAL": "1s", "STATS_INTERVAL": "1s", "STATS_WINDOW": "60s", "STATS_MIN_SAMPLES": "3",
	})
	waitUntil(t, time.Minute, "the annotator's statistics of hot (mean free cpu under 10 %)", func() bool {
		n, err := c.Client.CoreV1().Nodes().Get(t.Context(), "hot", metav1.GetOptions{})
		if err != nil {
			return false
		}
		free, err := strconv.ParseFloat(n.Annotations["mean-free-cpu"], 64)
		return err == nil && free < 400
	})
	if plugin {
		c.RunDeployment(t, withPlugins(t, []string{"safe-overload", "safe-balance"}, nil), harness.RunOptions{Kubeconfig: sa})
	} else {
		c.RunDeployment(t, loadDeployment(t, "extender.safe.yaml"), harness.RunOptions{Kubeconfig: sa})
	}

	d := c.StartDescheduler(t, harness.DeschedulerOptions{Policy: policy, Kubeconfig: c.KubeconfigFor(t, deschedulerUser, serviceAccountGroups...), Interval: interval})
	drained := waitUntil(t, 5*time.Minute, "hot drained to at most 90 % by evictions", func() bool {
		return len(loop.Gone()) > 0 && hotCPU() <= threshold
	})
	t.Logf("hot at %.3f after %v; evicted %v", hotCPU(), drained.Round(100*time.Millisecond), loop.Gone())

	// Every replacement is placed by our scheduler, off hot.
	replacements := func() []string {
		pods, err := c.Client.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{LabelSelector: "app=load"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Name != "load-0" && p.Name != "load-1" {
				out = append(out, p.Name)
			}
		}
		return out
	}
	waitUntil(t, 2*time.Minute, "a replacement for every evicted load pod, bound", func() bool {
		r := replacements()
		for _, name := range r {
			if c.PodNode(t, "default", name) == "" {
				return false
			}
		}
		return len(r) == len(loop.Gone())
	})
	for _, name := range replacements() {
		node := c.PodNode(t, "default", name)
		if node == "hot" {
			t.Errorf("replacement %s placed back on hot", name)
			continue
		}
		c.WaitForEvent(t, "default", name, "Scheduled", "default/"+name+" to "+node)
	}

	// Two more runs: nothing else goes (hot is below 90 %, the replacements' nodes far below).
	evicted := loop.Gone()
	time.Sleep(2*interval + 5*time.Second)
	gone := loop.Gone()
	for _, name := range gone {
		if name != "load-0" && name != "load-1" {
			t.Errorf("replacement %s was evicted too (evicted: %v)", name, gone)
		}
	}
	if len(gone) != len(evicted) {
		t.Errorf("evictions went on after hot was drained: %v, then %v", evicted, gone)
	}
	if got := hotCPU(); got > threshold {
		t.Errorf("hot at %.3f, above 90 %%", got)
	}
	// The PodDisruptionBudget: guarded was tried, refused, and stays.
	if g := guarded.Gone(); len(g) != 0 || len(podsOn(t, c, "guarded", "hot")) != 1 {
		t.Errorf("the pod whose PodDisruptionBudget allows no disruption went: %v", g)
	}
	// The descheduler records no event for a refused eviction unless its policy asks for them;
	// its log says so, written out when it stops.
	d.Stop()
	refused := ""
	for _, line := range strings.Split(d.Tail(5000), "\n") {
		if strings.Contains(line, "Error evicting pod") && strings.Contains(line, `pod="default/guarded-0"`) && strings.Contains(line, "disruption budget") {
			refused = line
			break
		}
	}
	if refused == "" {
		t.Errorf("the descheduler's log shows no eviction of guarded-0 refused for its disruption budget:\n%s", d.Tail(40))
	}
	t.Logf("guarded-0: %s", refused)
	t.Logf("evicted %v; hot at %.3f; metrics server reads: nodes %d, pods %d", gone, hotCPU(), metrics.Requests("nodes"), metrics.Requests("pods"))
}

// lnuPod is a pod of app requesting cpu and memory (Guaranteed: limits equal to the requests),
// bound to node when node is set; grace period 0 (no kubelet confirms a termination). It is
// labelled as placed by scheduler, which the chart's descheduler policy selects.
func lnuPod(t *testing.T, scheduler, name, app, node, cpu, memory string, guaranteed bool) *corev1.Pod {
	t.Helper()
	p, err := harness.PodSpec{Name: name, SchedulerName: scheduler, NodeName: node, CPU: cpu, Memory: memory,
		Labels: map[string]string{"app": app, deschedulerLabel: scheduler}}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	if guaranteed {
		p.Spec.Containers[0].Resources.Limits = p.Spec.Containers[0].Resources.Requests.DeepCopy()
	}
	p.Spec.TerminationGracePeriodSeconds = new(int64(0))
	return p
}

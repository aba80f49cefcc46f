package e2e

// The descheduler (kubernetes-sigs/descheduler, built from the Go module proxy into
// .cache/descheduler by harness.BuildDescheduler) with the policy the chart renders, on the real
// control plane: TAS's path (the telemetry agent labels a node <policy>=violating, the
// descheduler's RemovePodsViolatingNodeAffinity evicts that policy's pods, the agents place
// their replacements elsewhere) and PodDisruptionBudgets honoured.
//
// No kube-controller-manager runs in the harness: a small test-side loop (replicaLoop) plays the
// ReplicaSet controller, creating a replacement for each pod that goes, and the test writes a
// PodDisruptionBudget's status as the disruption controller would.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// replicaLoop plays the ReplicaSet controller for rs (no kube-controller-manager runs in the
// harness): every 100 ms it creates pods from newPod until rs.Spec.Replicas of its pods exist
// (not being deleted), and records each pod that went. A pod newPod binds to a node at creation
// is reported running and ready (no kubelet runs). It stops when the test ends.
type replicaLoop struct {
	mu   sync.Mutex
	gone []string // names of the pods that disappeared, in order
}

func startReplicaLoop(t *testing.T, c *harness.Cluster, rs *appsv1.ReplicaSet, newPod func(name string) *corev1.Pod) *replicaLoop {
	t.Helper()
	l := &replicaLoop{}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: new(true)}
	selector := metav1.FormatLabelSelector(rs.Spec.Selector)
	seen := map[string]bool{}
	next := 0
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			pods, err := c.Client.CoreV1().Pods(rs.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				continue
			}
			live := map[string]bool{}
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					live[p.Name] = true
				}
			}
			l.mu.Lock()
			for name := range seen {
				if !live[name] {
					l.gone = append(l.gone, name)
					delete(seen, name)
				}
			}
			l.mu.Unlock()
			for name := range live {
				seen[name] = true
			}
			for n := len(live); n < int(*rs.Spec.Replicas); n++ {
				pod := newPod(fmt.Sprintf("%s-%d", rs.Name, next))
				next++
				pod.OwnerReferences = []metav1.OwnerReference{owner}
				created, err := c.Client.CoreV1().Pods(rs.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
				if err != nil {
					continue
				}
				seen[pod.Name] = true
				if pod.Spec.NodeName != "" {
					// Running and ready, as a kubelet would report it: the eviction API
					// ignores PodDisruptionBudgets for a pending pod.
					created.Status.Phase = corev1.PodRunning
					created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
					c.Client.CoreV1().Pods(rs.Namespace).UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
				}
			}
		}
	}()
	return l
}

func (l *replicaLoop) Gone() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.gone)
}

// replicaSet creates a ReplicaSet object (nothing reconciles it: see replicaLoop) of n pods
// labelled app=name.
func replicaSet(t *testing.T, c *harness.Cluster, name string, n int32) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	created, err := c.Client.AppsV1().ReplicaSets("default").Create(t.Context(), rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// podsOn returns the names of the live pods labelled app=app bound to node.
func podsOn(t *testing.T, c *harness.Cluster, app, node string) []string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

// tasPod is a pod of TAS's demo-policy as TAS users write it: the policy label, the
// telemetry/scheduling request (the extender's managed resource), and a required node
// affinity that keeps it off a node labelled demo-policy=violating, which the descheduler's
// RemovePodsViolatingNodeAffinity acts on once the label appears under it. Grace period 0:
// no kubelet runs to confirm a termination.
func tasPod(t *testing.T, scheduler, name, app, node string) *corev1.Pod {
	t.Helper()
	pod, err := harness.PodSpec{Name: name, SchedulerName: scheduler, NodeName: node, CPU: "100m", Extra: tasResource,
		Labels: map[string]string{"telemetry-policy": "demo-policy", "app": app, deschedulerLabel: scheduler}}.Pod()
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.TerminationGracePeriodSeconds = new(int64(0))
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "demo-policy", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"violating"}}},
		}}},
	}}
	return pod
}

// waitUntil polls cond every 100 ms until it holds or timeout passes, and returns how long it took.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// TestDeschedulerTAS: TAS's deschedule path with the real descheduler, extender mode
// (yamlfiles/extender.telemetry.yaml). Pods of demo-policy run on node hot; its node_cpu rises
// above the policy's deschedule target (80); the telemetry agent labels it
// demo-policy=violating; the descheduler, running the chart's policy as the chart's service
// account, evicts those pods within its interval + 10 s, their replacements are placed by the
// real kube-scheduler through the telemetry agent on another node; a pod of no policy on hot
// stays, and so does a policy pod whose PodDisruptionBudget allows no disruption, while one
// whose budget allows one goes.
//
// The nodes advertise telemetry/scheduling: the descheduler evicts a pod only where it fits on
// another node (PodFitsAnyNode), and counts every request, so a TAS pod requesting an extended
// resource no node has is never evicted (docs/operations.md, "Descheduler").
func TestDeschedulerTAS(t *testing.T) {
	t.Parallel()
	requireAgents(t, "telemetry")
	deschedulerTAS(t, false)
}

// TestPluginsDeschedulerTAS: the same in plugin mode: the telemetry-policy plugin compiled into
// kube-safe-scheduler (yamlfiles/scheduler.plugins.yaml, its deschedule labels on) labels the
// node, and places the replacements.
func TestPluginsDeschedulerTAS(t *testing.T) {
	t.Parallel()
	deschedulerTAS(t, true)
}

func deschedulerTAS(t *testing.T, plugin bool) {
	const interval = 5 * time.Second
	sets := []string{"agents.telemetry.enabled=true", "descheduler.lowNodeUtilization.enabled=false", "descheduler.maxEvictionsPerNode=10"}
	c, sa, scheduler, policy := deschedulerCluster(t, plugin, sets...)
	if !plugin {
		c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "extender.telemetry.yaml"), false)
	}
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "telemetry-policy-crd.yaml"), false)
	applyWhenServed(t, c, telemetryPolicy)
	cm := c.StartCustomMetrics(t)
	// hot starts cool enough; cool is the coolest of the others.
	for n, v := range map[string]float64{"hot": 50, "warm": 60, "cool": 20} {
		cm.Set("node_cpu", n, v)
	}
	tas := corev1.ResourceList{"telemetry/scheduling": resource.MustParse("110")}
	c.CreateNodes(t, harness.NodeSpec{Name: "hot", Extra: tas}, harness.NodeSpec{Name: "warm", Extra: tas}, harness.NodeSpec{Name: "cool", Extra: tas})
	var ext *harness.Extender
	if plugin {
		// The agent's settings of telemetryEnv, as the plugin's args.
		c.RunDeployment(t, withPlugins(t, []string{"telemetry-policy"}, map[string]map[string]any{"telemetry-policy": {
			"syncPeriod": telemetryEnv["TELEMETRY_SYNC_PERIOD"], "maxAge": telemetryEnv["TELEMETRY_MAX_AGE"],
			"descheduleHold": telemetryEnv["TELEMETRY_DESCHEDULE_HOLD"]}}), harness.RunOptions{Kubeconfig: sa})
	} else {
		r := c.RunDeployment(t, loadDeployment(t, "extender.telemetry.yaml"), harness.RunOptions{
			Kubeconfig: sa, Env: map[string]map[string]string{"telemetry": telemetryEnv},
		})
		ext = r.Extenders["telemetry"]
	}

	// Three pods of the policy on hot, recreated by their "ReplicaSet" without a node (so the
	// scheduler places the replacements); a plain pod of another ReplicaSet on hot.
	rs := replicaSet(t, c, "tas-demo", 3)
	onHot := 3
	loop := startReplicaLoop(t, c, rs, func(name string) *corev1.Pod {
		node := ""
		if onHot > 0 { // the loop's goroutine is the only caller
			node, onHot = "hot", onHot-1
		}
		return tasPod(t, scheduler, name, "tas-demo", node)
	})
	plainRS := replicaSet(t, c, "plain", 1)
	startReplicaLoop(t, c, plainRS, func(name string) *corev1.Pod {
		p, _ := harness.PodSpec{Name: name, NodeName: "hot", CPU: "100m", Labels: map[string]string{"app": "plain"}}.Pod()
		p.Spec.TerminationGracePeriodSeconds = new(int64(0))
		return p
	})
	// Two policy pods covered by PodDisruptionBudgets: one allows no disruption, one allows one.
	for _, g := range []struct {
		name    string
		allowed int32
	}{{"guarded", 0}, {"allowed", 1}} {
		grs := replicaSet(t, c, g.name, 1)
		startReplicaLoop(t, c, grs, func(name string) *corev1.Pod {
			node := ""
			if strings.HasSuffix(name, "-0") { // the first on hot, its replacement placed
				node = "hot"
			}
			return tasPod(t, scheduler, name, g.name, node)
		})
		pdb(t, c, g.name, g.allowed)
	}
	waitUntil(t, time.Minute, "the pods on hot", func() bool {
		return len(podsOn(t, c, "tas-demo", "hot")) == 3 && len(podsOn(t, c, "plain", "hot")) == 1 &&
			len(podsOn(t, c, "guarded", "hot")) == 1 && len(podsOn(t, c, "allowed", "hot")) == 1
	})

	c.StartDescheduler(t, harness.DeschedulerOptions{Policy: policy, Kubeconfig: c.KubeconfigFor(t, deschedulerUser, serviceAccountGroups...), Interval: interval})
	// Nothing violates yet: a few descheduling runs evict nothing.
	time.Sleep(2 * interval)
	if gone := loop.Gone(); len(gone) != 0 {
		t.Fatalf("pods %v went while no node violated the policy", gone)
	}

	// hot turns hot: labelled once the violation held TELEMETRY_DESCHEDULE_HOLD (3 s).
	cm.Set("node_cpu", "hot", 95)
	waitForNodeLabel(t, c, "hot", "demo-policy", "violating")
	drained := waitUntil(t, interval+10*time.Second, "hot drained of demo-policy's pods within the interval + 10 s", func() bool {
		return len(podsOn(t, c, "tas-demo", "hot")) == 0
	})
	t.Logf("hot drained of tas-demo's pods %v after the label appeared (interval %v); evicted: %v", drained.Round(100*time.Millisecond), interval, loop.Gone())

	// The replacements are placed by the scheduler, through the telemetry agent (or plugin): not on hot
	// (node_cpu 95 > 90, and labelled violating); cool (20) scores above warm (60), and
	// kube-scheduler's own spreading may still put one on warm.
	waitUntil(t, time.Minute, "three replacements of tas-demo bound off hot", func() bool {
		return len(podsOn(t, c, "tas-demo", "cool"))+len(podsOn(t, c, "tas-demo", "warm")) == 3
	})
	for _, node := range []string{"cool", "warm"} {
		for _, name := range podsOn(t, c, "tas-demo", node) {
			c.WaitForEvent(t, "default", name, "Scheduled", "default/"+name+" to "+node)
		}
	}
	t.Logf("replacements: cool %v, warm %v", podsOn(t, c, "tas-demo", "cool"), podsOn(t, c, "tas-demo", "warm"))
	if ext != nil {
		if s, err := scores(t.Context(), ext, "telemetry-policy", tasPod(t, scheduler, "probe", "x", ""), []string{"cool", "warm"}); err != nil || s["cool"] <= s["warm"] {
			t.Errorf("telemetry-policy scores %v, %v; want cool above warm", s, err)
		}
	}

	// The budget that allows one disruption lets its pod go; the one allowing none keeps its
	// pod on hot through further runs; the plain pod (no affinity) stays.
	waitUntil(t, interval+10*time.Second, "the pod whose budget allows a disruption evicted", func() bool {
		return len(podsOn(t, c, "allowed", "hot")) == 0
	})
	time.Sleep(2 * interval)
	if got := podsOn(t, c, "guarded", "hot"); len(got) != 1 {
		t.Errorf("the pod whose PodDisruptionBudget allows no disruption: %v on hot; want it kept", got)
	}
	if got := podsOn(t, c, "plain", "hot"); len(got) != 1 {
		t.Errorf("the pod of no policy: %v on hot; want it kept", got)
	}
	// Each pod was evicted once: the replacements are not on hot, so nothing more goes.
	if gone := loop.Gone(); len(gone) != 3 {
		t.Errorf("tas-demo pods gone: %v; want the three first ones, once", gone)
	}
}

// pdb creates a PodDisruptionBudget for app=name (minAvailable 0 or 1) and writes its status
// as the disruption controller would (none runs in the harness): disruptionsAllowed, with the
// observed generation, without which the eviction API refuses every eviction as unprocessed.
func pdb(t *testing.T, c *harness.Cluster, name string, allowed int32) {
	t.Helper()
	minAvailable := intstr.FromInt32(1 - allowed)
	created, err := c.Client.PolicyV1().PodDisruptionBudgets("default").Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: created.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     1,
		DesiredHealthy:     1 - allowed,
		ExpectedPods:       1,
	}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

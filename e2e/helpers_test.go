package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// The identity yamlfiles/service-account.yaml creates, as the API server sees a pod running
// under it.
const (
	serviceAccountUser = "system:serviceaccount:kube-system:my-scheduler"
	schedulerName      = "my-scheduler"
)

var serviceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}

var (
	routesOnce  sync.Once
	routesByAll map[string][]string
	routesErr   error
)

// agentRoutes returns the routes each agent serves, relative to /scheduler/ ("predicates/x"),
// as the extender built with every agent (-tags all) reports them at /version: the list of
// agents and their functions lives in the extender alone. It runs with cluster access, which
// some agents (telemetry) cannot do without.
func agentRoutes(t testing.TB) map[string][]string {
	t.Helper()
	routesOnce.Do(func() {
		c := harness.StartCluster(t)
		ext := harness.StartExtender(t, harness.ExtenderOptions{Name: "extender all (routes)", Tags: []string{"all"},
			Args: []string{"--kubeconfig=" + c.Kubeconfig}})
		v, err := ext.Version(t.Context())
		if err != nil {
			routesErr = err
			return
		}
		routesByAll = map[string][]string{}
		for agent, paths := range v.Routes {
			for _, p := range paths {
				routesByAll[agent] = append(routesByAll[agent], strings.TrimPrefix(p, "/scheduler/"))
			}
		}
	})
	if routesErr != nil {
		t.Fatalf("reading the agents' routes from the extender built with -tags all: %v", routesErr)
	}
	return routesByAll
}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// requireAgents skips the test while an agent it needs is not in the tree yet (its registration
// file <agent>.go at the repository root is missing).
func requireAgents(t testing.TB, agents ...string) {
	t.Helper()
	root := repoRoot(t)
	for _, a := range agents {
		if _, err := os.Stat(filepath.Join(root, a+".go")); err != nil {
			t.Skipf("agent %s is not in the tree yet (%s.go missing)", a, a)
		}
	}
}

// loadDeployment reads yamlfiles/<name>.
func loadDeployment(t testing.TB, name string) *harness.Deployment {
	t.Helper()
	d, err := harness.LoadDeploymentFile(filepath.Join(repoRoot(t), "yamlfiles", name))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startWithServiceAccount starts a cluster, applies yamlfiles/service-account.yaml for real and
// returns the cluster and a kubeconfig that authenticates as that service account, so that the
// scheduler and the sidecars run with exactly the permissions the file grants.
func startWithServiceAccount(t *testing.T) (*harness.Cluster, string) {
	t.Helper()
	c := harness.StartCluster(t)
	c.ApplyFile(t, filepath.Join(repoRoot(t), "yamlfiles", "service-account.yaml"), false)
	return c, c.KubeconfigFor(t, serviceAccountUser, serviceAccountGroups...)
}

// schedule creates a pod for my-scheduler and returns the node it is bound to.
func schedule(t *testing.T, c *harness.Cluster, spec harness.PodSpec) string {
	t.Helper()
	if spec.SchedulerName == "" {
		spec.SchedulerName = schedulerName
	}
	c.CreatePod(t, spec)
	return c.WaitForBinding(t, "default", spec.Name)
}

// scheduleOn schedules a pod and fails unless it lands on want; it also checks the scheduler's
// Scheduled event names that node.
func scheduleOn(t *testing.T, c *harness.Cluster, spec harness.PodSpec, want, why string) {
	t.Helper()
	got := schedule(t, c, spec)
	if got != want {
		t.Fatalf("pod %s went to %s, want %s (%s)", spec.Name, got, want, why)
	}
	c.WaitForEvent(t, "default", spec.Name, "Scheduled", "default/"+spec.Name+" to "+want)
}

// nodeNames returns names as the NodeNames of a nodeCacheCapable request.
func nodeNames(names ...string) *[]string { return &names }

// probePod is a pod the tests send to extenders directly, never created.
func probePod(t testing.TB, spec harness.PodSpec) *corev1.Pod {
	t.Helper()
	p, err := spec.Pod()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// scores asks an extender's priority for its scores of nodes (by name) for pod.
func scores(ctx context.Context, e *harness.Extender, priority string, pod *corev1.Pod, nodes []string) (map[string]int64, error) {
	list, err := e.Prioritize(ctx, priority, &extenderv1.ExtenderArgs{Pod: pod, NodeNames: nodeNames(nodes...)})
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, hp := range list {
		out[hp.Host] = hp.Score
	}
	return out, nil
}

// best returns the nodes with the highest score, sorted.
func best(s map[string]int64) []string {
	var top []string
	var max int64 = -1
	for n, v := range s {
		switch {
		case v > max:
			max, top = v, []string{n}
		case v == max:
			top = append(top, n)
		}
	}
	sort.Strings(top)
	return top
}

// waitForScores polls an extender's priority until ok accepts its scores of nodes for pod. The
// sidecars follow the cluster through informers; this waits until one has seen the changes a
// test just made, before a pod depends on them. It fails t after 30 s with the last scores.
func waitForScores(t *testing.T, e *harness.Extender, priority string, pod *corev1.Pod, nodes []string, what string, ok func(map[string]int64) bool) map[string]int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := scores(t.Context(), e, priority, pod, nodes)
		if err == nil && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s, priority %s: %s never held; last scores %v, error %v", e.Name, priority, what, s, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// filterVerdicts asks an extender's filter about nodes (by name) for pod and returns the
// reasons of the rejected nodes.
func filterVerdicts(t *testing.T, e *harness.Extender, filter string, pod *corev1.Pod, nodes []string) map[string]string {
	t.Helper()
	res, err := e.Filter(t.Context(), filter, &extenderv1.ExtenderArgs{Pod: pod, NodeNames: nodeNames(nodes...)})
	if err != nil {
		t.Fatalf("filter %s: %v", filter, err)
	}
	if res.Error != "" {
		t.Fatalf("filter %s: error %q", filter, res.Error)
	}
	out := maps.Clone(map[string]string(res.FailedNodes))
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, res.FailedAndUnresolvableNodes)
	return out
}

// cpuRequests returns the summed cpu requests (millicores) of the pods bound to each of nodes.
func cpuRequests(t *testing.T, c *harness.Cluster, nodes []string) map[string]int64 {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, n := range nodes {
		out[n] = 0
	}
	for _, p := range pods.Items {
		if _, ok := out[p.Spec.NodeName]; !ok {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			out[p.Spec.NodeName] += ctr.Resources.Requests.Cpu().MilliValue()
		}
	}
	return out
}

// extremes returns the nodes holding the smallest and the largest value, sorted.
func extremes(v map[string]int64) (lowest, highest []string) {
	keys := slices.Sorted(maps.Keys(v))
	for _, k := range keys {
		if len(lowest) == 0 || v[k] < v[lowest[0]] {
			lowest = []string{k}
		} else if v[k] == v[lowest[0]] {
			lowest = append(lowest, k)
		}
		if len(highest) == 0 || v[k] > v[highest[0]] {
			highest = []string{k}
		} else if v[k] == v[highest[0]] {
			highest = append(highest, k)
		}
	}
	return lowest, highest
}

// statsAnnotations are the safe agent's usage statistics: cpu in millicores, memory in bytes.
func statsAnnotations(meanFreeCPU, stdFreeCPU, meanFreeMemory, stdFreeMemory int64) map[string]string {
	return map[string]string{
		"mean-free-cpu":    fmt.Sprint(meanFreeCPU),
		"std-free-cpu":     fmt.Sprint(stdFreeCPU),
		"mean-free-memory": fmt.Sprint(meanFreeMemory),
		"std-free-memory":  fmt.Sprint(stdFreeMemory),
	}
}

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

// withAnnotations returns a copy of a with the key/value pairs kv added.
func withAnnotations(a map[string]string, kv ...string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// mustContain fails t unless s contains every one of subs.
func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("%s %q does not contain %q", what, s, sub)
		}
	}
}

package e2e

// The extender's cluster state (package cluster) against a real kube-apiserver: answers to
// node-name requests equal answers to full-node requests for every agent; the extender keeps
// answering while the API server is down, logs the outage once, and catches up afterwards.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// clusterRoutes are every agent's functions, by kind, as the extender built with -tags all
// serves them.
var clusterRoutes = struct{ filters, priorities []string }{
	filters:    []string{"template-label", "safe-overload"},
	priorities: []string{"template-score", "safe-overload", "safe-balance", "congestion", "pigeon-holing"},
}

// clusterNodes are nodes that give every agent something to tell apart: labels for template,
// usage statistics for safe, congestion factors, GPUs and allocation for pigeon, a cordoned and
// a not-ready node.
func clusterNodes() []harness.NodeSpec {
	stats := func(meanCPU, stdCPU, meanMem, stdMem string) map[string]string {
		return map[string]string{
			"mean-free-cpu": meanCPU, "std-free-cpu": stdCPU, "mean-free-memory": meanMem, "std-free-memory": stdMem,
		}
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		if out == nil {
			out = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	allowed := map[string]string{"template.extender/allowed": "true"}
	return []harness.NodeSpec{
		{Name: "c1", CPU: "4", Memory: "8Gi", Labels: allowed,
			Annotations: with(stats("3500", "200", "7000000000", "100000000"), "template.extender/score", "3", "congestion-factor", "10")},
		{Name: "c2", CPU: "4", Memory: "8Gi", Labels: allowed,
			Annotations: with(stats("300", "400", "500000000", "300000000"), "template.extender/score", "9", "congestion-factor", "90",
				"forcasted-free-cpu", "100")},
		{Name: "c3", CPU: "8", Memory: "32Gi"},
		{Name: "c4", CPU: "16", Memory: "64Gi", Extra: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
			Labels: allowed, Annotations: with(stats("12000", "3000", "40000000000", "8000000000"), "congestion-factor", "40")},
		{Name: "c5", CPU: "4", Memory: "8Gi", Unschedulable: true, Annotations: stats("4000", "0", "8000000000", "0")},
		{Name: "c6", CPU: "2", Memory: "4Gi", NotReady: true, Labels: allowed},
	}
}

// clusterBoundPods give the nodes allocation (bound at creation, no scheduler involved).
func clusterBoundPods() []harness.PodSpec {
	return []harness.PodSpec{
		{Name: "busy-1", NodeName: "c1", CPU: "1500m", Memory: "2Gi"},
		{Name: "busy-2", NodeName: "c1", CPU: "500m", Memory: "1Gi"},
		{Name: "busy-3", NodeName: "c2", CPU: "3", Memory: "6Gi"},
		{Name: "busy-4", NodeName: "c4", CPU: "2", Memory: "8Gi", Extra: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		{Name: "waiting", CPU: "1", Memory: "1Gi"}, // unbound: no node's allocation
	}
}

// clusterProbes are the pods the requests are about (never created: the scheduler would send
// them as it found them).
func clusterProbes(t *testing.T) []*corev1.Pod {
	t.Helper()
	specs := []harness.PodSpec{
		{Name: "small", CPU: "100m", Memory: "128Mi"},
		{Name: "large", CPU: "3", Memory: "6Gi"},
		{Name: "gpu", CPU: "1", Memory: "2Gi", Extra: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		{Name: "empty"},
	}
	var out []*corev1.Pod
	for _, s := range specs {
		p, err := s.Pod()
		if err != nil {
			t.Fatal(err)
		}
		p.UID = types.UID("probe-" + s.Name)
		out = append(out, p)
	}
	return out
}

// filterAnswer is a filter result reduced to what both request forms share.
type filterAnswer struct {
	Passed       []string
	Failed       map[string]string
	Unresolvable map[string]string
	Error        string
}

func reduceFilter(r *extenderv1.ExtenderFilterResult) filterAnswer {
	a := filterAnswer{Failed: map[string]string{}, Unresolvable: map[string]string{}, Error: r.Error}
	if r.Nodes != nil {
		for _, n := range r.Nodes.Items {
			a.Passed = append(a.Passed, n.Name)
		}
	}
	if r.NodeNames != nil {
		a.Passed = append(a.Passed, *r.NodeNames...)
	}
	maps.Copy(a.Failed, r.FailedNodes)
	maps.Copy(a.Unresolvable, r.FailedAndUnresolvableNodes)
	return a
}

// askAll sends one request per function for pod about nodes, in full-node form when full,
// in node-name form otherwise, and returns the answers by route.
func askAll(ctx context.Context, e *harness.Extender, pod *corev1.Pod, nodes []corev1.Node, full bool) (map[string]string, error) {
	args := &extenderv1.ExtenderArgs{Pod: pod}
	if full {
		args.Nodes = &corev1.NodeList{Items: nodes}
	} else {
		names := make([]string, len(nodes))
		for i, n := range nodes {
			names[i] = n.Name
		}
		args.NodeNames = &names
	}
	out := map[string]string{}
	for _, f := range clusterRoutes.filters {
		res, err := e.Filter(ctx, f, args)
		if err != nil {
			return nil, err
		}
		out["filter "+f] = fmt.Sprintf("%+v", reduceFilter(res))
	}
	for _, p := range clusterRoutes.priorities {
		list, err := e.Prioritize(ctx, p, args)
		if err != nil {
			return nil, err
		}
		out["priority "+p] = fmt.Sprintf("%v", list)
	}
	return out, nil
}

func listNodes(t *testing.T, c *harness.Cluster) []corev1.Node {
	t.Helper()
	list, err := c.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

func diffAnswers(want, got map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if want[k] != got[k] {
			fmt.Fprintf(&b, "  %s:\n    full:  %s\n    names: %s\n", k, want[k], got[k])
		}
	}
	return b.String()
}

// startClusterExtender starts the extender with every agent and --kubeconfig for c.
func startClusterExtender(t *testing.T, c *harness.Cluster, name string) *harness.Extender {
	t.Helper()
	return harness.StartExtender(t, harness.ExtenderOptions{
		Name: name, Tags: []string{"all"}, Args: []string{"--kubeconfig=" + c.Kubeconfig},
		Env: map[string]string{"LOG_LEVEL": "INFO"},
	})
}

// startPopulatedCluster starts a cluster holding clusterNodes and clusterBoundPods, then an
// extender with every agent reading it, and returns them with the nodes as the API server has
// them. The extender starts after the objects exist: once ready (caches synced), its cache holds
// exactly them.
func startPopulatedCluster(t *testing.T) (*harness.Cluster, *harness.Extender, []corev1.Node) {
	t.Helper()
	c := harness.StartCluster(t)
	c.CreateNodes(t, clusterNodes()...)
	for _, p := range clusterBoundPods() {
		c.CreatePod(t, p)
	}
	return c, startClusterExtender(t, c, "extender all"), listNodes(t, c)
}

// TestClusterNamesModeEqualsFullNodes: for every function of every agent, the answer to a
// request carrying node names (resolved from the extender's informer cache) equals the answer
// to the same request carrying the full Node objects, as read from the same API server.
func TestClusterNamesModeEqualsFullNodes(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "congestion", "pigeon", "template")
	_, ext, nodes := startPopulatedCluster(t)

	for _, pod := range clusterProbes(t) {
		// A first call lets agents that learn from the pods they see (pigeon's demand
		// statistics count each pod once) see this one before the compared calls.
		if _, err := askAll(t.Context(), ext, pod, nodes, true); err != nil {
			t.Fatal(err)
		}
		full, err := askAll(t.Context(), ext, pod, nodes, true)
		if err != nil {
			t.Fatal(err)
		}
		names, err := askAll(t.Context(), ext, pod, nodes, false)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffAnswers(full, names); d != "" {
			t.Errorf("pod %s: node-name answers differ from full-node answers:\n%s", pod.Name, d)
		}
		for _, k := range slices.Sorted(maps.Keys(full)) {
			t.Logf("pod %s, %s: %s", pod.Name, k, full[k])
		}
		// The answers are not all alike (the comparison would prove little otherwise).
		if full["filter template-label"] == full["filter safe-overload"] {
			t.Errorf("pod %s: both filters answered alike: %s", pod.Name, full["filter template-label"])
		}
	}

	// A name the cache does not know is a failed node with the documented reason, not dropped.
	names := []string{"c1", "ghost"}
	res, err := ext.Filter(t.Context(), "template-label", &extenderv1.ExtenderArgs{Pod: clusterProbes(t)[0], NodeNames: &names})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.FailedNodes["ghost"]; got != "unknown to the extender's cache" {
		t.Errorf("unknown node: reason %q, answer %+v", got, reduceFilter(res))
	}
}

// TestClusterAPIServerRestart: the API server goes away mid-test; the extender goes on
// answering node-name requests from its cache, as before, and logs the loss once; when the
// server is back it logs the recovery once and its cache catches up.
func TestClusterAPIServerRestart(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "congestion", "pigeon", "template")
	c, ext, nodes := startPopulatedCluster(t)
	pod := clusterProbes(t)[0]
	if _, err := askAll(t.Context(), ext, pod, nodes, false); err != nil {
		t.Fatal(err)
	}
	before, err := askAll(t.Context(), ext, pod, nodes, false)
	if err != nil {
		t.Fatal(err)
	}

	c.StopAPIServer(t)
	// The loss shows in the log once the informers notice it (a watch breaks, a list fails).
	waitForLog(t, ext, "lost contact with the API server", 3*time.Minute)
	for i := range 3 {
		during, err := askAll(t.Context(), ext, pod, nodes, false)
		if err != nil {
			t.Fatalf("request %d while the API server is down: %v", i, err)
		}
		if d := diffAnswers(before, during); d != "" {
			t.Errorf("answers changed while the API server was down:\n%s", d)
		}
		time.Sleep(time.Second)
	}
	if status, body, err := ext.Get(t.Context(), "/readyz"); err != nil || status != 200 {
		t.Errorf("/readyz while the API server is down: %d %s %v (the cache still serves)", status, body, err)
	}

	c.StartAPIServer(t)
	waitForLog(t, ext, "the API server is reachable again", 3*time.Minute)
	// The cache follows the API server again: a node created now becomes known.
	c.CreateNode(t, harness.NodeSpec{Name: "c7", Labels: map[string]string{"template.extender/allowed": "true"}})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		names := []string{"c7"}
		res, err := ext.Filter(t.Context(), "template-label", &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
		if err == nil && res.NodeNames != nil && slices.Equal(*res.NodeNames, names) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the extender never learned of c7 after the restart: %+v, %v", res, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	log := readLog(t, ext)
	if n := strings.Count(log, "lost contact with the API server"); n != 1 {
		t.Errorf("the loss was logged %d times, want once", n)
	}
	if n := strings.Count(log, "the API server is reachable again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once", n)
	}
}

func readLog(t *testing.T, e *harness.Extender) string {
	t.Helper()
	b, err := os.ReadFile(e.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitForLog(t *testing.T, e *harness.Extender, text string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(readLog(t, e), text) {
		if e.Exited() {
			t.Fatalf("%s exited:\n%s", e.Name, e.Tail(30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged %q; last lines:\n%s", e.Name, text, e.Tail(30))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestClusterMemory measures the resident memory of the extender (every agent, cluster access)
// once its caches hold 5000 nodes and 50,000 pods of a real API server. It creates the objects
// (a few minutes) and is skipped unless E2E_CLUSTER_MEMORY is set:
//
//	cd e2e && E2E_CLUSTER_MEMORY=1 go test -run TestClusterMemory -v -timeout 60m ./
//
// It reports VmRSS and VmHWM from /proc right after the sync and again 3 minutes later (the Go
// runtime collects at least every 2 minutes and returns freed pages to the system gradually),
// and the heap figures the extender reports at /metrics.
func TestClusterMemory(t *testing.T) {
	if os.Getenv("E2E_CLUSTER_MEMORY") == "" {
		t.Skip("set E2E_CLUSTER_MEMORY=1 to measure the extender's memory at 5000 nodes and 50,000 pods")
	}
	requireAgents(t, "safe", "congestion", "pigeon", "template")
	const nodes, pods = 5000, 50000
	bin := harness.BuildExtender(t, "all") // first: a broken build should not cost the object creation
	c := harness.StartClusterWith(t, harness.ClusterOptions{APIServerArgs: []string{"--max-requests-inflight=2000", "--max-mutating-requests-inflight=2000"}})
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	parallel(t, nodes, 16, func(ctx context.Context, i int) error {
		n := memoryNode(i)
		status := n.Status
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = status
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
	t.Logf("%d nodes created in %s", nodes, time.Since(start).Round(time.Second))
	for i := range 20 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%d", i)}}
		if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	parallel(t, pods, 32, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Pods(fmt.Sprintf("team-%d", i%20)).Create(ctx, memoryPod(i, fmt.Sprintf("node-%04d", i%nodes)), metav1.CreateOptions{})
		return err
	})
	t.Logf("%d pods created in %s", pods, time.Since(start).Round(time.Second))

	start = time.Now()
	ext := harness.StartExtender(t, harness.ExtenderOptions{
		Name: "extender all", Binary: bin, Args: []string{"--kubeconfig=" + c.Kubeconfig},
	})
	t.Logf("extender ready (caches synced) in %s", time.Since(start).Round(time.Second))
	report := func(when string) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ext.Pid()))
		if err != nil {
			t.Fatal(err)
		}
		var rss, hwm string
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				rss = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				hwm = strings.TrimSpace(v)
			}
		}
		code, metrics, err := ext.Get(t.Context(), "/metrics")
		if err != nil || code != 200 {
			t.Fatalf("/metrics: %d %v", code, err)
		}
		mib := map[string]string{}
		for _, line := range strings.Split(string(metrics), "\n") {
			for _, name := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_next_gc_bytes"} {
				if v, ok := strings.CutPrefix(line, name+" "); ok {
					f, _ := strconv.ParseFloat(v, 64)
					mib[name] = fmt.Sprintf("%.0f MiB", f/(1<<20))
				}
			}
		}
		// next_gc is twice the heap live after the last collection (GOGC=100).
		t.Logf("%s: VmRSS %s, VmHWM (peak) %s; heap in use %s, allocated %s, next GC at %s", when, rss, hwm,
			mib["go_memstats_heap_inuse_bytes"], mib["go_memstats_heap_alloc_bytes"], mib["go_memstats_next_gc_bytes"])
	}
	report("after sync")
	// Every pod is in the cache: one request resolving every node, as nodeCacheCapable does.
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%04d", i)
	}
	res, err := ext.Filter(t.Context(), "template-label", &extenderv1.ExtenderArgs{Pod: clusterProbes(t)[0], NodeNames: &names})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.FailedNodes) + len(*res.NodeNames); n != nodes {
		t.Fatalf("the filter judged %d nodes, want %d", n, nodes)
	}
	for _, r := range res.FailedNodes {
		if r == "unknown to the extender's cache" {
			t.Fatal("a node is missing from the cache")
		}
	}
	// The runtime collects at least every 2 minutes and returns free pages in the background.
	time.Sleep(3 * time.Minute)
	report("3 minutes later")
}

// parallel runs do(i) for i in [0, n) on workers goroutines and fails t on the first error.
func parallel(t *testing.T, n, workers int, do func(ctx context.Context, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(t.Context(), i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// memoryNode is a node as a kubelet on a cloud VM registers it (labels, annotations, status
// with conditions, addresses, node info and 30 images).
func memoryNode(i int) *corev1.Node {
	name := fmt.Sprintf("node-%04d", i)
	rl := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("200Gi"),
		"hugepages-1Gi": resource.MustParse("0"), "hugepages-2Mi": resource.MustParse("0"),
	}
	now := metav1.Now()
	cond := func(ty corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: ty, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	var images []corev1.ContainerImage
	for j := range 30 {
		images = append(images, corev1.ContainerImage{Names: []string{
			fmt.Sprintf("registry.example.com/team-%d/service-%d@sha256:%064x", j%7, j, j*7919+i),
			fmt.Sprintf("registry.example.com/team-%d/service-%d:v1.%d.%d", j%7, j, j, i%10),
		}, SizeBytes: int64(50+j) << 20})
	}
	zone := fmt.Sprintf("eu-west-1%c", 'a'+i%3)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"kubernetes.io/os": "linux", "kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "m5.4xlarge",
				"topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": zone,
				"node-pool": fmt.Sprintf("pool-%d", i%4), "template.extender/allowed": strconv.FormatBool(i%2 == 0),
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"csi.volume.kubernetes.io/nodeid": fmt.Sprintf(`{"ebs.csi.aws.com":"i-%017x"}`, i),
				"mean-free-cpu":                   "8000", "std-free-cpu": "1200", "mean-free-memory": "34359738368",
				"std-free-memory": "2147483648", "forcasted-free-cpu": "7900", "forcasted-free-memory": "34000000000",
				"congestion-factor": strconv.Itoa(i % 100), "template.extender/score": strconv.Itoa(i % 11),
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), ProviderID: fmt.Sprintf("aws:///%s/i-%017x", zone, i)},
		Status: corev1.NodeStatus{
			Capacity: rl, Allocatable: rl.DeepCopy(),
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/256, i%256)},
				{Type: corev1.NodeHostName, Address: name},
				{Type: corev1.NodeInternalDNS, Address: name + ".eu-west-1.compute.internal"},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("ec2%029x", i),
				BootID: fmt.Sprintf("%032x", i*31), KernelVersion: "6.1.0-21-cloud-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)",
				ContainerRuntimeVersion: "containerd://1.7.13", KubeletVersion: "v1.37.1", OperatingSystem: "linux", Architecture: "amd64"},
			Images: images,
		},
	}
}

// memoryPod is a Deployment's replica, bound to node: owner reference, labels, annotations, one
// container with env, ports, probes, mounts and requests, a config volume, tolerations.
func memoryPod(i int, node string) *corev1.Pod {
	app := fmt.Sprintf("service-%d", i%300)
	var env []corev1.EnvVar
	for j := range 8 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: fmt.Sprintf("value-%d-%d", j, i%17)})
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 10}
	yes := true
	tolerate := int64(300)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("%s-7d9f8b6c5-%05x", app, i),
			Labels: map[string]string{"app": app, "pod-template-hash": "7d9f8b6c5", "team": fmt.Sprintf("team-%d", i%20), "tier": "backend"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:04:05Z",
				"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8b6c5",
				UID: types.UID(fmt.Sprintf("a1b2c3d4-%04x-4000-8000-000000000000", i%300)), Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "app", Image: fmt.Sprintf("registry.example.com/team-%d/%s:v1.%d.0", i%20, app, i%9),
				Args:  []string{"--config=/etc/app/config.yaml", "--log-level=info"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env:   env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				},
				VolumeMounts:  []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
				LivenessProbe: probe, ReadinessProbe: probe,
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &tolerate},
				{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &tolerate},
			},
		},
	}
}

// Command bench-memory measures the memory of the `all` extender (every agent in one process, as
// the shipped all image runs it) watching a large cluster: a real etcd and kube-apiserver hold
// -nodes nodes (with the annotator's annotations) and -pods pods already bound to them and
// running (a Deployment replica's spec: containers with requests, labels, annotations, an owner
// reference); the extender starts, syncs its caches (its /readyz), settles, serves a few filter
// and prioritize calls for a pod over every node, and then its resident memory (VmRSS), peak
// resident memory (VmHWM, from /proc/<pid>/status) and Go heap in use (its /metrics) are read.
//
// The nodes are created through kube-apiserver; the pods, by default (-load etcd), are written to
// its etcd as it stores them, after a few created through it show what it adds (load.go): about
// kube-apiserver then only takes each pod into its watch cache instead of handling a create and
// a status update (on the shared 2-core machine, 2026-11-27: 120 pods/s instead of 24, the rest
// being this process's own work per pod), and the cluster holds the same objects.
//
// Usage: make bench-memory, or cd e2e && go run ./bench/memory [-nodes 5000 -pods 50000].
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/agents/congestion"
	templateagent "github.com/kube-safe-scheduler/extender/agents/template"
	"github.com/kube-safe-scheduler/extender/e2e/harness"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// Node shape: what a 32-core, 128 GiB worker reports.
const (
	nodeCPUMilli = 32000
	nodeMemory   = 128 << 30
	nodePods     = 110
	namespaces   = 20
	deployments  = 300
)

func main() {
	nodes := flag.Int("nodes", 5000, "nodes in the cluster")
	pods := flag.Int("pods", 50000, "pods bound to the nodes (spread evenly), running")
	workers := flag.Int("workers", 32, "concurrent create calls")
	load := flag.String("load", "etcd", "how the pods get into the cluster: etcd (a few through kube-apiserver, the rest written "+
		"to its etcd as kube-apiserver stores them, checked against those: about 5x as fast) or api (each created through "+
		"kube-apiserver, then its status: tens a second on a shared machine); the nodes are created through kube-apiserver")
	settle := flag.Duration("settle", 20*time.Second, "wait after the extender is ready, before the calls")
	calls := flag.Int("calls", 3, "rounds of calls to every filter and priority the extender serves, each for a pod over every node (0: none)")
	after := flag.Duration("after", 3*time.Minute, "wait after the calls before the last reading (the Go runtime collects at least "+
		"every 2 minutes and returns freed pages to the system gradually)")
	agents := flag.String("agents", "", "the extender's AGENTS (empty: unset, every agent of the all build)")
	variants := flag.String("variants", "", "semicolon-separated extender runs against the same cluster, each a space-separated "+
		"list of KEY=VALUE environment overrides (e.g. ';GOMEMLIMIT=300MiB;AGENTS=safe'), binary=PATH running another extender "+
		"build (e.g. one of another commit, to compare); empty: one run as shipped")
	heapDir := flag.String("heapprofile", "", "directory to save each extender's Go heap profile to (heap-extender-N.pprof, taken "+
		"after the last reading, after a collection): the extender serves /debug/pprof/ on a free loopback port (PPROF_ADDR); empty: none")
	flag.Parse()
	if *nodes < 1 || *pods < 0 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "bench-memory: -nodes and -workers must be at least 1, -pods at least 0")
		os.Exit(2)
	}
	if *load != "etcd" && *load != "api" {
		fmt.Fprintf(os.Stderr, "bench-memory: -load %q: want etcd or api\n", *load)
		os.Exit(2)
	}

	s := harness.NewSession(os.Stderr)
	defer s.Close()
	// No controller lifts the not-ready taint TaintNodesByCondition puts on new nodes: leave it
	// out rather than update every node once more.
	c := harness.StartClusterWith(s, harness.ClusterOptions{APIServerArgs: []string{
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	}})
	client := fastClient(s, c.Config)
	root, err := harness.RepoRoot()
	if err != nil {
		s.Fatalf("%v", err)
	}
	// The CRDs a deployment of every agent installs (gang's PodGroup, telemetry's policy).
	for _, f := range []string{"podgroup-crd.yaml", "telemetry-policy-crd.yaml"} {
		c.ApplyCRDFile(s, filepath.Join(root, "yamlfiles", f))
	}
	ctx := s.Context()
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace(i)}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			s.Fatalf("namespace %s: %v", ns.Name, err)
		}
	}

	// Each node's requests, for the annotator's requested-*/free-* annotations.
	reqCPU, reqMem, count := make([]int64, *nodes), make([]int64, *nodes), make([]int64, *nodes)
	for j := range *pods {
		cpu, mem := podRequests(j)
		reqCPU[j%*nodes] += cpu
		reqMem[j%*nodes] += mem
		count[j%*nodes]++
	}
	now := time.Now()
	start := time.Now()
	pids := fillers(c.Dir)
	run(s, "nodes", *nodes, 1, *workers, pids, func(i, _ int) error {
		n := node(i, now, reqCPU[i], reqMem[i], count[i])
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err == nil && len(created.Status.Allocatable) == 0 { // status not kept on create
			created.Status = n.Status
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		}
		return err
	})
	if *load == "api" || *pods <= throughAPI {
		run(s, "pods", *pods, 1, *workers, pids, func(j, _ int) error {
			_, err := createThroughAPI(ctx, client, j, nodeName(nodeOf(j, *nodes)), time.Now())
			return err
		})
	} else {
		loadPods(s, client, pids, *pods, *nodes, *workers)
	}
	fmt.Fprintf(os.Stderr, "bench-memory: cluster filled in %s\n", time.Since(start).Round(time.Second))

	bin := harness.BuildExtender(s, "all")
	var rows []row
	for k, v := range strings.Split(*variants, ";") {
		env := map[string]string{
			"AGENTS":              *agents,
			"KUBECONFIG":          c.Kubeconfig,
			"LOG_LEVEL":           "INFO",
			"COMBINED_PRIORITIES": "safe-overload=2,safe-balance=1,congestion=1",
			"REWARD_NAMESPACE":    "kube-system",
			// The runtime prints each collection's live heap to the log (read below).
			"GODEBUG": "gctrace=1",
		}
		if *agents == "" {
			delete(env, "AGENTS")
		}
		label, exe := "as shipped", bin
		if f := strings.Fields(v); len(f) > 0 {
			label = strings.Join(f, " ")
			for _, kv := range f {
				key, value, ok := strings.Cut(kv, "=")
				switch {
				case !ok || key == "":
					s.Fatalf("-variants: %q is not KEY=VALUE", kv)
				case key == "binary":
					exe = value
				default:
					env[key] = value
				}
			}
		}
		name := fmt.Sprintf("extender-%d", k+1)
		heap := ""
		if *heapDir != "" {
			env["PPROF_ADDR"] = freeLoopback(s)
			heap = filepath.Join(*heapDir, "heap-"+name+".pprof")
		}
		rows = append(rows, measure(s, exe, name, label, env, *nodes, *settle, *after, *calls, heap))
	}

	fmt.Printf("\nThe all extender watching a real kube-apiserver with %d nodes and %d running pods, %s, %d CPUs\n\n",
		*nodes, *pods, time.Now().UTC().Format("2006-01-02"), numCPU())
	fmt.Println("| variant | agents | time to sync | RSS MiB at ready | RSS MiB after the calls | RSS MiB " + after.String() + " later | " +
		"peak RSS (HWM) MiB | Go heap in use MiB | live heap MiB at the last GC | calls |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %.1f s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %d |\n", r.label, r.agents, r.sync.Seconds(),
			r.ready.rss, r.called.rss, r.end.rss, r.end.hwm, r.end.heap, r.live, r.calls)
	}
}

// row is one extender run's figures.
type row struct {
	label, agents      string
	sync               time.Duration
	ready, called, end memory
	live               string
	calls              int
}

// measure starts an extender with env, waits for its caches, lets it settle, calls it, waits
// again and reads its memory at each step; then stops it.
// When heap is not empty, it then saves the extender's heap profile (from PPROF_ADDR) there.
func measure(s *harness.Session, bin, name, label string, env map[string]string, nodes int, settle, after time.Duration, calls int, heap string) row {
	fmt.Fprintf(os.Stderr, "bench-memory: %s: starting the extender (%s)\n", name, label)
	started := time.Now()
	e := harness.StartExtender(s, harness.ExtenderOptions{Name: name, Binary: bin, Env: env})
	defer e.Stop()
	r := row{label: label, sync: time.Since(started)}
	fmt.Fprintf(os.Stderr, "bench-memory: %s: ready (caches synced) in %s\n", name, r.sync.Round(100*time.Millisecond))
	r.ready = readMemory(s, e, "at ready")
	v, err := e.Version(s.Context())
	if err != nil {
		s.Fatalf("extender /version: %v", err)
	}
	r.agents = strings.Join(v.Agents, ",")
	time.Sleep(settle)
	if calls > 0 {
		r.calls = callAll(s, e, v, calls, nodes)
	}
	r.called = readMemory(s, e, "after the calls")
	time.Sleep(after)
	r.end = readMemory(s, e, after.String()+" later")
	r.live = lastLiveHeap(e.LogPath)
	if heap != "" {
		saveHeapProfile(s, env["PPROF_ADDR"], heap)
	}
	// Said now too: a later variant that fails stops the run before the table.
	fmt.Fprintf(os.Stderr, "bench-memory: %s (%s): synced in %.1f s; RSS %.0f MiB at ready, %.0f after the calls, %.0f %s later; peak %.0f MiB; "+
		"Go heap in use %.0f MiB; live heap at the last GC %s MB\n", name, label, r.sync.Seconds(), r.ready.rss, r.called.rss, r.end.rss, after, r.end.hwm, r.end.heap, r.live)
	return r
}

// freeLoopback returns a loopback host:port free now, for the extender's PPROF_ADDR.
func freeLoopback(s *harness.Session) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Fatalf("a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// saveHeapProfile saves the heap profile the extender serves at addr to path, after a
// collection (?gc=1), so its in-use figures are what the collection kept: what holds the memory.
func saveHeapProfile(s *harness.Session, addr, path string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		s.Fatalf("extender's heap profile: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.Fatalf("extender's heap profile: status %d, %v", resp.StatusCode, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.Fatalf("%v", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		s.Fatalf("%v", err)
	}
	fmt.Fprintf(os.Stderr, "bench-memory: heap profile saved to %s (go tool pprof -sample_index=inuse_space -top %s)\n", path, path)
}

// lastLiveHeap returns the live heap (MB) the runtime's last collection marked, from the
// gctrace lines in the extender's log ("gc N @...: ..., A->B->C MB, ...": C is live), or "n/a".
func lastLiveHeap(log string) string {
	b, err := os.ReadFile(log)
	if err != nil {
		return "n/a"
	}
	live := "n/a"
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		for _, f := range strings.Split(line, ",") {
			f = strings.TrimSpace(f)
			if sizes, ok := strings.CutSuffix(f, " MB"); ok && strings.Count(sizes, "->") == 2 {
				live = sizes[strings.LastIndex(sizes, "->")+2:]
			}
		}
	}
	return live
}

// memory is a process's resident memory, peak resident memory and Go heap in use, in MiB.
type memory struct{ rss, hwm, heap float64 }

func readMemory(s *harness.Session, e *harness.Extender, when string) memory {
	var m memory
	var err error
	if m.rss, m.hwm, err = harness.Memory(e.Pid()); err != nil {
		s.Fatalf("extender's memory: %v", err)
	}
	status, body, err := e.Get(s.Context(), "/metrics")
	if err != nil || status != 200 {
		s.Fatalf("extender /metrics: status %d, %v", status, err)
	}
	m.heap = math.NaN()
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				m.heap = x / (1 << 20)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "bench-memory: %s: RSS %.0f MiB, peak %.0f MiB, Go heap in use %.0f MiB\n", when, m.rss, m.hwm, m.heap)
	return m
}

// callAll sends rounds of calls to every filter and priority the extender serves, for a pending
// pod over every node (by name, as a nodeCacheCapable extender is called), and returns the
// number of calls answered.
func callAll(s *harness.Session, e *harness.Extender, v harness.VersionInfo, rounds, nodes int) int {
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	served := 0
	for r := range rounds {
		p := pod(1_000_000+r, "")
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		p.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", r))
		body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: p, NodeNames: &names})
		if err != nil {
			s.Fatalf("%v", err)
		}
		for agent, routes := range v.Routes {
			for _, route := range routes {
				if !strings.HasPrefix(route, "/scheduler/predicates/") && !strings.HasPrefix(route, "/scheduler/priorities/") {
					continue
				}
				status, answer, err := e.Post(s.Context(), route, body)
				if err != nil || status != 200 {
					s.Fatalf("%s %s: status %d, %v: %s", agent, route, status, err, bytes.TrimSpace(answer))
				}
				served++
			}
		}
	}
	fmt.Fprintf(os.Stderr, "bench-memory: %d calls answered\n", served)
	return served
}

// loadPods puts pods into the cluster through etcd (load.go): the first throughAPI through
// kube-apiserver, the rest predicted from them and written to etcd, two of them read back
// through kube-apiserver.
func loadPods(s *harness.Session, client kubernetes.Interface, pids map[string]int, pods, nodes, workers int) {
	ctx := s.Context()
	stored, times := make([]*corev1.Pod, throughAPI), make([]time.Time, throughAPI)
	for j := range stored {
		times[j] = time.Now()
		var err error
		if stored[j], err = createThroughAPI(ctx, client, j, nodeName(nodeOf(j, nodes)), times[j]); err != nil {
			s.Fatalf("pod %d: %v", j, err)
		}
	}
	loader, err := newPodLoader(stored, nodes, times)
	if err != nil {
		s.Fatalf("%v", err)
	}
	etcd, err := etcdClient(pids["etcd"])
	if err != nil {
		s.Fatalf("%v", err)
	}
	defer etcd.Close()
	var mu sync.Mutex
	var samples []*corev1.Pod // the first and the last pod written, to read back
	run(s, "pods (through etcd)", pods-throughAPI, 64, workers, pids, func(from, to int) error {
		batch := make([]*corev1.Pod, 0, to-from)
		for i := from; i < to; i++ {
			j := throughAPI + i
			p, err := loader.predict(j, time.Now())
			if err != nil {
				return err
			}
			batch = append(batch, p)
			if j == throughAPI || j == pods-1 {
				mu.Lock()
				samples = append(samples, p)
				mu.Unlock()
			}
		}
		return put(ctx, etcd, loader, batch)
	})
	for _, p := range samples {
		if err := checkThroughAPI(ctx, client, p); err != nil {
			s.Fatalf("%v", err)
		}
	}
	fmt.Fprintf(os.Stderr, "bench-memory: %d pods through kube-apiserver, %d written to etcd as it stores them; %d read back through it\n",
		throughAPI, pods-throughAPI, len(samples))
}

// run calls f(from, to) for the objects 0..n-1 in batches of batch on workers goroutines,
// reports progress on one line, and stops the session at the first error. At the end it says
// the CPU time each of pids (named) spent per object, and the machine's load: what bounds the
// rate.
func run(s *harness.Session, what string, n, batch, workers int, pids map[string]int, f func(from, to int) error) {
	cpu := func() map[string]int64 {
		out := map[string]int64{}
		for name, pid := range pids {
			out[name] = harness.CPUTicks(pid)
		}
		return out
	}
	cpuBefore := cpu()
	var next, done atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	start := time.Now()
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d := done.Load()
				fmt.Fprintf(os.Stderr, "\rbench-memory: %s %d/%d (%.0f/s)   ", what, d, n, float64(d)/time.Since(start).Seconds())
			}
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(int64(batch))) - batch
				if i >= n {
					return
				}
				to := min(i+batch, n)
				if err := f(i, to); err != nil {
					once.Do(func() { first = fmt.Errorf("%s %d: %w", what, i, err) })
					next.Store(int64(n))
					return
				}
				done.Add(int64(to - i))
			}
		}()
	}
	wg.Wait()
	close(stop)
	fmt.Fprintf(os.Stderr, "\rbench-memory: %s %d/%d in %s (%.0f/s)\n", what, done.Load(), n,
		time.Since(start).Round(time.Second), float64(done.Load())/time.Since(start).Seconds())
	if d := done.Load(); d > 0 {
		cpuAfter := cpu()
		var parts []string
		for _, name := range []string{"kube-apiserver", "etcd", "bench-memory"} {
			if _, ok := pids[name]; ok {
				parts = append(parts, fmt.Sprintf("%s %.2f ms", name, float64(cpuAfter[name]-cpuBefore[name])*1000/harness.ClockTicks/float64(d)))
			}
		}
		fmt.Fprintf(os.Stderr, "bench-memory: CPU per %s object: %s; load average %.2f\n", what, strings.Join(parts, ", "), harness.LoadAverage())
	}
	if first != nil {
		s.Fatalf("%v", first)
	}
}

// fastClient is an admin client whose rate limits do not bound the benchmark's own calls, and
// which speaks protobuf: the filling is bound by the CPU of kube-apiserver and of this process
// (run says how much each spends per object), and protobuf costs both less to decode and encode
// than JSON. The objects stored, and so what the extender lists and watches, are the same.
func fastClient(s *harness.Session, cfg *rest.Config) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 5000, 5000
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		s.Fatalf("client: %v", err)
	}
	return client
}

func namespace(i int) string { return fmt.Sprintf("team-%d", i%namespaces) }

// node is node number i as a kubelet registers it and a node annotator annotates it: labels of a
// cloud node, status with conditions, addresses, system info and images, the usage statistics
// (see fixtures.UsageStatistics) and the requested/free annotations of the pods on it.
func node(i int, now time.Time, cpu, mem, pods int64) *corev1.Node {
	name := fmt.Sprintf("node-%05d", i)
	zone := zoneOf(i)
	annotations := fixtures.UsageStatistics(i, nodeCPUMilli, nodeMemory, now)
	for k, v := range map[string]int64{
		nodestats.RequestedCPU: cpu, nodestats.RequestedMemory: mem, nodestats.RequestedPods: pods,
		nodestats.FreeCPU: nodeCPUMilli - cpu, nodestats.FreeMemory: nodeMemory - mem, nodestats.FreePods: nodePods - pods,
	} {
		annotations[k] = nodestats.FormatInt(v)
	}
	annotations[congestion.Annotation] = strconv.Itoa((i * 37) % 100)
	annotations[templateagent.DefaultConfig().ScoreAnnotation] = strconv.Itoa(i % 11)
	annotations["csi.volume.kubernetes.io/nodeid"] = fmt.Sprintf(`{"ebs.csi.aws.com":"i-%017x"}`, i)
	annotations["node.alpha.kubernetes.io/ttl"] = "0"
	annotations["volumes.kubernetes.io/controller-managed-attach-detach"] = "true"
	list := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(nodeCPUMilli, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(nodeMemory, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(nodePods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	var images []corev1.ContainerImage
	for k := range 8 {
		images = append(images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("registry.example.com/base/image-%d@sha256:%064x", k, k), fmt.Sprintf("registry.example.com/base/image-%d:v%d", k, k)},
			SizeBytes: int64(20+k*15) << 20,
		})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
				"node.kubernetes.io/instance-type": "m6i.8xlarge", "topology.kubernetes.io/region": "eu-west-1",
				"topology.kubernetes.io/zone": zone, "template.extender/allowed": "true",
				"nodepool": fmt.Sprintf("pool-%d", i%4),
			},
			Annotations: annotations,
		},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256), ProviderID: fmt.Sprintf("aws:///%s/i-%017x", zone, i)},
		Status: corev1.NodeStatus{
			Capacity: list, Allocatable: list.DeepCopy(), Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/256, i%256)},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("ec2%05x-0000-0000-0000-000000000000", i), BootID: fmt.Sprintf("%032x", i+1),
				KernelVersion: "6.1.0-27-cloud-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.7.24",
				KubeletVersion: "v1.37.1", OperatingSystem: "linux", Architecture: "amd64",
			},
			Images: images,
		},
	}
}

// podRequests returns pod j's total cpu (millicores) and memory (bytes) requests.
func podRequests(j int) (cpu, mem int64) {
	cpu, mem = appRequests(j)
	if hasSidecar(j) {
		cpu, mem = cpu+50, mem+64<<20
	}
	return cpu, mem
}

func appRequests(j int) (cpu, mem int64) { return 100 + int64(j%5)*100, (128 + int64(j%4)*128) << 20 }

func hasSidecar(j int) bool { return j%3 == 0 }

// pod is pod number j as a Deployment's ReplicaSet creates it, bound to node (none when empty):
// an app container (env, ports, probes, mounts, requests and limits), a log-shipping sidecar on
// a third of them, a config volume, tolerations, labels, annotations and an owner reference.
func pod(j int, node string) *corev1.Pod {
	app := fmt.Sprintf("service-%d", j%deployments)
	hash := fmt.Sprintf("%09x", j%deployments*7919)
	cpu, mem := appRequests(j)
	var env []corev1.EnvVar
	for k := range 6 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", k), Value: fmt.Sprintf("value-%d-%d", k, j%17)})
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	containers := []corev1.Container{{
		Name: "app", Image: fmt.Sprintf("registry.example.com/%s/%s:v1.%d.0", namespace(j), app, j%9),
		Args:  []string{"--config=/etc/app/config.yaml", "--log-level=info"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
		Env:   env,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(2*cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(2*mem, resource.BinarySI)},
		},
		VolumeMounts:  []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
		LivenessProbe: probe, ReadinessProbe: probe,
	}}
	if hasSidecar(j) {
		containers = append(containers, corev1.Container{
			Name: "log-shipper", Image: "registry.example.com/platform/log-shipper:v3.2.1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		})
	}
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace(j), Name: fmt.Sprintf("%s-%s-%05x", app, hash[:5], j),
			Labels: map[string]string{"app": app, "pod-template-hash": hash, "team": namespace(j), "tier": "backend"},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:04:05Z",
				"prometheus.io/scrape":              "true", "prometheus.io/port": "9090",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash,
				UID: types.UID(fmt.Sprintf("a1b2c3d4-%04x-4000-8000-000000000000", j%deployments)), Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: containers,
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
		},
	}
}

// runningStatus is the status a kubelet writes for pod j once its containers run and are ready.
func runningStatus(j int, p *corev1.Pod, now time.Time) corev1.PodStatus {
	t := metav1.NewTime(now)
	st := corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: podIP(j),
		// What kube-apiserver derives from HostIP and PodIP when they are left out.
		HostIPs: []corev1.HostIP{{IP: "10.0.0.1"}}, PodIPs: []corev1.PodIP{{IP: podIP(j)}},
		StartTime: &t, QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{
			{Type: "PodReadyToStartContainers", Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
		},
	}
	for k, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Ready: true, Started: ptr(true), Image: c.Image,
			ImageID:     fmt.Sprintf("%s@sha256:%064x", strings.Split(c.Image, ":")[0], j%deployments+k),
			ContainerID: fmt.Sprintf("containerd://%064x", j*2+k),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		})
	}
	return st
}

func ptr[T any](v T) *T { return &v }

func podIP(j int) string { return fmt.Sprintf("10.%d.%d.%d", 100+j/65536, j/256%256, j%256) }

// zoneOf is node i's zone.
func zoneOf(i int) string { return fmt.Sprintf("eu-west-1%c", 'a'+i%3) }

// nodeOf is the node pod j is bound to.
func nodeOf(j, nodes int) int { return j % nodes }

func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// fillers returns the processes whose CPU the filling costs: this one, and the cluster's
// kube-apiserver and etcd (the processes of those names whose command line names the cluster's
// directory, dir).
func fillers(dir string) map[string]int {
	out := map[string]int{"bench-memory": os.Getpid()}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmd, []byte(dir)) {
			continue
		}
		if name := filepath.Base(string(bytes.SplitN(cmd, []byte{0}, 2)[0])); name == "kube-apiserver" || name == "etcd" {
			out[name] = pid
		}
	}
	return out
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

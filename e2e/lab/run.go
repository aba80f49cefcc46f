package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
	"github.com/kube-safe-scheduler/extender/e2e/lab/reference"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// RunConfig is what every run of a lab invocation shares.
type RunConfig struct {
	Cluster Cluster
	// Duration is the simulated time of a run; the first Warmup of it is not measured.
	// MeanRun is the pods' mean run time (simulated).
	Duration, Warmup, MeanRun time.Duration
	// Speed is simulated seconds per real second.
	Speed float64
	Model Model
	// Progress receives a progress line every few seconds.
	Progress io.Writer
	// AnnotatorBin and PrometheusBin are the node annotator and Prometheus executables.
	AnnotatorBin, PrometheusBin string
	// OwnerObjects creates the ReplicaSet that owns each service workload's pods (with the
	// workload's selector and no replicas: no controller-manager runs), as a cluster has them,
	// so that kube-scheduler's default spreading (PodTopologySpread's system defaults, which
	// find a pod's ReplicaSets by selector) sees the pod's siblings. Without it the owner is
	// only a reference, and the default spreading finds none.
	OwnerObjects bool
	// Descheduler is the chart's descheduler (its policy for the metrics server, its RBAC and
	// interval), rendered once; the runs of a Scheduler with Descheduler need it.
	Descheduler *harness.ChartDescheduler
}

// Point is one moment of a run's time series.
type Point struct {
	Minute     float64
	CPUInUse   float64 // mean cpu utilization of the nodes in use
	NodesInUse int
	Hot        int // nodes above 90 %
	// OverCPU is the cpu (cores) demanded above 90 % of the nodes' allocatable, over all nodes.
	OverCPU float64
}

// Result is one run: a workload, a scheduler, a seed.
type Result struct {
	Workload, Scheduler string
	Seed                uint64
	Figures             Figures
	// Unknown names the columns (report.go) a merged results.csv did not have: an older run
	// that measured no such figure. The report prints "-" for them, not 0.
	Unknown map[string]bool
	Series  []Point
	// Completed counts the pods kwok completed (Succeeded). StatsNodes counts the nodes carrying
	// the annotator's statistics at the end, BusyStatsNodes those whose mean free cpu is below
	// 95 % of allocatable (the usage went all the way through Prometheus and the annotator).
	Completed, StatsNodes, BusyStatsNodes int
	// PodSeries counts the pods whose container_memory_working_set_bytes Prometheus held at
	// the end (the per-pod series reached Prometheus).
	PodSeries int
	// Gang workload: groups created, groups all of whose members were bound, groups left
	// partly bound at the end, and cpu-minutes (cores x simulated minutes, after the warm-up)
	// requested by bound members of groups not yet whole: room held by waiting members.
	Groups, GroupsComplete, GroupsPartial int
	// MaxGap is the longest simulated time between two samples, in minutes (1 when the lab
	// kept up with the clock; more when the machine stalled it).
	MaxGap         float64
	HeldCPUMinutes float64
}

// groupCounts returns, per pod group, its members created, those ever bound, and the cpu
// (millicores) requested by the bound members still running. tr.mu must be held.
func (tr *tracker) groupCounts() map[string][3]int64 {
	out := map[string][3]int64{}
	for _, st := range tr.pods {
		if st.plan.Group == "" {
			continue
		}
		g := out[st.plan.Group]
		g[0]++
		if st.node >= 0 {
			g[1]++
			if !st.over {
				g[2] += st.plan.CPU
			}
		}
		out[st.plan.Group] = g
	}
	return out
}

// heldCPU is the cpu (millicores) requested by the bound, running members of groups not all
// of whose members are bound.
func (tr *tracker) heldCPU() float64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	held := 0.0
	for name, g := range tr.groupCounts() {
		if g[1] < int64(tr.groupMin[name]) {
			held += float64(g[2])
		}
	}
	return held
}

// groups returns the groups completed (every member bound at some time), partly bound at the
// end, and created.
func (tr *tracker) groups() (complete, partial, created int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for name, g := range tr.groupCounts() {
		if g[0] < int64(tr.groupMin[name]) {
			continue // not all members created before the end
		}
		created++
		switch {
		case g[1] >= int64(tr.groupMin[name]):
			complete++
		case g[1] > 0:
			partial++
		}
	}
	return complete, partial, created
}

// real converts a simulated duration to real time.
func (rc RunConfig) real(d time.Duration) time.Duration { return time.Duration(float64(d) / rc.Speed) }

// scaled is a simulated duration in real time, at least a second, as a Go duration string.
func (rc RunConfig) scaled(d time.Duration) string {
	return max(time.Second, rc.real(d).Round(100*time.Millisecond)).String()
}

// podState is what the lab knows of a pod of the workload.
type podState struct {
	plan    *PodPlan
	created time.Time
	node    int // -1 unbound
	running bool
	over    bool // succeeded, failed or deleted
	// started is when the pod was first seen Running (real time).
	started time.Time
	// cpuSeconds is the pod's cumulative cpu time (real seconds) as of lastUsage (podUsage).
	cpuSeconds float64
	lastUsage  time.Time
}

// tracker follows the workload's pods through an informer and computes true usage.
type tracker struct {
	rc    RunConfig
	seed  uint64
	start atomic.Pointer[time.Time] // sim time 0; nil before the replay starts

	mu        sync.Mutex
	pods      map[string]*podState
	nodeIdx   map[string]int
	groupMin  map[string]int // each pod group's minimum
	bind      []float64      // seconds, pods created after the warm-up
	placed    int
	failed    int
	succeeded int
	// ranReal and ranPlanned sum, over the pods completed (Succeeded), the simulated time each
	// was seen running and the run time it was given: kwok completes a pod after its run time
	// counted from when it handles the Running pod, so a loaded machine lengthens lives.
	ranReal, ranPlanned float64
	done                []string // terminated, to delete
	// Evictions (the descheduler's): evicted pods, to delete at once as a kubelet would end
	// them; their replacements, to create, as the pod's controller would; each eviction, in
	// order; each replacement's lineage (the name of the workload's pod it descends from) and
	// each lineage's replacements so far.
	kill        []string
	replace     []*PodPlan
	evictions   []eviction
	lineage     map[string]string
	generations map[string]int
}

// eviction is one pod evicted: when (simulated) and its lineage.
type eviction struct {
	at      time.Duration
	lineage string
}

func (tr *tracker) now() time.Duration {
	s := tr.start.Load()
	if s == nil {
		return 0
	}
	return time.Duration(float64(time.Since(*s)) * tr.rc.Speed)
}

func (tr *tracker) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	at := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	st := tr.pods[pod.Name]
	if st == nil {
		return
	}
	if pod.Spec.NodeName != "" && st.node < 0 {
		st.node = tr.nodeIdx[pod.Spec.NodeName]
		tr.placed++
		if st.plan.Arrive >= tr.rc.Warmup {
			tr.bind = append(tr.bind, at.Sub(st.created).Seconds())
		}
	}
	if st.over {
		return
	}
	if pod.DeletionTimestamp != nil {
		tr.evictedLocked(st, at)
		return
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		if !st.running {
			st.started = at
		}
		st.running = true
	case corev1.PodSucceeded, corev1.PodFailed:
		if pod.Status.Phase == corev1.PodFailed {
			tr.failed++
		} else {
			tr.succeeded++
			if st.running {
				tr.ranReal += at.Sub(st.started).Seconds() * tr.rc.Speed
				tr.ranPlanned += st.plan.Duration.Seconds()
			}
		}
		st.running, st.over = false, true
		tr.done = append(tr.done, pod.Name)
	}
}

// deleted handles a pod deleted from the API: one the lab did not delete (it deletes only the
// pods that are over) was evicted.
func (tr *tracker) deleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if st := tr.pods[pod.Name]; st != nil && !st.over {
		tr.evictedLocked(st, time.Now())
	}
}

// evictedLocked records the eviction of a pod that was not over: it stops running (as a
// kubelet would end it; the lab deletes it at once), and a replacement is queued, as its
// controller would create one: a ReplicaSet's pod gets the rest of its run time, a Job's pod
// starts its work again. A pod of no workload (no owner) is not replaced. tr.mu must be held.
func (tr *tracker) evictedLocked(st *podState, at time.Time) {
	st.running, st.over = false, true
	tr.kill = append(tr.kill, st.plan.Name)
	if st.node < 0 {
		return // deleted before it was bound: not an eviction
	}
	lineage := tr.lineage[st.plan.Name]
	if lineage == "" {
		lineage = st.plan.Name
	}
	tr.evictions = append(tr.evictions, eviction{at: tr.now(), lineage: lineage})
	if st.plan.Workload == "" {
		return
	}
	next := *st.plan
	tr.generations[lineage]++
	next.Name = fmt.Sprintf("%s-r%d", lineage, tr.generations[lineage])
	next.Arrive = tr.now()
	if next.OwnerKind == "ReplicaSet" && !st.started.IsZero() {
		ran := time.Duration(float64(at.Sub(st.started)) * tr.rc.Speed)
		next.Duration = max(time.Second, st.plan.Duration-ran)
	}
	tr.lineage[next.Name] = lineage
	tr.replace = append(tr.replace, &next)
}

// metricsUsage is what the lab's metrics.k8s.io server reports (the descheduler reads it): each
// running pod's true usage now, and each node's, the sum of its pods' (at most its allocatable,
// as a node cannot use more than it has).
func (tr *tracker) metricsUsage(context.Context) (harness.MetricsUsage, error) {
	t := tr.now()
	out := harness.MetricsUsage{Nodes: map[string]harness.ResourceUsage{}, Pods: map[types.NamespacedName]harness.ResourceUsage{}}
	cpu, mem := make([]float64, tr.rc.Cluster.Nodes), make([]float64, tr.rc.Cluster.Nodes)
	tr.mu.Lock()
	for name, st := range tr.pods {
		if !st.running || st.node < 0 {
			continue
		}
		c, m := tr.rc.Model.Usage(tr.seed, st.plan, t)
		out.Pods[types.NamespacedName{Namespace: "default", Name: name}] = harness.ResourceUsage{MilliCPU: int64(c), Memory: int64(m)}
		cpu[st.node] += c
		mem[st.node] += m
	}
	tr.mu.Unlock()
	for i := range cpu {
		out.Nodes[nodeName(i)] = harness.ResourceUsage{
			MilliCPU: int64(math.Min(cpu[i], float64(tr.rc.Cluster.CPU))),
			Memory:   int64(math.Min(mem[i], float64(tr.rc.Cluster.Memory))),
		}
	}
	return out, nil
}

// usage returns each node's true cpu (millicores) and memory (bytes) demand and running pods
// at simulated time t.
func (tr *tracker) usage(t time.Duration) (cpu, mem []float64, running []int) {
	n := tr.rc.Cluster.Nodes
	cpu, mem, running = make([]float64, n), make([]float64, n), make([]int, n)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, st := range tr.pods {
		if !st.running || st.node < 0 {
			continue
		}
		c, m := tr.rc.Model.Usage(tr.seed, st.plan, t)
		cpu[st.node] += c
		mem[st.node] += m
		running[st.node]++
	}
	return cpu, mem, running
}

// podUsage accumulates each running pod's cpu seconds (of real time, so that rate() over the
// series gives cores as cAdvisor's does) and returns, per running pod, its name, cumulative
// cpu seconds and memory (bytes) at simulated time t. Pods are listed in name order.
func (tr *tracker) podUsage(t time.Duration) (names []string, cpuSeconds, mem []float64) {
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for name, st := range tr.pods {
		if !st.running || st.node < 0 {
			continue
		}
		c, m := tr.rc.Model.Usage(tr.seed, st.plan, t)
		if !st.lastUsage.IsZero() {
			st.cpuSeconds += c / 1000 * now.Sub(st.lastUsage).Seconds()
		}
		st.lastUsage = now
		names = append(names, name)
		cpuSeconds = append(cpuSeconds, st.cpuSeconds)
		mem = append(mem, m)
	}
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
	sn, sc, sm := make([]string, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		sn[i], sc[i], sm[i] = names[j], cpuSeconds[j], mem[j]
	}
	return sn, sc, sm
}

// ServeHTTP is the usage exporter Prometheus scrapes: each node's free cpu and memory, as a
// node exporter would measure them (a node cannot use more than it has: free is at least 0),
// and each running pod's usage as cAdvisor names it (container_cpu_usage_seconds_total, a
// counter of cpu seconds per real second; container_memory_working_set_bytes), labels
// namespace, pod, container ("app") and node.
func (tr *tracker) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := tr.now()
	cpu, mem, _ := tr.usage(now)
	names, podCPU, podMem := tr.podUsage(now)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# HELP lab_node_free_cpu_millicores Allocatable cpu minus the true usage of the node's pods.")
	fmt.Fprintln(w, "# TYPE lab_node_free_cpu_millicores gauge")
	for i := range cpu {
		fmt.Fprintf(w, "lab_node_free_cpu_millicores{node=%q} %g\n", nodeName(i), math.Max(0, float64(tr.rc.Cluster.CPU)-cpu[i]))
	}
	fmt.Fprintln(w, "# HELP lab_node_free_memory_bytes Allocatable memory minus the true usage of the node's pods.")
	fmt.Fprintln(w, "# TYPE lab_node_free_memory_bytes gauge")
	for i := range mem {
		fmt.Fprintf(w, "lab_node_free_memory_bytes{node=%q} %g\n", nodeName(i), math.Max(0, float64(tr.rc.Cluster.Memory)-mem[i]))
	}
	tr.mu.Lock()
	nodes := make([]string, len(names))
	for i, name := range names {
		if st := tr.pods[name]; st != nil && st.node >= 0 {
			nodes[i] = nodeName(st.node)
		}
	}
	tr.mu.Unlock()
	fmt.Fprintln(w, "# HELP container_cpu_usage_seconds_total Cumulative cpu time of the pod's true usage (seconds per real second).")
	fmt.Fprintln(w, "# TYPE container_cpu_usage_seconds_total counter")
	for i, name := range names {
		fmt.Fprintf(w, "container_cpu_usage_seconds_total{namespace=\"default\",pod=%q,container=\"app\",node=%q} %g\n", name, nodes[i], podCPU[i])
	}
	fmt.Fprintln(w, "# HELP container_memory_working_set_bytes The pod's true memory usage.")
	fmt.Fprintln(w, "# TYPE container_memory_working_set_bytes gauge")
	for i, name := range names {
		fmt.Fprintf(w, "container_memory_working_set_bytes{namespace=\"default\",pod=%q,container=\"app\",node=%q} %g\n", name, nodes[i], podMem[i])
	}
}

// workloadLabel names a pod's workload, as charts and controllers label pods.
const workloadLabel = "app.kubernetes.io/name"

// ownerRefs is a pod's owner reference: a ReplicaSet (apps/v1) or a Job (batch/v1) named after
// its workload, as the controller's pods carry it. The lab runs no controller-manager: nothing
// creates, deletes or garbage-collects the pods but the lab. The owner object exists only with
// RunConfig.OwnerObjects (a ReplicaSet with no replicas); the reference's UID is derived from
// its name either way.
func ownerRefs(p *PodPlan) []metav1.OwnerReference {
	if p.Workload == "" {
		return nil
	}
	api, name := "apps/v1", p.Workload+"-"+fmt.Sprintf("%08x", fnv32(p.Workload))[:8]
	if p.OwnerKind == "Job" {
		api, name = "batch/v1", p.Workload
	}
	yes := true
	return []metav1.OwnerReference{{APIVersion: api, Kind: p.OwnerKind, Name: name, Controller: &yes,
		UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", uint64(fnv32(p.OwnerKind+"/"+name))))}}
}

// createOwners creates the ReplicaSet of every service workload of w (RunConfig.OwnerObjects).
func createOwners(t harness.T, c *harness.Cluster, w Workload) {
	t.Helper()
	made := map[string]bool{}
	for i := range w.Pods {
		p := &w.Pods[i]
		if p.OwnerKind != "ReplicaSet" || made[p.Workload] {
			continue
		}
		made[p.Workload] = true
		ref := ownerRefs(p)[0]
		labels := map[string]string{workloadLabel: p.Workload}
		zero := int32(0)
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: "default", Labels: labels},
			Spec: appsv1.ReplicaSetSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "lab"}}}}},
		}
		if _, err := c.Client.AppsV1().ReplicaSets("default").Create(t.Context(), rs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the ReplicaSet of workload %s: %v", p.Workload, err)
		}
	}
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// Run runs workload w under scheduler s on a fresh cluster and returns its figures.
func Run(t harness.T, rc RunConfig, w Workload, s Scheduler, seed uint64) Result {
	t.Helper()
	res := Result{Workload: w.Name, Scheduler: s.Name, Seed: seed}
	c := harness.StartCluster(t)
	nodes := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range nodes {
				c.CreateNode(t, harness.NodeSpec{Name: nodeName(i),
					CPU:    strconv.FormatInt(rc.Cluster.CPU, 10) + "m",
					Memory: strconv.FormatInt(rc.Cluster.Memory, 10), Pods: "110"})
			}
		})
	}
	for i := range rc.Cluster.Nodes {
		nodes <- i
	}
	close(nodes)
	wg.Wait()
	c.StartKwok(t, []byte(stages(w.BadNodes)))

	tr := &tracker{rc: rc, seed: seed, pods: map[string]*podState{}, nodeIdx: map[string]int{}, groupMin: map[string]int{},
		lineage: map[string]string{}, generations: map[string]int{}}
	for _, p := range w.Pods {
		if p.Group != "" {
			tr.groupMin[p.Group] = p.GroupMin
		}
	}
	for i := range rc.Cluster.Nodes {
		tr.nodeIdx[nodeName(i)] = i
	}
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace("default"))
	inf := factory.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: tr.observe, UpdateFunc: func(_, o any) { tr.observe(o) }, DeleteFunc: tr.deleted,
	})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	exporter := &http.Server{Handler: tr}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("exporter: %v", err)
	}
	go exporter.Serve(ln)
	t.Cleanup(func() { exporter.Close() })
	prom := startPrometheus(t, rc.PrometheusBin, ln.Addr().String())
	var learner map[string]string
	if s.Learner {
		grantLearner(t, c)
		learner = learnerEnv(rc)
	}
	startAnnotator(t, c, rc, prom, s.Annotator, learner)

	// The scheduler.
	schedName := labSchedulerName
	var running *harness.RunningDeployment
	var schedPort int   // the scheduler's secure port, whose /metrics the run's end reads
	var planFile string // the reference schedulers' plan (Scheduler.Plan), written when the clock starts
	if s.Config != "" {
		opts := harness.SchedulerOptions{Name: "kube-scheduler " + s.Name, Config: []byte(s.Config), Args: []string{metricsAllowed}}
		if s.Trimaran || s.Plan {
			opts.Binary = harness.BuildLabScheduler(t)
		}
		if s.Trimaran {
			for k, v := range trimaranEnv(rc, prom) {
				opts.Env = append(opts.Env, k+"="+v)
			}
		}
		if s.Plan {
			planFile = filepath.Join(t.TempDir(), "plan.json")
			opts.Env = append(opts.Env, reference.PlanEnv+"="+planFile)
		}
		schedPort = c.StartScheduler(t, opts).Port
	} else {
		root, _ := harness.RepoRoot()
		c.ApplyCRDFile(t, filepath.Join(root, "yamlfiles", "podgroup-crd.yaml"))
		d, err := harness.LoadDeploymentFile(filepath.Join(root, "yamlfiles", s.File))
		if err != nil {
			t.Fatalf("%v", err)
		}
		if len(s.Plugins) > 0 {
			if d, err = keepPlugins(d, s.Plugins); err != nil {
				t.Fatalf("%v", err)
			}
		}
		if d, err = scaleGangTimeouts(d, rc); err != nil {
			t.Fatalf("%v", err)
		}
		if len(s.Weights) > 0 {
			if d, err = setWeights(d, s.Weights); err != nil {
				t.Fatalf("%v", err)
			}
		}
		if s.NoRequestScores {
			if d, err = disableRequestScores(d); err != nil {
				t.Fatalf("%v", err)
			}
		}
		if s.DefaultScoring {
			if d, err = dropPluginConfig(d); err != nil {
				t.Fatalf("%v", err)
			}
		}
		if schedName, err = profileName(d.SchedulerConfig); err != nil {
			t.Fatalf("%s: %v", s.File, err)
		}
		running = c.RunDeployment(t, d, harness.RunOptions{Env: sidecarEnv(rc, d, s.Env), SchedulerArgs: []string{metricsAllowed}})
		schedPort = running.Scheduler.Port
	}

	if s.Descheduler {
		startDescheduler(t, c, rc, tr)
	}
	if rc.OwnerObjects {
		createOwners(t, c, w)
	}

	// The replay: pods are created when the simulated clock reaches their arrival.
	var plan *reference.Plan
	if planFile != "" {
		plan = planFor(rc, w, seed, time.Time{})
	}
	start := time.Now()
	if plan != nil {
		// Written after the clock starts (the first pods arrive over two minutes; until the
		// file is there the plugins fail the cycle and the pod is retried).
		plan.Start = start
		if err := reference.WritePlan(planFile, plan); err != nil {
			t.Fatalf("the reference scheduler's plan: %v", err)
		}
	}
	tr.start.Store(&start)
	// Neither creating nor deleting pods may hold up the clock's loop: both have buffers as
	// large as the workload and workers of their own.
	create := make(chan *PodPlan, len(w.Pods))
	remove := make(chan string, len(w.Pods))
	for range 3 {
		wg.Go(func() {
			for name := range remove {
				_ = c.Client.CoreV1().Pods("default").Delete(ctx, name, *metav1.NewDeleteOptions(0))
			}
		})
	}
	var created atomic.Int64
	for range 6 {
		wg.Go(func() {
			for p := range create {
				spec := harness.PodSpec{Name: p.Name, SchedulerName: schedName,
					CPU:    strconv.FormatInt(p.CPU, 10) + "m",
					Memory: strconv.FormatInt(p.Memory, 10),
					Labels: map[string]string{typeLabel: p.Type, workloadLabel: p.Workload},
					Annotations: map[string]string{
						runAnnotation: fmt.Sprintf("%.1fs", rc.real(p.Duration).Seconds()),
					}}
				if p.Fragile {
					spec.Annotations[failAnnotation] = "true"
				}
				if p.Group != "" {
					spec.Labels["podGroup"] = p.Group
					spec.Labels["minAvailable"] = strconv.Itoa(p.GroupMin)
				}
				pod, err := spec.Pod()
				if err != nil {
					t.Fatalf("%v", err)
				}
				pod.OwnerReferences = ownerRefs(p)
				tr.mu.Lock()
				tr.pods[p.Name] = &podState{plan: p, created: time.Now(), node: -1}
				tr.mu.Unlock()
				if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					if ctx.Err() != nil {
						return
					}
					t.Logf("creating pod %s: %v", p.Name, err)
					tr.mu.Lock()
					delete(tr.pods, p.Name)
					tr.mu.Unlock()
					continue
				}
				created.Add(1)
			}
		})
	}
	next, lastSample, lastProgress := 0, time.Duration(0), time.Now()
	var samples []Sample
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		<-tick.C
		now := tr.now()
		for next < len(w.Pods) && w.Pods[next].Arrive <= now && now < rc.Duration {
			create <- &w.Pods[next]
			next++
		}
		tr.mu.Lock()
		kill, replace := tr.kill, tr.replace
		tr.kill, tr.replace = nil, nil
		tr.mu.Unlock()
		for _, name := range kill {
			remove <- name
		}
		for _, p := range replace {
			if now < rc.Duration {
				create <- p
			}
		}
		if now-lastSample >= time.Minute || now >= rc.Duration {
			cpu, mem, running := tr.usage(now)
			s := Sample{Minute: now.Minutes(), Span: (now - lastSample).Minutes(), CPU: cpu, Mem: mem, Running: running,
				CPUCores: float64(rc.Cluster.CPU) / 1000, MemGiB: float64(rc.Cluster.Memory) / (1 << 30)}
			res.MaxGap = max(res.MaxGap, s.Span)
			for i := range cpu {
				s.CPU[i] /= float64(rc.Cluster.CPU)
				s.Mem[i] /= float64(rc.Cluster.Memory)
			}
			if lastSample >= rc.Warmup {
				samples = append(samples, s)
				res.HeldCPUMinutes += s.Span * tr.heldCPU() / 1000
			}
			res.Series = append(res.Series, point(s))
			lastSample = now
			tr.mu.Lock()
			done := tr.done
			tr.done = nil
			tr.mu.Unlock()
			for _, name := range done {
				remove <- name
			}
		}
		if time.Since(lastProgress) >= 10*time.Second || now >= rc.Duration {
			lastProgress = time.Now()
			tr.mu.Lock()
			placed, failed := tr.placed, tr.failed
			tr.mu.Unlock()
			fmt.Fprintf(rc.Progress, "  %s/%s seed %d: simulated %4.0f/%.0f min, pods created %d, placed %d, failed %d\n",
				w.Name, s.Name, seed, now.Minutes(), rc.Duration.Minutes(), created.Load(), placed, failed)
		}
		if now >= rc.Duration {
			break
		}
	}
	close(create)
	close(remove)
	wg.Wait()

	if s.Learner && running != nil {
		fmt.Fprintf(rc.Progress, "  %s/%s seed %d: %s\n", w.Name, s.Name, seed, estimateCoverage(ctx, running))
	}
	fmt.Fprintf(rc.Progress, "  %s/%s seed %d: the scheduler's queue: %s\n", w.Name, s.Name, seed, queueSummary(schedPort))
	if list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
		fmt.Fprintf(rc.Progress, "  %s/%s seed %d: at the end, %s\n", w.Name, s.Name, seed, pendingReasons(list.Items, time.Now()))
	} else {
		fmt.Fprintf(rc.Progress, "  %s/%s seed %d: listing the pods at the end: %v\n", w.Name, s.Name, seed, err)
	}
	res.Figures = Accumulate(samples)
	res.PodSeries = promCount(prom, "container_memory_working_set_bytes")
	res.GroupsComplete, res.GroupsPartial, res.Groups = tr.groups()
	if list, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range list.Items {
			if _, ok := n.Annotations[nodestats.MeanFreeCPU]; ok {
				res.StatsNodes++
				if free, ok := nodestats.Lookup(n.Annotations, nodestats.MeanFreeCPU); ok && free < 0.95*float64(rc.Cluster.CPU) {
					res.BusyStatsNodes++
				}
			}
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	f := &res.Figures
	f.Created, f.Placed, f.FailedStarts, res.Completed = int(created.Load()), tr.placed, tr.failed, tr.succeeded
	f.Pending = f.Created - f.Placed
	if res.Groups > 0 {
		f.GroupShare = float64(res.GroupsComplete) / float64(res.Groups)
	}
	f.GroupsPartial, f.HeldCPUMinutes, f.MaxGap = res.GroupsPartial, res.HeldCPUMinutes, res.MaxGap
	if tr.ranPlanned > 0 {
		f.RunStretch = tr.ranReal / tr.ranPlanned
	}
	f.BindP50, f.BindP99 = quantile(tr.bind, 0.5), quantile(tr.bind, 0.99)
	evictionFigures(f, tr.evictions, rc.Warmup)
	return res
}

// evictionFigures sets f's eviction figures from evictions (in order): those after warmup per
// simulated hour measured, all over the pods placed, the lineages (a workload's pod and its
// replacements) evicted more than once, and those evicted twice within 10 simulated minutes.
func evictionFigures(f *Figures, evictions []eviction, warmup time.Duration) {
	last := map[string]time.Duration{}
	count := map[string]int{}
	quick := map[string]bool{}
	measured := 0
	for _, e := range evictions {
		if e.at >= warmup {
			measured++
		}
		if prev, ok := last[e.lineage]; ok && e.at-prev < 10*time.Minute {
			quick[e.lineage] = true
		}
		last[e.lineage] = e.at
		count[e.lineage]++
	}
	if f.Minutes > 0 {
		f.EvictionsPerHour = float64(measured) / (f.Minutes / 60)
	}
	if f.Placed > 0 {
		f.EvictedShare = float64(len(evictions)) / float64(f.Placed)
	}
	for _, n := range count {
		if n > 1 {
			f.EvictedAgain++
		}
	}
	f.EvictedQuickly = len(quick)
}

// The descheduler's client identity: the chart's service account.
const deschedulerUser = "system:serviceaccount:kube-system:kss-descheduler"

// startDescheduler runs the real descheduler beside the scheduler, as the chart runs it: its
// policy for the metrics server and its RBAC (rc.Descheduler), its interval in simulated time.
// It reads the lab's usage (tr.metricsUsage) through a metrics.k8s.io server behind the
// aggregation layer, as it reads metrics-server in a cluster; its collector's smoothing, fixed
// in real time, is scaled to simulated time (collectorClock; docs/quality/lab.md, "Schedulers").
func startDescheduler(t harness.T, c *harness.Cluster, rc RunConfig, tr *tracker) {
	t.Helper()
	if rc.Descheduler == nil {
		t.Fatalf("a +descheduler scheduler without the chart's descheduler rendered")
	}
	c.StartMetricsAPI(t, tr.metricsUsage, newCollectorClock(rc.Speed).read)
	c.Apply(t, rc.Descheduler.RBAC, false)
	c.StartDescheduler(t, harness.DeschedulerOptions{
		Policy:     rc.Descheduler.Policy,
		Kubeconfig: c.KubeconfigFor(t, deschedulerUser, "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"),
		Interval:   max(time.Second, rc.real(rc.Descheduler.Interval)),
	})
}

func point(s Sample) Point {
	p := Point{Minute: s.Minute}
	sum := 0.0
	for i := range s.CPU {
		if s.Running[i] > 0 {
			p.NodesInUse++
			sum += s.CPU[i]
		}
		if math.Max(s.CPU[i], s.Mem[i]) > hotLevel {
			p.Hot++
		}
		p.OverCPU += math.Max(0, s.CPU[i]-hotLevel) * s.CPUCores
	}
	if p.NodesInUse > 0 {
		p.CPUInUse = sum / float64(p.NodesInUse)
	}
	return p
}

// promCount returns how many series of metric Prometheus at url holds now (0 on any error).
func promCount(url, metric string) int {
	resp, err := http.Get(url + "/api/v1/query?query=" + neturl.QueryEscape("count("+metric+")"))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Data.Result) == 0 {
		return 0
	}
	v, _ := out.Data.Result[0].Value[1].(string)
	n, _ := strconv.Atoi(v)
	return n
}

// startPrometheus runs Prometheus scraping the exporter at addr every second and returns its URL.
func startPrometheus(t harness.T, bin, target string) string {
	t.Helper()
	return harness.StartPrometheus(t, bin, fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"+
		"scrape_configs:\n- job_name: lab-usage\n  static_configs:\n  - targets: [%q]\n", target), 2*time.Minute)
}

// annotatorEnv is the node annotator's configuration in the lab: its shipped defaults (30 s
// allocation interval, statistics every minute over 15 minutes, 30 min refresh, 1 min step) in
// simulated time, reading the usage exporter through Prometheus.
func annotatorEnv(rc RunConfig, prom string) map[string]string {
	return map[string]string{
		"STATS_SOURCE": "prometheus", "PROMETHEUS_URL": prom, "PROMETHEUS_NODE_LABEL": "node",
		"PROMETHEUS_CPU_QUERY":    "lab_node_free_cpu_millicores",
		"PROMETHEUS_MEMORY_QUERY": "lab_node_free_memory_bytes",
		"INTERVAL":                rc.scaled(30 * time.Second),
		"STATS_INTERVAL":          rc.scaled(time.Minute),
		"STATS_WINDOW":            rc.scaled(15 * time.Minute),
		"STATS_REFRESH":           rc.scaled(30 * time.Minute),
		"PROMETHEUS_STEP":         rc.scaled(time.Minute),
		"LOG_LEVEL":               "INFO",
		// Rates are scaled like durations: the shipped 20 patches/s (burst 40) in simulated time.
		"PATCH_QPS": rc.rate(20), "PATCH_BURST": rc.rate(40),
		"KUBE_API_QPS": rc.rate(20), "KUBE_API_BURST": rc.rate(40),
	}
}

// estimateCoverage reads safe_estimates_total from the safe sidecar: how many pods the filter
// judged by a learned estimate and by their request.
func estimateCoverage(ctx context.Context, r *harness.RunningDeployment) string {
	e := r.Extenders["safe"]
	if e == nil {
		return "no safe sidecar"
	}
	status, body, err := e.Get(ctx, "/metrics")
	if err != nil || status != http.StatusOK {
		return fmt.Sprintf("safe's /metrics: %d %v", status, err)
	}
	count := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		for _, k := range []string{"learned", "request"} {
			if v, ok := strings.CutPrefix(line, `safe_estimates_total{estimate="`+k+`"} `); ok {
				count[k], _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	total := count["learned"] + count["request"]
	if total == 0 {
		return "safe judged no pod (safe_estimates_total)"
	}
	return fmt.Sprintf("safe judged %.0f pods by learned estimates, %.0f by their requests: estimate coverage %.2f",
		count["learned"], count["request"], count["learned"]/total)
}

// learnerEnv turns the annotator's usage learner on, in kube-system, with its shipped
// defaults in simulated time (samples every 30 s, trusted after 10 samples over 2 min, half-life
// and memory peak window 24 h, written every minute); its cpu query's rate window is 1 min of
// simulated time (at least 3 s: three scrapes), not the shipped 5 min of real time.
func learnerEnv(rc RunConfig) map[string]string {
	window := max(3*time.Second, rc.real(time.Minute)).Round(time.Second)
	return map[string]string{
		"USAGE_LEARNER": "true", "USAGE_NAMESPACE": "kube-system",
		"USAGE_INTERVAL":       rc.scaled(30 * time.Second),
		"USAGE_MIN_SPAN":       rc.scaled(2 * time.Minute),
		"USAGE_HALF_LIFE":      rc.scaled(24 * time.Hour),
		"USAGE_PEAK_WINDOW":    rc.scaled(24 * time.Hour),
		"USAGE_FLUSH_INTERVAL": rc.scaled(time.Minute),
		"USAGE_PROMETHEUS_CPU_QUERY": fmt.Sprintf(`sum by (namespace, pod) (rate(container_cpu_usage_seconds_total{container!=""}[%s]))`,
			window),
	}
}

// grantLearner gives the annotator's service account what the usage learner needs beyond
// yamlfiles/node-annotator.yaml (the chart grants it with nodeAnnotator.learner.enabled): the
// owner chains, its ConfigMaps and Lease. The lab's scheduler sidecars run as the cluster's
// admin and read the ConfigMaps without a grant.
func grantLearner(t harness.T, c *harness.Cluster) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lab-usage-learner"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lab-usage-learner"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "node-annotator", Namespace: "kube-system"}}}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%v", err)
	}
}

// trimaranEnv is the configuration of the lab scheduler's Trimaran plugins
// (trimaran.SettingsFromEnv): the lab's Prometheus and free-resource series, and the periods of
// the shipped setup in simulated time (load-watcher's 15-minute window fetched every minute,
// the plugins' collector every 30 s, the 60 s reporting interval and 5-minute cleanup of the
// cache of bound pods), each at least 1 s real.
func trimaranEnv(rc RunConfig, prom string) map[string]string {
	return map[string]string{
		"TRIMARAN_PROMETHEUS_URL":     prom,
		"TRIMARAN_NODE_LABEL":         "node",
		"TRIMARAN_CPU_FREE_METRIC":    "lab_node_free_cpu_millicores",
		"TRIMARAN_MEMORY_FREE_METRIC": "lab_node_free_memory_bytes",
		"TRIMARAN_WINDOW":             rc.scaled(15 * time.Minute),
		"TRIMARAN_WATCHER_INTERVAL":   rc.scaled(time.Minute),
		"TRIMARAN_COLLECTOR_INTERVAL": rc.scaled(30 * time.Second),
		"TRIMARAN_REPORTING_INTERVAL": rc.scaled(60 * time.Second),
		"TRIMARAN_CACHE_CLEANUP":      rc.scaled(5 * time.Minute),
	}
}

// rate is a per-second rate of simulated time in real time, as a setting's value.
func (rc RunConfig) rate(perSecond float64) string {
	return strconv.FormatFloat(math.Min(10000, perSecond*rc.Speed), 'f', 0, 64)
}

// scaledDurations are the sidecar settings that are durations of the cluster's life (not of a
// request), divided by the speed like the annotator's.
var scaledDurations = []string{"REWARD_START_TIMEOUT", "REWARD_MTTF", "REWARD_HALF_LIFE"}

// sidecarEnv returns the environment overrides of d's sidecars: extra's, plus each sidecar's
// API client rate (KUBE_API_QPS 20, KUBE_API_BURST 40 as shipped, in simulated time) and its
// scaledDurations.
func sidecarEnv(rc RunConfig, d *harness.Deployment, extra map[string]map[string]string) map[string]map[string]string {
	env := map[string]map[string]string{}
	for _, sc := range d.Sidecars {
		e := map[string]string{"KUBE_API_QPS": rc.rate(20), "KUBE_API_BURST": rc.rate(40)}
		for _, name := range scaledDurations {
			if v, ok := harness.EnvValue(sc, name); ok {
				if dur, err := time.ParseDuration(v); err == nil && dur > 0 {
					e[name] = rc.scaled(dur)
				}
			}
		}
		for k, v := range extra[sc.Name] {
			e[k] = v
		}
		env[sc.Name] = e
	}
	return env
}

// startAnnotator applies yamlfiles/node-annotator.yaml and runs the annotator as its service
// account, with annotatorEnv and the durations of override (simulated time).
func startAnnotator(t harness.T, c *harness.Cluster, rc RunConfig, prom string, override map[string]time.Duration, extra map[string]string) {
	t.Helper()
	root, _ := harness.RepoRoot()
	c.ApplyFile(t, filepath.Join(root, "yamlfiles", "node-annotator.yaml"), false)
	kubeconfig := c.KubeconfigFor(t, "system:serviceaccount:kube-system:node-annotator",
		"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	port := harness.MustFreePort(t)
	env := []string{"KUBECONFIG=" + kubeconfig, "HTTP_PORT=127.0.0.1:" + strconv.Itoa(port)}
	vars := annotatorEnv(rc, prom)
	for k, d := range override {
		vars[k] = rc.scaled(d)
	}
	for k, v := range extra {
		vars[k] = v
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	p := harness.StartProcess(t, "node-annotator", harness.LogDir(t), rc.AnnotatorBin, env)
	deadline := time.Now().Add(harness.StartTimeout)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("node-annotator never became ready:\n%s", p.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// buildAnnotator builds cmd/node-annotator (unchanged) into .cache/node-annotator/.
func buildAnnotator() (string, error) {
	root, err := harness.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", "node-annotator")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, fmt.Sprintf("node-annotator-%d.tmp", os.Getpid()))
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/node-annotator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/node-annotator: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "node-annotator")
	return bin, os.Rename(tmp, bin)
}

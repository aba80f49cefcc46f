package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// The chaos run (make chaos; its short form runs in make test): each mode's shipped
// configuration on many nodes, with pods of workloads arriving in bursts while faults are
// injected one after the other, each at a recorded time. What is checked comes from the API
// server's own record: pods' nodeName as the test watches it, and the Scheduled events.
//
// It is a test rather than a program so that make test runs its short form with the other e2e
// tests (the same harness, the same cleanup of every process); CHAOS_NODES and CHAOS_PODS size it
// (make chaos: 200 and 2000).

const (
	// chaosRecovery bounds the time from a fault's recovery to the first binding after it.
	chaosRecovery = 10 * time.Second
	// chaosSlack bounds the time from the filter's verdict to the binding seen by the watch,
	// for the unsafe-placement check.
	chaosSlack = 5 * time.Second
)

// chaosSize is the run's size: CHAOS_NODES and CHAOS_PODS, the short form by default.
func chaosSize(t *testing.T) (nodes, pods int) {
	t.Helper()
	nodes, pods = 24, 240
	for name, v := range map[string]*int{"CHAOS_NODES": &nodes, "CHAOS_PODS": &pods} {
		if s := os.Getenv(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 4 {
				t.Fatalf("%s=%q: want an integer >= 4", name, s)
			}
			*v = n
		}
	}
	return nodes, pods
}

// faultProxy is an HTTP reverse proxy between a client and a server of the product
// (kube-scheduler -> extender, annotator -> Prometheus) that the test can slow or cut. It is
// the only thing in the path that is not the product.
type faultProxy struct {
	*httptest.Server
	delay atomic.Int64 // nanoseconds added before each request
	down  atomic.Bool  // connections are closed without an answer
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a cut or slowed call is the point, not news
	p := &faultProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if d := time.Duration(p.delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *faultProxy) port() int { return p.Listener.Addr().(*net.TCPAddr).Port }

// fault is one injected fault: when it began, when the system was given back (the process
// restarted, the delay lifted, the source restored) and what was seen meanwhile.
type fault struct {
	name             string
	start, recovered time.Time
	// leading is set when a scheduler replica exited during the fault (kube-scheduler exits when
	// it cannot renew its lease within renewDeadline): when a replica led again.
	leading time.Time
	note    string
}

// binding is a pod's binding as the watch saw it.
type binding struct {
	node string
	seen time.Time
}

// chaosRecord is what the run saw of the API server: bindings, risky nodes' statistics
// timestamps, and the faults.
type chaosRecord struct {
	mu      sync.Mutex
	created map[string]time.Time
	bound   map[string]binding
	changed map[string][]string // pods whose nodeName changed after binding: every node seen
	stamps  []stampSnapshot
	faults  []fault
	apiDown [][2]time.Time // API server outages
	// onCreate, when set, is called with every pod created (the usage exporter's pods).
	onCreate func(name string)
}

// stampSnapshot is the statistics-timestamp of the risky nodes at one time.
type stampSnapshot struct {
	at    time.Time
	stamp map[string]time.Time
}

func newChaosRecord() *chaosRecord {
	return &chaosRecord{created: map[string]time.Time{}, bound: map[string]binding{}, changed: map[string][]string{}}
}

func (r *chaosRecord) observe(p *corev1.Pod, at time.Time) {
	if p.Labels["chaos"] != "run" || p.Spec.NodeName == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.bound[p.Name]
	switch {
	case !ok:
		r.bound[p.Name] = binding{node: p.Spec.NodeName, seen: at}
	case b.node != p.Spec.NodeName:
		if len(r.changed[p.Name]) == 0 {
			r.changed[p.Name] = []string{b.node}
		}
		r.changed[p.Name] = append(r.changed[p.Name], p.Spec.NodeName)
	}
}

// watchBindings records every pod's binding until ctx ends: a list, then a watch from its
// resource version, again after any error (the API server restarts during the run).
func (r *chaosRecord) watchBindings(ctx context.Context, c *harness.Cluster) {
	for ctx.Err() == nil {
		list, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "chaos=run"})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		now := time.Now()
		for i := range list.Items {
			r.observe(&list.Items[i], now)
		}
		w, err := c.Client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "chaos=run", ResourceVersion: list.ResourceVersion})
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				r.observe(p, time.Now())
			}
		}
		w.Stop()
	}
}

// recordStamps lists the nodes every 500 ms and keeps the risky nodes' statistics-timestamp.
func (r *chaosRecord) recordStamps(ctx context.Context, c *harness.Cluster, risky []string) {
	for ctx.Err() == nil {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			s := stampSnapshot{at: time.Now(), stamp: map[string]time.Time{}}
			for _, n := range nodes.Items {
				if slices.Contains(risky, n.Name) {
					if ts, err := time.Parse(time.RFC3339, n.Annotations["statistics-timestamp"]); err == nil {
						s.stamp[n.Name] = ts
					}
				}
			}
			r.mu.Lock()
			r.stamps = append(r.stamps, s)
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// firstBindingAfter is when the first binding at or after at was seen (zero: none yet).
func (r *chaosRecord) firstBindingAfter(at time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for _, b := range r.bound {
		if !b.seen.Before(at) && (first.IsZero() || b.seen.Before(first)) {
			first = b.seen
		}
	}
	return first
}

// latestAges are the risky nodes' statistics ages in the latest snapshot.
func (r *chaosRecord) latestAges() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.stamps) == 0 {
		return nil
	}
	s := r.stamps[len(r.stamps)-1]
	var ages []time.Duration
	for _, ts := range s.stamp {
		ages = append(ages, s.at.Sub(ts))
	}
	return ages
}

// chaosWorkload creates Deployment default/<name> and its ReplicaSet, as the controllers would
// (none runs here), and returns the ReplicaSet; its pods are created by createPods. Either may
// exist already: a creation whose answer was lost in an API server outage is retried.
func chaosWorkload(ctx context.Context, c *harness.Cluster, name string) (*appsv1.ReplicaSet, error) {
	yes := true
	labels := map[string]string{"app.kubernetes.io/name": name}
	d, err := c.Client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		d, err = c.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	rsLabels := map[string]string{"app.kubernetes.io/name": name, "pod-template-hash": "7c9d5"}
	rs, err := c.Client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-7c9d5", Namespace: "default", Labels: rsLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: rsLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: rsLabels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return c.Client.AppsV1().ReplicaSets("default").Get(ctx, name+"-7c9d5", metav1.GetOptions{})
	}
	return rs, err
}

// createPods creates pods for schedulerName in bursts of one workload's pods each (perWorkload),
// at a pace that spreads total over span, and goes on at that pace until done is closed and
// total are created: pods arrive all through the faults, however long they last. Creation
// retries through API server outages, as a ReplicaSet controller would. It returns the errors it
// gave up on.
func (r *chaosRecord) createPods(ctx context.Context, c *harness.Cluster, schedulerName string, total, perWorkload int, span time.Duration, done <-chan struct{}) []error {
	yes := true
	var errs []error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	create := func(what string, f func() error) bool {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			err := f()
			if err == nil {
				return true
			}
			if ctx.Err() != nil || time.Now().After(deadline) {
				fail(fmt.Errorf("%s: %w", what, err))
				return false
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	interval := span * time.Duration(perWorkload) / time.Duration(total)
	var wg sync.WaitGroup
	made := 0
	finished := false
	for w := 0; !finished || made < total; w++ {
		select {
		case <-done:
			finished = true
		default:
		}
		if w > 0 {
			select {
			case <-ctx.Done():
				wg.Wait()
				return append(errs, ctx.Err())
			case <-time.After(interval):
			}
		}
		name := fmt.Sprintf("w%04d", w)
		var rs *appsv1.ReplicaSet
		if !create("workload "+name, func() error {
			var err error
			rs, err = chaosWorkload(ctx, c, name)
			return err
		}) {
			continue
		}
		for i := range perWorkload {
			made++
			pod, err := harness.PodSpec{Name: fmt.Sprintf("%s-%02d", rs.Name, i), SchedulerName: schedulerName, CPU: "100m", Memory: "64Mi",
				Labels: map[string]string{"chaos": "run", "app.kubernetes.io/name": name, "pod-template-hash": "7c9d5"}}.Pod()
			if err != nil {
				fail(err)
				continue
			}
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
			wg.Add(1)
			go func() {
				defer wg.Done()
				create("pod "+pod.Name, func() error {
					_, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						return err
					}
					r.mu.Lock()
					_, seen := r.created[pod.Name]
					if !seen {
						r.created[pod.Name] = time.Now()
					}
					r.mu.Unlock()
					if !seen && r.onCreate != nil {
						r.onCreate(pod.Name)
					}
					return nil
				})
			}()
		}
	}
	wg.Wait()
	return errs
}

// chaosMode is one mode's deployment under test.
type chaosMode struct {
	name, schedulerName, lease string
	c                          *harness.Cluster
	r                          *harness.RunningDeployment
	kubeconfig                 string
	pluginBinary               string
	replicas                   []*harness.Scheduler // running kube-scheduler replicas (slot per replica)
	restarts                   int
	extProxy                   map[string]*faultProxy // extender mode: per sidecar
	prom                       *faultProxy
	promURL, sd                string
	// maxStatsAge is SAFE_MAX_STATS_AGE (maxStatsAge in plugin mode) in the run: the shipped
	// hour, shortened so that the statistics go stale within the run: 15 s, or 60 s from 50
	// nodes (one annotator cycle patches every node, and on a loaded machine a cycle over 200
	// nodes takes tens of seconds). The annotator rewrites them every quarter of it
	// (STATS_REFRESH).
	maxStatsAge time.Duration
	risky       []string
	rec         *chaosRecord
	// The node annotator (the usage learner's writer) and its environment, to restart it.
	annotator    *harness.Process
	annotatorEnv map[string]string
	// The stores' ConfigMaps as the API server serves them (reward: plugin mode only).
	usage, reward *storeWatch
	// exits are the replicas that exited on their own, in order.
	exits []replicaExit
}

// replicaExit is a replica's exit as its log and the test saw it.
type replicaExit struct {
	name string
	// lost is when it logged "Leaderelection lost" (zero: it did not); restarted is when the
	// test restarted it.
	lost, restarted time.Time
}

// startReplica starts one more kube-scheduler of the deployment's configuration, as another
// replica of its pod (or the kubelet restarting a container) would.
func (m *chaosMode) startReplica(t *testing.T, name string) *harness.Scheduler {
	t.Helper()
	return m.c.StartScheduler(t, harness.SchedulerOptions{
		Name: name, Config: m.r.Config, Kubeconfig: m.kubeconfig, Binary: m.pluginBinary,
		Args: append([]string{"--authentication-kubeconfig=" + m.kubeconfig, "--authorization-kubeconfig=" + m.kubeconfig, "--v=2"}, chaosAllowMetrics...),
	})
}

// chaosAllowMetrics lets the run's Prometheus read kube-scheduler's /metrics without a token (in a
// cluster its service account would be authorized).
var chaosAllowMetrics = []string{"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"}

// writeTargets points the run's Prometheus at the running sidecars and replicas.
func (m *chaosMode) writeTargets(t *testing.T) {
	t.Helper()
	write := func(file string, ports []int) {
		var targets []string
		for _, p := range ports {
			targets = append(targets, "127.0.0.1:"+strconv.Itoa(p))
		}
		data, _ := json.Marshal([]map[string]any{{"targets": targets}})
		tmp := filepath.Join(m.sd, file+".tmp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(m.sd, file)); err != nil {
			t.Fatal(err)
		}
	}
	var ext, sched []int
	for _, e := range m.r.Extenders {
		ext = append(ext, e.Port)
	}
	for _, s := range m.replicas {
		sched = append(sched, s.Port)
	}
	write("extender.json", ext)
	write("scheduler.json", sched)
	var annotator []int
	if m.annotator != nil {
		annotator = append(annotator, annotatorPort(t, m.annotator))
	}
	write("annotator.json", annotator)
}

// annotatorPort is the port the annotator's log says it serves on: the last one it names (a
// restarted annotator appends to the same log).
func annotatorPort(t *testing.T, p *harness.Process) int {
	t.Helper()
	all := regexp.MustCompile(`address="?[0-9.]+:([0-9]+)`).FindAllStringSubmatch(p.Tail(1000), -1)
	if all == nil {
		t.Fatalf("the annotator's log names no address:\n%s", p.Tail(30))
	}
	port, _ := strconv.Atoi(all[len(all)-1][1])
	return port
}

// ensureReplicas restarts any replica that exited (kube-scheduler exits when it loses its
// lease), as the kubelet restarts its container, and says so.
func (m *chaosMode) ensureReplicas(t *testing.T) string {
	t.Helper()
	var notes []string
	for i, s := range m.replicas {
		if s.Exited() {
			m.restarts++
			m.exits = append(m.exits, replicaExit{name: s.Name, lost: klogTime(s.LogPath, "Leaderelection lost"), restarted: time.Now()})
			notes = append(notes, fmt.Sprintf("%s exited (%s), restarted", s.Name, exitReason(s)))
			m.replicas[i] = m.startReplica(t, fmt.Sprintf("%s replica %d restart %d", m.name, i, m.restarts))
			m.writeTargets(t)
		}
	}
	return strings.Join(notes, "; ")
}

// klogTime is the time of the first line of a klog log that contains text (zero: none). klog
// writes local time without the year.
func klogTime(path, text string) time.Time {
	data, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, text) || len(l) < 21 {
			continue
		}
		ts, err := time.ParseInLocation("0102 15:04:05.000000", l[1:21], time.Local)
		if err != nil {
			continue
		}
		return ts.AddDate(time.Now().Year(), 0, 0)
	}
	return time.Time{}
}

// exitReason is why kube-scheduler exited: a lost lease, else its last error line.
func exitReason(s *harness.Scheduler) string {
	data, _ := os.ReadFile(s.LogPath)
	reason := "no error logged"
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Leaderelection lost") {
			return "Leaderelection lost"
		}
		if strings.HasPrefix(l, "E") || strings.HasPrefix(l, "F") {
			if i := strings.Index(l, "] "); i > 0 {
				reason = l[i+2:]
			}
		}
	}
	if len(reason) > 80 {
		reason = reason[:80] + "..."
	}
	return reason
}

// holder returns the Lease's holder identity ("" when unknown).
func (m *chaosMode) holder(ctx context.Context) string {
	l, err := m.c.Client.CoordinationV1().Leases("kube-system").Get(ctx, m.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// renewed returns the Lease's renew time (zero when unknown).
func (m *chaosMode) renewed(ctx context.Context) time.Time {
	l, err := m.c.Client.CoordinationV1().Leases("kube-system").Get(ctx, m.lease, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// leader returns the replica whose log says it acquired the lease last (the one scheduling).
func (m *chaosMode) leader(t *testing.T) *harness.Scheduler {
	t.Helper()
	for _, s := range m.replicas {
		data, err := os.ReadFile(s.LogPath)
		// client-go's line names the Lease: in plugin mode a replica also acquires reward's.
		if err == nil && !s.Exited() && strings.Contains(string(data), `"Successfully acquired lease" lock="kube-system/`+m.lease+`"`) {
			return s
		}
	}
	return nil
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Now()
}

// staleStatistics cuts the annotator from Prometheus until every risky node's statistics are
// older than the maximum age, keeps it cut 10 s more, restores it, and returns when they are
// fresh again (the recovery).
func (m *chaosMode) staleStatistics(t *testing.T) fault {
	t.Helper()
	f := fault{name: "metrics source stopped", start: time.Now()}
	m.prom.down.Store(true)
	all := func(ok func(time.Duration) bool) func() bool {
		return func() bool {
			ages := m.rec.latestAges()
			if len(ages) < len(m.risky) {
				return false
			}
			for _, a := range ages {
				if !ok(a) {
					return false
				}
			}
			return true
		}
	}
	staleAt := waitFor(t, "risky nodes' statistics stale", m.maxStatsAge+2*time.Minute, all(func(a time.Duration) bool { return a > m.maxStatsAge }))
	// Stale for 10 s more: pods keep arriving, so the filter judges the stale nodes meanwhile.
	time.Sleep(10 * time.Second)
	m.prom.down.Store(false)
	// The annotator's next cycles rewrite them: a condition, not a budget (5 minutes only bounds
	// a hang).
	f.recovered = waitFor(t, "statistics fresh again", 5*time.Minute, all(func(a time.Duration) bool { return a < m.maxStatsAge }))
	f.note = fmt.Sprintf("stale from +%.0fs", staleAt.Sub(f.start).Seconds())
	return f
}

// acquired returns the scheduler Lease's acquireTime (zero when unknown).
func (m *chaosMode) acquired(ctx context.Context) time.Time {
	l, err := m.c.Client.CoordinationV1().Leases("kube-system").Get(ctx, m.lease, metav1.GetOptions{})
	if err != nil || l.Spec.AcquireTime == nil {
		return time.Time{}
	}
	return l.Spec.AcquireTime.Time
}

// leaseBreakdown says where an API server restart's time went, from the Lease's own acquireTime
// and the replicas' logs: when the leader gave up its Lease (renewDeadline without a renewal),
// when the exited replica was restarted, when and by which replica the Lease was acquired
// again, each from the fault's start, and the latter from the API server's readiness.
func (m *chaosMode) leaseBreakdown(ctx context.Context, t *testing.T, f fault) string {
	t.Helper()
	at := func(ts time.Time) string { return fmt.Sprintf("+%.1fs", ts.Sub(f.start).Seconds()) }
	out := fmt.Sprintf("; API server ready %s", at(f.recovered))
	for _, e := range m.exits {
		if e.restarted.Before(f.start) {
			continue
		}
		if !e.lost.IsZero() {
			out += fmt.Sprintf(", %s gave up the Lease %s", e.name, at(e.lost))
		}
		out += fmt.Sprintf(", restarted %s", at(e.restarted))
	}
	l, err := m.c.Client.CoordinationV1().Leases("kube-system").Get(ctx, m.lease, metav1.GetOptions{})
	if err == nil && l.Spec.AcquireTime != nil && l.Spec.AcquireTime.After(f.start) {
		who := "?"
		if s := m.leader(t); s != nil {
			who = s.Name
		}
		out += fmt.Sprintf(", %s acquired it %s (%.1fs after the API server was ready)", who, at(l.Spec.AcquireTime.Time), l.Spec.AcquireTime.Sub(f.recovered).Seconds())
	} else if err == nil {
		out += ", the Lease kept its holder"
	}
	return out
}

// apiserverRestart stops kube-apiserver and starts it again on the same data.
func (m *chaosMode) apiserverRestart(t *testing.T) fault {
	t.Helper()
	f := fault{name: "kube-apiserver restarted", start: time.Now()}
	m.c.StopAPIServer(t)
	m.c.StartAPIServer(t)
	f.recovered = time.Now()
	m.rec.mu.Lock()
	m.rec.apiDown = append(m.rec.apiDown, [2]time.Time{f.start, f.recovered})
	m.rec.mu.Unlock()
	return f
}

// TestChaos runs both modes under load with faults, then checks the API server's record.
func TestChaos(t *testing.T) {
	t.Parallel()
	requireAgents(t, "safe", "congestion")
	prometheus := requirePrometheus(t)
	nodes, pods := chaosSize(t)
	var mu sync.Mutex
	var rows [][]string
	for _, mode := range []string{"extender", "plugin"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			out := runChaos(t, mode, prometheus, nodes, pods)
			mu.Lock()
			rows = append(rows, out...)
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i][1] < rows[j][1] })
		var b strings.Builder
		fmt.Fprintf(&b, "chaos run: %d nodes, %d pods per mode, %s\n", nodes, pods, time.Now().UTC().Format(time.RFC3339))
		fmt.Fprintf(&b, "| fault | mode | pods affected | time to recover | alerts fired (condition held / for) | lost | doubled | notes |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
		}
		t.Log("\n" + b.String())
		if path := os.Getenv("CHAOS_TABLE"); path != "" {
			os.WriteFile(path, []byte(b.String()), 0o644)
		}
	})
}

func runChaos(t *testing.T, mode, prometheus string, nodeCount, podCount int) [][]string {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := &chaosMode{name: mode, rec: newChaosRecord(), extProxy: map[string]*faultProxy{}, maxStatsAge: 15 * time.Second}
	if nodeCount > 50 {
		m.maxStatsAge = time.Minute
	}

	// Usage: a node exporter for every node; one in eight is nearly out of memory (risky: safe's
	// filter rejects it while its statistics are fresh).
	exporter := &liveNodeExporter{start: time.Now(), memory: map[string]float64{}, idle: map[string]float64{}}
	var specs []harness.NodeSpec
	for i := range nodeCount {
		name := fmt.Sprintf("n%03d", i)
		specs = append(specs, harness.NodeSpec{Name: name})
		exporter.memory[name], exporter.idle[name] = 6*(1<<30), 3
		if i%8 == 3 {
			exporter.memory[name], exporter.idle[name] = 0.05*(1<<30), 3
			m.risky = append(m.risky, name)
		}
	}
	target := httptest.NewServer(exporter)
	t.Cleanup(target.Close)
	// The pods' usage, as cAdvisor would export it, for the usage learner: every pod created
	// uses a little (nothing runs; the learner reads the series and the pod's owner chain).
	containers := &cadvisorExporter{start: time.Now(), pods: map[[2]string]podLoad{}}
	m.rec.onCreate = func(name string) {
		containers.mu.Lock()
		containers.pods[[2]string{"default", name}] = podLoad{cores: 0.05, bytes: 48 << 20}
		containers.mu.Unlock()
	}
	cadvisor := httptest.NewServer(containers)
	t.Cleanup(cadvisor.Close)
	// The run's Prometheus scrapes the node exporter (the annotator's source, through a proxy
	// the test can cut) and the product: the sidecars and every scheduler replica, whose
	// addresses change as replicas restart (file_sd).
	m.sd = t.TempDir()
	for _, f := range []string{"extender.json", "scheduler.json", "annotator.json"} {
		if err := os.WriteFile(filepath.Join(m.sd, f), []byte("[]"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.promURL = harness.StartPrometheus(t, prometheus, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
- job_name: node
  static_configs:
  - targets: [%q]
- job_name: cadvisor
  static_configs:
  - targets: [%q]
- job_name: annotator
  file_sd_configs:
  - files: [%q]
    refresh_interval: 1s
- job_name: extender
  file_sd_configs:
  - files: [%q]
    refresh_interval: 1s
- job_name: kube-scheduler
  scheme: https
  tls_config: {insecure_skip_verify: true}
  file_sd_configs:
  - files: [%q]
    refresh_interval: 1s
`, target.Listener.Addr().String(), cadvisor.Listener.Addr().String(), filepath.Join(m.sd, "annotator.json"),
		filepath.Join(m.sd, "extender.json"), filepath.Join(m.sd, "scheduler.json")), time.Minute)
	m.prom = newFaultProxy(t, m.promURL)

	if mode == "extender" {
		m.c, m.kubeconfig = startWithServiceAccount(t)
	} else {
		m.c, m.kubeconfig = startWithPluginServiceAccount(t)
	}
	m.c.CreateNodes(t, specs...)
	// The annotator with the usage learner on (its store: chaosUsageShards ConfigMaps written
	// every 2 s, the shipped Lease of 15 s).
	grantLearner(t, m.c)
	m.annotatorEnv = map[string]string{
		"STATS_SOURCE": "prometheus", "PROMETHEUS_URL": m.prom.URL, "PROMETHEUS_NODE_LABEL": "node",
		"PROMETHEUS_CPU_QUERY": `sum by (node) (irate(node_cpu_seconds_total{mode="idle"}[5s])) * 1000`,
		"PROMETHEUS_STEP":      "1s", "PROMETHEUS_TIMEOUT": "2s", "STATS_WINDOW": "30s", "STATS_INTERVAL": "2s", "STATS_REFRESH": (m.maxStatsAge / 4).String(),
		"STATS_MIN_SAMPLES": "3", "INTERVAL": "2s", "PATCH_QPS": "500", "PATCH_BURST": "500", "KUBE_API_QPS": "200", "KUBE_API_BURST": "400",
		"LOG_LEVEL":     "INFO",
		"USAGE_LEARNER": "true", "USAGE_INTERVAL": "2s", "USAGE_FLUSH_INTERVAL": "2s", "USAGE_STORE_SHARDS": strconv.Itoa(chaosUsageShards),
		"USAGE_PROMETHEUS_CPU_QUERY": `sum by (namespace, pod) (irate(container_cpu_usage_seconds_total{container!=""}[5s]))`,
	}
	m.annotator = startAnnotator(t, m.c, m.annotatorEnv)
	m.usage = newUsageWatch("usage-learner", chaosUsageShards)
	go m.usage.run(ctx, m.c)
	go m.rec.recordStamps(ctx, m.c, m.risky)
	waitFor(t, "statistics on every risky node", 5*time.Minute, func() bool {
		ages := m.rec.latestAges()
		return len(ages) == len(m.risky)
	})

	if mode == "extender" {
		m.schedulerName, m.lease = "my-scheduler", "my-scheduler"
		d := loadDeployment(t, "extender.safe.congestion.yaml")
		m.r = m.c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: m.kubeconfig, SchedulerArgs: chaosAllowMetrics,
			Env: map[string]map[string]string{"safe": {"SAFE_MAX_STATS_AGE": m.maxStatsAge.String()}},
			SchedulerPort: func(container string, port int) int {
				p := newFaultProxy(t, "http://127.0.0.1:"+strconv.Itoa(port))
				m.extProxy[container] = p
				return p.port()
			}})
		m.replicas = []*harness.Scheduler{m.r.Scheduler}
	} else {
		m.schedulerName, m.lease = pluginSchedulerName, "safe-scheduler"
		d := loadDeployment(t, pluginsFile)
		enabled := pluginNames(t, d)
		// reward counts a pod bound for startTimeout without running (none runs here) as a
		// failure: 10 s, so that its table changes all through the run and its writer writes it
		// every flushInterval (2 s).
		d = withPlugins(t, enabled, map[string]map[string]any{"safe-overload": {"maxStatsAge": m.maxStatsAge.String()},
			"reward": {"startTimeout": "10s", "flushInterval": "2s"}})
		m.r = m.c.RunDeployment(t, d, harness.RunOptions{Kubeconfig: m.kubeconfig, SchedulerArgs: chaosAllowMetrics})
		m.pluginBinary = harness.BuildPluginScheduler(t)
		m.replicas = []*harness.Scheduler{m.r.Scheduler, m.startReplica(t, "kube-safe-scheduler replica 1")}
		m.reward = newRewardWatch()
		go m.reward.run(ctx, m.c)
	}
	m.writeTargets(t)
	// The control starts from a steady state: the run's Prometheus scrapes every replica and
	// the annotator, and each Lease (the scheduler's, the reward table's in plugin mode) has a
	// holder.
	waitFor(t, "every Lease held and the annotator scraped, as Prometheus sees it", 3*time.Minute, func() bool {
		held, err := promQuery(m.promURL, `max by (job, name) (leader_election_master_status) == 1`)
		all, err2 := promQuery(m.promURL, `max by (job, name) (leader_election_master_status)`)
		annotator, err3 := promQuery(m.promURL, `up{job="annotator"} == 1`)
		return err == nil && err2 == nil && err3 == nil && all > 0 && held == all && annotator == 1
	})
	runStart := time.Now()
	go m.rec.watchBindings(ctx, m.c)
	waitFor(t, "a lease holder", time.Minute, func() bool { return m.holder(ctx) != "" && m.leader(t) != nil })

	// The faults, one after another, while pods arrive. The first 20 s are fault-free (the
	// control). After each fault the run waits until a replica leads again and 5 s more.
	// The short form (make test) keeps every fault but shortens the quiet stretches.
	controlFor, slowFor, settle := 20*time.Second, 15*time.Second, 5*time.Second
	if podCount < 1000 {
		controlFor, slowFor, settle = 10*time.Second, 8*time.Second, 2*time.Second
	}
	plan := []func() fault{}
	if mode == "extender" {
		plan = append(plan,
			func() fault {
				f := fault{name: "extender SIGKILLed", start: time.Now()}
				m.r.Extenders["safe"].Kill()
				time.Sleep(5 * time.Second) // the kubelet's restart delay (its back-off starts at 10 s)
				// Down until Prometheus has seen kube-scheduler's errors rise, at most a minute more.
				// Pods arrive in workloads a few seconds apart, and a kill between two of them raised
				// no error (CI, 2026-11-28 01:00). And kube-scheduler's error series is born with its
				// first error: rate() counts no increase at a series' birth, so errors counted
				// before one scrape and none after it showed no rate (CI, 2026-11-28 09:00, after the
				// first error alone ended the kill). A real outage keeps erroring; this one is cut
				// short once the alert's numerator could see it.
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
					if n, err := promQuery(m.promURL, `sum(rate(scheduler_schedule_attempts_total{result="error"}[2m])) > 0`); err == nil && n > 0 {
						break
					}
				}
				m.r.RestartExtender(t, "safe")
				f.recovered = time.Now()
				m.writeTargets(t)
				return f
			},
			func() fault {
				// Slowed a second beyond the longest httpTimeout of the shipped configuration.
				extenderDelay := httpTimeout(t, m.r.Config) + time.Second
				f := fault{name: fmt.Sprintf("extender slowed %s > httpTimeout", extenderDelay), start: time.Now()}
				for _, p := range m.extProxy {
					p.delay.Store(int64(extenderDelay))
				}
				time.Sleep(slowFor)
				for _, p := range m.extProxy {
					p.delay.Store(0)
				}
				f.recovered = time.Now()
				return f
			})
	} else {
		plan = append(plan, func() fault {
			f := fault{name: "leading replica SIGKILLed", start: time.Now()}
			old := m.holder(ctx)
			i := slices.Index(m.replicas, m.leader(t))
			if i < 0 {
				t.Fatalf("no running replica logged acquiring the lease")
			}
			m.replicas[i].Kill()
			f.recovered = waitFor(t, "a new lease holder", time.Minute, func() bool { h := m.holder(ctx); return h != "" && h != old })
			f.note = fmt.Sprintf("takeover after %.1fs; the killed replica restarted as standby", f.recovered.Sub(f.start).Seconds())
			m.restarts++
			m.replicas[i] = m.startReplica(t, fmt.Sprintf("%s replica %d restart %d", m.name, i, m.restarts))
			m.writeTargets(t)
			return f
		})
	}
	plan = append(plan, func() fault { return m.apiserverRestart(t) }, func() fault { return m.killUsageWriter(t, ctx) })
	if m.reward != nil {
		plan = append(plan, func() fault { return m.killRewardWriter(t, ctx) })
	}
	plan = append(plan, func() fault { return m.staleStatistics(t) })

	// Pods arrive all along, at a pace that spreads podCount over the plan's usual length (the
	// control, about 40 s per fault), in workloads of 10 pods (5 in the short form).
	perWorkload := 10
	if podCount < 1000 {
		perWorkload = 5
	}
	span := controlFor + time.Duration(len(plan))*40*time.Second
	created := make(chan []error, 1)
	planDone := make(chan struct{})
	go func() { created <- m.rec.createPods(ctx, m.c, m.schedulerName, podCount, perWorkload, span, planDone) }()
	time.Sleep(controlFor)
	control := time.Now()
	for _, step := range plan {
		f := step()
		if note := m.ensureReplicas(t); note != "" {
			f.note = strings.TrimPrefix(f.note+"; "+note, "; ")
		}
		// Leading again: the Lease renewed after the recovery, by a replica still running (one
		// that lost the lease meanwhile exited and is restarted here, as the kubelet would).
		back := waitFor(t, "the lease renewed after "+f.name, 2*time.Minute, func() bool {
			if note := m.ensureReplicas(t); note != "" {
				f.note = strings.TrimPrefix(f.note+"; "+note, "; ")
			}
			rt := m.renewed(ctx)
			return rt.After(f.recovered) && m.leader(t) != nil
		})
		if strings.Contains(f.note, "restarted") && !strings.Contains(f.note, "standby") {
			// A replica exited on a lost Lease: leading again is the Lease's own acquireTime
			// (else when the test saw it renewed).
			// Acquired before the recovery (the API server serves Leases before /readyz): the
			// bound applies from the recovery.
			f.leading = back
			if acquired := m.acquired(ctx); acquired.After(f.start) && acquired.Before(back) {
				f.leading = acquired
			}
		}
		if f.name == "kube-apiserver restarted" {
			f.note += m.leaseBreakdown(ctx, t, f)
		}
		// Recovered: a binding after the recovery, before the next fault begins (so that one
		// fault's recovery is never timed across the next). The bound is checked afterwards;
		// this wait only ends at it, or at 3 minutes.
		from := f.recovered
		if f.leading.After(from) {
			from = f.leading
		}
		deadline := time.Now().Add(3 * time.Minute)
		for m.rec.firstBindingAfter(from).IsZero() && time.Now().Before(deadline) {
			m.ensureReplicas(t)
			time.Sleep(100 * time.Millisecond)
		}
		m.rec.mu.Lock()
		m.rec.faults = append(m.rec.faults, f)
		m.rec.mu.Unlock()
		time.Sleep(settle)
	}
	close(planDone)
	if errs := <-created; len(errs) > 0 {
		t.Errorf("creating pods: %d errors: %v", len(errs), errs[:min(len(errs), 5)])
	}

	// Every pod bound: wait for the condition, as long as bindings keep coming.
	m.rec.mu.Lock()
	total := len(m.rec.created)
	m.rec.mu.Unlock()
	lastProgress, lastCount := time.Now(), -1
	for {
		m.rec.mu.Lock()
		n := len(m.rec.bound)
		m.rec.mu.Unlock()
		if n >= total {
			break
		}
		if n != lastCount {
			lastProgress, lastCount = time.Now(), n
		}
		if time.Since(lastProgress) > 90*time.Second {
			break
		}
		m.ensureReplicas(t)
		time.Sleep(500 * time.Millisecond)
	}
	cancel()
	return m.verdict(t, runStart, control, total)
}

// httpTimeout is the longest httpTimeout of the extenders of a KubeSchedulerConfiguration.
func httpTimeout(t *testing.T, config []byte) time.Duration {
	t.Helper()
	var cfg struct {
		Extenders []struct {
			HTTPTimeout string `json:"httpTimeout"`
		} `json:"extenders"`
	}
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	longest := 5 * time.Second // kube-scheduler's default (DefaultExtenderTimeout) when unset
	if len(cfg.Extenders) > 0 {
		longest = 0
	}
	for _, e := range cfg.Extenders {
		d := 5 * time.Second
		if e.HTTPTimeout != "" {
			var err error
			if d, err = time.ParseDuration(e.HTTPTimeout); err != nil {
				t.Fatalf("httpTimeout %q: %v", e.HTTPTimeout, err)
			}
		}
		longest = max(longest, d)
	}
	return longest
}

// wantAlerts names the chart alerts whose conditions a fault must raise in this mode (the table
// shows every condition that held). A SIGKILLed extender shows in no extender series (it counts
// only what it answers): kube-scheduler's attempts ending in error do (SchedulingErrors). Stale
// statistics show in safe_stale_nodes only in extender mode (the plugin has no metrics
// registry): the annotator's own source errors show them in both (StatisticsSourceFailing).
// The slowed extender and the stores' writers are reported, not required: a slow extender's
// few timeouts may stay under SchedulingErrors' share in a fault this short, and a store's
// writer killed for seconds is no alert's business before the writer is missing for minutes
// (RewardNoWriter). StatisticsSourceFailing is reported, not required: in a 200-node run on
// the loaded machine the annotator's statistics cycle logged one source error in a 91 s cut
// (the learner's reads, on their own goroutine, failed every 2 s), so its error counter barely
// moved: most likely one cycle patching 200 nodes on the overloaded API server outlasted the cut
// (docs/operations.md, "Chaos run").
func (m *chaosMode) wantAlerts(fault string) []string {
	switch {
	case m.name == "extender" && fault == "extender SIGKILLed":
		return []string{"SchedulingErrors"}
	case m.name == "extender" && fault == "metrics source stopped":
		return []string{"StaleUsageStatistics"}
	case m.name == "plugin" && fault == "leading replica SIGKILLed":
		return []string{"LeaderLost"}
	}
	return nil
}

// pluginNames are the plugins the shipped plugin configuration enables (multiPoint).
func pluginNames(t *testing.T, d *harness.Deployment) []string {
	t.Helper()
	var cfg struct {
		Profiles []struct {
			Plugins struct {
				MultiPoint struct {
					Enabled []struct{ Name string } `json:"enabled"`
				} `json:"multiPoint"`
			} `json:"plugins"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(d.SchedulerConfig, &cfg); err != nil || len(cfg.Profiles) == 0 {
		t.Fatalf("the shipped plugin configuration: %v", err)
	}
	var names []string
	for _, p := range cfg.Profiles[0].Plugins.MultiPoint.Enabled {
		names = append(names, p.Name)
	}
	return names
}

// verdict checks the record and returns the mode's table rows.
func (m *chaosMode) verdict(t *testing.T, runStart, control time.Time, total int) [][]string {
	t.Helper()
	conditions := m.alertConditions(t, runStart, time.Now())
	rec := m.rec
	// Doubled: a Scheduled event counted more than once for a pod (two schedulers each bound
	// it), or a nodeName that changed.
	scheduled := map[string]int32{}
	events, err := m.c.Client.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: "reason=Scheduled"})
	if err != nil {
		t.Fatalf("listing Scheduled events: %v", err)
	}
	for _, e := range events.Items {
		scheduled[e.InvolvedObject.Name] += max(e.Count, 1)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	doubled := map[string]bool{}
	for name, n := range scheduled {
		if n > 1 {
			doubled[name] = true
		}
	}
	for name := range rec.changed {
		doubled[name] = true
	}
	var lost []string
	for name := range rec.created {
		if _, ok := rec.bound[name]; !ok {
			lost = append(lost, name)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Errorf("%s: %d of %d pods never bound: %v", m.name, len(lost), total, lost[:min(len(lost), 10)])
	}
	if len(doubled) > 0 {
		t.Errorf("%s: pods bound more than once: %v (Scheduled events %v, nodeName changes %v)", m.name, doubled, scheduled, rec.changed)
	}

	// Unsafe: a pod bound to a risky node whose statistics were fresh all through the chaosSlack
	// before the binding was seen (the filter rejects such a node). Bindings seen within an API
	// server outage's slack are judged from the window before it.
	var unsafe []string
	staleRisky := 0
	for name, b := range rec.bound {
		if !slices.Contains(m.risky, b.node) {
			continue
		}
		from := b.seen.Add(-chaosSlack)
		for _, o := range rec.apiDown {
			if b.seen.After(o[0]) && from.Before(o[1].Add(chaosSlack)) {
				from = o[0].Add(-chaosSlack)
			}
		}
		if rec.freshThroughoutLocked(b.node, from, b.seen, m.maxStatsAge) {
			unsafe = append(unsafe, fmt.Sprintf("%s on %s at %s", name, b.node, b.seen.Format("15:04:05.000")))
		} else {
			staleRisky++
		}
	}
	if len(unsafe) > 0 {
		t.Errorf("%s: pods bound to a node safe-overload rejects (fresh statistics of a nearly full node): %v", m.name, unsafe)
	}

	// Per fault: the pods it affected (unbound at its start and created before its recovery),
	// the first binding after its recovery.
	var rows [][]string
	firstAfter := func(at time.Time) (time.Duration, bool) {
		var best time.Duration
		found := false
		for _, b := range rec.bound {
			if !b.seen.Before(at) && (!found || b.seen.Sub(at) < best) {
				best, found = b.seen.Sub(at), true
			}
		}
		return best, found
	}
	var recoveries []string
	count := func(from, to time.Time) (affected, l, d int) {
		for name, c := range rec.created {
			b, ok := rec.bound[name]
			if c.After(to) || (ok && b.seen.Before(from)) {
				continue
			}
			affected++
			if !ok {
				l++
			}
			if doubled[name] {
				d++
			}
		}
		return
	}
	alerts := func(from, to time.Time) string {
		held := heldIn(conditions, from, to)
		if len(held) == 0 {
			return "none"
		}
		return strings.Join(held, ", ")
	}
	a, l, d := count(time.Time{}, control)
	if held := heldIn(conditions, runStart, control); len(held) > 0 {
		t.Errorf("%s: alert conditions held in the fault-free control: %v", m.name, held)
	}
	rows = append(rows, []string{"none (control)", m.name, strconv.Itoa(a), "-", alerts(runStart, control), strconv.Itoa(l), strconv.Itoa(d), ""})
	for _, f := range rec.faults {
		a, l, d := count(f.start, f.recovered)
		rt, ok := firstAfter(f.recovered)
		recovery := "no binding after it"
		if ok {
			recovery = fmt.Sprintf("%.1fs", rt.Seconds())
			recoveries = append(recoveries, recovery)
		}
		from := "the recovery"
		if !f.leading.IsZero() && f.leading.After(f.recovered) {
			// A replica exited on a lost lease (an outage longer than renewDeadline): client-go's
			// leader election makes the next candidate wait a whole leaseDuration (15 s) from
			// the first time it reads a Lease record it had not seen, whatever the record's own
			// renewTime says (it trusts no other clock), so no replica can lead within 10 s of
			// the API server's return unless it saw the final renewal before the outage. The
			// bound applies from when a replica leads again (the Lease's acquireTime); the
			// column gives both, the notes the breakdown.
			rt, ok = firstAfter(f.leading)
			if ok {
				recovery += fmt.Sprintf(" (%.1fs after a replica leads again)", rt.Seconds())
			}
			from = "a replica leading again (the Lease's acquireTime: a replica exited on its lost Lease, and client-go's next candidate waits leaseDuration)"
		}
		if !ok || rt > chaosRecovery {
			t.Errorf("%s: after %s (recovered %s), first binding: %s, want within %s of %s", m.name, f.name, f.recovered.Format("15:04:05.000"), recovery, chaosRecovery, from)
		}
		note := fmt.Sprintf("fault %.1fs", f.recovered.Sub(f.start).Seconds())
		if f.note != "" {
			note += "; " + f.note
		}
		// The window an alert condition counts in: the fault and 10 s after (Prometheus scrapes
		// every second; rate windows trail).
		held := alerts(f.start, f.recovered.Add(chaosRecovery))
		for _, want := range m.wantAlerts(f.name) {
			if !strings.Contains(held, want+" ") && !strings.Contains(held, want+"{") {
				t.Errorf("%s: %s: alert condition %s never held (held: %s)", m.name, f.name, want, held)
			}
		}
		rows = append(rows, []string{f.name, m.name, strconv.Itoa(a), recovery, held, strconv.Itoa(l), strconv.Itoa(d), note})
	}
	stores := ""
	for _, w := range []*storeWatch{m.usage, m.reward} {
		if w != nil {
			stores += "; " + w.check(t, m.name)
		}
	}
	rows = append(rows, []string{"all", m.name, strconv.Itoa(total), strings.Join(recoveries, " "), "not evaluated", strconv.Itoa(len(lost)), strconv.Itoa(len(doubled)),
		fmt.Sprintf("unsafe %d; on risky nodes while stale %d%s", len(unsafe), staleRisky, stores)})
	rows[len(rows)-1][4] = "-"
	return rows
}

// freshThroughoutLocked reports whether node's statistics were certainly fresh at every moment
// of [from, to]: a snapshot taken at or before from shows a timestamp younger than the maximum
// age at to (timestamps only grow). r.mu is held.
func (r *chaosRecord) freshThroughoutLocked(node string, from, to time.Time, maxAge time.Duration) bool {
	var last *stampSnapshot
	for i := range r.stamps {
		if r.stamps[i].at.After(from) {
			break
		}
		last = &r.stamps[i]
	}
	if last == nil {
		return false
	}
	ts, ok := last.stamp[node]
	return ok && to.Sub(ts) < maxAge
}

// alertCondition is when one of the chart's alerts had its expression true during the run.
type alertCondition struct {
	name string
	hold time.Duration // the rule's for:
	at   []time.Time   // evaluation times (1 s apart) with a result
	// names are the values of the series' name label (a Lease's name for LeaderLost).
	names []string
}

// alertConditions evaluates every alert of the chart's rules file over [from, to] with the run's
// Prometheus (a range query of its expression, 1 s step). The run lasts minutes and the rules'
// for: durations are minutes long: what is reported is how long each condition held, against its
// for:, rather than a firing that no run this short could see.
func (m *chaosMode) alertConditions(t *testing.T, from, to time.Time) []alertCondition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "kube-safe-scheduler", "files", "alerts.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr, For string
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatalf("alerts.rules.yaml: %v", err)
	}
	var out []alertCondition
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			var hold time.Duration
			if r.For != "" {
				if hold, err = time.ParseDuration(r.For); err != nil {
					t.Fatalf("alert %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			ac := alertCondition{name: strings.TrimPrefix(r.Alert, "KubeSafeScheduler"), hold: hold}
			q := url.Values{"query": {r.Expr}, "start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix()+1, 10)}, "step": {"1"}}
			resp, err := http.Get(m.promURL + "/api/v1/query_range?" + q.Encode())
			if err != nil {
				t.Fatalf("alert %s: %v", r.Alert, err)
			}
			var res struct {
				Status, Error string
				Data          struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
						Values [][2]any          `json:"values"`
					} `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			if err != nil || res.Status != "success" {
				t.Fatalf("alert %s: query_range: %v %s", r.Alert, err, res.Error)
			}
			seen := map[int64]bool{}
			for _, series := range res.Data.Result {
				if n := series.Metric["name"]; n != "" && !slices.Contains(ac.names, n) {
					ac.names = append(ac.names, n)
				}
				for _, v := range series.Values {
					if ts, ok := v[0].(float64); ok && !seen[int64(ts)] {
						seen[int64(ts)] = true
						ac.at = append(ac.at, time.Unix(int64(ts), 0))
					}
				}
			}
			out = append(out, ac)
		}
	}
	return out
}

// heldIn returns the alerts whose condition held within [from, to], each with how long.
func heldIn(conditions []alertCondition, from, to time.Time) []string {
	var out []string
	for _, c := range conditions {
		n := 0
		for _, at := range c.at {
			// Range evaluations fall on whole seconds: the first one of the window is the first
			// at or after from.
			if !at.Before(from) && !at.After(to) {
				n++
			}
		}
		if n > 0 {
			name := c.name
			if len(c.names) > 0 {
				name += "{" + strings.Join(c.names, ",") + "}"
			}
			out = append(out, fmt.Sprintf("%s %ds of for %dm", name, n, int(c.hold.Minutes())))
		}
	}
	return out
}

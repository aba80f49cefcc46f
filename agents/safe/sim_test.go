package safe

// A deterministic, in-process SIMULATION of the setup of issue 26, used to choose safe's
// design and defaults (README.md, "Design choices and their measurements"). It is not the
// quality lab (no API server, no kubelet): kube-scheduler's filter and scores are restated
// below from its source, the node annotator is the real package annotator (its Cycle, its
// metrics API source, its tolerance and refresh) over fake clientsets, and safe is this
// package's Agent, called as the extender calls it.
//
//	SAFE_SIM=1 go test -run TestSimulation -timeout 2h -v ./agents/safe
//
// SAFE_SIM_CONFIGS (comma-separated names), SAFE_SIM_SEEDS (a count), SAFE_SIM_WORKLOADS and
// SAFE_SIM_HOURS (measured hours, after a warm-up of the window plus one hour) narrow it.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/kube-safe-scheduler/extender/annotator"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
	"github.com/kube-safe-scheduler/extender/usage/metricsource"
)

const (
	simNodes    = 40
	simNodeCPU  = 16000           // millicores
	simNodeMem  = 64 << 30        // bytes
	simStep     = 1.0             // minutes: the annotator's INTERVAL (1 m; it ships 30 s)
	simMaxPods  = 110             // kubelet's default
	simNZCPU    = 100             // kube-scheduler's DefaultMilliCPURequest
	simNZMem    = 200 << 20       // kube-scheduler's DefaultMemoryRequest
	simMeanLife = 90.0            // minutes, exponential (at least 5)
	simRetry    = 2.0             // minutes between two attempts of an unschedulable pod
	simExtScale = 100 / 10        // MaxNodeScore / MaxExtenderPriority
	simTargetLo = 0.80            // requested cpu, fraction of allocatable, low and high
	simTargetHi = 0.86            //
	simWarmupX  = 60.0            // minutes of warm-up beyond the statistics window
	simEpoch    = 1_780_000_000.0 // seconds: the simulated clock's origin
)

// workloads: how a pod's usage relates to its request.
const (
	wlRequests = "requests" // usage at or below requests
	wlOver     = "over"     // a quarter of pods use 1.2-2.5x their request, 15 % BestEffort
	wlBurst    = "burst"    // short bursts to 2-3x request
)

// simConfig is one scheduler setup.
type simConfig struct {
	name string
	safe bool
	cfg  Config
	// before: a node without statistics scores 0 (the design before issue 26).
	before bool
	// window, refresh: the annotator's STATS_WINDOW and STATS_REFRESH (0: its defaults).
	window, refresh time.Duration
}

func simConfigs() []simConfig {
	c := func(f FilterMode, share int) Config {
		cfg := DefaultConfig()
		cfg.Filter, cfg.PlacedShare = f, share
		return cfg
	}
	h := time.Hour
	return []simConfig{
		{name: "defaults"},
		{name: "before", safe: true, cfg: c(FilterPod, 0), before: true},
		{name: "prio-only", safe: true, cfg: c(FilterOff, 0)},
		{name: "node", safe: true, cfg: c(FilterNode, 0)},
		{name: "node+placed", safe: true, cfg: c(FilterNode, 100)},
		{name: "pod+placed", safe: true, cfg: c(FilterPod, 100)},
		{name: "adaptive+placed", safe: true, cfg: c(FilterAdaptive, 100)},
		{name: "adaptive+placed/1h", safe: true, cfg: c(FilterAdaptive, 100), window: h},
		{name: "adaptive/1h", safe: true, cfg: c(FilterAdaptive, 0), window: h},
		{name: "node+placed/1h", safe: true, cfg: c(FilterNode, 100), window: h},
		{name: "pod+placed/1h", safe: true, cfg: c(FilterPod, 100), window: h},
		{name: "off+placed/1h", safe: true, cfg: c(FilterOff, 100), window: h},
		{name: "node+placed/2h", safe: true, cfg: c(FilterNode, 100), window: 2 * h},
		{name: "node+placed/30m", safe: true, cfg: c(FilterNode, 100), window: h / 2},
		{name: "node+placed/1h/r10m", safe: true, cfg: c(FilterNode, 100), window: h, refresh: 10 * time.Minute},
		{name: "node+placed50/1h", safe: true, cfg: c(FilterNode, 50), window: h},
		{name: "node/1h", safe: true, cfg: c(FilterNode, 0), window: h},
	}
}

type simPod struct {
	id         int
	cpu, mem   int64 // requests
	be         bool
	ratio      float64 // usage / request (BestEffort: usage in millicores)
	memRatio   float64
	life       float64
	arrive     float64
	start, end float64
	node       int
	nextTry    float64
	// bursts: [burstFrom, burstTo) at burstX times the request.
	burstFrom, burstTo, burstX float64
	obj                        *corev1.Pod
}

type simNode struct {
	name                         string
	obj                          *corev1.Node
	rv                           int
	pods                         map[int]*simPod
	reqCPU, reqMem, nzCPU, nzMem int64
}

// simResult is one run's figures over the measured period.
type simResult struct {
	over80, over90, over100 float64 // node-minutes
	placed                  int
	pendingEnd              int
	neverPlaced             int // arrived in the measured period and still pending at its end
	waitP99                 float64
	pendingLarge            int // pending at the end, requesting >= 2 cpu
}

// simCluster is the framework.Cluster the agent sees: the sim's own state.
type simCluster struct {
	s *sim
}

func (c simCluster) Node(name string) (*corev1.Node, bool) {
	for _, n := range c.s.nodes {
		if n.name == name {
			return n.obj, true
		}
	}
	return nil, false
}
func (c simCluster) HasSynced() bool { return true }
func (c simCluster) Nodes() []*corev1.Node {
	out := make([]*corev1.Node, len(c.s.nodes))
	for i, n := range c.s.nodes {
		out[i] = n.obj
	}
	return out
}
func (c simCluster) Allocated(node string) framework.Amounts {
	for _, n := range c.s.nodes {
		if n.name == node {
			return framework.Amounts{corev1.ResourceCPU: n.reqCPU, corev1.ResourceMemory: n.reqMem, corev1.ResourcePods: int64(len(n.pods))}
		}
	}
	return framework.Amounts{}
}
func (c simCluster) Pods() []*corev1.Pod {
	if c.s.podsDirty {
		c.s.podList = c.s.podList[:0]
		for _, n := range c.s.nodes {
			for _, p := range n.pods {
				c.s.podList = append(c.s.podList, p.obj)
			}
		}
		c.s.podsDirty = false
	}
	return c.s.podList
}

type sim struct {
	cfg       simConfig
	wl        string
	rng       *rand.Rand // the pods and their arrivals: identical for every config of a seed
	noise     *rand.Rand // usage noise and bursts after the start
	tie       *rand.Rand // scheduler's tie breaks
	nodes     []*simNode
	now       float64 // minutes
	agent     *Agent
	ann       *annotator.Annotator
	kube      *fake.Clientset
	metrics   *metricsfake.Clientset
	podList   []*corev1.Pod
	podsDirty bool
}

var simNodeMetricsGVR = metricsv1beta1.SchemeGroupVersion.WithResource("nodes")

func (s *sim) clock() time.Time {
	return time.Unix(int64(simEpoch), 0).Add(time.Duration(s.now * float64(time.Minute))).UTC()
}

func newSim(t testing.TB, cfg simConfig, wl string, seed uint64) *sim {
	s := &sim{cfg: cfg, wl: wl, rng: rand.New(rand.NewPCG(seed, 1)), noise: rand.New(rand.NewPCG(seed, 3)),
		tie: rand.New(rand.NewPCG(seed, 2)), podsDirty: true}
	s.kube = fake.NewSimpleClientset() // the plain tracker: NewClientset builds a REST mapper per patch
	s.metrics = metricsfake.NewSimpleClientset()
	ctx := context.Background()
	for i := range simNodes {
		name := fmt.Sprintf("node-%02d", i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(simNodeCPU, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(simNodeMem, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(simMaxPods, resource.DecimalSI)}}}
		n.Status.Capacity = n.Status.Allocatable
		if _, err := s.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, &simNode{name: name, obj: n, rv: 1, pods: map[int]*simPod{}})
	}
	if cfg.safe {
		acfg, err := settingstest.Parse[annotator.Config](nil)
		if err != nil {
			t.Fatal(err)
		}
		acfg.Source = annotator.SourceMetricsAPI
		acfg.Interval = time.Duration(simStep * float64(time.Minute))
		acfg.PatchQPS, acfg.PatchBurst = 10000, 100000
		if cfg.window > 0 {
			acfg.Window = cfg.window
		}
		if cfg.refresh > 0 {
			acfg.Refresh = cfg.refresh
		}
		l := logrus.New()
		l.SetLevel(logrus.ErrorLevel)
		s.ann, err = annotator.New(acfg, simCluster{s}, s.kube, metricsource.NewMetricsAPI(s.metrics, acfg.Window), logrus.NewEntry(l), nil)
		if err != nil {
			t.Fatal(err)
		}
		h := framework.NewHandle(nil)
		h.Cluster = simCluster{s}
		s.agent, err = New(cfg.cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		s.agent.now = s.clock
		s.agent.noRequests = cfg.before
	}
	return s
}

// newPod draws a pod of the workload.
func (s *sim) newPod(id int) *simPod {
	r := s.rng
	p := &simPod{id: id, node: -1, arrive: s.now, nextTry: s.now, memRatio: 0.5 + 0.5*r.Float64()}
	x := r.Float64()
	switch {
	case x < 0.25:
		p.cpu = 250
	case x < 0.50:
		p.cpu = 500
	case x < 0.75:
		p.cpu = 1000
	case x < 0.90:
		p.cpu = 2000
	case x < 0.95:
		p.cpu = 3000
	default:
		p.cpu = 4000
	}
	p.mem = int64(float64(p.cpu) / 1000 * (1.5 + 3*r.Float64()) * (1 << 30))
	p.life = math.Max(5, r.ExpFloat64()*simMeanLife)
	p.ratio = 0.3 + 0.7*r.Float64()
	switch s.wl {
	case wlOver:
		p.ratio = 0.2 + 0.6*r.Float64()
		y := r.Float64()
		switch {
		case y < 0.15:
			p.be, p.cpu, p.mem = true, 0, 0
			p.ratio = 100 + 500*r.Float64() // millicores
		case y < 0.15+0.25:
			p.ratio = 1.2 + 1.3*r.Float64()
		}
	case wlBurst:
		p.ratio = 0.3 + 0.6*r.Float64()
		p.burstX = 2 + r.Float64()
		p.burstTo = 2 + 6*r.Float64() // a start-up burst, from the pod's start
	}
	return p
}

// usage is a pod's cpu usage (millicores) at the sim's time, and its memory usage.
func (s *sim) usage(p *simPod) (float64, float64) {
	noise := 1 + 0.1*s.noise.NormFloat64()
	if noise < 0 {
		noise = 0
	}
	if p.be {
		return p.ratio * noise, float64(256<<20) * (1 + p.memRatio)
	}
	u := float64(p.cpu) * p.ratio * noise
	if s.wl == wlBurst {
		age := s.now - p.start
		if age >= p.burstFrom && age < p.burstTo {
			u = float64(p.cpu) * p.burstX * noise
		} else if age >= p.burstTo && s.noise.Float64() < simStep/180 { // a burst every 3 h or so
			p.burstFrom, p.burstTo, p.burstX = age, age+2+4*s.noise.Float64(), 2+s.noise.Float64()
		}
	}
	return u, float64(p.mem) * p.memRatio
}

func (s *sim) podObject(p *simPod) *corev1.Pod {
	c := corev1.Container{Name: "c"}
	if !p.be {
		c.Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(p.cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(p.mem, resource.BinarySI)}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(p.id), Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// schedule runs one scheduling cycle for p; it reports whether p was bound.
func (s *sim) schedule(ctx context.Context, t testing.TB, p *simPod) bool {
	nzCPU, nzMem := p.cpu, p.mem
	if p.be {
		nzCPU, nzMem = simNZCPU, simNZMem
	}
	var feasible []int
	for i, n := range s.nodes {
		if n.reqCPU+p.cpu <= simNodeCPU && n.reqMem+p.mem <= simNodeMem && len(n.pods) < simMaxPods {
			feasible = append(feasible, i)
		}
	}
	if len(feasible) == 0 {
		return false
	}
	if s.agent != nil {
		views := make([]*corev1.Node, len(feasible))
		for j, i := range feasible {
			views[j] = s.nodes[i].obj
		}
		verdicts, err := s.agent.filterOverload(ctx, p.obj, views)
		if err != nil {
			t.Fatal(err)
		}
		kept := feasible[:0:0]
		for j, v := range verdicts {
			if v.Passes() {
				kept = append(kept, feasible[j])
			}
		}
		feasible = kept
		if len(feasible) == 0 {
			return false
		}
	}
	scores := make([]int64, len(feasible))
	for j, i := range feasible {
		n := s.nodes[i]
		// NodeResourcesFit, LeastAllocated (non-zero requests), cpu and memory weight 1.
		la := (least(n.nzCPU+nzCPU, simNodeCPU) + least(n.nzMem+nzMem, simNodeMem)) / 2
		// NodeResourcesBalancedAllocation (requests), cpu and memory.
		ba := balanced(n.reqCPU+p.cpu, n.reqMem+p.mem, n.reqCPU, n.reqMem)
		scores[j] = la + ba
	}
	if s.agent != nil {
		views := make([]*corev1.Node, len(feasible))
		for j, i := range feasible {
			views[j] = s.nodes[i].obj
		}
		o, _ := s.agent.scoreOverload(ctx, p.obj, views)
		b, _ := s.agent.scoreBalance(ctx, p.obj, views)
		for j := range feasible {
			scores[j] += (2*o[j] + 1*b[j]) * simExtScale
		}
	}
	// The highest score; ties broken uniformly (kube-scheduler's reservoir sampling).
	best, count := -1, 0
	for j := range feasible {
		switch {
		case best < 0 || scores[j] > scores[best]:
			best, count = j, 1
		case scores[j] == scores[best]:
			count++
			if s.tie.IntN(count) == 0 {
				best = j
			}
		}
	}
	s.bind(p, feasible[best])
	return true
}

func least(requested, capacity int64) int64 {
	if requested > capacity {
		return 0
	}
	return (capacity - requested) * 100 / capacity
}

func balanced(cpu, mem, cpu0, mem0 int64) int64 {
	score := func(c, m int64) int64 {
		fc, fm := math.Min(float64(c)/simNodeCPU, 1), math.Min(float64(m)/simNodeMem, 1)
		return int64((1 - math.Abs(fc-fm)/2) * 100)
	}
	return 50 + (50+score(cpu, mem)-score(cpu0, mem0))/2
}

func (s *sim) bind(p *simPod, i int) {
	n := s.nodes[i]
	p.node, p.start, p.end = i, s.now, s.now+p.life
	p.obj.Spec.NodeName = n.name
	p.obj.Status.Phase = corev1.PodRunning
	p.obj.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(s.clock().Truncate(time.Second))}}
	n.pods[p.id] = p
	n.reqCPU += p.cpu
	n.reqMem += p.mem
	if p.be {
		n.nzCPU += simNZCPU
		n.nzMem += simNZMem
	} else {
		n.nzCPU += p.cpu
		n.nzMem += p.mem
	}
	s.podsDirty = true
}

func (s *sim) unbind(p *simPod) {
	n := s.nodes[p.node]
	delete(n.pods, p.id)
	n.reqCPU -= p.cpu
	n.reqMem -= p.mem
	if p.be {
		n.nzCPU -= simNZCPU
		n.nzMem -= simNZMem
	} else {
		n.nzCPU -= p.cpu
		n.nzMem -= p.mem
	}
	s.podsDirty = true
}

// refreshNodes reads the nodes back from the fake clientset after the annotator's patches.
func (s *sim) refreshNodes(ctx context.Context, t testing.TB) {
	for _, n := range s.nodes {
		got, err := s.kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !sameMap(got.Annotations, n.obj.Annotations) {
			n.rv++
			got.ResourceVersion = strconv.Itoa(n.rv)
			n.obj = framework.NodeView(got)
		}
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (s *sim) run(ctx context.Context, t testing.TB, measured float64) simResult {
	warm := 6*60 + simWarmupX // the same measured period for every config: the 6 h window plus an hour
	end := warm + measured
	var pending []*simPod
	var running []*simPod
	// Requesting pods' mean cpu request (m), for the arrival rate.
	const meanReq = 0.25*250 + 0.25*500 + 0.25*1000 + 0.15*2000 + 0.05*3000 + 0.05*4000
	nextID := 0
	nextArrival := 0.0
	var res simResult
	var waits []float64
	for s.now = 0; s.now < end; s.now += simStep {
		in := s.now >= warm
		// Departures.
		kept := running[:0]
		for _, p := range running {
			if p.end <= s.now {
				s.unbind(p)
				continue
			}
			kept = append(kept, p)
		}
		running = kept
		// Arrivals: Poisson, at the rate that keeps the target share of cpu requested.
		target := simTargetLo + (simTargetHi-simTargetLo)*(0.5+0.5*math.Sin(2*math.Pi*s.now/(6*60)))
		rate := target * simNodes * simNodeCPU / (meanReq * simMeanLife) // requesting pods per minute
		if s.wl == wlOver {
			rate /= 0.85 // BestEffort pods come on top
		}
		for nextArrival < s.now+simStep {
			p := s.newPod(nextID)
			nextID++
			p.arrive, p.nextTry = nextArrival, nextArrival
			p.obj = s.podObject(p)
			pending = append(pending, p)
			nextArrival += s.rng.ExpFloat64() / rate
		}
		// Usage, metrics and overloads.
		for _, n := range s.nodes {
			var cpu, mem float64
			for _, id := range sortedIDs(n.pods) {
				c, m := s.usage(n.pods[id])
				cpu += c
				mem += m
			}
			if in {
				if cpu > 0.8*simNodeCPU {
					res.over80 += simStep
				}
				if cpu > 0.9*simNodeCPU {
					res.over90 += simStep
				}
				if cpu > simNodeCPU {
					res.over100 += simStep
				}
			}
			if s.ann != nil {
				nm := &metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Timestamp: metav1.NewTime(s.clock()),
					Usage: corev1.ResourceList{
						corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(math.Min(cpu, simNodeCPU)), resource.DecimalSI),
						corev1.ResourceMemory: *resource.NewQuantity(int64(math.Min(mem, simNodeMem)), resource.BinarySI)}}
				tr := s.metrics.Tracker()
				if _, err := tr.Get(simNodeMetricsGVR, "", n.name); err == nil {
					if err := tr.Update(simNodeMetricsGVR, nm, ""); err != nil {
						t.Fatal(err)
					}
				} else if err := tr.Create(simNodeMetricsGVR, nm, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		if s.ann != nil {
			s.ann.Cycle(ctx, s.clock())
			s.refreshNodes(ctx, t)
		}
		// Scheduling: the queue in order of (re)queueing time; an unschedulable pod is tried
		// again simRetry minutes later.
		sort.SliceStable(pending, func(i, j int) bool { return pending[i].nextTry < pending[j].nextTry })
		left := pending[:0]
		for _, p := range pending {
			if p.nextTry > s.now+simStep {
				left = append(left, p)
				continue
			}
			if s.schedule(ctx, t, p) {
				running = append(running, p)
				if in {
					res.placed++
					waits = append(waits, math.Max(0, s.now-p.arrive))
				}
				continue
			}
			p.nextTry = s.now + simRetry
			left = append(left, p)
		}
		pending = left
	}
	res.pendingEnd = len(pending)
	for _, p := range pending {
		if p.arrive >= warm {
			res.neverPlaced++
		}
		if p.cpu >= 2000 {
			res.pendingLarge++
		}
		waits = append(waits, end-p.arrive) // still waiting: at least this long
	}
	sort.Float64s(waits)
	if len(waits) > 0 {
		res.waitP99 = waits[int(0.99*float64(len(waits)-1))]
	}
	return res
}

func sortedIDs(m map[int]*simPod) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

func envList(key string, all []string) []string {
	if v := os.Getenv(key); v != "" {
		return strings.Split(v, ",")
	}
	return all
}

func TestSimulation(t *testing.T) {
	if os.Getenv("SAFE_SIM") == "" {
		t.Skip("SAFE_SIM not set: the simulation takes minutes")
	}
	seeds := 3
	if v := os.Getenv("SAFE_SIM_SEEDS"); v != "" {
		seeds, _ = strconv.Atoi(v)
	}
	hours := 8.0
	if v := os.Getenv("SAFE_SIM_HOURS"); v != "" {
		hours, _ = strconv.ParseFloat(v, 64)
	}
	var names []string
	for _, c := range simConfigs() {
		names = append(names, c.name)
	}
	want := envList("SAFE_SIM_CONFIGS", names)
	wls := envList("SAFE_SIM_WORKLOADS", []string{wlRequests, wlOver, wlBurst})
	var configs []simConfig
	for _, c := range simConfigs() {
		for _, w := range want {
			if c.name == w {
				configs = append(configs, c)
			}
		}
	}
	type key struct {
		cfg, wl string
		seed    int
	}
	results := map[key]simResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, wl := range wls {
		for _, c := range configs {
			for seed := range seeds {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					s := newSim(t, c, wl, uint64(seed+1))
					r := s.run(context.Background(), t, hours*60)
					mu.Lock()
					results[key{c.name, wl, seed}] = r
					mu.Unlock()
					t.Logf("%-22s %-8s seed %d: over80 %6.0f over90 %6.0f over100 %6.0f placed %5d pendingEnd %4d (>=2cpu %3d) neverPlaced %4d waitP99 %6.1f min",
						c.name, wl, seed+1, r.over80, r.over90, r.over100, r.placed, r.pendingEnd, r.pendingLarge, r.neverPlaced, r.waitP99)
				})
			}
		}
	}
	wg.Wait()
	median := func(f func(simResult) float64, cfg, wl string) float64 {
		var v []float64
		for seed := range seeds {
			v = append(v, f(results[key{cfg, wl, seed}]))
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	ratio := func(f func(simResult) float64, cfg, wl string) string {
		var v []float64
		for seed := range seeds {
			b := f(results[key{"defaults", wl, seed}])
			if b == 0 {
				return "-"
			}
			v = append(v, f(results[key{cfg, wl, seed}])/b)
		}
		sort.Float64s(v)
		return fmt.Sprintf("%.2f", v[len(v)/2])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nmedians of %d seeds, %.0f h measured; ratios are medians of per-seed ratios to the defaults\n", seeds, hours)
	fmt.Fprintf(&b, "| workload | config | over80 | over90 | over100 | placed | over90 / defaults | over80 / d | over100 / d | placed / d | pending at end (>= 2 cpu) | wait p99 min |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	o80 := func(r simResult) float64 { return r.over80 }
	o90 := func(r simResult) float64 { return r.over90 }
	o100 := func(r simResult) float64 { return r.over100 }
	pl := func(r simResult) float64 { return float64(r.placed) }
	pe := func(r simResult) float64 { return float64(r.pendingEnd) }
	pel := func(r simResult) float64 { return float64(r.pendingLarge) }
	wp := func(r simResult) float64 { return r.waitP99 }
	for _, wl := range wls {
		for _, c := range configs {
			if _, ok := results[key{"defaults", wl, 0}]; !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | %s | %.0f (%.0f) | %.1f |\n", wl, c.name,
				median(o80, c.name, wl), median(o90, c.name, wl), median(o100, c.name, wl), median(pl, c.name, wl),
				ratio(o90, c.name, wl), ratio(o80, c.name, wl), ratio(o100, c.name, wl), ratio(pl, c.name, wl),
				median(pe, c.name, wl), median(pel, c.name, wl), median(wp, c.name, wl))
		}
	}
	t.Log(b.String())
}

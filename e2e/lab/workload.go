package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// PodPlan is one pod of a workload: when it arrives and for how long it runs (simulated
// time), what it requests and how much of that it truly uses.
type PodPlan struct {
	Index    int
	Name     string
	Arrive   time.Duration
	Duration time.Duration
	CPU      int64 // millicores requested
	Memory   int64 // bytes requested
	CPURatio float64
	MemRatio float64
	Type     string
	// Fragile pods fail at start on the cluster's bad nodes (reward workload).
	Fragile bool
	// Group names the pod group (labels podGroup, minAvailable) of a gang member; GroupMin is
	// its minimum, here every member.
	Group    string
	GroupMin int
	// Workload names the pod's workload (label app.kubernetes.io/name), OwnerKind its owner's
	// kind (ReplicaSet for services, Job for batch pods and gang members).
	Workload, OwnerKind string
	// Shape and ShapeStart (trace-driven usage): the workload's PlanetLab VM and where in the
	// VM's day the run's time 0 falls.
	Shape      *Shape
	ShapeStart time.Duration
}

// Cluster is the lab's cluster shape: every node alike.
type Cluster struct {
	Nodes  int
	CPU    int64 // millicores per node
	Memory int64 // bytes per node
}

// Workload is a named, seeded list of pods, sorted by arrival, and the nodes on which fragile
// pods fail.
type Workload struct {
	Name     string
	Pods     []PodPlan
	BadNodes []string
}

// Workload names.
const (
	WorkSteady = "steady"
	WorkBurst  = "burst"
	WorkReward = "reward"
	WorkGang   = "gang"
)

// Workloads are the workloads the lab knows.
var Workloads = []string{WorkSteady, WorkBurst, WorkReward, WorkGang}

// nodeName is the name of node i.
func nodeName(i int) string { return fmt.Sprintf("node-%03d", i) }

// podSizes are the cpu requests (millicores) pods draw from, with their weights; memory is
// 2, 4 or 6 GiB per requested core.
var podSizes = []struct {
	cpu    int64
	weight float64
}{{500, 0.3}, {1000, 0.35}, {2000, 0.25}, {4000, 0.1}}

// Generate builds workload name for cluster c over duration (simulated), mean pod run time
// meanRun, from seed.
func Generate(name string, c Cluster, duration, meanRun time.Duration, seed uint64, m Model) (Workload, error) {
	r := rand.New(rand.NewPCG(seed, 0x1ab5eed))
	w := Workload{Name: name}
	// Trace-driven usage: pods take the Google tasks in a seeded random order (again from the
	// start once all are taken); a task's job and the pod's kind make its workload.
	var perm []int
	type traced struct {
		cpu, mem   int64
		shape      *Shape
		shapeStart time.Duration
	}
	workloads := map[string]*traced{}
	if m.Traces != nil {
		perm = r.Perm(len(m.Traces.Tasks))
	}
	newWorkload := func() *traced {
		t := &traced{cpu: drawSize(r)}
		t.mem = t.cpu * int64(2+2*r.IntN(3)) << 30 / 1000
		t.shape = &m.Traces.Shapes[r.IntN(len(m.Traces.Shapes))]
		t.shapeStart = time.Duration(r.Float64() * float64(24*time.Hour))
		return t
	}
	total := float64(c.CPU) * float64(c.Nodes)
	// load is the share of allocatable cpu the steady arrivals aim at, at time t.
	var load func(t time.Duration) float64
	fragileShare := 0.0
	switch name {
	case WorkSteady:
		// Between 60 and 90 %: one slow swing over the run.
		load = func(t time.Duration) float64 { return 0.75 - 0.15*math.Cos(2*math.Pi*float64(t)/float64(duration)) }
	case WorkBurst:
		load = func(time.Duration) float64 { return 0.65 }
	case WorkReward:
		load = func(time.Duration) float64 { return 0.7 }
		fragileShare = 0.3
		// A quarter of the nodes (every fourth) fail the fragile pods.
		for i := 0; i < c.Nodes; i += 4 {
			w.BadNodes = append(w.BadNodes, nodeName(i))
		}
	case WorkGang:
		// A nearly full cluster: services at 82 %, plus the groups below (at 85 %, the groups'
		// noise on a 50-node cluster of 45 minutes took seed 2 to 109 %, out of its band).
		load = func(time.Duration) float64 { return 0.82 }
	default:
		return w, fmt.Errorf("unknown workload %q (known: %v)", name, Workloads)
	}
	add := func(arrive, run time.Duration, kind string) int64 {
		p := PodPlan{Index: len(w.Pods), Arrive: arrive, Duration: run, Type: kind}
		if m.Traces != nil {
			task := m.Traces.Tasks[perm[p.Index%len(perm)]]
			p.Workload, p.OwnerKind = "batch-"+task.Job, "Job"
			if kind == "service" {
				p.Workload, p.OwnerKind = "svc-"+task.Job, "ReplicaSet"
			}
			t := workloads[p.Workload]
			if t == nil {
				t = newWorkload()
				workloads[p.Workload] = t
			}
			p.CPU, p.Memory, p.Shape, p.ShapeStart = t.cpu, t.mem, t.shape, t.shapeStart
			p.CPURatio, p.MemRatio = task.CPURatio*m.CPUScale, task.MemRatio
		} else {
			p.CPU = drawSize(r)
			p.Memory = p.CPU * int64(2+2*r.IntN(3)) << 30 / 1000
			p.CPURatio, p.MemRatio = m.ratios(r)
		}
		if fragileShare > 0 && r.Float64() < fragileShare {
			p.Fragile, p.Type = true, "fragile"
		}
		w.Pods = append(w.Pods, p)
		return p.CPU
	}
	runFor := func(mean time.Duration) time.Duration {
		d := time.Duration(r.ExpFloat64() * float64(mean))
		return max(d, 2*time.Minute)
	}
	// Arrivals are counted in requested cpu, not in pods: the pods come as they are drawn (a
	// size per workload, and one workload may hold a third of the pods), until their requests
	// make the cpu wanted. A rate of pods computed from the sizes' mean would put a seed whose
	// largest workload drew 4 cpu at 130 % of the cluster and one that drew 500m at 50 %.
	//
	// The cluster starts at its target load: pods arriving over the first two minutes, with
	// remaining run times drawn from the same (memoryless) distribution.
	for budget := load(0) * total; budget > 0; {
		budget -= float64(add(time.Duration(r.Float64()*float64(2*time.Minute)), runFor(meanRun), "service"))
	}
	// Then, minute by minute, the requested cpu that holds the target load (the cpu of the pods
	// ending per minute at that load), carried over from minute to minute.
	carry := 0.0
	for t := time.Duration(0); t < duration; t += time.Minute {
		carry += load(t) * total / meanRun.Minutes()
		for carry > 0 {
			carry -= float64(add(t+time.Duration(r.Float64()*float64(time.Minute)), runFor(meanRun), "service"))
		}
	}
	if name == WorkBurst {
		// A burst: a fifth of the cluster's cpu in batch pods arriving within three minutes at
		// 40 % of the run, each running about half a mean run time.
		at := time.Duration(0.4 * float64(duration))
		for budget := 0.2 * total; budget > 0; {
			budget -= float64(add(at+time.Duration(r.Float64()*float64(3*time.Minute)), runFor(meanRun/2), "batch"))
		}
	}
	if name == WorkGang {
		// Pod groups of 2-16 members (1 or 2 cpu each, all started together, all needed), arriving
		// as a Poisson process at the rate that adds 10 % of the cluster's cpu.
		meanGroup := 9.0 * 1500
		rate := 0.1 * total / meanGroup / meanRun.Minutes()
		g := 0
		for t := time.Duration(0); t < duration; t += time.Minute {
			for range poisson(r, rate) {
				size, cpu := 2+r.IntN(15), int64(1000+1000*r.IntN(2))
				at, run := t+time.Duration(r.Float64()*float64(time.Minute)), runFor(meanRun)
				var shape *traced
				if m.Traces != nil {
					shape = newWorkload()
				}
				for range size {
					add(at, run, "member")
					p := &w.Pods[len(w.Pods)-1]
					p.CPU, p.Memory = cpu, cpu*4<<30/1000
					p.Group, p.GroupMin = fmt.Sprintf("group-%04d", g), size
					// A group is one workload (a Job), its members' ratios those of the tasks they took.
					p.Workload, p.OwnerKind = p.Group, "Job"
					if shape != nil {
						p.Shape, p.ShapeStart = shape.shape, shape.shapeStart
					}
				}
				g++
			}
		}
	}
	sort.SliceStable(w.Pods, func(i, j int) bool { return w.Pods[i].Arrive < w.Pods[j].Arrive })
	if m.Traces == nil {
		syntheticWorkloads(w.Pods, seed)
	}
	for i := range w.Pods {
		w.Pods[i].Name = fmt.Sprintf("%s-%05d", w.Pods[i].Type, w.Pods[i].Index)
	}
	return w, nil
}

// drawSize draws a pod's cpu request (millicores) from podSizes.
func drawSize(r *rand.Rand) int64 {
	x := r.Float64()
	for _, s := range podSizes {
		if x < s.weight {
			return s.cpu
		}
		x -= s.weight
	}
	return podSizes[len(podSizes)-1].cpu
}

// syntheticWorkloads gives the synthetic model's pods a workload (with a generator of their
// own, so that the pods stay those of the seed before workloads existed): gang members their
// group; the others one of ten workloads per kind and cpu request, at random. Their usage
// ratios stay drawn pod by pod: a workload says nothing of its pods' usage.
func syntheticWorkloads(pods []PodPlan, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x3011ab))
	for i := range pods {
		p := &pods[i]
		switch {
		case p.Group != "":
			p.Workload, p.OwnerKind = p.Group, "Job"
		case p.Type == "batch":
			p.Workload, p.OwnerKind = fmt.Sprintf("batch-%dm-%d", p.CPU, r.IntN(10)), "Job"
		default:
			p.Workload, p.OwnerKind = fmt.Sprintf("svc-%dm-%d", p.CPU, r.IntN(10)), "ReplicaSet"
		}
	}
}

// poisson draws a Poisson count of mean mu (normal approximation above 30).
func poisson(r *rand.Rand, mu float64) int {
	if mu > 30 {
		return max(0, int(math.Round(mu+math.Sqrt(mu)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-mu), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

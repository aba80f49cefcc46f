package pigeon

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// The simulation places streams of pods one by one through the agent's prioritize function on
// a cluster of identical nodes, sending each pod to a node of highest score (ties broken at
// random with a fixed seed, as kube-scheduler breaks them) and writing the new usage back into
// the nodes' requested-* annotations, as the original's annotator did. Two resources: cpu and
// memory.

const (
	simNodes     = 20
	simNodeCPU   = 16000    // millicores
	simNodeMemMi = 64 << 10 // MiB
)

type simPod struct {
	cpu   int64 // millicores
	memMi int64 // MiB
	small bool
}

var (
	podEqual = simPod{cpu: 1000, memMi: 4 << 10}
	podSmall = simPod{cpu: 100, memMi: 256, small: true}
	podLarge = simPod{cpu: 8000, memMi: 32 << 10}
)

type simCluster struct {
	agent   *Agent
	rng     *rand.Rand
	nodes   []*corev1.Node
	cpu     []int64 // millicores used
	memMi   []int64 // MiB used
	small   []int   // small pods per node
	uid     int
	nonFits int // pods that fit nowhere
}

func newSimCluster(t *testing.T, obj Objective, seed uint64) *simCluster {
	c := &simCluster{agent: newAgent(t, config(2, obj), nil), rng: rand.New(rand.NewPCG(seed, 2)),
		cpu: make([]int64, simNodes), memMi: make([]int64, simNodes), small: make([]int, simNodes)}
	for i := 0; i < simNodes; i++ {
		c.nodes = append(c.nodes, fixtures.MakeNode().Name(fmt.Sprintf("n%02d", i)).Allocatable(fixtures.Res{
			corev1.ResourceCPU: strconv.Itoa(simNodeCPU) + "m", corev1.ResourceMemory: strconv.Itoa(simNodeMemMi) + "Mi",
		}).Annotations(map[string]string{"requested-cpu": "0", "requested-memory": "0"}).Obj())
	}
	return c
}

// place schedules one pod and reports whether it found a node.
func (c *simCluster) place(p simPod) bool {
	c.uid++
	scores := score(c.agent, pod(strconv.Itoa(c.uid)).Req(fixtures.Res{
		corev1.ResourceCPU:    strconv.FormatInt(p.cpu, 10) + "m",
		corev1.ResourceMemory: strconv.FormatInt(p.memMi, 10) + "Mi",
	}).Obj(), c.nodes...)
	best, ties, pick := int64(0), 0, -1
	for i, s := range scores {
		switch {
		case s > best:
			best, ties, pick = s, 1, i
		case s == best && s > 0:
			ties++
			if c.rng.IntN(ties) == 0 {
				pick = i
			}
		}
	}
	if pick < 0 {
		c.nonFits++
		return false
	}
	c.cpu[pick] += p.cpu
	c.memMi[pick] += p.memMi
	if p.small {
		c.small[pick]++
	}
	c.nodes[pick].Annotations["requested-cpu"] = strconv.FormatInt(c.cpu[pick], 10)
	c.nodes[pick].Annotations["requested-memory"] = strconv.FormatInt(c.memMi[pick]<<20, 10)
	return true
}

// cpuStd is the standard deviation over nodes of the cpu utilization.
func (c *simCluster) cpuStd() float64 {
	var s1, s2 float64
	for _, u := range c.cpu {
		x := float64(u) / simNodeCPU
		s1, s2 = s1+x, s2+x*x
	}
	n := float64(len(c.cpu))
	return math.Sqrt(max(s2/n-(s1/n)*(s1/n), 0))
}

func (c *simCluster) nodesWithSmall() int {
	k := 0
	for _, s := range c.small {
		if s > 0 {
			k++
		}
	}
	return k
}

// largeThatFit places up to limit large pods and returns how many found a node.
func (c *simCluster) largeThatFit(limit int) int {
	k := 0
	for i := 0; i < limit; i++ {
		if c.place(podLarge) {
			k++
		}
	}
	return k
}

// simOrders is how many random orders (and tie-breaking sequences) each scenario is run with.
const simOrders = 12

// simEqual places 160 pods of 1 cpu / 4 GiB (half the cluster's cpu) and returns the largest
// standard deviation of the cpu utilization over nodes seen along the stream.
func simEqual(t *testing.T, obj Objective, seed uint64) float64 {
	c := newSimCluster(t, obj, seed)
	var worst float64
	for i := 0; i < 160; i++ {
		c.place(podEqual)
		worst = max(worst, c.cpuStd())
	}
	return worst
}

// simMixed places 240 small pods (100m / 256 MiB) and 12 large ones (8 cpu / 32 GiB) in a
// random order, then a later stream of up to 40 large pods. It returns the number of nodes
// holding small pods after the mixed stream, and how many later large pods still fit. warm
// first enters 100 pods of the same mix into the demand statistics without placing them, as
// seeding from a running cluster (or a long-running agent) does; cold starts from nothing.
func simMixed(t *testing.T, obj Objective, seed uint64, warm bool) (nodesWithSmall, laterLarge int) {
	c := newSimCluster(t, obj, seed)
	order := rand.New(rand.NewPCG(seed, 4))
	stream := make([]simPod, 0, 252)
	for i := 0; i < 240; i++ {
		stream = append(stream, podSmall)
	}
	for i := 0; i < 12; i++ {
		stream = append(stream, podLarge)
	}
	shuffle := func() { order.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] }) }
	shuffle()
	if warm {
		for i, p := range stream[:100] {
			d := vec{float64(p.cpu), float64(p.memMi)}
			c.agent.observe(pod(fmt.Sprint("warm-", i)).Req(nil).Obj(), &d, false)
		}
		shuffle()
	}
	for _, p := range stream {
		c.place(p)
	}
	if c.nonFits != 0 {
		t.Errorf("%s seed %d: %d pods of the mixed stream found no node; the scenario is meant to fit", obj, seed, c.nonFits)
	}
	return c.nodesWithSmall(), c.largeThatFit(40)
}

// summary is the mean, min and max of a few counts or values.
type summary struct{ mean, lo, hi float64 }

func summarize(xs []float64) summary {
	s := summary{lo: math.Inf(1), hi: math.Inf(-1)}
	for _, x := range xs {
		s.mean += x / float64(len(xs))
		s.lo, s.hi = min(s.lo, x), max(s.hi, x)
	}
	return s
}

func (s summary) count() string { return fmt.Sprintf("%.1f (%.0f-%.0f)", s.mean, s.lo, s.hi) }

// TestSimulation checks the behaviour the paper describes for A_BINPACK: equal-sized pods
// spread (the utilization spread stays close to LOAD_BALANCE's), a mix of very small and very
// large pods packs (the small pods end on fewer nodes than under LOAD_BALANCE). It logs the
// table of the README, including how many pods of a later stream of large pods still fit.
func TestSimulation(t *testing.T) {
	type row struct {
		equal                                      []float64
		coldNodes, coldLarge, warmNodes, warmLarge []float64
	}
	rows := map[Objective]*row{}
	objs := []Objective{ABinpack, LoadBalance, Consolidate, FewestNodes}
	for _, obj := range objs {
		r := &row{}
		for seed := uint64(1); seed <= simOrders; seed++ {
			r.equal = append(r.equal, simEqual(t, obj, seed))
			n, l := simMixed(t, obj, seed, false)
			r.coldNodes, r.coldLarge = append(r.coldNodes, float64(n)), append(r.coldLarge, float64(l))
			n, l = simMixed(t, obj, seed, true)
			r.warmNodes, r.warmLarge = append(r.warmNodes, float64(n)), append(r.warmLarge, float64(l))
		}
		rows[obj] = r
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d nodes of 16 cpu / 64 GiB; mean (min-max) over %d random orders\n", simNodes, simOrders)
	b.WriteString("| objective | equal pods: largest cpu std | mixed, cold: nodes with small pods | mixed, cold: later large pods that fit | mixed, warm: nodes with small pods | mixed, warm: later large pods that fit |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, obj := range objs {
		r := rows[obj]
		fmt.Fprintf(&b, "| %s | %.4f | %s | %s | %s | %s |\n", obj, summarize(r.equal).hi,
			summarize(r.coldNodes).count(), summarize(r.coldLarge).count(),
			summarize(r.warmNodes).count(), summarize(r.warmLarge).count())
	}
	t.Log(b.String())

	bp, lb := rows[ABinpack], rows[LoadBalance]
	// Equal pods: 160 pods of 1 cpu on 20 nodes of 16 cpu. LOAD_BALANCE keeps every node
	// within one pod of the others (std <= 0.5 * 1/16 = 0.03125). A_BINPACK must stay within
	// one pod's utilization (1/16 = 0.0625) of LOAD_BALANCE's spread all along, in every order.
	if got, lim := summarize(bp.equal).hi, summarize(lb.equal).hi+1.0/16; got > lim {
		t.Errorf("equal pods: A_BINPACK's largest cpu std %.4f exceeds LOAD_BALANCE's + 1/16 = %.4f: it does not spread", got, lim)
	}
	// Mixed pods: the small pods end on fewer nodes under A_BINPACK than under LOAD_BALANCE,
	// on average, whether the statistics start cold or warm, and never on more nodes.
	for i := range bp.coldNodes {
		if bp.coldNodes[i] > lb.coldNodes[i] || bp.warmNodes[i] > lb.warmNodes[i] {
			t.Errorf("order %d: small pods on %v/%v nodes (cold/warm) under A_BINPACK, %v/%v under LOAD_BALANCE",
				i+1, bp.coldNodes[i], bp.warmNodes[i], lb.coldNodes[i], lb.warmNodes[i])
		}
	}
	if summarize(bp.coldNodes).mean >= summarize(lb.coldNodes).mean || summarize(bp.warmNodes).mean >= summarize(lb.warmNodes).mean {
		t.Errorf("mixed pods: A_BINPACK does not pack the small pods on fewer nodes than LOAD_BALANCE")
	}
}

package main

import (
	"math"
	"sync"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// The descheduler's metrics collector (sigs.k8s.io/descheduler v0.36, metricscollector) reads
// every node's NodeMetrics every 5 s of real time, and keeps for each node a smoothed figure: the
// first read as it is, then at each read 0.9 x its figure + 0.1 x the value read. In a cluster
// that is a view about 50 s behind the node. In the lab, 5 s of real time are 5 x speed simulated
// seconds: unscaled, the view would lag 10 x 5 x speed simulated seconds (25 minutes at 30x), and
// the +descheduler runs would measure the lab's clock, not the descheduler.
//
// collectorClock scales it as the lab scales every other period: at each read of a node it
// answers the value that brings the collector's figure to where a cluster's collector would
// have it after the simulated time since the previous read (the reads it would have made, each
// moving a tenth of the way to the true usage). It reckons the collector's figure as the
// collector computes it. A value it would have to answer below 0 (the usage fell further than
// one read can follow) is answered as 0: the figure then moves as far as one read can, and
// follows over the next reads.
type collectorClock struct {
	speed float64
	now   func() time.Time

	mu    sync.Mutex
	nodes map[string]collected
}

// collected is the collector's figure of a node, as reckoned, and when it was last read.
type collected struct {
	at       time.Time
	cpu, mem float64
}

// collectorPeriod and collectorKeep are the descheduler's collection period (real time) and
// the share of its previous figure a read keeps.
const (
	collectorPeriod = 5 * time.Second
	collectorKeep   = 0.9
)

func newCollectorClock(speed float64) *collectorClock {
	return &collectorClock{speed: speed, now: time.Now, nodes: map[string]collected{}}
}

// read returns what to answer to the collector's read of node, whose true usage is u.
func (c *collectorClock) read(node string, u harness.ResourceUsage) harness.ResourceUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	prev, ok := c.nodes[node]
	if !ok {
		c.nodes[node] = collected{at: now, cpu: float64(u.MilliCPU), mem: float64(u.Memory)}
		return u
	}
	// The reads a cluster's collector makes in the simulated time since the previous read.
	reads := float64(now.Sub(prev.at)) * c.speed / float64(collectorPeriod)
	keep := math.Pow(collectorKeep, reads)
	answer := func(figure, usage float64) (answered, next float64) {
		want := keep*figure + (1-keep)*usage
		answered = math.Max(0, (want-collectorKeep*figure)/(1-collectorKeep))
		return answered, collectorKeep*figure + (1-collectorKeep)*answered
	}
	cpu, nextCPU := answer(prev.cpu, float64(u.MilliCPU))
	mem, nextMem := answer(prev.mem, float64(u.Memory))
	c.nodes[node] = collected{at: now, cpu: nextCPU, mem: nextMem}
	return harness.ResourceUsage{MilliCPU: int64(math.Round(cpu)), Memory: int64(math.Round(mem))}
}

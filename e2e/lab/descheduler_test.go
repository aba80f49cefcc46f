package main

import (
	"math"
	"testing"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/harness"
)

// TestCollectorClock runs the descheduler's collector arithmetic (first read as it is, then
// 0.9 x figure + 0.1 x read) on collectorClock's answers: at speed 1 the answers are the truth;
// at 30x one real read is 30 simulated ones, so the figure lands where a cluster's collector
// would be after 30 reads (2000 + (10000 - 2000) x (1 - 0.9^30) on a rise), and a fall deeper
// than one read can follow answers 0 and moves the figure a tenth of the way.
func TestCollectorClock(t *testing.T) {
	at := time.Unix(0, 0)
	clock := func(speed float64) *collectorClock {
		c := newCollectorClock(speed)
		c.now = func() time.Time { return at }
		return c
	}
	figure := 0.0
	collect := func(c *collectorClock, cpu int64, first bool) int64 {
		got := c.read("n", harness.ResourceUsage{MilliCPU: cpu, Memory: 1 << 30}).MilliCPU
		if first {
			figure = float64(got)
		} else {
			figure = 0.9*figure + 0.1*float64(got)
		}
		return got
	}

	c := clock(1)
	collect(c, 3000, true)
	for _, cpu := range []int64{5000, 1000, 1000, 7000} {
		at = at.Add(5 * time.Second)
		if got := collect(c, cpu, false); got != cpu {
			t.Errorf("speed 1: answered %d for a usage of %d, want the usage", got, cpu)
		}
	}

	c = clock(30)
	collect(c, 2000, true)
	at = at.Add(5 * time.Second)
	collect(c, 10000, false)
	if want := 2000 + 8000*(1-math.Pow(0.9, 30)); math.Abs(figure-want) > 1 {
		t.Errorf("speed 30, a rise: the collector's figure %.1f, want %.1f", figure, want)
	}
	before := figure
	at = at.Add(5 * time.Second)
	if got := collect(c, 0, false); got != 0 || math.Abs(figure-0.9*before) > 1 {
		t.Errorf("speed 30, a fall to 0: answered %d (want 0), figure %.1f (want %.1f)", got, figure, 0.9*before)
	}
}

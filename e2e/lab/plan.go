package main

import (
	"math"
	"time"

	"github.com/kube-safe-scheduler/extender/e2e/lab/reference"
)

// planFor is what the reference schedulers (Scheduler.Plan) are told of a run of w: every pod's
// true usage (rc.Model, seed) in each simulated minute from its arrival to the run's end, taken
// at the middle of the minute, its workload and given run time, and the clock: simulated time 0
// is start (real), running rc.Speed times real time, as the tracker's clock.
func planFor(rc RunConfig, w Workload, seed uint64, start time.Time) *reference.Plan {
	minutes := int(math.Ceil(rc.Duration.Minutes()))
	p := &reference.Plan{Start: start, Speed: rc.Speed, Minutes: minutes, Pods: make(map[string]*reference.PodUsage, len(w.Pods))}
	for i := range w.Pods {
		pp := &w.Pods[i]
		u := &reference.PodUsage{Workload: pp.Workload, Arrive: pp.Arrive.Minutes(), Run: pp.Duration.Minutes(), From: int(pp.Arrive / time.Minute)}
		for m := u.From; m < minutes; m++ {
			c, mem := rc.Model.Usage(seed, pp, time.Duration(m)*time.Minute+30*time.Second)
			u.CPU, u.Memory = append(u.CPU, math.Round(c)), append(u.Memory, math.Round(mem))
		}
		p.Pods[pp.Name] = u
	}
	return p
}

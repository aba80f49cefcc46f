// Package reference holds the lab's two reference schedulers, kube-scheduler Score plugins that
// know what no real scheduler can: Oracle, a clairvoyant greedy placement that knows every pod's
// usage over its life and puts each pod where it adds the least overload volume (usage above
// 90 % of allocatable), and WorkloadLevel, which knows each workload's true mean usage per pod and
// balances the nodes on it. They are the limit and the "perfect learner" the lab's schedulers
// are measured against (docs/quality.md), not products. Both read the lab's plan (Plan), which
// the lab writes for each run to the file LAB_PLAN names; e2e/lab/scheduler registers them.
package reference

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"
)

// PlanEnv is the variable naming the plan file (the lab sets it for the lab scheduler).
const PlanEnv = "LAB_PLAN"

// Plan is what the lab knows of a run: the real time of its simulated time 0, the speed of
// simulated time (simulated seconds per real second: simulated time t = (now - Start) x Speed,
// as the lab's clock), and every pod's true usage, minute by simulated minute.
type Plan struct {
	Start time.Time `json:"start"`
	Speed float64   `json:"speed"`
	// Minutes is the run's simulated length; a pod's series ends there.
	Minutes int `json:"minutes"`
	// Pods by name.
	Pods map[string]*PodUsage `json:"pods"`
}

// PodUsage is one pod's plan: its workload, the run time it is given (simulated minutes) and its
// true usage from minute From on (CPU[i], Memory[i]: millicores and bytes during simulated
// minute From+i), up to the run's end.
type PodUsage struct {
	Workload string    `json:"workload"`
	Arrive   float64   `json:"arrive"`
	Run      float64   `json:"run"`
	From     int       `json:"from"`
	CPU      []float64 `json:"cpu"`
	Memory   []float64 `json:"memory"`
}

// At is the pod's usage during simulated minute m (0 outside its series).
func (p *PodUsage) At(m int) (cpu, mem float64) {
	i := m - p.From
	if i < 0 || i >= len(p.CPU) {
		return 0, 0
	}
	return p.CPU[i], p.Memory[i]
}

// Validate checks a plan read from a file.
func (p *Plan) Validate() error {
	if p.Start.IsZero() || !(p.Speed > 0) || p.Minutes <= 0 {
		return fmt.Errorf("start %v, speed %v, minutes %d: want a start, a positive speed and minutes", p.Start, p.Speed, p.Minutes)
	}
	for name, u := range p.Pods {
		if len(u.CPU) != len(u.Memory) || u.Run <= 0 {
			return fmt.Errorf("pod %s: %d cpu and %d memory values, run %v", name, len(u.CPU), len(u.Memory), u.Run)
		}
	}
	return nil
}

// Now is the simulated time (minutes) at real time t.
func (p *Plan) Now(t time.Time) float64 {
	return t.Sub(p.Start).Minutes() * p.Speed
}

// ReadPlan reads and checks the plan file at path.
func ReadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}

// WritePlan writes p to path atomically (a reader never sees half a file).
func WritePlan(path string, p *Plan) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WorkloadMeans is each workload's true mean usage per pod: the mean, over its pods, of each
// pod's mean usage over its given life (from its arrival, as far as the plan goes).
func (p *Plan) WorkloadMeans() map[string][2]float64 {
	sum := map[string][2]float64{}
	count := map[string]int{}
	for _, u := range p.Pods {
		first := int(math.Floor(u.Arrive))
		last := min(p.Minutes, int(math.Ceil(u.Arrive+u.Run)))
		var c, m float64
		n := 0
		for t := first; t < last; t++ {
			x, y := u.At(t)
			c, m, n = c+x, m+y, n+1
		}
		if n == 0 {
			continue
		}
		s := sum[u.Workload]
		sum[u.Workload] = [2]float64{s[0] + c/float64(n), s[1] + m/float64(n)}
		count[u.Workload]++
	}
	out := map[string][2]float64{}
	for w, s := range sum {
		out[w] = [2]float64{s[0] / float64(count[w]), s[1] / float64(count[w])}
	}
	return out
}

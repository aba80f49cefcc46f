package safe

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

var _ framework.Explainer = (*Agent)(nil)

// Explain implements framework.Explainer: for every function, what safe read of each node for
// pod: per resource the utilization's mean mu and standard deviation sigma with the pod added,
// and the risk of exceeding the threshold (or why there is none), the threshold and the
// acceptable risk, and the pod's estimate (millicores and bytes) with its evidence; a node whose
// statistics are stale says so, with their age.
func (a *Agent) Explain(_ context.Context, _, _ string, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	c := a.newCall(pod) // never done(): explaining publishes no metric
	est := framework.Inputs{"cpu": c.d.cpu, "memory": c.d.memory, "requestCpu": c.fit.cpu, "requestMemory": c.fit.memory,
		"learned": c.learned}
	if ev := c.evidence(a.estimator); ev != "" {
		est["evidence"] = ev
	}
	// Boxed once, shared by every node's inputs: a decision log keeps up to
	// decisions.InputsKept nodes' inputs, so each node's own allocations count.
	threshold, acceptable := any(a.t), any(a.e)
	out := make([]framework.Inputs, len(nodes))
	for i, n := range nodes {
		cpu, memory, f := a.measureNode(n, c)
		in := framework.Inputs{
			"cpu": a.explainResource(&cpu), "memory": a.explainResource(&memory),
			"threshold": threshold, "acceptableRisk": acceptable, "podEstimate": est,
		}
		if f.stale {
			in["stale"] = a.staleReason(f)
		}
		if cpu.placedModel && (cpu.placedPods > 0 || cpu.placedGone > 0) {
			in["projected"] = a.contributors(n.Name, &cpu)
		}
		out[i] = in
	}
	return out
}

// measuredInputs is what explainResource shows of a measured resource: the JSON of the map
// {"mu", "risk", "sigma"} it replaces (the same keys, in the same order), in one allocation of
// 24 bytes instead of a map and three boxed numbers (about 400 bytes), per node and resource.
type measuredInputs struct {
	Mu    float64 `json:"mu"`
	Risk  float64 `json:"risk"`
	Sigma float64 `json:"sigma"`
}

// Unmeasured resources' inputs, shared: they never change.
var (
	noStatsInputs       any = framework.Inputs{"risk": "not judged: no usage statistics"}
	noAllocatableInputs any = framework.Inputs{"risk": 1.0, "why": "allocatable is zero or missing"}
)

func (a *Agent) explainResource(m *measure) any {
	switch m.state {
	case noStats:
		return noStatsInputs
	case noAllocatable:
		return noAllocatableInputs
	}
	return &measuredInputs{Mu: m.mu, Risk: a.risk(m), Sigma: m.sigma}
}

// contributors says what the node model projects node's cpu (m) at and its largest
// contributors, the pods now on it grouped by workload: "node-7 projected 13.1 of 16 cpu:
// deployment.shop.web x4 (p90 2.1 each), 2 pods at their request (0.5 each), residual 3.2".
// Only for a node whose model adds or takes off something (its pods are read again).
func (a *Agent) contributors(node string, m *measure) string {
	type group struct {
		name string
		n    int
		cpu  float64
	}
	var groups []*group
	byName := map[string]*group{}
	var sum float64
	if a.pods != nil {
		pods, _ := a.pods.PodsOn(node)
		for _, p := range pods {
			if isTerminated(p) {
				continue
			}
			e := a.estimator.Estimate(p)
			name := e.Source
			if !e.Learned {
				name = ""
			}
			g := byName[name]
			if g == nil {
				g = &group{name: name}
				byName[name] = g
				groups = append(groups, g)
			}
			g.n++
			g.cpu += e.CPU
			sum += e.CPU
		}
	}
	slices.SortFunc(groups, func(x, y *group) int {
		if c := cmp.Compare(y.cpu, x.cpu); c != 0 {
			return c
		}
		return cmp.Compare(x.name, y.name)
	})
	projected := max(m.capacity-m.free, 0) + m.placed
	cores := func(b []byte, v float64) []byte { return strconv.AppendFloat(b, v/1000, 'f', 1, 64) }
	b := append([]byte(node), " projected "...)
	b = cores(b, projected)
	b = append(b, " of "...)
	b = cores(b, m.capacity)
	b = append(b, " cpu:"...)
	for i, g := range groups {
		if i == 3 {
			b = append(b, " ..."...)
			break
		}
		if i > 0 {
			b = append(b, ',')
		}
		if g.name == "" {
			b = strconv.AppendInt(append(b, ' '), int64(g.n), 10)
			b = append(b, " pods at their request ("...)
		} else {
			b = append(append(append(b, ' '), g.name...), " x"...)
			b = strconv.AppendInt(b, int64(g.n), 10)
			b = strconv.AppendInt(append(b, " (p"...), int64(a.cfg.EstimatePercentile), 10)
			b = append(b, ' ')
		}
		b = cores(b, g.cpu/float64(g.n))
		b = append(b, " each)"...)
	}
	b = append(b, ", residual "...)
	b = cores(b, projected-sum)
	return string(b)
}

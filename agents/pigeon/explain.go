package pigeon

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

var _ framework.Explainer = (*Agent)(nil)

// Explain implements framework.Explainer: the objective, its value for the system as it is
// (objectiveBefore, the same for every node) and with the pod placed on each node
// (objectiveAfter), the prime resource's utilization of the node before and after, and whether
// the pod fits. It computes as prioritize does, from the demand statistics as they are,
// without entering the pod into them.
func (a *Agent) Explain(_ context.Context, _, _ string, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	m, prime := a.cfg.NumResources, a.cfg.ResourceIndex
	demand := a.res.demand(pod)
	synced := a.cluster != nil && a.cluster.HasSynced()
	a.mu.Lock()
	stats := a.stats
	a.mu.Unlock()
	if synced && a.pods != nil {
		a.sysMu.Lock() // gather reads and updates the kept system
		defer a.sysMu.Unlock()
	}
	sys, cands := a.gather(nodes, synced)
	avgCap := averageCapacity(m, sys)
	after, fit := evaluate(a.cfg.Objective, m, prime, sys, cands, &demand, stats.coefVar(m, &avgCap))

	utils := make([]vec, len(sys))
	used := 0
	for i := range sys {
		utils[i] = utilization(m, &sys[i].capacity, &sys[i].use)
		if inUse(m, &sys[i].use) {
			used++
		}
	}
	var before any = "no node in the system"
	if len(sys) > 0 {
		s := newSystem(m, prime, utils, a.cfg.Objective == Consolidate, used, stats.coefVar(m, &avgCap))
		u0 := inUse(m, &sys[0].use)
		before = objectives[a.cfg.Objective](s, &trial{before: utils[0], after: utils[0], usedBefore: u0, usedAfter: u0})
	}
	out := make([]framework.Inputs, len(nodes))
	for i := range cands {
		c := &cands[i]
		node := &c.node
		if c.index >= 0 {
			node = &sys[c.index]
		}
		var placed vec
		for j := 0; j < m; j++ {
			placed[j] = node.use[j] + demand[j]
		}
		u0, u1 := utilization(m, &node.capacity, &node.use), utilization(m, &node.capacity, &placed)
		out[i] = framework.Inputs{
			"objective": string(a.cfg.Objective), "objectiveBefore": before, "objectiveAfter": after[i], "fits": fit[i],
			"primeResource": string(a.res.names[prime]), "utilizationBefore": u0[prime], "utilizationAfter": u1[prime],
		}
	}
	return out
}

package safe

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// Prioritizers implements framework.Agent.
func (a *Agent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{
		{Name: PriorityOverload, Func: a.scoreOverload},
		// The relative balance ranks the nodes scored together (RelativeScores).
		{Name: PriorityBalance, Func: a.scoreBalance, WholeList: a.cfg.BalanceScale == BalanceRelative},
	}
}

// scorer scores one measured resource.
type scorer func(a *Agent, m measure) int64

func overloadScorer(a *Agent, m measure) int64 { return OverloadScore(a.risk(&m), a.e) }

func balanceScorer(_ *Agent, m measure) int64 { return BalanceScore(m.mu, m.sigma) }

// fineBalanceScorer is 1 - obj in millionths: the order of the objectives, for BalanceRelative.
func fineBalanceScorer(_ *Agent, m measure) int64 {
	return fineBalance(Level(m.free, m.capacity, m.demand+m.placed), m.sigma)
}

// scoreOverload scores the nodes by risk: see OverloadScore and NodeScore.
func (a *Agent) scoreOverload(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	return a.score(ctx, PriorityOverload, overloadSlot, pod, nodes, overloadScorer, nil), nil
}

// scoreBalance scores the nodes by utilization and spread: see BalanceScore and NodeScore.
func (a *Agent) scoreBalance(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	if a.cfg.BalanceScale != BalanceRelative {
		return a.score(ctx, PriorityBalance, balanceSlot, pod, nodes, balanceScorer, nil), nil
	}
	has := make([]bool, len(nodes))
	return RelativeScores(a.score(ctx, PriorityBalance, fineBalanceSlot, pod, nodes, fineBalanceScorer, has), has), nil
}

// score scores every node with the per-resource score of: a resource without statistics does
// not count, one without allocatable scores 0. Stale statistics count as none, whatever the
// Stale policy: a node with stale statistics scores 0. has, when not nil, is set for the nodes
// with some resource judged or unjudgeable (those NodeScore does not give 0 for want of any).
// slot is the scorer's place in classAnswers.scores.
// The nodes' positions in plugin mode's shared list are ctx's (framework.Positions).
func (a *Agent) score(ctx context.Context, name string, slot int, pod *corev1.Pod, nodes []*corev1.Node, of scorer, has []bool) []int64 {
	c := a.newCall(pod)
	at := c.positioned(ctx, nodes)
	defer a.done("priorities/"+name, c)
	a.placeSince(nodes, c)
	tbl := a.newTable(name, pod, c.d)
	out := make([]int64, len(nodes))
	a.eachNode(nodes, at, c, tbl, func(i int, n *corev1.Node, p *prepared, ca *classAnswers, j *judgement) {
		if ca != nil {
			m := ca.scores[slot].Load()
			if m == nil {
				j := ca.judged(p, c)
				m = &scoreMemo{}
				m.s, m.has = a.scoreFrom(j.cpu, j.memory, of)
				ca.scores[slot].Store(m)
			}
			out[i] = m.s
			if has != nil {
				has[i] = m.has
			}
			return
		}
		s, hasStats := a.scoreFrom(j.cpu, j.memory, of)
		out[i] = s
		if has != nil {
			has[i] = hasStats
		}
		if tbl != nil {
			tbl.node(n.Name, &j.cpu, &j.memory, strconv.FormatInt(s, 10))
		}
	})
	return out
}

// scoreOne is n's score by of (in: its inputs) for call c, computed per pod: the reference the
// prepared answers are held to, with whether some resource has statistics and the measures.
func (a *Agent) scoreOne(n *corev1.Node, in *nodeInputs, c *call, of scorer) (s int64, has bool, cpu, memory measure) {
	cpu, memory, _ = a.measure(n, in, c)
	s, has = a.scoreFrom(cpu, memory, of)
	return s, has, cpu, memory
}

// scoreFrom is the score by of of a node of measures cpu and memory, and whether some resource
// has statistics (or is unjudgeable).
func (a *Agent) scoreFrom(cpu, memory measure, of scorer) (int64, bool) {
	var cs, ms int64
	if cpu.state.judged() {
		cs = of(a, cpu)
	}
	if memory.state.judged() {
		ms = of(a, memory)
	}
	return NodeScore(cs, cpu.state != noStats, ms, memory.state != noStats), cpu.state != noStats || memory.state != noStats
}

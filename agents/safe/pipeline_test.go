package safe

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
)

// keptJudgement returns the judgement kept for pod's class of demand on n's prepared form, nil
// when there is none (nothing is created).
func keptJudgement(a *Agent, n *corev1.Node, pod *corev1.Pod) *judgement {
	p := a.entry(n).prepared.Load()
	if p == nil {
		return nil
	}
	k := classOf(a.newCall(pod))
	for i := range p.classes {
		if ca := p.classes[i].Load(); ca != nil && ca.key == k {
			return ca.judgement.Load()
		}
	}
	return nil
}

// TestFilterAndPrioritiesShareJudgement: the pipeline judges a prepared node once per class of
// demand (pipeline.go): the judgement the filter made is the one both priorities read, not made
// again, and the answers read off it are the per-pod computation's (judgeOne, scoreOne).
func TestFilterAndPrioritiesShareJudgement(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c := cycleNodes(60, now)
	a := cycleAgent(t, c, now)
	pod := cyclePod(1, [2]string{"1", "2Gi"})
	ctx := context.Background()

	verdicts := extendertest.Must(a.filterOverload(ctx, pod, c.nodes))
	made := make([]*judgement, len(c.nodes))
	for i, n := range c.nodes {
		if made[i] = keptJudgement(a, n, pod); made[i] == nil {
			t.Fatalf("%s: the filter kept no judgement", n.Name)
		}
	}
	overload := extendertest.Must(a.scoreOverload(ctx, pod, c.nodes))
	balance := extendertest.Must(a.scoreBalance(ctx, pod, c.nodes))
	var rejected int
	for i, n := range c.nodes {
		if got := keptJudgement(a, n, pod); got != made[i] {
			t.Errorf("%s: the priorities judged the node again", n.Name)
		}
		rc := a.newCall(pod)
		a.placeSince([]*corev1.Node{n}, rc)
		if v, _, _ := a.judgeOne(n, &a.entry(n).in, rc); v != verdicts[i] {
			t.Errorf("%s: verdict %+v, per pod %+v", n.Name, verdicts[i], v)
		}
		if !verdicts[i].Passes() {
			rejected++
		}
		if s, _, _, _ := a.scoreOne(n, &a.entry(n).in, rc, overloadScorer); s != overload[i] {
			t.Errorf("%s: safe-overload %d, per pod %d", n.Name, overload[i], s)
		}
		if s, _, _, _ := a.scoreOne(n, &a.entry(n).in, rc, balanceScorer); s != balance[i] {
			t.Errorf("%s: safe-balance %d, per pod %d", n.Name, balance[i], s)
		}
	}
	if rejected == 0 || rejected == len(c.nodes) {
		t.Errorf("%d of %d nodes rejected: the case must have both verdicts", rejected, len(c.nodes))
	}
}

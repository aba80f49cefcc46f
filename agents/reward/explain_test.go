package reward

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Explain shows the reward the score used and the observations behind it.
func TestExplain(t *testing.T) {
	a, _, c := newAgent(t, map[string]string{"REWARD_NAMESPACE": "ns"}, fake.NewClientset())
	a.table.observe("spark", "n1", 0, c.now())
	p := pod("p", "spark", "")
	nodes := []*corev1.Node{{}, {}}
	nodes[0].Name, nodes[1].Name = "n1", "n2"
	got := a.Explain(t.Context(), PriorityReward, "prioritize", p, nodes)
	if got[0]["type"] != "spark" || got[0]["n"] != 1 || got[0]["nAllTypes"] != 1 || got[0]["r"] != a.table.reward("spark", "n1", c.now()) {
		t.Errorf("n1: %v", got[0])
	}
	if got[1]["n"] != 0 || got[1]["r"] != a.cfg.Initial {
		t.Errorf("n2, never observed: %v, want n 0 and the initial reward %v", got[1], a.cfg.Initial)
	}
	if s, _ := a.score(t.Context(), p, nodes); s[0] != score(got[0]["r"].(float64)) {
		t.Errorf("score %d does not follow the r shown, %v", s[0], got[0]["r"])
	}
}

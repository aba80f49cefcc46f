package pigeon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
)

// TestHTTPBothRequestForms serves the agent through package server and checks that a request
// carrying full Node objects and one carrying NodeNames (resolved by the lookup) get the same
// answer, with and without cluster access. The cluster is handCluster's: LOAD_BALANCE scores
// A 10, B 1, C 0 (pod does not fit), D 7 (worked in TestLoadBalanceHandWorked).
func TestHTTPBothRequestForms(t *testing.T) {
	nodes := handCluster()
	cache := &fakeCluster{synced: true, nodes: nodes, allocated: map[string]framework.Amounts{
		"A": {corev1.ResourceCPU: 200}, "B": {corev1.ResourceCPU: 500}, "C": {corev1.ResourceCPU: 950}, "D": {corev1.ResourceCPU: 300},
	}}
	want := extenderv1.HostPriorityList{{Host: "A", Score: 10}, {Host: "B", Score: 1}, {Host: "C", Score: 0}, {Host: "D", Score: 7}}
	for _, tc := range []struct {
		name    string
		cluster framework.Cluster // the agent's; nil: usage from the annotations
	}{
		{name: "without cluster access"},
		{name: "with cluster access", cluster: cache},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := extendertest.NewHandler(t, cache, newAgent(t, config(1, LoadBalance), tc.cluster))
			p := cpuPod("p", 100)
			full := extendertest.Prioritize(t, h, PriorityPigeonHoling, extendertest.Args(p, nodes, false))
			byName := extendertest.Prioritize(t, h, PriorityPigeonHoling, extendertest.Args(p, nodes, true))
			if diff := cmp.Diff(want, full); diff != "" {
				t.Errorf("full nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(full, byName); diff != "" {
				t.Errorf("node names differ from full nodes (-full +names):\n%s", diff)
			}
		})
	}
}

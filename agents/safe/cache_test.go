package safe

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/cluster"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/nodestats"
)

// The extender's cluster cache keeps what the load placed since the statistics needs: a running
// pod bound before a node's statistics were taken is in them already and adds nothing, as
// through the test cluster (TestLoadPlacedSinceStatistics). Here the pods go through a real
// cluster.Cache (its transform strips the pods it keeps); when the transform dropped a running
// pod's PodScheduled condition, every running pod counted as just placed: the node below was
// rejected with "1 pods placed since the statistics add 8000m".
func TestPlacedLoadThroughTheCache(t *testing.T) {
	stamp := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	node := bigNode("n1", ann{nodestats.MeanFreeCPU: "8000", nodestats.StdFreeCPU: "400",
		nodestats.StatisticsTimestamp: stamp.Format(time.RFC3339)})
	// An 8-cpu pod bound an hour before the statistics, running since: its usage is in the
	// statistics' mean (8000 of 16000 free).
	running := boundPod("running", "8", "n1", stamp.Add(-time.Hour))
	running.Status.Phase = corev1.PodRunning
	running.Status.Conditions = append(running.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: running.Status.Conditions[0].LastTransitionTime})

	c := cluster.NewCache(fake.NewClientset(node, running), nil, framework.NewHandle(nil).Log)
	ctx, cancel := context.WithCancel(t.Context())
	stop := c.Start(ctx)
	t.Cleanup(func() { cancel(); stop() })
	wait, done := context.WithTimeout(t.Context(), time.Minute)
	defer done()
	if !c.WaitForSync(wait) {
		t.Fatal("the caches did not sync")
	}
	a := clusterAgent(t, DefaultConfig(), c)
	// mu = (16000 - 8000 + 1000) / 16000 = 0.5625 with the pod's 1 cpu: far below 0.9.
	v := extendertest.Must(a.filterOverload(context.Background(), makePod("1", "1Gi"), []*corev1.Node{node}))
	if !v[0].Passes() {
		t.Fatalf("node rejected: %s", v[0].Reason)
	}
}

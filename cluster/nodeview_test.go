package cluster

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/extendertest"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// capture is an agent whose filter keeps the nodes it is given.
type capture struct{ seen []*corev1.Node }

func (c *capture) Name() string { return "capture" }
func (c *capture) Filters() []framework.Filter {
	return []framework.Filter{{Name: "capture", Func: func(_ context.Context, _ *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
		c.seen = nodes
		return make([]framework.Verdict, len(nodes)), nil
	}}}
}
func (c *capture) Prioritizers() []framework.Prioritizer { return nil }

// The same node reaches an agent field for field the same through a full-node request (the
// server's lean decoding) and through a NodeNames request resolved by the informer cache (the
// cache's transform): both are framework.NodeView of the node.
func TestNodeViewSameInBothForms(t *testing.T) {
	node := fixtures.Node(7, map[string]string{"mean-free-cpu": "4000"})
	node.ResourceVersion = "" // set by the fake clientset; the request carries the stored one
	node.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	node.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	node.Spec.PodCIDR = "10.0.7.0/24"
	cache, _ := startCache(t, &node)
	stored, ok := cache.Node(node.Name)
	if !ok {
		t.Fatal("the cache does not hold the node")
	}
	if len(node.Status.Conditions) == 0 || len(node.Status.Images) == 0 || node.Status.NodeInfo.KubeletVersion == "" {
		t.Fatal("the fixture lacks the fields the view leaves out: the test would prove nothing")
	}

	agent := &capture{}
	h := extendertest.NewHandler(t, cache, agent)
	pod := fixtures.MakePod().Name("p").Namespace("ns").Obj()
	full := node.DeepCopy()
	full.ResourceVersion = stored.ResourceVersion
	extendertest.Filter(t, h, "capture", extendertest.Args(pod, []*corev1.Node{full}, false))
	fromRequest := agent.seen[0]
	extendertest.Filter(t, h, "capture", extendertest.Args(pod, []*corev1.Node{full}, true))
	fromCache := agent.seen[0]

	if diff := cmp.Diff(fromCache, fromRequest); diff != "" {
		t.Errorf("full-node request and cache differ (-cache +request):\n%s", diff)
	}
	if diff := cmp.Diff(framework.NodeView(full), fromRequest); diff != "" {
		t.Errorf("the request's node is not NodeView (-view +request):\n%s", diff)
	}
	if fromRequest.Status.Conditions != nil || fromRequest.Status.Images != nil || fromRequest.ManagedFields != nil {
		t.Error("the view keeps fields it leaves out")
	}
	if fromRequest.Spec.Taints == nil || fromRequest.Status.Addresses == nil || fromRequest.Annotations["mean-free-cpu"] != "4000" {
		t.Error("the view lost fields it keeps")
	}
}

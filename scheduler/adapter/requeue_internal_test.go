package adapter

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-safe-scheduler/extender/framework"
)

// TestRequeueHints: a filter that declares what may change its verdicts registers the node
// events of those changes, and its hint retries a rejected pod only when a declared part of a
// node changed; a filter that declares nothing registers every event.
func TestRequeueHints(t *testing.T) {
	if got := eventsFor(nil); len(got) != 1 || got[0].Event.Resource != fwk.WildCard || got[0].Event.ActionType != fwk.All {
		t.Errorf("undeclared: %+v, want every event", got)
	}
	on := &framework.RequeueOn{NodeAnnotations: []string{"mean-free-cpu"}, NodeAllocatable: true, PodScaleDown: true,
		Resources: []string{"taspolicies.v1alpha1.telemetry.intel.com"}}
	events := eventsFor(on)
	if len(events) != 3 {
		t.Fatalf("events %+v, want node, pod scale-down and the custom resource", events)
	}
	if e := events[0].Event; e.Resource != fwk.Node || e.ActionType != fwk.Add|fwk.UpdateNodeAnnotation|fwk.UpdateNodeAllocatable {
		t.Errorf("node event %+v", e)
	}
	if e := events[1].Event; e.Resource != fwk.Pod || e.ActionType != fwk.UpdatePodScaleDown {
		t.Errorf("pod event %+v", e)
	}
	if e := events[2].Event; e.Resource != "taspolicies.v1alpha1.telemetry.intel.com" || e.ActionType != fwk.All {
		t.Errorf("custom resource event %+v", e)
	}

	node := func(ann map[string]string, labels map[string]string, cpu string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: ann, Labels: labels},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
	}
	base := node(map[string]string{"mean-free-cpu": "1000", "other": "a"}, map[string]string{"l": "1"}, "4")
	hint := events[0].QueueingHintFn
	for _, c := range []struct {
		name     string
		old, new *corev1.Node
		want     fwk.QueueingHint
	}{
		{"node added", nil, base, fwk.Queue},
		{"node deleted", base, nil, fwk.QueueSkip},
		{"declared annotation changed", base, node(map[string]string{"mean-free-cpu": "9000", "other": "a"}, base.Labels, "4"), fwk.Queue},
		{"declared annotation removed", base, node(map[string]string{"other": "a"}, base.Labels, "4"), fwk.Queue},
		{"allocatable changed", base, node(base.Annotations, base.Labels, "8"), fwk.Queue},
		{"allocatable written differently, same amount", base, node(base.Annotations, base.Labels, "4000m"), fwk.QueueSkip},
		{"other annotation changed", base, node(map[string]string{"mean-free-cpu": "1000", "other": "b"}, base.Labels, "4"), fwk.QueueSkip},
		{"labels changed, not declared", base, node(base.Annotations, map[string]string{"l": "2"}, "4"), fwk.QueueSkip},
	} {
		var oldObj, newObj any
		if c.old != nil {
			oldObj = c.old
		}
		if c.new != nil {
			newObj = c.new
		}
		got, err := hint(klog.Background(), &corev1.Pod{}, oldObj, newObj)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	on.NodeLabels = true
	if got, _ := eventsFor(on)[0].QueueingHintFn(klog.Background(), &corev1.Pod{}, base, node(base.Annotations, map[string]string{"l": "2"}, "4")); got != fwk.Queue {
		t.Errorf("labels declared and changed: %v, want Queue", got)
	}
}

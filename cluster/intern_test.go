package cluster

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func sameMap(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Two replicas of a workload (equal labels and requests, maps of their own) share one label map
// and one request list once stripped; a pod that differs keeps its own, equal to its original.
func TestStripSharesEqualLabelsAndRequests(t *testing.T) {
	in := &interner{}
	saved := shared
	shared = in
	t.Cleanup(func() { shared = saved })

	replica := func(name, cpu string) *corev1.Pod {
		p := makePod(name, "n1", cpu, "64Mi")
		p.Labels = map[string]string{"app": "web", "pod-template-hash": "5d8f7"}
		return p
	}
	a, b := stripPod(replica("a", "100m")), stripPod(replica("b", "100m"))
	if !sameMap(a.Labels, b.Labels) {
		t.Error("equal label maps are not shared")
	}
	ra, rb := a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests
	if !sameMap(ra, rb) {
		t.Error("equal request lists are not shared")
	}

	other := replica("c", "200m")
	other.Labels["pod-template-hash"] = "6c9b1"
	c := stripPod(other)
	if sameMap(c.Labels, a.Labels) || !reflect.DeepEqual(c.Labels, other.Labels) {
		t.Errorf("labels %v, want its own %v", c.Labels, other.Labels)
	}
	rc := c.Spec.Containers[0].Resources.Requests
	if sameMap(rc, ra) || rc.Cpu().MilliValue() != 200 {
		t.Errorf("requests %v, want its own 200m", rc)
	}
	if a.Labels["pod-template-hash"] != "5d8f7" {
		t.Errorf("a's labels changed: %v", a.Labels)
	}
}

// Quantities equal in value but written in another format are not merged: an agent reading the
// list sees the format the pod was written with.
func TestInternKeepsFormats(t *testing.T) {
	in := &interner{}
	dec := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1G")}
	bin := corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(1_000_000_000, resource.BinarySI)}
	if got := in.ResourceList(dec); !sameMap(got, dec) {
		t.Fatal("the first list seen is not the one returned")
	}
	if got := in.ResourceList(bin); sameMap(got, dec) {
		t.Errorf("1G (DecimalSI) and 1000000000 (BinarySI) were merged")
	}
	// Keys that only a separator tells apart.
	l1 := in.Labels(map[string]string{"a": "bc"})
	l2 := in.Labels(map[string]string{"ab": "c"})
	if sameMap(l1, l2) {
		t.Error(`{a: bc} and {ab: c} were merged`)
	}
}

// The tables stay bounded: past internMax distinct values they start afresh, and what was
// shared before stays valid.
func TestInternBounded(t *testing.T) {
	in := &interner{}
	first := in.Labels(map[string]string{"app": "first"})
	for i := range internMax + 10 {
		in.Labels(map[string]string{"app": fmt.Sprint(i)})
		if n := len(in.labels); n > internMax {
			t.Fatalf("%d label sets kept, more than %d", n, internMax)
		}
	}
	if first["app"] != "first" {
		t.Errorf("a shared map changed: %v", first)
	}
	if len(in.labels) != 11 {
		t.Errorf("%d label sets after the restart, want the 11 seen since", len(in.labels))
	}
}

package cluster

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-safe-scheduler/extender/framework"
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

// Replicas share their stripped containers and controller reference; a pod whose containers
// differ in any kept field (a request, a name, a restart policy) or whose controller differs
// keeps its own, equal to what stripping alone gives.
func TestStripSharesContainersAndOwners(t *testing.T) {
	in := &interner{}
	saved := shared
	shared = in
	t.Cleanup(func() { shared = saved })

	always := corev1.ContainerRestartPolicyAlways
	replica := func(name, cpu, rs string, change func(*corev1.Pod)) *corev1.Pod {
		p := makePod(name, "n1", cpu, "64Mi", "50m", "32Mi")
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: types.UID("uid-" + name), Controller: &yes}}
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}
		if change != nil {
			change(p)
		}
		return p
	}
	a, b := stripPod(replica("a", "100m", "web-1", nil)), stripPod(replica("b", "100m", "web-1", nil))
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || &a.Spec.InitContainers[0] != &b.Spec.InitContainers[0] {
		t.Error("equal containers are not shared")
	}
	if &a.OwnerReferences[0] != &b.OwnerReferences[0] {
		t.Error("equal controller references are not shared")
	}

	for name, change := range map[string]func(*corev1.Pod){
		"request": func(p *corev1.Pod) {
			p.Spec.Containers[1].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("33Mi")
		},
		"name":           func(p *corev1.Pod) { p.Spec.Containers[1].Name = "other" },
		"restart policy": func(p *corev1.Pod) { p.Spec.InitContainers[0].RestartPolicy = &always },
		"one container":  func(p *corev1.Pod) { p.Spec.Containers = p.Spec.Containers[:1] },
	} {
		orig := replica("c", "100m", "web-1", change)
		want := stripContainers(orig.Spec.Containers) // what stripping gives, shared or not
		c := stripPod(orig)
		if reflect.DeepEqual(c.Spec.Containers, a.Spec.Containers) && reflect.DeepEqual(c.Spec.InitContainers, a.Spec.InitContainers) {
			t.Errorf("%s: containers equal to a's", name)
		}
		if !reflect.DeepEqual(c.Spec.Containers, want) {
			t.Errorf("%s: containers %+v, want %+v", name, c.Spec.Containers, want)
		}
	}
	c := stripPod(replica("c", "100m", "web-2", nil))
	if c.OwnerReferences[0].Name != "web-2" || &c.OwnerReferences[0] == &a.OwnerReferences[0] {
		t.Errorf("another controller: %+v", c.OwnerReferences)
	}
	if a.OwnerReferences[0].Name != "web-1" || a.OwnerReferences[0].UID != "" {
		t.Errorf("a's controller reference: %+v", a.OwnerReferences)
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

// Two nodes of one type share their capacity and allocatable lists and the strings of their
// label keys and values and annotation keys; what they hold is NodeView's, unchanged.
func TestStripNodeSharesStrings(t *testing.T) {
	in := &interner{}
	saved := shared
	shared = in
	t.Cleanup(func() { shared = saved })

	// Strings of their own, as decoding gives each node.
	own := func(s string) string { return string([]byte(s)) }
	node := func(name, stat string) *corev1.Node {
		n := makeNode(name, "4", "8Gi")
		n.Labels = map[string]string{own("kubernetes.io/os"): own("linux")}
		n.Annotations = map[string]string{own("mean-free-cpu"): stat}
		return n
	}
	an, bn := node("a", "1000"), node("b", "2000")
	a, b := stripNode(an), stripNode(bn)
	if !sameMap(a.Status.Capacity, b.Status.Capacity) || !sameMap(a.Status.Allocatable, b.Status.Allocatable) {
		t.Error("equal capacity or allocatable lists are not shared")
	}
	keyData := func(m map[string]string) (k, v *byte) {
		for key, val := range m {
			return unsafe.StringData(key), unsafe.StringData(val)
		}
		return nil, nil
	}
	ak, av := keyData(a.Labels)
	bk, bv := keyData(b.Labels)
	if ak != bk || av != bv {
		t.Error("label keys and values are not shared")
	}
	ak, _ = keyData(a.Annotations)
	bk, _ = keyData(b.Annotations)
	if ak != bk {
		t.Error("annotation keys are not shared")
	}
	for _, tc := range []struct{ orig, got *corev1.Node }{{an, a}, {bn, b}} {
		if !reflect.DeepEqual(framework.NodeView(tc.orig), tc.got) {
			t.Errorf("%s: stripped %+v, want NodeView's %+v", tc.orig.Name, tc.got, framework.NodeView(tc.orig))
		}
	}
}

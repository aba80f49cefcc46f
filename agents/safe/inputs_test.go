package safe

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

// cachedNode returns node "n" of 4 cpus at resourceVersion rv with the mean-free-cpu annotation.
func cachedNode(rv, meanFreeCPU string) *corev1.Node {
	return fixtures.MakeNode().Name("n").ResourceVersion(rv).Annotation("mean-free-cpu", meanFreeCPU).
		Allocatable(fixtures.Res{corev1.ResourceCPU: "4"}).Obj()
}

// The cache serves a node's inputs only at the resourceVersion they were read at: an updated
// node is read again, and a node without a resourceVersion is always read.
func TestInputCacheFollowsResourceVersion(t *testing.T) {
	a, err := New(DefaultConfig(), framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := demand{cpu: 0}
	// 4000m allocatable, 3000m free: mu = (4000-3000)/4000 = 0.25.
	if cpu, _, _ := a.measureNode(cachedNode("1", "3000"), &call{d: d}); cpu.mu != 0.25 {
		t.Fatalf("rv 1: mu %v, want 0.25", cpu.mu)
	}
	// Same resourceVersion, different annotation: the cached inputs are served (an object
	// at one resourceVersion never changes, so this cannot happen with real nodes).
	if cpu, _, _ := a.measureNode(cachedNode("1", "1000"), &call{d: d}); cpu.mu != 0.25 {
		t.Errorf("rv 1 again: mu %v, want the cached 0.25", cpu.mu)
	}
	// A new resourceVersion is read: 1000m free gives mu = 3000/4000 = 0.75.
	if cpu, _, _ := a.measureNode(cachedNode("2", "1000"), &call{d: d}); cpu.mu != 0.75 {
		t.Errorf("rv 2: mu %v, want 0.75", cpu.mu)
	}
	// No resourceVersion: never cached. 2000m free gives mu = 0.5, then 0 free gives 1.
	if cpu, _, _ := a.measureNode(cachedNode("", "2000"), &call{d: d}); cpu.mu != 0.5 {
		t.Errorf("no rv: mu %v, want 0.5", cpu.mu)
	}
	if cpu, _, _ := a.measureNode(cachedNode("", "0"), &call{d: d}); cpu.mu != 1 {
		t.Errorf("no rv again: mu %v, want 1", cpu.mu)
	}
}

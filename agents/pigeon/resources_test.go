package pigeon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
)

func TestUnits(t *testing.T) {
	r := newResources(Config{NumResources: 5, GPUResource: "example.com/gpu"})
	n := fixtures.MakeNode().Name("n").Allocatable(fixtures.Res{
		corev1.ResourceCPU: "3500m", corev1.ResourceMemory: "8Gi", corev1.ResourcePods: "110",
		"example.com/gpu": "2", "nvidia.com/gpu": "9", corev1.ResourceEphemeralStorage: "100Gi",
	}).Annotations(map[string]string{
		"requested-cpu": "1250", "requested-memory": "1073741824", "requested-pods": "3",
		"requested-gpu": "1", "requested-ephemeral-storage": "536870912",
	}).Obj()
	// 3500 millicores, 8 GiB = 8192 MiB, 110 pods, 2 of the configured gpu (nvidia.com/gpu is
	// not it), 100 GiB
	if diff := cmp.Diff(vec{3500, 8192, 110, 2, 100}, r.capacity(n)); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	// 1250 millicores, 2^30 bytes = 1024 MiB, 3 pods, 1 gpu, 2^29 bytes = 0.5 GiB
	use, bad := r.fromAnnotations(n)
	if diff := cmp.Diff(vec{1250, 1024, 3, 1, 0.5}, use); diff != "" || bad != -1 {
		t.Errorf("annotations (bad %d) (-want +got):\n%s", bad, diff)
	}
	// The same from the cache's amounts (cpu in millicores, the rest in base units).
	amounts := framework.Amounts{corev1.ResourceCPU: 1250, corev1.ResourceMemory: 1 << 30, corev1.ResourcePods: 3,
		"example.com/gpu": 1, corev1.ResourceEphemeralStorage: 1 << 29}
	if diff := cmp.Diff(vec{1250, 1024, 3, 1, 0.5}, r.fromAmounts(amounts)); diff != "" {
		t.Errorf("amounts (-want +got):\n%s", diff)
	}
	// With NUM_RESOURCES=2 only cpu and memory are read.
	if diff := cmp.Diff(vec{3500, 8192}, newResources(config(2, ABinpack)).capacity(n)); diff != "" {
		t.Errorf("capacity, 2 resources (-want +got):\n%s", diff)
	}
}

func TestBadAnnotations(t *testing.T) {
	r := newResources(config(2, ABinpack))
	for _, raw := range []string{"lots", "-5", "NaN", "+Inf", "1e400"} {
		n := fixtures.MakeNode().Name("n").Annotation("requested-cpu", "100").Annotation("requested-memory", raw).Obj()
		use, bad := r.fromAnnotations(n)
		// the bad memory annotation counts as 0 and is reported; cpu is read
		if use != (vec{100, 0}) || bad != resMemory {
			t.Errorf("requested-memory %q: usage %v bad %d, want [100 0] and %d", raw, use, bad, resMemory)
		}
	}
	// missing annotations are 0 and not an error
	if use, bad := r.fromAnnotations(fixtures.MakeNode().Name("n").Obj()); use != (vec{}) || bad != -1 {
		t.Errorf("no annotations: usage %v bad %d", use, bad)
	}
}

func TestDemand(t *testing.T) {
	r := newResources(Config{NumResources: 5, GPUResource: "nvidia.com/gpu"})
	tests := []struct {
		name string
		pod  *corev1.Pod
		want vec
	}{
		// no requests: cpu 10m, memory 16 MiB, pods 1
		{name: "best effort", pod: pod("a").Req(nil).Obj(), want: vec{10, 16, 1, 0, 0}},
		// 1500m, 1 GiB = 1024 MiB, 1 pod, 2 gpus, 2 GiB of ephemeral storage
		{name: "everything", pod: pod("b").Req(fixtures.Res{
			corev1.ResourceCPU: "1500m", corev1.ResourceMemory: "1Gi", "nvidia.com/gpu": "2",
			corev1.ResourceEphemeralStorage: "2Gi",
		}).Obj(), want: vec{1500, 1024, 1, 2, 2}},
		// memory only: cpu floored to 10m
		{name: "memory only", pod: pod("c").Req(fixtures.Res{corev1.ResourceMemory: "64Mi"}).Obj(),
			want: vec{10, 64, 1, 0, 0}},
		// an init container larger than the containers sets the request (kube-scheduler's rule):
		// max(200m, 700m) = 700m; memory max(0, 0) floored to 16
		{name: "init container", pod: withInit(pod("d").Req(fixtures.Res{corev1.ResourceCPU: "200m"}).Obj(), "700m"),
			want: vec{700, 16, 1, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.demand(tc.pod)); diff != "" {
				t.Errorf("demand (-want +got):\n%s", diff)
			}
		})
	}
	// With one resource only cpu is filled.
	if diff := cmp.Diff(vec{10}, newResources(config(1, ABinpack)).demand(pod("e").Req(nil).Obj())); diff != "" {
		t.Errorf("one resource (-want +got):\n%s", diff)
	}
}

func withInit(p *corev1.Pod, cpu string) *corev1.Pod {
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
	}}}
	return p
}

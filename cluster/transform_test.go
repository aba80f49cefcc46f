package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// TestStripPodKeepsRequests checks that the stripped pod asks for exactly what the original
// asks for, on pods exercising every input of PodRequests.
func TestStripPodKeepsRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	cases := map[string]*corev1.Pod{
		"containers": makePod("a", "n1", "100m", "64Mi", "250m", "1Gi"),
		// Init container bigger than the containers: max(300m, 100m+...) decides.
		"init containers": func() *corev1.Pod {
			p := makePod("b", "n1", "100m", "64Mi")
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"sh"},
				Resources: corev1.ResourceRequirements{Requests: rl("300m", "32Mi")}}}
			return p
		}(),
		// A restartable init container (sidecar) adds to the containers' sum.
		"sidecar": func() *corev1.Pod {
			p := makePod("c", "n1", "100m", "64Mi")
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always,
				Resources: corev1.ResourceRequirements{Requests: rl("50m", "16Mi")}}}
			return p
		}(),
		"overhead": func() *corev1.Pod {
			p := makePod("d", "n1", "100m", "64Mi")
			p.Spec.Overhead = rl("10m", "8Mi")
			return p
		}(),
		"pod-level resources": func() *corev1.Pod {
			p := makePod("e", "n1", "100m", "64Mi")
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("2", "2Gi"), Limits: rl("4", "4Gi")}
			return p
		}(),
		"extended resource": func() *corev1.Pod {
			p := makePod("f", "n1", "100m", "64Mi")
			p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("2")
			return p
		}(),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			want := framework.PodRequests(p)
			got := framework.PodRequests(stripPod(p))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests differ after stripping (-original +stripped):\n%s", diff)
			}
		})
	}
}

func TestStripPodDropsTheRest(t *testing.T) {
	now := metav1.Now()
	p := makePod("a", "n1", "100m", "64Mi")
	p.ResourceVersion = "42"
	p.DeletionTimestamp = &now
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{Name: "other"},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: &yes, BlockOwnerDeletion: &yes}}
	p.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "r", Message: "m"},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar", Ready: true}, {
		Name: "c0", RestartCount: 2, Image: "busybox", ImageID: "sha256:x", ContainerID: "containerd://1", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", Message: "boom", StartedAt: now, FinishedAt: now}},
	}}
	p.Status.PodIP = "10.0.0.1"

	stored, err := strip(p)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := stored.(*podRecord)
	if !ok {
		t.Fatalf("strip stored a %T, want a *podRecord", stored)
	}
	got := rec.pod()
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "42",
			Labels: map[string]string{"app": "a"}, DeletionTimestamp: &now,
			// The controller's reference alone, for the pod's workload.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{
			Name: "c0", Resources: corev1.ResourceRequirements{Requests: p.Spec.Containers[0].Resources.Requests}}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			// Running: PodScheduled stays, its time is when the pod was bound (safe's load placed
			// since the statistics: without it every running pod would count as just placed).
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "c0", RestartCount: 2,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					StartedAt: now, FinishedAt: now}},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripped pod (-want +got):\n%s", diff)
	}
	// Idempotent, as client-go asks of a transform: a record passes through.
	if again, _ := strip(rec); again != any(rec) {
		t.Errorf("stripping a record gave %v, want the record itself", again)
	}
}

// A pending pod keeps its PodScheduled condition (when it was bound), not a Ready=False one.
func TestStripPendingPod(t *testing.T) {
	now := metav1.Now()
	p := makePod("a", "n1", "100m", "64Mi")
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "r"},
	}
	got := stripPod(p)
	want := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	if diff := cmp.Diff(want, got.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got.Status.ContainerStatuses != nil {
		t.Errorf("statuses %v, want none", got.Status.ContainerStatuses)
	}
}

func TestStripNode(t *testing.T) {
	n := makeNode("n1", "4", "8Gi")
	want := n.DeepCopy()
	want.ManagedFields = nil
	want.Status.Images = nil
	got, err := strip(n)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripped node (-want +got):\n%s", diff)
	}
	// Other objects pass through untouched.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ManagedFields: []metav1.ManagedFieldsEntry{{}}}}
	if out, _ := strip(cm); out != any(cm) || len(cm.ManagedFields) != 1 {
		t.Errorf("a ConfigMap was changed: %v", out)
	}
}

// stripPod is what the cache gives back of p: its record, made into a pod.
func stripPod(p *corev1.Pod) *corev1.Pod { return recordPod(p).pod() }

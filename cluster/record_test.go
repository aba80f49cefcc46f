package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// strippedPod is what the cache kept of a pod before it kept records (the transform's pod of
// commit 53bc264), and spec.schedulingGroup, kept since (gang's KeyOf reads it): the reference
// a record must give back exactly.
func strippedPod(p *corev1.Pod) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         shared.String(p.Namespace),
			Name:              p.Name,
			UID:               p.UID,
			ResourceVersion:   p.ResourceVersion,
			Labels:            shared.Labels(p.Labels),
			DeletionTimestamp: p.DeletionTimestamp,
			OwnerReferences:   controllerRef(p),
		},
		Spec: corev1.PodSpec{
			NodeName:        p.Spec.NodeName,
			Containers:      stripContainers(p.Spec.Containers),
			InitContainers:  stripContainers(p.Spec.InitContainers),
			Overhead:        shared.ResourceList(p.Spec.Overhead),
			Resources:       podResources(p.Spec.Resources),
			SchedulingGroup: p.Spec.SchedulingGroup,
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodPhase(shared.String(string(p.Status.Phase))),
			Conditions:        stripConditions(p),
			ContainerStatuses: stripContainerStatuses(p.Status.ContainerStatuses),
		},
	}
}

// anyPod draws a pod over everything the transform reads or drops: with or without a
// namespace, labels, a deletion timestamp, owners, containers, init containers, overhead,
// pod-level resources, a scheduling group, any phase, zero to five conditions of every type and status (repeats
// included: more than a record holds inline), and container statuses with and without restarts.
func anyPod(r *rand.Rand, i int) *corev1.Pod {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	at := metav1.NewTime(time.Unix(1_800_000_000+int64(r.IntN(1000)), 0))
	p := makePod(fmt.Sprintf("p%d", i), pick("", "n1", "n2"), pick("100m", "1"), pick("64Mi", "1Gi"))
	p.Namespace = pick("ns", "", "other")
	p.ResourceVersion = fmt.Sprint(r.IntN(1000))
	p.UID = types.UID(fmt.Sprint("uid-", i))
	if r.IntN(3) == 0 {
		p.Labels = nil
	}
	if r.IntN(4) == 0 {
		p.DeletionTimestamp = &at
	}
	yes := true
	switch r.IntN(3) {
	case 1:
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: pick("a", "b"), Controller: &yes}}
	case 2:
		p.OwnerReferences = []metav1.OwnerReference{{Name: "not-the-controller"}}
	}
	if r.IntN(3) == 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(pick("10m", "2"))}}}}
	}
	if r.IntN(4) == 0 {
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Mi")}
	}
	if r.IntN(4) == 0 {
		name := pick("a", "b")
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	}
	if r.IntN(4) == 0 {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}
	}
	p.Status.Phase = corev1.PodPhase(pick("Pending", "Running", "Succeeded", "Failed", "Unknown"))
	for range r.IntN(6) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type:   corev1.PodConditionType(pick("Ready", "PodScheduled", "ContainersReady", "Initialized")),
			Status: corev1.ConditionStatus(pick("True", "False", "Unknown")), LastTransitionTime: at,
			Reason: "r", Message: "m",
		})
	}
	for j := range r.IntN(3) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: fmt.Sprint("c", j), RestartCount: int32(r.IntN(3)), Image: "x",
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: at, FinishedAt: at}},
		})
	}
	return p
}

// A record gives back exactly what the transform kept of a pod before records, for pods drawn
// over every field it reads; its key is the pod's cache key, also through the informer's key
// function (meta.Accessor on the record); stripping a record leaves it as it is.
func TestRecordIsWhatStripKept(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	inline, more := 0, 0
	for i := range 3000 {
		p := anyPod(r, i)
		want := strippedPod(p)
		rec := recordPod(p)
		if diff := cmp.Diff(want, rec.pod()); diff != "" {
			t.Fatalf("pod %d: record's pod differs from the stripped pod (-want +got):\n%s", i, diff)
		}
		if rec.moreConds != nil {
			more++
		} else if rec.nConds > 0 {
			inline++
		}
		wantKey, _ := cache.MetaNamespaceKeyFunc(p)
		if rec.key() != wantKey {
			t.Fatalf("pod %d: key %q, want %q", i, rec.key(), wantKey)
		}
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(rec); err != nil || k != wantKey {
			t.Fatalf("pod %d: the informer's key of the record %q (%v), want %q", i, k, err, wantKey)
		}
		if again, _ := strip(rec); again != any(rec) {
			t.Fatalf("pod %d: stripping the record gave %v", i, again)
		}
		if _, ok := rec.DeepCopyObject().(*podRecord); !ok || rec.GetObjectKind().GroupVersionKind().Kind != "" {
			t.Fatalf("pod %d: the record's copy is not a record, or it has a kind", i)
		}
	}
	// Both ways of keeping conditions were drawn.
	if inline < 100 || more < 10 {
		t.Fatalf("%d records kept their conditions inline, %d in a list: draw more of each", inline, more)
	}
}

// A record is the smaller part of what a stored pod was: a corev1.Pod is 1240 bytes before its
// conditions (and any Go allocation of it 1280); a record with its conditions inline, at most 384
// (one size class), or the 50,000-pod figures of docs/results/performance-history.md ("The cache
// keeps a record of each pod") no longer hold.
func TestRecordIsSmall(t *testing.T) {
	if got := unsafe.Sizeof(podRecord{}); got > 384 {
		t.Fatalf("a podRecord is %d bytes, want at most 384", got)
	}
}

// Handlers added through PodEvents get pods, also in a tombstone, whatever the informer stored.
func TestEventPod(t *testing.T) {
	p := makePod("a", "n1", "100m", "64Mi")
	rec := recordPod(p)
	if got, ok := eventPod(rec).(*corev1.Pod); !ok || got.Name != "a" || got.Spec.NodeName != "n1" {
		t.Fatalf("eventPod(record) = %v", eventPod(rec))
	}
	tomb, ok := eventPod(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: rec}).(cache.DeletedFinalStateUnknown)
	if !ok || tomb.Key != "ns/a" {
		t.Fatalf("tombstone: %v", tomb)
	}
	if got, ok := tomb.Obj.(*corev1.Pod); !ok || got.Name != "a" {
		t.Fatalf("tombstone's object %T, want the pod", tomb.Obj)
	}
	if eventPod(p) != any(p) {
		t.Fatal("a pod was not passed as it is")
	}
}

// PodsWhere gives exactly the pods of Pods that keep accepts, given each pod's namespace and
// labels; terminated pods never.
func TestPodsWhereIsPodsFiltered(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	s := NewCache(fake.NewClientset(), nil, quietLog())
	for i := range 500 {
		if err := s.pods.GetStore().Add(recordPod(anyPod(r, i))); err != nil {
			t.Fatal(err)
		}
	}
	keep := func(namespace string, labels map[string]string) bool {
		return namespace == "ns" && labels["app"] != "" && labels["app"] < "p3"
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	var want []*corev1.Pod
	for _, p := range s.Pods() {
		if keep(p.Namespace, p.Labels) {
			want = append(want, p)
		}
	}
	got := s.PodsWhere(keep)
	if len(want) < 20 || len(want) > 400 {
		t.Fatalf("%d of 500 pods kept: draw a selection that keeps some and leaves some", len(want))
	}
	if diff := cmp.Diff(names(want), names(got)); diff != "" {
		t.Fatalf("PodsWhere (-Pods filtered +PodsWhere):\n%s", diff)
	}
	for _, p := range got {
		if terminated(p) {
			t.Fatalf("PodsWhere gave the terminated pod %s", p.Name)
		}
	}
}

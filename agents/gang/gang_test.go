package gang

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-safe-scheduler/extender/agents/gang/core"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/internal/testkit/fixtures"
	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

// fakeCluster gives the agent informer factories over a fake clientset and a fake dynamic
// client, as the programs give it the real ones (framework.Handle).
type fakeCluster struct {
	client  *fake.Clientset
	typed   informers.SharedInformerFactory
	dynamic dynamicinformer.DynamicSharedInformerFactory
	// Cluster is the read-only view the agent gets (framework.Handle.Cluster), nil unless a test
	// sets it.
	Cluster framework.Cluster
}

func podGroupObject(ns, name string, minMember int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"minMember": minMember},
	}}
}

func newFakeCluster(pods []runtime.Object, groups ...runtime.Object) *fakeCluster {
	client := fake.NewClientset(pods...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{PodGroupResource: "PodGroupList"}, groups...)
	return &fakeCluster{
		client:  client,
		typed:   informers.NewSharedInformerFactory(client, 0),
		dynamic: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
	}
}

// start runs the informers the agent asked for, as a program does after building its agents.
func (f *fakeCluster) start(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); f.typed.Shutdown(); f.dynamic.Shutdown() })
	f.typed.Start(ctx.Done())
	f.dynamic.Start(ctx.Done())
}

func newAgent(t *testing.T, f *fakeCluster) *Agent {
	t.Helper()
	h := framework.NewHandle(nil)
	h.Informers, h.Dynamic, h.Client, h.Cluster = f.typed, f.dynamic, f.client, f.Cluster
	h.PodEvents = f.typed.Core().V1().Pods().Informer()
	a, err := New(DefaultConfig(), h)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func waitSynced(t *testing.T, a *Agent) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !a.podsSynced() || !a.groups.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("the informers did not sync")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var nodes = []*corev1.Node{fixtures.MakeNode().Name("n1").Obj(), fixtures.MakeNode().Name("n2").Obj()}

func everyNode(v framework.Verdict) []framework.Verdict { return []framework.Verdict{v, v} }

// Without cluster access the agent starts (an "all" image serves every agent) but fails for
// the pods of a group, naming CLUSTER_ACCESS; pods in no group pass.
func TestWithoutClusterAccess(t *testing.T) {
	a, err := New(DefaultConfig(), framework.NewHandle(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.filter(t.Context(), fixtures.MakePod().Name("loose").Obj(), nodes); err != nil || !got[0].Passes() {
		t.Fatalf("a pod in no group: %+v, %v; want it to pass", got, err)
	}
	member := fixtures.MakePod().Name("m").Label(LabelPodGroup, "g").Label(LabelMinAvailable, "2").Obj()
	if _, err := a.filter(t.Context(), member, nodes); !errors.Is(err, ErrNoClusterAccess) || !strings.Contains(err.Error(), "CLUSTER_ACCESS") {
		t.Fatalf("error %v, want one naming CLUSTER_ACCESS", err)
	}
}

func TestFilter(t *testing.T) {
	riya := func(name, group, min string) *corev1.Pod {
		return fixtures.MakePod().Name(name).Namespace("ns").Label(LabelPodGroup, group).Label(LabelMinAvailable, min).Obj()
	}
	coscheduled := func(name, group string) *corev1.Pod {
		return fixtures.MakePod().Name(name).Namespace("ns").Label(LabelPodGroupName, group).Obj()
	}
	f := newFakeCluster(
		[]runtime.Object{riya("g-0", "g", "3"), riya("g-1", "g", "3"), coscheduled("pg-0", "pg")},
		podGroupObject("ns", "pg", 2),
	)
	a := newAgent(t, f)
	f.start(t)
	waitSynced(t, a)

	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []framework.Verdict
	}{
		{"a pod in no group passes", fixtures.MakePod().Name("loose").Namespace("ns").Obj(), everyNode(framework.Verdict{})},
		// g-0 and g-1 exist: g-1 is counted once.
		{"2 of 3 riya members", riya("g-1", "g", "3"),
			everyNode(framework.RejectUnresolvable("pod group ns/g has 2 of 3 pods (minAvailable 3)"))},
		// g-2, not yet in the cache, is the third.
		{"the third riya member", riya("g-2", "g", "3"), everyNode(framework.Verdict{})},
		{"a member whose minimum is lower", riya("g-1", "g", "2"), everyNode(framework.Verdict{})},
		{"1 of 2 PodGroup members", coscheduled("pg-0", "pg"),
			everyNode(framework.RejectUnresolvable("pod group ns/pg has 1 of 2 pods (minMember 2)"))},
		{"the second PodGroup member", coscheduled("pg-1", "pg"), everyNode(framework.Verdict{})},
		{"a missing PodGroup", coscheduled("x", "ghost"),
			everyNode(framework.RejectUnresolvable("PodGroup ns/ghost named by label scheduling.x-k8s.io/pod-group does not exist"))},
		{"a bad minimum", riya("x", "g", "many"),
			everyNode(framework.RejectUnresolvable(`label minAvailable is "many", not an integer (pod group ns/g)`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.filter(t.Context(), tc.pod, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}

	// A member arrives in the cluster: the informer's event brings g to quorum for g-0.
	if _, err := f.client.CoreV1().Pods("ns").Create(t.Context(), riya("g-2", "g", "3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for a.counts.Count(core.Key{Label: LabelPodGroup, Namespace: "ns", Name: "g"}) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("the new member was never counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _ := a.filter(t.Context(), riya("g-0", "g", "3"), nodes); !got[0].Passes() || !got[1].Passes() {
		t.Fatalf("g-0 with 3 members: %+v, want every node to pass", got)
	}
}

// Before the caches are read, a pod of a group cannot be judged: the filter fails (the scheduler
// retries) instead of rejecting it for a count of zero. A pod in no group passes regardless.
func TestFilterBeforeSync(t *testing.T) {
	f := newFakeCluster(nil)
	a := newAgent(t, f) // never started
	if got, err := a.filter(t.Context(), fixtures.MakePod().Name("loose").Obj(), nodes); err != nil || !got[0].Passes() {
		t.Fatalf("a pod in no group: %+v, %v; want it to pass", got, err)
	}
	member := fixtures.MakePod().Name("m").Label(LabelPodGroup, "g").Label(LabelMinAvailable, "2").Obj()
	if _, err := a.filter(t.Context(), member, nodes); err == nil || !strings.Contains(err.Error(), "not synced") {
		t.Fatalf("error %v, want the cache not synced", err)
	}
}

// A group found short is judged again once the cache has seen the pod itself: here g-1 and g-2
// reach the cache while g-2 is being judged, and g-2 passes. Without the wait it would be
// rejected with 2 of 3 (g-0 and itself), and nothing would retry the group.
func TestFilterWaitsForTheCache(t *testing.T) {
	riya := func(name string) *corev1.Pod {
		return fixtures.MakePod().Name(name).Namespace("ns").Label(LabelPodGroup, "g").Label(LabelMinAvailable, "3").Obj()
	}
	f := newFakeCluster([]runtime.Object{riya("g-0")})
	a := newAgent(t, f)
	f.start(t)
	waitSynced(t, a)
	go func() {
		time.Sleep(50 * time.Millisecond)
		for _, name := range []string{"g-1", "g-2"} {
			if _, err := f.client.CoreV1().Pods("ns").Create(context.Background(), riya(name), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		}
	}()
	got, err := a.filter(t.Context(), riya("g-2"), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(everyNode(framework.Verdict{}), got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}

	// A pod the cache never sees is judged after CacheWait with what the cache holds.
	a.cfg.CacheWait = framework.Duration(100 * time.Millisecond)
	start := time.Now()
	got, _ = a.filter(t.Context(), fixtures.MakePod().Name("h-0").Namespace("ns").Label(LabelPodGroup, "h").Label(LabelMinAvailable, "2").Obj(), nodes)
	if waited := time.Since(start); waited < 100*time.Millisecond || got[0].Passes() {
		t.Errorf("after %s: %+v; want a rejection after waiting 100ms", waited, got)
	}
}

func TestConfig(t *testing.T) {
	cfg, err := settingstest.Bind(DefaultConfig(), map[string]string{"GANG_CACHE_WAIT": "250ms"})
	if err != nil || cfg.CacheWait.D() != 250*time.Millisecond {
		t.Fatalf("GANG_CACHE_WAIT=250ms: %+v, %v", cfg, err)
	}
	if DefaultConfig().CacheWait.D() != time.Second {
		t.Errorf("default wait %s, want 1s", DefaultConfig().CacheWait)
	}
	if err := (Config{CacheWait: framework.Duration(5 * time.Second)}).Validate(); err == nil || !strings.Contains(err.Error(), "cacheWait") {
		t.Errorf("5s: %v, want an error naming cacheWait", err)
	}
	if err := (Config{CacheWait: framework.Duration(-time.Second)}).Validate(); err == nil {
		t.Error("a negative wait validates")
	}
}

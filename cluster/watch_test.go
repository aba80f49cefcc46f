package cluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// A pod handler sees the pods as the cache keeps them (labels kept, the rest stripped), before
// and after Start; an informer from Watch runs with the Cache.
func TestAddPodHandlerAndWatch(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	group := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"namespace": "ns", "name": "pg"}, "spec": map[string]any{"minMember": int64(3)},
	}}
	client := fake.NewClientset(makePod("a", "", "100m", "64Mi"))
	s := NewCache(client, quietLog())
	if _, err := s.Watch(gvr); err == nil || !strings.Contains(err.Error(), "no client configuration") {
		t.Fatalf("Watch without a client configuration: %v, want an error saying so", err)
	}
	s.extra.dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, group)
	groups, err := s.Watch(gvr)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string]*corev1.Pod{}
	reg, err := s.AddPodHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { mu.Lock(); seen[obj.(*corev1.Pod).Name] = obj.(*corev1.Pod); mu.Unlock() },
		UpdateFunc: func(_, obj any) { mu.Lock(); seen[obj.(*corev1.Pod).Name] = obj.(*corev1.Pod); mu.Unlock() },
		DeleteFunc: func(obj any) {
			key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			mu.Lock()
			delete(seen, key[strings.Index(key, "/")+1:])
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	stop := s.Start(ctx)
	t.Cleanup(func() { cancel(); stop() })
	if _, err := s.Watch(gvr); err == nil || !strings.Contains(err.Error(), "before Start") {
		t.Fatalf("Watch after Start: %v, want an error saying to watch before Start", err)
	}
	wait, done := context.WithTimeout(t.Context(), time.Minute)
	defer done()
	if !cache.WaitForCacheSync(wait.Done(), reg.HasSynced, groups.HasSynced) {
		t.Fatal("the handler or the watched informer did not sync")
	}
	if _, ok, _ := groups.GetStore().GetByKey("ns/pg"); !ok {
		t.Fatal("the watched informer does not hold ns/pg")
	}
	mu.Lock()
	a := seen["a"]
	mu.Unlock()
	if a == nil || a.Labels["app"] != "a" || a.Annotations != nil || a.Spec.Containers[0].Image != "" {
		t.Fatalf("the handler saw %+v, want pod a stripped, with its labels", a)
	}

	// Later events reach the handler: an update's labels, a deletion.
	b := makePod("b", "", "100m", "64Mi")
	if _, err := client.CoreV1().Pods("ns").Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.Labels["podGroup"] = "g"
	if _, err := client.CoreV1().Pods("ns").Update(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("ns").Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler sees b relabelled and a deleted", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		_, hasA := seen["a"]
		b := seen["b"]
		return !hasA && b != nil && b.Labels["podGroup"] == "g", "a seen, or b not relabelled"
	})
}

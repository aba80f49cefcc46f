package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
)

// The Handle the Cache fills: its factory's node informer is the Cache's own, its PodEvents the
// Cache's pod informer (a handler sees each pod as the cache keeps it, as a *corev1.Pod: labels
// kept, the rest stripped; deletions too), and an informer asked of its dynamic factory before
// Start runs with the Cache.
func TestHandleInformers(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	group := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"namespace": "ns", "name": "pg"}, "spec": map[string]any{"minMember": int64(3)},
	}}
	client := fake.NewClientset(makePod("a", "n1", "100m", "64Mi"), makeNode("n1", "4", "8Gi"))
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, group)
	s := NewCache(client, dyn, quietLog())
	h := s.Handle(framework.NewHandle(nil), "test")
	if h.Cluster != s || h.Informers == nil || h.PodEvents == nil || h.Dynamic == nil || h.Client != client || h.Events == nil {
		t.Fatalf("handle %+v: want every cluster field but KubeConfig (a Cache over a clientset has none)", h)
	}
	if h.KubeConfig != nil {
		t.Fatalf("KubeConfig %v for a Cache built over a clientset", h.KubeConfig)
	}
	if h.Informers.Core().V1().Nodes().Informer().GetStore() != s.nodes.GetStore() {
		t.Fatal("the factory's node informer is not the Cache's: the process would watch nodes twice")
	}
	groups := h.Dynamic.ForResource(gvr).Informer()

	var mu sync.Mutex
	var got []string
	seen := map[string]*corev1.Pod{}
	reg, err := h.PodEvents.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			mu.Lock()
			defer mu.Unlock()
			p := obj.(*corev1.Pod)
			seen[p.Name] = p
			got = append(got, "add "+p.Name)
		},
		UpdateFunc: func(_, obj any) {
			mu.Lock()
			defer mu.Unlock()
			p := obj.(*corev1.Pod)
			seen[p.Name] = p
			got = append(got, "update "+p.Name+" "+string(p.Status.Phase))
		},
		DeleteFunc: func(obj any) {
			key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			mu.Lock()
			defer mu.Unlock()
			got = append(got, "delete "+key)
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	stop := s.Start(ctx)
	t.Cleanup(func() { cancel(); stop() })
	wait, done := context.WithTimeout(t.Context(), time.Minute)
	defer done()
	if !s.WaitForSync(wait) || !cache.WaitForCacheSync(wait.Done(), reg.HasSynced, groups.HasSynced) {
		t.Fatal("the cache, the handler or the dynamic informer did not sync")
	}
	if _, ok, _ := groups.GetStore().GetByKey("ns/pg"); !ok {
		t.Fatal("the dynamic informer does not hold ns/pg")
	}
	if n, err := h.Informers.Core().V1().Nodes().Lister().List(labels.Everything()); err != nil || len(n) != 1 || n[0].Status.Conditions != nil {
		t.Fatalf("node lister: %v, %v; want n1 as the cache keeps it", n, err)
	}
	mu.Lock()
	a := seen["a"]
	mu.Unlock()
	if a == nil || a.Labels["app"] != "a" || a.Annotations != nil || a.Spec.Containers[0].Image != "" {
		t.Fatalf("the handler saw %+v, want pod a stripped, with its labels", a)
	}

	// Later events reach the handler (the fake clientset ignores the field selector that, on an
	// API server, turns a pod's termination into a deletion).
	p := makePod("a", "n1", "100m", "64Mi")
	p.Status.Phase = corev1.PodFailed
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler sees a's update", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2, strings.Join(got, ", ")
	})
	if err := client.CoreV1().Pods("ns").Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler sees a's deletion", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3, strings.Join(got, ", ")
	})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"add a", "update a Failed", "delete ns/a"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

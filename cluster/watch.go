package cluster

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// What agents may add to the Cache beyond nodes and pods: handlers of the pod informer's events
// (an agent keeping its own per-pod index, the gang agent's per-group counts) and informers over
// other resources (custom resources such as PodGroups), which the Cache runs with its own.

// extraInformers are the informers Watch added; Start runs them.
type extraInformers struct {
	mu      sync.Mutex
	dynamic dynamic.Interface // built from the Cache's REST configuration on first use
	list    []cache.SharedIndexInformer
	started bool
}

// AddPodHandler registers h for the events of the Cache's pod informer: pods as the cache keeps
// them (see strip: labels are kept), terminated pods arriving as deletions (the informer does
// not list them), deletions possibly as cache.DeletedFinalStateUnknown. Events are delivered
// one at a time, in order. A handler added after Start first receives every cached pod as an
// addition. The registration's HasSynced reports that h has seen the initial list.
func (s *Cache) AddPodHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := s.pods.AddEventHandler(h)
	if err != nil {
		return nil, fmt.Errorf("cluster: adding a pod handler: %w", err)
	}
	return reg, nil
}

// Watch returns an informer over the objects of resource gvr in every namespace, as
// *unstructured.Unstructured, that Start runs (and stops) with the node and pod informers. Call
// it before Start. The Cache's readiness does not wait for it: a resource that is not served
// (a custom resource whose definition is not installed) must not hold back the agents that do
// not need it, so callers check the informer's HasSynced themselves. Its watch errors are
// logged by client-go; callers may set their own handler (SetWatchErrorHandlerWithContext)
// before Start.
func (s *Cache) Watch(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	s.extra.mu.Lock()
	defer s.extra.mu.Unlock()
	if s.extra.started {
		return nil, fmt.Errorf("cluster: watching %s: the cache has started; watch before Start", gvr)
	}
	if s.extra.dynamic == nil {
		if s.rest == nil {
			return nil, fmt.Errorf("cluster: watching %s: this cache has no client configuration for other API groups", gvr)
		}
		d, err := dynamic.NewForConfig(s.rest)
		if err != nil {
			return nil, fmt.Errorf("cluster: watching %s: %w", gvr, err)
		}
		s.extra.dynamic = d
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(s.extra.dynamic, gvr, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	s.extra.list = append(s.extra.list, inf)
	return inf, nil
}

// run starts the informers Watch added, each in wg, until ctx is done.
func (e *extraInformers) run(ctx context.Context, wg *sync.WaitGroup) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.started = true
	for _, inf := range e.list {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
}

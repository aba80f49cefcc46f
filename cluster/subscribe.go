package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodSubscriber is what agents that learn from pod changes assert their framework.Cluster to
// (the reward agent declares the same method set): the type is unnamed so that they need not
// import this package.
type PodSubscriber interface {
	OnPodUpdate(fn func(old, new *corev1.Pod)) (synced func() bool, err error)
}

var _ PodSubscriber = (*Cache)(nil)

// OnPodUpdate calls fn for every pod change, one call at a time, in the order the informer
// delivers them, with the pods as the cache stores them (stripped, see strip): an addition has
// old nil (pods already in the cache arrive as additions), a deletion has new nil and old the
// pod's last known state. Pods are shared: never modify them. It returns a function reporting
// whether fn has seen the pods of the initial list. It may be called before or after Start.
//
// The informer leaves terminated pods out (see NewCache): a pod that turns Succeeded or Failed
// arrives as a deletion carrying its last non-terminated state; ask the API server for its phase.
func (s *Cache) OnPodUpdate(fn func(old, new *corev1.Pod)) (synced func() bool, err error) {
	reg, err := s.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				fn(nil, p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 {
				fn(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				fn(p, nil)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return reg.HasSynced, nil
}

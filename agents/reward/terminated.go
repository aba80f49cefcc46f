package reward

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// terminatedSelector picks the pods in a terminal phase (Succeeded, Failed; the deprecated
// Unknown too, which teaches nothing): exactly those the shared pod informer leaves out.
const terminatedSelector = "status.phase!=" + string(corev1.PodPending) + ",status.phase!=" + string(corev1.PodRunning)

// terminatedPods returns the agent's own informer of the terminated pods. A pod that turns
// Succeeded or Failed enters it as it leaves the shared informer, so the agent learns its final
// phase from a watch, not from a read per pod: reads share the client's rate limiter with the
// binds, and a cluster whose pods complete faster than that rate would starve the binds. It
// keeps only what the agent reads of each pod (name, UID, phase).
func terminatedPods(client kubernetes.Interface) cache.SharedIndexInformer {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = terminatedSelector
	}))
	inf := f.Core().V1().Pods().Informer()
	_ = inf.SetTransform(func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion},
			Status:     corev1.PodStatus{Phase: p.Status.Phase},
		}, nil
	})
	return inf
}

// finalEvents turns onFinal into the terminated informer's handler: additions (a pod turned
// terminal, or one of the initial list) and updates; deletions say nothing.
func finalEvents(fn func(p *corev1.Pod, initial bool)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if p, ok := obj.(*corev1.Pod); ok {
				fn(p, isInInitialList)
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				fn(p, false)
			}
		},
	}
}

// watchTerminated subscribes the agent to the terminated informer and runs it until done.
func (a *Agent) watchTerminated(done <-chan struct{}) error {
	if _, err := a.terminated.AddEventHandler(finalEvents(a.onFinal)); err != nil {
		return fmt.Errorf("subscribing to terminated pods: %w", err)
	}
	go a.terminated.Run(done)
	return nil
}

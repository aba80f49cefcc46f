package cluster

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kube-safe-scheduler/extender/framework"
)

// events sends Kubernetes events through the Cache's client. The broadcaster, and its
// goroutine, start with the first event: a process whose agents record none pays nothing.
type events struct {
	once        sync.Once
	client      func() typedcorev1.EventInterface
	broadcaster record.EventBroadcaster
}

func (e *events) start() record.EventBroadcaster {
	e.once.Do(func() {
		e.broadcaster = record.NewBroadcaster()
		e.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: e.client()})
	})
	return e.broadcaster
}

// shutdown stops the broadcaster, if it started, and keeps it from starting later.
func (e *events) shutdown() {
	e.once.Do(func() {})
	if e.broadcaster != nil {
		e.broadcaster.Shutdown()
	}
}

// recorder records events as component (the event's source).
type recorder struct {
	e         *events
	component string
	once      sync.Once
	r         record.EventRecorder
}

func (r *recorder) Event(object runtime.Object, eventType, reason, message string) {
	r.once.Do(func() {
		if b := r.e.start(); b != nil {
			r.r = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: r.component})
		}
	})
	if r.r != nil { // nil once the Cache has stopped
		r.r.Event(object, eventType, reason, message)
	}
}

// Events returns a recorder of Kubernetes events whose source is component (for example
// "kube-safe-scheduler-extender/telemetry"). Objects of types outside client-go's scheme
// (custom resources) are recorded when they are *unstructured.Unstructured.
func (s *Cache) Events(component string) framework.EventRecorder {
	return &recorder{e: &s.events, component: component}
}

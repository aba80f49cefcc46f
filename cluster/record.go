package cluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// podRecord is how the cache keeps a pod: exactly what strip keeps of it (see strip), in about a
// quarter of a corev1.Pod's memory. A corev1.Pod is 1240 bytes however little it holds, and
// 50,000 of them with their conditions were 71 MB of the all extender's 163 MB live heap
// (docs/results/performance-history.md, "Memory at 5000 nodes / 50,000 pods, 2026-11-27"). The
// pod informer stores records; the cache's readers
// (PodsOn, Pods, the handlers added through PodEvents) get each as the *corev1.Pod that pod
// makes, a new object per call. A record never changes once stored: an update stores a new one.
type podRecord struct {
	namespace, name, resourceVersion, nodeName string
	uid                                        types.UID
	phase                                      corev1.PodPhase
	labels                                     map[string]string
	deletion                                   *metav1.Time
	owners                                     []metav1.OwnerReference
	containers, initContainers                 []corev1.Container
	overhead                                   corev1.ResourceList
	resources                                  *corev1.ResourceRequirements
	schedulingGroup                            *corev1.PodSchedulingGroup
	statuses                                   []corev1.ContainerStatus
	// conds holds the first nConds kept conditions (strip keeps at most the Ready and the
	// PodScheduled condition of a well-formed status); a status with more keeps them all in
	// moreConds instead.
	conds     [2]condition
	nConds    uint8
	moreConds []corev1.PodCondition
}

// condition is a kept pod condition: type, status and last transition time (strip keeps no
// more of it).
type condition struct {
	typ    corev1.PodConditionType
	status corev1.ConditionStatus
	at     metav1.Time
}

// recordPod returns the record of what strip keeps of p: its namespace, name, UID, resource
// version, labels, deletion timestamp and controller reference; its node, containers, init
// containers (name, requests, restart policy), overhead, pod-level requests and scheduling
// group (spec.schedulingGroup: a pod of a native pod group is in none of gang's); its phase, its
// Ready condition when True and its PodScheduled condition while Pending or once True, and the
// statuses of its containers that have restarted. Strings, maps and lists that pods repeat are
// shared (interner).
func recordPod(p *corev1.Pod) *podRecord {
	r := &podRecord{
		namespace:       shared.String(p.Namespace),
		name:            p.Name,
		uid:             p.UID,
		resourceVersion: p.ResourceVersion,
		nodeName:        p.Spec.NodeName,
		phase:           corev1.PodPhase(shared.String(string(p.Status.Phase))),
		labels:          shared.Labels(p.Labels),
		deletion:        p.DeletionTimestamp,
		owners:          controllerRef(p),
		containers:      stripContainers(p.Spec.Containers),
		initContainers:  stripContainers(p.Spec.InitContainers),
		overhead:        shared.ResourceList(p.Spec.Overhead),
		resources:       podResources(p.Spec.Resources),
		schedulingGroup: p.Spec.SchedulingGroup,
		statuses:        stripContainerStatuses(p.Status.ContainerStatuses),
	}
	conds := stripConditions(p)
	if len(conds) > len(r.conds) {
		r.moreConds = conds
		return r
	}
	for i, c := range conds {
		r.conds[i] = condition{typ: c.Type, status: c.Status, at: c.LastTransitionTime}
	}
	r.nConds = uint8(len(conds))
	return r
}

// pod returns the record as a new *corev1.Pod (the shared maps and lists are the record's: never
// modify them).
func (r *podRecord) pod() *corev1.Pod {
	conds := r.moreConds
	if r.nConds > 0 {
		conds = make([]corev1.PodCondition, r.nConds)
		for i, c := range r.conds[:r.nConds] {
			conds[i] = corev1.PodCondition{Type: c.typ, Status: c.status, LastTransitionTime: c.at}
		}
	}
	return &corev1.Pod{
		ObjectMeta: r.meta(),
		Spec: corev1.PodSpec{
			NodeName:        r.nodeName,
			Containers:      r.containers,
			InitContainers:  r.initContainers,
			Overhead:        r.overhead,
			Resources:       r.resources,
			SchedulingGroup: r.schedulingGroup,
		},
		Status: corev1.PodStatus{
			Phase:             r.phase,
			Conditions:        conds,
			ContainerStatuses: r.statuses,
		},
	}
}

func (r *podRecord) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:         r.namespace,
		Name:              r.name,
		UID:               r.uid,
		ResourceVersion:   r.resourceVersion,
		Labels:            r.labels,
		DeletionTimestamp: r.deletion,
		OwnerReferences:   r.owners,
	}
}

// key is the record's cache key, as cache.MetaNamespaceKeyFunc gives it for the pod.
func (r *podRecord) key() string {
	if r.namespace == "" {
		return r.name
	}
	return r.namespace + "/" + r.name
}

// GetObjectMeta implements metav1.ObjectMetaAccessor, for the informer's key functions
// (meta.Accessor): a new ObjectMeta of the record's metadata.
func (r *podRecord) GetObjectMeta() metav1.Object {
	m := r.meta()
	return &m
}

// GetObjectKind implements runtime.Object: a record carries no type metadata, as a decoded pod
// carries none.
func (r *podRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. A record is never modified, so the copy shares its
// maps and lists.
func (r *podRecord) DeepCopyObject() runtime.Object {
	c := *r
	return &c
}

// recordOf returns what the cache's pod informer stored as a record (a pod stored without the
// transform, in tests, recorded now); nil for anything else.
func recordOf(obj any) *podRecord {
	switch o := obj.(type) {
	case *podRecord:
		return o
	case *corev1.Pod:
		return recordPod(o)
	}
	return nil
}

// podEvents gives a handler the pod informer's events with each record made into a
// *corev1.Pod (framework.Handle.PodEvents).
type podEvents struct{ inf cache.SharedIndexInformer }

func (e podEvents) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return e.inf.AddEventHandler(asPods{h})
}

// asPods is a handler that passes each event to h with the records made into pods.
type asPods struct{ h cache.ResourceEventHandler }

func (a asPods) OnAdd(obj any, initial bool) { a.h.OnAdd(eventPod(obj), initial) }
func (a asPods) OnUpdate(old, obj any)       { a.h.OnUpdate(eventPod(old), eventPod(obj)) }
func (a asPods) OnDelete(obj any)            { a.h.OnDelete(eventPod(obj)) }

// eventPod is obj with a record made into a pod, also inside a tombstone; anything else as it
// is.
func eventPod(obj any) any {
	switch o := obj.(type) {
	case *podRecord:
		return o.pod()
	case cache.DeletedFinalStateUnknown:
		if r, ok := o.Obj.(*podRecord); ok {
			o.Obj = r.pod()
		}
		return o
	}
	return obj
}

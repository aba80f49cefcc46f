package gangplugin

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kube-safe-scheduler/extender/agents/gang/core"
)

// The PodGroup phases and the status the scheduler writes: the core's (NextStatus).
const (
	PhasePending    = core.PhasePending
	PhaseScheduling = core.PhaseScheduling
	PhaseRunning    = core.PhaseRunning
	PhaseFinished   = core.PhaseFinished
	PhaseFailed     = core.PhaseFailed
)

// Status is what the scheduler writes of a PodGroup's status (core.Status).
type Status = core.Status

// nextStatus is core.NextStatus: Coscheduling's controller's reconciliation.
var nextStatus = core.NextStatus

// statusWriter writes the status of every PodGroup from its members, through the status
// subresource. It starts with the first scheduling cycle: kube-scheduler runs scheduling cycles
// only while it leads (and exits when it stops leading), so only the leader writes.
type statusWriter struct {
	once sync.Once
	// ctx is the scheduler's (the plugins' factories'): the writer runs until it ends.
	ctx    context.Context
	client dynamic.Interface
	// pods lists a group's members from the API server: the scheduler's informer does not hold
	// terminated pods, which the status counts.
	pods        func(ctx context.Context, namespace, selector string) ([]corev1.Pod, error)
	podInformer cache.SharedIndexInformer
	groups      *Groups
	queue       workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// started is when the scheduler first tried a member of each PodGroup (namespace/name).
	started map[string]time.Time
}

func newStatusWriter(ctx context.Context, client dynamic.Interface, cs kubernetes.Interface, podInformer cache.SharedIndexInformer, groups *Groups) *statusWriter {
	list := func(ctx context.Context, namespace, selector string) ([]corev1.Pod, error) {
		l, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	return &statusWriter{ctx: ctx, client: client, pods: list, podInformer: podInformer,
		groups: groups, started: map[string]time.Time{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
}

// tried records that a member of the PodGroup key is being scheduled, and starts the writer.
func (w *statusWriter) tried(key core.Key) {
	if w == nil || key.Label != core.LabelPodGroupName {
		return
	}
	w.once.Do(func() { w.start(w.ctx) })
	w.mu.Lock()
	if _, ok := w.started[key.String()]; !ok {
		w.started[key.String()] = time.Now()
		w.queue.Add(key.String())
	}
	w.mu.Unlock()
}

func (w *statusWriter) start(ctx context.Context) {
	enqueuePod := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			if k, in := core.KeyOf(p); in && k.Label == core.LabelPodGroupName {
				w.queue.Add(k.String())
			}
		}
	}
	enqueueGroup := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			w.queue.Add(key)
		}
	}
	_, _ = w.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueuePod, UpdateFunc: func(_, o any) { enqueuePod(o) }, DeleteFunc: enqueuePod})
	_, _ = w.groups.store.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueueGroup, UpdateFunc: func(_, o any) { enqueueGroup(o) }})
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	go func() {
		for w.next(ctx) {
		}
	}()
}

func (w *statusWriter) next(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("writing a PodGroup's status", "podGroup", key, "err", err)
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

// sync writes the status of the PodGroup key (namespace/name) when it differs from what the
// object holds.
func (w *statusWriter) sync(ctx context.Context, key string) error {
	obj, ok, err := w.groups.store.GetStore().GetByKey(key)
	if err != nil || !ok {
		return err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	pg, err := core.PodGroupFromUnstructured(u)
	if err != nil {
		return nil // the scheduler rejects its pods, naming the field
	}
	var min int32
	if pg.MinMember != nil {
		min = *pg.MinMember
	}
	items, err := w.pods(ctx, pg.Namespace, labels.SelectorFromSet(labels.Set{core.LabelPodGroupName: pg.Name}).String())
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, len(items))
	for i := range items {
		pods[i] = &items[i]
	}
	var cur Status
	if raw, ok := u.Object["status"]; ok {
		data, _ := json.Marshal(raw)
		_ = json.Unmarshal(data, &cur)
	}
	next := nextStatus(cur, min, pods)
	w.mu.Lock()
	if t, ok := w.started[key]; ok && next.ScheduleStartTime == nil {
		next.ScheduleStartTime = &metav1.Time{Time: t.Truncate(time.Second)}
	}
	w.mu.Unlock()
	if core.StatusEqual(cur, next) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": next})
	if err != nil {
		return err
	}
	_, err = w.client.Resource(core.PodGroupResource).Namespace(pg.Namespace).Patch(ctx, pg.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

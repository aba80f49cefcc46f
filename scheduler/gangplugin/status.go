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

	"github.com/kube-safe-scheduler/extender/agents/gang"
)

// The PodGroup phases Coscheduling's controller (scheduler-plugins pkg/controllers) writes.
const (
	PhasePending    = "Pending"
	PhaseScheduling = "Scheduling"
	PhaseRunning    = "Running"
	PhaseFinished   = "Finished"
	PhaseFailed     = "Failed"
)

// Status is what the scheduler writes of a PodGroup's status.
type Status struct {
	Phase     string `json:"phase,omitempty"`
	Scheduled int32  `json:"scheduled"`
	Running   int32  `json:"running"`
	Succeeded int32  `json:"succeeded"`
	Failed    int32  `json:"failed"`
	// ScheduleStartTime is when the scheduler first tried a member of the group.
	ScheduleStartTime *metav1.Time `json:"scheduleStartTime,omitempty"`
}

// nextStatus is Coscheduling's controller's reconciliation, run until it settles: from no
// phase to Pending; from Pending to Scheduling once minMember pods exist; then, from the
// members' phases: Pending when fewer than minMember exist, Scheduling while fewer than
// minMember run or have succeeded, Running once they do, Failed when a member failed and
// failed+running+succeeded reach minMember, Finished once minMember have succeeded. Finished
// and Failed are final. Scheduled counts the members bound to a node.
func nextStatus(cur Status, min int32, pods []*corev1.Pod) Status {
	next := cur
	next.Scheduled, next.Running, next.Succeeded, next.Failed = 0, 0, 0, 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			next.Scheduled++
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			next.Running++
		case corev1.PodSucceeded:
			next.Succeeded++
		case corev1.PodFailed:
			next.Failed++
		}
	}
	if cur.Phase == PhaseFinished || cur.Phase == PhaseFailed {
		return next
	}
	for range 3 {
		before := next.Phase
		switch next.Phase {
		case "":
			next.Phase = PhasePending
		case PhasePending:
			if len(pods) >= int(min) {
				next.Phase = PhaseScheduling
			}
		default:
			switch {
			case len(pods) < int(min):
				next.Phase = PhasePending
			case next.Succeeded >= min:
				next.Phase = PhaseFinished
			case next.Failed != 0 && next.Failed+next.Running+next.Succeeded >= min:
				next.Phase = PhaseFailed
			case next.Succeeded+next.Running >= min:
				next.Phase = PhaseRunning
			default:
				next.Phase = PhaseScheduling
			}
		}
		if next.Phase == before {
			break
		}
	}
	return next
}

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
func (w *statusWriter) tried(key gang.Key) {
	if w == nil || key.Label != gang.LabelPodGroupName {
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
			if k, in := gang.KeyOf(p); in && k.Label == gang.LabelPodGroupName {
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
	pg, err := gang.PodGroupFromUnstructured(u)
	if err != nil {
		return nil // the scheduler rejects its pods, naming the field
	}
	var min int32
	if pg.MinMember != nil {
		min = *pg.MinMember
	}
	items, err := w.pods(ctx, pg.Namespace, labels.SelectorFromSet(labels.Set{gang.LabelPodGroupName: pg.Name}).String())
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
	if equalStatus(cur, next) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": next})
	if err != nil {
		return err
	}
	_, err = w.client.Resource(gang.PodGroupResource).Namespace(pg.Namespace).Patch(ctx, pg.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func equalStatus(a, b Status) bool {
	ta, tb := a.ScheduleStartTime, b.ScheduleStartTime
	a.ScheduleStartTime, b.ScheduleStartTime = nil, nil
	return a == b && (ta == nil) == (tb == nil) && (ta == nil || ta.Equal(tb))
}

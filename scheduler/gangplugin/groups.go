package gangplugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/kube-safe-scheduler/extender/agents/gang"
)

// Groups is what the gang plugins of one scheduler process share: the members of every group
// (counted from the scheduler's own pod informer), the PodGroup objects (one informer for the
// process), and each group's scheduling history (its last failure, its backoff). pod-group,
// Coscheduling and group-priority read one Groups, whatever profiles enable them: main makes
// one with NewGroups and registers its factories. It starts with the first plugin built.
type Groups struct {
	once  sync.Once
	err   error
	start func(ctx context.Context, fh fwk.Handle) error

	counts     *gang.Counts
	podsSynced func() bool
	store      groupStore
	// status writes the PodGroups' status (nil in tests).
	status *statusWriter

	mu sync.Mutex
	// failed is each group's last failure (a member found no node, or the group was released
	// at Permit): its timestamp in the queue order until it is placed.
	failed map[gang.Key]time.Time
	// backoff is when a group backed off may be tried again; streak counts its consecutive
	// backoffs (for the default's doubling).
	backoff map[gang.Key]time.Time
	streak  map[gang.Key]int
	// turnedAway marks the groups a member of which was rejected for the backoff: only those
	// need bringing back when it ends (the others are in the queue, waiting for their events).
	turnedAway map[gang.Key]bool
	// warned is, per PodGroup (namespace/name), the resource version last warned about.
	warned map[string]string
	// now is the clock (tests set it).
	now func() time.Time
}

// groupStore is what the plugins read of the PodGroup informer.
type groupStore interface {
	GetStore() cache.Store
	HasSynced() bool
	AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

// NewGroups returns the shared state, not started.
func NewGroups() *Groups {
	g := newGroups()
	g.start = g.startInformers
	return g
}

func newGroups() *Groups {
	return &Groups{counts: gang.NewCounts(), failed: map[gang.Key]time.Time{}, backoff: map[gang.Key]time.Time{}, streak: map[gang.Key]int{},
		turnedAway: map[gang.Key]bool{},
		warned:     map[string]string{}, now: time.Now, podsSynced: func() bool { return true }}
}

// ensure starts the shared state once, with the first plugin's handle (every profile of a
// scheduler shares its informer factory and client configuration).
func (g *Groups) ensure(ctx context.Context, fh fwk.Handle) error {
	g.once.Do(func() {
		if g.start != nil {
			g.err = g.start(ctx, fh)
		}
	})
	return g.err
}

// startInformers counts members from the scheduler's pod informer and reads PodGroup objects
// through an informer of the process's own (not the scheduler's dynamic informer factory: that
// one would hold the scheduler's start until the PodGroup definition is installed).
func (g *Groups) startInformers(ctx context.Context, fh fwk.Handle) error {
	reg, err := fh.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(g.counts.Handler())
	if err != nil {
		return err
	}
	g.podsSynced = reg.HasSynced
	dyn, err := dynamic.NewForConfig(fh.KubeConfig())
	if err != nil {
		return fmt.Errorf("a client for PodGroups: %w", err)
	}
	groups := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0).ForResource(gang.PodGroupResource).Informer()
	go groups.RunWithContext(ctx)
	g.store = groups
	g.status = newStatusWriter(ctx, dyn, fh.ClientSet(), fh.SharedInformerFactory().Core().V1().Pods().Informer(), g)
	return nil
}

// lookup reads a PodGroup from the informer's cache.
func (g *Groups) lookup(namespace, name string) (*gang.PodGroup, error) {
	return gang.LookupIn(g.store.GetStore(), namespace, name)
}

// timestamp is Coscheduling's queue timestamp of pod: for a member of a group, the group's last
// failure if it has one, else the group's creation (the PodGroup object's; for a riya group,
// its oldest member's); for a pod in no group (or of a PodGroup not read yet), queued, the time
// the pod first entered the queue.
func (g *Groups) timestamp(pod *corev1.Pod, queued time.Time) time.Time {
	key, in := gang.KeyOf(pod)
	if !in {
		return queued
	}
	g.mu.Lock()
	failed, ok := g.failed[key]
	g.mu.Unlock()
	if ok {
		return failed
	}
	if key.Label == gang.LabelPodGroupName {
		if g.store == nil {
			return queued
		}
		if pg, err := g.lookup(key.Namespace, key.Name); err == nil && pg != nil && !pg.Created.IsZero() {
			return pg.Created
		}
		return queued
	}
	if since, ok := g.counts.Since(key); ok && !since.IsZero() {
		return since
	}
	return queued
}

// markFailed records a failure of the group now: it goes behind the groups and pods that
// have waited since.
func (g *Groups) markFailed(key gang.Key) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed[key] = g.now()
}

// placed forgets the group's failures once it is placed.
func (g *Groups) placed(key gang.Key) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.failed, key)
	delete(g.backoff, key)
	delete(g.streak, key)
	delete(g.turnedAway, key)
}

// turnAway records that a member of the group was rejected for its backoff.
func (g *Groups) turnAway(key gang.Key) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.turnedAway[key] = true
}

// backoffEnded reports whether members of the group were turned away during the backoff that
// just ended (and forgets it).
func (g *Groups) backoffEnded(key gang.Key) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.turnedAway[key]
	delete(g.turnedAway, key)
	return was
}

// The default group backoff: kube-scheduler's default per-pod backoff (podInitialBackoffSeconds
// 1, podMaxBackoffSeconds 10).
const (
	initialGroupBackoff = time.Second
	maxGroupBackoff     = 10 * time.Second
)

// defaultBackoff returns the group's next default backoff: 1 s, doubling with each consecutive
// failure up to 10 s.
func (g *Groups) defaultBackoff(key gang.Key) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := initialGroupBackoff << min(g.streak[key], 4)
	g.streak[key]++
	return min(d, maxGroupBackoff)
}

// backOff keeps the group out for d.
func (g *Groups) backOff(key gang.Key, d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.backoff[key] = g.now().Add(d)
}

// backedOff returns when the group may be tried again, and true while it is backed off.
func (g *Groups) backedOff(key gang.Key) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.backoff[key]
	if !ok {
		return time.Time{}, false
	}
	if !g.now().Before(until) {
		delete(g.backoff, key)
		return time.Time{}, false
	}
	return until, true
}

// warnOnce reports whether a warning about the PodGroup (namespace/name) at resourceVersion is
// due: once per version of the object, so that fixing it (a new version) is warned about again
// only if still wrong.
func (g *Groups) warnOnce(key, resourceVersion string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.warned[key] == resourceVersion {
		return false
	}
	g.warned[key] = resourceVersion
	return true
}

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

	"github.com/kube-safe-scheduler/extender/agents/gang/core"
)

// Groups is what the gang plugins of one scheduler process share: the members of every group
// (core.Counts, fed by the scheduler's own pod informer), the PodGroup objects (one informer
// for the process), and each group's scheduling history (core.History: its last failure, its
// backoff). pod-group, Coscheduling and group-priority read one Groups, whatever profiles
// enable them: main makes one with NewGroups and registers its factories. It starts with the
// first plugin built.
type Groups struct {
	once  sync.Once
	err   error
	start func(ctx context.Context, fh fwk.Handle) error

	counts     *core.Counts
	podsSynced func() bool
	store      groupStore
	// status writes the PodGroups' status (nil in tests).
	status *statusWriter
	// history is each group's scheduling history (its last failure, its backoff).
	history *core.History
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
	return &Groups{counts: core.NewCounts(), history: core.NewHistory(), now: time.Now, podsSynced: func() bool { return true }}
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
	groups := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0).ForResource(core.PodGroupResource).Informer()
	go groups.RunWithContext(ctx)
	g.store = groups
	g.status = newStatusWriter(ctx, dyn, fh.ClientSet(), fh.SharedInformerFactory().Core().V1().Pods().Informer(), g)
	return nil
}

// lookup reads a PodGroup from the informer's cache.
func (g *Groups) lookup(namespace, name string) (*core.PodGroup, error) {
	return core.LookupIn(g.store.GetStore(), namespace, name)
}

// timestamp is Coscheduling's queue timestamp of pod (core.History.QueueTime): for a member of a
// group, the group's last failure, else its creation; for a pod in no group (or of a PodGroup
// not read yet), queued, the time the pod first entered the queue.
func (g *Groups) timestamp(pod *corev1.Pod, queued time.Time) time.Time {
	key, in := core.KeyOf(pod)
	if !in {
		return queued
	}
	var lookup core.PodGroupLookup
	if g.store != nil {
		lookup = g.lookup
	}
	return g.history.QueueTime(key, core.Created(key, lookup, g.counts), queued)
}

// markFailed, placed, backedOff and backoffEnded are the history's, at the plugins' clock.
func (g *Groups) markFailed(key core.Key) { g.history.MarkFailed(key, g.now()) }

func (g *Groups) placed(key core.Key) { g.history.Placed(key) }

func (g *Groups) backedOff(key core.Key) (time.Time, bool) {
	return g.history.BackedOff(key, g.now(), false)
}

func (g *Groups) backoffEnded(key core.Key) bool { return g.history.BackoffEnded(key) }

package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
)

// Cache is the informer-backed view of the cluster. Build it with Connect or NewCache, start it
// once with Start; every method is safe for concurrent use, before and after the caches sync.
//
// Its node informer is that of a shared informer factory (Informers), which agents use for
// their own handlers and listers (framework.Handle.Informers). Its pod informer is its own: it
// stores each pod as a compact record (podRecord), and agents add their handlers to it through
// PodEvents, which gives them pods: one watch of pods and one of nodes per process. Informers
// over other resources come from its dynamic informer factory (Dynamic). Start runs every
// informer asked for before it.
type Cache struct {
	client kubernetes.Interface
	// rest is the client configuration, nil for a Cache built over a given clientset.
	rest   *rest.Config
	log    *logrus.Entry
	health *apiHealth

	factory informers.SharedInformerFactory
	// dynamic is nil for a Cache built without a dynamic client.
	dynamic dynamicinformer.DynamicSharedInformerFactory
	nodes   cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	// podsHandled reports that the allocation handler has seen the pods' initial list.
	podsHandled cache.ResourceEventHandlerRegistration

	mu sync.RWMutex
	// contribution is what each pod counted in alloc, by its cache key (namespace/name);
	// pods that count nothing (unbound, terminated) are absent.
	contribution map[string]podShare
	// alloc holds each node's summed requests. A map stored here is never modified again
	// (updates store a new map), so Allocated can hand it out without copying.
	alloc map[string]framework.Amounts
	// onNode holds the pods counted in alloc by node, then by cache key, and podsGen each
	// node's generation of them (NodePods): lastGen is the last generation given out, so that a
	// generation is never given to two different sets of pods; a node without pods has none
	// (generation 0, always the empty set).
	onNode  map[string]map[string]*podRecord
	podsGen map[string]int64
	lastGen int64
	// journal holds the nodes of the last len(journal) changes (NodePodsChanges): every
	// generation g is given out by changedLocked, which writes the node changed at g to
	// journal[g%len(journal)], so the slots hold exactly the generations (lastGen-len, lastGen].
	journal [podsJournal]string

	startOnce sync.Once
	events    events
}

// podShare is one pod's part of its node's allocation: cpu (millicores) and memory (bytes)
// inline, 1 under "pods" implied, and a map only for the pod's other resources (rare), so that
// 50,000 pods do not each hold a map (about 250 bytes apiece, 2026-11-27).
type podShare struct {
	node        string
	cpu, memory int64
	// other holds the pod's other non-zero requests (a request under "pods" included, to which
	// the implied 1 is added); nil for none.
	other framework.Amounts
}

// each calls fn for every resource of the share with its non-zero amount (under "pods": the
// pod's own 1 plus any request of it, even if that sums to zero), as Allocated sums them.
func (ps podShare) each(fn func(name corev1.ResourceName, v int64)) {
	if ps.cpu != 0 {
		fn(corev1.ResourceCPU, ps.cpu)
	}
	if ps.memory != 0 {
		fn(corev1.ResourceMemory, ps.memory)
	}
	for name, v := range ps.other {
		if name != corev1.ResourcePods {
			fn(name, v)
		}
	}
	fn(corev1.ResourcePods, ps.other[corev1.ResourcePods]+1)
}

// equal reports whether ps and o count the same amounts on the same node.
func (ps podShare) equal(o podShare) bool {
	return ps.node == o.node && ps.cpu == o.cpu && ps.memory == o.memory && maps.Equal(ps.other, o.other)
}

// podsJournal is how many changes of nodes' pods the Cache remembers for PodsChangedSince
// (64 KiB of string headers): an agent asking once per pod is far fewer changes behind; one
// further behind (the initial list, a burst between two pods) reads every node instead.
const podsJournal = 4096

var (
	_ framework.Cluster         = (*Cache)(nil)
	_ framework.NodePods        = (*Cache)(nil)
	_ framework.NodePodsChanges = (*Cache)(nil)
	_ framework.PodsWhere       = (*Cache)(nil)
)

// Connect builds the Cache for cfg, or returns nil (and no error) when cfg gives no cluster
// access. userAgent identifies the program to the API server.
func Connect(cfg Config, log *logrus.Entry, userAgent string) (*Cache, error) {
	rc, err := cfg.RESTConfig(userAgent)
	if err != nil || rc == nil {
		return nil, err
	}
	health := newAPIHealth(log)
	rc.Wrap(health.wrap)
	client, err := Client(rc)
	if err != nil {
		return nil, err
	}
	// Custom resources are read as JSON (they have no protobuf form).
	drc := rest.CopyConfig(rc)
	drc.ContentType, drc.AcceptContentTypes = "application/json", "application/json"
	dyn, err := dynamic.NewForConfig(drc)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	log.WithField("apiserver", rc.Host).Info("cluster access configured")
	s := newCache(client, dyn, log, health)
	s.rest = rest.CopyConfig(rc)
	return s, nil
}

// NewCache builds the Cache over client and dyn (tests hand it fake clients; dyn may be nil:
// the Cache then has no dynamic informer factory). Nothing is listed before Start.
func NewCache(client kubernetes.Interface, dyn dynamic.Interface, log *logrus.Entry) *Cache {
	return newCache(client, dyn, log, newAPIHealth(log))
}

func newCache(client kubernetes.Interface, dyn dynamic.Interface, log *logrus.Entry, health *apiHealth) *Cache {
	s := &Cache{
		client:       client,
		log:          log,
		health:       health,
		contribution: map[string]podShare{},
		alloc:        map[string]framework.Amounts{},
		onNode:       map[string]map[string]*podRecord{},
		podsGen:      map[string]int64{},
		factory:      informers.NewSharedInformerFactory(client, 0),
	}
	if dyn != nil {
		s.dynamic = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	}
	// The factory's node informer is this one (InformerFor registers it by type:
	// Informers().Core().V1().Nodes() returns the same informer).
	s.nodes = s.factory.InformerFor(&corev1.Node{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewNodeInformer(c, resync, cache.Indexers{})
	})
	// The pod informer is not the factory's: its store holds records, which the factory's
	// listers would not read. Terminated pods hold no resources: leave them in the API server
	// (as kube-scheduler's pod informer does). A pod that terminates leaves the watch's
	// selection and arrives as a deletion.
	s.pods = coreinformers.NewFilteredPodInformer(client, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.AndSelectors(
				fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
				fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
			).String()
		})
	for kind, inf := range map[string]cache.SharedIndexInformer{"nodes": s.nodes, "pods": s.pods} {
		// Neither call can fail before the informer starts.
		_ = inf.SetTransform(strip)
		_ = inf.SetWatchErrorHandlerWithContext(health.watchErrorHandler(kind))
	}
	reg, err := s.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.podChanged(obj) },
		UpdateFunc: func(_, obj any) { s.podChanged(obj) },
		DeleteFunc: s.podDeleted,
	})
	if err != nil {
		// AddEventHandler fails only on an informer that has stopped; this one has not started.
		panic(fmt.Sprintf("cluster: registering the pod handler: %v", err))
	}
	s.podsHandled = reg
	s.events.client = func() typedcorev1.EventInterface { return client.CoreV1().Events("") }
	return s
}

// Client returns the clientset the Cache watches through (shared; the annotator patches with it).
func (s *Cache) Client() kubernetes.Interface { return s.client }

// RESTConfig returns a copy of the client configuration the Cache was connected with (nil for
// a Cache built by NewCache), for clients of other API groups.
func (s *Cache) RESTConfig() *rest.Config {
	if s.rest == nil {
		return nil
	}
	return rest.CopyConfig(s.rest)
}

// Informers returns the shared informer factory whose node informer the Cache runs. Informers
// asked of it before Start run with the Cache's. Its pod informer is not the Cache's (PodEvents):
// asking for it starts a second watch of every pod.
func (s *Cache) Informers() informers.SharedInformerFactory { return s.factory }

// Dynamic returns the factory of informers over other resources (custom resources), nil for a
// Cache built without a dynamic client. Informers asked of it before Start run with the
// Cache's; the Cache's readiness (HasSynced) does not wait for them.
func (s *Cache) Dynamic() dynamicinformer.DynamicSharedInformerFactory { return s.dynamic }

// Handle returns h with its cluster fields filled from the Cache: the view itself, its
// informer factories, client, client configuration and a recorder of events whose source is
// component.
func (s *Cache) Handle(h framework.Handle, component string) framework.Handle {
	h.Cluster, h.NodePods, h.PodsChanges, h.Informers, h.Dynamic, h.Client, h.Events = s, s, s, s.factory, s.dynamic, s.client, s.Events(component)
	h.PodEvents = s.PodEvents()
	h.KubeConfig = s.RESTConfig()
	return h
}

// PodEvents returns the source of the Cache's pod events (framework.Handle.PodEvents): a handler
// added to it gets every record as a *corev1.Pod.
func (s *Cache) PodEvents() framework.PodEvents { return podEvents{s.pods} }

// Start runs the informers asked for so far (the node and pod informers, and those agents
// asked for) until ctx is done or stop is called; stop returns once they have stopped. Only the
// first call starts anything.
func (s *Cache) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	started := false
	var pods sync.WaitGroup
	s.startOnce.Do(func() {
		s.log.Info("starting the node and pod informers")
		started = true
		pods.Go(func() { s.pods.RunWithContext(ctx) })
		s.factory.Start(ctx.Done())
		if s.dynamic != nil {
			s.dynamic.Start(ctx.Done())
		}
	})
	return func() {
		cancel()
		if started {
			pods.Wait()
			s.factory.Shutdown()
			if s.dynamic != nil {
				s.dynamic.Shutdown()
			}
		}
		s.events.shutdown()
	}
}

// WaitForSync blocks until the caches have synced or ctx is done, and reports which.
func (s *Cache) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), s.HasSynced)
}

// HasSynced implements framework.Cluster: both caches have been filled once and the
// allocation has counted every pod of the initial list.
func (s *Cache) HasSynced() bool {
	return s.nodes.HasSynced() && s.pods.HasSynced() && s.podsHandled.HasSynced()
}

// APILost reports whether the last request to the API server failed (the Cache then serves
// what it last saw).
func (s *Cache) APILost() bool { return s.health.Lost() }

// Node implements framework.NodeLookup.
func (s *Cache) Node(name string) (*corev1.Node, bool) {
	obj, ok, err := s.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	n, ok := obj.(*corev1.Node)
	return n, ok
}

// Nodes implements framework.Cluster.
func (s *Cache) Nodes() []*corev1.Node {
	objs := s.nodes.GetStore().List()
	out := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}

// Pods implements framework.Cluster: every pod PodsWhere gives.
func (s *Cache) Pods() []*corev1.Pod {
	return s.PodsWhere(func(string, map[string]string) bool { return true })
}

// PodsWhere implements framework.PodsWhere: the non-terminated pods whose namespace and labels
// keep accepts, each made from its record only once accepted (a pod stored without the
// transform, in tests, as it is).
func (s *Cache) PodsWhere(keep func(namespace string, labels map[string]string) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range s.pods.GetStore().List() {
		switch o := o.(type) {
		case *podRecord:
			if !terminatedPhase(o.phase) && keep(o.namespace, o.labels) {
				out = append(out, o.pod())
			}
		case *corev1.Pod:
			if !terminated(o) && keep(o.Namespace, o.Labels) {
				out = append(out, o)
			}
		}
	}
	return out
}

// Allocated implements framework.Cluster. The map returned is never modified afterwards; callers
// must not modify it either.
func (s *Cache) Allocated(node string) framework.Amounts {
	s.mu.RLock()
	a, ok := s.alloc[node]
	s.mu.RUnlock()
	if !ok {
		return framework.Amounts{}
	}
	return a
}

// PodsGeneration implements framework.NodePods.
func (s *Cache) PodsGeneration(node string) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.podsGen[node]
}

// PodsOn implements framework.NodePods: the pods that Allocated counts for node, each a new
// *corev1.Pod of its record.
func (s *Cache) PodsOn(node string) ([]*corev1.Pod, int64) {
	s.mu.RLock()
	pods, generation := s.onNode[node], s.podsGen[node]
	if len(pods) == 0 {
		s.mu.RUnlock()
		return nil, generation
	}
	records := make([]*podRecord, 0, len(pods))
	for _, r := range pods {
		records = append(records, r)
	}
	s.mu.RUnlock()
	out := make([]*corev1.Pod, len(records))
	for i, r := range records {
		out[i] = r.pod()
	}
	return out, generation
}

// PodsChangedSince implements framework.NodePodsChanges from the journal: the nodes of the
// generations after mark, each with its generation now.
//
// No change is missed: a change gives out its generation, writes the journal, the pod index
// and Allocated's map in one critical section under mu (the pod handlers), and this reads the
// journal and lastGen (next) under mu too. So a change is either at most next, and in the
// journal read here (or the journal has wrapped past mark: known false, and the caller reads
// every node after this call, seeing it), or after next, and listed by the call from next.
func (s *Cache) PodsChangedSince(mark int64, changes []framework.PodsChange) ([]framework.PodsChange, int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	next := s.lastGen
	if mark < 0 || mark > next || next-mark > podsJournal {
		return changes, next, false
	}
	for g := mark + 1; g <= next; g++ {
		node := s.journal[g%podsJournal]
		changes = append(changes, framework.PodsChange{Node: node, Generation: s.podsGen[node]})
	}
	return changes, next, true
}

// changedLocked gives node's pods a new generation (none when it has no pods left) and
// records the change in the journal.
func (s *Cache) changedLocked(node string) {
	s.lastGen++
	s.journal[s.lastGen%podsJournal] = node
	if len(s.onNode[node]) == 0 {
		delete(s.podsGen, node)
		return
	}
	s.podsGen[node] = s.lastGen
}

// indexLocked records r (key) on node, replacing an older version of it.
func (s *Cache) indexLocked(node, key string, r *podRecord) {
	pods := s.onNode[node]
	if pods == nil {
		pods = map[string]*podRecord{}
		s.onNode[node] = pods
	}
	pods[key] = r
	s.changedLocked(node)
}

// unindexLocked removes key from node's pods.
func (s *Cache) unindexLocked(node, key string) {
	pods := s.onNode[node]
	delete(pods, key)
	if len(pods) == 0 {
		delete(s.onNode, node)
	}
	s.changedLocked(node)
}

func terminated(p *corev1.Pod) bool { return terminatedPhase(p.Status.Phase) }

func terminatedPhase(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// share returns what pod adds to its node's allocation: its requests (as PodRequests computes
// them; cpu in millicores, everything else in its base unit) and 1 under "pods". Unbound and
// terminated pods add nothing (ok false).
func share(p *corev1.Pod) (podShare, bool) {
	if p.Spec.NodeName == "" || terminated(p) {
		return podShare{}, false
	}
	ps := podShare{node: p.Spec.NodeName}
	for name, q := range framework.PodRequests(p) {
		v := framework.Amount(name, q)
		switch {
		case v == 0:
		case name == corev1.ResourceCPU:
			ps.cpu = v
		case name == corev1.ResourceMemory:
			ps.memory = v
		default:
			if ps.other == nil {
				ps.other = framework.Amounts{}
			}
			ps.other[name] = v
		}
	}
	return ps, true
}

func (s *Cache) podChanged(obj any) {
	r := recordOf(obj)
	if r == nil {
		return
	}
	key := r.key()
	next, counts := share(r.pod())
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, counted := s.contribution[key]
	// The pod index follows every change of a counted pod (its conditions, say).
	if counted && (!counts || prev.node != next.node) {
		s.unindexLocked(prev.node, key)
	}
	if counts {
		s.indexLocked(next.node, key, r)
	}
	if counted && counts && prev.equal(next) {
		return // a status or label change: the allocation stays
	}
	if counted {
		s.addLocked(prev, -1)
		delete(s.contribution, key)
	}
	if counts {
		s.addLocked(next, +1)
		s.contribution[key] = next
	}
}

func (s *Cache) podDeleted(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, counted := s.contribution[key]; counted {
		s.unindexLocked(prev.node, key)
		s.addLocked(prev, -1)
		delete(s.contribution, key)
	}
}

// addLocked adds sign times share to its node's allocation, storing a new map (copy on write).
// Resources that fall to zero are removed; a node left with nothing is removed.
func (s *Cache) addLocked(share podShare, sign int64) {
	old := s.alloc[share.node]
	next := make(framework.Amounts, len(old)+3+len(share.other))
	maps.Copy(next, old)
	share.each(func(name corev1.ResourceName, v int64) {
		next[name] += sign * v
		if next[name] == 0 {
			delete(next, name)
		}
	})
	if len(next) == 0 {
		delete(s.alloc, share.node)
		return
	}
	s.alloc[share.node] = next
}

// Package gang is the gang agent: it holds back the pods of a group until enough of the group
// exist. A group is named by the riya-scheduler's labels (podGroup, with the minimum in
// minAvailable) or by scheduler-plugins' Coscheduling label scheduling.x-k8s.io/pod-group, whose
// PodGroup object holds the minimum (spec.minMember). The filter "gang" rejects every node, as
// unresolvable, while fewer than the minimum non-terminated pods of the pod's group exist in its
// namespace, and passes every node once they do.
//
// The group logic (resolution of a pod's group, per-group counts fed by pod events, the quorum
// and minResources checks, and the decisions plugin mode adds: Permit, PostFilter, backoff,
// queue age, PodGroup status) is package core, framework-free and shared with plugin mode
// (scheduler/gangplugin); this package is the extender's glue over it. See README.md for what an
// extender can and cannot promise.
package gang

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/agents/gang/core"
	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Name is the agent's name and build tag.
const Name = "gang"

// FilterGang is the filter's name: the route /scheduler/predicates/gang.
const FilterGang = "gang"

// The labels and the PodGroup resource the agent reads (the group logic's, agents/gang/core),
// under the agent's name for the programs and tests that name them.
const (
	LabelPodGroup     = core.LabelPodGroup
	LabelMinAvailable = core.LabelMinAvailable
	LabelPodGroupName = core.LabelPodGroupName
)

// PodGroupResource is the PodGroup custom resource (core.PodGroupResource).
var PodGroupResource = core.PodGroupResource

// Config holds the agent's settings (see settings.Bind for the tags); the groups themselves
// say everything else.
type Config struct {
	// CacheWait bounds how long the filter waits for the pod cache to catch up with the pod it
	// judges before rejecting it (see filter).
	CacheWait framework.Duration `json:"cacheWait" range:"[0s,4s]" env:"GANG_CACHE_WAIT" flag:"gang-cache-wait" help:"longest wait for the pod cache to see the pod being judged before rejecting it for a short group (0..4s)"`
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config { return Config{CacheWait: framework.Duration(time.Second)} }

// Validate reports every bad field, each as a settings.FieldError. CacheWait's bound (its range
// tag) stays below kube-scheduler's default extender httpTimeout (5 s).
func (c Config) Validate() error { return settings.Check(c) }

// Registration offers the agent to the programs that run agents (agents.All, the extender's
// build-tagged file): its functions, and its port and weights in the shipped deployments.
var Registration = framework.Register(Name, DefaultConfig, New, framework.Offer{
	Filters:      []string{FilterGang},
	Port:         5406,
	WholeCluster: true, // a group's minResources is judged against the room of every node (room.go)
	Cluster:      framework.ClusterInformers,
})

// Agent is the gang agent. It is safe for concurrent use.
type Agent struct {
	cfg    Config
	log    *logrus.Entry
	counts *core.Counts
	// podsSynced reports that the counts hold every pod of the initial list.
	podsSynced func() bool
	groups     cache.SharedIndexInformer
	// view is the cluster view, for a group's spec.minResources (room.go).
	view framework.Cluster
	// unavailable, when not nil, is why the agent cannot count (no cluster access): the
	// filter's error for the pods of a group.
	unavailable error
}

var _ framework.Agent = (*Agent)(nil)

// ErrNoClusterAccess is the filter's error, for a pod of a group, in a process without
// cluster access.
var ErrNoClusterAccess = errors.New("the gang agent counts each group's pods in the cluster and needs cluster access, " +
	"which is off: set CLUSTER_ACCESS=auto (the default) and give a kubeconfig (KUBECONFIG) or run in a pod")

// New returns the agent for cfg. It adds its handler to the program's pod events
// (h.PodEvents) and asks h.Dynamic for an informer over PodGroup objects; both start with the
// program's informers.
//
// Without cluster access New still succeeds, with a warning naming CLUSTER_ACCESS: one image
// built with every agent (-tags all) serves them all by default, with or without cluster
// access. The filter then passes pods in no group and fails, with ErrNoClusterAccess, for the
// pods of a group, so that the scheduler's events say what to fix.
func New(cfg Config, h framework.Handle) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid gang config: %w", err)
	}
	if h.PodEvents == nil || h.Dynamic == nil {
		h.Log.Warn(ErrNoClusterAccess.Error() + "; pods of a group will fail the gang filter")
		return &Agent{log: h.Log, unavailable: ErrNoClusterAccess}, nil
	}
	a := &Agent{cfg: cfg, log: h.Log, counts: core.NewCounts(), view: h.Cluster}
	reg, err := h.PodEvents.AddEventHandler(a.counts.Handler())
	if err != nil {
		return nil, fmt.Errorf("adding the gang agent's pod handler: %w", err)
	}
	a.podsSynced = reg.HasSynced
	a.groups = h.Dynamic.ForResource(PodGroupResource).Informer()
	// A missing PodGroup definition is the likely failure: say how to fix it, once (client-go
	// retries with backoff; later failures are logged at DEBUG).
	var warned atomic.Bool
	_ = a.groups.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() != nil || err == nil || errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		if warned.Swap(true) {
			a.log.WithError(err).Debugf("cannot list or watch %s", PodGroupResource.GroupResource())
			return
		}
		a.log.WithError(err).Warnf("cannot list or watch %s (is the PodGroup definition installed? kubectl apply -f yamlfiles/podgroup-crd.yaml); "+
			"pods naming a PodGroup cannot be judged until it is", PodGroupResource.GroupResource())
	})
	a.log.Info("gang agent configured: groups by labels podGroup/minAvailable and by PodGroup objects (" + LabelPodGroupName + ")")
	return a, nil
}

// Name implements framework.Agent.
func (a *Agent) Name() string { return Name }

// Filters implements framework.Agent.
func (a *Agent) Filters() []framework.Filter {
	return []framework.Filter{{Name: FilterGang, Func: a.filter}}
}

// Prioritizers implements framework.Agent: the agent has none.
func (a *Agent) Prioritizers() []framework.Prioritizer { return nil }

// filter passes every node for a pod in no group or whose group has its minimum of pods, and
// rejects every node as unresolvable otherwise (preemption cannot bring the missing members).
// It fails (an error, so the scheduler retries the pod) while the counts or, for a pod naming a
// PodGroup, the PodGroup objects have not been read yet.
//
// A group found short is judged again once the pod cache has seen the pod itself (waiting up
// to CacheWait): the cache follows the API server's watch, in order, so once it holds this pod
// it holds every member created before it. Without that wait, the last member of a group
// created in a burst could be rejected for a lagging cache, and then nothing would retry the
// group: kube-scheduler retries a pod an extender rejected on node and bound-pod events, and
// the last member's binding is what brings the others back.
func (a *Agent) filter(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]framework.Verdict, error) {
	out := make([]framework.Verdict, len(nodes))
	key, in := core.KeyOf(pod)
	if !in {
		if w := core.Overruled(pod); w != "" {
			a.log.WithField("pod", pod.Namespace+"/"+pod.Name).Warn(w)
		}
		return out, nil
	}
	if a.unavailable != nil {
		return nil, a.unavailable
	}
	if !a.podsSynced() {
		return nil, errors.New("the pod cache has not synced yet")
	}
	if key.Label == LabelPodGroupName && !a.groups.HasSynced() {
		return nil, fmt.Errorf("the PodGroup objects (%s) have not been read yet; is the PodGroup definition installed?", PodGroupResource.GroupResource())
	}
	req, in, err := core.Resolve(pod, a.lookup)
	reason := ""
	switch {
	case err != nil:
		reason = err.Error()
	case in:
		if !a.counts.Seen(pod) && req.CheckCounts(a.counts, pod) != "" {
			a.waitSeen(ctx, pod)
		}
		var room func() []corev1.ResourceList
		if a.view != nil {
			room = func() []corev1.ResourceList { return freeRoom(a.view, req.Key) }
		}
		reason = req.Admit(a.counts, pod, room)
		if req.Warning != "" {
			a.log.Warn(req.Warning)
		}
	}
	if a.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		a.log.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "group": key.String(), "label": key.Label,
			"rejected": reason}).Debug("gang filter")
	}
	if reason != "" {
		for i := range out {
			out[i] = framework.RejectUnresolvable(reason)
		}
	}
	return out, nil
}

// waitSeen waits up to CacheWait (or until ctx ends) for the counts to have seen pod, and
// reports whether they have.
func (a *Agent) waitSeen(ctx context.Context, pod *corev1.Pod) bool {
	deadline := time.Now().Add(a.cfg.CacheWait.D())
	for !a.counts.Seen(pod) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// lookup reads a PodGroup from the informer's cache.
func (a *Agent) lookup(namespace, name string) (*core.PodGroup, error) {
	return core.LookupIn(a.groups.GetStore(), namespace, name)
}

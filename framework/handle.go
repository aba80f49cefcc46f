package framework

import (
	"context"
	"errors"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Handle is what a program gives every agent it builds: the same for every agent, whichever
// way the agents are run. It carries, explicitly, everything an agent may use of the cluster
// (as kube-scheduler's framework.Handle does for a plugin): an agent reaches the cluster through
// these fields and nothing else. Without cluster access every cluster field is nil.
//
// The extender fills the cluster fields from its informer cache (package cluster); plugin mode
// fills them from kube-scheduler's own handle (the scheduler's informer factory, client,
// configuration and event recorder), so that an agent's informers are the scheduler's.
type Handle struct {
	// Log is the agent's logger, never nil (tests may give a discarding one: see NewHandle).
	Log *logrus.Entry
	// Cluster is the read-only view of the cluster (nodes, pods, each node's allocation) for
	// use while judging a pod, in a filter or prioritize function.
	Cluster Cluster
	// NodePods gives the pods on one node (nil without cluster access): the same pods as
	// Cluster's, indexed by node.
	NodePods NodePods
	// PodsChanges tells which nodes' pods changed since a mark (nil where it is not offered):
	// the same pods as NodePods', for an agent that keeps something derived from every node.
	PodsChanges NodePodsChanges
	// PodEvents gives the events of the pods the program already watches (non-terminated pods
	// only: a pod that turns Succeeded or Failed arrives as a deletion, as in kube-scheduler) to
	// the handlers agents add, each pod a *corev1.Pod (or a cache.DeletedFinalStateUnknown
	// holding one). In the extender it is the cluster cache's pod informer, which keeps pods in
	// a compact record of its own and gives each handler a *corev1.Pod of what the cache keeps
	// (package cluster); in plugin mode it is kube-scheduler's pod informer. Objects are shared:
	// never modify them. A handler added in New is synced with the program's informers.
	PodEvents PodEvents
	// Informers is the process's shared informer factory: one informer per resource per
	// process. Its node informer is the one the program already runs; an agent that needs node
	// events adds a handler to it (Informers.Core().V1().Nodes().Informer().AddEventHandler).
	// For pods use PodEvents and NodePods: in the extender the factory's pod informer is not
	// the cache's, and asking for it starts a second watch that keeps every pod in full.
	// Objects are shared: never modify them. An informer an agent asks for in New is started,
	// and waited for, with the program's own (before Start).
	Informers informers.SharedInformerFactory
	// Dynamic gives informers over resources that Informers does not type (custom resources
	// such as PodGroups or TASPolicies), as *unstructured.Unstructured. Informers asked for in
	// New are running when Start is called; the program does not wait for them to sync (a
	// resource whose definition is not installed must not hold back the other agents):
	// the agent checks HasSynced itself.
	Dynamic dynamicinformer.DynamicSharedInformerFactory
	// KubeConfig is the client configuration (a copy each agent may change), for clients of
	// API groups Client does not serve (the custom metrics API).
	KubeConfig *rest.Config
	// Client writes to the API server (node labels, bindings, the agent's own objects).
	Client kubernetes.Interface
	// Events records Kubernetes events on objects (a policy that does not validate, say).
	Events EventRecorder
	// Metrics registers the agent's own Prometheus collectors, served with the extender's at
	// /metrics; nil when the program collects no metrics (tests): an agent then keeps none.
	// Name an agent's series after the agent (safe_stale_nodes).
	Metrics prometheus.Registerer
}

// Starter is implemented by an agent with background work (watching objects, refreshing
// values): the program calls Start once, after the informers the agent asked for in New have
// started and before it serves. Start returns once the work is under way; the work runs until
// ctx is done. An error stops the program.
type Starter interface {
	Start(ctx context.Context) error
}

// ErrNoCluster is what New returns (wrapped) for an agent that cannot work without cluster
// access. A program that chose its agents by default (no explicit AGENTS) leaves such an agent
// out, with a warning, instead of stopping.
var ErrNoCluster = errors.New("needs cluster access (CLUSTER_ACCESS)")

// PodEvents is a source of pod events (a cache.SharedIndexInformer is one).
type PodEvents interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

// EventRecorder records an event on a Kubernetes object. eventType is corev1.EventTypeNormal
// or corev1.EventTypeWarning; reason is a short CamelCase word; message says what happened.
type EventRecorder interface {
	Event(object runtime.Object, eventType, reason, message string)
}

// NewHandle returns a Handle with log (nil: a logger that discards everything) and no
// cluster access: what tests and a program without cluster access give agents.
func NewHandle(log *logrus.Entry) Handle {
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = logrus.NewEntry(l)
	}
	return Handle{Log: log}
}

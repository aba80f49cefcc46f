package framework

import (
	"context"
	"errors"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// Handle is what a program gives every agent it builds: the same for every agent, whichever
// way the agents are run.
type Handle struct {
	// Log is the agent's logger, never nil (tests may give a discarding one: see NewHandle).
	Log *logrus.Entry
	// Cluster is the read-only view of the cluster, nil when the program runs without cluster
	// access.
	Cluster Cluster
	// Client writes to the API server (node labels, bindings, the agent's own objects); nil
	// without cluster access.
	Client kubernetes.Interface
	// Events records Kubernetes events on objects (a policy that does not validate, say); nil
	// without cluster access.
	Events EventRecorder
	// Metrics registers the agent's own Prometheus collectors, served with the extender's at
	// /metrics; nil when the program collects no metrics (tests): an agent then keeps none.
	// Name an agent's series after the agent (safe_stale_nodes).
	Metrics prometheus.Registerer
}

// Starter is implemented by an agent with background work (watching objects, refreshing
// values): the program calls Start once, after the cluster view has started and before it
// serves. Start returns once the work is under way; the work runs until ctx is done. An error
// stops the program.
type Starter interface {
	Start(ctx context.Context) error
}

// ErrNoCluster is what New returns (wrapped) for an agent that cannot work without cluster
// access. A program that chose its agents by default (no explicit AGENTS) leaves such an agent
// out, with a warning, instead of stopping.
var ErrNoCluster = errors.New("needs cluster access (CLUSTER_ACCESS)")

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

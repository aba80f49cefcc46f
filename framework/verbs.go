package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Binder is an optional interface of an Agent that may bind pods itself (kube-scheduler's
// bindVerb). The server routes /scheduler/bind to the one agent whose BindFunc is not nil; two
// such agents in one process is a configuration error, and without one the server answers that
// binding is not supported.
type Binder interface {
	// BindFunc returns the agent's bind function, or nil when the agent, as configured, does
	// not bind.
	BindFunc() BindFunc
}

// BindFunc binds the pod namespace/name (whose UID is uid) to node, through the API server. It
// must be idempotent: binding a pod again to the node it is already bound to succeeds (the
// scheduler retries a bind that timed out). An error is answered in the result's Error.
type BindFunc func(ctx context.Context, namespace, name string, uid types.UID, node string) error

// Preempter is an optional interface of an Agent that takes part in preemption (kube-scheduler's
// preemptVerb). The server calls every agent that implements it, one after another, with the
// candidate nodes the previous ones kept; without any, the scheduler's candidates pass unchanged.
type Preempter interface {
	// Preempt returns, for each candidate node (in order), whether preempting victims there to
	// make room for pod is worth it. An error means it could judge no candidate: the server
	// answers 500 and the scheduler drops the extender's opinion (or fails the pod's preemption).
	Preempt(ctx context.Context, pod *corev1.Pod, nodes []string) ([]bool, error)
}

package framework

// Requeuer is implemented by an agent that can say what may turn its filters' rejections into
// passes. A scheduler retries a pod some plugin rejected when a cluster event may help it:
// kube-scheduler, for a plugin that declares nothing, on every Pod, Node and storage event and
// never on custom resources; with a declaration, exactly on the declared changes (plugin mode
// registers them as the plugin's EventsToRegister with queueing hints). An agent whose verdicts
// depend on something that is no API object (a metric) cannot be woken that way: see
// docs/plugin-mode.md#requeueing.
type Requeuer interface {
	// RequeueOn returns what may change the verdicts of the agent's filter called filter, or
	// nil when the agent does not say (every event then retries the pod).
	RequeueOn(filter string) *RequeueOn
}

// RequeueOn lists the changes that may turn a filter's rejection of a node into a pass. A pod
// the filter rejected is retried when one of them happens, and a new node always retries it;
// other changes (a node's unrelated label or condition, a node deleted) do not.
type RequeueOn struct {
	// NodeAnnotations are node annotations the verdicts read: an update that changes one of
	// them (added, removed or changed) retries the pod.
	NodeAnnotations []string
	// NodeAllocatable: a change of a node's allocatable resources retries the pod.
	NodeAllocatable bool
	// NodeLabels: a change of a node's labels retries the pod.
	NodeLabels bool
	// PodScaleDown: the rejected pod's own requests going down retries it.
	PodScaleDown bool
	// AssignedPodDelete: a pod leaving a node (deleted, or terminated) retries the pod, for a
	// filter whose verdicts read the node's pods.
	AssignedPodDelete bool
	// Resources are custom resources, as "<plural>.<version>.<group>" (the form kube-scheduler's
	// EventResource takes for them), whose any change retries the pod.
	Resources []string
}

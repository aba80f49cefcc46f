package harness

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
)

// BindingTimeout is how long WaitForBinding waits for a pod to be bound: generous, because the
// scheduler retries an unschedulable pod with backoff and the machine may be loaded.
const BindingTimeout = 60 * time.Second

// NodeSpec describes a Node object: no kubelet backs it, the harness writes its status.
type NodeSpec struct {
	Name string
	// CPU, Memory, Pods and EphemeralStorage are both capacity and allocatable (defaults: "4",
	// "8Gi", "110", "100Gi").
	CPU              string
	Memory           string
	Pods             string
	EphemeralStorage string
	// Extra are further resources (e.g. nvidia.com/gpu), capacity and allocatable.
	Extra corev1.ResourceList
	// Labels are added to kubernetes.io/hostname=<Name> and kubernetes.io/os=linux.
	Labels      map[string]string
	Annotations map[string]string
	Taints      []corev1.Taint
	// Unschedulable cordons the node.
	Unschedulable bool
	// NotReady sets the Ready condition to False (default True).
	NotReady bool
}

// CreateNode creates a Node object and writes its status (capacity, allocatable, a Ready
// condition) and returns it.
func (c *Cluster) CreateNode(t T, spec NodeSpec) *corev1.Node {
	t.Helper()
	node, err := c.createNode(t.Context(), spec)
	if err != nil {
		t.Fatalf("creating node %s: %v", spec.Name, err)
	}
	return node
}

// CreateNodes creates each node of specs (see CreateNode).
func (c *Cluster) CreateNodes(t T, specs ...NodeSpec) {
	t.Helper()
	for _, s := range specs {
		c.CreateNode(t, s)
	}
}

func (c *Cluster) createNode(ctx context.Context, spec NodeSpec) (*corev1.Node, error) {
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	list := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:              def(spec.CPU, "4"),
		corev1.ResourceMemory:           def(spec.Memory, "8Gi"),
		corev1.ResourcePods:             def(spec.Pods, "110"),
		corev1.ResourceEphemeralStorage: def(spec.EphemeralStorage, "100Gi"),
	} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", name, v, err)
		}
		list[name] = q
	}
	maps.Copy(list, spec.Extra)
	labels := map[string]string{"kubernetes.io/hostname": spec.Name, "kubernetes.io/os": "linux"}
	maps.Copy(labels, spec.Labels)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels, Annotations: spec.Annotations},
		Spec:       corev1.NodeSpec{Taints: spec.Taints, Unschedulable: spec.Unschedulable},
	}
	created, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	ready := corev1.ConditionTrue
	if spec.NotReady {
		ready = corev1.ConditionFalse
	}
	now := metav1.Now()
	created.Status = corev1.NodeStatus{
		Capacity:    list,
		Allocatable: list.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: "HarnessNode", Message: "created by the e2e harness",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: spec.Name}},
		NodeInfo:  corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"},
	}
	created, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	// The TaintNodesByCondition admission plugin taints every new node not-ready; the node
	// lifecycle controller (not running here) would lift that taint once the node is Ready.
	if !spec.NotReady {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, spec.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Spec.Taints = spec.Taints
			created, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
	}
	return created, err
}

// UpdateNode applies mutate to the current node object and writes it back (spec and metadata),
// retrying on conflicts; it returns the stored node.
func (c *Cluster) UpdateNode(t T, name string, mutate func(*corev1.Node)) *corev1.Node {
	t.Helper()
	var out *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(n)
		out, err = c.Client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating node %s: %v", name, err)
	}
	return out
}

// PodSpec describes a pod for CreatePod. Its single container requests CPU and Memory.
type PodSpec struct {
	Name string
	// Namespace defaults to "default".
	Namespace string
	// SchedulerName picks the scheduler profile (empty: default-scheduler, which no test runs).
	SchedulerName string
	// CPU and Memory are the container's requests; empty means none.
	CPU    string
	Memory string
	// Extra are further requests (and limits, for extended resources).
	Extra corev1.ResourceList
	// NodeName binds the pod at creation, without any scheduler: a way to give nodes usage.
	NodeName    string
	Labels      map[string]string
	Annotations map[string]string
	// Image defaults to registry.k8s.io/pause:3.10 (never pulled: no kubelet runs).
	Image string
}

// Pod returns the pod object spec describes, not yet created.
func (spec PodSpec) Pod() (*corev1.Pod, error) {
	ns := spec.Namespace
	if ns == "" {
		ns = "default"
	}
	image := spec.Image
	if image == "" {
		image = "registry.k8s.io/pause:3.10"
	}
	req := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: spec.CPU, corev1.ResourceMemory: spec.Memory} {
		if v == "" {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", name, v, err)
		}
		req[name] = q
	}
	var limits corev1.ResourceList
	for name, q := range spec.Extra {
		req[name] = q
		if !strings.Contains(string(name), "/") || strings.HasPrefix(string(name), "kubernetes.io/") {
			continue
		}
		if limits == nil {
			limits = corev1.ResourceList{}
		}
		limits[name] = q // extended resources need limit == request
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: ns, Labels: spec.Labels, Annotations: spec.Annotations},
		Spec: corev1.PodSpec{
			SchedulerName: spec.SchedulerName,
			NodeName:      spec.NodeName,
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     image,
				Resources: corev1.ResourceRequirements{Requests: req, Limits: limits},
			}},
		},
	}, nil
}

// CreatePod creates the pod spec describes and returns it.
func (c *Cluster) CreatePod(t T, spec PodSpec) *corev1.Pod {
	t.Helper()
	pod, err := spec.Pod()
	if err != nil {
		t.Fatalf("pod %s: %v", spec.Name, err)
	}
	created, err := c.Client.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return created
}

// DeletePod deletes a pod at once (grace period 0: no kubelet would confirm a graceful one).
func (c *Cluster) DeletePod(t T, namespace, name string) {
	t.Helper()
	zero := int64(0)
	err := c.Client.CoreV1().Pods(namespace).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting pod %s/%s: %v", namespace, name, err)
	}
}

// WaitForBinding waits up to BindingTimeout for the pod to be bound and returns its node's name.
// On timeout it fails t, quoting the pod's events.
func (c *Cluster) WaitForBinding(t T, namespace, name string) string {
	t.Helper()
	return c.WaitForBindingWithin(t, namespace, name, BindingTimeout)
}

// WaitForBindingWithin is WaitForBinding with another deadline.
func (c *Cluster) WaitForBindingWithin(t T, namespace, name string, timeout time.Duration) string {
	t.Helper()
	var node string
	err := poll(t.Context(), timeout, func(ctx context.Context) (bool, error) {
		pod, err := c.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // the API server may be restarting; keep waiting
		}
		node = pod.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s was not bound within %s; its events:\n%s", namespace, name, timeout,
			FormatEvents(c.events(namespace, name)))
	}
	return node
}

// PodNode returns the node a pod is bound to, "" when it is not bound.
func (c *Cluster) PodNode(t T, namespace, name string) string {
	t.Helper()
	pod, err := c.Client.CoreV1().Pods(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s/%s: %v", namespace, name, err)
	}
	return pod.Spec.NodeName
}

// Events returns the events about the named object in namespace (pods, mostly), oldest first.
// The scheduler writes events.k8s.io/v1 events; they read the same through core/v1, with the
// note as Message.
func (c *Cluster) Events(t T, namespace, name string) []corev1.Event {
	t.Helper()
	return c.events(namespace, name)
}

func (c *Cluster) events(namespace, name string) []corev1.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := c.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		return []corev1.Event{{Reason: "HarnessError", Message: "listing events: " + err.Error()}}
	}
	ev := list.Items
	sort.SliceStable(ev, func(i, j int) bool { return eventTime(ev[i]).Before(eventTime(ev[j])) })
	return ev
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// WaitForEvent waits up to BindingTimeout for an event about the named object with the given
// reason (e.g. "FailedScheduling") whose message contains every string of contains, and returns
// it. On timeout it fails t, quoting the events seen.
func (c *Cluster) WaitForEvent(t T, namespace, name, reason string, contains ...string) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := poll(t.Context(), BindingTimeout, func(context.Context) (bool, error) {
		for _, e := range c.events(namespace, name) {
			if e.Reason != reason {
				continue
			}
			ok := true
			for _, s := range contains {
				ok = ok && strings.Contains(e.Message, s)
			}
			if ok {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event about %s/%s containing %q within %s; its events:\n%s", reason, namespace, name,
			contains, BindingTimeout, FormatEvents(c.events(namespace, name)))
	}
	return found
}

// FormatEvents renders events one per line: type, reason, source, message.
func FormatEvents(events []corev1.Event) string {
	if len(events) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, e := range events {
		src := e.ReportingController
		if src == "" {
			src = e.Source.Component
		}
		fmt.Fprintf(&b, "  %s %s (%s): %s\n", e.Type, e.Reason, src, e.Message)
	}
	return strings.TrimRight(b.String(), "\n")
}

// poll calls cond every 200 ms until it returns true or an error, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		ok, err := cond(cctx)
		ccancel()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Package reward is the reward agent (the original system's kubeRL): it learns, from pod
// outcomes, which nodes each kind of workload fails on, and steers that workload away from them.
// A learner fed by the shared pod informer keeps a reward per (pod type, node), a moving average
// of the outcomes observed there; the prioritizer "reward" scores node n for a pod of type t as
// 10 x r(t, n). The table lives in a ConfigMap written behind by one replica (a Lease elects
// it); the agent may also bind pods (BIND) and drops preemption candidates where the pod's type
// does badly. The model and knobs are in README.md.
package reward

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Name is the agent's name and build tag.
const Name = "reward"

// PriorityReward is the prioritizer's name: the route /scheduler/priorities/reward.
const PriorityReward = "reward"

// Config holds the agent's settings; DefaultConfig holds the defaults and Validate is the only
// check.
type Config struct {
	Weight          float64            `json:"weight" range:"(0,1]" env:"REWARD_WEIGHT" flag:"reward-weight" help:"weight w of a new observation in the moving average r <- (1-w) r + w x (0 < w <= 1)"`
	Initial         float64            `json:"initial" range:"[0,1]" env:"REWARD_INITIAL" flag:"reward-initial" help:"reward of a (pod type, node) never observed, and the value rewards drift back to (0..1)"`
	MTTF            framework.Duration `json:"mttf" range:"[0s,8760h]" env:"REWARD_MTTF" flag:"reward-mttf" help:"a container restart after running less than this counts 0, otherwise 0.5"`
	HalfLife        framework.Duration `json:"halfLife" range:"[0s,87600h]" env:"REWARD_HALF_LIFE" flag:"reward-half-life" help:"time for a reward's distance to the initial value to halve without new evidence (0: no drift)"`
	MinObservations int                `json:"minObservations" range:"[0,1000]" env:"REWARD_MIN_OBSERVATIONS" flag:"reward-min-observations" help:"below this many observations of a type on a node, blend with the node's reward over all types (0: off)"`
	StartTimeout    framework.Duration `json:"startTimeout" range:"[1s,24h]" env:"REWARD_START_TIMEOUT" flag:"reward-start-timeout" help:"a pod bound this long without running counts 0 (image pull, volume errors)"`
	FlushInterval   framework.Duration `json:"flushInterval" range:"[100ms,1h]" env:"REWARD_FLUSH_INTERVAL" flag:"reward-flush-interval" help:"how often the leader writes the table to its ConfigMap (and others reload it): at most this much is lost on a restart"`
	MaxEntries      int                `json:"maxEntries" range:"[2,8000]" env:"REWARD_MAX_ENTRIES" flag:"reward-max-entries" help:"most (pod type, node) rows kept; the least recently observed go first"`
	PreemptMin      float64            `json:"preemptMin" range:"[0,1]" env:"REWARD_PREEMPT_MIN" flag:"reward-preempt-min" help:"preemption candidates where the pod's type has a lower reward are dropped (0..1; 0 keeps all)"`
	Bind            bool               `json:"bind" env:"BIND" flag:"bind" help:"bind pods through the API server (the extender's bindVerb); a bind failure counts 0"`
	Namespace       string             `json:"namespace" env:"REWARD_NAMESPACE" flag:"reward-namespace" help:"namespace of the table's ConfigMap and Lease (empty: the pod's own namespace, else kube-system)"`
	Object          string             `json:"object" env:"REWARD_OBJECT" flag:"reward-object" help:"name of the table's ConfigMap and of the Lease electing its writer"`
	LeaseDuration   framework.Duration `json:"leaseDuration" range:"[3s,10m]" env:"REWARD_LEASE_DURATION" flag:"reward-lease-duration" help:"how long a writer's Lease lasts without renewal: the longest a leader change takes"`
}

// DefaultConfig returns the configuration with every default.
func DefaultConfig() Config {
	return Config{
		Weight:        0.1,
		Initial:       1.0,
		MTTF:          framework.Duration(600 * time.Second),
		HalfLife:      framework.Duration(24 * time.Hour),
		StartTimeout:  framework.Duration(5 * time.Minute),
		FlushInterval: framework.Duration(10 * time.Second),
		MaxEntries:    5000,
		PreemptMin:    0.2,
		Object:        "reward-table",
		LeaseDuration: framework.Duration(15 * time.Second),
	}
}

// Validate reports every bad field, each as a settings.FieldError.
func (c Config) Validate() error {
	// The ranges are the fields' tags: weight excludes 0 (it would never learn), maxEntries keeps
	// the stored table (about 100 bytes a row) well under a ConfigMap's 1 MiB.
	errs := []error{settings.Check(c)}
	if c.Namespace != "" {
		if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
			errs = append(errs, settings.Fieldf("namespace", "%q is not a namespace name: %v", c.Namespace, msgs))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(c.Object); len(msgs) > 0 {
		errs = append(errs, settings.Fieldf("object", "%q is not an object name: %v", c.Object, msgs))
	}
	return errors.Join(errs...)
}

// Registration offers the agent to the programs that run agents (agents.All, the extender's
// build-tagged file): its functions, and its port and weights in the shipped deployments.
var Registration = framework.Register(Name, DefaultConfig, New, framework.Offer{
	Prioritizers: []framework.Weighted{{Name: PriorityReward, Weight: 2}},
	Bind:         true,
	Preempt:      true,
	Port:         5407,
	Cluster:      framework.ClusterInformers, // pod events and its learned store
})

// Agent is the reward agent.
type Agent struct {
	cfg    Config
	log    *logrus.Entry
	client kubernetes.Interface
	// pods gives the pod events the learner follows (nil without cluster access).
	pods framework.PodEvents
	// terminated is the agent's own informer of the pods in a terminal phase, which the shared
	// one leaves out (nil without cluster access).
	terminated cache.SharedIndexInformer
	now        func() time.Time

	table *table
	store *store

	// mu serializes the learner: pod changes, the timeout sweep and bind failures.
	mu      sync.Mutex
	learner *learner
	// since is the stored table's observedUntil when this process loaded it (see learner.update).
	since time.Time
	// finals pairs the two informers' news of a pod that terminated: its state when it left the
	// shared informer, or its final phase from the terminated informer, whichever came first.
	finals map[types.UID]final
}

// final is one half of a terminated pod's news, kept until the other half arrives.
type final struct {
	st    *podState
	phase corev1.PodPhase
	at    time.Time
}

// finalWait is how long one informer's news of a terminated pod waits for the other's. The two
// watches deliver the same change within moments of each other; a half left unpaired (the pod
// was deleted before its terminal phase was seen) is dropped.
const finalWait = 2 * time.Minute

var (
	_ framework.Agent     = (*Agent)(nil)
	_ framework.Starter   = (*Agent)(nil)
	_ framework.Binder    = (*Agent)(nil)
	_ framework.Preempter = (*Agent)(nil)
)

// New returns the agent for cfg. It learns from the program's pod events (h.PodEvents) and keeps
// its table through h.Client. Without cluster access (either nil) it learns nothing and scores
// every node by the initial reward.
func New(cfg Config, h framework.Handle) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid reward config: %w", err)
	}
	a := &Agent{
		cfg:    cfg,
		log:    h.Log,
		client: h.Client,
		now:    time.Now,
		table: newTable(model{weight: cfg.Weight, initial: cfg.Initial, halfLife: cfg.HalfLife.D(),
			minObservations: cfg.MinObservations}, cfg.MaxEntries),
		learner: newLearner(cfg.MTTF.D(), cfg.StartTimeout.D()),
		finals:  map[types.UID]final{},
	}
	if h.PodEvents != nil && h.Client != nil {
		a.pods = h.PodEvents
		a.terminated = terminatedPods(h.Client)
		a.store = newStore(cfg, h.Client, h.Log, a.table)
	} else {
		h.Log.Warn("no cluster access: the reward agent learns nothing and scores every node by its initial reward")
	}
	if err := a.registerMetrics(h.Metrics); err != nil {
		return nil, err
	}
	return a, nil
}

// Name implements framework.Agent.
func (a *Agent) Name() string { return Name }

// Filters implements framework.Agent: none.
func (a *Agent) Filters() []framework.Filter { return nil }

// Prioritizers implements framework.Agent.
func (a *Agent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{{Name: PriorityReward, Func: a.score}}
}

// score gives node n, for a pod of type t, round(10 x r(t, n)).
func (a *Agent) score(_ context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	typ, now := PodType(pod), a.now()
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		out[i] = score(a.table.reward(typ, n.Name, now))
	}
	return out, nil
}

// Preempt implements framework.Preempter: it keeps the candidates where the pod's type has a
// reward of at least PreemptMin; evicting pods to land where this workload fails helps nobody.
func (a *Agent) Preempt(_ context.Context, pod *corev1.Pod, nodes []string) ([]bool, error) {
	typ, now := PodType(pod), a.now()
	keep := make([]bool, len(nodes))
	for i, n := range nodes {
		keep[i] = a.table.reward(typ, n, now) >= a.cfg.PreemptMin
	}
	return keep, nil
}

// BindFunc implements framework.Binder: the agent binds when BIND is on and it has cluster access.
func (a *Agent) BindFunc() framework.BindFunc {
	if !a.cfg.Bind {
		return nil
	}
	return a.bind
}

// bind creates the pod's Binding to node. Binding a pod again to its node succeeds; a pod bound
// elsewhere is an error. A node that does not exist, or a Binding the API server refuses for a
// reason other than the pod's own state, is an observation 0 for the pod's type on that node.
func (a *Agent) bind(ctx context.Context, namespace, name string, uid types.UID, node string) error {
	if a.client == nil {
		return errors.New("the extender runs without cluster access and cannot bind: give it a kubeconfig or remove bindVerb")
	}
	if _, err := a.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			a.bindFailed(ctx, namespace, name, uid, node, "node does not exist")
			return fmt.Errorf("node %s does not exist", node)
		}
		return fmt.Errorf("reading node %s: %w", node, err)
	}
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	err := a.client.CoreV1().Pods(namespace).Bind(ctx, b, metav1.CreateOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		p, gerr := a.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("%w (and reading the pod: %v)", err, gerr)
		}
		if uid != "" && p.UID != uid {
			return fmt.Errorf("pod %s/%s is another pod now (uid %s, not %s)", namespace, name, p.UID, uid)
		}
		if p.Spec.NodeName == node {
			return nil // bound there already: a retried bind
		}
		if p.Spec.NodeName != "" {
			return fmt.Errorf("pod %s/%s is already bound to node %s, not %s", namespace, name, p.Spec.NodeName, node)
		}
		return err
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err):
		return err // the pod is gone or we may not bind: nothing of the node
	}
	a.bindFailed(ctx, namespace, name, uid, node, err.Error())
	return err
}

// bindFailed observes 0 for the pod's type on node, once per pod and node.
func (a *Agent) bindFailed(ctx context.Context, namespace, name string, uid types.UID, node, why string) {
	a.mu.Lock()
	st := a.learner.pods[uid]
	a.mu.Unlock()
	typ := ""
	if st != nil {
		typ = st.typ
	} else if p, err := a.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		typ = PodType(p)
	} else {
		typ = name
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if st != nil {
		if st.bindFailed == nil {
			st.bindFailed = map[string]bool{}
		}
		if st.bindFailed[node] {
			return
		}
		st.bindFailed[node] = true
	}
	a.apply([]observation{{typ: typ, node: node, x: xFailed, why: "bind failed: " + why}})
}

// apply learns observations (a.mu held).
func (a *Agent) apply(obs []observation) {
	now := a.now()
	for _, o := range obs {
		a.table.observe(o.typ, o.node, o.x, now)
		if a.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
			a.log.WithFields(logrus.Fields{"type": o.typ, "node": o.node, "x": o.x, "why": o.why,
				"reward": a.table.reward(o.typ, o.node, now)}).Debug("observation")
		}
	}
}

// podEvents turns fn into a handler of the pod informer's events: an addition has old nil (pods
// already in the cache arrive as additions), a deletion has new nil and old the pod's last
// known state (also when the informer missed the deletion itself).
func podEvents(fn func(old, new *corev1.Pod)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				fn(nil, p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 {
				fn(o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				fn(p, nil)
			}
		},
	}
}

// onPod learns from one pod change (called by the pod informer, one change at a time). The
// informer leaves terminated pods out (in both modes, as kube-scheduler's does): a pod that
// turns Succeeded or Failed arrives as a deletion carrying its last non-terminated state, and
// its final phase comes from the terminated informer (onFinal), in either order.
func (a *Agent) onPod(old, new *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if new != nil {
		a.apply(a.learner.update(new, a.since, a.now()))
		return
	}
	st := a.learner.gone(old.UID)
	if st == nil || st.node == "" || st.deleting || old.DeletionTimestamp != nil {
		return
	}
	if f, ok := a.finals[old.UID]; ok {
		delete(a.finals, old.UID)
		if o, ok := terminal(st, f.phase); ok {
			a.apply([]observation{o})
		}
		return
	}
	a.finals[old.UID] = final{st: st, at: a.now()}
}

// onFinal learns a pod's terminal phase from the terminated informer (additions and updates);
// initial says the pod came with the informer's initial list.
func (a *Agent) onFinal(p *corev1.Pod, initial bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := a.finals[p.UID]; ok && f.st != nil {
		delete(a.finals, p.UID)
		if o, ok := terminal(f.st, p.Status.Phase); ok {
			a.apply([]observation{o})
		}
		return
	}
	// Pods that had terminated before this process started (the initial list) teach nothing
	// unless the learner follows them. A pod that terminates later waits for the shared
	// informer's news even when the learner does not follow it yet: the two informers are
	// independent, and the terminated one may bring a pod created and failed at once before the
	// shared one brings its addition (a failure was lost that way under load, issue 38).
	if !initial || a.learner.follows(p.UID) {
		a.finals[p.UID] = final{phase: p.Status.Phase, at: a.now()}
	}
}

// sweep observes the pods that have not started within the start timeout.
func (a *Agent) sweep() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.apply(a.learner.sweep(a.since, now))
	for uid, f := range a.finals {
		if now.Sub(f.at) >= finalWait {
			delete(a.finals, uid)
		}
	}
}

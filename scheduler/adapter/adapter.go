// Package adapter turns agents into kube-scheduler framework plugins, knowing no agent: every
// filter function of an agent becomes a Filter plugin and every prioritize function a Score
// plugin (with PreScore), named as the function; a name that is both (safe-overload) is one
// plugin with both extension points.
//
// Beside them, the plugin agents (CombinedName, combined.go) runs several agent functions of a
// profile, listed in its args with their weights, in one framework plugin: one Filter and one
// Score per node, so that kube-scheduler's per-plugin work is paid once.
//
// Each scheduler profile gets one instance of each agent whose plugins it enables, shared by
// all of that agent's plugins and configured once, from the pluginConfig args of whichever of
// its plugins carries them (see Adapter.Factory).
//
// How the framework's calls map onto the agents' functions:
//   - PreFilter (once per cycle): caches the snapshot's node list and positions; no node is
//     judged yet.
//   - Filter (per node, in parallel): the FilterFunc judges the chunk of 16 consecutive nodes of
//     the list holding the node, once per cycle (cycle.go), so only the nodes the scheduler asks
//     about (percentageOfNodesToScore) are judged. A rejection keeps its reason (Unschedulable,
//     or UnschedulableAndUnresolvable). An error of the function is an Error status, which fails
//     the pod's cycle as a failing extender filter does. Enabled at filter without preFilter, it
//     calls the FilterFunc with the one node.
//   - EventsToRegister: what the agent declares may change its filter's verdicts
//     (framework.Requeuer), with a queueing hint for node updates (requeue.go).
//   - PreScore (once per cycle, with the feasible nodes): prepares the cycle's scores in chunks
//     (cycle.go): Score asks for a node and the PrioritizeFunc scores the chunk of 32
//     consecutive feasible nodes holding it, once, so a node the scheduler does not score is
//     never scored. A prioritizer that scores a node relative to the others (like
//     pigeon-holing: framework.Prioritizer.WholeList), and every prioritizer while decisions
//     are kept (DECISIONS_KEPT), is called once in PreScore with every feasible node. The
//     scores, 0..10, are scaled to the framework's 0..100. An error of the function is logged:
//     the nodes of a chunk it failed to score get 0 for the pod, and a failed call over every
//     node skips the plugin's Score, as kube-scheduler ignores a failing extender prioritizer.
//   - Score (per node): reads the node's score, scoring its chunk first when needed.
//
// Nodes reach the agents as framework.NodeView of the scheduler's NodeInfo nodes, memoized by
// name and resourceVersion.
package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// Adapter holds the plugins made of a list of agents. It is safe for concurrent use.
type Adapter struct {
	regs map[string]framework.Registration // by agent name
	// specs are the plugins, by name.
	specs map[string]spec
	// views memoizes the NodeView of the scheduler's nodes.
	views framework.NodeMemo[*corev1.Node]
	// all holds the views of the snapshot's whole node list, for as long as it does not change.
	all listViews

	mu sync.Mutex
	// profiles holds the agents built for each profile (keyed by the profile's framework
	// handle), by agent name.
	profiles map[fwk.Handle]map[string]*agentSlot
	// dynamic is the process's one factory of informers over other resources (custom
	// resources), shared by every profile's agents; built from the scheduler's client
	// configuration by the first agent build that has one.
	dynamic dynamicinformer.DynamicSharedInformerFactory
	// decisions keeps the last decisions (nil: none kept; KeepDecisions).
	decisions *Decisions
}

// spec is what a plugin is: an agent's filter function, prioritize function, or both, of one name.
type spec struct {
	agent               string
	filter, prioritizer bool
}

// New returns the plugins of the agents regs, whose functions each Registration names (no agent
// is built here). Two agents offering a function of the same name, or an agent offering no
// function, is an error.
func New(regs []framework.Registration) (*Adapter, error) {
	a := &Adapter{regs: map[string]framework.Registration{}, specs: map[string]spec{}, profiles: map[fwk.Handle]map[string]*agentSlot{}}
	for _, r := range regs {
		if _, dup := a.regs[r.Name]; dup {
			return nil, fmt.Errorf("agent %s is listed twice", r.Name)
		}
		a.regs[r.Name] = r
		add := func(name string, filter bool) error {
			s, ok := a.specs[name]
			if ok && s.agent != r.Name {
				return fmt.Errorf("agents %s and %s both offer a function named %s: plugin names must be unique", s.agent, r.Name, name)
			}
			if ok && (filter && s.filter || !filter && s.prioritizer) {
				return fmt.Errorf("agent %s offers two functions of kind %s named %s", r.Name, kind(filter), name)
			}
			s.agent = r.Name
			if filter {
				s.filter = true
			} else {
				s.prioritizer = true
			}
			a.specs[name] = s
			return nil
		}
		if slices.Contains(r.Filters, CombinedName) || slices.ContainsFunc(r.Prioritizers, func(p framework.Weighted) bool { return p.Name == CombinedName }) {
			return nil, fmt.Errorf("agent %s offers a function named %s, the name of the plugin that combines functions", r.Name, CombinedName)
		}
		for _, f := range r.Filters {
			if err := add(f, true); err != nil {
				return nil, err
			}
		}
		for _, p := range r.Prioritizers {
			if err := add(p.Name, false); err != nil {
				return nil, err
			}
		}
		if len(r.Filters)+len(r.Prioritizers) == 0 {
			return nil, fmt.Errorf("agent %s offers no function", r.Name)
		}
	}
	return a, nil
}

func kind(filter bool) string {
	if filter {
		return "filter"
	}
	return "prioritize"
}

// Names returns the names of the agent functions' plugins, sorted (CombinedName, the plugin
// that runs several of them, is not among them).
func (a *Adapter) Names() []string {
	names := make([]string, 0, len(a.specs))
	for n := range a.specs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Describe returns, for each plugin name, its agent and extension points, for messages and docs.
func (a *Adapter) Describe(name string) (agent string, filter, score bool) {
	s := a.specs[name]
	return s.agent, s.filter, s.prioritizer
}

// Registry returns every plugin's factory (the functions' and CombinedName's), for
// frameworkruntime.NewFramework or app.WithPlugin.
func (a *Adapter) Registry() frameworkruntime.Registry {
	r := frameworkruntime.Registry{CombinedName: a.Factory(CombinedName)}
	for name := range a.specs {
		r[name] = a.Factory(name)
	}
	return r
}

// Factory returns the factory of the plugin called name (one of Names).
//
// Configuration: an agent is configured from the pluginConfig args of whichever of its plugins
// carries them, decoded strictly (an unknown or repeated field is an error naming it) into the
// agent's Config holding its defaults, then checked by its Validate. Several plugins of one
// agent may carry args only if they decode to the same configuration; an agent none of whose
// plugins carries args runs with its defaults. The agent is built by the first of its plugins the
// scheduler creates, and built again, once, if a later one brings the args.
func (a *Adapter) Factory(name string) frameworkruntime.PluginFactory {
	if name == CombinedName {
		return a.newCombined
	}
	s, ok := a.specs[name]
	return func(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
		if !ok {
			return nil, fmt.Errorf("no agent offers a function named %s", name)
		}
		fns, err := a.configure(ctx, name, name, s.agent, args, fh)
		if err != nil {
			return nil, err
		}
		b := base{name: name, adapter: a, fns: fns}
		filterKey, scoreKey := stateKey("filter", name), stateKey("score", name)
		switch {
		case s.filter && s.prioritizer:
			return &filterScorePlugin{filterPlugin{base: b, key: filterKey}, scorePlugin{base: b, key: scoreKey}}, nil
		case s.filter:
			return &filterPlugin{base: b, key: filterKey}, nil
		default:
			return &scorePlugin{base: b, key: scoreKey}, nil
		}
	}
}

// agentSlot is one profile's instance of an agent.
type agentSlot struct {
	agent   framework.Agent
	cluster *snapshotCluster
	// wholeCluster is the agent's Registration's Offer.WholeCluster.
	wholeCluster bool
	// argsFrom names the plugin whose args configured the agent ("" while it has its defaults);
	// config is that configuration in JSON, to compare other plugins' args with.
	argsFrom string
	config   []byte
	// fns are the functions of the agent's plugins, by function name (the plugin's, or one of
	// the combined plugin's); each plugin holds its entry, which a rebuild updates in place
	// (before the scheduler starts).
	fns map[string]*funcs
}

// funcs are the agent functions behind one plugin, and what SignPod needs to know of them.
type funcs struct {
	filter framework.FilterFunc
	// wholeList: the filter judges every node of the list in one call (framework.Filter),
	// unless forList gives a function for the cycle's list that judges chunk by chunk;
	// batchable: it declares its verdicts reusable by batching (framework.Filter.Batchable).
	wholeList, batchable bool
	forList              func(ctx context.Context, pod *corev1.Pod, list []*corev1.Node) (framework.FilterFunc, error)
	prioritize           framework.PrioritizeFunc
	// scoresWholeList: the prioritize function scores a node by the other nodes scored with it
	// (framework.Prioritizer.WholeList), so PreScore scores every feasible node in one call;
	// otherwise Score asks chunk by chunk (chunkScores).
	scoresWholeList bool
	// cluster is the agent's Cluster, which records whether the agent has read all of it;
	// wholeCluster: the agent says it does (framework.Offer.WholeCluster).
	cluster      *snapshotCluster
	wholeCluster bool
	// requeue is what the agent says may change the filter's verdicts (nil: it does not say).
	requeue *framework.RequeueOn
	// agent is the agent's name and explainer its framework.Explainer (nil: it does not explain),
	// for the decisions kept.
	agent     string
	explainer framework.Explainer
}

// configure returns the function fn of agent, for plugin name (fn itself, or CombinedName), in
// fh's profile, building or rebuilding the agent as the plugin's args for it require.
func (a *Adapter) configure(ctx context.Context, name, fn, agent string, args runtime.Object, fh fwk.Handle) (*funcs, error) {
	reg := a.regs[agent]
	cfg, given, err := decodeArgs(reg, args)
	if err != nil {
		return nil, fmt.Errorf("plugin %s (agent %s): pluginConfig args: %w", name, agent, err)
	}
	var cfgJSON []byte
	if given {
		if cfgJSON, err = json.Marshal(cfg); err != nil {
			return nil, fmt.Errorf("plugin %s (agent %s): %w", name, agent, err)
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	slots := a.profiles[fh]
	if slots == nil {
		slots = map[string]*agentSlot{}
		a.profiles[fh] = slots
	}
	slot := slots[agent]
	if slot == nil {
		slot = &agentSlot{fns: map[string]*funcs{}}
		slots[agent] = slot
	}
	fns := slot.fns[fn]
	if fns == nil {
		fns = &funcs{}
		slot.fns[fn] = fns
	}
	log := klog.FromContext(ctx).WithValues("agent", agent)
	switch {
	case given && slot.argsFrom != "":
		if string(cfgJSON) != string(slot.config) {
			return nil, fmt.Errorf("plugins %s and %s of agent %s both carry pluginConfig args, and they differ (%s and %s): "+
				"an agent is configured once; give its args on one of its plugins, or the same on each",
				slot.argsFrom, name, agent, slot.config, cfgJSON)
		}
	case given:
		if err := a.build(ctx, slot, reg, cfg, fh, log); err != nil {
			return nil, fmt.Errorf("plugin %s (agent %s): %w", name, agent, err)
		}
		slot.argsFrom, slot.config = name, cfgJSON
		log.Info("Agent configured from pluginConfig args", "plugin", name, "config", string(cfgJSON))
	case slot.agent == nil:
		if err := a.build(ctx, slot, reg, cfg, fh, log); err != nil {
			return nil, fmt.Errorf("plugin %s (agent %s) with the agent's default configuration: %w", name, agent, err)
		}
	}
	if err := slot.bind(fn, fns); err != nil {
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	return fns, nil
}

// build makes the slot's agent from cfg and points every plugin already created at its
// functions.
//
// Informers: those an agent asks of the scheduler's SharedInformerFactory are started, and
// waited for, by kube-scheduler itself once every plugin is built (app.Run starts the factory
// after Setup built the profiles); those it asks of Handle.Dynamic are started here, before the
// agent's Start, as the extender starts them before its agents'.
func (a *Adapter) build(ctx context.Context, slot *agentSlot, reg framework.Registration, cfg framework.Config, fh fwk.Handle, log klog.Logger) error {
	h, err := a.agentHandle(ctx, fh, log)
	if err != nil {
		return err
	}
	agent, err := reg.New(cfg, h)
	var fe *settings.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("pluginConfig args: %w", describe(err))
	}
	if err != nil {
		return err
	}
	if h.Dynamic != nil {
		h.Dynamic.Start(ctx.Done())
	}
	// Background work (reward's learner) starts with the agent and stops with the scheduler.
	if st, ok := agent.(framework.Starter); ok {
		if err := st.Start(ctx); err != nil {
			return fmt.Errorf("starting: %w", err)
		}
	}
	slot.agent, slot.cluster, slot.wholeCluster = agent, h.Cluster.(*snapshotCluster), reg.WholeCluster
	if !reg.WholeCluster {
		slot.cluster.agent, slot.cluster.log = reg.Name, log
	}
	for name, fns := range slot.fns {
		if err := slot.bind(name, fns); err != nil {
			return err
		}
	}
	return nil
}

// bind points fns at the functions called name of the slot's agent.
func (s *agentSlot) bind(name string, fns *funcs) error {
	fns.filter, fns.wholeList, fns.batchable, fns.forList, fns.prioritize, fns.scoresWholeList, fns.requeue = nil, false, false, nil, nil, false, nil
	fns.cluster, fns.wholeCluster = s.cluster, s.wholeCluster
	fns.agent, fns.explainer = s.agent.Name(), nil
	if ex, ok := s.agent.(framework.Explainer); ok {
		fns.explainer = ex
	}
	for _, f := range s.agent.Filters() {
		if f.Name == name {
			fns.filter, fns.wholeList = f.Func, f.WholeList
			if f.WholeList {
				fns.forList, fns.batchable = f.ForList, f.Batchable
			}
			if r, ok := s.agent.(framework.Requeuer); ok {
				fns.requeue = r.RequeueOn(name)
			}
		}
	}
	for _, p := range s.agent.Prioritizers() {
		if p.Name == name {
			fns.prioritize, fns.scoresWholeList = p.Func, p.WholeList
		}
	}
	if fns.filter == nil && fns.prioritize == nil {
		return fmt.Errorf("agent %s, as configured, offers no function named %s", s.agent.Name(), name)
	}
	return nil
}

// agentHandle is what agents get in plugin mode: a logger into klog, the cluster as the
// scheduler's snapshot sees it, and the scheduler's own means of reaching the cluster: its
// shared informer factory (the scheduler's pod and node informers: no second watch in the
// process), client, client configuration and event recorder, with the adapter's dynamic
// informer factory over that configuration. A field the framework handle lacks (tests build
// frameworks with a client only) stays nil.
func (a *Adapter) agentHandle(ctx context.Context, fh fwk.Handle, log klog.Logger) (framework.Handle, error) {
	sc := newSnapshotCluster(fh, a)
	h := framework.Handle{Log: logrusTo(log), Cluster: sc, NodePods: sc, PodsChanges: sc}
	if c := fh.ClientSet(); c != nil {
		h.Client = c
	}
	var sending func() bool // see eventRecorder
	if f := fh.SharedInformerFactory(); f != nil {
		pods := f.Core().V1().Pods().Informer()
		h.Informers, h.PodEvents = f, pods
		sending = pods.HasSynced
	}
	if r := fh.EventRecorder(); r != nil {
		h.Events = newEventRecorder(ctx, r, sending)
	}
	if rc := fh.KubeConfig(); rc != nil {
		h.KubeConfig = rest.CopyConfig(rc)
		if a.dynamic == nil {
			dyn, err := dynamic.NewForConfig(rest.CopyConfig(rc))
			if err != nil {
				return framework.Handle{}, fmt.Errorf("dynamic client: %w", err)
			}
			a.dynamic = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
		}
		h.Dynamic = a.dynamic
	}
	return h, nil
}

// stateKey is the CycleState key of a plugin's verdicts (kind filter) or scores (kind score).
func stateKey(kind, name string) fwk.StateKey {
	return fwk.StateKey("kube-safe-scheduler/" + kind + "/" + name)
}

// view returns the NodeView of the scheduler's node n, memoized.
func (a *Adapter) view(n *corev1.Node) *corev1.Node { return a.views.Get(n, framework.NodeView) }

// listViews holds the views of one list of nodes: the snapshot's list of every node, which
// PreFilter and Cluster.Nodes ask for on every pod and which changes only when a node does.
type listViews struct {
	mu   sync.Mutex
	list *nodeList
}

// nodeList is one list of nodes with their views and each node's position in it, by the
// scheduler's node object (a pointer hashes faster than a name, and a node object found is the
// one listed). It is never modified once built.
type nodeList struct {
	src, views []*corev1.Node
	pos        positionTable // of src's nodes: position finds one
	// infos are the NodeInfos of src, by position (PodsGenerationAt), and iota the positions
	// 0..len-1, of which a chunk of consecutive nodes takes its framework.Positions.At.
	infos []fwk.NodeInfo
	iota  []int32
	// chunks are the Positions of the list's chunks of judgeChunk nodes, and all of its every
	// node, made with the list: Filter hands a chunk's to its filter on every pod.
	chunks []framework.Positions
	all    framework.Positions
}

var _ framework.NodeList = (*nodeList)(nil)

// Len implements framework.NodeList.
func (l *nodeList) Len() int { return len(l.views) }

// Node implements framework.NodeList: the view at position i.
func (l *nodeList) Node(i int) *corev1.Node { return l.views[i] }

// position returns the position of the node object n in the list.
func (l *nodeList) position(n *corev1.Node) (int32, bool) { return l.pos.get(l.src, n) }

// PodsGenerationAt implements framework.NodeList: the generation of the NodeInfo at position
// i, the one snapshotCluster.PodsGeneration finds by the node's name (the snapshot's list and
// map hold the same NodeInfo objects, which kube-scheduler updates in place).
func (l *nodeList) PodsGenerationAt(i int) int64 {
	if c, ok := l.infos[i].(*schedframework.NodeInfo); ok {
		return c.Generation
	}
	return l.infos[i].GetGeneration()
}

// positions returns the framework.Positions of the list's nodes lo..hi-1: the list's own for a
// chunk of judgeChunk nodes (the last one shorter) or for the whole list, else a new one.
func (l *nodeList) positions(lo, hi int) *framework.Positions {
	switch {
	case lo == 0 && hi == len(l.iota):
		return &l.all
	case lo%judgeChunk == 0 && hi == min(lo+judgeChunk, len(l.iota)):
		return &l.chunks[lo/judgeChunk]
	}
	return &framework.Positions{List: l, At: l.iota[lo:hi]}
}

// positioned sets l's own Positions (positions) once its iota is set; it returns l.
func (l *nodeList) positioned() *nodeList {
	n := len(l.iota)
	l.all = framework.Positions{List: l, At: l.iota}
	l.chunks = make([]framework.Positions, (n+judgeChunk-1)/judgeChunk)
	for k := range l.chunks {
		l.chunks[k] = framework.Positions{List: l, At: l.iota[k*judgeChunk : min((k+1)*judgeChunk, n)]}
	}
	return l
}

// positionsIota returns 0..n-1, shared by lists of the same length.
func positionsIota(old *nodeList, n int) []int32 {
	if old != nil && len(old.iota) == n {
		return old.iota
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// nodeList returns the views of the nodes of infos, from the cached list when infos holds the
// same node objects in the same order, which one pointer comparison per node checks. When a
// few positions hold new objects (kube-scheduler updates a node's NodeInfo in place: an
// annotator rewriting statistics does so for some node every few pods at 5000 nodes), the
// cached list is copied with those positions replaced, rather than rebuilt: one view to find
// per changed node instead of one per node. A list with a NodeInfo without its node is not
// cached (it could not be compared): it is returned with the nodes that have one, and cached
// false.
func (a *Adapter) nodeList(infos []fwk.NodeInfo) (l *nodeList, cached bool) {
	c := &a.all
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.list; l != nil && len(infos) == len(l.src) {
		var changed []int
		for i := 0; i < len(infos) && len(changed) <= maxPatched(len(infos)); i++ {
			if infos[i] != l.infos[i] || nodeOf(infos[i]) != l.src[i] {
				changed = append(changed, i)
			}
		}
		if len(changed) == 0 {
			return l, true
		}
		if p := a.patched(l, infos, changed); p != nil {
			c.list = p
			return p, true
		}
	}
	l = &nodeList{src: make([]*corev1.Node, 0, len(infos)), views: make([]*corev1.Node, 0, len(infos)), infos: make([]fwk.NodeInfo, 0, len(infos))}
	for _, ni := range infos {
		if n := ni.Node(); n != nil {
			l.src, l.views, l.infos = append(l.src, n), append(l.views, a.view(n)), append(l.infos, ni)
		}
	}
	l.pos = newPositionTable(l.src)
	l.iota = positionsIota(c.list, len(l.src))
	l.positioned()
	if len(l.src) != len(infos) {
		c.list = nil
		return l, false
	}
	c.list = l
	return l, true
}

// nodeOf returns ni's node, read from kube-scheduler's own NodeInfo type when ni is one (the
// snapshot's are) rather than by a call through the interface: the per-pod check of the node
// list reads one a node.
func nodeOf(ni fwk.NodeInfo) *corev1.Node {
	if c, ok := ni.(*schedframework.NodeInfo); ok {
		return c.Node()
	}
	return ni.Node()
}

// maxPatched is how many positions of a list of n nodes patched copies rather than rebuilds:
// past a quarter, copying the whole list saves little over building it.
func maxPatched(n int) int { return n / 4 }

// patched returns a copy of l (never modified: lists are shared) with the nodes of infos at
// the changed positions, nil when one of them has no node (such a list is not cached). The old
// objects' positions are all removed before the new ones are added, so a node that moved to
// another changed position keeps its new one.
func (a *Adapter) patched(l *nodeList, infos []fwk.NodeInfo, changed []int) *nodeList {
	if len(changed) > maxPatched(len(infos)) {
		return nil
	}
	for _, i := range changed {
		if infos[i].Node() == nil {
			return nil
		}
	}
	p := &nodeList{src: slices.Clone(l.src), views: slices.Clone(l.views), infos: slices.Clone(l.infos), iota: l.iota}
	for _, i := range changed {
		n := infos[i].Node()
		p.src[i], p.views[i], p.infos[i] = n, a.view(n), infos[i]
	}
	p.pos = newPositionTable(p.src) // as built anew: a few microseconds at 5000 nodes
	return p.positioned()
}

// allViews returns a new slice of the views of the nodes of infos (those with a node).
func (a *Adapter) allViews(infos []fwk.NodeInfo) []*corev1.Node {
	l, _ := a.nodeList(infos)
	return slices.Clone(l.views)
}

// lastList returns the list of nodes cached last (nil if none).
func (a *Adapter) lastList() *nodeList {
	a.all.mu.Lock()
	defer a.all.mu.Unlock()
	return a.all.list
}

// logrusTo returns a logrus logger for agents that writes into log: errors as errors, warnings
// always, info at verbosity 2, debug at 4, trace at 6 (kube-scheduler's --v).
func logrusTo(log klog.Logger) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(discard{})
	level := logrus.WarnLevel
	for _, v := range []struct {
		v     int
		level logrus.Level
	}{{2, logrus.InfoLevel}, {4, logrus.DebugLevel}, {6, logrus.TraceLevel}} {
		if log.V(v.v).Enabled() {
			level = v.level
		}
	}
	l.SetLevel(level)
	l.AddHook(klogHook{log})
	return logrus.NewEntry(l)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// klogHook forwards logrus entries to a klog logger.
type klogHook struct{ log klog.Logger }

func (klogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h klogHook) Fire(e *logrus.Entry) error {
	kv := make([]any, 0, 2*len(e.Data))
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var err error
	for _, k := range keys {
		if k == logrus.ErrorKey {
			err, _ = e.Data[k].(error)
			continue
		}
		kv = append(kv, k, e.Data[k])
	}
	msg := strings.TrimSuffix(e.Message, "\n")
	switch {
	case e.Level <= logrus.ErrorLevel:
		h.log.Error(err, msg, kv...)
	case e.Level == logrus.WarnLevel:
		if err != nil {
			kv = append(kv, "err", err)
		}
		h.log.Info(msg, kv...)
	case e.Level == logrus.InfoLevel:
		if err != nil {
			kv = append(kv, "err", err)
		}
		h.log.V(2).Info(msg, kv...)
	case e.Level == logrus.DebugLevel:
		h.log.V(4).Info(msg, kv...)
	default:
		h.log.V(6).Info(msg, kv...)
	}
	return nil
}

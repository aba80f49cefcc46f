// Package pigeon is the pigeon agent: the priority pigeon-holing ranks nodes by how placing the
// pod there changes a cluster-wide objective: adaptive bin packing (A_BINPACK), load balancing
// (LOAD_BALANCE) or consolidation (CONSOLIDATE), over up to five resources. A_BINPACK follows
// A. N. Tantawi and M. Steinder, "Autonomic Cloud Placement of Mixed Workload: An Adaptive Bin
// Packing Algorithm", IEEE ICAC 2019: it keeps the variation of node utilizations close to the
// variation of pod demands, so that a stream of similar pods spreads and a mixed stream packs.
// See README.md for the model and the formulas.
package pigeon

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// Name is the agent's name and build tag.
const Name = "pigeon"

// PriorityPigeonHoling is the priority's name: the route /scheduler/priorities/pigeon-holing.
const PriorityPigeonHoling = "pigeon-holing"

// maxScore is the best score.
const maxScore = framework.MaxScore

// Agent is the pigeon agent. It is safe for concurrent use.
type Agent struct {
	cfg Config
	res resources
	// cluster, when not nil, gives node usage and the system of nodes; nil means the agent
	// reads usage from node annotations and the system is the request's nodes.
	cluster framework.Cluster
	// pods, when not nil, tells when a node's pods (so its Allocated) change: the system of
	// nodes is then kept between calls (system) and only its changed nodes read again.
	pods framework.NodePods
	// changes is pods when it also tells which nodes changed since a point: the changed nodes
	// are then found without asking every node; nil when it does not.
	changes framework.NodePodsChanges
	log     *logrus.Entry
	// capacities memoizes each node's allocatable in the agent's units: converting quantities
	// was a quarter of a call at 5000 nodes.
	capacities framework.NodeMemo[vec]

	mu sync.Mutex
	// stats are the demand statistics of the pods seen, each counted once by key in seen.
	stats demandStats
	seen  *seenSet
	// seeded tells that stats hold the cluster's pods already.
	seeded bool

	// sysMu serializes the calls that use system (kube-scheduler asks about one pod at a
	// time), from gather to the end of evaluate.
	sysMu  sync.Mutex
	system *systemMemo
	// changed is the buffer of changes, reused from call to call (under sysMu).
	changed []framework.PodsChange
}

var _ framework.Agent = (*Agent)(nil)

// Registration offers the agent to the programs that run agents (agents.All, the extender's
// build-tagged file): its functions, and its port and weights in the shipped deployments.
var Registration = framework.Register(Name, DefaultConfig, New, framework.Offer{
	Prioritizers: []framework.Weighted{{Name: PriorityPigeonHoling, Weight: 2}},
	Port:         5403,
	WholeCluster: true, // the objective is over every node (systemOf)
})

// New returns the agent for cfg. h.Cluster may be nil (no cluster access): the agent then reads
// usage from node annotations and the system is the request's nodes.
func New(cfg Config, h framework.Handle) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid pigeon config: %w", err)
	}
	cluster, log := h.Cluster, h.Log
	a := &Agent{cfg: cfg, res: newResources(cfg), cluster: cluster, log: log, seen: newSeenSet(seenBound)}
	if cluster != nil {
		a.pods = h.NodePods
		a.changes = h.PodsChanges
	}
	log.WithFields(logrus.Fields{
		"objective": cfg.Objective, "resources": a.res.names[:cfg.NumResources],
		"primeResource": a.res.names[cfg.ResourceIndex], "clusterAccess": cluster != nil,
	}).Info("pigeon agent configured")
	return a, nil
}

// Name implements framework.Agent.
func (a *Agent) Name() string { return Name }

// Filters implements framework.Agent: the agent has none.
func (a *Agent) Filters() []framework.Filter { return nil }

// Prioritizers implements framework.Agent.
func (a *Agent) Prioritizers() []framework.Prioritizer {
	return []framework.Prioritizer{{Name: PriorityPigeonHoling, Func: a.prioritize,
		WholeList: true}} // scores span the nodes scored together (scores); each call observes the pod once
}

// prioritize scores each node by the objective's value with the pod placed on it: 10 for the
// best fitting node, 1 for the worst, 0 for a node where the pod does not fit.
func (a *Agent) prioritize(ctx context.Context, pod *corev1.Pod, nodes []*corev1.Node) ([]int64, error) {
	r := a.rank(pod, nodes, framework.PositionsOf(ctx))
	if a.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		best := ""
		for i, s := range r.scores {
			if s == maxScore {
				best = nodes[i].Name
				break
			}
		}
		a.log.WithFields(logrus.Fields{
			"pod": pod.Namespace + "/" + pod.Name, "objective": a.cfg.Objective, "systemNodes": r.systemNodes,
			"candidates": len(nodes), "demandCV": r.demandCV, "podsSeen": r.podsSeen, "best": best,
		}).Debug("pigeon-holing scored")
	}
	return r.scores, nil
}

// ranking is what prioritize computed for one pod: each node's objective value, whether the
// pod fits there, and its score; the system's size, c(demand) and the pods seen.
type ranking struct {
	values      []float64
	fit         []bool
	scores      []int64
	systemNodes int
	demandCV    float64
	podsSeen    int64
}

// rank enters the pod into the demand statistics and ranks nodes. With a synced cluster and
// NodePods it evaluates from the system kept between pods (kept); otherwise it gathers the
// system and evaluates it for this pod alone (the per-pod computation, which the kept one
// equals: TestKeptAnswersArePerPodAnswers). p, when not nil, places nodes in plugin mode's
// shared list of every node (framework.Positions), which the kept system is then read from.
func (a *Agent) rank(pod *corev1.Pod, nodes []*corev1.Node, p *framework.Positions) ranking {
	m := a.cfg.NumResources
	demand := a.res.demand(pod)
	synced := a.cluster != nil && a.cluster.HasSynced()
	stats := a.observe(pod, &demand, synced)
	r := ranking{podsSeen: stats.count}
	if synced && a.pods != nil {
		a.sysMu.Lock()
		defer a.sysMu.Unlock()
		if p != nil && len(p.At) != len(nodes) {
			p = nil
		}
		r.values, r.fit, r.systemNodes, r.demandCV = a.kept(nodes, p, &demand, &stats)
	} else {
		sys, cands := a.gather(nodes, synced)
		avgCap := averageCapacity(m, sys)
		r.demandCV = stats.coefVar(m, &avgCap)
		r.values, r.fit = evaluate(a.cfg.Objective, m, a.cfg.ResourceIndex, sys, cands, &demand, r.demandCV)
		r.systemNodes = len(sys)
	}
	r.scores = scores(r.values, r.fit)
	return r
}

// kept evaluates the pod of the given demand on nodes from the system kept between pods
// (systemOf, updated from the cluster first): the objective's values and fits, the system's
// size and c(demand). With p (nodes' positions in the shared list of every node), the system
// is of p.List's nodes and the nodes are found in it by position; else of the cluster's
// Nodes, found by object or name. The caller holds sysMu.
func (a *Agent) kept(nodes []*corev1.Node, p *framework.Positions, demand *vec, stats *demandStats) ([]float64, []bool, int, float64) {
	var k *systemMemo
	if p != nil {
		k = a.systemOf(nil, p.List)
	} else {
		k = a.systemOf(a.cluster.Nodes(), nil)
	}
	cands := a.candidates(k, nodes, p)
	demandCV := stats.coefVar(a.cfg.NumResources, &k.avgCap)
	s := newSystemSorted(a.cfg.NumResources, a.cfg.ResourceIndex, k.utils, k.primes, k.used, demandCV, &k.buf)
	values, fit := make([]float64, len(nodes)), make([]bool, len(nodes))
	tryAll(objectives[a.cfg.Objective], s, k.sys, k.utils, cands, demand, values, fit)
	return values, fit, len(k.sys), demandCV
}

// candidates returns the request's nodes as candidates of the kept system k: by the node
// object when k lists that object, else by name; a node k does not hold is described by its
// own object (usage from Allocated). With p, whose list k is of, a node is found by its
// position. The slice is k's, reused by the next call.
func (a *Agent) candidates(k *systemMemo, nodes []*corev1.Node, p *framework.Positions) []candidate {
	if cap(k.cands) < len(nodes) {
		k.cands = make([]candidate, len(nodes))
	}
	cands := k.cands[:len(nodes)]
	byPosition := p != nil && k.list == p.List
	for i, n := range nodes {
		var j int
		var ok bool
		if byPosition {
			j = k.at[p.At[i]] // n is k.nodes[p.At[i]]: the list's node there
			ok = j >= 0
		} else if j, ok = k.byNode[n]; !ok {
			j, ok = k.index[n.Name]
		}
		if ok {
			cands[i] = candidate{index: j}
			continue
		}
		cands[i] = candidate{index: -1, node: nodeState{
			capacity: a.capacity(n), use: a.res.fromAmounts(a.cluster.Allocated(n.Name)),
		}}
	}
	return cands
}

// podKey identifies a pod for counting it once: its UID, or namespace/name when it has none.
func podKey(p *corev1.Pod) string {
	if p.UID != "" {
		return string(p.UID)
	}
	return p.Namespace + "/" + p.Name
}

// observe enters the pod's demand into the statistics unless it was seen already, seeding them
// first from the cluster's pods when the cluster has synced, and returns a copy of them.
func (a *Agent) observe(pod *corev1.Pod, demand *vec, synced bool) demandStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	if synced && !a.seeded {
		a.seedLocked()
	}
	if a.seen.add(podKey(pod)) {
		a.stats.add(a.cfg.NumResources, demand)
	}
	return a.stats
}

// seedLocked enters the demands of the cluster's pods: bound ones first, then pending ones, so
// that the pending pods, which the scheduler will ask about, are the last the bounded seen set
// forgets.
func (a *Agent) seedLocked() {
	a.seeded = true
	pods := a.cluster.Pods()
	n := 0
	for pass := 0; pass < 2; pass++ {
		for _, p := range pods {
			if (p.Spec.NodeName == "") != (pass == 1) {
				continue
			}
			if a.seen.add(podKey(p)) {
				d := a.res.demand(p)
				a.stats.add(a.cfg.NumResources, &d)
				n++
			}
		}
	}
	a.log.WithField("pods", n).Info("pigeon demand statistics seeded from the cluster")
}

// gather returns the system of nodes and the request's nodes as candidates. With a synced
// cluster, the system is every schedulable node of the cache, with usage from the cache; a
// candidate the system does not hold is described by its own object. Otherwise the system is
// the request's nodes, with usage from their requested-* annotations.
func (a *Agent) gather(nodes []*corev1.Node, synced bool) ([]nodeState, []candidate) {
	cands := make([]candidate, len(nodes))
	if !synced {
		sys := make([]nodeState, len(nodes))
		for i, n := range nodes {
			use, bad := a.res.fromAnnotations(n)
			if bad >= 0 && a.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
				a.log.WithFields(logrus.Fields{"node": n.Name, "annotation": usageAnnotations[bad]}).
					Debug("node annotation is not a number >= 0; counted as 0")
			}
			sys[i] = nodeState{capacity: a.capacity(n), use: use}
			cands[i] = candidate{index: i}
		}
		return sys, cands
	}
	all := a.cluster.Nodes()
	var sys []nodeState
	var index map[string]int
	if a.pods != nil {
		k := a.systemOf(all, nil)
		sys, index = k.sys, k.index
	} else {
		sys = make([]nodeState, 0, len(all))
		index = make(map[string]int, len(all))
		for _, n := range all {
			if n.Spec.Unschedulable {
				continue
			}
			index[n.Name] = len(sys)
			sys = append(sys, nodeState{capacity: a.capacity(n), use: a.res.fromAmounts(a.cluster.Allocated(n.Name))})
		}
	}
	for i, n := range nodes {
		if k, ok := index[n.Name]; ok {
			cands[i] = candidate{index: k}
			continue
		}
		cands[i] = candidate{index: -1, node: nodeState{
			capacity: a.capacity(n), use: a.res.fromAmounts(a.cluster.Allocated(n.Name)),
		}}
	}
	return sys, cands
}

// capacity returns the node's allocatable resources in the agent's units.
func (a *Agent) capacity(n *corev1.Node) vec { return a.capacities.Get(n, a.res.capacity) }

// systemMemo is the system of nodes gathered from the cluster's node list, kept between
// calls, with what each node was read at: its object, name and resourceVersion (capacity,
// schedulability), by position in the list, and its pods' generation (usage), by position in
// the system, with the mark of NodePodsChanges the system is read since; and what
// evaluating a pod needs of the system besides the pod, kept with it: each node's utilization,
// the count of nodes in use, the average capacity and, for CONSOLIDATE, the prime utilizations
// in ascending order. A pod then costs one pass over the list (its node objects), the changed
// nodes (from NodePodsChanges; without it, every node's generation looked up by name) and the
// system's sums (which depend on every node: the mean moves with each placement), instead of
// also every node's utilization, the average capacity and a sort.
type systemMemo struct {
	// list is the shared list of nodes (framework.Positions) the system was read from last,
	// nil when it was given its nodes otherwise (or holds a node without a resourceVersion):
	// while the list is the same object, its nodes are those of nodes.
	list            framework.NodeList
	nodes           []*corev1.Node
	names, versions []string
	// generations[k] is the generation of sys[k]'s pods its usage was read at (after).
	generations []int64
	// mark is the NodePodsChanges mark (next) taken before the system's usage was last read.
	mark int64
	// at is each listed node's position in sys, -1 for an unschedulable node.
	at  []int
	sys []nodeState
	// index and byNode give a listed schedulable node's position in sys by name and by object.
	index  map[string]int
	byNode map[*corev1.Node]int
	// utils[k] is utilization(sys[k]); used counts the nodes of sys in use; avgCap is
	// averageCapacity(sys) (capacities change only with the list, which builds the memo anew);
	// primes are utils[k][prime] ascending, nil unless the objective is CONSOLIDATE.
	utils  []vec
	used   int
	avgCap vec
	primes []float64
	// buf and cands are reused from call to call.
	buf   orderBuf
	cands []candidate
}

// systemOf returns the system of the schedulable nodes of all, in their order: what gather
// builds without NodePods. It keeps the system between calls and reads again only the usage
// of the nodes whose pods changed: those NodePodsChanges lists since the system's mark, or,
// without it (or when it no longer knows), every node whose generation moved; a list of other
// nodes, in another order, a node whose schedulability or capacity changed (keepsRead) or one
// without a resourceVersion builds it anew. A listed node that is the object listed before is
// that version (objects from the cluster are never modified), which spares reading it. Given
// list (plugin mode's shared list of every node) instead of all, the nodes are the list's: the
// list the system was read from last has the same node objects (none compared), another is
// compared as all would be. The caller holds sysMu until it no longer reads the result.
func (a *Agent) systemOf(all []*corev1.Node, list framework.NodeList) *systemMemo {
	m := a.system
	// The changes are asked for before anything is read: a change after the call is after
	// next, and the next call lists it.
	var next int64
	known := false
	if a.changes != nil {
		mark := int64(0)
		if m != nil {
			mark = m.mark
		}
		a.changed, next, known = a.changes.PodsChangedSince(mark, a.changed[:0])
	}
	listed := list != nil && m != nil && m.list == list
	if list != nil && !listed {
		all = make([]*corev1.Node, list.Len())
		for i := range all {
			all[i] = list.Node(i)
		}
	}
	same := listed || m != nil && len(m.names) == len(all)
	for i := 0; same && !listed && i < len(all); i++ {
		n := all[i]
		if n == m.nodes[i] {
			continue
		}
		same = n.Name == m.names[i] && n.ResourceVersion != "" && m.versions[i] != "" &&
			(n.ResourceVersion == m.versions[i] || a.keepsRead(m, i, n))
		// Another object of the same version (a relist), or a version the system reads the
		// same: known by it from now on.
		if same {
			delete(m.byNode, m.nodes[i])
			m.nodes[i], m.versions[i] = n, n.ResourceVersion
			if m.at[i] >= 0 {
				m.byNode[n] = m.at[i]
			}
		}
	}
	if !same {
		m = a.buildSystem(all)
		m.mark = next
		if !slices.Contains(m.nodes, nil) { // nil: a node without a resourceVersion
			m.list = list
		}
		a.system = m
		return m
	}
	if !listed {
		m.list = list
	}
	m.mark = next
	if known {
		for _, c := range a.changed {
			k, ok := m.index[c.Node]
			// Generation 0 (no pods) is every empty node's, not one set of pods: the usage
			// may have been read with a pod that has gone since, so it is read again.
			if ok && (c.Generation != m.generations[k] || c.Generation == 0) {
				a.readUsage(m, k, c.Node, c.Generation)
			}
		}
		return m
	}
	for i, name := range m.names {
		k := m.at[i]
		if k < 0 {
			continue
		}
		if g := a.pods.PodsGeneration(name); g != m.generations[k] {
			a.readUsage(m, k, name, g)
		}
	}
	return m
}

// keepsRead reports whether n, a new version of the node listed at position i, is what the
// system read of that node: as schedulable or not, with the same capacity. What else a node
// holds (its statistics, which an annotator rewrites every few minutes, labels, conditions) is
// not read into the system, so such a version is taken in place (its usage follows its pods,
// by generation, as for any node) rather than the system built anew: at 5000 nodes with an
// annotator's rewrites, that was a rebuild every few pods.
func (a *Agent) keepsRead(m *systemMemo, i int, n *corev1.Node) bool {
	k := m.at[i]
	if n.Spec.Unschedulable != (k < 0) {
		return false
	}
	return k < 0 || a.capacity(n) == m.sys[k].capacity
}

// readUsage reads the usage of m.sys[k], the node called name whose pods are at generation g
// (read before), and updates what m keeps of it.
func (a *Agent) readUsage(m *systemMemo, k int, name string, g int64) {
	dim, prime := a.cfg.NumResources, a.cfg.ResourceIndex
	m.generations[k] = g
	node := &m.sys[k]
	if inUse(dim, &node.use) {
		m.used--
	}
	node.use = a.res.fromAmounts(a.cluster.Allocated(name))
	if inUse(dim, &node.use) {
		m.used++
	}
	old := m.utils[k][prime]
	m.utils[k] = utilization(dim, &node.capacity, &node.use)
	if m.primes != nil {
		at := sort.SearchFloat64s(m.primes, old) // primes[at] == old
		m.primes = slices.Delete(m.primes, at, at+1)
		x := m.utils[k][prime]
		m.primes = slices.Insert(m.primes, sort.SearchFloat64s(m.primes, x), x)
	}
}

// buildSystem reads the system of the schedulable nodes of all anew. A node without a
// resourceVersion makes a memo that the next call does not reuse.
func (a *Agent) buildSystem(all []*corev1.Node) *systemMemo {
	dim, prime := a.cfg.NumResources, a.cfg.ResourceIndex
	m := &systemMemo{nodes: slices.Clone(all), names: make([]string, len(all)), versions: make([]string, len(all)),
		at:    make([]int, len(all)),
		index: make(map[string]int, len(all)), byNode: make(map[*corev1.Node]int, len(all))}
	for i, n := range all {
		m.names[i], m.versions[i], m.at[i] = n.Name, n.ResourceVersion, -1
		if n.ResourceVersion == "" {
			m.nodes[i] = nil // compared by name and version, which fails: built anew
		}
		if n.Spec.Unschedulable {
			continue
		}
		// The generation is read before the usage: a change between the two is read again at
		// the next call.
		m.generations = append(m.generations, a.pods.PodsGeneration(n.Name))
		m.at[i] = len(m.sys)
		m.index[n.Name] = len(m.sys)
		m.byNode[n] = len(m.sys)
		node := nodeState{capacity: a.capacity(n), use: a.res.fromAmounts(a.cluster.Allocated(n.Name))}
		m.sys = append(m.sys, node)
		m.utils = append(m.utils, utilization(dim, &node.capacity, &node.use))
		if inUse(dim, &node.use) {
			m.used++
		}
	}
	m.avgCap = averageCapacity(dim, m.sys)
	if a.cfg.Objective == Consolidate {
		m.primes = make([]float64, len(m.utils))
		for k := range m.utils {
			m.primes[k] = m.utils[k][prime]
		}
		sort.Float64s(m.primes)
	}
	return m
}

package server

import (
	"fmt"
	"net/http"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

// reasonUnknownNode is the filter reason of a node name the lookup does not know.
const reasonUnknownNode = "unknown to the extender's cache"

// errNoClusterAccess answers nodeCacheCapable requests when the extender has no node lookup.
const errNoClusterAccess = "the extender runs without cluster access and cannot resolve NodeNames: " +
	"give it --kubeconfig (or run it in a pod) or set nodeCacheCapable: false for this extender"

// candidates are the nodes of one request, in the request's order.
type candidates struct {
	names []string
	// nodes[i] is the node called names[i], or nil when the lookup does not know it.
	nodes []*corev1.Node
	// full tells that the request carried Node objects (and wants them back), not names.
	full bool
}

// known returns the resolved nodes, in order, and for each its index in names.
func (c *candidates) known() ([]*corev1.Node, []int) {
	nodes := make([]*corev1.Node, 0, len(c.nodes))
	index := make([]int, 0, len(c.nodes))
	for i, n := range c.nodes {
		if n != nil {
			nodes = append(nodes, n)
			index = append(index, i)
		}
	}
	return nodes, index
}

// parseArgs reads and decodes ExtenderArgs and resolves its nodes. On failure it has answered:
// a status error, or, when cluster access is missing, the result that noAccess builds.
func (s *srv) parseArgs(w http.ResponseWriter, req *http.Request, noAccess func(string)) (*corev1.Pod, *candidates, bool) {
	buf := getBuffer()
	defer putBuffer(buf)
	if !readBody(w, req, s.opts.MaxBodyBytes, buf) {
		return nil, nil, false
	}
	if s.opts.Log.IsLevelEnabled(logrus.TraceLevel) {
		s.opts.Log.WithField("path", req.URL.Path).Trace("request body: ", buf.String())
	}
	var args extenderv1.ExtenderArgs
	if !decodeJSON(w, buf.Bytes(), &args, "ExtenderArgs") {
		return nil, nil, false
	}
	if args.Pod == nil {
		writeError(w, http.StatusBadRequest, "decoding ExtenderArgs: the request has no Pod")
		return nil, nil, false
	}
	c := &candidates{}
	switch {
	case args.Nodes != nil:
		c.full = true
		c.names = make([]string, len(args.Nodes.Items))
		c.nodes = make([]*corev1.Node, len(args.Nodes.Items))
		for i := range args.Nodes.Items {
			c.nodes[i] = &args.Nodes.Items[i]
			c.names[i] = c.nodes[i].Name
		}
	case args.NodeNames != nil:
		c.names = *args.NodeNames
		note(w, podKey(args.Pod), len(c.names))
		if s.opts.Lookup == nil {
			noAccess(errNoClusterAccess)
			return nil, nil, false
		}
		c.nodes = make([]*corev1.Node, len(c.names))
		for i, name := range c.names {
			if n, ok := s.opts.Lookup.Node(name); ok {
				c.nodes[i] = n
			}
		}
	default:
		writeError(w, http.StatusBadRequest, "decoding ExtenderArgs: the request has neither Nodes nor NodeNames")
		return nil, nil, false
	}
	note(w, podKey(args.Pod), len(c.names))
	return args.Pod, c, true
}

func (s *srv) filter(fn framework.FilterFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		pod, c, ok := s.parseArgs(w, req, func(msg string) {
			noteResultError(w, msg)
			writeJSON(w, &extenderv1.ExtenderFilterResult{Error: msg})
		})
		if !ok {
			return
		}
		nodes, index := c.known()
		verdicts := fn(req.Context(), pod, nodes)
		if len(verdicts) != len(nodes) {
			writeError(w, http.StatusInternalServerError,
				fmt.Sprintf("filter returned %d verdicts for %d nodes", len(verdicts), len(nodes)))
			return
		}
		writeJSON(w, filterResult(c, verdicts, index))
	})
}

// filterResult builds the answer in the form of the request: passing nodes as Node objects or
// names, and every rejected node with its reason.
func filterResult(c *candidates, verdicts []framework.Verdict, index []int) *extenderv1.ExtenderFilterResult {
	res := &extenderv1.ExtenderFilterResult{}
	failed := func(name, reason string, unresolvable bool) {
		if unresolvable {
			if res.FailedAndUnresolvableNodes == nil {
				res.FailedAndUnresolvableNodes = extenderv1.FailedNodesMap{}
			}
			res.FailedAndUnresolvableNodes[name] = reason
			return
		}
		if res.FailedNodes == nil {
			res.FailedNodes = extenderv1.FailedNodesMap{}
		}
		res.FailedNodes[name] = reason
	}
	pass := make([]bool, len(c.names))
	for k, v := range verdicts {
		i := index[k]
		if v.Passes() {
			pass[i] = true
		} else {
			failed(c.names[i], v.Reason, v.Unresolvable)
		}
	}
	for i, n := range c.nodes {
		if n == nil {
			failed(c.names[i], reasonUnknownNode, false)
		}
	}
	if c.full {
		list := &corev1.NodeList{Items: make([]corev1.Node, 0, len(verdicts))}
		for i, ok := range pass {
			if ok {
				list.Items = append(list.Items, *c.nodes[i])
			}
		}
		res.Nodes = list
	} else {
		names := make([]string, 0, len(verdicts))
		for i, ok := range pass {
			if ok {
				names = append(names, c.names[i])
			}
		}
		res.NodeNames = &names
	}
	return res
}

func (s *srv) prioritize(fn framework.PrioritizeFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		pod, c, ok := s.parseArgs(w, req, func(msg string) {
			// A HostPriorityList has no error field: the error must be a status.
			writeError(w, http.StatusServiceUnavailable, msg)
		})
		if !ok {
			return
		}
		nodes, index := c.known()
		scores := fn(req.Context(), pod, nodes)
		if len(scores) != len(nodes) {
			writeError(w, http.StatusInternalServerError,
				fmt.Sprintf("prioritizer returned %d scores for %d nodes", len(scores), len(nodes)))
			return
		}
		// One entry per input node, in input order; a node the lookup does not know scores 0.
		list := make(extenderv1.HostPriorityList, len(c.names))
		for i, name := range c.names {
			list[i].Host = name
		}
		for k, score := range scores {
			list[index[k]].Score = clampScore(score)
		}
		writeJSON(w, list)
	})
}

func clampScore(s int64) int64 {
	switch {
	case s < 0:
		return 0
	case s > framework.MaxScore:
		return framework.MaxScore
	}
	return s
}

// bind answers that binding is not supported: no agent binds pods. The scheduler then reports the
// error for the pod; deployments must not set bindVerb for this extender.
func (s *srv) bind(w http.ResponseWriter, req *http.Request) {
	buf := getBuffer()
	defer putBuffer(buf)
	if !readBody(w, req, s.opts.MaxBodyBytes, buf) {
		return
	}
	var args extenderv1.ExtenderBindingArgs
	if !decodeJSON(w, buf.Bytes(), &args, "ExtenderBindingArgs") {
		return
	}
	note(w, args.PodNamespace+"/"+args.PodName, 1)
	msg := fmt.Sprintf("binding is not supported by this extender (pod %s/%s to node %s): remove bindVerb from its configuration",
		args.PodNamespace, args.PodName, args.Node)
	noteResultError(w, msg)
	writeJSON(w, &extenderv1.ExtenderBindingResult{Error: msg})
}

// preempt answers with the scheduler's own candidate victims, unchanged: no agent narrows them.
func (s *srv) preempt(w http.ResponseWriter, req *http.Request) {
	buf := getBuffer()
	defer putBuffer(buf)
	if !readBody(w, req, s.opts.MaxBodyBytes, buf) {
		return
	}
	var args extenderv1.ExtenderPreemptionArgs
	if !decodeJSON(w, buf.Bytes(), &args, "ExtenderPreemptionArgs") {
		return
	}
	if args.Pod == nil {
		writeError(w, http.StatusBadRequest, "decoding ExtenderPreemptionArgs: the request has no Pod")
		return
	}
	res := &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: args.NodeNameToMetaVictims}
	if args.NodeNameToVictims != nil {
		res.NodeNameToMetaVictims = make(map[string]*extenderv1.MetaVictims, len(args.NodeNameToVictims))
		for node, v := range args.NodeNameToVictims {
			meta := &extenderv1.MetaVictims{}
			if v != nil {
				meta.NumPDBViolations = v.NumPDBViolations
				for _, p := range v.Pods {
					if p != nil {
						meta.Pods = append(meta.Pods, &extenderv1.MetaPod{UID: string(p.UID)})
					}
				}
			}
			res.NodeNameToMetaVictims[node] = meta
		}
	}
	note(w, podKey(args.Pod), len(res.NodeNameToMetaVictims))
	writeJSON(w, res)
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// noteResultError records, for metrics and logs, an error carried inside a 200 answer.
func noteResultError(w http.ResponseWriter, msg string) {
	if r, ok := w.(*recorder); ok {
		r.err = msg
	}
}

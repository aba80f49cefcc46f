package server

import (
	"bytes"
	"fmt"
	"net/http"

	jsoniter "github.com/json-iterator/go"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// reasonUnknownNode is the filter reason of a node name the lookup does not know.
const reasonUnknownNode = decisions.ReasonUnknownNode

// errNoClusterAccess answers nodeCacheCapable requests when the extender has no node lookup.
const errNoClusterAccess = "the extender runs without cluster access and cannot resolve NodeNames: " +
	"give it --kubeconfig (or run it in a pod) or set nodeCacheCapable: false for this extender"

// candidates are the nodes of one request, in the request's order.
type candidates struct {
	names []string
	// nodes[i] is the node called names[i], or nil when the lookup does not know it.
	nodes []*corev1.Node
	// raw[i], for a full-node filter request, is the JSON node i came in (echoed in the answer).
	raw []jsoniter.RawMessage
}

// known returns the resolved nodes, in order, and for each its index in names; a nil index
// means every node resolved (the k-th known node is the k-th candidate, see position).
func (c *candidates) known() ([]*corev1.Node, []int) {
	missing := 0
	for _, n := range c.nodes {
		if n == nil {
			missing++
		}
	}
	if missing == 0 {
		return c.nodes, nil
	}
	nodes := make([]*corev1.Node, 0, len(c.nodes)-missing)
	index := make([]int, 0, len(c.nodes)-missing)
	for i, n := range c.nodes {
		if n != nil {
			nodes = append(nodes, n)
			index = append(index, i)
		}
	}
	return nodes, index
}

// position returns the index in the request of the k-th known node.
func position(index []int, k int) int {
	if index == nil {
		return k
	}
	return index[k]
}

// parseArgs reads and decodes ExtenderArgs and resolves its nodes. On failure it has answered:
// a status error, or, when cluster access is missing, the result that noAccess builds.
// The body is read into buf, which must outlive the candidates: with keepRaw, for a full-node
// request, candidates.raw holds each node's JSON within buf.
func (s *srv) parseArgs(w http.ResponseWriter, req *http.Request, buf *bytes.Buffer, keepRaw bool, noAccess func(string)) (*corev1.Pod, *candidates, bool) {
	if !readBody(w, req, s.opts.MaxBodyBytes, buf) {
		return nil, nil, false
	}
	if s.opts.Log.IsLevelEnabled(logrus.TraceLevel) {
		s.opts.Log.WithField("path", req.URL.Path).Trace("request body: ", buf.String())
	}
	args, err := decodeArgs(buf.Bytes(), keepRaw)
	if err != nil {
		writeError(w, http.StatusBadRequest, "decoding ExtenderArgs: "+err.Error())
		return nil, nil, false
	}
	c := &candidates{}
	switch {
	case args.full:
		c.raw = args.raw
		c.names = make([]string, len(args.nodes))
		c.nodes = make([]*corev1.Node, len(args.nodes))
		for i := range args.nodes {
			c.nodes[i] = &args.nodes[i]
			c.names[i] = args.nodes[i].Name
		}
	default:
		c.names = args.names
		if s.opts.Lookup == nil {
			note(w, decisions.PodKey(args.pod), len(c.names))
			noAccess(errNoClusterAccess)
			return nil, nil, false
		}
		c.nodes = make([]*corev1.Node, len(c.names))
		for i, name := range c.names {
			if n, ok := s.opts.Lookup.Node(name); ok {
				c.nodes[i] = n
			}
		}
	}
	note(w, decisions.PodKey(args.pod), len(c.names))
	return args.pod, c, true
}

func (s *srv) filter(fn framework.FilterFunc, ex decisions.Explain) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body := getBuffer()
		defer putBuffer(body)
		pod, c, ok := s.parseArgs(w, req, body, true, func(msg string) {
			noteResultError(w, msg)
			writeJSON(w, &extenderv1.ExtenderFilterResult{Error: msg})
		})
		if !ok {
			return
		}
		nodes, index := c.known()
		verdicts, err := fn(req.Context(), pod, nodes)
		if err != nil {
			// The agent could judge no node: the scheduler reads the result's Error and fails
			// the pod's cycle, or skips this extender when it is ignorable.
			msg := "filter failed: " + err.Error()
			noteResultError(w, msg)
			s.keepDecision(w, decisions.Decision{Err: msg})
			writeJSON(w, &extenderv1.ExtenderFilterResult{Error: msg})
			return
		}
		if len(verdicts) != len(nodes) {
			writeError(w, http.StatusInternalServerError,
				fmt.Sprintf("filter returned %d verdicts for %d nodes", len(verdicts), len(nodes)))
			return
		}
		res, pass := filterResult(c, verdicts, index)
		if r, ok := w.(*recorder); ok {
			r.verdicts = verdictCounts{passed: len(pass), failed: len(res.FailedNodes), unresolvable: len(res.FailedAndUnresolvableNodes)}
		}
		s.keepDecision(w, decisions.Decision{Names: c.names, Index: index, Verdicts: verdicts, Inputs: s.explain(ex, req.Context(), pod, nodes)})
		var kept []jsoniter.RawMessage
		if c.raw != nil {
			kept = make([]jsoniter.RawMessage, 0, len(pass))
			for _, i := range pass {
				kept = append(kept, c.raw[i])
			}
		}
		writeAnswer(w, func(buf *bytes.Buffer) error { return appendFilterResult(buf, kept, res) })
	})
}

// filterResult sorts the nodes into passing and rejected (with reasons). For a names request
// the result lists the passing names; for a full-node request the caller adds the passing
// nodes, whose indexes pass returns.
func filterResult(c *candidates, verdicts []framework.Verdict, index []int) (*extenderv1.ExtenderFilterResult, []int) {
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
	for i, n := range c.nodes {
		if n == nil {
			failed(c.names[i], reasonUnknownNode, false)
		}
	}
	pass := make([]int, 0, len(verdicts))
	for k, v := range verdicts {
		if v.Passes() {
			pass = append(pass, position(index, k))
		} else {
			failed(c.names[position(index, k)], v.Reason, v.Unresolvable)
		}
	}
	if c.raw == nil {
		names := make([]string, len(pass))
		for k, i := range pass {
			names[k] = c.names[i]
		}
		res.NodeNames = &names
	}
	return res, pass
}

func (s *srv) prioritize(fn framework.PrioritizeFunc, ex decisions.Explain) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body := getBuffer()
		defer putBuffer(body)
		pod, c, ok := s.parseArgs(w, req, body, false, func(msg string) {
			// A HostPriorityList has no error field: the error must be a status.
			writeError(w, http.StatusServiceUnavailable, msg)
		})
		if !ok {
			return
		}
		nodes, index := c.known()
		scores, err := fn(req.Context(), pod, nodes)
		if err != nil {
			// A HostPriorityList has no error field: the error must be a status.
			s.keepDecision(w, decisions.Decision{Err: "prioritizer failed: " + err.Error()})
			writeError(w, http.StatusInternalServerError, "prioritizer failed: "+err.Error())
			return
		}
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
			list[position(index, k)].Score = decisions.ClampScore(score)
		}
		s.keepDecision(w, decisions.Decision{Names: c.names, Index: index, Scores: scores, Inputs: s.explain(ex, req.Context(), pod, nodes)})
		writeAnswer(w, func(buf *bytes.Buffer) error { appendPriorities(buf, list); return nil })
	})
}

// noteResultError records, for metrics and logs, an error carried inside a 200 answer.
func noteResultError(w http.ResponseWriter, msg string) {
	if r, ok := w.(*recorder); ok {
		r.err = msg
	}
}

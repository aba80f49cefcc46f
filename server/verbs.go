package server

import (
	"fmt"
	"net/http"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/framework/decisions"
)

// namedBinder is the agent that binds pods, if any (b nil: none does).
type namedBinder struct {
	agent string
	b     framework.BindFunc
}

// namedPreempter is an agent that judges preemption candidates.
type namedPreempter struct {
	agent string
	p     framework.Preempter
}

// findBinder returns the one agent implementing framework.Binder with a bind function; kube-scheduler lets only one
// extender bind, and one extender can only route the verb to one agent.
func findBinder(agents []framework.Agent) (namedBinder, error) {
	var found namedBinder
	for _, a := range agents {
		ab, ok := a.(framework.Binder)
		if !ok {
			continue
		}
		b := ab.BindFunc()
		if b == nil {
			continue
		}
		if found.b != nil {
			return namedBinder{}, fmt.Errorf("agents %q and %q both bind pods: serve at most one binding agent per extender", found.agent, a.Name())
		}
		found = namedBinder{agent: a.Name(), b: b}
	}
	return found, nil
}

func findPreempters(agents []framework.Agent) []namedPreempter {
	var out []namedPreempter
	for _, a := range agents {
		if p, ok := a.(framework.Preempter); ok {
			out = append(out, namedPreempter{agent: a.Name(), p: p})
		}
	}
	return out
}

// bind binds the pod through the binding agent, or answers that binding is not supported when no
// agent binds (deployments must then not set bindVerb for this extender). A failure is answered
// in the result's Error: the scheduler then retries the pod (or, for an ignorable extender, binds
// it itself).
func (s *srv) bind(b framework.BindFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
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
		var msg string
		switch {
		case args.PodName == "" || args.Node == "":
			writeError(w, http.StatusBadRequest, "decoding ExtenderBindingArgs: PodName and Node are required")
			return
		case b == nil:
			msg = fmt.Sprintf("binding is not supported by this extender (pod %s/%s to node %s): remove bindVerb from its configuration",
				args.PodNamespace, args.PodName, args.Node)
		default:
			if err := b(req.Context(), args.PodNamespace, args.PodName, args.PodUID, args.Node); err != nil {
				msg = fmt.Sprintf("binding pod %s/%s to node %s: %v", args.PodNamespace, args.PodName, args.Node, err)
			}
		}
		if msg != "" {
			noteResultError(w, msg)
		}
		writeJSON(w, &extenderv1.ExtenderBindingResult{Error: msg})
	})
}

// preempt answers the scheduler's candidate victims, as MetaVictims, keeping only the nodes every
// preempting agent keeps; without such an agent every candidate passes unchanged.
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
	victims := args.NodeNameToMetaVictims
	if args.NodeNameToVictims != nil {
		victims = make(map[string]*extenderv1.MetaVictims, len(args.NodeNameToVictims))
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
			victims[node] = meta
		}
	}
	note(w, decisions.PodKey(args.Pod), len(victims))
	for _, np := range s.preempters {
		if len(victims) == 0 {
			break
		}
		nodes := make([]string, 0, len(victims))
		for node := range victims {
			nodes = append(nodes, node)
		}
		keep, err := np.p.Preempt(req.Context(), args.Pod, nodes)
		if err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("agent %s: preemption failed: %v", np.agent, err))
			return
		}
		if len(keep) != len(nodes) {
			writeError(w, http.StatusInternalServerError,
				fmt.Sprintf("agent %s: preemption returned %d answers for %d nodes", np.agent, len(keep), len(nodes)))
			return
		}
		for i, node := range nodes {
			if !keep[i] {
				delete(victims, node)
			}
		}
	}
	writeJSON(w, &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: victims})
}

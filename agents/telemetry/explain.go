package telemetry

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-safe-scheduler/extender/framework"
)

var _ framework.Explainer = (*Agent)(nil)

// Explain implements framework.Explainer: for a pod following a policy, the policy and, for
// each metric the function's strategy reads (dontschedule for the filter, scheduleonmetric for
// the score), its value on each node and its age, or that there is none. Nothing for a pod
// without a policy, or whose policy has no such strategy.
func (a *Agent) Explain(_ context.Context, _, verb string, pod *corev1.Pod, nodes []*corev1.Node) []framework.Inputs {
	name, ok := pod.Labels[PodLabel]
	if !ok {
		return nil
	}
	p, problem := a.policies.get(pod.Namespace, name)
	if p == nil {
		out := make([]framework.Inputs, len(nodes))
		for i := range out {
			out[i] = framework.Inputs{"policy": pod.Namespace + "/" + name, "problem": problem}
		}
		return out
	}
	strategy := DontSchedule
	if verb == "prioritize" {
		strategy = ScheduleOnMetric
	}
	s := p.Strategies[strategy]
	if s == nil {
		return nil
	}
	vals, now := *a.values.Load(), a.now()
	out := make([]framework.Inputs, len(nodes))
	for i, n := range nodes {
		in := framework.Inputs{"policy": p.Key(), "strategy": strategy}
		for _, r := range s.Rules {
			sample, found, fresh := vals.Lookup(r.Metricname, n.Name, now, a.cfg.MaxAge.D())
			if !found {
				in[r.Metricname] = "no value"
				continue
			}
			in[r.Metricname] = framework.Inputs{"value": sample.Value, "age": age(now, sample.Time), "fresh": fresh}
		}
		out[i] = in
	}
	return out
}

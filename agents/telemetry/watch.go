package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// policyStore holds the valid policies, and why each invalid one is not used.
type policyStore struct {
	mu      sync.RWMutex
	valid   map[string]*Policy // namespace/name
	invalid map[string]string  // namespace/name -> the problem
	// deschedule is every policy name that had a deschedule strategy in this process's life:
	// the label keys <name>=violating it may have to remove.
	deschedule map[string]bool
}

func newPolicyStore() *policyStore {
	return &policyStore{valid: map[string]*Policy{}, invalid: map[string]string{}, deschedule: map[string]bool{}}
}

// get returns the policy namespace/name, or nil and the reason a pod naming it is rejected.
func (s *policyStore) get(namespace, name string) (*Policy, string) {
	key := namespace + "/" + name
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p, ok := s.valid[key]; ok {
		return p, ""
	}
	if problem, ok := s.invalid[key]; ok {
		return nil, "telemetry policy " + key + " is invalid: " + problem
	}
	return nil, "telemetry policy " + key + " (pod label " + PodLabel + ") does not exist"
}

func (s *policyStore) set(p *Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.invalid, p.Key())
	s.valid[p.Key()] = p
	if p.Strategies[Deschedule] != nil {
		s.deschedule[p.Name] = true
	}
}

func (s *policyStore) setInvalid(key, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.valid, key)
	s.invalid[key] = problem
}

func (s *policyStore) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.valid, key)
	delete(s.invalid, key)
}

// list returns the valid policies, sorted by key.
func (s *policyStore) list() []*Policy {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Policy, 0, len(s.valid))
	for _, p := range s.valid {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// descheduleKeys returns a copy of the deschedule label keys ever used.
func (s *policyStore) descheduleKeys() map[string]bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]bool, len(s.deschedule))
	for k := range s.deschedule {
		out[k] = true
	}
	return out
}

// metrics returns the metric names the valid policies use, sorted.
func (s *policyStore) metrics() []string {
	var out []string
	for _, p := range s.list() {
		for _, m := range p.Metrics() {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	return out
}

// watchPolicies adds the policy store's handler to the informer on TASPolicy objects in every
// namespace, which runs with the program's other informers (dyn), and returns a function that
// waits until its first list is in (false when its context ends first).
func (a *Agent) watchPolicies(dyn dynamicinformer.DynamicSharedInformerFactory) (func(context.Context) bool, error) {
	if dyn == nil {
		return nil, errors.New("the telemetry agent needs a dynamic informer factory (framework.Handle.Dynamic)")
	}
	inf := dyn.ForResource(PolicyResource).Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.policyChanged(obj) },
		UpdateFunc: func(_, obj any) { a.policyChanged(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				a.policies.remove(u.GetNamespace() + "/" + u.GetName())
				a.log.Infof("telemetry policy %s/%s deleted", u.GetNamespace(), u.GetName())
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the TASPolicy handler: %w", err)
	}
	return func(wait context.Context) bool {
		return cache.WaitForCacheSync(wait.Done(), inf.HasSynced, reg.HasSynced)
	}, nil
}

// policyChanged validates a new or updated policy: what is usable of it is used; its problems
// are reported (log and a Warning InvalidPolicy event on the object), and a policy with nothing
// usable left is not used at all (pods naming it are rejected). A policy with no rule at all is
// used as TAS uses it, its pods passing everywhere, with a Warning EmptyPolicy event.
func (a *Agent) policyChanged(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := u.GetNamespace() + "/" + u.GetName()
	p, err := ParsePolicy(u)
	reason, message := "InvalidPolicy", ""
	switch {
	case err == nil && p.Empty:
		a.policies.set(p)
		reason = "EmptyPolicy"
		message = "no strategy has a rule (" + strings.Join(p.Problems, "; ") + "): the telemetry agent lets the pods naming it pass every node, unscored, as TAS does"
		a.log.Warnf("telemetry policy %s: %s", key, message)
	case err != nil:
		problem := strings.ReplaceAll(err.Error(), "\n", "; ")
		a.policies.setInvalid(key, problem)
		a.log.Warnf("telemetry policy %s is invalid and not used: %s", key, problem)
		message = "not used by the telemetry scheduler extender: " + problem
	default:
		a.policies.set(p)
		a.log.Infof("telemetry policy %s in use (metrics %v)", key, p.Metrics())
		if len(p.Problems) == 0 {
			return
		}
		problem := strings.Join(p.Problems, "; ")
		a.log.Warnf("telemetry policy %s is used without what is invalid: %s", key, problem)
		message = "used by the telemetry scheduler extender without what is invalid: " + problem
	}
	if a.h.Events != nil {
		a.h.Events.Event(u, corev1.EventTypeWarning, reason, message)
	}
}

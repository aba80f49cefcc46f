package cluster

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// internMax bounds each table of the interner: once a table holds this many distinct values it
// starts afresh (the values already shared stay valid, pods decoded later share new ones), so
// the label sets of workloads long gone are not kept for ever. A cluster has far fewer distinct
// label sets and request lists than pods: the replicas of a workload share theirs.
const internMax = 20000

// interner shares equal label maps and resource lists among the pods the cache keeps. The
// replicas of a workload carry the same labels and requests; each map costs about 350 bytes
// per pod (a third of a stripped pod, with the pod-template-hash label and a container's
// requests), one shared map costs it once. Cached objects are never modified
// (framework.Handle: "Objects are shared: never modify them"), so sharing them is safe.
type interner struct {
	mu     sync.Mutex
	key    []byte
	labels map[string]map[string]string
	lists  map[string]corev1.ResourceList
}

var shared = &interner{}

// Labels returns a map equal to m: a shared one when an equal map was seen before.
func (in *interner) Labels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	in.key = in.key[:0]
	for _, k := range keys {
		// Label keys and values are printable: a NUL cannot be part of either.
		in.key = append(append(append(append(in.key, k...), 0), m[k]...), 0)
	}
	if v, ok := in.labels[string(in.key)]; ok {
		return v
	}
	if in.labels == nil || len(in.labels) >= internMax {
		in.labels = map[string]map[string]string{}
	}
	in.labels[string(in.key)] = m
	return m
}

// ResourceList returns a list equal to l (the same quantities in the same formats): a shared
// one when an equal list was seen before.
func (in *interner) ResourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	in.key = in.key[:0]
	for _, name := range names {
		q := l[name] // a copy: String caches its result in the Quantity
		in.key = append(append(append(append(append(append(in.key, name...), 0), q.String()...), 0), q.Format...), 0)
	}
	if v, ok := in.lists[string(in.key)]; ok {
		return v
	}
	if in.lists == nil || len(in.lists) >= internMax {
		in.lists = map[string]corev1.ResourceList{}
	}
	in.lists[string(in.key)] = l
	return l
}

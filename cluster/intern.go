package cluster

import (
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// internMax bounds each table of the interner: once a table holds this many distinct values it
// starts afresh (the values already shared stay valid, pods decoded later share new ones), so
// the label sets of workloads long gone are not kept for ever. A cluster has far fewer distinct
// label sets and request lists than pods: the replicas of a workload share theirs.
const internMax = 20000

// interner shares equal label maps, resource lists, stripped containers, controller references
// and repeated strings among the objects the cache keeps. The replicas of a workload carry the
// same labels, requests, containers and controller; each map costs about 350 bytes per pod (with
// the pod-template-hash label and a container's requests), one shared map costs it once; nodes
// repeat their label and annotation keys. Cached objects are never modified
// (framework.Handle: "Objects are shared: never modify them"), so sharing them is safe.
type interner struct {
	mu     sync.Mutex
	key    []byte
	labels map[string]map[string]string
	lists  map[string]corev1.ResourceList
	// containers and owners hold stripped containers (name, requests, restart policy) and
	// controller references, which a workload's replicas share too.
	containers map[string][]corev1.Container
	owners     map[string][]metav1.OwnerReference
	// strings holds strings many objects repeat: namespaces, a pod's phase and conditions, the
	// keys of nodes' labels and annotations, their labels' values.
	strings map[string]string
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
	return intern(&in.labels, in.key, m)
}

// ResourceList returns a list equal to l (the same quantities in the same formats): a shared
// one when an equal list was seen before.
func (in *interner) ResourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.key = appendList(in.key[:0], l)
	return intern(&in.lists, in.key, l)
}

// appendList appends l's names, quantities and formats, in the order of the names, to key.
func appendList(key []byte, l corev1.ResourceList) []byte {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		q := l[name] // a copy: String caches its result in the Quantity
		key = append(append(append(append(append(append(key, name...), 0), q.String()...), 0), q.Format...), 0)
	}
	return key
}

// Containers returns a slice equal to cs, stripped containers (stripContainers: name, requests,
// restart policy, nothing else): a shared one when an equal slice was seen before. A stripped
// container is about 700 bytes (corev1.Container's many fields, empty), the most of a stripped
// pod after the Pod struct itself.
func (in *interner) Containers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return cs
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.key = in.key[:0]
	for i := range cs {
		c := &cs[i]
		policy := "-" // none: not the same as any policy's name
		if c.RestartPolicy != nil {
			policy = string(*c.RestartPolicy)
		}
		in.key = append(append(append(append(in.key, c.Name...), 0), policy...), 0)
		in.key = append(appendList(in.key, c.Resources.Requests), 1) // 1 ends a container's list
	}
	return intern(&in.containers, in.key, cs)
}

// Owners returns a slice equal to refs, a pod's stripped controller reference (controllerRef:
// API version, kind, name, controller flag): a shared one when an equal slice was seen before.
func (in *interner) Owners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.key = in.key[:0]
	for _, r := range refs {
		controller := "-"
		if r.Controller != nil {
			controller = strconv.FormatBool(*r.Controller)
		}
		in.key = append(append(append(append(append(append(append(append(in.key, r.APIVersion...), 0), r.Kind...), 0),
			r.Name...), 0), controller...), 0)
	}
	return intern(&in.owners, in.key, refs)
}

// intern returns the value table holds under key, or stores v there and returns it, starting
// the table afresh once it holds internMax values (in.mu held). The lookup by string(key) does
// not copy key.
func intern[T any](table *map[string]T, key []byte, v T) T {
	if old, ok := (*table)[string(key)]; ok {
		return old
	}
	if *table == nil || len(*table) >= internMax {
		*table = map[string]T{}
	}
	(*table)[string(key)] = v
	return v
}

// String returns a string equal to v: a shared one when an equal string was seen before.
func (in *interner) String(v string) string {
	if v == "" {
		return v
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stringLocked(v)
}

func (in *interner) stringLocked(v string) string {
	if s, ok := in.strings[v]; ok {
		return s
	}
	if in.strings == nil || len(in.strings) >= internMax {
		in.strings = map[string]string{}
	}
	in.strings[v] = v
	return v
}

// StringMap returns a map equal to m whose keys, and values too when values is true, are
// shared strings (String): the labels and annotations of nodes repeat their keys, and their
// labels most values, node after node. A new map: m is not modified.
func (in *interner) StringMap(m map[string]string, values bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = in.stringLocked(v)
		}
		out[in.stringLocked(k)] = v
	}
	return out
}

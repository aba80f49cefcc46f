package core

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// This file is the group logic, pure and shared by every mode: which group a pod belongs to,
// the minimum that group asks for, and whether a count of its pods meets it. It reads pods and
// PodGroup objects and nothing else (no cluster, no scheduler).

// The labels that put a pod in a group.
const (
	// LabelPodGroup and LabelMinAvailable are the riya-scheduler's: the group's name and its
	// minimum, on every member.
	LabelPodGroup     = "podGroup"
	LabelMinAvailable = "minAvailable"
	// LabelPodGroupName is scheduler-plugins' Coscheduling label: it names a PodGroup object in
	// the pod's namespace, which holds the minimum (spec.minMember).
	LabelPodGroupName = "scheduling.x-k8s.io/pod-group"
)

// PodGroupResource is the PodGroup custom resource (yamlfiles/podgroup-crd.yaml), the one of
// scheduler-plugins' Coscheduling.
var PodGroupResource = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// DefaultScheduleTimeout is how long a group's members may wait for each other when the
// PodGroup sets no scheduleTimeoutSeconds (or a riya group, which has no such setting): the
// Coscheduling default.
const DefaultScheduleTimeout = 60 * time.Second

// Key identifies a group: the label that names it (LabelPodGroup or LabelPodGroupName: a riya
// group and a PodGroup of the same name are different groups), the namespace and the name.
type Key struct {
	Label     string
	Namespace string
	Name      string
}

// String returns namespace/name.
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// KeyOf returns the group pod is counted in, from its labels alone, and false for a pod in no
// group (no group label, or an empty one) and for a pod of a native pod group (see
// NativeGroup). A pod carrying both group labels is counted in its PodGroup's group (Resolve
// rejects it).
func KeyOf(pod *corev1.Pod) (Key, bool) {
	if NativeGroup(pod) != "" {
		return Key{}, false
	}
	return labelKey(pod)
}

// NativeGroup returns the name of the pod's group of Kubernetes' own Workload API
// (spec.schedulingGroup.podGroupName: a scheduling.k8s.io PodGroup, gang-scheduled by
// kube-scheduler's GangScheduling plugin), "" for none. Such a pod is left to that plugin: it is
// in none of our groups whatever its labels (the API server keeps the field only with the
// GenericWorkload feature on), and its group is never looked up among scheduling.x-k8s.io
// PodGroups, though the two kinds share the name PodGroup.
func NativeGroup(pod *corev1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// Overruled returns, for a pod of a native pod group that also carries one of our group labels,
// the warning to give (which group governs it), "" otherwise.
func Overruled(pod *corev1.Pod) string {
	native := NativeGroup(pod)
	if native == "" {
		return ""
	}
	key, ok := labelKey(pod)
	if !ok {
		return ""
	}
	return fmt.Sprintf("pod is in the native pod group %s/%s (spec.schedulingGroup, scheduling.k8s.io) and names pod group %s (label %s): "+
		"the native group governs it (kube-scheduler's GangScheduling); the label is ignored", pod.Namespace, native, key, key.Label)
}

// labelKey returns the group the pod's labels name, whatever its spec.schedulingGroup.
func labelKey(pod *corev1.Pod) (Key, bool) { return LabelsKey(pod.Namespace, pod.Labels) }

// LabelsKey is the group a pod in namespace with labels names, whatever its
// spec.schedulingGroup: what a cache that selects pods by namespace and labels can match.
func LabelsKey(namespace string, labels map[string]string) (Key, bool) {
	if name := labels[LabelPodGroupName]; name != "" {
		return Key{Label: LabelPodGroupName, Namespace: namespace, Name: name}, true
	}
	if name := labels[LabelPodGroup]; name != "" {
		return Key{Label: LabelPodGroup, Namespace: namespace, Name: name}, true
	}
	return Key{}, false
}

// Requirement is what a group asks of its members.
type Requirement struct {
	Key
	// Min is the number of the group's pods that must exist before any is placed.
	Min int32
	// MinField names where Min was read ("minAvailable" or "minMember"), for messages.
	MinField string
	// ScheduleTimeout is how long members may wait for each other to be placed (plugin mode's
	// Permit): the PodGroup's scheduleTimeoutSeconds, else DefaultScheduleTimeout.
	ScheduleTimeout time.Duration
	// MinResources is the PodGroup's spec.minResources: what the whole group needs, nil when
	// it says nothing (see CheckMinResources).
	MinResources corev1.ResourceList
	// Warning, when not empty, is something the group's owner should fix although the pod can
	// be placed (a PodGroup without spec.minMember): for an event on the PodGroup.
	Warning string
}

// PodGroup is what the group logic reads of a scheduling.x-k8s.io/v1alpha1 PodGroup.
type PodGroup struct {
	Namespace, Name string
	// MinMember is spec.minMember, nil when the object has none.
	MinMember *int32
	// ScheduleTimeoutSeconds is spec.scheduleTimeoutSeconds, nil when the object has none.
	ScheduleTimeoutSeconds *int32
	// MinResources is spec.minResources, nil when the object has none.
	MinResources corev1.ResourceList
	// Created is the object's creation time: the group's age in Coscheduling's queue order.
	Created time.Time
	// Object is the object as read, for events about it (nil in tests that build a PodGroup).
	Object *unstructured.Unstructured
}

// PodGroupLookup returns the PodGroup namespace/name, nil when there is none. An error means the
// object exists but cannot be read (a field of the wrong type); its message names the object.
type PodGroupLookup func(namespace, name string) (*PodGroup, error)

// Resolve returns the requirement of pod's group, and false for a pod in no group (it is not
// to be held back). An error means the pod names a group whose minimum cannot be known: the
// minimum label is missing or not a number, the PodGroup does not exist or has no valid
// spec.minMember, or the pod carries both kinds of group label. A PodGroup without
// spec.minMember (the CRD allows it) reads as minimum 0, as Coscheduling reads it, with a
// Warning in the requirement. Such a pod is to be rejected,
// with the error's message, which names the label or object and the bad value.
func Resolve(pod *corev1.Pod, lookup PodGroupLookup) (Requirement, bool, error) {
	key, ok := KeyOf(pod)
	if !ok {
		return Requirement{}, false, nil
	}
	if other := pod.Labels[LabelPodGroup]; key.Label == LabelPodGroupName && other != "" {
		return Requirement{}, false, fmt.Errorf("pod has both label %s=%q and label %s=%q: a pod belongs to one group; keep one",
			LabelPodGroup, other, LabelPodGroupName, key.Name)
	}
	if key.Label == LabelPodGroup {
		min, err := minAvailable(pod, key)
		if err != nil {
			return Requirement{}, false, err
		}
		return Requirement{Key: key, Min: min, MinField: LabelMinAvailable, ScheduleTimeout: DefaultScheduleTimeout}, true, nil
	}
	pg, err := lookup(key.Namespace, key.Name)
	if err != nil {
		return Requirement{}, false, err
	}
	if pg == nil {
		return Requirement{}, false, fmt.Errorf("PodGroup %s named by label %s does not exist", key, LabelPodGroupName)
	}
	var min int32
	warning := ""
	switch {
	case pg.MinMember == nil:
		warning = fmt.Sprintf("PodGroup %s has no spec.minMember: read as 0, so its pods are placed without waiting for each other; set spec.minMember", key)
	case *pg.MinMember < 0:
		return Requirement{}, false, fmt.Errorf("PodGroup %s has spec.minMember %d: a minimum cannot be negative", key, *pg.MinMember)
	default:
		min = *pg.MinMember
	}
	timeout := DefaultScheduleTimeout
	if s := pg.ScheduleTimeoutSeconds; s != nil && *s > 0 {
		timeout = time.Duration(*s) * time.Second
	}
	return Requirement{Key: key, Min: min, MinField: "minMember", ScheduleTimeout: timeout, MinResources: pg.MinResources, Warning: warning}, true, nil
}

// minAvailable reads a riya member's minimum: an integer 0..2^31-1 (0 and 1 hold nothing back).
func minAvailable(pod *corev1.Pod, key Key) (int32, error) {
	v, ok := pod.Labels[LabelMinAvailable]
	if !ok {
		return 0, fmt.Errorf("pod is in pod group %s (label %s) but has no label %s", key, LabelPodGroup, LabelMinAvailable)
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("label %s is %q, not an integer (pod group %s)", LabelMinAvailable, v, key)
	}
	if n < 0 {
		return 0, fmt.Errorf("label %s is %q: a minimum cannot be negative (pod group %s)", LabelMinAvailable, v, key)
	}
	return int32(n), nil
}

// Check returns "" when count pods of the group exist (the pod being placed included) and that
// meets the minimum, else the reason the pod must wait.
func (r Requirement) Check(count int) string { return r.CheckGated(count, 0) }

// CheckGated is Check where count is the group's ungated pods and gated the pods that still
// carry scheduling gates (they exist but cannot be placed, so they do not count).
func (r Requirement) CheckGated(count, gated int) string {
	if count >= int(r.Min) {
		return ""
	}
	if gated > 0 {
		return fmt.Sprintf("pod group %s has %d of %d pods (%s %d) and %d more with scheduling gates", r.Key, count, r.Min, r.MinField, r.Min, gated)
	}
	return fmt.Sprintf("pod group %s has %d of %d pods (%s %d)", r.Key, count, r.Min, r.MinField, r.Min)
}

// CheckCounts is CheckGated over counts, pod counted among the group's ungated members (see
// Counts.CountWith): the quorum check both modes run, the extender's filter and plugin mode's
// PreFilter.
func (r Requirement) CheckCounts(counts *Counts, pod *corev1.Pod) string {
	return r.CheckGated(counts.CountWith(r.Key, pod), counts.Gated(r.Key))
}

// LookupIn reads the PodGroup namespace/name from a dynamic informer's store: nil (and no error)
// when the store does not hold it. Both modes' PodGroup lookups are this function.
func LookupIn(store cache.Store, namespace, name string) (*PodGroup, error) {
	obj, ok, err := store.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("PodGroup %s/%s: unexpected object %T", namespace, name, obj)
	}
	return PodGroupFromUnstructured(u)
}

// PodGroupFromUnstructured reads a PodGroup object as a dynamic client or informer gives it.
func PodGroupFromUnstructured(u *unstructured.Unstructured) (*PodGroup, error) {
	pg := &PodGroup{Namespace: u.GetNamespace(), Name: u.GetName(), Created: u.GetCreationTimestamp().Time, Object: u}
	var err error
	if pg.MinResources, err = resourcesField(u); err != nil {
		return nil, err
	}
	if pg.MinMember, err = int32Field(u, "minMember"); err != nil {
		return nil, err
	}
	if pg.ScheduleTimeoutSeconds, err = int32Field(u, "scheduleTimeoutSeconds"); err != nil {
		return nil, err
	}
	return pg, nil
}

// int32Field returns spec.<field>, nil when absent. JSON numbers decode as int64, or float64
// when they are written with a fraction or exponent; both are accepted when they hold an int32.
func int32Field(u *unstructured.Unstructured, field string) (*int32, error) {
	v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", field)
	if !found || v == nil {
		return nil, nil
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case float64:
		if x != math.Trunc(x) || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("PodGroup %s/%s: spec.%s is %v, not an integer", u.GetNamespace(), u.GetName(), field, x)
		}
		n = int64(x)
	default:
		return nil, fmt.Errorf("PodGroup %s/%s: spec.%s is %#v, not an integer", u.GetNamespace(), u.GetName(), field, v)
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return nil, fmt.Errorf("PodGroup %s/%s: spec.%s is %d, beyond a 32-bit integer", u.GetNamespace(), u.GetName(), field, n)
	}
	m := int32(n)
	return &m, nil
}

// resourcesField returns spec.minResources, nil when absent; a quantity that does not parse is
// an error naming it.
func resourcesField(u *unstructured.Unstructured) (corev1.ResourceList, error) {
	v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "minResources")
	if !found || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("PodGroup %s/%s: spec.minResources is %#v, not a map of quantities", u.GetNamespace(), u.GetName(), v)
	}
	out := corev1.ResourceList{}
	for name, q := range m {
		var s string
		switch x := q.(type) {
		case string:
			s = x
		case int64:
			s = strconv.FormatInt(x, 10)
		case float64:
			s = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return nil, fmt.Errorf("PodGroup %s/%s: spec.minResources.%s is %#v, not a quantity", u.GetNamespace(), u.GetName(), name, q)
		}
		qty, err := resource.ParseQuantity(s)
		if err != nil {
			return nil, fmt.Errorf("PodGroup %s/%s: spec.minResources.%s is %q, not a quantity", u.GetNamespace(), u.GetName(), name, s)
		}
		out[corev1.ResourceName(name)] = qty
	}
	return out, nil
}

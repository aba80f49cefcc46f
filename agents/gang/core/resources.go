package core

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// CheckMinResources returns "" when the free room of the cluster can hold what the group asks
// for in spec.minResources, plus one pod slot per member of its minimum (as Coscheduling adds
// minMember pods), else the reason naming every resource short, what is asked and what is free.
// free holds each node's free allocatable (allocatable less the requests of the pods on it that
// are not the group's own, pods counted in "pods"); the room is summed over the nodes, as
// Coscheduling's PreFilter does: a quick test that rejects a group that cannot fit whatever the
// placement, not a placement.
func (r Requirement) CheckMinResources(free []corev1.ResourceList) string {
	if len(r.MinResources) == 0 {
		return ""
	}
	want := r.MinResources.DeepCopy()
	if _, ok := want[corev1.ResourcePods]; !ok && r.Min > 0 {
		want[corev1.ResourcePods] = *resource.NewQuantity(int64(r.Min), resource.DecimalSI)
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var short []string
	for _, name := range names {
		need := want[corev1.ResourceName(name)]
		have := resource.Quantity{Format: need.Format}
		for _, f := range free {
			if q, ok := f[corev1.ResourceName(name)]; ok && q.Sign() > 0 {
				have.Add(q)
			}
		}
		if have.Cmp(need) < 0 {
			short = append(short, fmt.Sprintf("%s %s requested, %s free", name, need.String(), have.String()))
		}
	}
	if len(short) == 0 {
		return ""
	}
	return fmt.Sprintf("pod group %s: spec.minResources does not fit in the cluster's free room (summed over %d nodes): %s",
		r.Key, len(free), strings.Join(short, "; "))
}

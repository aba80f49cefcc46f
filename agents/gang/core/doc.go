// Package core is gang scheduling's group logic, framework-free: both modes are thin glue over
// it, the extender agent (agents/gang: the filter "gang") and plugin mode's plugins
// (scheduler/gangplugin: pod-group, Coscheduling, group-priority), as scheduler-plugins keeps
// Coscheduling's core apart from its plugin. It reads pods and PodGroup objects (k8s.io/api,
// apimachinery, client-go's caches) and imports no scheduler and none of the extender's
// framework (TestFrameworkFree): the glue translates its types, and the decisions live here.
//
//   - group.go: which group a pod belongs to (KeyOf: riya's podGroup/minAvailable labels,
//     Coscheduling's scheduling.x-k8s.io/pod-group and its PodGroup), its minimum and timeout
//     (Resolve), the quorum check (CheckGated, CheckCounts), the PodGroup objects read from a
//     dynamic informer (LookupIn, PodGroupFromUnstructured).
//   - count.go: Counts, each group's non-terminated members, fed by pod events (both modes' pod
//     informer through Counts.Handler).
//   - resources.go: the spec.minResources check over the cluster's free room.
//   - plugin.go: what only a scheduler acts on: Admit (quorum, then room), Permit (wait or
//     complete), Release (PostFilter), PermitTimeout, the queue age (Created, QueueTime) and
//     History (failures, backoff, warnings).
//   - status.go: the PodGroup status Coscheduling's controller writes (NextStatus).
package core

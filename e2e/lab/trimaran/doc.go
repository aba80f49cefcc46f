// Package trimaran restates, for the quality lab only, the two load-aware Score plugins of
// scheduler-plugins' Trimaran (sigs.k8s.io/scheduler-plugins v0.33.5, pkg/trimaran):
// TargetLoadPacking and LoadVariationRiskBalancing, with the statistics their shipped
// configuration gives them: the load-watcher's Prometheus provider (avg_over_time and
// stddev_over_time of each node's utilization over a 15-minute window, fetched every minute)
// read by the plugins' collector every 30 seconds, and, for TargetLoadPacking, the
// PodAssignEventHandler's cache of pods bound since the metrics.
//
// scheduler-plugins v0.33.5 targets Kubernetes 1.33 and does not compile against the lab's
// kube-scheduler v1.37 (framework API moved to k8s.io/kube-scheduler/framework, NodeInfo is an
// interface), so the formulas are written here again from its source, each function naming the
// file and function it restates. The differences, all forced by the lab, are listed in
// docs/quality/lab.md ("Trimaran in the lab"):
//
//   - the lab serves each node's free cpu and memory (lab_node_free_*), not node-exporter's
//     instance:node_cpu:ratio and instance:node_memory_utilisation:ratio; the stand-in queries
//     avg_over_time and stddev_over_time of the free amount and converts them to the
//     utilization percentages load-watcher returns with the node's allocatable
//     (avg 100 (1 - avgFree/allocatable), std 100 stdFree/allocatable: the same numbers as the
//     ratio's statistics, since the ratio is linear in the free amount);
//   - nodes are matched by the label the lab sets (node), not load-watcher's instance label;
//   - every period (window, fetch, collector, reporting interval, cache cleanup) is a setting,
//     so that the lab can divide it by its speed, and the comparisons of the recently bound
//     pods' times with the window's end keep sub-second precision (load-watcher keeps Unix
//     seconds: at the lab's speed one real second is half a simulated minute).
package trimaran

package usage

import "github.com/kube-safe-scheduler/extender/usage/metricsource"

// Source gives the current usage of the cluster's pods: the learner's view of the usage
// source it shares with the node annotator (package metricsource: Prometheus, the metrics
// API).
type Source = metricsource.PodSource

// PodUsage is one pod's usage at a time: cpu in cores, memory (working set) in bytes, summed
// over its containers.
type PodUsage = metricsource.PodUsage

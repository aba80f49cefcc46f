package annotator

import "github.com/kube-safe-scheduler/extender/usage/metricsource"

// Source supplies the samples the usage statistics are computed from: free cpu in millicores
// and free memory in bytes, per node. The sources (Prometheus, the metrics API) are package
// metricsource's, shared with the usage learner; the annotator uses their node side.
type Source = metricsource.NodeSource

// NodeSeries is one node's samples.
type NodeSeries = metricsource.NodeSeries

// PrometheusConfig configures the Prometheus source (PROMETHEUS_*).
type PrometheusConfig = metricsource.PrometheusConfig

// Default Prometheus queries and node label (PROMETHEUS_CPU_QUERY, PROMETHEUS_MEMORY_QUERY,
// PROMETHEUS_NODE_LABEL): node_exporter's, in millicores and bytes.
const (
	DefaultCPUQuery    = metricsource.DefaultNodeCPUQuery
	DefaultMemoryQuery = metricsource.DefaultNodeMemoryQuery
	DefaultNodeLabel   = metricsource.DefaultNodeLabel
)

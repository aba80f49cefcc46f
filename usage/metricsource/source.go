// Package metricsource reads the cluster's measured usage for the node annotator (each node's
// free cpu and memory over the statistics window) and the usage learner (each pod's latest
// usage): one Source, implemented by Prometheus and by the metrics API (metrics-server). It
// knows neither the annotator's statistics nor the learner's model; each consumer takes the
// narrow view it uses (NodeSource, PodSource).
package metricsource

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Source gives the cluster's usage per node and per pod.
type Source interface {
	NodeSource
	PodSource
}

// NodeSource supplies the samples the node annotator's statistics are computed from: free cpu
// in millicores and free memory in bytes, per node.
type NodeSource interface {
	// Name names the source in logs.
	Name() string
	// Sample is called every INTERVAL. A source that keeps no history of its own (Prometheus
	// does) does nothing.
	Sample(ctx context.Context, nodes []*corev1.Node, now time.Time) error
	// Series returns, by node name, the samples of the window that ends at now, oldest first.
	// A node absent from the map has no data. problems gives, by node name, why the source
	// rejected a node's data. An error means the source failed as a whole (no node is then
	// touched).
	Series(ctx context.Context, nodes []*corev1.Node, now time.Time) (series map[string]NodeSeries, problems map[string]string, err error)
}

// NodeSeries is one node's samples.
type NodeSeries struct {
	// CPU is free cpu in millicores.
	CPU []float64
	// Memory is free memory in bytes.
	Memory []float64
}

// PodSource gives the current usage of the cluster's pods.
type PodSource interface {
	// Name names the source in logs.
	Name() string
	// PodUsage returns every pod's latest usage; a pod the source does not know is absent.
	PodUsage(ctx context.Context, now time.Time) ([]PodUsage, error)
}

// PodUsage is one pod's usage at a time: cpu in cores, memory (working set) in bytes, summed
// over its containers.
type PodUsage struct {
	Namespace, Name string
	CPU, Memory     float64
	At              time.Time
}

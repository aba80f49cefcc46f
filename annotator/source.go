package annotator

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Source supplies the samples the usage statistics are computed from: free cpu in millicores
// and free memory in bytes, per node.
type Source interface {
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

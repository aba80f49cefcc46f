package telemetry

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	cmclient "k8s.io/metrics/pkg/client/custom_metrics"
)

// Source reads one metric's current value on every node it knows.
type Source interface {
	// Name names the source in logs and metrics.
	Name() string
	// Read returns the samples of metric by node name. now is the time of the read.
	Read(ctx context.Context, metric string, now time.Time) (map[string]Sample, error)
}

// Metric sources (TELEMETRY_METRICS_SOURCE).
const (
	SourceCustomMetrics SourceKind = "custom-metrics"
	SourcePrometheus    SourceKind = "prometheus"
)

// Prometheus reads a metric with one instant query of its name; each series names its node
// in the label NodeLabel. A sample's time is the time of the query: a node whose series
// disappears (its exporter stopped reporting) keeps its last sample, which ages.
type Prometheus struct {
	api   promv1.API
	label model.LabelName
}

// NewPrometheus returns the source querying the Prometheus server at url.
func NewPrometheus(url, nodeLabel string) (*Prometheus, error) {
	client, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %q: %w", url, err)
	}
	return &Prometheus{api: promv1.NewAPI(client), label: model.LabelName(nodeLabel)}, nil
}

// Name implements Source.
func (p *Prometheus) Name() string { return string(SourcePrometheus) }

// Read implements Source.
func (p *Prometheus) Read(ctx context.Context, metric string, now time.Time) (map[string]Sample, error) {
	val, _, _, err := p.api.Query(ctx, metric, now)
	if err != nil {
		return nil, fmt.Errorf("prometheus query %q: %w", metric, err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus query %q returned a %s, not an instant vector", metric, val.Type())
	}
	out := make(map[string]Sample, len(vec))
	for _, s := range vec {
		node := string(s.Metric[p.label])
		if node == "" || s.Histogram != nil {
			continue
		}
		if _, dup := out[node]; dup {
			return nil, fmt.Errorf("prometheus query %q: several series for node %s (label %s): aggregate them", metric, node, p.label)
		}
		out[node] = Sample{Value: float64(s.Value), Time: now}
	}
	return out, nil
}

// CustomMetrics reads node metrics from the custom metrics API (custom.metrics.k8s.io), as
// Telemetry Aware Scheduling does. A sample's time is the one the API gives (when the metrics
// adapter measured it), else the time of the read.
type CustomMetrics struct {
	client cmclient.CustomMetricsClient
	apis   cmclient.AvailableAPIsGetter
}

// NewCustomMetrics returns the source for the API server at cfg.
func NewCustomMetrics(cfg *rest.Config, timeout time.Duration) (*CustomMetrics, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cfg.Timeout = timeout
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	apis := cmclient.NewAvailableAPIsGetter(disc)
	return &CustomMetrics{client: cmclient.NewForConfig(cfg, mapper, apis), apis: apis}, nil
}

// Name implements Source.
func (c *CustomMetrics) Name() string { return string(SourceCustomMetrics) }

// Read implements Source. The client takes no context: the configuration's timeout bounds it.
func (c *CustomMetrics) Read(_ context.Context, metric string, now time.Time) (map[string]Sample, error) {
	list, err := c.client.RootScopedMetrics().GetForObjects(schema.GroupKind{Kind: "Node"}, labels.Everything(), metric, labels.Everything())
	if err != nil {
		c.apis.Invalidate() // the API's versions are looked up again next time
		return nil, fmt.Errorf("custom metrics API, metric %q: %w", metric, err)
	}
	out := make(map[string]Sample, len(list.Items))
	for _, it := range list.Items {
		if it.DescribedObject.Kind != "" && it.DescribedObject.Kind != "Node" {
			continue
		}
		t := it.Timestamp.Time
		if t.IsZero() {
			t = now
		}
		out[it.DescribedObject.Name] = Sample{Value: it.Value.AsApproximateFloat64(), Time: t}
	}
	return out, nil
}
